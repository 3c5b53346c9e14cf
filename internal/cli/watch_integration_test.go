package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/rebootwatch/rebootwatch/internal/testenv/testprom"
	"github.com/rebootwatch/rebootwatch/model"
)

// A real apiserver: n1 holds kured's lock, reboots (new boot id) and kured
// releases; watch --until-done prints the cycle and exits 0. kured's
// kured_reboot_required comes from a real Prometheus: without it whether
// n2 needs a reboot is unknown, and --until-done is never done on a guess.
func TestWatchRealClusterUntilDone(t *testing.T) {
	tc := cliCluster(t)
	prom := testprom.Start(t, testprom.Options{Rules: `groups:
  - name: test
    rules:
      - record: kured_reboot_required
        expr: label_replace(vector(0), "node", "n1", "", "") or label_replace(vector(0), "node", "n2", "", "")
`})
	waitProm(t, prom.URL, `kured_reboot_required{node="n2"}`)
	cs := tc.Client(t)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Second)

	mkNode(t, cs, "n1", "boot-1", now.Add(-time.Hour))
	mkNode(t, cs, "n2", "boot-a", now.Add(-time.Hour))
	lock := fmt.Sprintf(`{"nodeID":"n1","metadata":{"unschedulable":false},"created":%q,"TTL":0}`, now.Add(-time.Minute).Format(time.RFC3339))
	labels := map[string]string{"app.kubernetes.io/name": "kured"}
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "kured", Namespace: "kube-system", Labels: labels,
			Annotations: map[string]string{"weave.works/kured-node-lock": lock}},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "kured", Image: "kured:test"}}}}},
	}
	if _, err := cs.AppsV1().DaemonSets("kube-system").Create(ctx, ds, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	b, err := os.ReadFile(tc.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(kc, b, 0o600); err != nil {
		t.Fatal(err)
	}

	env, out, errb := multiEnv()
	deps := defaultWatchDeps()
	inspect := make(chan func([]*model.Cluster))
	deps.inspect = inspect
	code := make(chan int, 1)
	c := DefaultCommon()
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		code <- runWatchWith(wctx, env, &c, []string{"--kubeconfig", kc, "--until-done", "--tick", "50ms",
			"--request-timeout", "5s", "--sync-timeout", "30s", "--prometheus-url", prom.URL, "--prometheus-interval", "5s"}, deps)
	}()
	// waitPhase waits until the loop's model shows n1 in phase p.
	waitPhase := func(p model.Phase) {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for {
			var got model.Phase
			select {
			case inspect <- func(cl []*model.Cluster) {
				if cl[0] != nil {
					got = cl[0].Phase("n1")
				}
			}:
			case rc := <-code:
				t.Fatalf("watch exited (%d) while waiting for n1 %s:\n%s\n%s", rc, p, out.String(), errb.String())
			case <-time.After(time.Minute):
				t.Fatalf("watch loop unresponsive")
			}
			// The function runs on the loop; a second round trip orders us after it.
			select {
			case inspect <- func([]*model.Cluster) {}:
			case rc := <-code:
				t.Fatalf("watch exited (%d):\n%s", rc, out.String())
			}
			if got == p {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("n1 never reached %s (is %s):\n%s", p, got, out.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitPhase(model.PhaseDraining)

	// The reboot: a new boot id, Ready again.
	n, err := cs.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Status.NodeInfo.BootID = "boot-2"
	n.Status.Conditions[0].LastTransitionTime = metav1.NewTime(time.Now())
	if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPhase(model.PhaseRecovering)

	// kured releases.
	cur, err := cs.AppsV1().DaemonSets("kube-system").Get(ctx, "kured", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	delete(cur.Annotations, "weave.works/kured-node-lock")
	if _, err := cs.AppsV1().DaemonSets("kube-system").Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case rc := <-code:
		if rc != ExitOK {
			t.Fatalf("exit %d, want 0:\n%s\n%s", rc, out.String(), errb.String())
		}
	case <-time.After(time.Minute):
		t.Fatalf("--until-done did not exit after the release:\n%s", out.String())
	}
	txt := out.String()
	for _, want := range []string{
		"lock    kured:kube-system/kured held by n1 (held)",
		"node    n1 booted (boot id boot-1 → boot-2)",
		"phase   n1 draining → recovering",
		"lock    kured:kube-system/kured released by n1",
		"phase   n1 recovering → done",
		"done    done: 1 node(s) rebooted and done, every lock is free",
	} {
		if !strings.Contains(txt, want) {
			t.Fatalf("output lacks %q:\n%s", want, txt)
		}
	}
}

func mkNode(t *testing.T, cs kubernetes.Interface, name, boot string, readySince time.Time) {
	t.Helper()
	ctx := context.Background()
	n, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
		LastHeartbeatTime: metav1.NewTime(readySince), LastTransitionTime: metav1.NewTime(readySince)}}
	n.Status.NodeInfo = corev1.NodeSystemInfo{BootID: boot, MachineID: fmt.Sprintf("%032x", len(name)+len(boot)), OSImage: "os 1", KernelVersion: "k1"}
	if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}
