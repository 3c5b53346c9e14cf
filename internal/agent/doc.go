// Package agent is rebootwatch-agent: the lock engine (internal/lock) run
// unattended in a cluster. It owns the agent's configuration (flags, the
// client-go rest config with a timeout on every call), the loop that feeds a
// model.Cluster from the sources' informers and re-judges on every event and
// every --interval, the policies (reap ghost, reap expired, release orphaned
// when enabled), the JSON heartbeat logged each iteration, /healthz and
// /readyz, the rebootwatch_… metrics, leader election on a Lease, and a new
// leader's recording of the Event of a lock write of the agent's own (its
// field manager in the object's managedFields) that a leader killed between
// the write and its Event never recorded (unrecorded.go).
//
// It must not act on a lock except through internal/lock's Plan and Actor,
// never override a gate (DoOptions.AllowUnsafe is always false here), never
// act on an ambiguous or unknown verdict, never act while not the leader, and
// never fall back silently to a default API server: without a kubeconfig or
// in-cluster credentials it fails with a clear error.
package agent
