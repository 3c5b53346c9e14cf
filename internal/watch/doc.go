// Package watch is the pure engine of `rebootwatch watch`: after every
// Recompute of a model.Cluster it turns the timeline entries not yet seen
// (phase transitions, locks taken/released/judged, volume robustness and
// source health changes, boots, actions) into log lines — text with a
// timestamp, or one JSON object per line — adds the periodic one-line
// progress summary (upgraded/total, current holder, ETA), a line when a
// blocker (model.Blocker, what a node or the fleet waits for) appears or
// clears — grouped when many nodes share it, and none while the node or
// lock data is stale (model.Cluster.StaleInputs) — and decides the
// --until-done exit (every node that needed a reboot is done and every lock
// is free; never while a lock source or a node's reboot-required signal is
// not read, which it says in a line instead) and the --stall-after exit (nothing progressed for that long, or a
// lock turned ghost/orphaned/expired while watching; its reason names the
// fleet's blocker).
//
// It must not do I/O, read the clock, sleep or start goroutines: the caller
// passes the time, owns the cluster and writes the lines. It reads the model
// only through its public API and never changes it.
package watch
