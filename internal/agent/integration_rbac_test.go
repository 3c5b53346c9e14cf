package agent

import (
	"context"
	"fmt"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// TestIntegrationRBACDenies asks the API server, with the agent's own
// TokenRequest token, what deploy/'s RBAC lets it do: everything it uses,
// and nothing around it (secrets, deleting nodes, other leases, other
// DaemonSets, pods).
func TestIntegrationRBACDenies(t *testing.T) {
	c, _, token := setup(t)
	cs, err := kubernetes.NewForConfig(tokenConfig(c, token))
	if err != nil {
		t.Fatal(err)
	}
	type check struct {
		verb, group, resource, ns, name string
		allowed                         bool
	}
	for _, ck := range []check{
		// What the agent uses.
		{"list", "", "nodes", "", "", true},
		{"watch", "", "nodes", "", "", true},
		{"update", "coordination.k8s.io", "leases", "default", "fleetlock-default", true},
		{"list", "coordination.k8s.io", "leases", "default", "", true},
		{"update", "apps", "daemonsets", "kube-system", "kured", true},
		{"list", "apps", "daemonsets", "kube-system", "kured", true},
		{"create", "", "events", "kube-system", "", true},
		{"create", "", "events", "default", "", true},
		{"list", "", "events", "kube-system", "", true},
		{"list", "", "events", "default", "", true},
		{"update", "coordination.k8s.io", "leases", "rebootwatch", "rebootwatch-agent", true},
		{"list", "longhorn.io", "volumes", "longhorn-system", "", true},
		// The blockers' inputs: budgets, and pods (selected by node or label).
		{"list", "policy", "poddisruptionbudgets", "", "", true},
		{"watch", "policy", "poddisruptionbudgets", "", "", true},
		{"list", "", "pods", "", "", true},
		{"watch", "", "pods", "", "", true},
		// The uncordon that goes with a fleetlock release (deploy/rbac.yaml).
		{"update", "", "nodes", "", "n1", true},
		// What it must not do.
		{"get", "", "secrets", "rebootwatch", "", false},
		{"list", "", "secrets", "kube-system", "", false},
		{"get", "", "secrets", "default", "", false},
		{"list", "", "secrets", "", "", false},
		{"delete", "", "nodes", "", "n1", false},
		{"patch", "", "nodes", "", "n1", false},
		{"update", "coordination.k8s.io", "leases", "default", "other-lease", false},
		{"update", "coordination.k8s.io", "leases", "kube-node-lease", "n1", false},
		{"update", "coordination.k8s.io", "leases", "kube-system", "kube-scheduler", false},
		{"create", "coordination.k8s.io", "leases", "default", "", false},
		{"delete", "coordination.k8s.io", "leases", "default", "fleetlock-default", false},
		{"update", "coordination.k8s.io", "leases", "rebootwatch", "other-lease", false},
		{"update", "apps", "daemonsets", "kube-system", "kube-proxy", false},
		{"update", "apps", "daemonsets", "default", "kured", false},
		{"delete", "apps", "daemonsets", "kube-system", "kured", false},
		{"patch", "apps", "daemonsets", "kube-system", "kured", false},
		{"list", "apps", "daemonsets", "kube-system", "", false},
		{"update", "longhorn.io", "volumes", "longhorn-system", "pvc-1", false},
		{"create", "", "events", "rebootwatch", "", false},
		{"create", "", "pods", "rebootwatch", "", false},
		{"create", "", "pods/eviction", "default", "", false},
		{"delete", "", "pods", "default", "web-0", false},
		{"get", "", "pods/log", "default", "web-0", false},
		{"update", "policy", "poddisruptionbudgets", "default", "web", false},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		res, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
				Verb: ck.verb, Group: ck.group, Resource: ck.resource, Namespace: ck.ns, Name: ck.name,
			}},
		}, metav1.CreateOptions{})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		desc := fmt.Sprintf("%s %s/%s %s/%s", ck.verb, ck.group, ck.resource, ck.ns, ck.name)
		if res.Status.Allowed != ck.allowed {
			t.Errorf("%s: allowed=%v, want %v (%s)", desc, res.Status.Allowed, ck.allowed, res.Status.Reason)
		}
	}

	// The Deployment's pod passes Pod Security "restricted" (enforced on the
	// namespace by deploy/namespace.yaml): a server-side dry-run create.
	admin := c.Client(t)
	pctx, pcancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer pcancel()
	d, err := admin.AppsV1().Deployments("rebootwatch").Get(pctx, "rebootwatch-agent", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "psa-check", Namespace: "rebootwatch", Labels: d.Spec.Template.Labels},
		Spec: d.Spec.Template.Spec}
	if _, err := admin.CoreV1().Pods("rebootwatch").Create(pctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Errorf("the agent's pod is rejected in its namespace: %v", err)
	}
	bad := pod.DeepCopy()
	bad.Spec.Containers[0].SecurityContext.Capabilities.Drop = nil
	if _, err := admin.CoreV1().Pods("rebootwatch").Create(pctx, bad, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err == nil {
		t.Error("a pod keeping its capabilities was admitted: Pod Security is not enforced, so the check above proves nothing")
	}

	// And for real: reading a secret with the token is forbidden.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := cs.CoreV1().Secrets("kube-system").List(ctx, metav1.ListOptions{}); err == nil {
		t.Error("the agent's token can list secrets")
	}
	if err := cs.CoreV1().Nodes().Delete(ctx, "nope", metav1.DeleteOptions{}); err == nil || !isForbidden(err) {
		t.Errorf("deleting a node: %v, want forbidden", err)
	}
}
