package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rebootwatch/rebootwatch/internal/testenv/gobuild"
	"github.com/rebootwatch/rebootwatch/internal/testenv/testcluster"
	"github.com/rebootwatch/rebootwatch/model"
)

// TestKubectlPluginSnapshotRealCluster runs `kubectl rebootwatch --snapshot`
// with a real kubectl (built from the pinned k8s.io/kubernetes, as the test
// apiserver is) that finds this plugin on the PATH, against a real
// apiserver holding a ghost fleetlock Lease: kubectl's kubeconfig flags,
// KUBECONFIG, --context and --token reach the plugin and mean what they
// mean to kubectl.
func TestKubectlPluginSnapshotRealCluster(t *testing.T) {
	bins := testcluster.Require(t, "etcd", "kube-apiserver", "kubectl")
	kubectl := bins[2]
	tc := testcluster.Start(t)
	cs := tc.Client(t)
	ctx := context.Background()

	n, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker-1"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
		LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.NewTime(time.Now().Add(-time.Hour))}}
	n.Status.NodeInfo = corev1.NodeSystemInfo{BootID: "boot-1", MachineID: "2c09ca98649c4c7abc779cd04c96812e", OSImage: "Fedora CoreOS 43", KernelVersion: "6.17"}
	if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// fleetlock's Lease held by a node that does not exist: a ghost.
	ghost := "6f5b3af6de0374366c4719e43a1b067d"
	if _, err := cs.CoordinationV1().Leases("default").Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "fleetlock-default"},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &ghost}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// The plugin, built from this package, on a PATH of its own.
	// (gobuild's cache holds the other commands too: a link here, not its
	// directory, is what the PATH names.)
	dir := t.TempDir()
	if err := os.Symlink(gobuild.Command(t, "./cmd/kubectl-rebootwatch"), filepath.Join(dir, "kubectl-rebootwatch")); err != nil {
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
	home := t.TempDir() // no ~/.kube/config to fall back on
	kubectlRun := func(env []string, args ...string) (int, string, string) {
		t.Helper()
		cmd := exec.Command(kubectl, args...)
		cmd.Env = append([]string{"PATH=" + dir + string(os.PathListSeparator) + os.Getenv("PATH"), "HOME=" + home}, env...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("kubectl %v: %v", args, err)
		}
		return code, out.String(), errb.String()
	}
	snapshot := func(name, stdout string) model.Snapshot {
		t.Helper()
		var s model.Snapshot
		if err := json.Unmarshal([]byte(stdout), &s); err != nil {
			t.Fatalf("%s: %v\n%s", name, err, stdout)
		}
		return s
	}
	ghostSeen := func(s model.Snapshot) bool {
		for _, l := range s.Locks {
			if l.Kind == model.LockFleetlock && l.Name == "fleetlock-default" && l.Verdict == model.VerdictGhost && l.Holder == ghost {
				return true
			}
		}
		return false
	}
	flags := []string{"--snapshot", "-o", "json", "--request-timeout", "5s", "--sync-timeout", "30s"}

	// kubectl's --kubeconfig and --context, after the plugin's name.
	code, out, errOut := kubectlRun(nil, append([]string{"rebootwatch", "--kubeconfig", kc, "--context", "testcluster"}, flags...)...)
	if s := snapshot("--kubeconfig", out); code != 2 || s.Context != "testcluster" || len(s.Nodes) != 1 || !ghostSeen(s) {
		t.Fatalf("kubectl rebootwatch --kubeconfig: exit %d, want 2 (the ghost Lease)\n%s\nstderr: %s", code, out, errOut)
	}
	// The text report, as a person runs it.
	code, out, errOut = kubectlRun(nil, "rebootwatch", "--kubeconfig", kc, "--snapshot")
	t.Logf("$ kubectl rebootwatch --kubeconfig KC --snapshot  # exit %d\n%s%s", code, out, errOut)
	if code != 2 || !strings.Contains(out, "fleetlock-default") || !strings.Contains(out, "ghost") {
		t.Fatalf("kubectl rebootwatch --snapshot: exit %d\n%s\nstderr: %s", code, out, errOut)
	}
	// KUBECONFIG, as kubectl passes its environment to plugins.
	code, out, errOut = kubectlRun([]string{"KUBECONFIG=" + kc}, append([]string{"rebootwatch"}, flags...)...)
	if s := snapshot("KUBECONFIG", out); code != 2 || !ghostSeen(s) {
		t.Fatalf("KUBECONFIG=… kubectl rebootwatch: exit %d\n%s\nstderr: %s", code, out, errOut)
	}
	// --token: a user the apiserver knows but RBAC grants nothing reads no
	// node: exit 1, the nodes source forbidden.
	alice := tc.UserConfig("alice").BearerToken
	code, out, errOut = kubectlRun(nil, append([]string{"rebootwatch", "--kubeconfig", kc, "--token", alice}, flags...)...)
	if s := snapshot("--token", out); code != 1 || !strings.Contains(errOut, "forbidden") || !sourceIs(s, model.SourceNodes, model.StatusForbidden) {
		t.Fatalf("--token alice: exit %d, want 1 (forbidden)\n%s\nstderr: %s", code, out, errOut)
	}
	// Help and usage errors name the command as kubectl's user typed it.
	code, out, _ = kubectlRun(nil, "rebootwatch", "--help")
	if code != 0 || !strings.Contains(out, "kubectl rebootwatch [flags]") || !strings.Contains(out, "--kubeconfig") {
		t.Fatalf("kubectl rebootwatch --help: exit %d\n%s", code, out)
	}
	code, _, errOut = kubectlRun(nil, "rebootwatch", "--nope")
	if code != 1 || errOut != "error: unknown flag: --nope\nSee 'kubectl rebootwatch --help' for usage.\n" {
		t.Fatalf("kubectl rebootwatch --nope: exit %d, stderr %q", code, errOut)
	}
}

func sourceIs(s model.Snapshot, name model.SourceName, status model.SourceStatus) bool {
	for _, src := range s.Sources {
		if src.Name == name {
			return src.Status == status
		}
	}
	return false
}
