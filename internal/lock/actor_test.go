package lock

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/rebootwatch/rebootwatch/internal/coord/kured"
	"github.com/rebootwatch/rebootwatch/model"
)

func ds(annotation string, rv string) *appsv1.DaemonSet {
	return &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "kured", Namespace: "kube-system", UID: "uid-ds", ResourceVersion: rv,
		Annotations: map[string]string{kured.Annotation: annotation, "keep": "me"}}}
}

func lease(holder string, rv string) *coordinationv1.Lease {
	tr := int32(3)
	return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "fleetlock-default", Namespace: "default", UID: "uid-lease", ResourceVersion: rv},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseTransitions: &tr}}
}

func writes(cs *fake.Clientset) []string {
	var out []string
	for _, a := range cs.Actions() {
		if a.GetVerb() != "get" && a.GetVerb() != "list" && a.GetVerb() != "watch" {
			out = append(out, a.GetVerb()+" "+a.GetResource().Resource)
		}
	}
	return out
}

func ghostPlan(t *testing.T, ann string) Plan {
	now := at(time.Hour)
	e := New(Options{})
	c := build(e, step{now, []model.Event{nodesOK(), up(node("n1")), lockEv(kuredLock(ann))}})
	p, err := e.Plan(c, kuredRef, "n9", model.ActionReap, now)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestActorReapKuredSingle(t *testing.T) {
	ann := single(ent("n9", at(0), 0))
	p := ghostPlan(t, ann)
	cs := newFakeClientset(withNodes(p, ds(ann, "100"))...)
	var logs bytes.Buffer
	a := &Actor{Client: cs, Who: "alice", Logger: slog.New(slog.NewJSONHandler(&logs, nil)), Fresh: asJudged(p)}
	r := a.Do(context.Background(), p, DoOptions{})
	if r.Outcome != model.OutcomeDone {
		t.Fatalf("outcome %s: %s", r.Outcome, r.Message)
	}
	got, _ := cs.AppsV1().DaemonSets("kube-system").Get(context.Background(), "kured", metav1.GetOptions{})
	if _, ok := got.Annotations[kured.Annotation]; ok || got.Annotations["keep"] != "me" {
		t.Fatalf("annotations after reap: %v", got.Annotations)
	}
	evs, _ := cs.CoreV1().Events("kube-system").List(context.Background(), metav1.ListOptions{})
	if len(evs.Items) != 1 || evs.Items[0].Reason != ReasonReaped || evs.Items[0].InvolvedObject.Name != "kured" ||
		!strings.Contains(evs.Items[0].Message, "alice") || !strings.Contains(evs.Items[0].Message, "ghost") {
		t.Fatalf("events %+v", evs.Items)
	}
	// The API server names the Event: the actor sends a generateName only.
	if ev := evs.Items[0]; ev.GenerateName != "kured." || !strings.HasPrefix(ev.Name, "kured.") {
		t.Fatalf("event named %q (generateName %q), want one the server names from \"kured.\"", ev.Name, ev.GenerateName)
	}
	for _, want := range []string{`"who":"alice"`, `"outcome":"done"`, `"verdict":"ghost"`, `"holder":"n9"`} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log %s lacks %s", logs.String(), want)
		}
	}
}

func TestActorDryRunMakesNoCall(t *testing.T) {
	ann := single(ent("n9", at(0), 0))
	p := ghostPlan(t, ann)
	cs := newFakeClientset(withNodes(p, ds(ann, "100"))...)
	a := &Actor{Client: cs, Who: "alice", DryRun: true, Logger: slog.New(slog.DiscardHandler)}
	r := a.Do(context.Background(), p, DoOptions{})
	if r.Outcome != model.OutcomeDryRun || r.Write != p.Write || !strings.Contains(r.Message, p.Write.String()) {
		t.Fatalf("dry run: %+v", r)
	}
	if len(cs.Actions()) != 0 {
		t.Fatalf("dry run called the API: %v", cs.Actions())
	}
}

func TestActorConflictChangesNothing(t *testing.T) {
	ann := single(ent("n9", at(0), 0))
	p := ghostPlan(t, ann)
	// The object moved on (resourceVersion 101) since it was judged at 100.
	cs := newFakeClientset(withNodes(p, ds(ann, "101"))...)
	a := &Actor{Client: cs, Who: "alice", Logger: slog.New(slog.DiscardHandler), Fresh: asJudged(p)}
	r := a.Do(context.Background(), p, DoOptions{})
	if r.Outcome != model.OutcomeConflict || !strings.Contains(r.Message, "100 → 101") || !strings.Contains(r.Message, "nothing changed") {
		t.Fatalf("result %+v", r)
	}
	if w := writes(cs); len(w) != 0 {
		t.Fatalf("conflict wrote: %v", w)
	}

	// A different UID (deleted and re-created) is a conflict too.
	obj := ds(ann, "100")
	obj.UID = "other"
	cs = newFakeClientset(withNodes(p, obj)...)
	a.Client = cs
	if r := a.Do(context.Background(), p, DoOptions{}); r.Outcome != model.OutcomeConflict || !strings.Contains(r.Message, "replaced") {
		t.Fatalf("uid change: %+v", r)
	}

	// A 409 from the server: conflict, one update attempt, no retry, no Event.
	cs = newFakeClientset(withNodes(p, ds(ann, "100"))...)
	cs.PrependReactor("update", "daemonsets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewConflict(schema.GroupResource{Group: "apps", Resource: "daemonsets"}, "kured", nil)
	})
	a.Client = cs
	if r := a.Do(context.Background(), p, DoOptions{}); r.Outcome != model.OutcomeConflict {
		t.Fatalf("409: %+v", r)
	}
	if w := writes(cs); len(w) != 1 || w[0] != "update daemonsets" {
		t.Fatalf("409 writes: %v", w)
	}
}

