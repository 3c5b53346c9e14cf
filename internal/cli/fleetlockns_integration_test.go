package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rebootwatch/rebootwatch/model"
)

// Issue 33 §2 on a real apiserver: fleetlock runs in its own namespace (its
// manifests set NAMESPACE from the pod's namespace) and holds a Lease there;
// nothing is in "default". The snapshot said "fleetlock not-installed", "no
// reboot lock found" and "nothing stops the fleet" without naming where it
// looked. Now the fleetlock source is an error naming fleetlock's
// Deployment, its Lease and the flag that reads them (exit 1: a lock may be
// held unread), and with --fleetlock-namespace the Lease is judged. With
// fleetlock nowhere, "no reboot lock found" says where each kind looked.
func TestFleetlockInAnotherNamespaceRealCluster(t *testing.T) {
	cl := cliCluster(t)
	cs := cl.Client(t)
	ctx := context.Background()
	now := time.Now().UTC()
	n, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker-1"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
		LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))}}
	n.Status.NodeInfo = corev1.NodeSystemInfo{BootID: "boot-w1", MachineID: "0123456789abcdef0123456789abcdef"}
	if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The lock-object kinds only: this package's shared cluster may hold
	// another test's SUC Plan CRD or FLUO operator, read by default and
	// listed among the slots (issue 32 §2).
	flags := []string{"--kubeconfig", kubeconfigCopy(t, cl), "--request-timeout", "5s", "--sync-timeout", "30s", "--coordinators=kured,fleetlock"}

	// Nowhere: where each kind looked.
	_, text := snapshotsAny(t, flags...)
	if !strings.Contains(text, "no reboot lock found") || !strings.Contains(text, `fleetlock: no fleetlock-* Lease in namespace "default", nor a fleetlock Deployment or fleetlock-* Lease in any other namespace`) ||
		!strings.Contains(text, "kured: no kured DaemonSet found") {
		t.Fatalf("nothing anywhere:\n%s", text)
	}

	ns := cl.Namespace(t, "fleetlock")
	labels := map[string]string{"app": "fleetlock"}
	if _, err := cs.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fleetlock"},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "fleetlock", Image: "quay.io/poseidon/fleetlock:v0.4.0",
				Env: []corev1.EnvVar{{Name: "NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}}}}}}}},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.AppsV1().Deployments(ns).Delete(context.Background(), "fleetlock", metav1.DeleteOptions{})
	})
	holder := "978a225b3d7b40e9acd7ce9b62f68444"
	if _, err := cs.CoordinationV1().Leases(ns).Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fleetlock-default"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder}}, metav1.CreateOptions{FieldManager: "fleetlock"}); err != nil {
		t.Fatal(err)
	}

	env, out, errb := multiEnv()
	code := run(ctx, append(append([]string{}, flags...), "--snapshot"), env)
	text = out.String()
	for _, w := range []string{`no fleetlock-* Lease in namespace "default"`, "Deployment " + ns + "/fleetlock runs fleetlock", "Lease " + ns + "/fleetlock-default",
		"pass --fleetlock-namespace " + ns} {
		if !strings.Contains(text, w) {
			t.Errorf("text lacks %q", w)
		}
	}
	if code != ExitError || strings.Contains(text, "nothing stops the fleet") || strings.Contains(text, "no reboot lock found") {
		t.Fatalf("fleetlock elsewhere: exit %d\n%s\n%s", code, text, errb.String())
	}
	if t.Failed() {
		t.Logf("text:\n%s", text)
	}

	snap, _ := snapshotsAny(t, append(flags, "--fleetlock-namespace", ns)...)
	if len(snap.Locks) != 1 || snap.Locks[0].Holder != holder {
		t.Fatalf("with --fleetlock-namespace %s: locks %+v", ns, snap.Locks)
	}
}

// snapshotsAny is a JSON and a text --snapshot with flags, whatever their
// exit code.
func snapshotsAny(t *testing.T, flags ...string) (model.Snapshot, string) {
	t.Helper()
	ctx := context.Background()
	env, out, errb := multiEnv()
	run(ctx, append(append([]string{}, flags...), "--snapshot", "-o", "json"), env)
	var snap model.Snapshot
	if err := json.Unmarshal([]byte(out.String()), &snap); err != nil {
		t.Fatalf("snapshot: %v\n%s\n%s", err, out.String(), errb.String())
	}
	env, out, _ = multiEnv()
	run(ctx, append(append([]string{}, flags...), "--snapshot"), env)
	return snap, out.String()
}
