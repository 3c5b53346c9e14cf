package lock_test

// The conformance test: every registered lock kind goes through parse →
// judge → plan → do, on a client-go fake clientset and on a real
// kube-apiserver (internal/testenv/testcluster), with locks written exactly as the
// kind's coordinator writes them and read back the way sources/kube reads
// them. A kind added to the registry without a fixture here fails the test.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"

	"github.com/rebootwatch/rebootwatch/internal/coord/fleetlock"
	"github.com/rebootwatch/rebootwatch/internal/coord/fleetlock/fleetlocktest"
	"github.com/rebootwatch/rebootwatch/internal/coord/kured"
	"github.com/rebootwatch/rebootwatch/internal/coord/kured/kuredtest"
	"github.com/rebootwatch/rebootwatch/internal/fakekube"
	"github.com/rebootwatch/rebootwatch/internal/lock"
	"github.com/rebootwatch/rebootwatch/internal/testenv/testcluster"
	"github.com/rebootwatch/rebootwatch/model"
	"github.com/rebootwatch/rebootwatch/sources/kube"
)

// world is where one conformance case runs: a client (fake or real), the
// namespace its lock objects live in, and a clock.
type world struct {
	t  *testing.T
	cs kubernetes.Interface
	// coordinator is a client that identifies itself as the kind's
	// coordinator does (its user agent gives the managedFields manager);
	// on the fake clientset the fixture writes managedFields itself.
	coordinator func(userAgent string) kubernetes.Interface
	real        bool
	ns          string
	ctx         context.Context
	label       string
}

// kindFixture writes and reads one lock kind as its coordinator does.
type kindFixture struct {
	// take writes a lock held by holder, as the coordinator takes it, and
	// returns the lock's ref.
	take func(w *world, group, holder string) model.LockRef
	// read reads the lock as sources/kube does.
	read func(w *world, ref model.LockRef) model.LockObject
	// holderID is the id the coordinator uses for a node.
	holderID func(n *corev1.Node) string
	// ghost is a holder id no node has.
	ghost string
	// groups are the lock objects one cluster may have of this kind.
	groups []string
	// uncordons: a release also uncordons the holder (the coordinator
	// cordoned it on lock).
	uncordons bool
}

// zincatiMachine is the DESIGN §3 test vector's machine id.
const zincatiMachine = "1c09ca98649c4c7abc779cd04c96812e"

// fleetlockManagedFields is what the apiserver records for fleetlock's
// writes (see fleetlocktest): one Update entry of manager "fleetlock" owning
// exactly the two spec fields fleetlock writes. The real-apiserver case and
// the fake clientset both check these bytes.
func fleetlockManagedFields(at time.Time) []metav1.ManagedFieldsEntry {
	t := metav1.NewTime(at.UTC().Truncate(time.Second))
	return []metav1.ManagedFieldsEntry{{Manager: fleetlocktest.Manager, Operation: metav1.ManagedFieldsOperationUpdate,
		APIVersion: "coordination.k8s.io/v1", Time: &t, FieldsType: "FieldsV1",
		FieldsV1: metav1.NewFieldsV1(fleetlocktest.FieldsV1)}}
}

