package live

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rebootwatch/rebootwatch/internal/coord/suc/suctest"
	"github.com/rebootwatch/rebootwatch/internal/testenv/testcluster"
)

// The integration tests read the cluster whole (kube-system/kured, every
// node, every coordinator kind that is served), so they share one apiserver
// one at a time (testcluster.SharedAlone). Those that install a
// coordinator leave the apiserver as they found it (sucInstalled,
// coordinatorNamespace).
func TestMain(m *testing.M) { testcluster.Main(m) }

// sucInstalled installs SUC's Plan CRD on the shared apiserver and removes
// it (and so every Plan) when the test ends: SUC is read whenever its Plans
// are served, so a CRD left behind would change what the package's later
// tests read.
func sucInstalled(ctx context.Context, t *testing.T, tc *testcluster.Cluster) {
	t.Helper()
	if err := suctest.InstallCRD(ctx, tc.Dynamic(t)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := suctest.RemoveCRD(ctx, tc.Dynamic(t)); err != nil {
			t.Errorf("clean-up: %v", err)
		}
	})
}

// coordinatorNamespace is tc.Namespace for a test that writes a
// coordinator's Jobs (SUC) or Deployment (FLUO's operator) there: SharedAlone
// empties nodes, DaemonSets, pods and Leases, not those, and a failed SUC
// Job or FLUO's operator left behind would be read by the package's later
// tests. No controller-manager runs to delete a namespace's content, so the
// test deletes them itself when it ends (the namespace, empty, stays).
func coordinatorNamespace(t *testing.T, tc *testcluster.Cluster, prefix string) string {
	t.Helper()
	ns := tc.Namespace(t, prefix)
	cs := tc.Client(t)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		// Background: the objects go now. A Job's default (orphan) waits for
		// the garbage collector, and none runs here: the Job would stay,
		// being deleted, and the next test would read it (or not create it again).
		gone := metav1.DeleteOptions{PropagationPolicy: new(metav1.DeletePropagationBackground)}
		if err := cs.BatchV1().Jobs(ns).DeleteCollection(ctx, gone, metav1.ListOptions{}); err != nil {
			t.Errorf("clean-up: delete the Jobs of %s: %v", ns, err)
		}
		if err := cs.AppsV1().Deployments(ns).DeleteCollection(ctx, gone, metav1.ListOptions{}); err != nil {
			t.Errorf("clean-up: delete the Deployments of %s: %v", ns, err)
		}
	})
	return ns
}
