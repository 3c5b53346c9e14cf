package kube

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	appsv1client "k8s.io/client-go/kubernetes/typed/apps/v1"
	k8stesting "k8s.io/client-go/testing"

	"github.com/rebootwatch/rebootwatch/internal/coord/fleetlock"
	"github.com/rebootwatch/rebootwatch/internal/coord/kured"
	"github.com/rebootwatch/rebootwatch/model"
	"github.com/rebootwatch/rebootwatch/sources"
	"github.com/rebootwatch/rebootwatch/sources/sourcetest"
)

func node(name string, ready bool, labels map[string]string) *corev1.Node {
	st := corev1.ConditionTrue
	if !ready {
		st = corev1.ConditionFalse
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), Labels: labels,
			Annotations: map[string]string{
				"weave.works/kured-reboot-in-progress": "2026-11-29T10:00:00Z",
				"node.alpha.kubernetes.io/ttl":         "0",
			},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate}},
		},
		Spec: corev1.NodeSpec{PodCIDR: "10.0.0.0/24", ProviderID: "x://" + name},
		Status: corev1.NodeStatus{
			Conditions: []corev1.NodeCondition{
				{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, LastHeartbeatTime: metav1.Now()},
				{Type: corev1.NodeReady, Status: st, Reason: "KubeletReady", LastHeartbeatTime: metav1.Now(),
					LastTransitionTime: metav1.NewTime(time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC))},
			},
			NodeInfo: corev1.NodeSystemInfo{BootID: "boot-" + name, MachineID: "1c09ca98649c4c7abc779cd04c96812e",
				OSImage: "Fedora CoreOS 43", KernelVersion: "6.17.1", KubeletVersion: "v1.37.2"},
			Images:    []corev1.ContainerImage{{Names: []string{"registry/image:1"}, SizeBytes: 1 << 20}},
			Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.1.1.1"}},
		},
	}
}

func kspec(l *model.LockObject) *kured.Spec     { return l.Spec.(*kured.Spec) }
func fspec(l *model.LockObject) *fleetlock.Spec { return l.Spec.(*fleetlock.Spec) }

func start(t *testing.T, cs *fake.Clientset, o Options) (*sourcetest.Recorder, *Source) {
	t.Helper()
	r := sourcetest.NewRecorder("test")
	o.Client = cs
	return r, sourcetest.Start(t, r, func(ctx context.Context, sink sources.Sink) (*Source, error) { return Start(ctx, o, sink) })
}

