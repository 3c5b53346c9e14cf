package model

// Event is one change a source reports. Sources send events; the owner of a
// Cluster applies them in order with Apply. Events carry values, never
// pointers into a source's cache.
type Event interface{ isEvent() }

// NodeUpserted adds or replaces a node.
type NodeUpserted struct{ Node Node }

// NodeDeleted removes a node.
type NodeDeleted struct{ Name string }

// LockUpserted adds or replaces a lock object.
type LockUpserted struct{ Lock LockObject }

// LockDeleted removes a lock object (the DaemonSet or Lease is gone).
type LockDeleted struct{ Ref LockRef }

// VolumeUpserted adds or replaces a Longhorn volume.
type VolumeUpserted struct{ Volume Volume }

// VolumeDeleted removes a Longhorn volume.
type VolumeDeleted struct{ Namespace, Name string }

// RebootRequiredSet replaces the reboot-required signal of every node
// (kured_reboot_required from Prometheus). Nodes absent from Values are unknown.
type RebootRequiredSet struct{ Values map[string]bool }

// SourceChanged reports the health of one source.
type SourceChanged struct{ Health SourceHealth }

// ActionRecorded puts an action's outcome on the timeline.
type ActionRecorded struct {
	Lock    LockRef
	Holder  string
	Action  Action
	Outcome Outcome
	Message string
	// By is who acted ("alice via rebootwatch", the agent): when the lock
	// then goes away, the timeline says it was freed by them, not by its holder.
	By string
}

// Subject names what an action acted on, for the timeline and the toast:
// the lock and its holder, or for an uncordon (which has no lock object of
// its own) the node and whose cycle left it cordoned.
func (a ActionRecorded) Subject() string { return ActionSubject(a.Action, a.Lock, a.Holder) }

// ActionSubject is ActionRecorded.Subject for an action not yet recorded.
func ActionSubject(action Action, lock LockRef, holder string) string {
	if action == ActionUncordon {
		if lock.Kind != "" {
			return "node " + holder + " (" + string(lock.Kind) + ")"
		}
		return "node " + holder
	}
	return lock.String() + " (holder " + holder + ")"
}

// Synced says every source has delivered its first picture (or reported
// why it cannot). A cluster with AwaitSync derives nothing before it.
type Synced struct{}

// Batch applies several events as one.
type Batch []Event

func (NodeUpserted) isEvent()      {}
func (NodeDeleted) isEvent()       {}
func (LockUpserted) isEvent()      {}
func (LockDeleted) isEvent()       {}
func (VolumeUpserted) isEvent()    {}
func (VolumeDeleted) isEvent()     {}
func (RebootRequiredSet) isEvent() {}
func (SourceChanged) isEvent()     {}
func (ActionRecorded) isEvent()    {}
func (Synced) isEvent()            {}
func (Batch) isEvent()             {}

// LockActionSeen is a release or reap that a rebootwatch process (this one
// or another: the agent, a colleague's CLI) recorded as a Kubernetes Event
// on the lock's object (RebootLockReleased, RebootLockReaped): who freed the
// lock, so the timeline does not credit its holder.
type LockActionSeen struct {
	Lock   LockRef
	Holder string
	Action Action
	// By is who acted, as the Event says ("alice via rebootwatch").
	By string
}

// LockActionsWatched says whether those Events are read (the watch has
// listed), or no longer (it failed, it is forbidden). While they are, a
// lock that goes away waits a moment (ReleaseAttributionWait) for its Event
// before the timeline says who released it.
type LockActionsWatched struct{ Watched bool }

func (LockActionSeen) isEvent()     {}
func (LockActionsWatched) isEvent() {}

// LockScopeSet says on which nodes the coordinator that keeps a lock runs,
// where one kind has several such locks side by side (kured's DaemonSets,
// one per node pool: the nodes where a pod that DaemonSet owns is bound).
// A node of no lock's scope is run by none of them; with a scope unread
// (Err) which lock a node answers to is unknown. Off forgets the scope (a
// kind back to a single lock, which answers for every node).
type LockScopeSet struct {
	Ref   LockRef
	Nodes []string
	Err   string
	Off   bool
}

func (LockScopeSet) isEvent() {}

// LockScope is a lock's scope as last set (LockScopeSet).
type LockScope struct {
	Nodes map[string]bool
	// Err says why the nodes could not be read: Nodes is then not known.
	Err string
}

// LockScope returns the scope of a lock, and whether one is set.
func (c *Cluster) LockScope(ref LockRef) (LockScope, bool) {
	s, ok := c.scopes[ref]
	return s, ok
}
