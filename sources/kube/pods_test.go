package kube

import (
	"errors"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/rebootwatch/rebootwatch/model"
	"github.com/rebootwatch/rebootwatch/sources/sourcetest"
)

func cordoned(n *corev1.Node) *corev1.Node {
	n.Spec.Unschedulable = true
	return n
}

func pod(ns, name, node string, phase corev1.PodPhase, labels map[string]string, owner string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + ns + "-" + name), Labels: labels,
			Annotations:   map[string]string{"big": strings.Repeat("x", 100)},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "registry/app:1"}}},
		Status: corev1.PodStatus{Phase: phase, PodIP: "10.0.0.1", Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
			{Type: corev1.PodReady, Status: corev1.ConditionTrue},
		}},
	}
	if owner != "" {
		yes := true
		kind, oname, _ := strings.Cut(owner, "/")
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: kind, Name: oname, UID: "o", Controller: &yes}}
	}
	return p
}

func pdb(ns, name string, sel map[string]string, allowed, current, desired, expected int32) *policyv1.PodDisruptionBudget {
	minAv := intstr.FromInt32(desired)
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name), Generation: 2,
			Labels: map[string]string{"x": "y"}, ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &minAv, Selector: &metav1.LabelSelector{MatchLabels: sel,
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"batch"}}}}},
		Status: policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 2, DisruptionsAllowed: allowed, CurrentHealthy: current,
			DesiredHealthy: desired, ExpectedPods: expected, DisruptedPods: map[string]metav1.Time{"web-0": metav1.Now()},
			Conditions: []metav1.Condition{{Type: policyv1.DisruptionAllowedCondition, Status: metav1.ConditionFalse,
				Reason: policyv1.InsufficientPodsReason, Message: "only 2 healthy"}}},
	}
}

func kuredWithArgs(args ...string) *appsv1.DaemonSet {
	d := ds("kube-system", "kured", nil, nil)
	d.Spec.Template.Spec.Containers = []corev1.Container{{Name: "kured", Image: "ghcr.io/kubereboot/kured:1.17",
		Command: []string{"/usr/bin/kured"}, Args: args}}
	return d
}

func TestPDBSource(t *testing.T) {
	cs := fake.NewClientset(pdb("shop", "web", map[string]string{"app": "web"}, 0, 2, 2, 3))
	r, _ := start(t, cs, Options{})
	r.Eventually(t, "pdbs ok with one budget", func(c *model.Cluster) bool {
		h, _ := c.Source(model.SourcePDBs)
		return h.Status == model.StatusOK && len(c.PDBs()) == 1
	})
	var got model.PDB
	r.Read(func(c *model.Cluster) { got = *c.PDBs()[0] })
	want := model.PDB{Namespace: "shop", Name: "web", MinAvailable: "2", CurrentHealthy: 2, DesiredHealthy: 2, ExpectedPods: 3,
		Observed: true, BlockedReason: "InsufficientPods", BlockedMessage: "only 2 healthy",
		Selector: &model.LabelSelector{MatchLabels: map[string]string{"app": "web"},
			MatchExpressions: []model.LabelRequirement{{Key: "tier", Operator: "NotIn", Values: []string{"batch"}}}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("PDB\n got %+v\nwant %+v", got, want)
	}
	if s := got.Selector.String(); s != "app=web,tier notin (batch)" {
		t.Errorf("selector %q", s)
	}

	// The disruption controller's next status reaches the model.
	b, _ := cs.PolicyV1().PodDisruptionBudgets("shop").Get(t.Context(), "web", metav1.GetOptions{})
	b.Status.DisruptionsAllowed, b.Status.CurrentHealthy, b.Status.Conditions = 1, 3, nil
	b.Generation = 3 // a spec change the controller has not observed yet
	if _, err := cs.PolicyV1().PodDisruptionBudgets("shop").UpdateStatus(t.Context(), b, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	r.Eventually(t, "status update", func(c *model.Cluster) bool {
		p := c.PDBs()[0]
		return p.DisruptionsAllowed == 1 && p.CurrentHealthy == 3 && p.BlockedReason == "" && !p.Observed
	})
	if err := cs.PolicyV1().PodDisruptionBudgets("shop").Delete(t.Context(), "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	r.Eventually(t, "budget deleted", func(c *model.Cluster) bool { return len(c.PDBs()) == 0 })
}

func TestTransformPDBDropsTheRest(t *testing.T) {
	out, _ := TransformPDB(pdb("shop", "web", map[string]string{"app": "web"}, 0, 2, 2, 3))
	b := out.(*policyv1.PodDisruptionBudget)
	if b.ManagedFields != nil || b.Labels != nil || b.Status.DisruptedPods != nil {
		t.Errorf("kept %+v", b.ObjectMeta)
	}
	if b.Generation != 2 || b.Status.ObservedGeneration != 2 || b.Spec.Selector == nil || len(b.Status.Conditions) != 1 {
		t.Errorf("dropped what the model needs: %+v", b)
	}
}

func TestTransformPodKeepsWhatBlockersNeed(t *testing.T) {
	p := pod("shop", "web-0", "w-1", corev1.PodRunning, map[string]string{"app": "web"}, "ReplicaSet/web-5d")
	p.Annotations[corev1.MirrorPodAnnotationKey] = "abc"
	out, _ := TransformPod(p)
	tp := out.(*corev1.Pod)
	if tp.ManagedFields != nil || len(tp.Spec.Containers) != 0 || tp.Status.PodIP != "" || len(tp.Annotations) != 1 ||
		len(tp.Status.Conditions) != 1 {
		t.Errorf("kept too much: %+v", tp)
	}
	m := PodToModel(tp)
	want := model.Pod{Namespace: "shop", Name: "web-0", Node: "w-1", Phase: "Running", Ready: true,
		Labels: map[string]string{"app": "web"}, OwnerKind: "ReplicaSet", OwnerName: "web-5d", Mirror: true}
	if !reflect.DeepEqual(m, want) {
		t.Errorf("PodToModel\n got %+v\nwant %+v", m, want)
	}
}

func podNames(ps []model.Pod) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Key())
	}
	return out
}

