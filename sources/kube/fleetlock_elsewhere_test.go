package kube

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/rebootwatch/rebootwatch/model"
)

// fleetlockDeployment runs fleetlock's image in ns; namespace is its
// NAMESPACE env: "fieldRef" for the pod's own namespace, "" for none.
func fleetlockDeployment(ns, namespace string) *appsv1.Deployment {
	c := corev1.Container{Name: "fleetlock", Image: "quay.io/poseidon/fleetlock:v0.4.0"}
	switch namespace {
	case "fieldRef":
		c.Env = []corev1.EnvVar{{Name: "NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}}
	case "":
	default:
		c.Env = []corev1.EnvVar{{Name: "NAMESPACE", Value: namespace}}
	}
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fleetlock"},
		Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{c}}}}}
}

// Issue 33 §2: fleetlock keeps its Leases in its own NAMESPACE. With none in
// the namespace read, the source said not-installed ("nothing stops the
// fleet") without naming where it looked; fleetlock deployed elsewhere, or
// fleetlock-* Leases elsewhere, make it an error that names them (the
// fleet's lock may be there, unread), and with nothing anywhere it says it
// looked everywhere it could.
func TestFleetlockElsewhere(t *testing.T) {
	for _, tc := range []struct {
		name   string
		objs   []runtime.Object
		forbid string // a resource whose cluster-wide list is forbidden
		status model.SourceStatus
		words  []string
	}{
		{name: "deployed in another namespace", objs: []runtime.Object{fleetlockDeployment("fl", "fieldRef"), lease("fl", "fleetlock-default", "978a225b3d7b40e9acd7ce9b62f68444")},
			status: model.StatusError, words: []string{`no fleetlock-* Lease in namespace "default"`, `Deployment fl/fleetlock runs fleetlock, its Leases in "fl"`,
				"Lease fl/fleetlock-default", "pass --fleetlock-namespace fl"}},
		{name: "its NAMESPACE names another", objs: []runtime.Object{fleetlockDeployment("ops", "locks")},
			status: model.StatusError, words: []string{`Deployment ops/fleetlock runs fleetlock, its Leases in "locks"`, "pass --fleetlock-namespace locks"}},
		{name: "deployed elsewhere, Leases in default (NAMESPACE unset)", objs: []runtime.Object{fleetlockDeployment("ops", "")},
			status: model.StatusNotInstalled, words: []string{`no fleetlock-* Lease in namespace "default", nor a fleetlock Deployment or fleetlock-* Lease in any other namespace`}},
		{name: "a fleetlock Lease elsewhere only", objs: []runtime.Object{lease("tenant", "fleetlock-default", "x")},
			status: model.StatusError, words: []string{"Lease tenant/fleetlock-default"}},
		{name: "nothing anywhere", objs: []runtime.Object{lease("kube-system", "kube-scheduler", "x")},
			status: model.StatusNotInstalled, words: []string{"nor a fleetlock Deployment or fleetlock-* Lease in any other namespace"}},
		{name: "other namespaces forbidden", forbid: "deployments",
			status: model.StatusNotInstalled, words: []string{`no fleetlock-* Lease in namespace "default"; other namespaces not searched (deployments.apps in all namespaces:`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := fake.NewClientset(append([]runtime.Object{node("w-1", true, nil)}, tc.objs...)...)
			if tc.forbid != "" {
				cs.PrependReactor("list", tc.forbid, func(a k8stesting.Action) (bool, runtime.Object, error) {
					if a.GetNamespace() != "" {
						return false, nil, nil
					}
					return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: tc.forbid}, "", nil)
				})
			}
			r, _ := start(t, cs, Options{})
			r.Eventually(t, "fleetlock settled", func(c *model.Cluster) bool {
				h, ok := c.Source(model.SourceFleetlock)
				return ok && h.Status == tc.status
			})
			h := r.Source(model.SourceFleetlock)
			for _, w := range tc.words {
				if !strings.Contains(h.Message, w) {
					t.Errorf("message %q lacks %q", h.Message, w)
				}
			}
		})
	}
}
