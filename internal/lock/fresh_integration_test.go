package lock_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	promclient "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/rebootwatch/rebootwatch/internal/coord/kured"
	"github.com/rebootwatch/rebootwatch/internal/coord/kured/kuredtest"
	"github.com/rebootwatch/rebootwatch/internal/live"
	"github.com/rebootwatch/rebootwatch/internal/lock"
	"github.com/rebootwatch/rebootwatch/internal/testenv/testcluster"
	"github.com/rebootwatch/rebootwatch/internal/testenv/testprom"
	"github.com/rebootwatch/rebootwatch/model"
)

// The fresh read before a write against a real apiserver (issue 22 §1),
// through the readers the CLI, the dashboard and the agent wire
// (live.Session.FreshReaders, sourceset.FreshReaders): a plan judged on a
// picture in which every gate passed is refused with fresh-data, and
// nothing is written, when one gate's input changed between the judgement
// and the write — what a stalled watch would hide from the caches. Each
// case judges a ghost kured lock of its own (--kured-daemonset), then
// changes one input and confirms.
//
// It reads every node and longhorn-system, so it runs alone (not in
// parallel) on the shared cluster, and deletes its nodes at the end.
func TestFreshReadRefusesChangedGateInputs(t *testing.T) {
	tc := testcluster.Shared(t)
	tc.EnsureLonghornCRD(t)
	cs := tc.Client(t)
	dyn := tc.Dynamic(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	freshNode(t, ctx, cs, "fresh-n1")
	freshNode(t, ctx, cs, "fresh-n2")
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "longhorn-system"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}

	// world opens a session on the ghost kured lock of a namespace of its
	// own, judges the reap and returns the plan with an actor wired as
	// the CLI wires it.
	type world struct {
		ns   string
		plan lock.Plan
		act  *lock.Actor
	}
	open := func(t *testing.T, args []string, lo live.Options) world {
		t.Helper()
		ns := tc.Namespace(t, "fresh")
		kuredDS(t, ctx, cs, ns, args)
		lo.Config, lo.Context, lo.RequestTimeout = tc.Admin, "testcluster", 10*time.Second
		lo.KuredDaemonSet, lo.FleetlockNamespace = ns+"/kured", ns
		s, err := live.Open(ctx, lo)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		sctx, scancel := context.WithTimeout(ctx, time.Minute)
		defer scancel()
		c, err := s.Collect(sctx)
		if err != nil {
			t.Fatal(err)
		}
		ref := model.LockRef{Kind: model.LockKured, Namespace: ns, Name: "kured"}
		p, err := s.Engine().Plan(c, ref, "", model.ActionReap, s.Clock())
		if err != nil || !p.Allowed {
			t.Fatalf("plan %+v %v", p, err)
		}
		return world{ns: ns, plan: p, act: &lock.Actor{Client: s.Client, Who: "fresh-test", Timeout: 20 * time.Second, Fresh: s.FreshReaders()}}
	}
	refused := func(t *testing.T, w world, wants ...string) {
		t.Helper()
		r := w.act.Do(ctx, w.plan, lock.DoOptions{})
		if r.Outcome != model.OutcomeRefused || !strings.Contains(r.Message, "reap refused: fresh-data: ") || !strings.Contains(r.Message, "nothing written") {
			t.Fatalf("%s: %s", r.Outcome, r.Message)
		}
		for _, want := range wants {
			if !strings.Contains(r.Message, want) {
				t.Errorf("message %q lacks %q", r.Message, want)
			}
		}
		ds, err := cs.AppsV1().DaemonSets(w.ns).Get(ctx, "kured", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, held := ds.Annotations[kured.Annotation]; !held {
			t.Fatal("the lock was reaped after a refusal")
		}
	}

	t.Run("a volume degraded after the judgement", func(t *testing.T) {
		name := "pvc-db"
		volume(t, ctx, dyn, name, "healthy")
		t.Cleanup(func() {
			_ = dyn.Resource(testcluster.LonghornVolumeGVR).Namespace("longhorn-system").Delete(context.Background(), name, metav1.DeleteOptions{})
		})
		w := open(t, nil, live.Options{})
		if _, ok := w.plan.Judged.Volumes["longhorn-system/"+name]; !ok {
			t.Fatalf("the plan was not judged on %s: %v", name, w.plan.Judged.Volumes)
		}
		setRobustness(t, ctx, dyn, name, "degraded")
		refused(t, w, "Longhorn volume longhorn-system/pvc-db is degraded now (was healthy)")
	})

	t.Run("kured's window and alert settings changed after the judgement", func(t *testing.T) {
		w := open(t, []string{"--reboot-days=mo,tu", "--start-time=2:00"}, live.Options{})
		ds, err := cs.AppsV1().DaemonSets(w.ns).Get(ctx, "kured", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ds.Spec.Template.Spec.Containers[0].Args = []string{"--reboot-days=su", "--start-time=2:00", "--alert-filter-regexp=^Etcd"}
		if _, err := cs.AppsV1().DaemonSets(w.ns).Update(ctx, ds, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		refused(t, w, "lock kured:"+w.ns+"/kured changed: ", "Config.RebootDays [mo tu] → [su]", `Config.AlertFilterRegexp "" → "^Etcd"`)
	})

	t.Run("a blocking alert fires at confirm time", func(t *testing.T) {
		reg := promclient.NewRegistry()
		g := promclient.NewGauge(promclient.GaugeOpts{Name: "fresh_test_blocker", Help: "1 fires the blocking alert."})
		reg.MustRegister(g)
		srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		t.Cleanup(srv.Close)
		prom := testprom.Start(t, testprom.Options{Targets: []string{strings.TrimPrefix(srv.URL, "http://")},
			Rules: "groups:\n  - name: fresh\n    rules:\n      - alert: RebootBlocker\n        expr: fresh_test_blocker > 0\n"})
		// The plan is judged once Prometheus answered (the session's
		// first picture waits for it): nothing fires.
		w := open(t, nil, live.Options{PrometheusURL: prom.URL, PrometheusAlerts: "^RebootBlocker$", PrometheusInterval: time.Second})
		if names, known := alertsKnown(w.plan); !known || len(names) != 0 {
			t.Fatalf("judged alerts %v (known %v), want none known to fire", names, known)
		}
		g.Set(1)
		waitFiring(t, ctx, w.act, "RebootBlocker")
		refused(t, w, "blocking alerts fire now: RebootBlocker (not firing when judged)")
	})

	t.Run("unchanged, the reap is made", func(t *testing.T) {
		w := open(t, []string{"--reboot-days=mo,tu"}, live.Options{})
		if r := w.act.Do(ctx, w.plan, lock.DoOptions{}); r.Outcome != model.OutcomeDone {
			t.Fatalf("%s: %s", r.Outcome, r.Message)
		}
	})
}

// alertsKnown is what the plan was judged on of the alert gate.
func alertsKnown(p lock.Plan) ([]string, bool) {
	for _, g := range p.Gates {
		if g.Name == lock.GateAlerts {
			return p.Judged.Alerts, p.Judged.AlertFilter && g.Passed && strings.Contains(g.Reason, "no blocking alert fires")
		}
	}
	return nil, false
}

// waitFiring waits until Prometheus, asked as the actor asks it, reports
// the alert firing.
func waitFiring(t *testing.T, ctx context.Context, a *lock.Actor, name string) {
	t.Helper()
	for ctx.Err() == nil {
		names, _, err := a.Fresh.Alerts(ctx, nil)
		if err == nil && len(names) == 1 && names[0] == name {
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
	t.Fatalf("%s never fired", name)
}

func freshNode(t *testing.T, ctx context.Context, cs kubernetes.Interface, name string) {
	t.Helper()
	n, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	n.Status = corev1.NodeStatus{
		NodeInfo: corev1.NodeSystemInfo{MachineID: fmt.Sprintf("%032x", len(name)), BootID: name + "-boot", OSImage: "Test OS"},
		Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.NewTime(time.Now().Add(-2 * time.Hour))}},
	}
	if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// kuredDS creates kured's DaemonSet in ns holding a ghost lock (a holder
// no node has), its container started with args.
func kuredDS(t *testing.T, ctx context.Context, cs kubernetes.Interface, ns string, args []string) {
	t.Helper()
	labels := map[string]string{"name": "kured"}
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "kured", Namespace: ns, Annotations: map[string]string{
			kured.Annotation: kuredtest.Single("gone-node", time.Now().Add(-time.Hour), 0, false)}},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "kured", Image: "ghcr.io/kubereboot/kured:1.17.1",
					Command: []string{"/usr/bin/kured"}, Args: args}}}},
		},
	}
	if _, err := cs.AppsV1().DaemonSets(ns).Create(ctx, ds, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func volume(t *testing.T, ctx context.Context, dyn dynamic.Interface, name, robustness string) {
	t.Helper()
	ri := dyn.Resource(testcluster.LonghornVolumeGVR).Namespace("longhorn-system")
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "longhorn.io/v1beta2", "kind": "Volume",
		"metadata": map[string]any{"name": name, "namespace": "longhorn-system"},
		"spec":     map[string]any{"numberOfReplicas": int64(3)}}}
	u, err := ri.Create(ctx, u, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	u.Object["status"] = map[string]any{"robustness": robustness, "state": "attached", "currentNodeID": "fresh-n1", "ownerID": "fresh-n1"}
	if _, err := ri.UpdateStatus(ctx, u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func setRobustness(t *testing.T, ctx context.Context, dyn dynamic.Interface, name, robustness string) {
	t.Helper()
	ri := dyn.Resource(testcluster.LonghornVolumeGVR).Namespace("longhorn-system")
	u, err := ri.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(u.Object, robustness, "status", "robustness"); err != nil {
		t.Fatal(err)
	}
	if _, err := ri.UpdateStatus(ctx, u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}