func TestNodesSyncAndWatch(t *testing.T) {
	cs := fake.NewClientset(
		node("cp-1", true, map[string]string{"node-role.kubernetes.io/control-plane": "", "kubernetes.io/hostname": "cp-1"}),
		node("w-1", true, map[string]string{"kubernetes.io/role": "worker", "node-role.kubernetes.io/storage": ""}),
	)
	r, _ := start(t, cs, Options{})
	r.Eventually(t, "nodes ok with 2 nodes", func(c *model.Cluster) bool {
		h, _ := c.Source(model.SourceNodes)
		return h.Status == model.StatusOK && c.NodeCount() == 2
	})
	var cp, w *model.Node
	r.Read(func(c *model.Cluster) {
		cp, _ = c.Node("cp-1")
		w, _ = c.Node("w-1")
	})
	if cp.Role() != "control-plane" || strings.Join(w.Roles, ",") != "storage,worker" {
		t.Errorf("roles: cp %v, w %v", cp.Roles, w.Roles)
	}
	if cp.BootID != "boot-cp-1" || cp.MachineID == "" || cp.OSImage != "Fedora CoreOS 43" || cp.KernelVersion != "6.17.1" {
		t.Errorf("nodeInfo not carried: %+v", cp)
	}
	if len(cp.Annotations) != 1 || cp.Annotations["weave.works/kured-reboot-in-progress"] == "" {
		t.Errorf("annotations: want only kured ones, got %v", cp.Annotations)
	}
	if ready, known, since := cp.Ready(); !ready || !known || since.IsZero() {
		t.Errorf("ready=%v known=%v since=%v", ready, known, since)
	}

	// A node going NotReady and cordoned reaches the model without restart.
	ctx := context.Background()
	n, _ := cs.CoreV1().Nodes().Get(ctx, "w-1", metav1.GetOptions{})
	n.Spec.Unschedulable = true
	n.Status.Conditions[1].Status = corev1.ConditionFalse
	if _, err := cs.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	r.Eventually(t, "w-1 NotReady and cordoned", func(c *model.Cluster) bool {
		n, ok := c.Node("w-1")
		ready, known, _ := n.Ready()
		return ok && known && !ready && n.Unschedulable
	})
	if err := cs.CoreV1().Nodes().Delete(ctx, "cp-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	r.Eventually(t, "cp-1 deleted", func(c *model.Cluster) bool { _, ok := c.Node("cp-1"); return !ok })

	// No locks anywhere: kured and fleetlock say so, quietly.
	if h := r.Source(model.SourceKured); h.Status != model.StatusNotInstalled {
		t.Errorf("kured: %+v", h)
	}
	if h := r.Source(model.SourceFleetlock); h.Status != model.StatusNotInstalled || !strings.Contains(h.Message, `"default"`) {
		t.Errorf("fleetlock: %+v", h)
	}
}

func TestHeartbeatOnlyUpdatesAreNotSent(t *testing.T) {
	cs := fake.NewClientset(node("w-1", true, nil))
	r, _ := start(t, cs, Options{})
	r.Eventually(t, "synced", func(c *model.Cluster) bool { return c.NodeCount() == 1 })
	before := r.Events()
	ctx := context.Background()
	n, _ := cs.CoreV1().Nodes().Get(ctx, "w-1", metav1.GetOptions{})
	n.Status.Conditions[1].LastHeartbeatTime = metav1.NewTime(time.Now().Add(time.Minute))
	n.Status.Images = nil
	if _, err := cs.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A real change after it proves the watch delivered both, in order.
	n.Labels = map[string]string{"node-role.kubernetes.io/gpu": ""}
	if _, err := cs.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	r.Eventually(t, "role change", func(c *model.Cluster) bool { n, _ := c.Node("w-1"); return n.Role() == "gpu" })
	after := r.Events()
	if after-before != 1 {
		t.Errorf("events after two updates: %d, want 1 (heartbeat-only update suppressed)", after-before)
	}
}

func ds(ns, name string, ann map[string]string, labels map[string]string) *appsv1.DaemonSet {
	return &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + ns + "-" + name),
		ResourceVersion: "7", Annotations: ann, Labels: labels}}
}

const single = `{"nodeID":"w-1","metadata":{"unschedulable":false},"created":"2026-11-29T10:00:00Z","TTL":0}`

// withKured gives a DaemonSet a kured container (image, args).
func withKured(d *appsv1.DaemonSet, image string, args ...string) *appsv1.DaemonSet {
	d.Spec.Template.Spec.Containers = []corev1.Container{{Name: "kured", Image: image, Command: []string{"/usr/bin/kured"}, Args: args}}
	return d
}

