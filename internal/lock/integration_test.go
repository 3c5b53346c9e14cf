package lock

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"

	"github.com/rebootwatch/rebootwatch/internal/coord/fleetlock"
	"github.com/rebootwatch/rebootwatch/internal/coord/kured"
	"github.com/rebootwatch/rebootwatch/internal/testenv/testcluster"
	"github.com/rebootwatch/rebootwatch/model"
)

// itest is one integration scenario's handles.
type itest struct {
	t     *testing.T
	tc    *testcluster.Cluster
	admin kubernetes.Interface
	ns    string
	ctx   context.Context
	label string // label value on this scenario's nodes
}

func TestIntegrationActions(t *testing.T) {
	t.Parallel()
	tc := testcluster.Shared(t)
	admin := tc.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	newIT := func(t *testing.T, prefix string) *itest {
		return &itest{t: t, tc: tc, admin: admin, ns: tc.Namespace(t, prefix), ctx: ctx, label: prefix}
	}

	t.Run("reap a ghost fleetlock", func(t *testing.T) {
		it := newIT(t, "ghostfl")
		it.node("ghostfl-a", mid2, time.Now().Add(-2*time.Hour), false)
		it.node("ghostfl-b", mid3, time.Now().Add(-2*time.Hour), false)
		it.lease("fleetlock-default", zid1) // zid1 is mid1's id: no node has mid1
		c, e := it.judge()
		ref := model.LockRef{Kind: model.LockFleetlock, Namespace: it.ns, Name: "fleetlock-default"}
		s := it.status(c, ref, zid1)
		if s.Verdict != model.VerdictGhost {
			t.Fatalf("verdict %s: %s", s.Verdict, s.Reason)
		}
		p, err := e.Plan(c, ref, "", model.ActionReap, time.Now())
		if err != nil || !p.Allowed {
			t.Fatalf("plan %+v %v", p, err)
		}
		r := it.actor(admin, "admin", p).Do(ctx, p, DoOptions{})
		if r.Outcome != model.OutcomeDone {
			t.Fatalf("%s: %s", r.Outcome, r.Message)
		}
		l, err := admin.CoordinationV1().Leases(it.ns).Get(ctx, "fleetlock-default", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != "" || *l.Spec.LeaseTransitions != 4 {
			t.Fatalf("lease after reap: holder %v transitions %v", l.Spec.HolderIdentity, *l.Spec.LeaseTransitions)
		}
		it.wantEvent("Lease", "fleetlock-default", ReasonReaped, string(l.UID), "admin")
	})

	t.Run("release an orphaned kured single lock", func(t *testing.T) {
		it := newIT(t, "orphan")
		// The holder rebooted: Ready since 20m, lock taken 40m ago, still
		// cordoned by kured, which uncordons it (seen by the engine, as a
		// running watch sees it) and then never releases.
		it.node("orphan-a", mid1, time.Now().Add(-20*time.Minute), true)
		it.node("orphan-b", mid2, time.Now().Add(-3*time.Hour), false)
		ann := single(ent("orphan-a", time.Now().Add(-40*time.Minute).UTC().Truncate(time.Second), 0))
		it.daemonSet("kured", ann)
		now := time.Now()
		e := New(Options{})
		it.judgeWith(e, now)
		n, err := admin.CoreV1().Nodes().Get(ctx, "orphan-a", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n.Spec.Unschedulable = false
		if _, err := admin.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		it.judgeWith(e, now)
		later := now.Add(DefaultOrphanGrace)
		c := it.judgeWith(e, later)
		ref := model.LockRef{Kind: model.LockKured, Namespace: it.ns, Name: "kured"}
		if s := it.status(c, ref, "orphan-a"); s.Verdict != model.VerdictOrphaned {
			t.Fatalf("verdict %s: %s", s.Verdict, s.Reason)
		}
		p, err := e.Plan(c, ref, "orphan-a", model.ActionRelease, later)
		if err != nil || !p.Allowed {
			t.Fatalf("plan %+v %v", p, err)
		}
		// Dry run first: exactly the write, nothing changed.
		dry := it.actor(admin, "admin", Plan{})
		dry.DryRun = true
		if r := dry.Do(ctx, p, DoOptions{}); r.Outcome != model.OutcomeDryRun || r.Write != p.Write {
			t.Fatalf("dry run %+v", r)
		}
		if got := it.getDS("kured"); got.Annotations[kured.Annotation] != ann || got.ResourceVersion != p.Write.ResourceVersion {
			t.Fatal("dry run changed the DaemonSet")
		}
		r := it.actor(admin, "admin", p).Do(ctx, p, DoOptions{})
		if r.Outcome != model.OutcomeDone {
			t.Fatalf("%s: %s", r.Outcome, r.Message)
		}
		got := it.getDS("kured")
		if _, ok := got.Annotations[kured.Annotation]; ok || got.Annotations["other"] != "kept" {
			t.Fatalf("annotations after release: %v", got.Annotations)
		}
		it.wantEvent("DaemonSet", "kured", ReasonReleased, string(got.UID), "orphaned")
	})

	t.Run("remove one entry of a multi-lock", func(t *testing.T) {
		it := newIT(t, "multi")
		it.node("multi-a", mid1, time.Now().Add(-2*time.Hour), false)
		created := time.Now().Add(-time.Hour).UTC().Truncate(time.Second)
		ann := multi(3, ent("gone-1", created, 0), ent("gone-2", created, 0))
		it.daemonSetArgs("kured", ann, "--concurrency=3")
		c, e := it.judge()
		ref := model.LockRef{Kind: model.LockKured, Namespace: it.ns, Name: "kured"}
		p, err := e.Plan(c, ref, "gone-1", model.ActionReap, time.Now())
		if err != nil || !p.Allowed {
			t.Fatalf("plan %+v %v", p, err)
		}
		if r := it.actor(admin, "admin", p).Do(ctx, p, DoOptions{}); r.Outcome != model.OutcomeDone {
			t.Fatalf("%s: %s", r.Outcome, r.Message)
		}
		got := it.getDS("kured")
		kl, err := kured.Parse(got.Annotations[kured.Annotation])
		if err != nil {
			t.Fatal(err)
		}
		if !kl.Multi || kl.MaxOwners != 3 || len(kl.Entries) != 1 || kl.Entries[0].NodeID != "gone-2" || !kl.Entries[0].Created.Equal(created) {
			t.Fatalf("multi-lock after removing gone-1: %s", got.Annotations[kured.Annotation])
		}
		it.wantEvent("DaemonSet", "kured", ReasonReaped, string(got.UID), "gone-1")
	})

	t.Run("a lock changed between judge and act is a conflict", func(t *testing.T) {
		it := newIT(t, "conflict")
		it.node("conflict-a", mid1, time.Now().Add(-2*time.Hour), false)
		ann := single(ent("ghost-x", time.Now().Add(-time.Hour).UTC().Truncate(time.Second), 0))
		it.daemonSet("kured", ann)
		c, e := it.judge()
		ref := model.LockRef{Kind: model.LockKured, Namespace: it.ns, Name: "kured"}
		p, err := e.Plan(c, ref, "", model.ActionReap, time.Now())
		if err != nil || !p.Allowed {
			t.Fatalf("plan %+v %v", p, err)
		}
		// kured on a real node takes over the lock after the judgement.
		ds := it.getDS("kured")
		newAnn := single(ent("conflict-a", time.Now().UTC().Truncate(time.Second), 0))
		ds.Annotations[kured.Annotation] = newAnn
		if _, err := admin.AppsV1().DaemonSets(it.ns).Update(ctx, ds, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		before := it.getDS("kured")
		r := it.actor(admin, "admin", p).Do(ctx, p, DoOptions{})
		if r.Outcome != model.OutcomeConflict || !strings.Contains(r.Message, "nothing changed") {
			t.Fatalf("%s: %s", r.Outcome, r.Message)
		}
		after := it.getDS("kured")
		if after.ResourceVersion != before.ResourceVersion || after.Annotations[kured.Annotation] != newAnn {
			t.Fatalf("conflict changed the DaemonSet: %v", after.Annotations)
		}
		if evs := it.events("kured"); len(evs) != 0 {
			t.Fatalf("conflict recorded events: %+v", evs)
		}
	})

	t.Run("a lease deleted and re-created between judge and act is a conflict", func(t *testing.T) {
		it := newIT(t, "recreate")
		it.node("recreate-a", mid2, time.Now().Add(-2*time.Hour), false)
		it.lease("fleetlock-default", zid1)
		c, e := it.judge()
		ref := model.LockRef{Kind: model.LockFleetlock, Namespace: it.ns, Name: "fleetlock-default"}
		p, err := e.Plan(c, ref, "", model.ActionReap, time.Now())
		if err != nil || !p.Allowed {
			t.Fatalf("plan %+v %v", p, err)
		}
		if err := admin.CoordinationV1().Leases(it.ns).Delete(ctx, "fleetlock-default", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		it.lease("fleetlock-default", zid1)
		r := it.actor(admin, "admin", p).Do(ctx, p, DoOptions{})
		if r.Outcome != model.OutcomeConflict || !strings.Contains(r.Message, "replaced") {
			t.Fatalf("%s: %s", r.Outcome, r.Message)
		}
		l, err := admin.CoordinationV1().Leases(it.ns).Get(ctx, "fleetlock-default", metav1.GetOptions{})
		if err != nil || *l.Spec.HolderIdentity != zid1 {
			t.Fatalf("re-created lease changed: %v %v", l, err)
		}
	})

	t.Run("a user without update rights gets a clear forbidden error", func(t *testing.T) {
		it := newIT(t, "forbid")
		it.node("forbid-a", mid1, time.Now().Add(-2*time.Hour), false)
		ann := single(ent("ghost-y", time.Now().Add(-time.Hour).UTC().Truncate(time.Second), 0))
		it.daemonSet("kured", ann)
		// bob may read DaemonSets in the namespace but not update them; he
		// may list nodes (the fresh read before a write needs it).
		it.grant("bob", []string{"get", "list", "watch"})
		it.grantNodeList("bob")
		c, e := it.judge()
		ref := model.LockRef{Kind: model.LockKured, Namespace: it.ns, Name: "kured"}
		p, err := e.Plan(c, ref, "", model.ActionReap, time.Now())
		if err != nil || !p.Allowed {
			t.Fatalf("plan %+v %v", p, err)
		}
		bob, err := kubernetes.NewForConfig(tc.UserConfig("bob"))
		if err != nil {
			t.Fatal(err)
		}
		r := it.actor(bob, "bob", p).Do(ctx, p, DoOptions{})
		if r.Outcome != model.OutcomeForbidden || !strings.Contains(r.Message, "bob may not update daemonsets.apps in namespace "+it.ns) {
			t.Fatalf("%s: %s", r.Outcome, r.Message)
		}
		if got := it.getDS("kured"); got.Annotations[kured.Annotation] != ann {
			t.Fatal("forbidden action changed the DaemonSet")
		}
		// alice may list nodes but not even read the DaemonSet: forbidden
		// too, naming get.
		it.grantNodeList("alice")
		alice, _ := kubernetes.NewForConfig(tc.UserConfig("alice"))
		if r := it.actor(alice, "alice", p).Do(ctx, p, DoOptions{}); r.Outcome != model.OutcomeForbidden || !strings.Contains(r.Message, "alice may not get") {
			t.Fatalf("alice: %s: %s", r.Outcome, r.Message)
		}
		// carol may not list nodes: the fresh read before the write is
		// forbidden, and nothing is written.
		carol, _ := kubernetes.NewForConfig(tc.UserConfig("carol"))
		if r := it.actor(carol, "carol", p).Do(ctx, p, DoOptions{}); r.Outcome != model.OutcomeForbidden ||
			!strings.Contains(r.Message, "fresh-data") || !strings.Contains(r.Message, "carol may not list nodes") {
			t.Fatalf("carol: %s: %s", r.Outcome, r.Message)
		}
		if got := it.getDS("kured"); got.Annotations[kured.Annotation] != ann {
			t.Fatal("forbidden action changed the DaemonSet")
		}
	})
}

// grantNodeList lets user list nodes (cluster-wide).
func (it *itest) grantNodeList(user string) {
	it.t.Helper()
	name := user + "-nodes-" + it.ns
	cr := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"list"}}}}
	if _, err := it.admin.RbacV1().ClusterRoles().Create(it.ctx, cr, metav1.CreateOptions{}); err != nil {
		it.t.Fatal(err)
	}
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: name},
		Subjects: []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: user}}}
	if _, err := it.admin.RbacV1().ClusterRoleBindings().Create(it.ctx, crb, metav1.CreateOptions{}); err != nil {
		it.t.Fatal(err)
	}
	it.tc.WaitAllowed(it.t, user, authorizationv1.ResourceAttributes{Verb: "list", Resource: "nodes"})
}

