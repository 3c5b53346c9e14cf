package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/rebootwatch/rebootwatch/internal/lock"
	"github.com/rebootwatch/rebootwatch/model"
)

// Issue 27 on a real apiserver: kured's commonest wedge. worker-1 took
// kured's lock (metadata.unschedulable false: kured cordoned it), rebooted
// (Ready since after the lock) and its kured pod never came back, so it is
// still cordoned and holds the lock, 10 minutes after the reboot.

// wedgeWorld builds it; pod says what is on worker-1 of kured's DaemonSet:
// "crashloop" (CrashLoopBackOff), or "" (missing).
func wedgeWorld(t *testing.T, cs kubernetes.Interface, pod string) {
	t.Helper()
	wedgeWorldAt(t, cs, pod, 10*time.Minute)
}

// wedgeWorldAt is wedgeWorld with worker-1 rebooted ago.
func wedgeWorldAt(t *testing.T, cs kubernetes.Interface, pod string, ago time.Duration) {
	t.Helper()
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Second)
	mk := func(name string, cordoned bool, readySince time.Time) {
		n, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.NodeSpec{Unschedulable: cordoned}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.NewTime(readySince)}}
		n.Status.NodeInfo = corev1.NodeSystemInfo{BootID: "boot-" + name + "-2", MachineID: fmt.Sprintf("%032x", len(name)+int(name[len(name)-1])),
			OSImage: "Ubuntu 24.04.3 LTS", KernelVersion: "6.8.0-60-generic"}
		if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	mk("worker-1", true, now.Add(-ago))
	mk("worker-2", false, now.Add(-48*time.Hour))
	labels := map[string]string{"name": "kured"}
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "kured",
		Annotations: map[string]string{lockAnnotation: fmt.Sprintf(`{"nodeID":"worker-1","metadata":{"unschedulable":false},"created":%q,"TTL":0}`,
			now.Add(-15*time.Minute).Format(time.RFC3339))}},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "kured", Image: "ghcr.io/kubereboot/kured:1.17.1",
					Command: []string{"/usr/bin/kured"}, Args: []string{"--period=1m"}}}}}}}
	ds, err := cs.AppsV1().DaemonSets("kube-system").Create(ctx, ds, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kuredPod := func(name, node string, crash bool) {
		yes := true
		p, err := cs.CoreV1().Pods("kube-system").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: name, Labels: labels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "kured", UID: ds.UID, Controller: &yes}}},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "kured", Image: "ghcr.io/kubereboot/kured:1.17.1"}}}},
			metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cst := corev1.ContainerStatus{Name: "kured", Image: "ghcr.io/kubereboot/kured:1.17.1", Ready: true, RestartCount: 0,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(now.Add(-48 * time.Hour))}}}
		ready := corev1.ConditionTrue
		if crash {
			ready, cst.Ready, cst.RestartCount = corev1.ConditionFalse, false, 6
			cst.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff",
				Message: "back-off 5m0s restarting failed container=kured"}}
			cst.LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 127, Reason: "Error",
				StartedAt: metav1.NewTime(now.Add(-3 * time.Minute)), FinishedAt: metav1.NewTime(now.Add(-3 * time.Minute))}}
		}
		p.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: ready}},
			ContainerStatuses: []corev1.ContainerStatus{cst}}
		if _, err := cs.CoreV1().Pods("kube-system").UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	kuredPod("kured-w2", "worker-2", false)
	switch pod {
	case "crashloop":
		kuredPod("kured-w1", "worker-1", true)
	case "running":
		kuredPod("kured-w1", "worker-1", false)
	}
}

type wedgeSnapshot struct {
	Locks []struct {
		Verdict string   `json:"verdict"`
		Reason  string   `json:"reason"`
		Actions []string `json:"actions"`
	} `json:"locks"`
	Fleet struct {
		Blockers []blkBlocker `json:"blockers"`
	} `json:"fleet"`
	ExitCode int `json:"exitCode"`
}

