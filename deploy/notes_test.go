package deploy

import (
	"context"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rebootwatch/rebootwatch/internal/testenv/testcluster"
)

// TestHelmNotesNameFleetlockGroups (issue 34 §1): the agent may write only
// the fleetlock Leases of fleetlock.groups (RBAC cannot grant
// "fleetlock-*"), so the install's notes name the groups covered and, as
// `helm install` reads the cluster, warn of a fleetlock Lease whose group is
// not listed, with the --set that covers it. Other Leases of the namespace
// are not fleetlock's and are not named. Without a cluster (`helm install
// --dry-run`, client side) the notes still name the groups covered.
func TestHelmNotesNameFleetlockGroups(t *testing.T) {
	helmBin(t)
	c := testcluster.SharedAlone(t) // its Leases are deleted when it ends
	cs := c.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, name := range []string{"fleetlock-default", "fleetlock-workers", "some-controller-leader"} {
		if _, err := cs.CoordinationV1().Leases("default").Create(ctx,
			&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	install := func(dryRun string, set ...string) string {
		t.Helper()
		v := defaultValues
		v.set = set
		args := append([]string{"install", v.release, chartDir, "--dry-run=" + dryRun, "--kubeconfig", c.Kubeconfig}, v.args()...)
		out, err := runHelm(t, args...)
		if err != nil {
			t.Fatalf("helm %v: %v\n%s", args, err, out)
		}
		i := strings.Index(out, "NOTES:")
		if i < 0 {
			t.Fatalf("helm %v: no NOTES:\n%s", args, out)
		}
		return out[i:]
	}

	notes := install("server")
	for _, want := range []string{
		"ghcr.io/rebootwatch/rebootwatch-agent:latest (pull policy Always)",
		"only the Leases of the groups in fleetlock.groups: fleetlock-default.",
		"WARNING: namespace default holds the Lease of group(s) workers, not in fleetlock.groups",
		"--set 'fleetlock.groups={default,workers}'",
	} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes, fleetlock-workers uncovered: no %q in\n%s", want, notes)
		}
	}
	if strings.Contains(notes, "some-controller-leader") {
		t.Errorf("notes name a Lease that is not fleetlock's:\n%s", notes)
	}

	notes = install("server", "fleetlock.groups={default,workers}")
	if !strings.Contains(notes, "fleetlock.groups: fleetlock-default, fleetlock-workers.") || strings.Contains(notes, "WARNING") {
		t.Errorf("notes, every group covered:\n%s", notes)
	}

	notes = install("client")
	if !strings.Contains(notes, "fleetlock.groups: fleetlock-default.") || strings.Contains(notes, "WARNING") {
		t.Errorf("notes without a cluster to read:\n%s", notes)
	}
}