func (it *itest) node(name, machineID string, readySince time.Time, cordoned bool) {
	it.t.Helper()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"rebootwatch-test": it.label}},
		Spec: corev1.NodeSpec{Unschedulable: cordoned}}
	n, err := it.admin.CoreV1().Nodes().Create(it.ctx, n, metav1.CreateOptions{})
	if err != nil {
		it.t.Fatal(err)
	}
	// The apiserver is shared: leave no node to the next test.
	it.t.Cleanup(func() { _ = it.admin.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	n.Status = corev1.NodeStatus{
		NodeInfo: corev1.NodeSystemInfo{MachineID: machineID, BootID: name + "-boot", OSImage: "Test OS", KernelVersion: "6.1"},
		Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.NewTime(readySince)}},
	}
	if _, err := it.admin.CoreV1().Nodes().UpdateStatus(it.ctx, n, metav1.UpdateOptions{}); err != nil {
		it.t.Fatal(err)
	}
}

func (it *itest) daemonSet(name, annotation string) {
	it.t.Helper()
	it.daemonSetArgs(name, annotation)
}

// daemonSetArgs is daemonSet with kured's args.
func (it *itest) daemonSetArgs(name, annotation string, args ...string) {
	it.t.Helper()
	labels := map[string]string{"app": name}
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: it.ns, Annotations: map[string]string{kured.Annotation: annotation, "other": "kept"}},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "kured", Image: "example.invalid/kured:test", Args: args}}}},
		},
	}
	if _, err := it.admin.AppsV1().DaemonSets(it.ns).Create(it.ctx, ds, metav1.CreateOptions{}); err != nil {
		it.t.Fatal(err)
	}
}

