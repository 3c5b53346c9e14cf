package kube

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/rebootwatch/rebootwatch/model"
)

// Issue 33 §2: two kured DaemonSets for two node pools, each whose own
// --ds-namespace/--ds-name name itself and each with its own
// --lock-annotation, are both kured's: one lock each, judged with its own
// DaemonSet's settings; the blocking selectors of both are watched. A copy
// whose args name another DaemonSet is not taken.
func TestKuredTwoPools(t *testing.T) {
	const img = "ghcr.io/kubereboot/kured:1.23.0"
	a := withKured(ds("kube-system", "kured-a", map[string]string{"pool-a/lock": single}, nil), img,
		"--ds-name=kured-a", "--lock-annotation=pool-a/lock", "--concurrency=2", "--blocking-pod-selector=app=a")
	b := withKured(ds("kube-system", "kured-b", nil, nil), img,
		"--ds-name=kured-b", "--lock-annotation=pool-b/lock", "--blocking-pod-selector=app=b")
	a.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "kured-a"}}
	b.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "kured-b"}}
	copyOfA := withKured(ds("tenant", "kured-a", nil, nil), img, "--ds-name=kured-a") // its kured's lock is kube-system/kured-a
	// Beside it, a second DaemonSet whose kured says --ds-name=kured-a too:
	// only the one named kured-a is kured-a's lock.
	sibling := withKured(ds("kube-system", "kured-a-copy", map[string]string{"pool-a/lock": single}, nil), img,
		"--ds-name=kured-a", "--lock-annotation=pool-a/lock")
	cs := fake.NewClientset(a, b, copyOfA, sibling,
		kuredPod(a, "a1"), kuredPod(a, "a2"), kuredPod(b, "b1"),
		// A look-alike beside kured-a's pods: its labels, another owner.
		kuredPod(ds("kube-system", "impostor", nil, nil), "x1", "app", "kured-a"))
	r, _ := start(t, cs, Options{})
	refA := model.LockRef{Kind: model.LockKured, Namespace: "kube-system", Name: "kured-a"}
	refB := model.LockRef{Kind: model.LockKured, Namespace: "kube-system", Name: "kured-b"}
	r.Eventually(t, "two pools, both judged", func(c *model.Cluster) bool {
		h, _ := c.Source(model.SourceKured)
		_, okA := c.Lock(refA)
		_, okB := c.Lock(refB)
		return h.Status == model.StatusOK && len(c.Locks()) == 2 && okA && okB
	})
	h := r.Source(model.SourceKured)
	for _, w := range []string{"2 kured DaemonSets, one lock each (node pools): kube-system/kured-a, kube-system/kured-b",
		"tenant/kured-a (its kured's --ds-namespace/--ds-name name kube-system/kured-a",
		"kube-system/kured-a-copy (its kured's --ds-namespace/--ds-name name kube-system/kured-a"} {
		if !strings.Contains(h.Message, w) {
			t.Errorf("kured source message %q lacks %q", h.Message, w)
		}
	}
	r.Read(func(c *model.Cluster) {
		la, _ := c.Lock(refA)
		lb, _ := c.Lock(refB)
		sa, sb := kspec(la), kspec(lb)
		if sa.Annotation != "pool-a/lock" || !sa.Present || sa.Config.Concurrency != 2 {
			t.Errorf("pool a: %+v", sa)
		}
		if sb.Annotation != "pool-b/lock" || sb.Present || sb.Config.Concurrency != 1 {
			t.Errorf("pool b: %+v", sb)
		}
		if got := slices.Sorted(slices.Values(c.BlockingSelectors())); !slices.Equal(got, []string{"app=a", "app=b"}) {
			t.Errorf("blocking selectors watched: %v, want both pools'", got)
		}
	})
	// Each pool is the nodes where a pod its DaemonSet owns (by UID) runs.
	r.Eventually(t, "pools read", func(c *model.Cluster) bool {
		sa, okA := c.LockScope(refA)
		sb, okB := c.LockScope(refB)
		return okA && okB && len(sa.Nodes) == 2 && sa.Nodes["a1"] && sa.Nodes["a2"] && len(sb.Nodes) == 1 && sb.Nodes["b1"]
	})
	// kured-b goes: one pool is left, which answers for every node, and
	// its scope is forgotten.
	if err := cs.AppsV1().DaemonSets("kube-system").Delete(context.Background(), "kured-b", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	r.Eventually(t, "one kured again", func(c *model.Cluster) bool {
		_, scoped := c.LockScope(refA)
		return len(c.Locks()) == 1 && !scoped
	})
}

