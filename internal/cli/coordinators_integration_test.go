package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rebootwatch/rebootwatch/internal/coord/suc/suctest"
	"github.com/rebootwatch/rebootwatch/internal/testenv/testcluster"
	"github.com/rebootwatch/rebootwatch/model"
)

// --coordinators: --snapshot also reads system-upgrade-controller and
// names a plan it cannot validate as a fleet blocker with its evidence
// (issue 24); without the flag the snapshot does not read Plans.
func TestSnapshotCoordinatorsRealCluster(t *testing.T) {
	tc := cliCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := suctest.InstallCRD(ctx, tc.Dynamic(t)); err != nil {
		t.Fatal(err)
	}
	ns := sucNamespace(t, tc)
	spec := suctest.PlanSpec{Concurrency: 1, Version: "v1.31.4+k3s1"}
	if _, err := suctest.Create(ctx, tc.Dynamic(t), suctest.Plan(ns, "k3s-server", spec), suctest.StatusWith(spec.Version, "", nil,
		suctest.Cond("Validated", "False", "Error", "spec.window is invalid", time.Now()))); err != nil {
		t.Fatal(err)
	}
	// Anyone who may write a plan's status controls its message.
	if _, err := suctest.Create(ctx, tc.Dynamic(t), suctest.Plan(ns, "hostile", spec), suctest.StatusWith(spec.Version, "", nil,
		suctest.Cond("Validated", "False", "Error", "bad\x1b]0;pwned\x07\u202eplan", time.Now()))); err != nil {
		t.Fatal(err)
	}
	snapshot := func(extra ...string) model.Snapshot {
		env, out, errb := multiEnv()
		args := append([]string{"--kubeconfig", kubeconfigCopy(t, tc), "--request-timeout", "5s", "--sync-timeout", "30s", "--snapshot", "-o", "json"}, extra...)
		run(ctx, args, env)
		var snap model.Snapshot
		if err := json.Unmarshal([]byte(out.String()), &snap); err != nil {
			t.Fatalf("%v:\n%s\n%s", err, out.String(), errb.String())
		}
		return snap
	}
	has := func(s model.Snapshot) bool {
		for _, b := range s.Fleet.Blockers {
			if b.Kind == "plan-not-validated" && strings.Contains(b.Reason, "spec.window is invalid") && len(b.Evidence) > 0 {
				return true
			}
		}
		return false
	}
	s := snapshot("--coordinators")
	if !has(s) {
		t.Errorf("--coordinators: fleet blockers %+v", s.Fleet.Blockers)
	}
	// Each kind read is a source: SUC read, FLUO not installed here.
	got := map[model.SourceName]model.SourceStatus{}
	for _, src := range s.Sources {
		got[src.Name] = src.Status
	}
	if got["suc"] != model.StatusOK || got["flatcar"] != model.StatusNotInstalled {
		t.Errorf("--coordinators: sources %+v, want suc ok and flatcar not-installed", s.Sources)
	}
	if s := snapshot(); has(s) {
		t.Errorf("without --coordinators: %+v", s.Fleet.Blockers)
	}
	env, out, _ := multiEnv()
	run(ctx, []string{"--kubeconfig", kubeconfigCopy(t, tc), "--request-timeout", "5s", "--sync-timeout", "30s", "--snapshot", "--coordinators"}, env)
	text := out.String()
	if strings.ContainsAny(text, "\x1b\x07\u202e") || !strings.Contains(text, "hostile") {
		t.Errorf("text snapshot carries a raw control from a plan's message:\n%q", text)
	}
}

// uncordon --coordinators: a node a failed SUC job left cordoned passes
// the node gate on SUC's reading (behind every other gate) and is
// uncordoned; without the flag its cycle is unknown to rebootwatch and the
// node gate refuses it, writing nothing.
func TestUncordonCoordinatorsRealCluster(t *testing.T) {
	tc := cliCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs := tc.Client(t)
	if err := suctest.InstallCRD(ctx, tc.Dynamic(t)); err != nil {
		t.Fatal(err)
	}
	ns := sucNamespace(t, tc)
	node, _, err := suctest.Wedge(ctx, cs, tc.Dynamic(t), ns, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	flags := []string{"--kubeconfig", kubeconfigCopy(t, tc), "--request-timeout", "5s", "--sync-timeout", "30s"}
	env, out, errb := multiEnv()
	if code := run(ctx, append(append([]string{}, flags...), "uncordon", "--node", node, "--yes"), env); code != ExitAttention || !strings.Contains(out.String(), "✗ node") {
		t.Fatalf("uncordon without --coordinators: exit %d\n%s\n%s", code, out.String(), errb.String())
	}
	if n, _ := cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{}); !n.Spec.Unschedulable {
		t.Fatal("uncordoned without --coordinators")
	}
	env, out, errb = multiEnv()
	if code := run(ctx, append(append([]string{}, flags...), "uncordon", "--node", node, "--coordinators", "--yes"), env); code != ExitOK {
		t.Fatalf("uncordon --coordinators: exit %d\n%s\n%s", code, out.String(), errb.String())
	}
	if !strings.Contains(out.String(), "uncordons only after a successful job") {
		t.Errorf("the node gate does not say SUC's reading:\n%s", out.String())
	}
	if n, _ := cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{}); n.Spec.Unschedulable {
		t.Fatal("still cordoned after uncordon --coordinators")
	}
}

// sucNamespace creates a namespace for a test's Plans and Jobs and deletes
// them when the test ends: --coordinators reads the Plans of every
// namespace, and a plan another test left would block this one's.
func sucNamespace(t *testing.T, tc *testcluster.Cluster) string {
	t.Helper()
	ns := tc.Namespace(t, "system-upgrade")
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := tc.Dynamic(t).Resource(suctest.PlanGVR).Namespace(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
			t.Errorf("clean-up: delete Plans: %v", err)
		}
		if err := tc.Client(t).BatchV1().Jobs(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
			t.Errorf("clean-up: delete Jobs: %v", err)
		}
	})
	return ns
}