func fixtures() map[model.LockKind]kindFixture {
	return map[model.LockKind]kindFixture{
		model.LockKured: {
			groups: []string{"kured"},
			ghost:  "gone-node",
			take: func(w *world, name, holder string) model.LockRef {
				// kured's Acquire: Get the DaemonSet, set the annotation,
				// Update carrying the read resourceVersion.
				labels := map[string]string{"app.kubernetes.io/name": "kured"}
				meta := w.meta(name)
				meta.Labels = labels
				ds := &appsv1.DaemonSet{ObjectMeta: meta,
					Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
						Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
							Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "kured", Image: "ghcr.io/kubereboot/kured:1.23.0",
								Command: []string{"/usr/bin/kured"}, Args: []string{"--ds-namespace=" + w.ns, "--ds-name=" + name}}}}}}}
				if _, err := w.cs.AppsV1().DaemonSets(w.ns).Create(w.ctx, ds, metav1.CreateOptions{}); err != nil {
					w.t.Fatal(err)
				}
				kc := w.coordinator("kured/v0.0.0 (linux/amd64) kubernetes/$Format")
				got, err := kc.AppsV1().DaemonSets(w.ns).Get(w.ctx, name, metav1.GetOptions{})
				if err != nil {
					w.t.Fatal(err)
				}
				got.Annotations = map[string]string{kured.Annotation: kuredtest.Single(holder, time.Now().Add(-40*time.Minute), 0, false)}
				if !w.real {
					got.ResourceVersion = "2"
				}
				if _, err := kc.AppsV1().DaemonSets(w.ns).Update(w.ctx, got, metav1.UpdateOptions{}); err != nil {
					w.t.Fatal(err)
				}
				return model.LockRef{Kind: model.LockKured, Namespace: w.ns, Name: name}
			},
			read: func(w *world, ref model.LockRef) model.LockObject {
				ds, err := w.cs.AppsV1().DaemonSets(ref.Namespace).Get(w.ctx, ref.Name, metav1.GetOptions{})
				if err != nil {
					w.t.Fatal(err)
				}
				tr, _ := kured.Transform(ds)
				return kured.LockOf(tr.(*appsv1.DaemonSet))
			},
			holderID: func(n *corev1.Node) string { return n.Name },
		},
		model.LockFleetlock: {
			// Several groups in a non-default namespace.
			groups:    []string{"fleetlock-default", "fleetlock-workers"},
			ghost:     "978a225b3d7b40e9acd7ce9b62f68444", // zincatiMachine's id; no node has that machine id
			uncordons: true,
			take: func(w *world, name, holder string) model.LockRef {
				fc := w.coordinator(fleetlocktest.UserAgent)
				fm := ""
				if !w.real {
					// The fake clientset does not name managers from the
					// user agent as the apiserver does: tell it the name.
					fm = fleetlocktest.Manager
					zero := int32(0)
					free := ""
					if _, err := fc.CoordinationV1().Leases(w.ns).Create(w.ctx, &coordinationv1.Lease{ObjectMeta: w.meta(name),
						Spec: coordinationv1.LeaseSpec{HolderIdentity: &free, LeaseTransitions: &zero}}, metav1.CreateOptions{FieldManager: fm}); err != nil {
						w.t.Fatal(err)
					}
				}
				if _, err := fleetlocktest.Lock(w.ctx, fc, w.ns, strings.TrimPrefix(name, "fleetlock-"), holder, fm); err != nil {
					w.t.Fatal(err)
				}
				return model.LockRef{Kind: model.LockFleetlock, Namespace: w.ns, Name: name}
			},
			read: func(w *world, ref model.LockRef) model.LockObject {
				l, err := w.cs.CoordinationV1().Leases(ref.Namespace).Get(w.ctx, ref.Name, metav1.GetOptions{})
				if err != nil {
					w.t.Fatal(err)
				}
				tr, _ := fleetlock.Transform(l)
				return fleetlock.LockOf(tr.(*coordinationv1.Lease))
			},
			holderID: func(n *corev1.Node) string {
				id, err := fleetlock.ZincatiNodeID(n.Status.NodeInfo.MachineID)
				if err != nil {
					panic(err)
				}
				return id
			},
		},
	}
}

// meta is a new object's metadata; the fake clientset assigns no UID or
// resourceVersion, so the world does.
func (w *world) meta(name string) metav1.ObjectMeta {
	m := metav1.ObjectMeta{Name: name, Namespace: w.ns}
	if !w.real {
		m.UID, m.ResourceVersion = types.UID("uid-"+name), "1"
	}
	return m
}

// node creates a Ready node; cordoned as the coordinator leaves its holder.
func (w *world) node(name, machineID, boot string, readySince time.Time, cordoned bool) *corev1.Node {
	w.t.Helper()
	meta := w.meta(name)
	meta.Namespace, meta.Labels = "", map[string]string{"conformance": w.label}
	n := &corev1.Node{ObjectMeta: meta,
		Spec: corev1.NodeSpec{Unschedulable: cordoned}}
	n, err := w.cs.CoreV1().Nodes().Create(w.ctx, n, metav1.CreateOptions{})
	if err != nil {
		w.t.Fatal(err)
	}
	if w.real { // the apiserver is shared: leave no node to the next test
		w.t.Cleanup(func() { _ = w.cs.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	}
	n.Status = corev1.NodeStatus{
		NodeInfo: corev1.NodeSystemInfo{MachineID: machineID, BootID: boot, OSImage: "Fedora CoreOS 43", KernelVersion: "6.17"},
		Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.NewTime(readySince)}},
	}
	n, err = w.cs.CoreV1().Nodes().UpdateStatus(w.ctx, n, metav1.UpdateOptions{})
	if err != nil {
		w.t.Fatal(err)
	}
	return n
}

