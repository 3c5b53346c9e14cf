package suc_test

import (
	"testing"

	"github.com/rebootwatch/rebootwatch/internal/coord/suc/suctest"
	"github.com/rebootwatch/rebootwatch/internal/testenv/testcluster"
)

// The integration tests read every node, Plan and Job, so they share one
// apiserver one at a time (testcluster.SharedAlone, via sucCluster) and
// leave it as they found it.
func TestMain(m *testing.M) { testcluster.Main(m) }

// sucCluster is the shared apiserver for a test that reads cluster-wide
// (SharedAlone: its nodes are deleted when it ends), with SUC's Plan CRD
// installed, removed (with every Plan) when the test ends.
func sucCluster(t *testing.T) *testcluster.Cluster {
	t.Helper()
	c := testcluster.SharedAlone(t)
	suctest.InstallCRDForTest(t, c.Dynamic(t), c.Client(t).Discovery())
	return c
}

// jobNamespace is c.Namespace for a test that creates Jobs there: they are
// deleted when it ends (no controller-manager runs to delete a namespace's
// content), since the next test counts the Jobs of every namespace.
func jobNamespace(t *testing.T, c *testcluster.Cluster, prefix string) string {
	t.Helper()
	ns := c.Namespace(t, prefix)
	suctest.DeleteAtEnd(t, c.Client(t), ns, false)
	return ns
}
