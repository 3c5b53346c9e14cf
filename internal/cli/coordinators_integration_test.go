package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rebootwatch/rebootwatch/internal/coord/flatcar/flatcartest"
	"github.com/rebootwatch/rebootwatch/internal/coord/suc/suctest"
	"github.com/rebootwatch/rebootwatch/internal/testenv/testcluster"
	"github.com/rebootwatch/rebootwatch/model"
)

// Issue 32 §2: --snapshot reads every installed coordinator without being
// asked. A cluster without SUC's Plan CRD and without FLUO says both are
// not-installed (exit 0, nothing unread); once the CRD is served and
// FLUO's agent has labelled a node and its operator runs, the same command
// reads both (suc ok, flatcar ok) and names a plan it cannot validate as a
// fleet blocker with its evidence (issue 24). --coordinators is a filter
// (=suc reads SUC alone: kured and fleetlock disabled, FLUO not read;
// =false reads only kured and fleetlock), and a kind that is not registered
// is a usage error naming the registered ones.
func TestSnapshotCoordinatorsRealCluster(t *testing.T) {
	tc := cliCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs := tc.Client(t)
	mkNode(t, cs, "n1", "boot-1", time.Now().Add(-time.Hour))
	snapshot := func(extra ...string) (int, model.Snapshot, string) {
		env, out, errb := multiEnv()
		args := append([]string{"--kubeconfig", kubeconfigCopy(t, tc), "--request-timeout", "5s", "--sync-timeout", "30s", "--snapshot", "-o", "json"}, extra...)
		code := run(ctx, args, env)
		var snap model.Snapshot
		if err := json.Unmarshal([]byte(out.String()), &snap); err != nil {
			t.Fatalf("%v:\n%s\n%s", err, out.String(), errb.String())
		}
		return code, snap, errb.String()
	}
	sources := func(s model.Snapshot) map[model.SourceName]model.SourceStatus {
		got := map[model.SourceName]model.SourceStatus{}
		for _, src := range s.Sources {
			got[src.Name] = src.Status
		}
		return got
	}
	code, s, stderr := snapshot()
	if got := sources(s); got["suc"] != model.StatusNotInstalled || got["flatcar"] != model.StatusNotInstalled || code != ExitOK || len(s.Unread) != 0 {
		t.Errorf("neither installed: exit %d, sources %v, unread %+v, want suc and flatcar not-installed, exit 0\n%s", code, got, s.Unread, stderr)
	}

	sucInstalled(t, tc)
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
	// FLUO: its operator runs, and its agent started on n1 (the label and
	// annotations it writes on start).
	fns := tc.Namespace(t, "reboot-coordinator")
	op, err := cs.AppsV1().Deployments(fns).Create(ctx, flatcartest.Deployment(fns, nil), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// FLUO is read wherever its operator runs: none is left behind.
	t.Cleanup(func() { _ = cs.AppsV1().Deployments(fns).Delete(context.Background(), op.Name, metav1.DeleteOptions{}) })
	agent, err := flatcartest.AgentClient(tc.Admin)
	if err != nil {
		t.Fatal(err)
	}
	if err := flatcartest.Write(ctx, agent, "n1", flatcartest.AgentStarted); err != nil {
		t.Fatal(err)
	}
	has := func(s model.Snapshot) bool {
		for _, b := range s.Fleet.Blockers {
			if b.Kind == "plan-not-validated" && strings.Contains(b.Reason, "spec.window is invalid") && len(b.Evidence) > 0 {
				return true
			}
		}
		return false
	}
	_, s, _ = snapshot()
	if !has(s) {
		t.Errorf("no flag: fleet blockers %+v", s.Fleet.Blockers)
	}
	if got := sources(s); got["suc"] != model.StatusOK || got["flatcar"] != model.StatusOK {
		t.Errorf("no flag: sources %v, want suc ok and flatcar ok", got)
	}
	_, s, _ = snapshot("--coordinators") // the old boolean form: every kind
	if got := sources(s); !has(s) || got["suc"] != model.StatusOK || got["flatcar"] != model.StatusOK {
		t.Errorf("--coordinators: sources %v, blockers %+v", got, s.Fleet.Blockers)
	}
	_, s, _ = snapshot("--coordinators=suc")
	if got := sources(s); !has(s) || got["suc"] != model.StatusOK || got["kured"] != model.StatusDisabled ||
		got["fleetlock"] != model.StatusDisabled || got["flatcar"] != "" {
		t.Errorf("--coordinators=suc: sources %v, blockers %+v", got, s.Fleet.Blockers)
	}
	_, s, _ = snapshot("--coordinators=false")
	if got := sources(s); has(s) || got["suc"] != "" || got["flatcar"] != "" || got["kured"] == model.StatusDisabled {
		t.Errorf("--coordinators=false: sources %v, blockers %+v", got, s.Fleet.Blockers)
	}
	env, out, errb := multiEnv()
	if code := run(ctx, []string{"--kubeconfig", kubeconfigCopy(t, tc), "--snapshot", "--coordinators=kured,zincati"}, env); code != ExitError ||
		!strings.Contains(errb.String(), `unknown coordinator kind "zincati"`) || !strings.Contains(errb.String(), "kured, fleetlock, suc, flatcar") {
		t.Errorf("--coordinators=kured,zincati: exit %d\n%s\n%s", code, out.String(), errb.String())
	}
	env, out, _ = multiEnv()
	run(ctx, []string{"--kubeconfig", kubeconfigCopy(t, tc), "--request-timeout", "5s", "--sync-timeout", "30s", "--snapshot"}, env)
	text := out.String()
	if strings.ContainsAny(text, "\x1b\x07\u202e") || !strings.Contains(text, "hostile") {
		t.Errorf("text snapshot carries a raw control from a plan's message:\n%q", text)
	}
}

// sucInstalled installs SUC's Plan CRD on the shared apiserver and removes
// it when the test ends: SUC is read whenever its Plans are served, so a
// CRD left behind would change what the package's other tests read.
func sucInstalled(t *testing.T, tc *testcluster.Cluster) {
	t.Helper()
	suctest.InstallCRDForTest(t, tc.Dynamic(t), tc.Client(t).Discovery())
}

// uncordon, with no flag: a node a failed SUC job left cordoned passes the
// node gate on SUC's reading (behind every other gate) and is uncordoned
// (SUC is read whenever its Plans are served, issue 32 §2); with SUC left
// out (--coordinators=false, what was read without the flag before) its
// cycle is unknown to rebootwatch and the node gate refuses it, writing
// nothing.
func TestUncordonCoordinatorsRealCluster(t *testing.T) {
	tc := cliCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs := tc.Client(t)
	sucInstalled(t, tc)
	ns := sucNamespace(t, tc)
	node, _, err := suctest.Wedge(ctx, cs, tc.Dynamic(t), ns, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	flags := []string{"--kubeconfig", kubeconfigCopy(t, tc), "--request-timeout", "5s", "--sync-timeout", "30s"}
	env, out, errb := multiEnv()
	if code := run(ctx, append(append([]string{}, flags...), "uncordon", "--node", node, "--coordinators=false", "--yes"), env); code != ExitAttention || !strings.Contains(out.String(), "✗ node") {
		t.Fatalf("uncordon --coordinators=false: exit %d\n%s\n%s", code, out.String(), errb.String())
	}
	if n, _ := cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{}); !n.Spec.Unschedulable {
		t.Fatal("uncordoned with SUC left out")
	}
	env, out, errb = multiEnv()
	if code := run(ctx, append(append([]string{}, flags...), "uncordon", "--node", node, "--yes"), env); code != ExitOK {
		t.Fatalf("uncordon: exit %d\n%s\n%s", code, out.String(), errb.String())
	}
	if !strings.Contains(out.String(), "uncordons only after a successful job") {
		t.Errorf("the node gate does not say SUC's reading:\n%s", out.String())
	}
	if n, _ := cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{}); n.Spec.Unschedulable {
		t.Fatal("still cordoned after uncordon")
	}
}

// sucNamespace creates a namespace for a test's Plans and Jobs and deletes
// them when the test ends: SUC is read in every namespace, and a plan
// another test left would block this one's.
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