// judge reads this world's nodes and the given locks into a model cluster.
func (w *world) judge(e *lock.Engine, fx kindFixture, refs []model.LockRef, now time.Time) *model.Cluster {
	w.t.Helper()
	c := model.NewCluster("conformance", model.Options{})
	c.Judge = e.Judge
	ok := func(n model.SourceName) model.Event {
		return model.SourceChanged{Health: model.SourceHealth{Name: n, Status: model.StatusOK}}
	}
	c.Apply(model.Batch{ok(model.SourceNodes), ok(model.SourceKured), ok(model.SourceFleetlock),
		model.SourceChanged{Health: model.SourceHealth{Name: model.SourceLonghorn, Status: model.StatusNotInstalled}}}, now)
	nodes, err := w.cs.CoreV1().Nodes().List(w.ctx, metav1.ListOptions{LabelSelector: "conformance=" + w.label})
	if err != nil {
		w.t.Fatal(err)
	}
	for i := range nodes.Items {
		tn, _ := kube.TransformNode(&nodes.Items[i])
		c.Apply(model.NodeUpserted{Node: kube.NodeToModel(tn.(*corev1.Node))}, now)
	}
	for _, r := range refs {
		c.Apply(model.LockUpserted{Lock: fx.read(w, r)}, now)
	}
	c.Recompute(now)
	return c
}

func status(t *testing.T, c *model.Cluster, ref model.LockRef) model.LockStatus {
	t.Helper()
	for _, s := range c.LockStatuses() {
		if s.LockRef == ref {
			return s
		}
	}
	t.Fatalf("no status for %s in %+v", ref, c.LockStatuses())
	return model.LockStatus{}
}

