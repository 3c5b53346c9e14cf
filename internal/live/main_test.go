package live

import (
	"testing"

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
func sucInstalled(t *testing.T, tc *testcluster.Cluster) {
	t.Helper()
	suctest.InstallCRDForTest(t, tc.Dynamic(t), tc.Client(t).Discovery())
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
	suctest.DeleteAtEnd(t, tc.Client(t), ns, true)
	return ns
}
