package kube_test

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
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

// createNode creates a node and sets its status through the status
// subresource, as a kubelet does.
func createNode(t *testing.T, cs kubernetes.Interface, name, role, boot string, ready bool) {
	t.Helper()
	ctx := context.Background()
	n, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name,
		Labels: map[string]string{"node-role.kubernetes.io/" + role: "", "kubernetes.io/hostname": name}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	setStatus(t, cs, n, boot, ready)
}

func setStatus(t *testing.T, cs kubernetes.Interface, n *corev1.Node, boot string, ready bool) {
	t.Helper()
	st := corev1.ConditionTrue
	if !ready {
		st = corev1.ConditionFalse
	}
	now := metav1.Now()
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: st, Reason: "KubeletReady",
		LastHeartbeatTime: now, LastTransitionTime: now}}
	n.Status.NodeInfo = corev1.NodeSystemInfo{BootID: boot, MachineID: "1c09ca98649c4c7abc779cd04c96812e",
		OSImage: "Fedora CoreOS 43.20261101", KernelVersion: "6.17.1-300.fc43.x86_64", KubeletVersion: "v1.37.2"}
	if _, err := cs.CoreV1().Nodes().UpdateStatus(context.Background(), n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func kuredDaemonSet(ns, name, lock string) *appsv1.DaemonSet {
	labels := map[string]string{"name": name}
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "kured", Image: "ghcr.io/kubereboot/kured:1.17.1",
					Args: []string{"--ds-namespace=" + ns, "--ds-name=" + name}}}},
			},
		},
	}
	if lock != "" {
		ds.Annotations = map[string]string{kured.Annotation: lock}
	}
	return ds
}

const (
	singleLock = `{"nodeID":"w-1","metadata":{"unschedulable":false},"created":"2026-11-29T10:00:00Z","TTL":0}`
	multiLock  = `{"maxOwners":2,"locks":[{"nodeID":"w-1","metadata":{"unschedulable":false},"created":"2026-11-29T10:00:00Z","TTL":0},{"nodeID":"w-2","metadata":{"unschedulable":true},"created":"2026-11-29T10:05:00Z","TTL":3600000000000}]}`
)