func (it *itest) lease(name, holder string) {
	it.t.Helper()
	tr := int32(4)
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: it.ns},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseTransitions: &tr}}
	if _, err := it.admin.CoordinationV1().Leases(it.ns).Create(it.ctx, l, metav1.CreateOptions{}); err != nil {
		it.t.Fatal(err)
	}
}

func (it *itest) getDS(name string) *appsv1.DaemonSet {
	it.t.Helper()
	ds, err := it.admin.AppsV1().DaemonSets(it.ns).Get(it.ctx, name, metav1.GetOptions{})
	if err != nil {
		it.t.Fatal(err)
	}
	return ds
}

// grant gives a user the verbs on daemonsets.apps in the scenario namespace.
func (it *itest) grant(user string, verbs []string) {
	it.t.Helper()
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: user + "-ds", Namespace: it.ns},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"apps"}, Resources: []string{"daemonsets"}, Verbs: verbs}}}
	if _, err := it.admin.RbacV1().Roles(it.ns).Create(it.ctx, role, metav1.CreateOptions{}); err != nil {
		it.t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user + "-ds", Namespace: it.ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: role.Name},
		Subjects: []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: user}}}
	if _, err := it.admin.RbacV1().RoleBindings(it.ns).Create(it.ctx, rb, metav1.CreateOptions{}); err != nil {
		it.t.Fatal(err)
	}
	for _, v := range verbs {
		it.tc.WaitAllowed(it.t, user, authorizationv1.ResourceAttributes{Namespace: it.ns, Verb: v, Group: "apps", Resource: "daemonsets"})
	}
}

