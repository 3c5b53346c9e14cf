// Package fleetlocktest writes fleetlock's reboot lock exactly as
// poseidon/fleetlock writes it, for tests: its Lease, with the fields
// written and the user agent that names the managedFields manager.
// fleetlock's module is not served by the Go module proxy, so this
// reproduces — never copies — what was read in poseidon/fleetlock
// internal/lease.go (RebootLease.Get, RebootLease.Update,
// rebootLockToLeaseSpec) and internal/server.go (Server.lock,
// Server.unlock), at commit c42d4941542de9585eb64824f2b98f4b6840cb37
// (v0.4.0-275-gc42d494).
//
// It is test support: it must never be imported by production code (the
// scale fixture aside).
package fleetlocktest

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// UserAgent is client-go's default user agent for a binary named
// fleetlock (rest.DefaultKubernetesUserAgent: command/version (os/arch)
// kubernetes/commit). fleetlock's Update sets no FieldManager, so the
// apiserver names the manager from the user agent's part before "/":
// "fleetlock".
const UserAgent = "fleetlock/v0.0.0 (linux/amd64) kubernetes/$Format"

// Manager is the managedFields manager of fleetlock's writes.
const Manager = "fleetlock"

// FieldsV1 is what fleetlock's writes own: exactly the two spec
// fields rebootLockToLeaseSpec sets (never acquireTime or renewTime).
const FieldsV1 = `{"f:spec":{"f:holderIdentity":{},"f:leaseTransitions":{}}}`

// Client is a client that identifies itself as fleetlock does.
func Client(cfg *rest.Config) (kubernetes.Interface, error) {
	c := rest.CopyConfig(cfg)
	c.UserAgent = UserAgent
	return kubernetes.NewForConfig(c)
}

// Lock takes the reboot lease of group for holder as fleetlock's
// Server.lock does: RebootLease.Get (creating the Lease free when missing:
// holderIdentity "" and leaseTransitions 0), and when free an Update of the
// whole Lease with spec {holderIdentity: id, leaseTransitions: n+1}. It
// returns the Lease as written. fieldManager is "" against a real apiserver
// (which names the manager from the user agent); a fake clientset does not,
// so tests pass Manager there.
func Lock(ctx context.Context, c kubernetes.Interface, ns, group, holder, fieldManager string) (*coordinationv1.Lease, error) {
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

// GhostMachineID is a machine id no node of Wedge's cluster has (DESIGN
// §3's test vector); Ghost is Zincati's id for it, the holder Wedge writes.
const (
	GhostMachineID = "1c09ca98649c4c7abc779cd04c96812e"
	Ghost          = "978a225b3d7b40e9acd7ce9b62f68444"
)

// Wedge writes fleetlock's headline wedge into ns: the Lease of group
// "default" taken (Lock) by Ghost, the Zincati id of a node that no longer
// exists. fleetlock frees a Lease only when its holder unlocks. c should
// identify itself as fleetlock (Client); fieldManager as for Lock.
func Wedge(ctx context.Context, c kubernetes.Interface, ns, fieldManager string) error {
	_, err := Lock(ctx, c, ns, "default", Ghost, fieldManager)
	return err
}

// Written is when the Lease ns/name was last written, to the second (the
// latest of its managedFields times: the apiserver keeps no finer time).
func Written(ctx context.Context, c kubernetes.Interface, ns, name string) (time.Time, error) {
	l, err := c.CoordinationV1().Leases(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return time.Time{}, err
	}
	var at time.Time
	for _, m := range l.ManagedFields {
		if m.Time != nil && m.Time.After(at) {
			at = m.Time.Time
		}
	}
	if at.IsZero() {
		return time.Time{}, fmt.Errorf("the Lease %s/%s has no managedFields time", ns, name)
	}
	return at, nil
}
