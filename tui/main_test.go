package tui

import (
	"testing"

	"github.com/rebootwatch/rebootwatch/internal/testenv/testcluster"
)

// The real-cluster tests share one apiserver (testcluster.Shared). A live
// session reads every node and kured's DaemonSet at its fixed name, so
// each of them has it alone (testcluster.SharedAlone); the frozen-apiserver
// test has it to itself (testcluster.SharedToItself), which lets it freeze
// the apiserver.
func TestMain(m *testing.M) { testcluster.Main(m) }