// kuredPod is a pod of DaemonSet d on node, labelled with its selector (or
// the labels given), its controller d.
func kuredPod(d *appsv1.DaemonSet, node string, labels ...string) *corev1.Pod {
	l := map[string]string{}
	if d.Spec.Selector != nil {
		maps.Copy(l, d.Spec.Selector.MatchLabels)
	}
	for i := 0; i+1 < len(labels); i += 2 {
		l[labels[i]] = labels[i+1]
	}
	yes := true
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: d.Namespace, Name: d.Name + "-" + node, Labels: l,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: d.Name, UID: d.UID, Controller: &yes}}},
		Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
}

// A pool whose pods cannot be listed is a pool not read: its scope says
// why (the explainer then says the node's pool is unknown), never empty.
func TestKuredPoolPodsForbidden(t *testing.T) {
	const img = "ghcr.io/kubereboot/kured:1.23.0"
	a := withKured(ds("kube-system", "kured-a", nil, nil), img, "--ds-name=kured-a")
	b := withKured(ds("pool-b", "kured-b", nil, nil), img, "--ds-namespace=pool-b", "--ds-name=kured-b")
	a.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "kured-a"}}
	b.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "kured-b"}}
	cs := fake.NewClientset(a, b, kuredPod(a, "a1"), kuredPod(b, "b1"))
	cs.PrependReactor("list", "pods", func(action k8stesting.Action) (bool, runtime.Object, error) {
		if action.GetNamespace() != "pool-b" {
			return false, nil, nil
		}
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("RBAC: no"))
	})
	r, _ := start(t, cs, Options{})
	refA := model.LockRef{Kind: model.LockKured, Namespace: "kube-system", Name: "kured-a"}
	refB := model.LockRef{Kind: model.LockKured, Namespace: "pool-b", Name: "kured-b"}
	r.Eventually(t, "pool a read, pool b's pods forbidden", func(c *model.Cluster) bool {
		sa, okA := c.LockScope(refA)
		sb, okB := c.LockScope(refB)
		return okA && sa.Nodes["a1"] && okB && sb.Err != "" && sb.Nodes == nil
	})
	r.Read(func(c *model.Cluster) {
		sb, _ := c.LockScope(refB)
		if !strings.Contains(sb.Err, "forbidden") && !strings.Contains(sb.Err, "cannot list") {
			t.Errorf("pool b's scope error: %q", sb.Err)
		}
	})
}

// A one-shot read (--snapshot) reads the pools too: the pod source settles
// only once each pool's pods were listed.
func TestKuredPoolsOnce(t *testing.T) {
	const img = "ghcr.io/kubereboot/kured:1.23.0"
	a := withKured(ds("kube-system", "kured-a", nil, nil), img, "--ds-name=kured-a")
	b := withKured(ds("kube-system", "kured-b", nil, nil), img, "--ds-name=kured-b")
	a.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "kured-a"}}
	b.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "kured-b"}}
	cs := fake.NewClientset(a, b, kuredPod(a, "a1"), kuredPod(b, "b1"))
	r, src := start(t, cs, Options{Once: true})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := src.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
	r.Read(func(c *model.Cluster) {
		sa, okA := c.LockScope(model.LockRef{Kind: model.LockKured, Namespace: "kube-system", Name: "kured-a"})
		sb, okB := c.LockScope(model.LockRef{Kind: model.LockKured, Namespace: "kube-system", Name: "kured-b"})
		if !okA || !okB || !sa.Nodes["a1"] || !sb.Nodes["b1"] {
			t.Errorf("pools after a one-shot read: %+v %v, %+v %v", sa, okA, sb, okB)
		}
	})
}
