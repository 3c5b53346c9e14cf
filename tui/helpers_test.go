package tui

import "github.com/rebootwatch/rebootwatch/tui/dialog"

type dialogT = dialog.Dialog

var dialogNew = dialog.New
