// Package live opens one cluster for rebootwatch — a real one through a
// kubeconfig, or the embedded demo (sources/sim) — starts its sources and
// hands their events to whoever owns the model: the dashboard, the snapshot,
// the watch stream. It also wires the lock engine into the model, and in a
// one-shot session the coordinator kinds of internal/coord (their blockers
// added to the engine's).
//
// It must not render anything or decide anything about locks: it connects,
// starts and stops. Every API call it makes is bounded by the request timeout.
package live
