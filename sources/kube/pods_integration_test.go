package kube_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/rebootwatch/rebootwatch/internal/testenv/testcluster"
	"github.com/rebootwatch/rebootwatch/model"
	"github.com/rebootwatch/rebootwatch/sources"
	"github.com/rebootwatch/rebootwatch/sources/kube"
	"github.com/rebootwatch/rebootwatch/sources/sourcetest"
)

// createPod creates a pod bound to a node and sets its phase and Ready
// condition through the status subresource, as a kubelet does.
func createPod(t *testing.T, cs kubernetes.Interface, ns, name, node string, labels map[string]string, ownerKind string,
	phase corev1.PodPhase) {
	t.Helper()
	ctx := context.Background()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "registry.example/app:1"}}}}
	if ownerKind != "" {
		yes := true
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: ownerKind, Name: name + "-owner",
			UID: "00000000-0000-0000-0000-000000000001", Controller: &yes}}
	}
	p, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	setPodPhase(t, cs, p, phase)
}

func setPodPhase(t *testing.T, cs kubernetes.Interface, p *corev1.Pod, phase corev1.PodPhase) {
	t.Helper()
	ready := corev1.ConditionFalse
	if phase == corev1.PodRunning {
		ready = corev1.ConditionTrue
	}
	p.Status.Phase = phase
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: ready, LastTransitionTime: metav1.Now()}}
	if _, err := cs.CoreV1().Pods(p.Namespace).UpdateStatus(context.Background(), p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// createPDB creates a budget and sets its status through the status
// subresource, as the disruption controller does.
func createPDB(t *testing.T, cs kubernetes.Interface, ns, name string, sel map[string]string, minAvailable, current, expected, allowed int32) {
	t.Helper()
	ctx := context.Background()
	minAv := intstr.FromInt32(minAvailable)
	b, err := cs.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: &minAv, Selector: &metav1.LabelSelector{MatchLabels: sel}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: b.Generation, CurrentHealthy: current,
		DesiredHealthy: minAvailable, ExpectedPods: expected, DisruptionsAllowed: allowed,
		Conditions: []metav1.Condition{{Type: policyv1.DisruptionAllowedCondition, Status: metav1.ConditionFalse,
			Reason: policyv1.InsufficientPodsReason, Message: "not enough healthy pods", LastTransitionTime: metav1.Now(),
			ObservedGeneration: b.Generation}}}
	if _, err := cs.PolicyV1().PodDisruptionBudgets(ns).UpdateStatus(ctx, b, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func cordon(t *testing.T, cs kubernetes.Interface, name string, on bool) {
	t.Helper()
	n, err := cs.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Spec.Unschedulable = on
	if _, err := cs.CoreV1().Nodes().Update(context.Background(), n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func keys(ps []model.Pod) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Key())
	}
	return out
}

// TestPodSourcesAgainstRealAPIServer: PodDisruptionBudgets, the pods of a
// cordoned node (field-selected on the real server) and kured's blocking
// pods (label- and phase-selected), their changes, and forbidden.
func TestPodSourcesAgainstRealAPIServer(t *testing.T) {
	c := testcluster.SharedAlone(t)
	admin := c.Client(t)
	ctx := context.Background()

	createNode(t, admin, "w-1", "worker", "boot-w-1", true)
	createNode(t, admin, "w-2", "worker", "boot-w-2", true)
	cordon(t, admin, "w-1", true) // w-1 drains
	kuredNS := c.Namespace(t, "kured")
	ds := kuredDaemonSet(kuredNS, "kured", "")
	ds.Spec.Template.Spec.Containers[0].Args = append(ds.Spec.Template.Spec.Containers[0].Args, "--period=1m", "--blocking-pod-selector=app=backup")
	if _, err := admin.AppsV1().DaemonSets(kuredNS).Create(ctx, ds, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	shop := c.Namespace(t, "shop")
	createPDB(t, admin, shop, "web", map[string]string{"app": "web"}, 2, 2, 2, 0)
	createPod(t, admin, shop, "web-0", "w-1", map[string]string{"app": "web"}, "StatefulSet", corev1.PodRunning)
	createPod(t, admin, shop, "web-1", "w-2", map[string]string{"app": "web"}, "StatefulSet", corev1.PodRunning)
	createPod(t, admin, kuredNS, "kured-w1", "w-1", map[string]string{"name": "kured"}, "DaemonSet", corev1.PodRunning)
	createPod(t, admin, shop, "backup", "w-2", map[string]string{"app": "backup"}, "Job", corev1.PodRunning)
	createPod(t, admin, shop, "backup-done", "w-2", map[string]string{"app": "backup"}, "Job", corev1.PodSucceeded)

	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := func(t *testing.T, cs kubernetes.Interface) *sourcetest.Recorder {
		t.Helper()
		wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
		defer wcancel()
		r := sourcetest.NewRecorder("it").WithTimeout(sourcetest.IntegrationTimeout)
		sourcetest.StartWith(t, sctx, wctx, r, func(ctx context.Context, sink sources.Sink) (*kube.Source, error) {
			return kube.Start(ctx, kube.Options{Client: cs, RequestTimeout: 10 * time.Second, ProbeInterval: 200 * time.Millisecond}, sink)
		})
		return r
	}
	r := start(t, admin)

	// Right after the first sync, as a one-shot snapshot reads it.
	var (
		w1            []model.Pod
		known1, know2 bool
		pdbs          []*model.PDB
		covering      []*model.PDB
		blocking      []model.BlockingPod
		unread        map[string]string
	)
	r.Read(func(c *model.Cluster) {
		w1, known1 = c.NodePods("w-1")
		_, know2 = c.NodePods("w-2")
		for _, p := range c.PDBs() {
			cp := *p
			pdbs = append(pdbs, &cp)
		}
		if known1 && len(w1) > 0 {
			for i := range w1 {
				if w1[i].Name == "web-0" {
					covering = c.PDBsCovering(&w1[i])
				}
			}
		}
		blocking, unread = c.BlockingPodsOn("w-2")
	})
	if !known1 || !reflect.DeepEqual(keys(w1), []string{kuredNS + "/kured-w1", shop + "/web-0"}) {
		t.Fatalf("w-1 pods %v known %v", keys(w1), known1)
	}
	if know2 {
		t.Error("pods of w-2 (schedulable) are known: it must not be watched")
	}
	if !w1[0].DrainSkips() || w1[1].DrainSkips() || !w1[1].Ready || w1[1].Phase != "Running" {
		t.Errorf("w-1 pods %+v", w1)
	}
	if len(pdbs) != 1 || pdbs[0].DisruptionsAllowed != 0 || pdbs[0].CurrentHealthy != 2 || pdbs[0].DesiredHealthy != 2 ||
		pdbs[0].ExpectedPods != 2 || !pdbs[0].Observed || pdbs[0].MinAvailable != "2" || pdbs[0].BlockedReason != "InsufficientPods" {
		t.Fatalf("pdbs %+v", pdbs)
	}
	if len(covering) != 1 || covering[0].Name != "web" {
		t.Errorf("web-0 covered by %v", covering)
	}
	if len(blocking) != 1 || blocking[0].Name != "backup" || unread != nil {
		t.Errorf("blocking pods on w-2 %+v unread %v", blocking, unread)
	}
	for _, n := range []model.SourceName{model.SourcePDBs, model.SourcePods} {
		if h := r.Source(n); h.Status != model.StatusOK {
			t.Errorf("%s %+v", n, h)
		}
	}

	// w-2 starts draining; the backup finishes (the server's phase filter
	// drops it from the watch); w-1 is uncordoned.
	cordon(t, admin, "w-2", true)
	b, err := admin.CoreV1().Pods(shop).Get(ctx, "backup", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	setPodPhase(t, admin, b, corev1.PodSucceeded)
	cordon(t, admin, "w-1", false)
	r.Eventually(t, "w-2 watched, backup done, w-1 forgotten", func(c *model.Cluster) bool {
		p2, k2 := c.NodePods("w-2")
		_, k1 := c.NodePods("w-1")
		bl, _ := c.BlockingPodsOn("w-2")
		return k2 && !k1 && len(bl) == 0 &&
			reflect.DeepEqual(keys(p2), []string{shop + "/backup", shop + "/backup-done", shop + "/web-1"})
	})
	// The disruption controller's next word reaches the model.
	pb, _ := admin.PolicyV1().PodDisruptionBudgets(shop).Get(ctx, "web", metav1.GetOptions{})
	pb.Status.DisruptionsAllowed, pb.Status.CurrentHealthy = 1, 3
	if _, err := admin.PolicyV1().PodDisruptionBudgets(shop).UpdateStatus(ctx, pb, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	r.Eventually(t, "budget allows one", func(c *model.Cluster) bool {
		ps := c.PDBs()
		return len(ps) == 1 && ps[0].DisruptionsAllowed == 1 && ps[0].CurrentHealthy == 3
	})

	t.Run("forbidden", func(t *testing.T) {
		// carol reads nodes and DaemonSets, neither pods nor budgets.
		grantNamed(t, c, "carol-base", "carol", []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{"apps"}, Resources: []string{"daemonsets"}, Verbs: []string{"get", "list", "watch"}},
		})
		carol, err := kubernetes.NewForConfig(c.UserConfig("carol"))
		if err != nil {
			t.Fatal(err)
		}
		r := start(t, carol)
		if h := r.Source(model.SourcePods); h.Status != model.StatusForbidden ||
			h.Message != "cannot list pods (RBAC); cannot tell why a drain is slow" {
			t.Errorf("pods %+v", h)
		}
		if h := r.Source(model.SourcePDBs); h.Status != model.StatusForbidden ||
			h.Message != "cannot list poddisruptionbudgets.policy (RBAC); cannot tell why a drain is slow" {
			t.Errorf("pdbs %+v", h)
		}
		if h := r.Source(model.SourceNodes); h.Status != model.StatusOK {
			t.Errorf("nodes %+v", h)
		}
		var un map[string]string
		var known bool
		r.Read(func(c *model.Cluster) {
			_, un = c.BlockingPodsOn("w-2")
			_, known = c.NodePods("w-2")
		})
		if un["app=backup"] != "cannot list pods (RBAC)" || known {
			t.Errorf("blocking selector unread %v, w-2's pods known %v", un, known)
		}

		// Granted later: both heal without a restart.
		grantNamed(t, c, "carol-pods", "carol", []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list", "watch"}},
			{APIGroups: []string{"policy"}, Resources: []string{"poddisruptionbudgets"}, Verbs: []string{"list", "watch"}},
		})
		r.Eventually(t, "pods and pdbs ok once granted", func(c *model.Cluster) bool {
			p, _ := c.Source(model.SourcePods)
			d, _ := c.Source(model.SourcePDBs)
			_, known := c.NodePods("w-2")
			_, un := c.BlockingPodsOn("w-2")
			return p.Status == model.StatusOK && d.Status == model.StatusOK && known && un == nil && len(c.PDBs()) == 1
		})
	})
}
