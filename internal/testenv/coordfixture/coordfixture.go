// Package coordfixture writes reboot locks exactly as the real coordinators
// write them, for tests: kured's DaemonSet annotation and poseidon/fleetlock's
// Lease, byte for byte (JSON field order, the fields written, the user agent
// that names the managedFields manager). Neither coordinator's module is
// served by the Go module proxy, so these reproduce — never copy — what was
// read in their sources:
//
//   - kured: kubereboot/kured pkg/daemonsetlock/daemonsetlock.go
//     (LockAnnotationValue, multiLockAnnotationValue, DaemonSetSingleLock.Acquire,
//     DaemonSetMultiLock.Acquire via canAcquireMultiple), at commit
//     51220cc778a4c8cc5bdd35617697a2844887f8c7 (1.23.0-32-g51220cc).
//   - fleetlock: poseidon/fleetlock internal/lease.go (RebootLease.Get,
//     RebootLease.Update, rebootLockToLeaseSpec) and internal/server.go
//     (Server.lock, Server.unlock), at commit
//     c42d4941542de9585eb64824f2b98f4b6840cb37 (v0.4.0-275-gc42d494).
//
// It is test support: it must never be imported by production code.
package coordfixture

import (
	"context"
	"encoding/json"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// KuredValue mirrors kured's LockAnnotationValue as json.Marshal writes it:
// field order nodeID, metadata, created, TTL; metadata's omitempty has no
// effect on a struct, so it is always there; created is time.Now().UTC()
// (RFC3339 with nanoseconds); TTL is a time.Duration in nanoseconds.
type KuredValue struct {
	NodeID   string        `json:"nodeID"`
	Metadata KuredNodeMeta `json:"metadata,omitempty"`
	Created  time.Time     `json:"created"`
	TTL      time.Duration `json:"TTL"`
}

// KuredNodeMeta mirrors kured's NodeMeta.
type KuredNodeMeta struct {
	Unschedulable bool `json:"unschedulable"`
}

// KuredSingle is a single-lock annotation value as kured's
// DaemonSetSingleLock.Acquire writes it.
func KuredSingle(holder string, created time.Time, ttl time.Duration, unschedulable bool) string {
	return marshal(KuredValue{NodeID: holder, Metadata: KuredNodeMeta{unschedulable}, Created: created.UTC(), TTL: ttl})
}

// KuredMulti is a multi-lock annotation value as DaemonSetMultiLock.Acquire
// writes it ({"maxOwners":N,"locks":[...]}, entries in acquisition order;
// with a TTL, a node whose own entry expired appends a second entry).
func KuredMulti(maxOwners int, entries ...KuredValue) string {
	for i := range entries {
		entries[i].Created = entries[i].Created.UTC()
	}
	if entries == nil {
		entries = []KuredValue{}
	}
	return marshal(struct {
		MaxOwners int          `json:"maxOwners"`
		Locks     []KuredValue `json:"locks"`
	}{maxOwners, entries})
}

func marshal(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// FleetlockUserAgent is client-go's default user agent for a binary named
// fleetlock (rest.DefaultKubernetesUserAgent: command/version (os/arch)
// kubernetes/commit). fleetlock's Update sets no FieldManager, so the
// apiserver names the manager from the user agent's part before "/":
// "fleetlock".
const FleetlockUserAgent = "fleetlock/v0.0.0 (linux/amd64) kubernetes/$Format"

// FleetlockManager is the managedFields manager of fleetlock's writes.
const FleetlockManager = "fleetlock"

// FleetlockFieldsV1 is what fleetlock's writes own: exactly the two spec
// fields rebootLockToLeaseSpec sets (never acquireTime or renewTime).
const FleetlockFieldsV1 = `{"f:spec":{"f:holderIdentity":{},"f:leaseTransitions":{}}}`

// FleetlockClient is a client that identifies itself as fleetlock does.
func FleetlockClient(cfg *rest.Config) (kubernetes.Interface, error) {
	c := rest.CopyConfig(cfg)
	c.UserAgent = FleetlockUserAgent
	return kubernetes.NewForConfig(c)
}

// FleetlockLock takes the reboot lease of group for holder as fleetlock's
// Server.lock does: RebootLease.Get (creating the Lease free when missing:
// holderIdentity "" and leaseTransitions 0), and when free an Update of the
// whole Lease with spec {holderIdentity: id, leaseTransitions: n+1}. It
// returns the Lease as written. fieldManager is "" against a real apiserver
// (which names the manager from the user agent); a fake clientset does not,
// so tests pass FleetlockManager there.
func FleetlockLock(ctx context.Context, c kubernetes.Interface, ns, group, holder, fieldManager string) (*coordinationv1.Lease, error) {
	name := "fleetlock-" + group
	l, err := c.CoordinationV1().Leases(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		free, zero := "", int32(0)
		l, err = c.CoordinationV1().Leases(ns).Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: &free, LeaseTransitions: &zero}},
			metav1.CreateOptions{FieldManager: fieldManager})
		if err != nil {
			return nil, err
		}
	}
	var tr int32
	if l.Spec.LeaseTransitions != nil {
		tr = *l.Spec.LeaseTransitions
	}
	tr++
	h := holder
	l.Spec = coordinationv1.LeaseSpec{HolderIdentity: &h, LeaseTransitions: &tr}
	return c.CoordinationV1().Leases(ns).Update(ctx, l, metav1.UpdateOptions{FieldManager: fieldManager})
}
