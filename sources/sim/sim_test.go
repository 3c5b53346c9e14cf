package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// trace plays the scenario for d in steps and records what a watcher of the
// fake API would see at each step.
func trace(t *testing.T, seed int64, d, step time.Duration) []string {
	t.Helper()
	s, err := New(Config{Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var out []string
	start := s.cfg.Start
	for at := time.Duration(0); at <= d; at += step {
		if err := s.Step(start.Add(at)); err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		fmt.Fprintf(&b, "%v", at)
		nodes, _ := s.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		for _, n := range nodes.Items {
			ready := "?"
			for _, c := range n.Status.Conditions {
				if c.Type == "Ready" {
					ready = string(c.Status)[:1]
				}
			}
			fmt.Fprintf(&b, " %s:%s%v:%s:%s", n.Name, ready, n.Spec.Unschedulable, n.Status.NodeInfo.BootID[:4], n.Status.NodeInfo.KernelVersion)
		}
		ds, _ := s.Client.AppsV1().DaemonSets(KuredNamespace).Get(ctx, KuredName, metav1.GetOptions{})
		var l kuredLock
		_ = json.Unmarshal([]byte(ds.Annotations[KuredLockKey]), &l)
		fmt.Fprintf(&b, " lock=%s", l.NodeID)
		vols, _ := s.Dynamic.Resource(VolumeGVR).Namespace(LonghornNamespace).List(ctx, metav1.ListOptions{})
		deg := 0
		for _, v := range vols.Items {
			if r, _, _ := unstructuredString(v.Object, "status", "robustness"); r != "healthy" {
				deg++
			}
		}
		fmt.Fprintf(&b, " notHealthy=%d", deg)
		out = append(out, b.String())
	}
	return out
}

func unstructuredString(obj map[string]any, path ...string) (string, bool, error) {
	var cur any = obj
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return "", false, nil
		}
		cur = m[p]
	}
	s, ok := cur.(string)
	return s, ok, nil
}

func TestDeterministicForASeed(t *testing.T) {
	a := trace(t, 7, 40*time.Minute, 10*time.Second)
	b := trace(t, 7, 40*time.Minute, 10*time.Second)
	if strings.Join(a, "\n") != strings.Join(b, "\n") {
		t.Fatal("two runs with the same seed differ")
	}
	c := trace(t, 8, 40*time.Minute, 10*time.Second)
	if strings.Join(a, "\n") == strings.Join(c, "\n") {
		t.Fatal("different seeds gave the same run")
	}
}

