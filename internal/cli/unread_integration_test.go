package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rebootwatch/rebootwatch/internal/testenv/testcluster"
	"github.com/rebootwatch/rebootwatch/model"
)

// grantRules binds a ClusterRole of rules to one of the test cluster's
// token users.
func grantRules(t *testing.T, tc *testcluster.Cluster, user string, rules []rbacv1.PolicyRule) {
	t.Helper()
	grantNamed(t, tc, "unread-"+user, user, rules)
}

// grantNamed binds a ClusterRole name of rules to user, and waits until
// the authorizer allows the user one request of each rule (it authorizes
// from a cache, which can lag the write). The grant ends with the test
// (ungrant).
func grantNamed(t *testing.T, tc *testcluster.Cluster, name, user string, rules []rbacv1.PolicyRule) {
	t.Helper()
	cs := tc.Client(t)
	ctx := context.Background()
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: name},
		Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: user}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ungrant(t, tc, name, user, rules) })
	for _, a := range testcluster.RuleAttributes("", rules) {
		tc.WaitAllowed(t, user, a)
	}
}

// ungrant deletes the ClusterRole and ClusterRoleBinding name and waits
// until the authorizer refuses user each of the rules again: the shared
// cluster's token users go back to no grants, for the next test that
// relies on a refusal (alice reads Jobs in one test, and may not in the
// next).
func ungrant(t *testing.T, tc *testcluster.Cluster, name, user string, rules []rbacv1.PolicyRule) {
	t.Helper()
	cs := tc.Client(t)
	ctx := context.Background()
	if err := cs.RbacV1().ClusterRoleBindings().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Errorf("clean-up: %v", err)
	}
	if err := cs.RbacV1().ClusterRoles().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Errorf("clean-up: %v", err)
	}
	for _, a := range testcluster.RuleAttributes("", rules) {
		tc.WaitDenied(t, user, a)
	}
}

// unreadSnapshot runs --snapshot as JSON and as text with flags.
func unreadSnapshot(t *testing.T, flags []string) (code int, snap model.Snapshot, text, stderr string) {
	t.Helper()
	env, out, errb := multiEnv()
	code = run(context.Background(), append(append([]string{}, flags...), "--snapshot", "-o", "json"), env)
	if err := json.Unmarshal([]byte(out.String()), &snap); err != nil {
		t.Fatalf("snapshot exit %d: %v\n%s\n%s", code, err, out.String(), errb.String())
	}
	env, out, errb = multiEnv()
	if c := run(context.Background(), append(append([]string{}, flags...), "--snapshot"), env); c != code {
		t.Fatalf("text exit %d, json exit %d", c, code)
	}
	return code, snap, out.String(), errb.String()
}

