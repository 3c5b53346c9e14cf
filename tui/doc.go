// Package tui is rebootwatch's dashboard: a Bubble Tea v2 program whose root
// model owns a *model.Cluster, applies source events to it as messages,
// re-derives phases and verdicts on a one-second tick, and renders the
// header, locks, nodes, Longhorn and timeline panels (sub-packages render
// strings; only the root returns a tea.View).
//
// It must do no I/O in Update or View: events arrive through a command that
// waits on the session's channel, and lock actions run as commands through
// internal/lock (Plan is pure and runs in Update; Do runs in a command) whose
// outcome comes back as a message. It never calls client-go itself.
package tui
