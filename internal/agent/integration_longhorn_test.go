package agent

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/rebootwatch/rebootwatch/internal/testenv/testcluster"
)

var (
	crdGVR    = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	volumeGVR = schema.GroupVersionResource{Group: "longhorn.io", Version: "v1beta2", Resource: "volumes"}
)

// createLonghorn installs the Longhorn volumes CRD (served, no status
// subresource) and one volume pvc-1 in longhorn-system with robustness.
func createLonghorn(t *testing.T, c *testcluster.Cluster, robustness string) {
	t.Helper()
	dyn, err := dynamic.NewForConfig(c.Admin)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := bg()
	defer cancel()
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": "volumes.longhorn.io"},
		"spec": map[string]any{
			"group": "longhorn.io",
			"names": map[string]any{"plural": "volumes", "singular": "volume", "kind": "Volume", "listKind": "VolumeList", "shortNames": []any{"lhv"}},
			"scope": "Namespaced",
			"versions": []any{map[string]any{
				"name": "v1beta2", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
			}},
		},
	}}
	if _, err := dyn.Resource(crdGVR).Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The shared cluster goes back to having no Longhorn: the other tests
	// expect it absent.
	t.Cleanup(func() { removeLonghorn(t, dyn) })
	if _, err := c.Client(t).CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "longhorn-system"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	vol := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "longhorn.io/v1beta2",
		"kind":       "Volume",
		"metadata":   map[string]any{"name": "pvc-1", "namespace": "longhorn-system"},
		"spec":       map[string]any{"numberOfReplicas": int64(3)},
		"status":     map[string]any{"robustness": robustness, "state": "attached", "currentNodeID": "n2"},
	}}
	eventually(t, "the volumes CRD serves", func() (bool, string) {
		ctx, cancel := bg()
		defer cancel()
		_, err := dyn.Resource(volumeGVR).Namespace("longhorn-system").Create(ctx, vol, metav1.CreateOptions{})
		if err != nil {
			return false, err.Error()
		}
		return true, ""
	})
}

// setLonghornRobustness sets pvc-1's status.robustness.
func setLonghornRobustness(t *testing.T, c *testcluster.Cluster, robustness string) {
	t.Helper()
	dyn, err := dynamic.NewForConfig(c.Admin)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := bg()
	defer cancel()
	r := dyn.Resource(volumeGVR).Namespace("longhorn-system")
	v, err := r.Get(ctx, "pvc-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(v.Object, robustness, "status", "robustness"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Update(ctx, v, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// removeLonghorn deletes the volumes CRD (and with it the volumes) and
// waits until it is gone.
func removeLonghorn(t *testing.T, dyn dynamic.Interface) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := dyn.Resource(crdGVR).Delete(ctx, "volumes.longhorn.io", metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("clean-up: delete the volumes CRD: %v", err)
		return
	}
	eventually(t, "the volumes CRD is gone", func() (bool, string) {
		_, err := dyn.Resource(crdGVR).Get(ctx, "volumes.longhorn.io", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		return false, fmt.Sprint(err)
	})
}