// conform runs every kind's cases in one world.
func conform(t *testing.T, mk func(t *testing.T, label string) *world) {
	fxs := fixtures()
	for _, k := range lock.Kinds() {
		fx, ok := fxs[k]
		if !ok {
			t.Fatalf("lock kind %s is registered but has no conformance fixture", k)
		}
		t.Run(string(k)+"/reap a ghost", func(t *testing.T) {
			w := mk(t, string(k)+"-ghost")
			now := time.Now()
			w.node(w.label+"-a", "2c09ca98649c4c7abc779cd04c96812e", "boot-a", now.Add(-3*time.Hour), false)
			var refs []model.LockRef
			for _, g := range fx.groups {
				refs = append(refs, fx.take(w, g, fx.ghost))
			}
			e := lock.New(lock.Options{})
			c := w.judge(e, fx, refs, now)
			for _, ref := range refs {
				if s := status(t, c, ref); s.Verdict != model.VerdictGhost {
					t.Fatalf("%s: verdict %s (%s), want ghost", ref, s.Verdict, s.Reason)
				}
			}
			// Reap one group: the others still hold (and block the gate
			// only through nodes, none of which they map to).
			p, err := e.Plan(c, refs[0], fx.ghost, model.ActionReap, now)
			if err != nil || !p.Allowed {
				t.Fatalf("plan %+v %v", p, err)
			}
			r := (&lock.Actor{Client: w.cs, Who: "conformance", NodeSelector: "conformance=" + w.label, Fresh: lock.AsJudged(p)}).Do(w.ctx, p, lock.DoOptions{})
			if r.Outcome != model.OutcomeDone || r.Uncordon.Outcome != "" {
				t.Fatalf("do: %+v", r)
			}
			c = w.judge(e, fx, refs, now)
			if s := status(t, c, refs[0]); s.Verdict != model.VerdictFree {
				t.Fatalf("after reap: %s (%s)", s.Verdict, s.Reason)
			}
			for _, ref := range refs[1:] {
				if s := status(t, c, ref); s.Verdict != model.VerdictGhost {
					t.Fatalf("other group %s after reap: %s", ref, s.Verdict)
				}
			}
			w.wantEvent(refs[0].Namespace, refs[0].Name, lock.ReasonReaped)
		})
		t.Run(string(k)+"/release an orphan", func(t *testing.T) {
			w := mk(t, string(k)+"-orphan")
			now := time.Now()
			// The holder rebooted 20 minutes ago, after the lock was taken
			// 40 minutes ago (the fixtures date their writes), and is Ready;
			// a coordinator that cordons on lock left it cordoned.
			holder := w.node(w.label+"-h", zincatiMachine, "boot-h2", now.Add(-20*time.Minute), fx.uncordons)
			w.node(w.label+"-b", "3c09ca98649c4c7abc779cd04c96812e", "boot-b", now.Add(-3*time.Hour), false)
			ref := fx.take(w, fx.groups[0], fx.holderID(holder))
			judgeAt := now
			if fx.uncordons {
				// The apiserver dates fleetlock's write now (managedFields):
				// judge as if 30 minutes passed since, the holder having
				// come back Ready right after the write.
				judgeAt = now.Add(30 * time.Minute)
				holder.Status.Conditions[0].LastTransitionTime = metav1.NewTime(now.Add(2 * time.Second))
				if _, err := w.cs.CoreV1().Nodes().UpdateStatus(w.ctx, holder, metav1.UpdateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			e := lock.New(lock.Options{})
			if !fx.uncordons {
				// The holder is schedulable, and no managedFields entry
				// says since when (issue 27 §3): orphaned once this
				// engine has seen it so for the grace.
				if s := status(t, w.judge(e, fx, []model.LockRef{ref}, judgeAt), ref); s.Verdict != model.VerdictHeld {
					t.Fatalf("schedulable since an unknown time: %s (%s)", s.Verdict, s.Reason)
				}
				judgeAt = judgeAt.Add(lock.DefaultOrphanGrace)
			}
			c := w.judge(e, fx, []model.LockRef{ref}, judgeAt)
			s := status(t, c, ref)
			if s.Verdict != model.VerdictOrphaned || s.HolderNode() != holder.Name {
				t.Fatalf("verdict %s (%s) holder node %q, want orphaned %s; evidence %+v", s.Verdict, s.Reason, s.HolderNode(), holder.Name, s.Evidence)
			}
			p, err := e.Plan(c, ref, "", model.ActionRelease, judgeAt)
			if err != nil || !p.Allowed {
				t.Fatalf("plan %+v %v", p, err)
			}
			if (p.Uncordon.Op != "") != fx.uncordons {
				t.Fatalf("uncordon write %+v, want one: %v", p.Uncordon, fx.uncordons)
			}
			r := (&lock.Actor{Client: w.cs, Who: "conformance", NodeSelector: "conformance=" + w.label, Fresh: lock.AsJudged(p)}).Do(w.ctx, p, lock.DoOptions{})
			if !r.Complete() || r.Outcome != model.OutcomeDone {
				t.Fatalf("do: %+v", r)
			}
			c = w.judge(e, fx, []model.LockRef{ref}, judgeAt)
			if s := status(t, c, ref); s.Verdict != model.VerdictFree {
				t.Fatalf("after release: %s (%s)", s.Verdict, s.Reason)
			}
			w.wantEvent(ref.Namespace, ref.Name, lock.ReasonReleased)
			n, err := w.cs.CoreV1().Nodes().Get(w.ctx, holder.Name, metav1.GetOptions{})
			if err != nil || n.Spec.Unschedulable {
				t.Fatalf("holder after release: unschedulable %v (%v)", n.Spec.Unschedulable, err)
			}
			if fx.uncordons {
				w.wantEvent(metav1.NamespaceDefault, holder.Name, lock.ReasonUncordoned)
			}
		})
	}
}

func (w *world) wantEvent(ns, name, reason string) {
	w.t.Helper()
	evs, err := w.cs.CoreV1().Events(ns).List(w.ctx, metav1.ListOptions{})
	if err != nil {
		w.t.Fatal(err)
	}
	var seen []string
	for _, e := range evs.Items {
		if e.InvolvedObject.Name == name && e.Reason == reason && strings.Contains(e.Message, "conformance") {
			return
		}
		seen = append(seen, e.InvolvedObject.Name+"/"+e.Reason)
	}
	w.t.Fatalf("no %s Event on %s/%s (events: %v)", reason, ns, name, seen)
}

func fakeWorld(t *testing.T, label string) *world {
	cs := fake.NewClientset()
	fakekube.GenerateNames(&cs.Fake)
	return &world{t: t, cs: cs, ns: "reboot-coordination", ctx: context.Background(), label: label,
		coordinator: func(string) kubernetes.Interface { return cs }}
}

func TestConformanceFake(t *testing.T) {
	conform(t, fakeWorld)
	checkFleetlockFields(t, fakeWorld(t, "mf"))
}

func TestConformanceIntegration(t *testing.T) {
	t.Parallel()
	tc := testcluster.Shared(t)
	admin := tc.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	n := 0
	conform(t, func(t *testing.T, label string) *world {
		n++
		return &world{t: t, cs: admin, real: true, ns: tc.Namespace(t, "conf"), ctx: ctx, label: fmt.Sprintf("c%d", n),
			coordinator: func(ua string) kubernetes.Interface {
				cfg := rest.CopyConfig(tc.Admin)
				cfg.UserAgent = ua
				cs, err := kubernetes.NewForConfig(cfg)
				if err != nil {
					t.Fatal(err)
				}
				return cs
			}}
	})

	// The fake fixture's managedFields are what the apiserver records for
	// fleetlock's writes, byte for byte (but the time).
	w := &world{t: t, cs: admin, real: true, ns: tc.Namespace(t, "mf"), ctx: ctx, label: "mf",
		coordinator: func(ua string) kubernetes.Interface {
			cfg := rest.CopyConfig(tc.Admin)
			cfg.UserAgent = ua
			cs, _ := kubernetes.NewForConfig(cfg)
			return cs
		}}
	checkFleetlockFields(t, w)
}

// checkFleetlockFields takes a fleetlock Lease as fleetlock does and checks
// what was recorded against the fixture's bytes.
func checkFleetlockFields(t *testing.T, w *world) {
	ref := fixtures()[model.LockFleetlock].take(w, "fleetlock-default", "978a225b3d7b40e9acd7ce9b62f68444")
	l, err := w.cs.CoordinationV1().Leases(ref.Namespace).Get(w.ctx, ref.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := fleetlockManagedFields(time.Now())
	if len(l.ManagedFields) != 1 {
		t.Fatalf("managedFields %+v", l.ManagedFields)
	}
	got := l.ManagedFields[0]
	if got.Manager != want[0].Manager || got.Operation != want[0].Operation || got.APIVersion != want[0].APIVersion ||
		got.FieldsType != want[0].FieldsType || got.FieldsV1.GetRawString() != want[0].FieldsV1.GetRawString() {
		t.Fatalf("apiserver recorded %+v (fields %s), fixture has %+v (fields %s)", got, got.FieldsV1.GetRawString(), want[0], want[0].FieldsV1.GetRawString())
	}
	if l.Spec.AcquireTime != nil || l.Spec.RenewTime != nil || l.Spec.LeaseDurationSeconds != nil {
		t.Fatalf("fleetlock writes no times: %+v", l.Spec)
	}
	obj := fleetlock.LockOf(l)
	if fs := obj.Spec.(*fleetlock.Spec); fs.HolderSetBy != "fleetlock" || fs.HolderSet.IsZero() ||
		!slices.Contains([]string{"fleetlock"}, fs.HolderSetBy) {
		t.Fatalf("lock time from managedFields: %+v", fs)
	}
}

// kuredDuplicates (issue 10 §3) writes a kured multi-lock as kured leaves it
// with --concurrency 3 and --lock-ttl 1h: n1's first entry expired, so n1
// acquired again and canAcquireMultiple appended a second entry; beside them
// a ghost. Each entry is judged on its own; reaping the expired entry
// removes exactly it (every other byte kept); the ghost is then reapable,
// and removing the last entry removes the annotation.
func kuredDuplicates(t *testing.T, w *world) {
	now := time.Now()
	w.node(w.label+"-n1", "2c09ca98649c4c7abc779cd04c96812e", "boot-1", now.Add(-5*time.Hour), false)
	n1 := w.label + "-n1"
	first := kuredtest.Value{NodeID: n1, Created: now.Add(-3 * time.Hour), TTL: time.Hour}
	ghost := kuredtest.Value{NodeID: "gone-node", Created: now.Add(-2 * time.Hour), TTL: time.Hour * 24}
	second := kuredtest.Value{NodeID: n1, Created: now.Add(-90 * time.Minute), TTL: time.Hour}
	value := kuredtest.Multi(3, first, ghost, second)
	meta := w.meta("kured")
	labels := map[string]string{"app.kubernetes.io/name": "kured"}
	meta.Labels, meta.Annotations = labels, map[string]string{kured.Annotation: value, "other": "kept"}
	ds := &appsv1.DaemonSet{ObjectMeta: meta, Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "kured", Image: "ghcr.io/kubereboot/kured:1.23.0",
				Args: []string{"--concurrency=3", "--lock-ttl=1h"}}}}}}}
	if _, err := w.cs.AppsV1().DaemonSets(w.ns).Create(w.ctx, ds, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	fx := fixtures()[model.LockKured]
	ref := model.LockRef{Kind: model.LockKured, Namespace: w.ns, Name: "kured"}
	e := lock.New(lock.Options{})
	c := w.judge(e, fx, []model.LockRef{ref}, now)
	var got []string
	for _, s := range c.LockStatuses() {
		got = append(got, fmt.Sprintf("%s#%d=%s", s.Holder, s.Entry, s.Verdict))
	}
	// Both of n1's entries have expired (the second 30 minutes ago).
	want := []string{n1 + "#0=expired", "gone-node#1=ghost", n1 + "#2=expired"}
	if !slices.Equal(got, want) {
		t.Fatalf("judged %v, want %v", got, want)
	}
	if _, err := e.Plan(c, ref, n1, model.ActionReap, now); err == nil || !strings.Contains(err.Error(), "--entry") {
		t.Fatalf("a duplicated holder without an entry: %v", err)
	}
	do := func(holder string, entry int) {
		t.Helper()
		c := w.judge(e, fx, []model.LockRef{ref}, now)
		p, err := e.PlanEntry(c, ref, holder, entry, model.ActionReap, now)
		if err != nil || !p.Allowed {
			t.Fatalf("reap %s#%d: %+v %v", holder, entry, p.Refusal, err)
		}
		if r := (&lock.Actor{Client: w.cs, Who: "conformance", NodeSelector: "conformance=" + w.label, Fresh: lock.AsJudged(p)}).Do(w.ctx, p, lock.DoOptions{}); r.Outcome != model.OutcomeDone {
			t.Fatalf("reap %s#%d: %+v", holder, entry, r)
		}
	}
	annotation := func() (string, bool) {
		d, err := w.cs.AppsV1().DaemonSets(w.ns).Get(w.ctx, "kured", metav1.GetOptions{})
		if err != nil || d.Annotations["other"] != "kept" {
			t.Fatalf("daemonset %v %v", d.Annotations, err)
		}
		v, ok := d.Annotations[kured.Annotation]
		return v, ok
	}
	do(n1, 2)
	if v, _ := annotation(); v != kuredtest.Multi(3, first, ghost) {
		t.Fatalf("after removing entry 2: %s", v)
	}
	do(n1, 0)
	if v, _ := annotation(); v != kuredtest.Multi(3, ghost) {
		t.Fatalf("after removing entry 0: %s", v)
	}
	do("gone-node", 0)
	if v, ok := annotation(); ok {
		t.Fatalf("the last entry's removal left %q", v)
	}
}

func TestKuredDuplicatesFake(t *testing.T) { kuredDuplicates(t, fakeWorld(t, "dup")) }

func TestKuredDuplicatesIntegration(t *testing.T) {
	t.Parallel()
	tc := testcluster.Shared(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	kuredDuplicates(t, &world{t: t, cs: tc.Client(t), real: true, ns: tc.Namespace(t, "dup"), ctx: ctx, label: "dup",
		coordinator: func(string) kubernetes.Interface { return tc.Client(t) }})
}
