package sim

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The fleetlock scenario plays fleetlock's protocol: no acquireTime or
// renewTime ever; a free workers' Lease is taken by a waiting Zincati, whose
// node is cordoned, reboots and is uncordoned by its own steady-state, which
// also clears the holder. A holder whose Lease someone else freed stays
// cordoned. Without an operator, nothing moves past the two stuck Leases.
func TestFleetlockScenario(t *testing.T) {
	start := time.Date(2026, 11, 29, 2, 0, 0, 0, time.UTC)
	ctx := context.Background()
	s, err := New(Config{Seed: 1, Start: start, Scenario: ScenarioFleetlock})
	if err != nil {
		t.Fatal(err)
	}
	leases := s.Client.CoordinationV1().Leases(FleetlockNamespace)
	holder := func(name string) string {
		l, err := leases.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if l.Spec.AcquireTime != nil || l.Spec.RenewTime != nil || len(l.ManagedFields) != 1 || l.ManagedFields[0].Manager != "fleetlock" {
			t.Fatalf("%s is not as fleetlock writes it: %+v %+v", name, l.Spec, l.ManagedFields)
		}
		return *l.Spec.HolderIdentity
	}
	w1 := s.fleet["worker-1"].zincatiID
	if holder(FleetlockWorkersLease) != w1 || holder(FleetlockLease) == "" {
		t.Fatal("the two groups are not stuck at the start")
	}
	if err := s.Step(start.Add(2 * time.Hour)); err != nil {
		t.Fatal(err)
	}
	if holder(FleetlockWorkersLease) != w1 {
		t.Fatal("the orphan released itself")
	}
	// The operator frees the workers' Lease (and uncordons worker-1).
	l, _ := leases.Get(ctx, FleetlockWorkersLease, metav1.GetOptions{})
	empty := ""
	l.Spec.HolderIdentity = &empty
	if _, err := leases.Update(ctx, l, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Step(start.Add(4 * time.Hour)); err != nil {
		t.Fatal(err)
	}
	if h := holder(FleetlockWorkersLease); h != "" {
		t.Fatalf("workers' Lease still held by %s after every worker rebooted", h)
	}
	for _, name := range []string{"worker-2", "worker-3", "worker-4"} {
		n, _ := s.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if n.Spec.Unschedulable || n.Status.NodeInfo.OSImage != fleetNewImage {
			t.Fatalf("%s: cordoned %v, os %s", name, n.Spec.Unschedulable, n.Status.NodeInfo.OSImage)
		}
	}
	l, _ = leases.Get(ctx, FleetlockWorkersLease, metav1.GetOptions{})
	if *l.Spec.LeaseTransitions != 12 {
		t.Fatalf("transitions %d, want 9+3", *l.Spec.LeaseTransitions)
	}
}
