// Package fleetlock is the fleetlock coordinator (poseidon/fleetlock, for
// Fedora CoreOS Zincati): its lock (a fleetlock-<group> Lease), its holder
// ids (Zincati's app-specific id of a node's machine id), the lock driver
// the lock engine judges and writes through (coord.LockDriver), and what
// fleetlock's source reads (source.go: the informer's transform, the lock
// object, the one-shot read; discover.go: where fleetlock runs when its
// namespace has no Lease). Its fixtures are in fleetlocktest.
//
// It must not import the lock engine, a source or the TUI (they import
// it), name a holder a ghost while a node's machine id cannot be read, or
// start goroutines; its only I/O is the driver's Apply and the one-shot
// reads (its Leases, and Look's lists of where else fleetlock may run).
package fleetlock

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/rebootwatch/rebootwatch/internal/coord"
	"github.com/rebootwatch/rebootwatch/model"
)

// This file is the fleetlock lock kind, as poseidon/fleetlock writes it
// (read at v0.4.0-275-gc42d494, commit c42d4941542de9585eb64824f2b98f4b6840cb37):
// internal/lease.go RebootLease.Get/Update and rebootLockToLeaseSpec write a
// Lease fleetlock-<group> whose spec carries only holderIdentity and
// leaseTransitions (never acquireTime or renewTime); internal/server.go lock
// sets the holder and drains it (internal/drain.go DrainNode cordons first),
// and unlock uncordons the holder and clears holderIdentity only when the
// caller is still the holder: once anyone else freed the Lease, the old
// holder's steady-state gets "reboot lease already unlocked" and the node
// stays cordoned.

// Spec is the fleetlock kind's shape of a lock object: the parts of
// a fleetlock-<group> Lease rebootwatch uses.
type Spec struct {
	// Holder is spec.holderIdentity ("" when free).
	Holder string
	// HolderSet is when the holder was last written: the time of the
	// managedFields entry that owns f:spec.f:holderIdentity (it changes only
	// when a write changes the holder). Zero when unknown.
	HolderSet time.Time
	// HolderSetBy is that entry's manager (fleetlock's client names itself
	// "fleetlock", from its binary name).
	HolderSetBy string
	// AcquireTime is spec.acquireTime (fleetlock never sets it; another
	// writer might).
	AcquireTime      time.Time
	LeaseTransitions int32
}

// LockKind implements model.LockSpec.
func (*Spec) LockKind() model.LockKind { return model.LockFleetlock }

// Driver is the fleetlock lock kind.
type Driver struct{}

// Kind implements coord.LockDriver.
func (Driver) Kind() model.LockKind { return Kind }

// Source implements coord.LockDriver.
func (Driver) Source() model.SourceName { return Source }

func fleetSpec(obj *model.LockObject) (*Spec, error) {
	s, ok := obj.Spec.(*Spec)
	if !ok || s == nil {
		return nil, fmt.Errorf("fleetlock lock %s carries no Lease data", obj.LockRef)
	}
	return s, nil
}

// Parse implements coord.LockDriver: the lock as fleetlock reads it.
func (Driver) Parse(obj *model.LockObject) (coord.Parsed, error) {
	spec, err := fleetSpec(obj)
	if err != nil {
		return coord.Parsed{}, err
	}
	if spec.Holder == "" {
		return coord.Parsed{FreeReason: "lease has no holder: the lock is free", Capacity: 1}, nil
	}
	e := coord.Entry{Holder: spec.Holder, LeftCordoned: true, UncordonOnRelease: true,
		CordonNote: "fleetlock cordons the holder on lock and uncordons it only when the holder itself unlocks: a release from here also uncordons it"}
	switch {
	case !spec.HolderSet.IsZero():
		by := spec.HolderSetBy
		if by == "" {
			by = "an unnamed manager"
		}
		e.Since, e.SinceFrom = spec.HolderSet, "managedFields: the holder was written by "+by
	case !spec.AcquireTime.IsZero():
		e.Since, e.SinceFrom = spec.AcquireTime, "spec.acquireTime"
	}
	// One holder per Lease (per Zincati group).
	return coord.Parsed{Entries: []coord.Entry{e}, Capacity: 1}, nil
}

// Resolve implements coord.LockDriver: a holder id of fleetlock to nodes.
func (Driver) Resolve(ix *coord.Index, holder string) coord.Mapping {
	if m, ok := ix.ByName(holder); ok {
		return m
	}
	return byZincati(ix, holder)
}

// OpClearHolder sets a Lease's spec.holderIdentity to "".
const OpClearHolder = "clear-holder"

// Write implements coord.LockDriver: the write that frees entry i.
func (Driver) Write(obj *model.LockObject, p coord.Parsed, i int) coord.Write {
	spec, err := fleetSpec(obj)
	if err != nil || i < 0 || i >= len(p.Entries) || spec.Holder == "" {
		return coord.Write{}
	}
	return coord.Write{Ref: obj.LockRef, Object: "Lease " + obj.Namespace + "/" + obj.Name, UID: obj.UID, ResourceVersion: obj.ResourceVersion,
		Op: OpClearHolder, Field: "spec.holderIdentity", Holder: spec.Holder, OldValue: spec.Holder,
		Summary: fmt.Sprintf("set spec.holderIdentity %q → \"\" (leaseTransitions kept at %d, as fleetlock's own unlock does)", spec.Holder, spec.LeaseTransitions)}
}

