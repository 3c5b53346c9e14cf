package cli

import (
	"testing"

	"github.com/rebootwatch/rebootwatch/internal/testenv/testcluster"
)

// cliCluster returns the package's shared apiserver (TestMain runs
// testcluster.Main) for one real-cluster test. The commands read every
// node, kured's DaemonSet, fleetlock's Lease and the budgets and pods of
// every namespace, at fixed names, so the test has the cluster to itself
// (testcluster.SharedAlone: no t.Parallel, and those objects deleted
// before and after it). It also starts without the Events earlier tests
// left, since tests read the Events a release or reap records. What else
// a test creates cluster-wide (roles, CRDs' objects) it deletes itself.
func cliCluster(t *testing.T) *testcluster.Cluster {
	t.Helper()
	c := testcluster.SharedAlone(t)
	c.DeleteEvents(t)
	return c
}
