package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// Issue 33 §3 on a real apiserver: kured's holder worker-1 rebooted 12
// minutes ago and was uncordoned by hand as kubectl does (a patch that
// removes spec.unschedulable: no managedFields entry dates it), and the
// lock is still held. With kured's pod missing, a one-shot --snapshot said
// "held … since when is unknown", exit 0, for ever; it is orphaned (exit 2)
// now. Where kured's pod runs it stays held; where pods cannot be read
// (forbidden) their absence is no evidence, and it stays held.
func TestKuredUncordonedHolderRealCluster(t *testing.T) {
	for _, tc := range []struct {
		name    string
		pod     bool // kured's pod runs on worker-1
		carol   bool // read as a user who may not list pods
		verdict string
		reason  []string
	}{
		{name: "missing", verdict: "orphaned", reason: []string{"kured on worker-1 is not running 12m after the reboot", "kured's pod on worker-1 is missing"}},
		{name: "running", pod: true, verdict: "held", reason: []string{"since when is unknown"}},
		{name: "pods forbidden", carol: true, verdict: "held", reason: []string{"since when is unknown"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl := cliCluster(t)
			cs := cl.Client(t)
			ctx := context.Background()
			wedgeWorldAt(t, cs, "", 12*time.Minute)
			// kubectl uncordon: a patch that removes the field.
			n, err := cs.CoreV1().Nodes().Patch(ctx, "worker-1", types.StrategicMergePatchType, []byte(`{"spec":{"unschedulable":null}}`),
				metav1.PatchOptions{FieldManager: "kubectl-cordon"})
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range n.ManagedFields {
				if m.FieldsV1 != nil && strings.Contains(m.FieldsV1.GetRawString(), "unschedulable") {
					t.Fatalf("a managedFields entry still dates spec.unschedulable: %s %s", m.Manager, m.FieldsV1.GetRawString())
				}
			}
			if n.Spec.Unschedulable {
				t.Fatal("worker-1 still cordoned")
			}
			if tc.pod {
				runningKuredPod(t, cs, "kured-w1", "worker-1", time.Now().Add(-11*time.Minute))
			}
			flags := []string{"--kubeconfig", kubeconfigCopy(t, cl), "--orphan-grace", "1m", "--request-timeout", "5s", "--sync-timeout", "30s"}
			if tc.carol {
				grantNamed(t, cl, "carol-nopods", "carol", []rbacv1.PolicyRule{
					{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list", "watch"}},
					{APIGroups: []string{"apps"}, Resources: []string{"daemonsets"}, Verbs: []string{"get", "list", "watch"}},
					{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "list", "watch"}}})
				flags = append(flags, "--token", cl.UserConfig("carol").BearerToken)
			}
			env, out, errb := multiEnv()
			code := run(ctx, append(append([]string{}, flags...), "--snapshot", "-o", "json"), env)
			var snap wedgeSnapshot
			if err := json.Unmarshal([]byte(out.String()), &snap); err != nil {
				t.Fatalf("snapshot: %v\n%s\n%s", err, out.String(), errb.String())
			}
			if len(snap.Locks) != 1 || snap.Locks[0].Verdict != tc.verdict {
				t.Fatalf("exit %d, locks %+v\n%s", code, snap.Locks, errb.String())
			}
			for _, w := range tc.reason {
				if !strings.Contains(snap.Locks[0].Reason, w) {
					t.Errorf("reason %q lacks %q", snap.Locks[0].Reason, w)
				}
			}
			switch {
			case tc.verdict == "orphaned" && (code != ExitAttention || strings.Join(snap.Locks[0].Actions, ",") != "release" ||
				len(snap.Fleet.Blockers) == 0 || snap.Fleet.Blockers[0].Node != "worker-1"):
				t.Fatalf("orphaned: exit %d, actions %v, fleet blockers %+v", code, snap.Locks[0].Actions, snap.Fleet.Blockers)
			case tc.pod && code != ExitOK:
				t.Fatalf("kured runs on worker-1: exit %d\n%s", code, out.String())
			}
		})
	}
}

// runningKuredPod puts a running, Ready pod of kube-system/kured on node,
// started at started.
func runningKuredPod(t *testing.T, cs kubernetes.Interface, name, node string, started time.Time) {
	t.Helper()
	ctx := context.Background()
	ds, err := cs.AppsV1().DaemonSets("kube-system").Get(ctx, "kured", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	yes := true
	p, err := cs.CoreV1().Pods("kube-system").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: name,
		Labels:          ds.Spec.Template.Labels,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "kured", UID: ds.UID, Controller: &yes}}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "kured", Image: "ghcr.io/kubereboot/kured:1.17.1"}}}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "kured", Image: "ghcr.io/kubereboot/kured:1.17.1", Ready: true,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(started)}}}}}
	if _, err := cs.CoreV1().Pods("kube-system").UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}