// judge reads this scenario's nodes and locks from the apiserver into a
// model cluster judged by a fresh engine.
func (it *itest) judge() (*model.Cluster, *Engine) {
	it.t.Helper()
	e := New(Options{})
	return it.judgeWith(e, time.Now()), e
}

// judgeWith reads the scenario into a fresh model judged by e at now.
func (it *itest) judgeWith(e *Engine, now time.Time) *model.Cluster {
	it.t.Helper()
	c := model.NewCluster("itest", model.Options{})
	c.Judge = e.Judge
	nodes, err := it.admin.CoreV1().Nodes().List(it.ctx, metav1.ListOptions{LabelSelector: "rebootwatch-test=" + it.label})
	if err != nil {
		it.t.Fatal(err)
	}
	c.Apply(nodesOK(), now)
	for _, n := range nodes.Items {
		c.Apply(model.NodeUpserted{Node: modelNode(&n)}, now)
	}
	dss, err := it.admin.AppsV1().DaemonSets(it.ns).List(it.ctx, metav1.ListOptions{})
	if err != nil {
		it.t.Fatal(err)
	}
	for _, ds := range dss.Items {
		v, ok := ds.Annotations[kured.Annotation]
		c.Apply(model.LockUpserted{Lock: model.LockObject{LockRef: model.LockRef{Kind: model.LockKured, Namespace: ds.Namespace, Name: ds.Name},
			UID: string(ds.UID), ResourceVersion: ds.ResourceVersion, Spec: &kured.Spec{Value: v, Present: ok, Config: kured.ConfigOf(&ds.Spec.Template.Spec)}}}, now)
	}
	ls, err := it.admin.CoordinationV1().Leases(it.ns).List(it.ctx, metav1.ListOptions{})
	if err != nil {
		it.t.Fatal(err)
	}
	for _, l := range ls.Items {
		lo := model.LockObject{LockRef: model.LockRef{Kind: model.LockFleetlock, Namespace: l.Namespace, Name: l.Name},
			UID: string(l.UID), ResourceVersion: l.ResourceVersion, Spec: &fleetlock.Spec{}}
		if l.Spec.HolderIdentity != nil {
			fspec(&lo).Holder = *l.Spec.HolderIdentity
		}
		if l.Spec.LeaseTransitions != nil {
			fspec(&lo).LeaseTransitions = *l.Spec.LeaseTransitions
		}
		c.Apply(model.LockUpserted{Lock: lo}, now)
	}
	c.Recompute(now)
	return c
}

