package suc_test

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
func sucCluster(ctx context.Context, t *testing.T) *testcluster.Cluster {
	t.Helper()
	c := testcluster.SharedAlone(t)
	if err := suctest.InstallCRD(ctx, c.Dynamic(t)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := suctest.RemoveCRD(ctx, c.Dynamic(t)); err != nil {
			t.Errorf("clean-up: %v", err)
		}
	})
	return c
}

// jobNamespace is c.Namespace for a test that creates Jobs there: they are
// deleted when it ends (no controller-manager runs to delete a namespace's
// content), since the next test counts the Jobs of every namespace.
func jobNamespace(t *testing.T, c *testcluster.Cluster, prefix string) string {
	t.Helper()
	ns := c.Namespace(t, prefix)
	cs := c.Client(t)
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
	})
	return ns
}