// Issue 22 §4 on a real apiserver: never claim what was not read. A user
// who may read the nodes but not the DaemonSets or the Leases (kured runs,
// unseen) gets "locks unknown" and why, from the text report, the JSON,
// the final stderr line, reap and watch --until-done; and so does
// --kured-daemonset naming nothing.
func TestUnreadLocksAreNeverNoneRealCluster(t *testing.T) {
	tc := cliCluster(t)
	cs := tc.Client(t)
	mkNode(t, cs, "n1", "boot-1", time.Now().Add(-time.Hour))
	blkKured(t, cs, "", time.Time{})
	grantRules(t, tc, "alice", []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list", "watch"}}})
	kc := kubeconfigCopy(t, tc)
	alice := []string{"--kubeconfig", kc, "--token", tc.UserConfig("alice").BearerToken, "--request-timeout", "5s", "--sync-timeout", "30s"}

	t.Run("snapshot", func(t *testing.T) {
		code, snap, text, stderr := unreadSnapshot(t, alice)
		if code != ExitError || len(snap.Nodes) != 1 {
			t.Fatalf("exit %d nodes %d, want 1 and n1\n%s", code, len(snap.Nodes), stderr)
		}
		why, ok := model.UnreadReason(snap.Unread, "locks")
		if !ok || !strings.Contains(why, "kured forbidden (cannot list daemonsets.apps") || !strings.Contains(why, "fleetlock forbidden (cannot list leases") {
			t.Fatalf("unread %+v", snap.Unread)
		}
		if why, ok := model.UnreadReason(snap.Unread, "fleet.blockers"); !ok || !strings.HasPrefix(why, "cannot tell what blocks the fleet: locks unknown: kured forbidden") {
			t.Fatalf("unread %+v", snap.Unread)
		}
		for _, bad := range []string{"no reboot lock found", "nothing stops the fleet"} {
			if strings.Contains(text, bad) {
				t.Errorf("text claims %q:\n%s", bad, text)
			}
		}
		for _, want := range []string{"LOCKS\n  locks unknown: kured forbidden (cannot list daemonsets.apps", "fleetlock forbidden (cannot list leases.coordination.k8s.io",
			"cannot tell what blocks the fleet: locks unknown: kured forbidden"} {
			if !strings.Contains(text, want) {
				t.Errorf("text lacks %q:\n%s", want, text)
			}
		}
		// The final line names the real failure: the node list was received.
		last := lastLine(stderr)
		if strings.Contains(stderr, "no node list was received") || !strings.Contains(last, "could not read the cluster") ||
			!strings.Contains(last, "kured forbidden: cannot list daemonsets.apps") || !strings.Contains(last, "fleetlock forbidden") {
			t.Fatalf("stderr:\n%s", stderr)
		}
	})

	t.Run("reap", func(t *testing.T) {
		env, out, errb := multiEnv()
		code := run(context.Background(), append(append([]string{}, alice...), "reap", "--kind", "kured", "--yes"), env)
		if code != ExitError || strings.Contains(errb.String(), "no kured lock found") ||
			!strings.Contains(errb.String(), "cannot tell whether there is a kured lock: locks unknown: kured forbidden (cannot list daemonsets.apps") {
			t.Fatalf("reap exit %d\n%s\n%s", code, out.String(), errb.String())
		}
	})

	t.Run("watch until-done", func(t *testing.T) {
		env, out, errb := multiEnv()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		code := make(chan int, 1)
		go func() {
			code <- run(ctx, append(append([]string{}, alice...), "watch", "--until-done", "--tick", "50ms"), env)
		}()
		deadline := time.Now().Add(time.Minute)
		for !strings.Contains(out.String(), "cannot tell whether the window is done: locks unknown: kured forbidden") {
			select {
			case rc := <-code:
				t.Fatalf("watch ended (%d) with the locks unread:\n%s\n%s", rc, out.String(), errb.String())
			case <-time.After(20 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				t.Fatalf("watch never said what it cannot read:\n%s\n%s", out.String(), errb.String())
			}
		}
		cancel() // the operator's Ctrl-C
		if rc := <-code; rc != ExitInterrupted {
			t.Fatalf("interrupted watch exit %d, want 130", rc)
		}
		txt := out.String()
		if strings.Contains(txt, "no lock held") || strings.Contains(txt, " done    ") || !strings.Contains(txt, "locks unknown: kured forbidden") {
			t.Fatalf("watch output:\n%s", txt)
		}
	})

	t.Run("kured-daemonset names nothing", func(t *testing.T) {
		admin := []string{"--kubeconfig", kc, "--kured-daemonset", "kube-system/nope", "--request-timeout", "5s", "--sync-timeout", "30s"}
		code, snap, text, stderr := unreadSnapshot(t, admin)
		if code != ExitError || len(snap.Locks) != 0 {
			t.Fatalf("exit %d locks %+v\n%s", code, snap.Locks, stderr)
		}
		if !strings.Contains(text, "locks unknown: kured error (DaemonSet kube-system/nope not found (named by --kured-daemonset))") ||
			strings.Contains(text, "no reboot lock found") || strings.Contains(text, "nothing stops the fleet") {
			t.Fatalf("text:\n%s", text)
		}
		if last := lastLine(stderr); !strings.Contains(last, "kured error: DaemonSet kube-system/nope not found") {
			t.Fatalf("stderr:\n%s", stderr)
		}
		env, out, errb := multiEnv()
		code = run(context.Background(), append(append([]string{}, admin...), "reap", "--kind", "kured", "--yes"), env)
		if code != ExitError || !strings.Contains(errb.String(), "cannot tell whether there is a kured lock: locks unknown: kured error") {
			t.Fatalf("reap exit %d\n%s\n%s", code, out.String(), errb.String())
		}
	})
}

func lastLine(s string) string {
	ls := strings.Split(strings.TrimSpace(s), "\n")
	return ls[len(ls)-1]
}
