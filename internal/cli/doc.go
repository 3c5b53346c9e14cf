// Package cli is the command line of `rebootwatch`: it parses flags, opens a
// cluster session (internal/live) and runs one mode — the dashboard, the
// one-shot snapshot, the watch stream or a release/reap action — mapping the
// outcome to an exit code (DESIGN §7, §9).
//
// It must not hold domain logic: phases and verdicts live in model and
// internal/lock, rendering in tui and internal/report. Errors are one clear
// line on stderr and an exit code, never a panic or a stack trace.
package cli
