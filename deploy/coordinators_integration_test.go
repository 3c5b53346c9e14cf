package deploy

import (
	"context"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/rebootwatch/rebootwatch/internal/coord"
	"github.com/rebootwatch/rebootwatch/internal/coord/flatcar/flatcartest"
	"github.com/rebootwatch/rebootwatch/internal/coord/kinds"
	"github.com/rebootwatch/rebootwatch/internal/coord/suc/suctest"
	"github.com/rebootwatch/rebootwatch/internal/testenv/testcluster"
)

// TestIntegrationCoordinatorsRBACReads: on a real apiserver, the chart's
// default ClusterRoles, bound to a user with no other grant, let every
// coordinator kind be read and its wedge named (issue 32 §2: they are read
// by default); without the coordinators ClusterRole (coordinators.enabled
// =false) the kinds are unread, never "nothing to see".
func TestIntegrationCoordinatorsRBACReads(t *testing.T) {
	testcluster.Require(t, "etcd", "kube-apiserver", "helm")
	c := testcluster.SharedAlone(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin := c.Client(t)
	// The shared apiserver is left as found: without Plans (the CRD's
	// deletion deletes them), SUC's Job and FLUO's operator (SharedAlone
	// deletes the nodes).
	suctest.InstallCRDForTest(t, c.Dynamic(t), c.Client(t).Discovery())
	suctest.DeleteAtEnd(t, admin, "system-upgrade", false)
	suctest.DeleteAtEnd(t, admin, "reboot-coordinator", true)
	for _, ns := range []string{"system-upgrade", "reboot-coordinator"} {
		ensureNamespace(ctx, t, admin, ns, nil)
	}
	wedged := map[string]string{} // kind -> blocker kind
	if _, k, err := suctest.Wedge(ctx, admin, c.Dynamic(t), "system-upgrade", time.Now()); err != nil {
		t.Fatal(err)
	} else {
		wedged["suc"] = k
	}
	agentCS, err := flatcartest.AgentClient(c.Admin)
	if err != nil {
		t.Fatal(err)
	}
	operatorCS, err := flatcartest.OperatorClient(c.Admin)
	if err != nil {
		t.Fatal(err)
	}
	_, k, at, err := flatcartest.Wedge(ctx, admin, agentCS, operatorCS, "reboot-coordinator", false)
	if err != nil {
		t.Fatal(err)
	}
	wedged["flatcar"] = k

	// The chart's cluster-wide roles, bound to alice (a user with no grant).
	grants := grantAlice(t, c)
	bind := func(set []string) {
		v := defaultValues
		v.set = set
		for _, o := range render(t, v) {
			if cr, ok := o.Object.(*rbacv1.ClusterRole); ok {
				grants.bindClusterRole(ctx, cr)
			}
		}
	}
	alice := func() coord.Clients {
		kube, err := kubernetes.NewForConfig(c.UserConfig("alice"))
		if err != nil {
			t.Fatal(err)
		}
		dyn, err := dynamic.NewForConfig(c.UserConfig("alice"))
		if err != nil {
			t.Fatal(err)
		}
		return coord.Clients{Kube: kube, Dynamic: dyn}
	}

	// coordinators.enabled=false: no grant on the coordinators' objects.
	bind([]string{"coordinators.enabled=false"})
	for _, r := range kinds.ReadAll(ctx, alice(), at) {
		if !r.Installed || r.Unknown == "" {
			t.Errorf("%s read without the coordinators grant: %+v", r.Kind, r.Observation)
		}
	}
	// The default chart adds the ClusterRole that reads them. RBAC is
	// evaluated per request: the new grant applies once the authorizer's
	// cache has it, which bindClusterRole waits for.
	v := defaultValues
	for _, o := range render(t, v) {
		if cr, ok := o.Object.(*rbacv1.ClusterRole); ok && cr.Name == "rebootwatch-agent-coordinators" {
			grants.bindClusterRole(ctx, cr)
		}
	}
	for _, r := range kinds.ReadAll(ctx, alice(), at) {
		want, ok := wedged[string(r.Kind)]
		if !ok {
			continue
		}
		if !r.Installed || r.Unknown != "" {
			t.Errorf("%s under the chart's grants: installed %v, unknown %q", r.Kind, r.Installed, r.Unknown)
			continue
		}
		found := false
		for _, b := range r.Blockers {
			found = found || string(b.Kind) == want
		}
		if !found {
			t.Errorf("%s: no %s blocker: %+v", r.Kind, want, r.Blockers)
		}
	}
}

// aliceGrants are the roles a test binds to alice, a user with no grant of
// her own. Each bind waits until the authorizer allows alice one request of
// each rule of the role (its cache can lag the write). Every role and
// binding is deleted when the test ends (the apiserver is shared: alice's
// grants must not outlive the test that gave them), and then the test waits
// until the authorizer refuses her each of those requests again, so that
// the next test or -count round starts from no grant in its cache too
// (this test's first read, in a second round, relies on that).
type aliceGrants struct {
	t        *testing.T
	c        *testcluster.Cluster
	admin    kubernetes.Interface
	requests []authorizationv1.ResourceAttributes
}

// grantAlice starts the test's grants to alice. Its wait for the refusals
// is a clean-up registered before those of the grants, so it runs after
// every grant is deleted: a request two roles allow is refused only then.
func grantAlice(t *testing.T, c *testcluster.Cluster) *aliceGrants {
	t.Helper()
	g := &aliceGrants{t: t, c: c, admin: c.Client(t)}
	t.Cleanup(func() {
		for _, a := range g.requests {
			c.WaitDenied(t, "alice", a)
		}
	})
	return g
}

// allowed waits until alice may do one request of each rule, in namespace
// ns ("" for a ClusterRoleBinding), and keeps them for the end.
func (g *aliceGrants) allowed(ns string, rules []rbacv1.PolicyRule) {
	g.t.Helper()
	for _, a := range testcluster.RuleAttributes(ns, rules) {
		g.c.WaitAllowed(g.t, "alice", a)
		g.requests = append(g.requests, a)
	}
}

// bindClusterRole creates the ClusterRole cr and binds it to alice; both
// are deleted when the test ends.
func (g *aliceGrants) bindClusterRole(ctx context.Context, cr *rbacv1.ClusterRole) {
	t, admin := g.t, g.admin
	t.Helper()
	if _, err := admin.RbacV1().ClusterRoles().Create(ctx, cr.DeepCopy(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for what, del := range map[string]func() error{
			"ClusterRoleBinding": func() error {
				return admin.RbacV1().ClusterRoleBindings().Delete(ctx, cr.Name, metav1.DeleteOptions{})
			},
			"ClusterRole": func() error { return admin.RbacV1().ClusterRoles().Delete(ctx, cr.Name, metav1.DeleteOptions{}) },
		} {
			if err := del(); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("clean-up: %s %s: %v", what, cr.Name, err)
			}
		}
	})
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: cr.Name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: cr.Name},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: "alice"}}}
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	g.allowed("", cr.Rules)
}

// bindRole creates the Role r and binds it to alice in its namespace; both
// are deleted when the test ends.
func (g *aliceGrants) bindRole(ctx context.Context, r *rbacv1.Role) {
	t, admin := g.t, g.admin
	t.Helper()
	if _, err := admin.RbacV1().Roles(r.Namespace).Create(ctx, r.DeepCopy(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: r.Namespace, Name: r.Name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: r.Name},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: "alice"}}}
	if _, err := admin.RbacV1().RoleBindings(r.Namespace).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ns, name := r.Namespace, r.Name
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := admin.RbacV1().RoleBindings(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Errorf("clean-up: RoleBinding %s/%s: %v", ns, name, err)
		}
		if err := admin.RbacV1().Roles(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Errorf("clean-up: Role %s/%s: %v", ns, name, err)
		}
	})
	g.allowed(ns, r.Rules)
}