// Apply implements coord.LockDriver: the write, checked against what was
// judged and verified as fleetlock reads the result.
func (Driver) Apply(ctx context.Context, c kubernetes.Interface, w coord.Write) (coord.Applied, error) {
	if w.Op != OpClearHolder {
		return coord.Applied{}, fmt.Errorf("write op %q does not apply to a Lease", w.Op)
	}
	lc := c.CoordinationV1().Leases(w.Ref.Namespace)
	l, err := lc.Get(ctx, w.Ref.Name, metav1.GetOptions{})
	if err != nil {
		return coord.Applied{}, &coord.APIError{Verb: "get", Resource: "leases.coordination.k8s.io", Err: err}
	}
	if err := coord.CheckPrecondition(w, string(l.UID), l.ResourceVersion); err != nil {
		return coord.Applied{}, err
	}
	if h := holderOf(l); h != w.Holder {
		return coord.Applied{}, &coord.PreconditionError{Msg: fmt.Sprintf("conflict: the lease holder is %q, not the judged %q; nothing changed", h, w.Holder)}
	}
	l = l.DeepCopy()
	empty := ""
	l.Spec.HolderIdentity = &empty
	up, err := lc.Update(ctx, l, metav1.UpdateOptions{FieldManager: coord.FieldManagerFrom(ctx)})
	if err != nil {
		return coord.Applied{}, &coord.APIError{Verb: "update", Resource: "leases.coordination.k8s.io", Err: err}
	}
	ap := coord.Applied{APIVersion: "coordination.k8s.io/v1", Kind: "Lease", UID: up.UID, ResourceVersion: up.ResourceVersion}
	// Read it again as fleetlock does (spec.holderIdentity, "" or unset
	// when free): the judged holder must be gone, and when nothing else
	// wrote since, the Lease must be free.
	got, err := lc.Get(ctx, w.Ref.Name, metav1.GetOptions{})
	if err != nil {
		return ap, &coord.VerifyError{Msg: fmt.Sprintf("the write was made (resourceVersion %s → %s), but reading %s again failed (%v): whether fleetlock reads the Lease as freed is unknown",
			w.ResourceVersion, up.ResourceVersion, w.Object, err)}
	}
	h := holderOf(got)
	switch {
	case h == w.Holder:
		return ap, &coord.VerifyError{Msg: fmt.Sprintf("the write was made (resourceVersion %s → %s), but read again (resourceVersion %s), fleetlock reads holder %q: the lock is not freed",
			w.ResourceVersion, up.ResourceVersion, got.ResourceVersion, coord.Clip(h))}
	case got.ResourceVersion == up.ResourceVersion && h != "":
		return ap, &coord.VerifyError{Msg: fmt.Sprintf("the write was made (resourceVersion %s → %s), but read again, fleetlock reads holder %q, not a free Lease",
			w.ResourceVersion, up.ResourceVersion, coord.Clip(h))}
	}
	return ap, nil
}

func holderOf(l *coordinationv1.Lease) string {
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// zincatiAppID is Zincati's systemd application id (DESIGN §3).
var zincatiAppID = mustHex("de35106b6ec24688b63afddaa156679b")

func isHex32(s string) bool {
	if len(s) != 32 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

func mustHex(s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

// normalMachineID returns the 16 raw bytes of a machine id given as 32 hex
// digits (dashes, surrounding space and case are ignored).
func normalMachineID(id string) ([]byte, error) {
	s := strings.ToLower(strings.TrimSpace(strings.ReplaceAll(id, "-", "")))
	if len(s) != 32 {
		return nil, fmt.Errorf("machine id %q is not 32 hex digits", coord.Clip(id))
	}
	b, err := hex.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("machine id %q is not hex", coord.Clip(id))
	}
	return b, nil
}

// ZincatiNodeID returns the id Zincati sends to fleetlock for a node: the
// systemd app-specific id of its machine id (sd_id128_get_machine_app_specific
// with Zincati's app id), as 32 lower-case hex digits.
func ZincatiNodeID(machineID string) (string, error) {
	key, err := normalMachineID(machineID)
	if err != nil {
		return "", err
	}
	m := hmac.New(sha256.New, key)
	m.Write(zincatiAppID)
	sum := m.Sum(nil)[:16]
	sum[6] = (sum[6] & 0x0F) | 0x40
	sum[8] = (sum[8] & 0x3F) | 0x80
	return hex.EncodeToString(sum), nil
}

// byZincati maps a fleetlock holder that is a Zincati id (or a raw machine
// id) to nodes. A node whose machine id cannot give a Zincati id makes a
// non-match inconclusive, never a ghost.
func byZincati(ix *coord.Index, holder string) coord.Mapping {
	h := strings.ToLower(strings.TrimSpace(holder))
	if !isHex32(h) {
		return coord.Mapping{Kind: coord.MatchInconclusive, How: fmt.Sprintf("holder %q is neither a Zincati node id nor a node name", coord.Clip(holder))}
	}
	var byApp, byMachine, unusable []string
	for _, n := range ix.Nodes() {
		if n == nil {
			continue
		}
		id, ok := ix.Cached(n.MachineID, ZincatiNodeID)
		if !ok {
			unusable = append(unusable, n.Name)
			continue
		}
		if id == h {
			byApp = append(byApp, n.Name)
		} else if strings.EqualFold(strings.ReplaceAll(strings.TrimSpace(n.MachineID), "-", ""), h) {
			byMachine = append(byMachine, n.Name)
		}
	}
	switch {
	case len(byApp) > 0:
		return coord.Several(byApp, "holder is the Zincati id of the node's machine id")
	case len(byMachine) > 0:
		return coord.Several(byMachine, "holder is the node's raw machine id")
	case len(unusable) > 0:
		return coord.Mapping{Kind: coord.MatchInconclusive, How: fmt.Sprintf("no node has Zincati id %s, but %d node(s) report no usable machine id (%s)", h, len(unusable), model.FirstFew(unusable, 3))}
	}
	return coord.Mapping{Kind: coord.MatchNone, How: fmt.Sprintf("no current node's machine id gives Zincati id %s", h)}
}