func TestAgainstRealAPIServer(t *testing.T) {
	c := testcluster.Start(t)
	admin := c.Client(t)
	ctx := context.Background()

	createNode(t, admin, "cp-1", "control-plane", "boot-cp-1", true)
	createNode(t, admin, "w-1", "worker", "boot-w-1", true)
	createNode(t, admin, "w-2", "worker", "boot-w-2", true)

	kuredNS := c.Namespace(t, "reboot-system")
	if _, err := admin.AppsV1().DaemonSets(kuredNS).Create(ctx, kuredDaemonSet(kuredNS, "kured", singleLock), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A DaemonSet that is not kured must not become a lock.
	other := kuredDaemonSet(kuredNS, "node-exporter", "")
	other.Spec.Template.Spec.Containers[0].Image = "quay.io/prometheus/node-exporter:v1.9.1"
	if _, err := admin.AppsV1().DaemonSets(kuredNS).Create(ctx, other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	fleetNS := c.Namespace(t, "fleetlock")
	holder := "978a225b3d7b40e9acd7ce9b62f68444"
	acq := metav1.NewMicroTime(time.Now().Add(-time.Hour).Truncate(time.Second))
	if _, err := admin.CoordinationV1().Leases(fleetNS).Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: fleetNS, Name: "fleetlock-default"},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder, AcquireTime: &acq},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	// start starts a source on a fresh recorder and waits (within wctx, one
	// deadline for all) for its first sync.
	start := func(t *testing.T, o kube.Options) *sourcetest.Recorder {
		t.Helper()
		r := sourcetest.NewRecorder("it").WithTimeout(sourcetest.IntegrationTimeout)
		sourcetest.StartWith(t, sctx, wctx, r, func(ctx context.Context, sink sources.Sink) (*kube.Source, error) {
			return kube.Start(ctx, o, sink)
		})
		return r
	}
	r := start(t, kube.Options{Client: admin, FleetlockNamespace: fleetNS, RequestTimeout: 10 * time.Second})
	for _, n := range []model.SourceName{model.SourceNodes, model.SourceKured, model.SourceFleetlock} {
		if h := r.Source(n); h.Status != model.StatusOK {
			t.Errorf("%s after sync: %+v", n, h)
		}
	}
	var (
		names    string
		w1, cp   *model.Node
		kl, fl   *model.LockObject
		kok, fok bool
		nlocks   int
	)
	r.Read(func(m *model.Cluster) {
		names = strings.Join(m.NodeNames(), ",")
		w1, _ = m.Node("w-1")
		cp, _ = m.Node("cp-1")
		kl, kok = m.Lock(model.LockRef{Kind: model.LockKured, Namespace: kuredNS, Name: "kured"})
		fl, fok = m.Lock(model.LockRef{Kind: model.LockFleetlock, Namespace: fleetNS, Name: "fleetlock-default"})
		nlocks = len(m.Locks())
	})
	if names != "cp-1,w-1,w-2" {
		t.Fatalf("nodes %s", names)
	}
	if ready, known, _ := w1.Ready(); !ready || !known || w1.BootID != "boot-w-1" || w1.OSImage != "Fedora CoreOS 43.20261101" ||
		w1.KernelVersion == "" || w1.MachineID == "" || w1.UID == "" || w1.Created.IsZero() {
		t.Errorf("w-1 %+v", w1)
	}
	if cp.Role() != "control-plane" || w1.Role() != "worker" {
		t.Errorf("roles %v %v", cp.Roles, w1.Roles)
	}
	if !kok || !kspec(kl).Present || kspec(kl).Value != singleLock || kl.UID == "" || kl.ResourceVersion == "" {
		t.Errorf("kured lock %+v", kl)
	}
	if !fok || fspec(fl).Holder != holder || !fspec(fl).AcquireTime.Equal(acq.Time) || fl.ResourceVersion == "" {
		t.Errorf("fleetlock %+v", fl)
	}
	if nlocks != 2 {
		t.Errorf("%d locks, want 2 (node-exporter is not kured)", nlocks)
	}

	// Watch updates reach the model without a restart.
	n, _ := admin.CoreV1().Nodes().Get(ctx, "w-1", metav1.GetOptions{})
	setStatus(t, admin, n, "boot-w-1", false)
	r.Eventually(t, "w-1 NotReady", func(c *model.Cluster) bool {
		n, _ := c.Node("w-1")
		ready, known, _ := n.Ready()
		return known && !ready
	})
	n, _ = admin.CoreV1().Nodes().Get(ctx, "w-1", metav1.GetOptions{})
	n.Spec.Unschedulable = true
	if _, err := admin.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	n, _ = admin.CoreV1().Nodes().Get(ctx, "w-1", metav1.GetOptions{})
	setStatus(t, admin, n, "boot-w-1-second", true)
	r.Eventually(t, "w-1 rebooted, Ready, cordoned", func(c *model.Cluster) bool {
		n, _ := c.Node("w-1")
		ready, _, _ := n.Ready()
		return ready && n.BootID == "boot-w-1-second" && n.Unschedulable
	})

	// kured switches to a multi-lock (concurrency 2), then releases.
	ds, _ := admin.AppsV1().DaemonSets(kuredNS).Get(ctx, "kured", metav1.GetOptions{})
	ds.Annotations[kured.Annotation] = multiLock
	if _, err := admin.AppsV1().DaemonSets(kuredNS).Update(ctx, ds, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	r.Eventually(t, "multi-lock", func(c *model.Cluster) bool {
		l, ok := c.Lock(model.LockRef{Kind: model.LockKured, Namespace: kuredNS, Name: "kured"})
		return ok && kspec(l).Value == multiLock && l.ResourceVersion != kl.ResourceVersion
	})
	ds, _ = admin.AppsV1().DaemonSets(kuredNS).Get(ctx, "kured", metav1.GetOptions{})
	delete(ds.Annotations, kured.Annotation)
	if _, err := admin.AppsV1().DaemonSets(kuredNS).Update(ctx, ds, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	r.Eventually(t, "kured released", func(c *model.Cluster) bool {
		l, ok := c.Lock(model.LockRef{Kind: model.LockKured, Namespace: kuredNS, Name: "kured"})
		return ok && !kspec(l).Present
	})

	// fleetlock unlocks by emptying the holder; a deleted node goes away.
	l, _ := admin.CoordinationV1().Leases(fleetNS).Get(ctx, "fleetlock-default", metav1.GetOptions{})
	empty := ""
	l.Spec.HolderIdentity = &empty
	if _, err := admin.CoordinationV1().Leases(fleetNS).Update(ctx, l, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := admin.CoreV1().Nodes().Delete(ctx, "w-2", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	r.Eventually(t, "fleetlock free and w-2 gone", func(c *model.Cluster) bool {
		l, ok := c.Lock(model.LockRef{Kind: model.LockFleetlock, Namespace: fleetNS, Name: "fleetlock-default"})
		_, w2 := c.Node("w-2")
		return ok && fspec(l).Holder == "" && !w2
	})

	t.Run("explicit kured DaemonSet", func(t *testing.T) {
		r := start(t, kube.Options{Client: admin, KuredDaemonSet: kuredNS + "/kured", FleetlockNamespace: fleetNS})
		r.Eventually(t, "one kured lock", func(c *model.Cluster) bool {
			h, _ := c.Source(model.SourceKured)
			return h.Status == model.StatusOK && len(c.Locks()) == 2
		})
	})

	t.Run("RBAC forbids leases", func(t *testing.T) {
		// alice may read nodes and DaemonSets, not Leases.
		grant(t, c, "alice", []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{"apps"}, Resources: []string{"daemonsets"}, Verbs: []string{"get", "list", "watch"}},
		})
		alice, err := kubernetes.NewForConfig(c.UserConfig("alice"))
		if err != nil {
			t.Fatal(err)
		}
		r := start(t, kube.Options{Client: alice, FleetlockNamespace: fleetNS})
		r.Eventually(t, "fleetlock forbidden, nodes and kured ok", func(c *model.Cluster) bool {
			n, _ := c.Source(model.SourceNodes)
			k, _ := c.Source(model.SourceKured)
			f, _ := c.Source(model.SourceFleetlock)
			return n.Status == model.StatusOK && k.Status == model.StatusOK && f.Status == model.StatusForbidden &&
				c.NodeCount() == 2
		})
		if h := r.Source(model.SourceFleetlock); !strings.Contains(h.Message, "cannot list leases.coordination.k8s.io") ||
			!strings.Contains(h.Message, fleetNS) {
			t.Errorf("forbidden message %q should name the verb, resource and namespace", h.Message)
		}
		// The snapshot reports it.
		var snap model.Snapshot
		r.Read(func(m *model.Cluster) { snap = m.Snapshot(time.Now()) })
		var got []string
		for _, s := range snap.Sources {
			got = append(got, string(s.Name)+"="+string(s.Status))
		}
		if strings.Join(got, ",") != "nodes=ok,kured=ok,fleetlock=forbidden,pdbs=forbidden,pods=forbidden" {
			t.Errorf("snapshot sources %v", got)
		}

		// Granting Leases later heals the source without a restart.
		grantNamed(t, c, "alice-leases", "alice", []rbacv1.PolicyRule{
			{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "list", "watch"}},
		})
		r.Eventually(t, "fleetlock ok once granted", func(c *model.Cluster) bool {
			f, _ := c.Source(model.SourceFleetlock)
			_, ok := c.Lock(model.LockRef{Kind: model.LockFleetlock, Namespace: fleetNS, Name: "fleetlock-default"})
			return f.Status == model.StatusOK && ok
		})
	})

	t.Run("a user with no grants at all", func(t *testing.T) {
		bob, err := kubernetes.NewForConfig(c.UserConfig("bob"))
		if err != nil {
			t.Fatal(err)
		}
		r := start(t, kube.Options{Client: bob})
		if h := r.Source(model.SourceNodes); h.Status != model.StatusForbidden || h.Message != "cannot list nodes (RBAC)" {
			t.Errorf("nodes %+v", h)
		}
		if h := r.Source(model.SourceKured); h.Status != model.StatusForbidden ||
			h.Message != "cannot list daemonsets.apps (RBAC); pass --kured-daemonset namespace/name to read only kured's" {
			t.Errorf("kured %+v", h)
		}
	})

	t.Run("apiserver gone", func(t *testing.T) {
		c.Stop()
		r.Eventually(t, "nodes error after the apiserver stopped", func(c *model.Cluster) bool {
			h, _ := c.Source(model.SourceNodes)
			return h.Status == model.StatusError && h.Message != ""
		})
	})
}

func grant(t *testing.T, c *testcluster.Cluster, user string, rules []rbacv1.PolicyRule) {
	t.Helper()
	grantNamed(t, c, "test-"+user, user, rules)
}

// grantNamed grants user the rules cluster-wide, under name, until the
// test ends: the apiserver may be shared with the next test. RBAC
// authorizes from a cache that can lag the writes: it returns once the
// authorizer allows the user one request of each rule, and the clean-up
// once it refuses them again.
func grantNamed(t *testing.T, c *testcluster.Cluster, name, user string, rules []rbacv1.PolicyRule) {
	t.Helper()
	cs := c.Client(t)
	ctx := context.Background()
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.RbacV1().ClusterRoleBindings().Delete(ctx, name, metav1.DeleteOptions{})
		_ = cs.RbacV1().ClusterRoles().Delete(ctx, name, metav1.DeleteOptions{})
		for _, a := range testcluster.RuleAttributes("", rules) {
			c.WaitDenied(t, user, a)
		}
	})
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: user}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, a := range testcluster.RuleAttributes("", rules) {
		c.WaitAllowed(t, user, a)
	}
}

func kspec(l *model.LockObject) *kured.Spec     { return l.Spec.(*kured.Spec) }
func fspec(l *model.LockObject) *fleetlock.Spec { return l.Spec.(*fleetlock.Spec) }
