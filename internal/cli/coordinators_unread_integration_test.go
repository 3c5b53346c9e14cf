package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/rebootwatch/rebootwatch/internal/coord/suc/suctest"
	"github.com/rebootwatch/rebootwatch/model"
)

// --coordinators on a real apiserver, read by a user who may read the locks
// and the nodes but not system-upgrade-controller's Plans: the snapshot
// says the coordinators are unknown and exits 1 (could not read), never 0
// with "nothing stops the fleet".
func TestUnreadCoordinatorIsNeverNoneRealCluster(t *testing.T) {
	tc := cliCluster(t)
	cs := tc.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := suctest.InstallCRD(ctx, tc.Dynamic(t)); err != nil {
		t.Fatal(err)
	}
	mkNode(t, cs, "n1", "boot-1", time.Now().Add(-time.Hour))
	read := []string{"get", "list", "watch"}
	grantRules(t, cs, "alice", []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"nodes", "pods"}, Verbs: read},
		{APIGroups: []string{"apps"}, Resources: []string{"daemonsets", "deployments"}, Verbs: read},
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: read},
		{APIGroups: []string{"policy"}, Resources: []string{"poddisruptionbudgets"}, Verbs: read},
		{APIGroups: []string{"batch"}, Resources: []string{"jobs"}, Verbs: read},
		{APIGroups: []string{"longhorn.io"}, Resources: []string{"volumes"}, Verbs: read},
	})
	alice := []string{"--kubeconfig", kubeconfigCopy(t, tc), "--token", tc.UserConfig("alice").BearerToken,
		"--request-timeout", "5s", "--sync-timeout", "30s", "--coordinators"}
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
}
