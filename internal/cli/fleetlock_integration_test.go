package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/rebootwatch/rebootwatch/internal/coord/fleetlock/fleetlocktest"
	"github.com/rebootwatch/rebootwatch/internal/lock"
	"github.com/rebootwatch/rebootwatch/internal/testenv/testcluster"
	"github.com/rebootwatch/rebootwatch/model"
)

// fleetlockOrphan builds, on a real apiserver, fleetlock's real orphan: the
// Lease written exactly as fleetlock writes it (no acquireTime; manager
// "fleetlock" from its user agent), its holder cordoned by fleetlock's drain,
// rebooted after the lock and Ready again. It returns the holder's name.
func fleetlockOrphan(t *testing.T, tc *testcluster.Cluster, cs kubernetes.Interface) string {
	t.Helper()
	ctx := context.Background()
	mk := func(name, machine, boot string, cordoned bool, readySince time.Time) {
		n, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.NodeSpec{Unschedulable: cordoned}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.NewTime(readySince)}}
		n.Status.NodeInfo = corev1.NodeSystemInfo{BootID: boot, MachineID: machine, OSImage: "Fedora CoreOS 43", KernelVersion: "6.17"}
		if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	mk("other", "2c09ca98649c4c7abc779cd04c96812e", "boot-o", false, time.Now().Add(-time.Hour))
	fc, err := fleetlocktest.Client(tc.Admin)
	if err != nil {
		t.Fatal(err)
	}
	// Zincati on the holder asks for the lock: fleetlock writes the holder
	// (and drains: the node is cordoned); the node reboots and comes back
	// Ready a moment later.
	if _, err := fleetlocktest.Lock(ctx, fc, "default", "default", "978a225b3d7b40e9acd7ce9b62f68444", ""); err != nil {
		t.Fatal(err)
	}
	// The holder comes back Ready after the lock was taken: after the
	// second the Lease's managedFields date it to (they have second
	// precision), a wait that is the scenario's own timing.
	time.Sleep(time.Until(leaseWritten(t, cs).Add(time.Second)))
	mk("holder", "1c09ca98649c4c7abc779cd04c96812e", "boot-h2", true, time.Now())
	return "holder"
}

// leaseWritten is the latest managedFields time of the fleetlock Lease:
// when it was last written, to the second.
func leaseWritten(t *testing.T, cs kubernetes.Interface) time.Time {
	t.Helper()
	at, err := fleetlocktest.Written(context.Background(), cs, "default", "fleetlock-default")
	if err != nil {
		t.Fatal(err)
	}
	return at
}

// untilSteady returns once node has been Ready for grace by its stored
// Ready condition (second precision), which is when a fresh read judges
// its lock orphaned: the grace passing is the scenario's own timing.
func untilSteady(t *testing.T, cs kubernetes.Interface, node string, grace time.Duration) {
	t.Helper()
	n, err := cs.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			time.Sleep(time.Until(c.LastTransitionTime.Add(grace)))
			return
		}
	}
	t.Fatalf("%s has no Ready condition", node)
}