// Discovery trusts no name, label or annotation: kured's DaemonSet is the
// one that runs kured's image and whose kured's --ds-namespace/--ds-name
// name it. Two such are two node pools (a lock each, each with its own
// settings, issue 33 §2); the others are listed as not taken.
func TestKuredDiscovery(t *testing.T) {
	const img = "ghcr.io/kubereboot/kured:1.23.0"
	cs := fake.NewClientset(
		withKured(ds("reboots", "cluster-reboots", map[string]string{kured.Annotation: single}, nil), img,
			"--ds-namespace=reboots", "--ds-name=cluster-reboots", "--prometheus-url=http://prometheus.reboots:9090"), // kured's
		ds("tools", "rel-kured", nil, nil), // a name
		withKured(ds("tools", "other", nil, map[string]string{"app.kubernetes.io/name": "kured"}), "busybox:1"),                        // a label
		withKured(ds("tenant", "tenant-kured", map[string]string{kured.Annotation: single}, nil), img, "--prometheus-url=http://evil"), // kured's image, but its lock is kube-system/kured's
		ds("kube-system", "kube-proxy", map[string]string{"x": "y"}, nil),                                                              // not kured
	)
	r, src := start(t, cs, Options{})
	r.Eventually(t, "kured ok with reboots/cluster-reboots alone", func(c *model.Cluster) bool {
		h, _ := c.Source(model.SourceKured)
		ls := c.Locks()
		return h.Status == model.StatusOK && len(ls) == 1 && ls[0].Namespace == "reboots" && ls[0].Name == "cluster-reboots"
	})
	h := r.Source(model.SourceKured)
	for _, w := range []string{`tools/other (its image "busybox:1" is not kured's)`, "tenant/tenant-kured (its kured's --ds-namespace/--ds-name name kube-system/kured", "tools/rel-kured"} {
		if !strings.Contains(h.Message, w) {
			t.Errorf("kured source message %q lacks %q", h.Message, w)
		}
	}
	if ks := src.KuredConfigs(); len(ks) != 1 || ks[0].Of() != "reboots/cluster-reboots" || ks[0].Config.PrometheusURL != "http://prometheus.reboots:9090" {
		t.Fatalf("settings: %+v", ks)
	}

	// A second plausible kured (its kured names itself): a second node
	// pool, its lock reported and its settings its own.
	ctx := context.Background()
	second := withKured(ds("kube-system", "kured", nil, nil), img, "--prometheus-url=http://other")
	if _, err := cs.AppsV1().DaemonSets("kube-system").Create(ctx, second, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	r.Eventually(t, "two pools", func(c *model.Cluster) bool {
		h, _ := c.Source(model.SourceKured)
		return h.Status == model.StatusOK && strings.Contains(h.Message, "2 kured DaemonSets, one lock each (node pools): kube-system/kured, reboots/cluster-reboots") &&
			len(c.Locks()) == 2
	})
	if ks := src.KuredConfigs(); len(ks) != 2 || ks[0].Of() != "kube-system/kured" || ks[0].Config.PrometheusURL != "http://other" ||
		ks[1].Config.PrometheusURL != "http://prometheus.reboots:9090" {
		t.Fatalf("settings of the two pools: %+v", ks)
	}
	if err := cs.AppsV1().DaemonSets("kube-system").Delete(ctx, "kured", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	r.Eventually(t, "one kured again", func(c *model.Cluster) bool {
		h, _ := c.Source(model.SourceKured)
		return h.Status == model.StatusOK && len(c.Locks()) == 1
	})

	// Release: the annotation goes away; the DaemonSet stays tracked.
	d, _ := cs.AppsV1().DaemonSets("reboots").Get(ctx, "cluster-reboots", metav1.GetOptions{})
	d.Annotations = nil
	if _, err := cs.AppsV1().DaemonSets("reboots").Update(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	r.Eventually(t, "released", func(c *model.Cluster) bool {
		l, ok := c.Lock(model.LockRef{Kind: model.LockKured, Namespace: "reboots", Name: "cluster-reboots"})
		return ok && !kspec(l).Present
	})
	if err := cs.AppsV1().DaemonSets("reboots").Delete(ctx, "cluster-reboots", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	r.Eventually(t, "deleted", func(c *model.Cluster) bool {
		_, ok := c.Lock(model.LockRef{Kind: model.LockKured, Namespace: "reboots", Name: "cluster-reboots"})
		h, _ := c.Source(model.SourceKured)
		// What is left carries a kured lock annotation and is not taken:
		// an error naming it, never "not installed".
		return !ok && h.Status == model.StatusError && strings.Contains(h.Message, "tenant/tenant-kured")
	})
}

// An invalid lock annotation name in kured's configuration is flagged on the
// source, and the lock is unknown (internal/lock), never free.
func TestKuredInvalidLockAnnotationFlagged(t *testing.T) {
	cs := fake.NewClientset(withKured(ds("kube-system", "kured", nil, nil), "ghcr.io/kubereboot/kured:1.23.0", "--lock-annotation=Not A Key!"))
	r, _ := start(t, cs, Options{})
	r.Eventually(t, "flagged", func(c *model.Cluster) bool {
		h, _ := c.Source(model.SourceKured)
		return h.Status == model.StatusError && strings.Contains(h.Message, `--lock-annotation "Not A Key!" (arg) is not a valid annotation key`) && len(c.Locks()) == 1
	})
}

func TestKuredExplicit(t *testing.T) {
	cs := fake.NewClientset(
		ds("kube-system", "kured", map[string]string{kured.Annotation: single}, nil),
		ds("ops", "my-kured", nil, nil),
	)
	r, _ := start(t, cs, Options{KuredDaemonSet: "ops/my-kured"})
	r.Eventually(t, "only ops/my-kured", func(c *model.Cluster) bool {
		h, _ := c.Source(model.SourceKured)
		locks := c.Locks()
		return h.Status == model.StatusOK && len(locks) == 1 && locks[0].Namespace == "ops" && locks[0].Name == "my-kured"
	})

	cs2 := fake.NewClientset()
	r2, _ := start(t, cs2, Options{KuredDaemonSet: "ops/missing"})
	// Named by the operator and absent: the lock cannot be read (error,
	// exit 1), never "not installed" (issue 11 §2).
	if h := r2.Source(model.SourceKured); h.Status != model.StatusError || !strings.Contains(h.Message, "ops/missing not found (named by --kured-daemonset)") {
		t.Errorf("missing explicit DaemonSet: %+v", h)
	}
	// Discovered by search and absent: not installed.
	r3, _ := start(t, fake.NewClientset(), Options{})
	if h := r3.Source(model.SourceKured); h.Status != model.StatusNotInstalled {
		t.Errorf("no kured found by search: %+v", h)
	}
	if _, err := Start(context.Background(), Options{Client: cs2, KuredDaemonSet: "nope"}, func(model.Event) {}); err == nil {
		t.Error("bad --kured-daemonset accepted")
	}
	if _, err := Start(context.Background(), Options{}, func(model.Event) {}); err == nil {
		t.Error("missing client accepted")
	}
}

func lease(ns, name, holder string) *coordinationv1.Lease {
	acq := metav1.NewMicroTime(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC))
	tr := int32(3)
	return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name), ResourceVersion: "42"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, AcquireTime: &acq, RenewTime: &acq, LeaseTransitions: &tr}}
}

