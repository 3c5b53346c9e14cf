package agent

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/rebootwatch/rebootwatch/internal/kubeclient"
	"github.com/rebootwatch/rebootwatch/internal/lock"
	"github.com/rebootwatch/rebootwatch/model"
	"github.com/rebootwatch/rebootwatch/sources/longhorn"
)

// stuckDrainRuns is how many agents TestIntegrationAgentSeesStuckDrainAtStart
// starts, one after the other, next to the same stuck drain.
const stuckDrainRuns = 20

// TestIntegrationAgentSeesStuckDrainAtStart is issue 27 item 5: an agent
// started next to a node that has been draining for 2 hours, held by a
// PodDisruptionBudget allowing 0 disruptions (shop/web, pod storefront-0
// still on the node). The agent must name the drain, not
// reboot-required-unknown, as the fleet's blocker: a phase derived before
// the lock had arrived (idle) would make the drain seem to start when the
// lock did, minutes short of the drain bound. Every run's first heartbeat with a blocker (the first from a
// settled picture) must name the drain, with every source ok.
func TestIntegrationAgentSeesStuckDrainAtStart(t *testing.T) {
	tc := agentCluster(t)
	cs := tc.Client(t)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Second)

	for _, n := range []struct {
		name     string
		cordoned bool
	}{{"worker-1", true}, {"worker-2", false}, {"worker-3", false}} {
		createNode(t, cs, n.name, fmt.Sprintf("%032x", len(n.name)+int(n.name[len(n.name)-1])), now.Add(-48*time.Hour))
		if n.cordoned {
			node, err := cs.CoreV1().Nodes().Get(ctx, n.name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			node.Spec.Unschedulable = true
			if _, err := cs.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	createKured(t, cs, fmt.Sprintf(`{"nodeID":"worker-1","metadata":{"unschedulable":false},"created":%q,"TTL":0}`,
		now.Add(-2*time.Hour).Format(time.RFC3339)))
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	minAv := intstr.FromInt32(2)
	pdb, err := cs.PolicyV1().PodDisruptionBudgets("shop").Create(ctx, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &minAv,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pdb.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: pdb.Generation, CurrentHealthy: 2, DesiredHealthy: 2,
		ExpectedPods: 2, DisruptionsAllowed: 0, Conditions: []metav1.Condition{{Type: policyv1.DisruptionAllowedCondition,
			Status: metav1.ConditionFalse, Reason: policyv1.InsufficientPodsReason, LastTransitionTime: metav1.Now()}}}
	if _, err := cs.PolicyV1().PodDisruptionBudgets("shop").UpdateStatus(ctx, pdb, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []struct{ name, node string }{{"storefront-0", "worker-1"}, {"storefront-1", "worker-2"}} {
		createRunningPod(t, cs, "shop", p.name, p.node, map[string]string{"app": "web"}, "StatefulSet")
	}

	cfg := Defaults()
	cfg.Interval, cfg.RequestTimeout, cfg.LeaderElect = 200*time.Millisecond, 5*time.Second, false
	cfg.ReapGhost, cfg.ReapExpired = false, false
	watchCfg := kubeclient.WatchConfig(tc.Admin, cfg.RequestTimeout)
	watchClient, err := kubernetes.NewForConfig(kubeclient.ProtobufConfig(watchCfg))
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(watchCfg)
	if err != nil {
		t.Fatal(err)
	}
	lhREST, err := longhorn.NewREST(watchCfg)
	if err != nil {
		t.Fatal(err)
	}

	failed := 0
	var first []string
	for run := 1; run <= stuckDrainRuns; run++ {
		logBuf := &syncBuffer{}
		logger := slog.New(slog.NewJSONHandler(logBuf, nil))
		a := New(&Agent{Config: cfg, Log: logger, Identity: "stuck-drain", Client: cs,
			Engine:  lock.New(lock.Options{OrphanGrace: cfg.OrphanGrace, Unattended: true}),
			Actor:   &lock.Actor{Client: cs, Who: "stuck-drain", DryRun: true, Logger: logger, Timeout: cfg.RequestTimeout},
			Sources: sourceStarters(cfg, watchClient, dyn, lhREST, logger)})
		actx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- a.Run(actx) }()
		var hb heartbeat
		deadline := time.Now().Add(60 * time.Second)
		for {
			hbs := heartbeats(t, logBuf.String())
			found := false
			for _, h := range hbs {
				if h.Blocker != nil {
					hb, found = h, true
					break
				}
			}
			if found {
				break
			}
			if time.Now().After(deadline) {
				cancel()
				t.Fatalf("run %d: no heartbeat with a blocker within 60s:\n%s", run, logBuf.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("run %d: agent stopped with %v", run, err)
		}
		var bad []string
		for _, s := range hb.Sources {
			if s.Status != model.StatusOK && s.Status != model.StatusNotInstalled && s.Status != model.StatusDisabled {
				bad = append(bad, string(s.Name)+" "+string(s.Status))
			}
		}
		b := hb.Blocker
		ok := b.Kind == model.BlockerDrain && b.Node == "worker-1" && strings.Contains(b.Reason, "shop/web") &&
			strings.Contains(b.Reason, "storefront-0") && len(bad) == 0
		if !ok {
			failed++
			first = append(first, fmt.Sprintf("run %d: %s on %s: %s (sources not ok: %v)", run, b.Kind, b.Node, b.Reason, bad))
		}
	}
	t.Logf("%d of %d runs named the stuck drain in the first heartbeat with a blocker", stuckDrainRuns-failed, stuckDrainRuns)
	if failed > 0 {
		t.Fatalf("%d of %d runs did not name the drain at once:\n%s", failed, stuckDrainRuns, strings.Join(first, "\n"))
	}
}

// createRunningPod creates a pod bound to node, Running and Ready through
// the status subresource, owned by a controller of ownerKind.
func createRunningPod(t *testing.T, cs kubernetes.Interface, ns, name, node string, labels map[string]string, ownerKind string) {
	t.Helper()
	ctx, cancel := bg()
	defer cancel()
	yes := true
	p, err := cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: appsv1.SchemeGroupVersion.String(), Kind: ownerKind, Name: name + "-owner",
			UID: "00000000-0000-0000-0000-000000000001", Controller: &yes}}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "registry.example/app:1"}}}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
	if _, err := cs.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}