func TestScenario(t *testing.T) {
	s, err := New(Config{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	start := s.cfg.Start
	order := s.Nodes()
	if order[0] != "cp-2" || s.OrphanNode() != "worker-1" {
		t.Fatalf("order %v orphan %q", order, s.OrphanNode())
	}
	lease, err := s.Client.CoordinationV1().Leases(FleetlockNamespace).Get(ctx, FleetlockLease, metav1.GetOptions{})
	if err != nil || lease.Spec.HolderIdentity == nil || len(*lease.Spec.HolderIdentity) != 32 {
		t.Fatalf("ghost lease: %v %v", lease, err)
	}
	nodes, _ := s.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	for _, n := range nodes.Items {
		if n.Status.NodeInfo.MachineID == *lease.Spec.HolderIdentity {
			t.Fatal("the ghost's holder matches a node's machine id")
		}
	}
	holder := func() string {
		ds, _ := s.Client.AppsV1().DaemonSets(KuredNamespace).Get(ctx, KuredName, metav1.GetOptions{})
		var l kuredLock
		_ = json.Unmarshal([]byte(ds.Annotations[KuredLockKey]), &l)
		return l.NodeID
	}
	if holder() != "cp-2" {
		t.Fatalf("at start the lock is held by %q", holder())
	}
	var holders []string
	sawDegraded, sawNotReady := false, false
	for at := time.Duration(0); at <= 35*time.Minute; at += 5 * time.Second {
		if err := s.Step(start.Add(at)); err != nil {
			t.Fatal(err)
		}
		if h := holder(); h != "" && (len(holders) == 0 || holders[len(holders)-1] != h) {
			holders = append(holders, h)
		}
		vols, _ := s.Dynamic.Resource(VolumeGVR).Namespace(LonghornNamespace).List(ctx, metav1.ListOptions{})
		for _, v := range vols.Items {
			if r, _, _ := unstructuredString(v.Object, "status", "robustness"); r == "degraded" {
				sawDegraded = true
			}
		}
		n, _ := s.Client.CoreV1().Nodes().Get(ctx, "cp-3", metav1.GetOptions{})
		for _, c := range n.Status.Conditions {
			if c.Type == "Ready" && c.Status != "True" {
				sawNotReady = true
			}
		}
	}
	if got := strings.Join(holders, ","); got != "cp-2,cp-3,worker-1" {
		t.Fatalf("lock holders over 35 minutes: %s (want cp-2,cp-3,worker-1: the orphan stalls the fleet)", got)
	}
	if !sawDegraded || !sawNotReady {
		t.Fatalf("degraded volumes seen %v, cp-3 NotReady seen %v", sawDegraded, sawNotReady)
	}
	// The orphan is kured's commonest wedge (issue 27): upgraded, Ready,
	// but its kured pod crash-loops since its reboot, so it stays cordoned.
	w, _ := s.Client.CoreV1().Nodes().Get(ctx, "worker-1", metav1.GetOptions{})
	if !w.Spec.Unschedulable || w.Status.NodeInfo.KernelVersion != NewKernel {
		t.Fatalf("the orphan should be upgraded and still cordoned: unschedulable %v %+v", w.Spec.Unschedulable, w.Status.NodeInfo)
	}
	kp, err := s.Client.CoreV1().Pods(KuredNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var waiting []string
	for _, p := range kp.Items {
		for _, c := range p.Status.ContainerStatuses {
			if c.State.Waiting != nil {
				waiting = append(waiting, p.Spec.NodeName+":"+c.State.Waiting.Reason)
			}
		}
	}
	if strings.Join(waiting, ",") != "worker-1:CrashLoopBackOff" {
		t.Fatalf("kured pods waiting: %v, want worker-1's in CrashLoopBackOff", waiting)
	}
	if s.RebootRequired()["worker-1"] || !s.RebootRequired()["worker-2"] {
		t.Fatalf("reboot required: %v", s.RebootRequired())
	}

	// An operator releases the orphaned lock: the fleet moves on.
	ds, _ := s.Client.AppsV1().DaemonSets(KuredNamespace).Get(ctx, KuredName, metav1.GetOptions{})
	delete(ds.Annotations, KuredLockKey)
	if _, err := s.Client.AppsV1().DaemonSets(KuredNamespace).Update(ctx, ds, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Step(start.Add(37 * time.Minute)); err != nil {
		t.Fatal(err)
	}
	if holder() != "worker-2" {
		t.Fatalf("after release the next node should take the lock, got %q", holder())
	}
}

func TestStaleUpdateConflicts(t *testing.T) {
	s, err := New(Config{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ds, _ := s.Client.AppsV1().DaemonSets(KuredNamespace).Get(ctx, KuredName, metav1.GetOptions{})
	if ds.ResourceVersion == "" || ds.UID == "" {
		t.Fatalf("objects need a resourceVersion and UID: %q %q", ds.ResourceVersion, ds.UID)
	}
	if err := s.Step(s.cfg.Start.Add(30 * time.Minute)); err != nil {
		t.Fatal(err)
	}
	delete(ds.Annotations, KuredLockKey)
	if _, err := s.Client.AppsV1().DaemonSets(KuredNamespace).Update(ctx, ds, metav1.UpdateOptions{}); err == nil {
		t.Fatal("an update carrying a stale resourceVersion must conflict")
	}
}