func TestActorForbidden(t *testing.T) {
	ann := single(ent("n9", at(0), 0))
	p := ghostPlan(t, ann)
	cs := newFakeClientset(withNodes(p, ds(ann, "100"))...)
	cs.PrependReactor("update", "daemonsets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "daemonsets"}, "kured", nil)
	})
	a := &Actor{Client: cs, Who: "bob", Logger: slog.New(slog.DiscardHandler), Fresh: asJudged(p)}
	r := a.Do(context.Background(), p, DoOptions{})
	if r.Outcome != model.OutcomeForbidden || !strings.Contains(r.Message, "bob may not update daemonsets.apps") {
		t.Fatalf("result %+v", r)
	}
}

func TestActorRefusalAndOverride(t *testing.T) {
	now := at(time.Hour)
	ann := single(ent("n9", at(0), 0))
	mk := func(opts Options) Plan {
		e := New(opts)
		c := build(e, step{now, []model.Event{nodesOK(), up(node("n1", notReady(now))), lockEv(kuredLock(ann))}})
		p, err := e.Plan(c, kuredRef, "n9", model.ActionReap, now)
		if err != nil {
			t.Fatal(err)
		}
		if p.Allowed {
			t.Fatal("plan with a NotReady node allowed")
		}
		return p
	}
	p := mk(Options{})
	cs := newFakeClientset(withNodes(p, ds(ann, "100"))...)
	a := &Actor{Client: cs, Who: "alice", Logger: slog.New(slog.DiscardHandler), Fresh: asJudged(p)}
	if r := a.Do(context.Background(), p, DoOptions{}); r.Outcome != model.OutcomeRefused || !strings.Contains(r.Message, GateOtherNodes) {
		t.Fatalf("refused plan: %+v", r)
	}
	if len(cs.Actions()) != 0 {
		t.Fatalf("refusal called the API: %v", cs.Actions())
	}
	// The agent's plan can never be overridden.
	if r := a.Do(context.Background(), mk(Options{Unattended: true}), DoOptions{AllowUnsafe: true}); r.Outcome != model.OutcomeRefused {
		t.Fatalf("unattended override: %+v", r)
	}
	if len(cs.Actions()) != 0 {
		t.Fatalf("unattended refusal called the API: %v", cs.Actions())
	}
	// An operator's typed override goes through and says so.
	r := a.Do(context.Background(), p, DoOptions{AllowUnsafe: true})
	if r.Outcome != model.OutcomeDone || !strings.Contains(r.Message, "OVERRIDING") {
		t.Fatalf("override: %+v", r)
	}
}

func TestActorFleetlockRelease(t *testing.T) {
	now := at(time.Hour)
	e := New(Options{})
	l := fleet(zid1)
	fspec(&l).AcquireTime = now.Add(-time.Hour)
	c := build(e, step{now, []model.Event{nodesOK(), up(node("n1", machine(mid1), readySince(now.Add(-30*time.Minute)))), lockEv(l)}})
	p, err := e.Plan(c, fleetRef, "", model.ActionRelease, now)
	if err != nil || !p.Allowed {
		t.Fatalf("plan %+v %v", p, err)
	}
	cs := newFakeClientset(withNodes(p, lease(zid1, "200"))...)
	a := &Actor{Client: cs, Who: "alice", Logger: slog.New(slog.DiscardHandler), Fresh: asJudged(p)}
	if r := a.Do(context.Background(), p, DoOptions{}); r.Outcome != model.OutcomeDone {
		t.Fatalf("result %+v", r)
	}
	got, _ := cs.CoordinationV1().Leases("default").Get(context.Background(), "fleetlock-default", metav1.GetOptions{})
	if got.Spec.HolderIdentity == nil || *got.Spec.HolderIdentity != "" || got.Spec.LeaseTransitions == nil || *got.Spec.LeaseTransitions != 3 {
		t.Fatalf("lease after release: %+v", got.Spec)
	}
	evs, _ := cs.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{})
	if len(evs.Items) != 1 || evs.Items[0].Reason != ReasonReleased || evs.Items[0].InvolvedObject.Kind != "Lease" {
		t.Fatalf("events %+v", evs.Items)
	}
	// A holder that changed at the same resourceVersion (cannot happen on a
	// real server, but the actor still checks) is a conflict.
	cs = newFakeClientset(withNodes(p, lease("someone-else", "200"))...)
	a.Client = cs
	if r := a.Do(context.Background(), p, DoOptions{}); r.Outcome != model.OutcomeConflict {
		t.Fatalf("changed holder: %+v", r)
	}
}