func kubeconfigCopy(t *testing.T, tc *testcluster.Cluster) string {
	t.Helper()
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	b, err := os.ReadFile(tc.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(kc, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return kc
}

// Issue 10 §2 on a real apiserver: a one-shot --snapshot (which never saw the
// lock being taken) says orphaned once the grace passed; release --yes frees
// the Lease and uncordons the holder, each write with its Event.
func TestFleetlockOrphanSnapshotAndReleaseRealCluster(t *testing.T) {
	tc := cliCluster(t)
	cs := tc.Client(t)
	ctx := context.Background()
	holder := fleetlockOrphan(t, tc, cs)
	untilSteady(t, cs, holder, time.Second) // the --orphan-grace below
	flags := []string{"--kubeconfig", kubeconfigCopy(t, tc), "--orphan-grace", "1s", "--request-timeout", "5s", "--sync-timeout", "30s"}

	env, out, errb := multiEnv()
	code := run(ctx, append(append([]string{}, flags...), "--snapshot", "-o", "json"), env)
	var snap model.Snapshot
	if err := json.Unmarshal([]byte(out.String()), &snap); err != nil {
		t.Fatalf("snapshot: %v\n%s\n%s", err, out.String(), errb.String())
	}
	if len(snap.Locks) != 1 || snap.Locks[0].Verdict != model.VerdictOrphaned || snap.Locks[0].HolderNode == nil ||
		*snap.Locks[0].HolderNode != holder || code != ExitAttention {
		t.Fatalf("snapshot exit %d locks %+v\n%s", code, snap.Locks, errb.String())
	}

	env, out, errb = multiEnv()
	code = run(ctx, append(append([]string{}, flags...), "release", "--kind", "fleetlock", "--yes"), env)
	if code != ExitOK || !strings.Contains(out.String(), "Then:    update Node holder") || !strings.Contains(out.String(), "Uncordon: done") {
		t.Fatalf("release exit %d\n%s\n%s", code, out.String(), errb.String())
	}
	l, err := cs.CoordinationV1().Leases("default").Get(ctx, "fleetlock-default", metav1.GetOptions{})
	if err != nil || *l.Spec.HolderIdentity != "" || *l.Spec.LeaseTransitions != 1 {
		t.Fatalf("lease after release: %+v %v", l.Spec, err)
	}
	n, err := cs.CoreV1().Nodes().Get(ctx, holder, metav1.GetOptions{})
	if err != nil || n.Spec.Unschedulable {
		t.Fatalf("holder after release: unschedulable %v %v", n.Spec.Unschedulable, err)
	}
	evs, err := cs.CoreV1().Events("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range evs.Items {
		got = append(got, e.InvolvedObject.Kind+"/"+e.Reason)
	}
	if !strings.Contains(strings.Join(got, ","), "Lease/"+lock.ReasonReleased) || !strings.Contains(strings.Join(got, ","), "Node/"+lock.ReasonUncordoned) {
		t.Fatalf("events %v", got)
	}
}

// --keep-cordoned releases only; the holder is then done · still cordoned, and
// `uncordon --node` finishes the job.
func TestFleetlockKeepCordonedThenUncordonRealCluster(t *testing.T) {
	tc := cliCluster(t)
	cs := tc.Client(t)
	ctx := context.Background()
	holder := fleetlockOrphan(t, tc, cs)
	untilSteady(t, cs, holder, time.Second) // the --orphan-grace below
	flags := []string{"--kubeconfig", kubeconfigCopy(t, tc), "--orphan-grace", "1s", "--request-timeout", "5s", "--sync-timeout", "30s"}

	env, out, errb := multiEnv()
	code := run(ctx, append(append([]string{}, flags...), "release", "--kind", "fleetlock", "--yes", "--keep-cordoned"), env)
	if code != ExitOK || strings.Contains(out.String(), "Then:") {
		t.Fatalf("release --keep-cordoned exit %d\n%s\n%s", code, out.String(), errb.String())
	}
	if n, _ := cs.CoreV1().Nodes().Get(ctx, holder, metav1.GetOptions{}); !n.Spec.Unschedulable {
		t.Fatal("--keep-cordoned uncordoned the holder")
	}
	// A fresh run never saw the cycle: the snapshot cannot call the holder
	// done (it is cordoned, its lock is gone); uncordon needs the cycle, so
	// it is refused by the node gate, never written blindly.
	env, out, errb = multiEnv()
	code = run(ctx, append(append([]string{}, flags...), "uncordon", "--node", holder, "--yes"), env)
	if code != ExitAttention || !strings.Contains(out.String(), "✗ node") {
		t.Fatalf("uncordon of a node whose cycle this run never saw: exit %d\n%s\n%s", code, out.String(), errb.String())
	}
}