func TestKuredWedgeRealCluster(t *testing.T) {
	for _, tc := range []struct {
		pod  string
		want []string // in the lock's reason
	}{
		{"crashloop", []string{"kured on worker-1 has not finished its cycle 10m after the reboot", "kured's pod kube-system/kured-w1 is CrashLoopBackOff, 6 restart(s)"}},
		{"", []string{"kured on worker-1 has not finished its cycle 10m after the reboot", "kured's pod on worker-1 is missing"}},
	} {
		name := tc.pod
		if name == "" {
			name = "missing"
		}
		t.Run(name, func(t *testing.T) {
			cl := cliCluster(t)
			cs := cl.Client(t)
			ctx := context.Background()
			wedgeWorld(t, cs, tc.pod)
			flags := []string{"--kubeconfig", kubeconfigCopy(t, cl), "--orphan-grace", "1m", "--request-timeout", "5s", "--sync-timeout", "30s"}

			env, out, errb := multiEnv()
			code := run(ctx, append(append([]string{}, flags...), "--snapshot", "-o", "json"), env)
			var snap wedgeSnapshot
			if err := json.Unmarshal([]byte(out.String()), &snap); err != nil {
				t.Fatalf("snapshot: %v\n%s\n%s", err, out.String(), errb.String())
			}
			if code != ExitAttention || snap.ExitCode != 2 || len(snap.Locks) != 1 || snap.Locks[0].Verdict != "orphaned" ||
				strings.Join(snap.Locks[0].Actions, ",") != "release" {
				t.Fatalf("snapshot exit %d locks %+v\n%s", code, snap.Locks, errb.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(snap.Locks[0].Reason, w) {
					t.Errorf("reason %q lacks %q", snap.Locks[0].Reason, w)
				}
			}
			if len(snap.Fleet.Blockers) == 0 || snap.Fleet.Blockers[0].Node != "worker-1" || snap.Fleet.Blockers[0].Kind != "lock-held" ||
				!strings.Contains(snap.Fleet.Blockers[0].Reason, "kured on worker-1 has not finished its cycle") ||
				!strings.Contains(snap.Fleet.Blockers[0].Reason, "which also uncordons worker-1") {
				t.Fatalf("fleet blockers %+v", snap.Fleet.Blockers)
			}

			// uncordon --node is refused while worker-1 holds the lock.
			env, out, errb = multiEnv()
			if code := run(ctx, append(append([]string{}, flags...), "uncordon", "--node", "worker-1", "--yes"), env); code == ExitOK {
				t.Fatalf("uncordon of the holder: exit %d\n%s\n%s", code, out.String(), errb.String())
			}

			// release frees the lock and uncordons worker-1, as kured would.
			env, out, errb = multiEnv()
			code = run(ctx, append(append([]string{}, flags...), "release", "--kind", "kured", "--yes"), env)
			if code != ExitOK || !strings.Contains(out.String(), "Then:    update Node worker-1") || !strings.Contains(out.String(), "Uncordon: done") {
				t.Fatalf("release exit %d\n%s\n%s", code, out.String(), errb.String())
			}
			d, err := cs.AppsV1().DaemonSets("kube-system").Get(ctx, "kured", metav1.GetOptions{})
			if _, held := d.Annotations[lockAnnotation]; err != nil || held {
				t.Fatalf("kured's lock after release: %v %v", d.Annotations, err)
			}
			if n, err := cs.CoreV1().Nodes().Get(ctx, "worker-1", metav1.GetOptions{}); err != nil || n.Spec.Unschedulable {
				t.Fatalf("worker-1 after release: unschedulable %v %v", n.Spec.Unschedulable, err)
			}
			evs, err := cs.CoreV1().Events("").List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range evs.Items {
				got = append(got, e.InvolvedObject.Kind+"/"+e.Reason)
			}
			if s := strings.Join(got, ","); !strings.Contains(s, "DaemonSet/"+lock.ReasonReleased) || !strings.Contains(s, "Node/"+lock.ReasonUncordoned) {
				t.Fatalf("events %v", got)
			}
		})
	}
}

// Issue 27 §3 on a real apiserver: an uncordon as kubectl and kured make it
// removes spec.unschedulable and leaves no managedFields entry that dates
// it; a fresh --snapshot one second after it must not say the holder has
// been schedulable since its Ready transition (10 minutes): unknown, the
// grace not passed. An uncordon that writes false (a server-side apply)
// is dated.
func TestSteadySinceAfterManualUncordonRealCluster(t *testing.T) {
	cl := cliCluster(t)
	cs := cl.Client(t)
	ctx := context.Background()
	// kured's pod runs on worker-1: it may still release the lock, so how
	// long the holder has been steady decides. (With its pod crash-looping
	// or missing, nothing there releases it: orphaned by kured's own bound,
	// issue 33 §3, TestKuredUncordonedHolderRealCluster.)
	wedgeWorld(t, cs, "running")
	flags := []string{"--kubeconfig", kubeconfigCopy(t, cl), "--orphan-grace", "1m", "--request-timeout", "5s", "--sync-timeout", "30s"}
	// kubectl uncordon: a strategic merge patch that removes the field.
	if _, err := cs.CoreV1().Nodes().Patch(ctx, "worker-1", "application/strategic-merge-patch+json",
		[]byte(`{"spec":{"unschedulable":null}}`), metav1.PatchOptions{FieldManager: "kubectl-uncordon"}); err != nil {
		t.Fatal(err)
	}
	n, err := cs.CoreV1().Nodes().Get(ctx, "worker-1", metav1.GetOptions{})
	if err != nil || n.Spec.Unschedulable {
		t.Fatalf("uncordon: %v", err)
	}
	for _, e := range n.ManagedFields {
		if strings.Contains(string(e.FieldsV1.GetRawBytes()), `"f:unschedulable"`) {
			t.Fatalf("an uncordon left a managedFields entry owning spec.unschedulable: %s %s", e.Manager, e.FieldsV1.GetRawBytes())
		}
	}
	env, out, errb := multiEnv()
	run(ctx, append(append([]string{}, flags...), "--snapshot", "-o", "json"), env)
	var snap model.Snapshot
	if err := json.Unmarshal([]byte(out.String()), &snap); err != nil {
		t.Fatalf("snapshot: %v\n%s\n%s", err, out.String(), errb.String())
	}
	if len(snap.Locks) != 1 || snap.Locks[0].Verdict != model.VerdictHeld || !strings.Contains(snap.Locks[0].Reason, "since when is unknown") {
		t.Fatalf("a fresh snapshot after a manual uncordon: %+v", snap.Locks)
	}
	// release is refused to the agent's rule and allowed to an operator
	// only as a held lock (never as an orphan whose grace passed).
	env, out, errb = multiEnv()
	run(ctx, append(append([]string{}, flags...), "release", "--kind", "kured", "--dry-run"), env)
	if !strings.Contains(out.String(), "Verdict: held") || !strings.Contains(out.String(), "steady for: unknown") {
		t.Fatalf("release --dry-run after a manual uncordon:\n%s\n%s", out.String(), errb.String())
	}

	// A server-side apply that writes unschedulable: false owns the field:
	// its time dates the uncordon (just now: the grace is not passed).
	if _, err := cs.CoreV1().Nodes().Patch(ctx, "worker-1", "application/apply-patch+yaml",
		[]byte(`{"apiVersion":"v1","kind":"Node","metadata":{"name":"worker-1"},"spec":{"unschedulable":false}}`),
		metav1.PatchOptions{FieldManager: "ops-apply"}); err != nil {
		t.Fatal(err)
	}
	env, out, errb = multiEnv()
	run(ctx, append(append([]string{}, flags...), "release", "--kind", "kured", "--dry-run"), env)
	if !strings.Contains(out.String(), "schedulable since: managedFields: spec.unschedulable written by ops-apply at") {
		t.Fatalf("release --dry-run after an apply of unschedulable false:\n%s\n%s", out.String(), errb.String())
	}
}

// A running watch sees the holder recovering, then, once kured's bound
// (reboot + 90 s first tick + 0 delay + the grace) passed, names the stall
// and exits 2.
func TestKuredWedgeWatchRealCluster(t *testing.T) {
	cl := cliCluster(t)
	cs := cl.Client(t)
	wedgeWorldAt(t, cs, "crashloop", 85*time.Second)
	env, out, errb := multiEnv()
	c := DefaultCommon()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	code := runWatchWith(ctx, env, &c, []string{"--kubeconfig", kubeconfigCopy(t, cl), "--orphan-grace", "3s", "--stall-after", "10m",
		"--tick", "100ms", "--summary-every", "0", "--request-timeout", "5s", "--sync-timeout", "30s"}, defaultWatchDeps())
	o := out.String()
	if code != ExitAttention || !strings.Contains(o, "judged orphaned: kured on worker-1 has not finished its cycle") ||
		!strings.Contains(o, "blocked: kured on worker-1 has not finished its cycle") || !strings.Contains(o, "CrashLoopBackOff") ||
		!strings.Contains(o, "stall") {
		t.Fatalf("watch exit %d\n%s\n%s", code, o, errb.String())
	}
}

// Issue 27 §2 on a real apiserver: kured (--lock-release-delay=1m) came back
// on worker-1 40 s ago, 5 minutes after the reboot, and the uncordon is
// dated 20 s ago: kured is inside its delay and will release on its own.
// Counted from the reboot the delay would have passed and the lock would
// be orphaned; counted from kured's own steps it is held, release refused,
// and the evidence says which step it was counted from.
func TestKuredReleaseDelayFromKuredsStepsRealCluster(t *testing.T) {
	cl := cliCluster(t)
	cs := cl.Client(t)
	ctx := context.Background()
	wedgeWorldAt(t, cs, "", 5*time.Minute)
	now := time.Now().UTC().Truncate(time.Second)
	d, err := cs.AppsV1().DaemonSets("kube-system").Get(ctx, "kured", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d.Spec.Template.Spec.Containers[0].Args = []string{"--period=1m", "--lock-release-delay=1m"}
	if d, err = cs.AppsV1().DaemonSets("kube-system").Update(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	yes := true
	p, err := cs.CoreV1().Pods("kube-system").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "kured-w1",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "kured", UID: d.UID, Controller: &yes}}},
		Spec: corev1.PodSpec{NodeName: "worker-1", Containers: []corev1.Container{{Name: "kured", Image: "ghcr.io/kubereboot/kured:1.17.1"}}}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "kured", Image: "ghcr.io/kubereboot/kured:1.17.1", Ready: true, RestartCount: 1,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(now.Add(-40 * time.Second))}}}}}
	if _, err := cs.CoreV1().Pods("kube-system").UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The uncordon, dated by managedFields (written false by an apply).
	if _, err := cs.CoreV1().Nodes().Patch(ctx, "worker-1", "application/apply-patch+yaml",
		[]byte(`{"apiVersion":"v1","kind":"Node","metadata":{"name":"worker-1"},"spec":{"unschedulable":false}}`),
		metav1.PatchOptions{FieldManager: "kured", Force: &yes}); err != nil {
		t.Fatal(err)
	}
	flags := []string{"--kubeconfig", kubeconfigCopy(t, cl), "--orphan-grace", "1s", "--request-timeout", "5s", "--sync-timeout", "30s"}
	env, out, errb := multiEnv()
	code := run(ctx, append(append([]string{}, flags...), "release", "--kind", "kured", "--yes"), env)
	o := out.String()
	if code == ExitOK || !strings.Contains(o, "Verdict: held") || !strings.Contains(o, "kured may still release it on its own") ||
		!strings.Contains(o, "kured releases by:") || !strings.Contains(o, "kured's pod kube-system/kured-w1 started at") ||
		!strings.Contains(o, "✗ verdict") {
		t.Fatalf("release inside kured's delay: exit %d\n%s\n%s", code, o, errb.String())
	}
	if d, err := cs.AppsV1().DaemonSets("kube-system").Get(ctx, "kured", metav1.GetOptions{}); err != nil || d.Annotations[lockAnnotation] == "" {
		t.Fatalf("the lock was released inside kured's delay: %v %v", d.Annotations, err)
	}
}
