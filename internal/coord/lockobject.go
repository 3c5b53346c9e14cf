package coord

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/rebootwatch/rebootwatch/model"
)

// LockDriver is a kind whose slots are one lock object (SlotsLockObject:
// kured's DaemonSet annotation, fleetlock's Lease), as the lock engine
// (internal/lock) judges and writes it. The engine's judging, gates, plans
// and writes are the same for every such kind; only what is below differs.
// A kind's package implements it beside Driver; the engine finds it through
// the registry (internal/coord/kinds), so no coordinator package imports
// the engine.
type LockDriver interface {
	// Kind is the kind's name (snapshot JSON, --kind).
	Kind() model.LockKind
	// Source is the model source that reads this kind's objects.
	Source() model.SourceName
	// Parse reads a lock object of this kind into its entries (one per
	// holder; none when the lock is free, with the reason). An error means
	// the lock is malformed: it is judged unknown.
	Parse(obj *model.LockObject) (Parsed, error)
	// Resolve maps a holder id of this kind to nodes.
	Resolve(ix *Index, holder string) Mapping
	// Write is the write that frees entry i of a parsed lock; i < 0 asks
	// for the write that clears a malformed lock (p is then empty). A zero
	// Write means there is nothing this kind can write.
	Write(obj *model.LockObject, p Parsed, i int) Write
	// Apply makes a write: it re-reads the object, checks the UID and
	// resourceVersion that were judged and the exact value being replaced,
	// and updates it carrying that resourceVersion. A changed object is a
	// *PreconditionError; API errors are returned as they are. After the
	// update it reads the object again and reads it as its coordinator does:
	// a write made that did not change the coordinator's own reading as
	// intended is a *VerifyError (with the Applied of the write).
	Apply(ctx context.Context, c kubernetes.Interface, w Write) (Applied, error)
}

// LockReader is a lock-object kind's one-shot read: its lock objects as
// its source reports them, read once with the clients and the names the
// user gave (c.Names: "kured-daemonset" ns/name, or several
// comma-separated, one per node pool; "fleetlock-namespace").
// The engine judges them; the kind judges nothing itself.
type LockReader interface {
	ReadLocks(ctx context.Context, c Clients) ([]model.LockObject, error)
}

// Event reasons recorded on the lock's object (and on the node for the
// uncordon that goes with a release).
const (
	ReasonReaped     = "RebootLockReaped"
	ReasonReleased   = "RebootLockReleased"
	ReasonUncordoned = "RebootHolderUncordoned"
)

// Annotations on the Event of a release or reap the lock engine records,
// so that another rebootwatch process reading it (sources/kube) can tell
// which lock entry was freed and by whom without parsing the message: the
// lock (model.LockRef's String), its holder as judged, and who acted (the
// engine's Actor.Who).
const (
	EventAnnotationLock   = "rebootwatch.io/lock"
	EventAnnotationHolder = "rebootwatch.io/holder"
	EventAnnotationBy     = "rebootwatch.io/by"
)

// Parsed is a lock object as its driver reads it.
type Parsed struct {
	Entries []Entry
	// FreeReason says why a lock without entries is free.
	FreeReason string
	// Notes are extra evidence every entry of the lock carries (the
	// coordinator's settings that bear on the verdict).
	Notes []model.Evidence
	// Settings are the coordinator's settings read from its objects, for
	// the lock's detail.
	Settings []model.Evidence
	// Warning is a problem of the lock object itself (model.LockStatus.Warning).
	Warning string
	// Capacity is how many holders the lock lets through at once, as the
	// coordinator reads it (model.LockStatus.Capacity); 0 when not known.
	Capacity int
}

// Entry is one holder of a lock.
type Entry struct {
	// Index is the entry's position in the lock (0 for single locks).
	Index  int
	Holder string
	// Since is when the holder took the lock; zero when unknown.
	Since time.Time
	// SinceFrom says where Since was read from, for the evidence.
	SinceFrom string
	// TTL is the lock's time to live (0: never expires). An entry whose TTL
	// is set and whose Since is unknown counts as expired (kured's rule).
	TTL time.Duration
	// LeftCordoned: the coordinator leaves the holder cordoned after its
	// reboot while it holds the lock (fleetlock cordons on lock and
	// uncordons only on unlock; kured when the node was cordoned before),
	// so a cordoned, rebooted holder may still be finished.
	LeftCordoned bool
	// CordonNote explains LeftCordoned in the evidence.
	CordonNote string
	// UncordonOnRelease: the coordinator itself cordoned the holder and
	// would uncordon it when the holder unlocks; a release from outside must
	// then also uncordon the holder to finish what the coordinator would
	// have done.
	UncordonOnRelease bool
	// ReleaseDelay is how long the coordinator waits after the holder's
	// reboot before it releases (kured --lock-release-delay): the holder is
	// never orphaned before it passed.
	ReleaseDelay time.Duration
	// Duplicate is true when another entry names the same holder.
	Duplicate bool
}

// Expired reports whether the entry's TTL has passed at now (kured: a TTL
// > 0 expires once now-created >= TTL; an unknown created is the zero time,
// so it has expired).
func (e Entry) Expired(now time.Time) bool {
	return e.TTL > 0 && now.Sub(e.Since) >= e.TTL
}