func modelNode(n *corev1.Node) model.Node {
	m := model.Node{Name: n.Name, UID: string(n.UID), Unschedulable: n.Spec.Unschedulable,
		BootID: n.Status.NodeInfo.BootID, MachineID: n.Status.NodeInfo.MachineID,
		OSImage: n.Status.NodeInfo.OSImage, KernelVersion: n.Status.NodeInfo.KernelVersion, Created: n.CreationTimestamp.Time}
	for _, c := range n.Status.Conditions {
		m.Conditions = append(m.Conditions, model.Condition{Type: string(c.Type), Status: string(c.Status),
			Reason: c.Reason, Message: c.Message, LastTransition: c.LastTransitionTime.Time})
	}
	return m
}

func (it *itest) status(c *model.Cluster, ref model.LockRef, holder string) model.LockStatus {
	it.t.Helper()
	s, err := statusFor(c.LockStatuses(), ref, holder)
	if err != nil {
		it.t.Fatal(err)
	}
	return s
}

func (it *itest) actor(cs kubernetes.Interface, who string, p Plan) *Actor {
	return &Actor{Client: cs, Who: who, Logger: slog.New(slog.NewTextHandler(testWriter{it.t}, nil)), Timeout: 30 * time.Second,
		NodeSelector: "rebootwatch-test=" + it.label, Fresh: asJudged(p)}
}

func (it *itest) events(name string) []corev1.Event {
	it.t.Helper()
	evs, err := it.admin.CoreV1().Events(it.ns).List(it.ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("involvedObject.name", name).String()})
	if err != nil {
		it.t.Fatal(err)
	}
	return evs.Items
}

func (it *itest) wantEvent(kind, name, reason, uid, inMessage string) {
	it.t.Helper()
	evs := it.events(name)
	if len(evs) != 1 {
		b, _ := json.Marshal(evs)
		it.t.Fatalf("want one event on %s %s, got %d: %s", kind, name, len(evs), b)
	}
	ev := evs[0]
	if ev.Reason != reason || ev.InvolvedObject.Kind != kind || string(ev.InvolvedObject.UID) != uid || !strings.Contains(ev.Message, inMessage) {
		it.t.Fatalf("event %s/%s uid %s: %q (want %s on %s uid %s mentioning %q)", ev.InvolvedObject.Kind, ev.Reason, ev.InvolvedObject.UID, ev.Message, reason, kind, uid, inMessage)
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
