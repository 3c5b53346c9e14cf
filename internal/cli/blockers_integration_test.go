package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/rebootwatch/rebootwatch/internal/testenv/testcluster"
	"github.com/rebootwatch/rebootwatch/internal/testenv/testprom"
)

// Issue 15 end to end on a real apiserver: objects created as their
// controllers would (statuses through the status subresources), then the
// one-shot --snapshot, JSON and text, names the blocker.

// blkNode creates a Ready node, cordoned or not.
func blkNode(t *testing.T, cs kubernetes.Interface, name string, cordoned bool) {
	t.Helper()
	ctx := context.Background()
	n, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name,
		Labels: map[string]string{"node-role.kubernetes.io/worker": ""}}, Spec: corev1.NodeSpec{Unschedulable: cordoned}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
		LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.NewTime(time.Now().Add(-48 * time.Hour))}}
	n.Status.NodeInfo = corev1.NodeSystemInfo{BootID: "boot-" + name, MachineID: fmt.Sprintf("%032x", len(name)+int(name[len(name)-1])),
		OSImage: "Ubuntu 24.04.2 LTS", KernelVersion: "6.8.0-57-generic"}
	if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// blkKured creates kured's DaemonSet with args and, when holder is set, its
// lock taken by holder at created.
func blkKured(t *testing.T, cs kubernetes.Interface, holder string, created time.Time, args ...string) {
	t.Helper()
	labels := map[string]string{"name": "kured"}
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "kured"},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "kured", Image: "ghcr.io/kubereboot/kured:1.17.1",
					Command: []string{"/usr/bin/kured"}, Args: args}}}}}}
	if holder != "" {
		ds.Annotations = map[string]string{lockAnnotation: fmt.Sprintf(`{"nodeID":%q,"metadata":{"unschedulable":false},"created":%q,"TTL":0}`,
			holder, created.UTC().Format(time.RFC3339))}
	}
	if _, err := cs.AppsV1().DaemonSets("kube-system").Create(context.Background(), ds, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

const lockAnnotation = "weave.works/kured-node-lock"

// blkZeroPDB creates the budget name in ns over the pods labelled app, with
// the disruption controller's status of 2 healthy of 2 desired and 0
// disruptions allowed: every eviction it covers is refused.
func blkZeroPDB(t *testing.T, cs kubernetes.Interface, ns, name, app string) {
	t.Helper()
	ctx := context.Background()
	minAv := intstr.FromInt32(2)
	b, err := cs.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &minAv,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: b.Generation, CurrentHealthy: 2, DesiredHealthy: 2,
		ExpectedPods: 2, DisruptionsAllowed: 0, Conditions: []metav1.Condition{{Type: policyv1.DisruptionAllowedCondition,
			Status: metav1.ConditionFalse, Reason: policyv1.InsufficientPodsReason, LastTransitionTime: metav1.Now()}}}
	if _, err := cs.PolicyV1().PodDisruptionBudgets(ns).UpdateStatus(ctx, b, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// blkPDBDrain is the drain a budget holds: w-1 cordoned and holding kured's
// lock for held, w-2 schedulable, and in a namespace of the test's own a
// budget allowing no disruption over the pods labelled app, <app>-1 on w-1
// and <app>-0 on w-2. It returns the admin client and the namespace.
func blkPDBDrain(t *testing.T, tc *testcluster.Cluster, held time.Duration, app string) (kubernetes.Interface, string) {
	t.Helper()
	cs := tc.Client(t)
	blkNode(t, cs, "w-1", true)
	blkNode(t, cs, "w-2", false)
	blkKured(t, cs, "w-1", time.Now().Add(-held), "--period=1m")
	shop := tc.Namespace(t, "shop")
	blkZeroPDB(t, cs, shop, app, app)
	blkPod(t, cs, shop, app+"-1", "w-1", map[string]string{"app": app}, "StatefulSet")
	blkPod(t, cs, shop, app+"-0", "w-2", map[string]string{"app": app}, "StatefulSet")
	return cs, shop
}

// blkPod creates a pod bound to a node, Running and Ready through the
// status subresource.
func blkPod(t *testing.T, cs kubernetes.Interface, ns, name, node string, labels map[string]string, ownerKind string) {
	t.Helper()
	ctx := context.Background()
	yes := true
	p, err := cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: ownerKind, Name: name + "-owner",
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

type blkSnapshot struct {
	Fleet struct {
		Blockers []blkBlocker `json:"blockers"`
	} `json:"fleet"`
	Nodes []struct {
		Name     string       `json:"name"`
		Phase    string       `json:"phase"`
		Blockers []blkBlocker `json:"blockers"`
	} `json:"nodes"`
}

type blkBlocker struct {
	Kind   string `json:"kind"`
	Node   string `json:"node"`
	Reason string `json:"reason"`
}

// snapshots runs --snapshot -o json and --snapshot (text) with flags.
func snapshots(t *testing.T, flags ...string) (blkSnapshot, string) {
	t.Helper()
	ctx := context.Background()
	env, out, errb := multiEnv()
	code := run(ctx, append(append([]string{}, flags...), "--snapshot", "-o", "json"), env)
	var snap blkSnapshot
	if err := json.Unmarshal([]byte(out.String()), &snap); err != nil || code == ExitError {
		t.Fatalf("snapshot exit %d: %v\n%s\n%s", code, err, out.String(), errb.String())
	}
	env, out, _ = multiEnv()
	run(ctx, append(append([]string{}, flags...), "--snapshot"), env)
	return snap, out.String()
}

func (s blkSnapshot) node(name string) (phase string, blockers []blkBlocker) {
	for _, n := range s.Nodes {
		if n.Name == name {
			return n.Phase, n.Blockers
		}
	}
	return "", nil
}

func kinds(bs []blkBlocker) []string {
	var out []string
	for _, b := range bs {
		out = append(out, b.Kind)
	}
	return out
}

// A drain held by a PodDisruptionBudget that allows 0 disruptions, with a
// pod bound to the draining node: the snapshot names the budget and the pod.
func TestBlockersPDBDrainRealCluster(t *testing.T) {
	tc := cliCluster(t)
	cs, shop := blkPDBDrain(t, tc, 30*time.Minute, "postgres") // w-1 draining for 30m
	blkPod(t, cs, "kube-system", "kured-w1", "w-1", map[string]string{"name": "kured"}, "DaemonSet")

	snap, text := snapshots(t, "--kubeconfig", kubeconfigCopy(t, tc), "--request-timeout", "5s", "--sync-timeout", "30s")
	phase, bs := snap.node("w-1")
	if phase != "draining" || len(bs) == 0 || bs[0].Kind != "drain" {
		t.Fatalf("w-1 %s, blockers %v", phase, bs)
	}
	for _, want := range []string{"PodDisruptionBudget " + shop + "/postgres allows 0 disruptions", "(2/2 healthy)", shop + "/postgres-1"} {
		if !strings.Contains(bs[0].Reason, want) {
			t.Errorf("drain reason %q lacks %q", bs[0].Reason, want)
		}
	}
	if strings.Contains(bs[0].Reason, "kured-w1") {
		t.Errorf("the DaemonSet pod (never evicted by a drain) is named: %q", bs[0].Reason)
	}
	if len(snap.Fleet.Blockers) == 0 || snap.Fleet.Blockers[0].Kind != "drain" || snap.Fleet.Blockers[0].Node != "w-1" {
		t.Errorf("fleet blockers %v", snap.Fleet.Blockers)
	}
	if !strings.Contains(text, "BLOCKED") || !strings.Contains(text, shop+"/postgres-1") || !strings.Contains(text, "drain") {
		t.Errorf("text report:\n%s", text)
	}

	// Without read access to pods the drain is still named, with why it
	// cannot be told more ("cannot tell why the drain is slow"), never silence.
	// carol reads nodes and DaemonSets (and Leases), neither pods nor budgets.
	grantNamed(t, tc, "carol-base", "carol", []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"apps"}, Resources: []string{"daemonsets"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "list", "watch"}}})
	// carol may not list Deployments, so whether the Flatcar update
	// operator runs is unknown to her (exit 1, issue 32 §2): she reads the
	// kinds she may read.
	snap, text = snapshots(t, "--kubeconfig", kubeconfigCopy(t, tc), "--token", tc.UserConfig("carol").BearerToken,
		"--request-timeout", "5s", "--sync-timeout", "30s", "--coordinators=kured,fleetlock,suc")
	_, bs = snap.node("w-1")
	if len(bs) == 0 || bs[0].Kind != "drain" || !strings.Contains(bs[0].Reason, "cannot tell why the drain is slow") ||
		!strings.Contains(bs[0].Reason, "forbidden") {
		t.Fatalf("w-1 blockers without pod access %v", bs)
	}
	if !strings.Contains(text, "pods forbidden") || !strings.Contains(text, "cannot tell why the drain is slow") {
		t.Errorf("the text report does not say pods are forbidden:\n%s", text)
	}
}