// FieldManager is the field manager of every write rebootwatch makes,
// unless the writer names its own (WithFieldManager).
const FieldManager = "rebootwatch"

// AgentFieldManager is rebootwatch-agent's own field manager: its writes
// are told apart from a person's CLI or dashboard in the objects'
// managedFields, so a new leader can find a write of the agent whose Event
// was never recorded (the writer died between the two).
const AgentFieldManager = "rebootwatch-agent"

type fieldManagerKey struct{}

// WithFieldManager names the field manager the writes made with ctx use.
func WithFieldManager(ctx context.Context, m string) context.Context {
	return context.WithValue(ctx, fieldManagerKey{}, m)
}

// FieldManagerFrom is the field manager of a write made with ctx:
// WithFieldManager's, else FieldManager.
func FieldManagerFrom(ctx context.Context) string {
	if m, ok := ctx.Value(fieldManagerKey{}).(string); ok && m != "" {
		return m
	}
	return FieldManager
}

// Write is the exact write an action makes: one Update of one object
// carrying the judged UID and resourceVersion as preconditions. What the op
// means belongs to the lock kind's driver (or to the node uncordon write).
type Write struct {
	Ref model.LockRef
	// Object is the API object, e.g. "DaemonSet kube-system/kured".
	Object string
	// UID and ResourceVersion are the preconditions (what was judged).
	UID             string
	ResourceVersion string
	// Op names the change; "" means there is nothing to write.
	Op string
	// Field is the field written; Key is the annotation key when the field
	// is an annotation.
	Field string
	Key   string
	// Holder is the holder whose lock goes away; Entry is its entry's
	// position in the lock.
	Holder string
	Entry  int
	// OldValue and NewValue are the field's value before and after
	// (NewValue is "" when the field is removed or cleared).
	OldValue string
	NewValue string
	// Summary says in words what changes.
	Summary string
	// Node and BootID: for the uncordon write, the node and the boot id
	// judged (the node must still run that boot).
	Node   string
	BootID string
	// CordonBy and CordonAt: for the uncordon write, the cordon judged
	// (the manager and time of the managedFields entry owning
	// spec.unschedulable); when CordonBy is set, the node must still carry
	// that cordon: one written since by anyone is not undone.
	CordonBy string
	CordonAt time.Time
}

// OpUncordon is the op of the engine's own write that uncordons a node
// (not a lock kind's): Node and BootID say which node and boot.
const OpUncordon = "uncordon"

// String describes the write in one line.
func (w Write) String() string {
	if w.Op == "" {
		return "no write"
	}
	pre := fmt.Sprintf("update %s (precondition uid %s, resourceVersion %s): ", w.Object, w.UID, w.ResourceVersion)
	if w.Op == OpUncordon {
		pre = fmt.Sprintf("update %s (precondition uid %s, boot id %s, still cordoned): ", w.Object, w.UID, model.ShortID(w.BootID))
		if w.CordonBy != "" {
			pre = fmt.Sprintf("update %s (precondition uid %s, boot id %s, still the cordon of %s at %s): ", w.Object, w.UID, model.ShortID(w.BootID),
				w.CordonBy, w.CordonAt.UTC().Format(time.RFC3339))
		}
	}
	if w.Summary != "" {
		return pre + w.Summary
	}
	return pre + w.Op
}

// Applied identifies the object after a write, for the Event.
type Applied struct {
	APIVersion, Kind string
	UID              types.UID
	ResourceVersion  string
}

// CheckPrecondition compares the live object (its uid and resourceVersion)
// with the judged one: a *PreconditionError when it was replaced or changed.
func CheckPrecondition(w Write, uid, rv string) error {
	switch {
	case uid != w.UID:
		return &PreconditionError{fmt.Sprintf(
			"conflict: %s was replaced since it was judged (uid %s → %s); nothing changed — judge it again", w.Object, w.UID, uid)}
	case rv != w.ResourceVersion:
		return &PreconditionError{fmt.Sprintf(
			"conflict: %s changed since it was judged (resourceVersion %s → %s); nothing changed — judge it again", w.Object, w.ResourceVersion, rv)}
	}
	return nil
}

// PreconditionError is a write refused because the object is no longer
// what was judged. Nothing was written.
type PreconditionError struct{ Msg string }

func (e *PreconditionError) Error() string { return e.Msg }

// VerifyError is a write that was made, but after which the object, read
// again and read as its coordinator reads it, is not what the write was for
// (the coordinator still reads the holder, say). Msg says what the
// coordinator reads now.
type VerifyError struct{ Msg string }

func (e *VerifyError) Error() string { return e.Msg }

// APIError wraps a failed API call with what it was, for the message.
type APIError struct {
	Verb, Resource string
	Err            error
}

func (e *APIError) Error() string { return e.Verb + " " + e.Resource + ": " + e.Err.Error() }
func (e *APIError) Unwrap() error { return e.Err }

// Clip shortens a string from a cluster for a message (60 bytes, then "…").
func Clip(s string) string {
	if len(s) > 60 {
		return s[:60] + "…"
	}
	return s
}