func TestFleetlockLeases(t *testing.T) {
	cs := fake.NewClientset(
		lease("locks", "fleetlock-default", "978a225b3d7b40e9acd7ce9b62f68444"),
		lease("locks", "some-controller", "pod-1"),
		lease("default", "fleetlock-default", "other-namespace"),
	)
	r, _ := start(t, cs, Options{FleetlockNamespace: "locks"})
	r.Eventually(t, "fleetlock ok", func(c *model.Cluster) bool {
		h, _ := c.Source(model.SourceFleetlock)
		return h.Status == model.StatusOK
	})
	var locks []*model.LockObject
	r.Read(func(c *model.Cluster) { locks = c.Locks() })
	if len(locks) != 1 {
		t.Fatalf("locks: %d, want 1", len(locks))
	}
	l := locks[0]
	if fs := fspec(l); l.Kind != model.LockFleetlock || l.Namespace != "locks" || fs.Holder != "978a225b3d7b40e9acd7ce9b62f68444" ||
		fs.AcquireTime.IsZero() || fs.LeaseTransitions != 3 || l.UID == "" {
		t.Fatalf("lease lock: %+v", l)
	}
	ctx := context.Background()
	lc, _ := cs.CoordinationV1().Leases("locks").Get(ctx, "fleetlock-default", metav1.GetOptions{})
	empty := ""
	lc.Spec.HolderIdentity = &empty
	if _, err := cs.CoordinationV1().Leases("locks").Update(ctx, lc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	r.Eventually(t, "lease free", func(c *model.Cluster) bool {
		l, ok := c.Lock(model.LockRef{Kind: model.LockFleetlock, Namespace: "locks", Name: "fleetlock-default"})
		return ok && fspec(l).Holder == ""
	})
}

func TestForbiddenLeasesDoNotStopOthers(t *testing.T) {
	cs := fake.NewClientset(node("w-1", true, nil), withKured(ds("kube-system", "kured", nil, nil), "kured:test"))
	cs.PrependReactor("list", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, "",
			errors.New(`User "alice" cannot list resource "leases"`))
	})
	r, s := start(t, cs, Options{})
	if h := r.Source(model.SourceFleetlock); h.Status != model.StatusForbidden ||
		h.Message != `cannot list leases.coordination.k8s.io in namespace "default" (RBAC)` {
		t.Errorf("fleetlock: %+v", h)
	}
	r.Eventually(t, "nodes and kured ok", func(c *model.Cluster) bool {
		n, _ := c.Source(model.SourceNodes)
		k, _ := c.Source(model.SourceKured)
		return n.Status == model.StatusOK && k.Status == model.StatusOK && c.NodeCount() == 1
	})
	if got := len(s.Health()); got != 5 { // nodes, kured, fleetlock, pdbs, pods
		t.Errorf("Health(): %d sources", got)
	}
}

