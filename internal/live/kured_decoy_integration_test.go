package live

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rebootwatch/rebootwatch/internal/coord/kured"
	"github.com/rebootwatch/rebootwatch/internal/testenv/testcluster"
	"github.com/rebootwatch/rebootwatch/internal/testenv/testprom"
	"github.com/rebootwatch/rebootwatch/model"
)

// kuredDS is a DaemonSet running kured's image with args.
func kuredDS(ns, name string, annotations map[string]string, args ...string) *appsv1.DaemonSet {
	labels := map[string]string{"app.kubernetes.io/name": "kured"}
	return &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels, Annotations: annotations},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "kured", Image: "ghcr.io/kubereboot/kured:1.23.0",
					Command: []string{"/usr/bin/kured"}, Args: args}}}}}}
}

// Issue 22 §3: a tenant's DaemonSet tenant/tenant-kured, with kured's image,
// --prometheus-url=<the tenant's server> and --alert-filter-regexp=.*, beside
// the real kube-system/kured never replaces kured's settings, and its URL is
// never queried. As the decoy (its kured keeps its lock on
// kube-system/kured: it is not kured's lock), kube-system/kured is kured's
// and the reap of a ghost is refused on the real kured's firing alert. As a
// full mimic (its --ds-namespace/--ds-name name itself) it is kured's
// layout for a second node pool (issue 33 §2): its lock is judged with its
// own settings, but its Prometheus settings differ from kube-system/kured's,
// so neither is followed: the Prometheus source names both, the alerts are
// unknown (never none), and still the tenant's URL is never queried. Real
// apiserver, real Prometheus.
func TestKuredDecoyNeverReplacesKuredsSettings(t *testing.T) {
	tc := testcluster.SharedAlone(t)
	prom := testprom.Start(t, testprom.Options{Rules: `groups:
  - name: test
    rules:
      - alert: Watchdog
        expr: vector(1)
      - alert: DiskFull
        expr: vector(1)
`})
	var decoyHits atomic.Int64
	decoy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		decoyHits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"success","data":{"resultType":"vector","result":[]}}`))
	}))
	defer decoy.Close()

	cs := tc.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ghost := `{"nodeID":"gone","metadata":{"unschedulable":false},"created":"2026-11-29T10:00:00Z","TTL":0}`
	if _, err := cs.AppsV1().DaemonSets("kube-system").Create(ctx, kuredDS("kube-system", "kured",
		map[string]string{kured.Annotation: ghost}, "--prometheus-url="+prom.URL, "--alert-filter-regexp=^Watchdog$"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tenant := tc.Namespace(t, "tenant")
	decoyArgs := []string{"--prometheus-url=" + decoy.URL, "--alert-filter-regexp=.*"}
	if _, err := cs.AppsV1().DaemonSets(tenant).Create(ctx, kuredDS(tenant, "tenant-kured", nil, decoyArgs...), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	kuredRef := model.LockRef{Kind: model.LockKured, Namespace: "kube-system", Name: "kured"}

	t.Run("the issue's decoy", func(t *testing.T) {
		s, c := collect(ctx, t, tc)
		defer s.Close()
		waitAlerts(t, s, c, "DiskFull")
		if from := c.AlertFilterFrom(); !strings.Contains(from, "kube-system/kured") || strings.Contains(from, "tenant") {
			t.Fatalf("whose filter: %q", from)
		}
		if ls := c.Locks(); len(ls) != 1 || ls[0].LockRef != kuredRef {
			t.Fatalf("kured locks: %v", ls)
		}
		if h, _ := c.Source(model.SourceKured); h.Status != model.StatusOK || !strings.Contains(h.Message, "not taken as kured: "+tenant+"/tenant-kured") {
			t.Fatalf("kured source: %+v", h)
		}
		p, err := s.Engine().Plan(c, kuredRef, "gone", model.ActionReap, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if p.Allowed || !strings.Contains(p.Refusal, "blocking alerts firing: DiskFull") {
			t.Fatalf("reap of the ghost beside the real kured's firing alert: %+v", p.Gates)
		}
		if n := decoyHits.Load(); n != 0 {
			t.Fatalf("the tenant's Prometheus was queried %d times", n)
		}
	})

	t.Run("a full mimic is a second pool whose Prometheus is not guessed", func(t *testing.T) {
		d, err := cs.AppsV1().DaemonSets(tenant).Get(ctx, "tenant-kured", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		d.Spec.Template.Spec.Containers[0].Args = append(decoyArgs, "--ds-namespace="+tenant, "--ds-name=tenant-kured")
		if _, err := cs.AppsV1().DaemonSets(tenant).Update(ctx, d, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		s, c := collect(ctx, t, tc)
		defer s.Close()
		h, _ := c.Source(model.SourceKured)
		if h.Status != model.StatusOK || !strings.Contains(h.Message, "2 kured DaemonSets, one lock each (node pools)") {
			t.Fatalf("kured source: %+v", h)
		}
		if ls := c.Locks(); len(ls) != 2 {
			t.Fatalf("kured locks: %v", ls)
		}
		ph, _ := c.Source(model.SourcePrometheus)
		if ph.Status != model.StatusError || !strings.Contains(ph.Message, "kube-system/kured and "+tenant+"/tenant-kured name different Prometheus settings") {
			t.Fatalf("Prometheus source: %+v", ph)
		}
		if names, known := c.FiringAlerts(); known || len(names) != 0 {
			t.Fatalf("alerts read while the pools disagree on their Prometheus: %v %v", names, known)
		}
		p, err := s.Engine().Plan(c, kuredRef, "gone", model.ActionReap, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if p.Allowed {
			t.Fatalf("reap allowed with the alerts unknown: %+v", p.Gates)
		}
	})
	if n := decoyHits.Load(); n != 0 {
		t.Fatalf("the tenant's Prometheus was queried %d times", n)
	}

	// Issue 22 §5: an invalid --lock-annotation in kured's DaemonSet is
	// flagged on the kured source and its lock is unknown, never free.
	t.Run("an invalid lock annotation name is flagged", func(t *testing.T) {
		if err := cs.AppsV1().DaemonSets(tenant).Delete(ctx, "tenant-kured", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		d, err := cs.AppsV1().DaemonSets("kube-system").Get(ctx, "kured", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		d.Spec.Template.Spec.Containers[0].Args = []string{"--lock-annotation=Not A Key!"}
		delete(d.Annotations, kured.Annotation)
		if _, err := cs.AppsV1().DaemonSets("kube-system").Update(ctx, d, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		s, c := collect(ctx, t, tc)
		defer s.Close()
		const want = `--lock-annotation "Not A Key!" (arg) is not a valid annotation key`
		if h, _ := c.Source(model.SourceKured); h.Status != model.StatusError || !strings.Contains(h.Message, want) {
			t.Fatalf("kured source: %+v", h)
		}
		sts := c.LockStatuses()
		if len(sts) != 1 || sts[0].LockRef != kuredRef || sts[0].Verdict != model.VerdictUnknown || !strings.Contains(sts[0].Reason, want) {
			t.Fatalf("kured lock: %+v", sts)
		}
	})
}

// collect opens a session on the test cluster and waits for its first
// picture.
func collect(ctx context.Context, t *testing.T, tc *testcluster.Cluster) (*Session, *model.Cluster) {
	t.Helper()
	s, err := Open(ctx, Options{Config: tc.Admin, Context: "itest", RequestTimeout: 5 * time.Second, PrometheusInterval: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.Collect(ctx)
	if err != nil {
		s.Close()
		t.Fatal(err)
	}
	return s, c
}

// waitAlerts applies the session's events until exactly want fire.
func waitAlerts(t *testing.T, s *Session, c *model.Cluster, want ...string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		names, known := c.FiringAlerts()
		if known && strings.Join(names, ",") == strings.Join(want, ",") {
			return
		}
		if time.Now().After(deadline) {
			h, _ := c.Source(model.SourcePrometheus)
			t.Fatalf("alerts %v known %v; prometheus %+v", names, known, h)
		}
		select {
		case ev := <-s.Events:
			c.Apply(ev, s.Clock())
		case <-time.After(200 * time.Millisecond):
		}
	}
}
