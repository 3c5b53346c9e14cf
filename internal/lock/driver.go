package lock

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/rebootwatch/rebootwatch/model"
)

// Driver is one lock kind: what the engine must know about one reboot
// coordinator. The engine's judging, gates, plans and writes are the same
// for every kind; only what is below differs. A kind's driver lives in its
// own file (kured.go, fleetlock.go) and is listed once in registry.go; the
// kind's source lives in sources/kube/<kind>.go.
type Driver interface {
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

// Applied identifies the object after a write, for the Event.
type Applied struct {
	APIVersion, Kind string
	UID              types.UID
	ResourceVersion  string
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

// DriverFor returns the driver of a lock kind. It is the one place an
// unregistered kind is an error.
func DriverFor(k model.LockKind) (Driver, error) {
	for _, d := range registry {
		if d.Kind() == k {
			return d, nil
		}
	}
	return nil, fmt.Errorf("unknown lock kind %q (registered: %s)", k, kindList())
}

// Kinds lists the registered lock kinds in registry order.
func Kinds() []model.LockKind {
	out := make([]model.LockKind, 0, len(registry))
	for _, d := range registry {
		out = append(out, d.Kind())
	}
	return out
}

// Sources lists the sources of the registered lock kinds in registry order.
func Sources() []model.SourceName {
	out := make([]model.SourceName, 0, len(registry))
	for _, d := range registry {
		out = append(out, d.Source())
	}
	return out
}

func kindList() string {
	s := ""
	for i, k := range Kinds() {
		if i > 0 {
			s += ", "
		}
		s += string(k)
	}
	return s
}

// sourceOf is the source of a lock kind ("" for an unregistered kind).
func sourceOf(k model.LockKind) model.SourceName {
	if d, err := DriverFor(k); err == nil {
		return d.Source()
	}
	return ""
}
