// Package model is rebootwatch's pure domain: the cluster state that sources
// fill (nodes, reboot locks, Longhorn volumes, reboot-required signals,
// per-source health), applied from events, and everything derived from it —
// each node's phase and cycle history, fleet progress and ETA, the attention
// list, the snapshot document and the exit code it implies.
//
// It must not do I/O, start goroutines, read the clock or import any other
// rebootwatch package or client-go client: callers pass the time in, and lock
// verdicts come from a Judge function the wiring injects (internal/lock).
// Every coordinator kind's cycle is derived the same way, from the slots
// and node phases the coordinator packages declare (slots.go) and the
// marks they read on nodes (Cluster.Marks): it must not treat a kind apart
// (TestNoKindSpecialCase).
// Kubernetes API types are not used here either, so the model stays a small
// set of plain structs that tests can build by hand.
package model
