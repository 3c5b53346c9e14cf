// Package sim is the embedded demo cluster behind `rebootwatch --demo`: a
// deterministic (for a seed) rolling OS upgrade of a small cluster played
// against client-go fake clientsets, typed and dynamic, so the same source
// code that reads a real cluster (sources/kube, sources/longhorn) reads the
// demo, and the lock engine's actions write to it.
//
// The scenario: kured takes its DaemonSet lock node by node; the holder is
// cordoned and drained, its Longhorn replicas go away (volumes degraded), it
// goes NotReady, comes back with a new boot id and a newer OS image, turns
// Ready, is uncordoned and releases; replicas rebuild while the next node
// already drains. Two incidents exist so the demo shows what rebootwatch is
// for: a fleetlock Lease held since weeks by a Zincati id that matches no
// node (a ghost), and a worker that comes back healthy and never releases
// the kured lock (orphaned), which stalls the fleet until someone releases it.
// The kured scenario then plays a second act (pods.go) for "why is it
// stuck?": the orphan's lock is removed by hand at 40 minutes, the next
// node's drain is held by a PodDisruptionBudget that allows no disruption,
// and kured's reboot window (its DaemonSet's args) closes meanwhile.
//
// The other scenarios are the coordinator kinds' own (--demo=suc,
// --demo=flatcar): each kind's package under internal/coord defines its
// scenario as timed writes (coord.Demoer), and the sim plays them on the
// same fake clientsets (coord.go).
//
// It must not read the wall clock or sleep in Step: time is what the caller
// passes, so tests are deterministic. Only Run ticks in real time.
package sim
