package live

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	ft "github.com/rebootwatch/rebootwatch/internal/coord/flatcar/flatcartest"
	"github.com/rebootwatch/rebootwatch/internal/coord/kinds"
	"github.com/rebootwatch/rebootwatch/internal/coord/suc/suctest"
	"github.com/rebootwatch/rebootwatch/internal/testenv/testcluster"
	"github.com/rebootwatch/rebootwatch/model"
)

// Issue 24: a one-shot session names each SUC and FLUO wedge as a blocker
// with its evidence in the snapshot: a SUC job failed on a node its drain
// container cordoned (job-failed, then stuck-cordon with uncordon), and a
// Flatcar node whose agent did not run after its reboot (agent-stopped).
// Issue 32 §2: it does so with no selection (every kind is read when it is
// installed); a selection reads only the kinds it names, and "locks"
// (--coordinators=false) names neither.
func TestCoordinatorWedgesInSnapshotRealCluster(t *testing.T) {
	testcluster.Require(t, "etcd", "kube-apiserver", "kubectl")
	tc := testcluster.SharedAlone(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs, dyn := tc.Client(t), tc.Dynamic(t)
	mk := func(name string, ready time.Time) {
		n, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name,
			Labels: map[string]string{"kubernetes.io/hostname": name, "kubernetes.io/os": "linux"}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			LastHeartbeatTime: metav1.NewTime(ready), LastTransitionTime: metav1.NewTime(ready)}}
		n.Status.NodeInfo.BootID = "boot-" + name
		if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now().Add(-time.Hour)
	for _, n := range []string{"k3s-1", "k3s-2", "flatcar-1"} {
		mk(n, start)
	}

	// SUC: the plan's job failed on k3s-1 after its drain container
	// cordoned it.
	sucInstalled(t, tc)
	ns := coordinatorNamespace(t, tc, "system-upgrade")
	bin, err := testcluster.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	spec := suctest.PlanSpec{Concurrency: 1, Drain: true, Version: "v1.31.4+k3s1", NodeSelector: map[string]string{"kubernetes.io/hostname": "k3s-1"}}
	latest := suctest.MungeVersion(spec.Version)
	jb := suctest.Job(ns, "k3s-server", "k3s-1", latest, suctest.LatestHash(latest, ""), true, false)
	now := time.Now()
	msg := suctest.JobFailedMessage(ns, jb.Name, "k3s-1", "BackoffLimitExceeded", "Job has reached the specified backoff limit")
	if _, err := suctest.Create(ctx, dyn, suctest.Plan(ns, "k3s-server", spec), suctest.StatusWith(spec.Version, "", []string{"k3s-1"},
		suctest.Cond("Validated", "True", "PlanIsValid", "", now), suctest.Cond("LatestResolved", "True", "Version", "", now),
		suctest.Cond("Complete", "False", "JobFailed", msg, now))); err != nil {
		t.Fatal(err)
	}
	if _, err := suctest.CreateJob(ctx, cs, jb, now.Add(-10*time.Minute), time.Time{}); err != nil {
		t.Fatal(err)
	}
	// The job's drain container cordons k3s-1 (kubectl drain), then the
	// job fails: the cordon is the job's.
	if out, err := exec.Command(filepath.Join(bin, "kubectl"), "--kubeconfig", tc.Kubeconfig, "cordon", "k3s-1").CombinedOutput(); err != nil {
		t.Fatalf("kubectl cordon: %v %s", err, out)
	}
	if _, err := suctest.FailJob(ctx, cs, ns, jb.Name, time.Now()); err != nil {
		t.Fatal(err)
	}

	// FLUO: flatcar-1 rebooted (Ready again after the agent's write, a new
	// boot id) but its agent never ran again.
	fns := coordinatorNamespace(t, tc, "reboot-coordinator")
	if _, err := cs.AppsV1().Deployments(fns).Create(ctx, ft.Deployment(fns, nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	agent, _ := ft.AgentClient(tc.Admin)
	operator, _ := ft.OperatorClient(tc.Admin)
	for _, w := range []struct {
		c     kubernetes.Interface
		steps []ft.Step
	}{
		{agent, []ft.Step{ft.AgentStarted, ft.UpdateDownloaded("4152.2.0")}},
		{operator, []ft.Step{ft.MarkBefore(), ft.CheckBeforePassed()}},
		{agent, []ft.Step{ft.AgentRebooting, ft.Cordon}},
	} {
		if err := ft.Write(ctx, w.c, "flatcar-1", w.steps...); err != nil {
			t.Fatal(err)
		}
	}
	n, err := cs.CoreV1().Nodes().Get(ctx, "flatcar-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var wrote time.Time
	for _, e := range n.ManagedFields {
		if e.Manager == "update-agent" && e.Time.After(wrote) {
			wrote = e.Time.Time
		}
	}
	back := wrote.Add(90 * time.Second)
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
		LastHeartbeatTime: metav1.NewTime(back), LastTransitionTime: metav1.NewTime(back)}}
	n.Status.NodeInfo.BootID = "boot-2"
	if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	judgeAt := back.Add(10 * time.Minute)
	snapshot := func(spec string) model.Snapshot {
		t.Helper()
		sel, err := kinds.Select(spec)
		if err != nil {
			t.Fatal(err)
		}
		s, err := Open(ctx, Options{Config: tc.Admin, Context: "itest", RequestTimeout: 10 * time.Second, Once: true,
			Kinds: sel, WallNow: func() time.Time { return judgeAt }})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		c, err := s.Collect(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// Through JSON, as scripts read it.
		b, err := json.Marshal(c.Snapshot(judgeAt))
		if err != nil {
			t.Fatal(err)
		}
		var snap model.Snapshot
		if err := json.Unmarshal(b, &snap); err != nil {
			t.Fatal(err)
		}
		return snap
	}
	blockers := func(snap model.Snapshot, node string) map[model.BlockerKind]model.SnapshotBlocker {
		out := map[model.BlockerKind]model.SnapshotBlocker{}
		for _, n := range snap.Nodes {
			if n.Name == node {
				for _, b := range n.Blockers {
					out[b.Kind] = b
				}
			}
		}
		return out
	}
	sources := func(snap model.Snapshot) map[model.SourceName]model.SourceStatus {
		out := map[model.SourceName]model.SourceStatus{}
		for _, src := range snap.Sources {
			out[src.Name] = src.Status
		}
		return out
	}
	snap := snapshot("")
	if got := sources(snap); got["suc"] != model.StatusOK || got["flatcar"] != model.StatusOK {
		t.Errorf("no selection: sources %v, want suc ok and flatcar ok", got)
	}
	k3s := blockers(snap, "k3s-1")
	if b, ok := k3s["job-failed"]; !ok || !strings.Contains(b.Reason, "BackoffLimitExceeded") || len(b.Evidence) == 0 {
		t.Errorf("k3s-1 job-failed = %+v (all %+v)", b, k3s)
	}
	if b, ok := k3s[model.BlockerCordon]; !ok || !strings.Contains(b.Reason, "uncordons only after a successful job") {
		t.Errorf("k3s-1 stuck-cordon = %+v", b)
	}
	fl := blockers(snap, "flatcar-1")
	if b, ok := fl["agent-stopped"]; !ok || !strings.Contains(b.Reason, "reboot-in-progress") || len(b.Evidence) == 0 {
		t.Errorf("flatcar-1 agent-stopped = %+v (all %+v)", b, fl)
	}
	if len(snap.Fleet.Blockers) == 0 || !snap.Fleet.Blockers[0].Stalls {
		t.Errorf("fleet blockers = %+v", snap.Fleet.Blockers)
	}

	snap = snapshot("kured,suc")
	if got := sources(snap); got["suc"] != model.StatusOK || got["kured"] == model.StatusDisabled ||
		got["fleetlock"] != model.StatusDisabled || got["flatcar"] != "" {
		t.Errorf("kured,suc: sources %v, want suc ok, kured read, fleetlock disabled, flatcar not read", got)
	}
	if _, ok := blockers(snap, "k3s-1")["job-failed"]; !ok {
		t.Errorf("kured,suc: k3s-1 has no job-failed: %+v", blockers(snap, "k3s-1"))
	}
	if _, ok := blockers(snap, "flatcar-1")["agent-stopped"]; ok {
		t.Errorf("kured,suc: flatcar-1 agent-stopped though flatcar is not selected")
	}
	snap = snapshot("false")
	for _, node := range []string{"k3s-1", "flatcar-1"} {
		for k := range blockers(snap, node) {
			if k == "job-failed" || k == "agent-stopped" {
				t.Errorf("%s: %s with --coordinators=false", node, k)
			}
		}
	}
}
