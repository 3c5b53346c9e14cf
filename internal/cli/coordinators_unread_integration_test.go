package cli

import (
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/rebootwatch/rebootwatch/model"
)

// On a real apiserver with SUC's Plans served, read (by default: issue 32
// §2) by a user who may read the locks and the nodes but not
// system-upgrade-controller's Plans: the snapshot says the coordinators
// are unknown and exits 1 (could not read), never 0 with "nothing stops
// the fleet". Without the CRD the same user reads SUC as not-installed and
// exits 0; a user who may not list Deployments cannot tell whether FLUO's
// operator is there (no node carries its agent's label): flatcar
// forbidden, exit 1, never not-installed.
func TestUnreadCoordinatorIsNeverNoneRealCluster(t *testing.T) {
	tc := cliCluster(t)
	cs := tc.Client(t)
	mkNode(t, cs, "n1", "boot-1", time.Now().Add(-time.Hour))
	read := []string{"get", "list", "watch"}
	grantRules(t, tc, "alice", []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"nodes", "pods"}, Verbs: read},
		{APIGroups: []string{"apps"}, Resources: []string{"daemonsets", "deployments"}, Verbs: read},
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: read},
		{APIGroups: []string{"policy"}, Resources: []string{"poddisruptionbudgets"}, Verbs: read},
		{APIGroups: []string{"batch"}, Resources: []string{"jobs"}, Verbs: read},
		{APIGroups: []string{"longhorn.io"}, Resources: []string{"volumes"}, Verbs: read},
	})
	alice := []string{"--kubeconfig", kubeconfigCopy(t, tc), "--token", tc.UserConfig("alice").BearerToken,
		"--request-timeout", "5s", "--sync-timeout", "30s"}
	if code, snap, text, stderr := unreadSnapshot(t, alice); code != ExitOK || len(snap.Unread) != 0 {
		t.Fatalf("without SUC: exit %d, unread %+v, want 0\n%s\n%s", code, snap.Unread, text, stderr)
	}
	sucInstalled(t, tc)
	code, snap, text, stderr := unreadSnapshot(t, alice)
	if code != ExitError {
		t.Fatalf("exit %d, want %d (could not read)\n%s\n%s", code, ExitError, text, stderr)
	}
	why, ok := model.UnreadReason(snap.Unread, "coordinators")
	if !ok || !strings.Contains(why, "suc forbidden") {
		t.Errorf("unread %+v", snap.Unread)
	}
	if why, ok := model.UnreadReason(snap.Unread, "fleet.blockers"); !ok || !strings.Contains(why, "coordinators unknown: suc forbidden") {
		t.Errorf("unread %+v", snap.Unread)
	}
	if strings.Contains(text, "nothing stops the fleet") || !strings.Contains(text, "coordinators unknown: suc forbidden") {
		t.Errorf("text:\n%s", text)
	}

	// bob may read all but Deployments: FLUO's operator cannot be looked
	// for, so whether FLUO is installed is unknown.
	grantRules(t, tc, "bob", []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"nodes", "pods"}, Verbs: read},
		{APIGroups: []string{"apps"}, Resources: []string{"daemonsets"}, Verbs: read},
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: read},
		{APIGroups: []string{"policy"}, Resources: []string{"poddisruptionbudgets"}, Verbs: read},
		{APIGroups: []string{"batch"}, Resources: []string{"jobs"}, Verbs: read},
		{APIGroups: []string{"upgrade.cattle.io"}, Resources: []string{"plans"}, Verbs: read},
		{APIGroups: []string{"longhorn.io"}, Resources: []string{"volumes"}, Verbs: read},
	})
	bob := []string{"--kubeconfig", kubeconfigCopy(t, tc), "--token", tc.UserConfig("bob").BearerToken,
		"--request-timeout", "5s", "--sync-timeout", "30s"}
	code, snap, text, stderr = unreadSnapshot(t, bob)
	why, ok = model.UnreadReason(snap.Unread, "coordinators")
	if code != ExitError || !ok || !strings.Contains(why, "flatcar forbidden") || strings.Contains(why, "suc") {
		t.Errorf("bob: exit %d, unread %+v\n%s\n%s", code, snap.Unread, text, stderr)
	}
	// Left out, FLUO is not read: nothing unread.
	code, snap, text, stderr = unreadSnapshot(t, append(bob, "--coordinators=kured,fleetlock,suc"))
	if code != ExitOK || len(snap.Unread) != 0 {
		t.Errorf("bob --coordinators=kured,fleetlock,suc: exit %d, unread %+v\n%s\n%s", code, snap.Unread, text, stderr)
	}
}
