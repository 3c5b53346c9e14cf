// Package lock is rebootwatch's lock engine: the one place that reads, judges
// and changes reboot locks (kured's DaemonSet annotation and fleetlock's
// Lease), shared by the TUI, the CLI and the agent.
//
// It parses lock objects the sources put in the model and maps holders to
// nodes through each kind's driver (coord.LockDriver, in the kind's package
// under internal/coord, found through the registry internal/coord/kinds:
// kured nodeID = Node name; fleetlock holder = Zincati app-specific id of the
// node's machine id), judges every lock (DESIGN §5), evaluates the safety
// gates before any release or reap (DESIGN §6 rule 3), and performs the one write
// an action needs with a resourceVersion + UID precondition, recording a
// Kubernetes Event and a log line; it then reads the object again as its
// coordinator does and reports done only when the coordinator's own reading
// changed as intended. kured's lock is read as kured reads it (its structs,
// encoding/json, its --concurrency); a value not in the form kured writes is
// unknown.
//
// What a coordinator still does on its own after its holder's reboot
// (kured: its pod's first tick uncordons, then its release delay) is the
// kind's package's, asked through coord.AfterReboot for any driver that
// declares it. What each waiting node waits for (the blockers) is
// internal/explain's, not the engine's.
//
// It must never: judge a holder a ghost from a node list that is not fresh
// and complete; judge a kured lock from a value kured would read otherwise;
// claim a write done that its coordinator does not read as done; write without the judged resourceVersion and UID as a
// precondition; retry a write after a conflict; let the agent override a
// gate; import the TUI or start goroutines of its own (but the fresh reads of
// one action, which run at once and have all ended before it writes); know a
// coordinator kind by name (import its package, compare with its LockKind:
// TestNoKindSpecialCase in internal/coord/kinds).
package lock