// podCalls lists the pod list and watch calls made, as "verb field|label".
func podCalls(cs *fake.Clientset) []string {
	var out []string
	for _, a := range cs.Actions() {
		if a.GetResource().Resource != "pods" {
			continue
		}
		var f, l string
		switch x := a.(type) {
		case k8stesting.ListAction:
			f, l = x.GetListRestrictions().Fields.String(), x.GetListRestrictions().Labels.String()
		case k8stesting.WatchAction:
			f, l = x.GetWatchRestrictions().Fields.String(), x.GetWatchRestrictions().Labels.String()
		default:
			continue
		}
		out = append(out, a.GetVerb()+" "+f+"|"+l)
	}
	return out
}

func TestPodsWatchedOnlyOnCordonedNodes(t *testing.T) {
	cs := fake.NewClientset(
		cordoned(node("w-1", true, nil)), node("w-2", true, nil),
		pod("shop", "web-0", "w-1", corev1.PodRunning, map[string]string{"app": "web"}, "StatefulSet/web"),
		pod("kube-system", "kured-abc", "w-1", corev1.PodRunning, nil, "DaemonSet/kured"),
		pod("shop", "web-1", "w-2", corev1.PodRunning, map[string]string{"app": "web"}, "StatefulSet/web"),
	)
	r, _ := start(t, cs, Options{})
	// WaitForSync (in start) returned: the pods of the node cordoned from
	// the start are there already, for a one-shot snapshot.
	var w1 []model.Pod
	var known1, known2 bool
	r.Read(func(c *model.Cluster) {
		w1, known1 = c.NodePods("w-1")
		_, known2 = c.NodePods("w-2")
	})
	if !known1 || !reflect.DeepEqual(podNames(w1), []string{"kube-system/kured-abc", "shop/web-0"}) {
		t.Fatalf("w-1 pods %v known %v", podNames(w1), known1)
	}
	if known2 {
		t.Fatal("pods of a schedulable node are known: it must not be watched")
	}
	if h := r.Source(model.SourcePods); h.Status != model.StatusOK || h.Message != "pods of cordoned node w-1" {
		t.Errorf("pods health %+v", h)
	}

	// w-2 is cordoned (a drain starts), w-1 uncordoned (its cycle ended).
	for name, unsched := range map[string]bool{"w-1": false, "w-2": true} {
		n, _ := cs.CoreV1().Nodes().Get(t.Context(), name, metav1.GetOptions{})
		n.Spec.Unschedulable = unsched
		if _, err := cs.CoreV1().Nodes().Update(t.Context(), n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	r.Eventually(t, "w-2 watched, w-1 forgotten", func(c *model.Cluster) bool {
		_, k1 := c.NodePods("w-1")
		p2, k2 := c.NodePods("w-2")
		return !k1 && k2 && reflect.DeepEqual(podNames(p2), []string{"shop/web-1"})
	})
	// A pod evicted from w-2 goes; one that lands there (a DaemonSet's) comes.
	if err := cs.CoreV1().Pods("shop").Delete(t.Context(), "web-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Pods("kube-system").Create(t.Context(),
		pod("kube-system", "kured-def", "w-2", corev1.PodRunning, nil, "DaemonSet/kured"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	r.Eventually(t, "w-2's pods follow", func(c *model.Cluster) bool {
		p2, _ := c.NodePods("w-2")
		return reflect.DeepEqual(podNames(p2), []string{"kube-system/kured-def"}) && p2[0].DrainSkips()
	})

	// Never a pod watch without a selector: every pod call but the probe
	// (a list of one) is field-selected on a node.
	for _, call := range podCalls(cs) {
		if call == "list |" {
			continue // the probe
		}
		if !strings.Contains(call, "spec.nodeName=w-") {
			t.Errorf("a pod call not selected on a node: %q", call)
		}
	}
}

func TestPodWatchesAreBounded(t *testing.T) {
	cs := fake.NewClientset(cordoned(node("w-1", true, nil)), cordoned(node("w-2", true, nil)), cordoned(node("w-3", true, nil)))
	// The fake's watch sees only what happens after it started: the delete
	// below waits for the node watch, or under load it can race it.
	watching := make(chan struct{})
	var once sync.Once
	cs.PrependWatchReactor("nodes", func(a k8stesting.Action) (bool, watch.Interface, error) {
		w, err := cs.Tracker().Watch(corev1.SchemeGroupVersion.WithResource("nodes"), a.GetNamespace())
		once.Do(func() { close(watching) })
		return true, w, err
	})
	r, _ := start(t, cs, Options{MaxPodWatchNodes: 2})
	r.Eventually(t, "two watched", func(c *model.Cluster) bool {
		_, k1 := c.NodePods("w-1")
		_, k2 := c.NodePods("w-2")
		_, k3 := c.NodePods("w-3")
		return k1 && k2 && !k3
	})
	if h := r.Source(model.SourcePods); h.Status != model.StatusOK ||
		h.Message != "pods of 2 cordoned nodes; 1 more cordoned node(s) not watched (at most 2)" {
		t.Errorf("pods health %+v", h)
	}
	select {
	case <-watching:
	case <-time.After(sourcetest.IntegrationTimeout):
		t.Fatal("the node informer never watched")
	}
	if err := cs.CoreV1().Nodes().Delete(t.Context(), "w-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	r.Eventually(t, "w-3 watched once w-1 is gone", func(c *model.Cluster) bool {
		_, k3 := c.NodePods("w-3")
		return k3
	})
}

func TestBlockingPodsFollowKuredSelectors(t *testing.T) {
	cs := fake.NewClientset(node("w-1", true, nil), node("w-2", true, nil),
		kuredWithArgs("--period=1h", "--blocking-pod-selector=app=backup", "--blocking-pod-selector", "team=db,critical in (yes)"),
		pod("ops", "backup-1", "w-1", corev1.PodRunning, map[string]string{"app": "backup"}, "Job/backup"),
		pod("ops", "backup-old", "w-1", corev1.PodSucceeded, map[string]string{"app": "backup"}, "Job/backup"),
		pod("db", "pg-0", "w-2", corev1.PodPending, map[string]string{"team": "db", "critical": "yes"}, "StatefulSet/pg"),
		pod("db", "pg-1", "w-2", corev1.PodRunning, map[string]string{"team": "db", "critical": "no"}, "StatefulSet/pg"),
		pod("shop", "web-0", "w-1", corev1.PodRunning, map[string]string{"app": "web"}, "StatefulSet/web"),
	)
	r, _ := start(t, cs, Options{})
	var on1, on2 []model.BlockingPod
	var unread map[string]string
	var sels []string
	r.Read(func(c *model.Cluster) {
		on1, unread = c.BlockingPodsOn("w-1")
		on2, _ = c.BlockingPodsOn("w-2")
		sels = c.BlockingSelectors()
	})
	if !reflect.DeepEqual(sels, []string{"app=backup", "team=db,critical in (yes)"}) {
		t.Fatalf("selectors %q", sels)
	}
	if len(on1) != 1 || on1[0].Key() != "ops/backup-1" || !reflect.DeepEqual(on1[0].Selectors, []string{"app=backup"}) || unread != nil {
		t.Fatalf("w-1 blocking pods %+v unread %v", on1, unread)
	}
	if len(on2) != 1 || on2[0].Key() != "db/pg-0" {
		t.Fatalf("w-2 blocking pods %+v", on2)
	}
	// Watches are label-selected with kured's phase filter, cluster-wide.
	for _, call := range podCalls(cs) {
		if call == "list |" {
			continue
		}
		if !strings.HasPrefix(strings.SplitN(call, " ", 2)[1], fields.ParseSelectorOrDie(kuredPodPhases).String()+"|") ||
			strings.HasSuffix(call, "|") {
			t.Errorf("a pod call not as kured's: %q", call)
		}
	}

	// The backup finishes: kured no longer counts it.
	p, _ := cs.CoreV1().Pods("ops").Get(t.Context(), "backup-1", metav1.GetOptions{})
	p.Status.Phase = corev1.PodSucceeded
	if _, err := cs.CoreV1().Pods("ops").UpdateStatus(t.Context(), p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	r.Eventually(t, "finished pod no longer blocks", func(c *model.Cluster) bool {
		on, _ := c.BlockingPodsOn("w-1")
		return len(on) == 0
	})

	// kured is reconfigured: one selector, invalid, and one empty.
	d, _ := cs.AppsV1().DaemonSets("kube-system").Get(t.Context(), "kured", metav1.GetOptions{})
	d.Spec.Template.Spec.Containers[0].Args = []string{"--blocking-pod-selector=app in (", "--blocking-pod-selector="}
	if _, err := cs.AppsV1().DaemonSets("kube-system").Update(t.Context(), d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	r.Eventually(t, "invalid and empty selectors said", func(c *model.Cluster) bool {
		on, un := c.BlockingPodsOn("w-2")
		return len(on) == 0 && len(un) == 2 && strings.Contains(un["app in ("], "not a valid label selector") &&
			strings.Contains(un[""], "matches every pod")
	})
}

func TestNoBlockingSelectorMeansNone(t *testing.T) {
	cs := fake.NewClientset(node("w-1", true, nil), kuredWithArgs("--period=1h"),
		pod("ops", "backup-1", "w-1", corev1.PodRunning, map[string]string{"app": "backup"}, "Job/backup"))
	r, _ := start(t, cs, Options{})
	var sels []string
	var on []model.BlockingPod
	var unread map[string]string
	r.Read(func(c *model.Cluster) {
		sels = c.BlockingSelectors()
		on, unread = c.BlockingPodsOn("w-1")
	})
	if sels != nil || on != nil || unread != nil {
		t.Errorf("selectors %v pods %v unread %v", sels, on, unread)
	}
	if calls := podCalls(cs); !reflect.DeepEqual(calls, []string{"list |"}) {
		t.Errorf("pod calls %q: want only the probe", calls)
	}
}

func forbid(cs *fake.Clientset, verb, group, resource string) {
	cs.PrependReactor(verb, resource, func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: group, Resource: resource}, "",
			errors.New(`User "alice" cannot `+verb+` resource "`+resource+`"`))
	})
}

func TestForbiddenPodsAndPDBsAreSaid(t *testing.T) {
	cs := fake.NewClientset(cordoned(node("w-1", true, nil)),
		kuredWithArgs("--blocking-pod-selector=app=backup"), pdb("shop", "web", nil, 0, 1, 1, 1))
	forbid(cs, "list", "", "pods")
	forbid(cs, "list", "policy", "poddisruptionbudgets")
	r, _ := start(t, cs, Options{})
	if h := r.Source(model.SourcePods); h.Status != model.StatusForbidden ||
		h.Message != "cannot list pods (RBAC); cannot tell why a drain is slow" {
		t.Errorf("pods %+v", h)
	}
	if h := r.Source(model.SourcePDBs); h.Status != model.StatusForbidden ||
		h.Message != "cannot list poddisruptionbudgets.policy (RBAC); cannot tell why a drain is slow" {
		t.Errorf("pdbs %+v", h)
	}
	r.Eventually(t, "nodes and kured ok, the selector unread with why", func(c *model.Cluster) bool {
		n, _ := c.Source(model.SourceNodes)
		k, _ := c.Source(model.SourceKured)
		_, un := c.BlockingPodsOn("w-1")
		_, known := c.NodePods("w-1")
		return n.Status == model.StatusOK && k.Status == model.StatusOK && !known &&
			un["app=backup"] == "cannot list pods (RBAC)"
	})
}

func TestPodsForbiddenThenGranted(t *testing.T) {
	cs := fake.NewClientset(cordoned(node("w-1", true, nil)),
		pod("shop", "web-0", "w-1", corev1.PodRunning, map[string]string{"app": "web"}, "StatefulSet/web"))
	var allowed atomicBool
	cs.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		if allowed.get() {
			return false, nil, nil
		}
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("no"))
	})
	r, _ := start(t, cs, Options{ProbeInterval: 20 * time.Millisecond})
	if h := r.Source(model.SourcePods); h.Status != model.StatusForbidden {
		t.Fatalf("pods %+v", h)
	}
	allowed.set(true)
	r.Eventually(t, "pods ok and known once granted", func(c *model.Cluster) bool {
		h, _ := c.Source(model.SourcePods)
		p, known := c.NodePods("w-1")
		return h.Status == model.StatusOK && known && len(p) == 1
	})
}

type atomicBool struct{ v atomic.Bool }

func (b *atomicBool) get() bool  { return b.v.Load() }
func (b *atomicBool) set(v bool) { b.v.Store(v) }
