package suctest

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// InstallCRDForTest installs the Plan CRD and removes it (and so every Plan)
// when t ends: SUC is read wherever its Plans are served, so a CRD left on a
// shared apiserver would change what later tests read.
func InstallCRDForTest(t testing.TB, dyn dynamic.Interface, d discovery.DiscoveryInterface) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := InstallCRD(ctx, dyn, d); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := RemoveCRD(ctx, dyn, d); err != nil {
			t.Errorf("clean-up: %v", err)
		}
	})
}

// DeleteAtEnd deletes, when t ends, the Jobs (SUC's) and, with
// deployments, the Deployments (FLUO's operator) of namespace ns. No
// controller-manager runs beside a test apiserver, so nothing else deletes a
// namespace's content; and the deletion is Background, because a Job's
// default (orphan) waits for the garbage collector: the Job would stay,
// being deleted, and the next test would read it (or fail to create it
// again).
func DeleteAtEnd(t testing.TB, c kubernetes.Interface, ns string, deployments bool) {
	t.Helper()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		gone := metav1.DeleteOptions{PropagationPolicy: new(metav1.DeletePropagationBackground)}
		if err := c.BatchV1().Jobs(ns).DeleteCollection(ctx, gone, metav1.ListOptions{}); err != nil {
			t.Errorf("clean-up: delete the Jobs of %s: %v", ns, err)
		}
		if !deployments {
			return
		}
		if err := c.AppsV1().Deployments(ns).DeleteCollection(ctx, gone, metav1.ListOptions{}); err != nil {
			t.Errorf("clean-up: delete the Deployments of %s: %v", ns, err)
		}
	})
}