// kured's reboot window from its DaemonSet's args, closed now, and a firing
// alert from a real Prometheus: a pending node's blockers name both.
func TestBlockersWindowAndAlertRealCluster(t *testing.T) {
	tc := cliCluster(t)
	// kured_reboot_required for w-3 (a recording rule stands in for kured's
	// exporter) and an alert that fires at once.
	prom := testprom.Start(t, testprom.Options{Rules: `groups:
  - name: test
    rules:
      - record: kured_reboot_required
        expr: label_replace(vector(1), "node", "w-3", "", "")
      - alert: DiskFull
        expr: vector(1)
`})
	cs := tc.Client(t)
	blkNode(t, cs, "w-3", false)
	blkNode(t, cs, "w-4", false)
	// A window that opens in two hours, in kured's own time zone.
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skipf("no tz database: %v", err)
	}
	now := time.Now().In(berlin)
	start, end := now.Add(2*time.Hour), now.Add(3*time.Hour)
	blkKured(t, cs, "", time.Time{}, "--period=1m", "--start-time="+start.Format("15:04"), "--end-time="+end.Format("15:04"),
		"--time-zone=Europe/Berlin")
	waitProm(t, prom.URL, "kured_reboot_required")
	waitProm(t, prom.URL, `ALERTS{alertstate="firing",alertname="DiskFull"}`)

	snap, text := snapshots(t, "--kubeconfig", kubeconfigCopy(t, tc), "--request-timeout", "5s", "--sync-timeout", "30s",
		"--prometheus-url", prom.URL, "--prometheus-alerts", "^DiskFull$")
	phase, bs := snap.node("w-3")
	if phase != "pending" {
		t.Fatalf("w-3 is %s (blockers %v)", phase, bs)
	}
	var window, alert *blkBlocker
	for i := range bs {
		switch bs[i].Kind {
		case "reboot-window":
			window = &bs[i]
		case "blocking-alert":
			alert = &bs[i]
		}
	}
	if window == nil || !strings.Contains(window.Reason, "opens in") || !strings.Contains(window.Reason, start.Format("15:04")+"–"+end.Format("15:04")+" Europe/Berlin") {
		t.Errorf("window blocker %+v (all: %v)", window, kinds(bs))
	}
	if alert == nil || !strings.Contains(alert.Reason, "DiskFull") {
		t.Errorf("alert blocker %+v (all: %v)", alert, kinds(bs))
	}
	if len(snap.Fleet.Blockers) == 0 || snap.Fleet.Blockers[0].Kind != "reboot-window" {
		t.Errorf("fleet blockers %v", snap.Fleet.Blockers)
	}
	if !strings.Contains(text, "reboot window") || !strings.Contains(text, "DiskFull") {
		t.Errorf("text report:\n%s", text)
	}
}

// waitProm polls a real Prometheus until query has a result.
func waitProm(t *testing.T, base, query string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := http.Get(base + "/api/v1/query?query=" + url.QueryEscape(query))
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var r struct {
				Data struct {
					Result []json.RawMessage `json:"result"`
				} `json:"data"`
			}
			if json.Unmarshal(b, &r) == nil && len(r.Data.Result) > 0 {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus: no result for %s", query)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
