package deploy

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/rebootwatch/rebootwatch/internal/coord/kured/kuredtest"
	"github.com/rebootwatch/rebootwatch/internal/live"
	"github.com/rebootwatch/rebootwatch/internal/testenv/testcluster"
	"github.com/rebootwatch/rebootwatch/model"
	"github.com/rebootwatch/rebootwatch/sources/kube"
)

// Issue 33 §2 follow-up, on a real apiserver: the grants the chart renders
// for kured.daemonSets (its ClusterRole and a kured Role per namespace),
// bound to a user with no other grant, are enough to read both named kured
// DaemonSets in two namespaces — each lock, each pool's scope from its own
// pods — and the fresh read before a write; and they are no more: kured's
// discovery (every DaemonSet) is forbidden.
func TestIntegrationKuredPoolsRBAC(t *testing.T) {
	testcluster.Require(t, "etcd", "kube-apiserver", "helm")
	c := testcluster.SharedAlone(t) // its DaemonSets and pods are deleted when it ends
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin := c.Client(t)
	ensureNamespace(ctx, t, admin, "kured-b", nil)
	for _, r := range [][2]string{{"kube-system", "kured-a"}, {"kured-b", "kured-b"}, {"kube-system", "kured-c"}} {
		d := kuredtest.DaemonSet(r[0], r[1])
		labels := map[string]string{"app.kubernetes.io/name": "kured", "pool": r[1]}
		d.Spec.Selector.MatchLabels, d.Spec.Template.Labels = labels, labels
		got, err := admin.AppsV1().DaemonSets(r[0]).Create(ctx, d, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: r[0], Name: r[1] + "-n-" + r[1], Labels: labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(got, appsv1.SchemeGroupVersion.WithKind("DaemonSet"))}},
			Spec: corev1.PodSpec{NodeName: "n-" + r[1], Containers: []corev1.Container{{Name: "kured", Image: "ghcr.io/kubereboot/kured:1.23.0"}}}}
		if _, err := admin.CoreV1().Pods(r[0]).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// The chart's main ClusterRole and its kured Roles, bound to alice
	// (her grants end with the test: the apiserver is shared).
	grants := grantAlice(t, c)
	for _, o := range render(t, kuredPools) {
		switch r := o.Object.(type) {
		case *rbacv1.ClusterRole:
			if r.Name == "rw-rebootwatch-agent" {
				grants.bindClusterRole(ctx, r)
			}
		case *rbacv1.Role:
			if strings.HasSuffix(r.Name, "-kured") {
				grants.bindRole(ctx, r)
			}
		}
	}
	const named = "kube-system/kured-a,kured-b/kured-b,kube-system/kured-c"
	off := map[model.LockKind]string{model.LockFleetlock: "off"}
	alice, err := kubernetes.NewForConfig(c.UserConfig("alice"))
	if err != nil {
		t.Fatal(err)
	}
	if ls, err := kube.ReadLocks(ctx, alice, named, "", off); err != nil || len(ls) != 3 {
		t.Fatalf("fresh read of the named DaemonSets as alice: %d locks, %v", len(ls), err)
	}
	if _, err := kube.ReadLocks(ctx, alice, "", "", off); err == nil {
		t.Error("alice lists every DaemonSet (discovery): the chart grants more than the named ones")
	}

	s, err := live.Open(ctx, live.Options{Config: c.UserConfig("alice"), Context: "itest", RequestTimeout: 5 * time.Second,
		KuredDaemonSet: named})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	m, err := s.Collect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		s.Drain(m)
		h, _ := m.Source(model.SourceKured)
		scoped := 0
		for _, r := range [][2]string{{"kube-system", "kured-a"}, {"kured-b", "kured-b"}, {"kube-system", "kured-c"}} {
			if sc, ok := m.LockScope(model.LockRef{Kind: model.LockKured, Namespace: r[0], Name: r[1]}); ok && sc.Err == "" && sc.Nodes["n-"+r[1]] {
				scoped++
			}
		}
		if h.Status == model.StatusOK && len(m.Locks()) == 3 && scoped == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("as alice under the chart's grants: kured %+v, %d locks, %d pools scoped", h, len(m.Locks()), scoped)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
