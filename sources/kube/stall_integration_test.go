package kube_test

import (
	"context"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/rebootwatch/rebootwatch/internal/coord/fleetlock"
	"github.com/rebootwatch/rebootwatch/internal/coord/kured"
	"github.com/rebootwatch/rebootwatch/internal/testenv/testcluster"
	"github.com/rebootwatch/rebootwatch/model"
	"github.com/rebootwatch/rebootwatch/sources"
	"github.com/rebootwatch/rebootwatch/sources/kube"
	"github.com/rebootwatch/rebootwatch/sources/sourcetest"
)

// stallOptions audit fast, so that the tests need not wait the default
// interval; the heartbeat bound stays far above it, so a stale source is
// the audit's doing, never silence's.
func stallOptions(cs kubernetes.Interface, fleetNS string) kube.Options {
	return kube.Options{Client: cs, FleetlockNamespace: fleetNS, RequestTimeout: 10 * time.Second,
		StaleAfter: 3 * time.Second, ProbeInterval: 200 * time.Millisecond,
		AuditInterval: 200 * time.Millisecond, AuditGrace: 300 * time.Millisecond}
}

// TestStalledWatchIsStaleAgainstRealAPIServer (issue 22 §1): a proxy that
// passes every list and probe but holds the watch streams of one resource
// kept every source ok while the objects changed, and the dashboard and
// the agent judged on a stale cache. Now each source's audit compares a
// quorum list with its cache: the source turns stale naming the object
// the watch did not give, and ok again once its watch delivers.
func TestStalledWatchIsStaleAgainstRealAPIServer(t *testing.T) {
	c := testcluster.SharedAlone(t)
	admin := c.Client(t)
	ctx := context.Background()

	createNode(t, admin, "w-1", "worker", "boot-w-1", true)
	createNode(t, admin, "w-2", "worker", "boot-w-2", true)
	cordon(t, admin, "w-2", true) // its pods are watched
	kuredNS := c.Namespace(t, "kured")
	if _, err := admin.AppsV1().DaemonSets(kuredNS).Create(ctx, kuredDaemonSet(kuredNS, "kured", ""), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	fleetNS := c.Namespace(t, "fleetlock")
	holder := "978a225b3d7b40e9acd7ce9b62f68444"
	if _, err := admin.CoordinationV1().Leases(fleetNS).Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: fleetNS, Name: "fleetlock-default"},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	shop := c.Namespace(t, "shop")
	createPDB(t, admin, shop, "web", map[string]string{"app": "web"}, 1, 1, 1, 0)
	createPod(t, admin, shop, "web-0", "w-2", map[string]string{"app": "web"}, "StatefulSet", corev1.PodRunning)

	for _, tc := range []struct {
		resource string
		source   model.SourceName
		names    string // the object named in the message
		change   func(t *testing.T)
		seen     func(c *model.Cluster) bool // the change reached the model
	}{
		{"nodes", model.SourceNodes, "node w-1", func(t *testing.T) { cordon(t, admin, "w-1", true) },
			func(c *model.Cluster) bool { n, ok := c.Node("w-1"); return ok && n.Unschedulable }},
		{"daemonsets", model.SourceKured, "DaemonSet " + kuredNS + "/kured", func(t *testing.T) {
			ds, err := admin.AppsV1().DaemonSets(kuredNS).Get(ctx, "kured", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			ds.Annotations = map[string]string{kured.Annotation: singleLock}
			if _, err := admin.AppsV1().DaemonSets(kuredNS).Update(ctx, ds, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}, func(c *model.Cluster) bool {
			l, ok := c.Lock(model.LockRef{Kind: model.LockKured, Namespace: kuredNS, Name: "kured"})
			spec, isKured := l.Spec.(*kured.Spec)
			return ok && isKured && spec.Present
		}},
		{"leases", model.SourceFleetlock, "Lease " + fleetNS + "/fleetlock-default", func(t *testing.T) {
			l, err := admin.CoordinationV1().Leases(fleetNS).Get(ctx, "fleetlock-default", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			l.Spec.HolderIdentity = nil
			if _, err := admin.CoordinationV1().Leases(fleetNS).Update(ctx, l, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}, func(c *model.Cluster) bool {
			l, ok := c.Lock(model.LockRef{Kind: model.LockFleetlock, Namespace: fleetNS, Name: "fleetlock-default"})
			spec, isLease := l.Spec.(*fleetlock.Spec)
			return ok && isLease && spec.Holder == ""
		}},
		{"poddisruptionbudgets", model.SourcePDBs, "PodDisruptionBudget " + shop + "/web2", func(t *testing.T) {
			createPDB(t, admin, shop, "web2", map[string]string{"app": "web"}, 1, 1, 1, 0)
		}, func(c *model.Cluster) bool { return len(c.PDBs()) == 2 }},
		{"pods", model.SourcePods, "pod " + shop + "/web-0", func(t *testing.T) {
			if err := admin.CoreV1().Pods(shop).Delete(ctx, "web-0", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
				t.Fatal(err)
			}
		}, func(c *model.Cluster) bool { pods, ok := c.NodePods("w-2"); return ok && len(pods) == 0 }},
	} {
		t.Run(tc.resource, func(t *testing.T) {
			p := c.StallingProxy(t, c.Admin)
			cs, err := kubernetes.NewForConfig(p.Config)
			if err != nil {
				t.Fatal(err)
			}
			r := sourcetest.NewRecorder("it").WithTimeout(sourcetest.IntegrationTimeout)
			sourcetest.Start(t, r, func(ctx context.Context, sink sources.Sink) (*kube.Source, error) {
				return kube.Start(ctx, stallOptions(cs, fleetNS), sink)
			})
			r.Eventually(t, string(tc.source)+" ok", func(c *model.Cluster) bool {
				h, _ := c.Source(tc.source)
				return h.Status == model.StatusOK
			})
			p.Hold(tc.resource)
			r.Eventually(t, "the watch of "+tc.resource+" held", func(*model.Cluster) bool { return p.Holding(tc.resource) > 0 })
			tc.change(t)
			r.Eventually(t, string(tc.source)+" stale, naming "+tc.names, func(c *model.Cluster) bool {
				h, _ := c.Source(tc.source)
				return h.Status == model.StatusStale && strings.HasPrefix(h.Message, "watch not delivering: ") &&
					strings.Contains(h.Message, tc.names)
			})
			var seen bool
			r.Read(func(c *model.Cluster) { seen = tc.seen(c) })
			if seen {
				t.Fatal("the change reached the model through a held watch")
			}
			// Every other source stays ok: only this watch is held.
			for _, h := range sourcesOf(r) {
				if h.Name != tc.source && h.Status == model.StatusStale {
					t.Errorf("%s stale too: %s", h.Name, h.Message)
				}
			}
			p.Release(tc.resource)
			r.Eventually(t, "the change delivered and "+string(tc.source)+" ok again", func(c *model.Cluster) bool {
				h, _ := c.Source(tc.source)
				return h.Status == model.StatusOK && tc.seen(c)
			})
		})
	}
}

// TestHealthyWatchNeverStaleAgainstRealAPIServer: the audit makes no false
// alarm, neither on a quiet cluster nor while every watched resource
// changes all the time through a proxy that holds nothing.
func TestHealthyWatchNeverStaleAgainstRealAPIServer(t *testing.T) {
	c := testcluster.SharedAlone(t)
	admin := c.Client(t)
	ctx := context.Background()
	createNode(t, admin, "w-1", "worker", "boot-w-1", true)
	createNode(t, admin, "w-2", "worker", "boot-w-2", true)
	cordon(t, admin, "w-2", true)
	kuredNS := c.Namespace(t, "kured")
	if _, err := admin.AppsV1().DaemonSets(kuredNS).Create(ctx, kuredDaemonSet(kuredNS, "kured", ""), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	fleetNS := c.Namespace(t, "fleetlock")
	if _, err := admin.CoordinationV1().Leases(fleetNS).Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: fleetNS, Name: "fleetlock-default"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	shop := c.Namespace(t, "shop")
	createPDB(t, admin, shop, "web", map[string]string{"app": "web"}, 1, 1, 1, 0)
	createPod(t, admin, shop, "web-0", "w-2", map[string]string{"app": "web"}, "StatefulSet", corev1.PodRunning)

	p := c.StallingProxy(t, c.Admin)
	cs, err := kubernetes.NewForConfig(p.Config)
	if err != nil {
		t.Fatal(err)
	}
	r := sourcetest.NewRecorder("it").WithTimeout(sourcetest.IntegrationTimeout)
	stale := make(chan string, 1)
	// Every health report is looked at, not only the last one.
	sink := func(ev model.Event) {
		if sc, ok := ev.(model.SourceChanged); ok && sc.Health.Status == model.StatusStale {
			select {
			case stale <- string(sc.Health.Name) + ": " + sc.Health.Message:
			default:
			}
		}
		r.Sink(ev)
	}
	sourcetest.Start(t, r, func(ctx context.Context, _ sources.Sink) (*kube.Source, error) {
		return kube.Start(ctx, stallOptions(cs, fleetNS), sink)
	})
	watched := []string{"nodes", "daemonsets", "leases", "poddisruptionbudgets", "pods"}
	// audits waits until every resource was listed n more times (the
	// audits' lists: the informers list once, at the start).
	audits := func(what string, n int) {
		base := map[string]int{}
		for _, res := range watched {
			base[res] = p.Lists(res)
		}
		r.Eventually(t, what, func(*model.Cluster) bool {
			for _, res := range watched {
				if p.Lists(res) < base[res]+n {
					return false
				}
			}
			return true
		})
	}
	audits("20 audits of a quiet cluster", 20)
	// Then everything changes, again and again, while the audits run.
	for i := range 20 {
		cordon(t, admin, "w-1", i%2 == 0)
		ds, err := admin.AppsV1().DaemonSets(kuredNS).Get(ctx, "kured", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ds.Annotations = map[string]string{"n": string(rune('a' + i))}
		if _, err := admin.AppsV1().DaemonSets(kuredNS).Update(ctx, ds, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		l, err := admin.CoordinationV1().Leases(fleetNS).Get(ctx, "fleetlock-default", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		l.Labels = map[string]string{"n": string(rune('a' + i))}
		if _, err := admin.CoordinationV1().Leases(fleetNS).Update(ctx, l, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		b, err := admin.PolicyV1().PodDisruptionBudgets(shop).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		b.Labels = map[string]string{"n": string(rune('a' + i))}
		if _, err := admin.PolicyV1().PodDisruptionBudgets(shop).Update(ctx, b, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		pod, err := admin.CoreV1().Pods(shop).Get(ctx, "web-0", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pod.Labels["n"] = string(rune('a' + i))
		if _, err := admin.CoreV1().Pods(shop).Update(ctx, pod, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		audits("an audit after change "+string(rune('a'+i)), 1)
	}
	select {
	case s := <-stale:
		t.Fatalf("a healthy watch was reported stale: %s", s)
	default:
	}
	for _, h := range sourcesOf(r) {
		if h.Status != model.StatusOK {
			t.Errorf("%s %s (%s), want ok", h.Name, h.Status, h.Message)
		}
	}
}

func sourcesOf(r *sourcetest.Recorder) []model.SourceHealth {
	var out []model.SourceHealth
	r.Read(func(c *model.Cluster) { out = c.Sources() })
	return out
}