func TestListErrorThenRecovery(t *testing.T) {
	cs := fake.NewClientset(node("w-1", true, nil))
	var fails atomic.Int32
	fails.Store(1)
	cs.PrependReactor("list", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
		if fails.Add(-1) >= 0 {
			return true, nil, apierrors.NewInternalError(errors.New("etcd is sad"))
		}
		return false, nil, nil
	})
	r, _ := start(t, cs, Options{})
	// WaitForSync returned on the failure; the failure carries the API's message.
	h := r.Source(model.SourceNodes)
	if h.Status != model.StatusError || !strings.Contains(h.Message, "etcd is sad") || !strings.HasPrefix(h.Message, "list nodes") {
		t.Errorf("after failed list: %+v", h)
	}
	r.Eventually(t, "recovered", func(c *model.Cluster) bool {
		h, _ := c.Source(model.SourceNodes)
		return h.Status == model.StatusOK && c.NodeCount() == 1 && !h.LastSync.IsZero()
	})
}

func TestWaitForSyncBounded(t *testing.T) {
	block := make(chan struct{})
	defer close(block)
	cs := hungDaemonSetLists{Interface: fake.NewClientset(), release: block}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := sourcetest.NewRecorder("test")
	s, err := Start(ctx, Options{Client: cs, RequestTimeout: 100 * time.Millisecond}, r.Sink)
	if err != nil {
		t.Fatal(err)
	}
	wctx, wcancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer wcancel()
	err = s.WaitForSync(wctx)
	if err == nil || !strings.Contains(err.Error(), "kured") {
		t.Fatalf("WaitForSync on a hung list: %v, want an error naming kured", err)
	}
	// The hung list ignores the request's context, so it never returns:
	// the source still reports after the request timeout.
	wctx2, wcancel2 := context.WithTimeout(ctx, 20*time.Second)
	defer wcancel2()
	if err := s.WaitForSync(wctx2); err != nil {
		t.Fatal(err)
	}
	if h := r.Source(model.SourceKured); h.Status != model.StatusError ||
		h.Message != "no initial sync of daemonsets.apps within 100ms (still trying)" {
		t.Errorf("kured with a hung list: %+v", h)
	}
}

// hungDaemonSetLists is a clientset whose DaemonSet lists never return
// (until release), whatever their context: a hung list. It hangs outside
// the fake clientset, whose reactors run under its one lock: a reactor that
// blocked held every other call of the clientset too, and TestWaitForSyncBounded
// took 16 s in one run of four (the fleetlock source's look for fleetlock
// elsewhere waited on that lock, and the source said nothing meanwhile).
type hungDaemonSetLists struct {
	kubernetes.Interface
	release <-chan struct{}
}

func (c hungDaemonSetLists) AppsV1() appsv1client.AppsV1Interface {
	return hungApps{AppsV1Interface: c.Interface.AppsV1(), release: c.release}
}

type hungApps struct {
	appsv1client.AppsV1Interface
	release <-chan struct{}
}

func (a hungApps) DaemonSets(ns string) appsv1client.DaemonSetInterface {
	return hungDaemonSets{DaemonSetInterface: a.AppsV1Interface.DaemonSets(ns), release: a.release}
}

type hungDaemonSets struct {
	appsv1client.DaemonSetInterface
	release <-chan struct{}
}

func (d hungDaemonSets) List(context.Context, metav1.ListOptions) (*appsv1.DaemonSetList, error) {
	<-d.release
	return nil, errors.New("unblocked")
}

func TestTransformNodeStrips(t *testing.T) {
	in := node("w-1", true, map[string]string{"node-role.kubernetes.io/worker": "", "topology.kubernetes.io/zone": "a"})
	out, err := TransformNode(in)
	if err != nil {
		t.Fatal(err)
	}
	n := out.(*corev1.Node)
	if n.ManagedFields != nil || n.Status.Images != nil || n.Status.Addresses != nil || n.Spec.PodCIDR != "" {
		t.Errorf("not stripped: %+v", n)
	}
	if len(n.Labels) != 1 || len(n.Annotations) != 1 || !n.Status.Conditions[1].LastHeartbeatTime.IsZero() {
		t.Errorf("labels %v annotations %v conditions %v", n.Labels, n.Annotations, n.Status.Conditions)
	}
	if m1, m2 := NodeToModel(in), NodeToModel(n); !sameNode(&m1, &m2) {
		t.Errorf("transform changed the model node:\n%+v\n%+v", m1, m2)
	}
	if x, _ := TransformNode("not a node"); x != "not a node" {
		t.Error("foreign objects must pass through")
	}
}

func BenchmarkTransformNode(b *testing.B) {
	in := node("w-1", true, map[string]string{"node-role.kubernetes.io/worker": "", "topology.kubernetes.io/zone": "a"})
	b.ReportAllocs()
	for b.Loop() {
		out, _ := TransformNode(in)
		_ = NodeToModel(out.(*corev1.Node))
	}
}
