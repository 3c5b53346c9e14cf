package lock

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/rebootwatch/rebootwatch/internal/coord/fleetlock"
	"github.com/rebootwatch/rebootwatch/model"
)

// stillCordonedWorld: fleetlock's holder n1 cordoned on lock, rebooted,
// and someone else freed the Lease — fleetlock never uncordons it then
// (server.go unlock answers "already unlocked"). A kured ghost sits beside.
func stillCordonedWorld(e *Engine) *model.Cluster {
	free := fleet("")
	return build(e,
		step{at(0), []model.Event{nodesOK(), up(node("n1", machine(mid1))), up(node("n2", machine(mid2))), lockEv(fleet(zid1))}},
		step{at(time.Minute), []model.Event{up(node("n1", machine(mid1), cordoned()))}},
		step{at(5 * time.Minute), []model.Event{up(node("n1", machine(mid1), cordoned(), notReady(at(5*time.Minute))))}},
		step{at(8 * time.Minute), []model.Event{up(node("n1", machine(mid1), cordoned(), boot("n1-b2"), readySince(at(8*time.Minute))))}},
		step{at(30 * time.Minute), []model.Event{lockEv(free), lockEv(kuredLock(single(ent("gone", at(-time.Hour), 0))))}},
		step{at(31 * time.Minute), nil})
}

func TestDoneStillCordonedBlocksNothing(t *testing.T) {
	e := New(Options{})
	c := stillCordonedWorld(e)
	now := at(31 * time.Minute)
	if c.Phase("n1") != model.PhaseDone || !c.StillCordoned("n1") {
		t.Fatalf("n1: phase %s, still cordoned %v; want done · still cordoned", c.Phase("n1"), c.StillCordoned("n1"))
	}
	found := false
	for _, a := range c.Attention(now) {
		found = found || (strings.Contains(a.Message, "n1 is done · still cordoned") && strings.Contains(a.Message, "fleetlock did not uncordon"))
	}
	if !found {
		t.Fatalf("no attention item: %+v", c.Attention(now))
	}
	// It is not mid-cycle: the ghost beside it is reapable.
	p, err := e.Plan(c, kuredRef, "gone", model.ActionReap, now)
	if err != nil || !p.Allowed {
		t.Fatalf("reap of the ghost beside a still-cordoned node: %s %v", p.Refusal, err)
	}
}

func TestUncordonPlanAndDo(t *testing.T) {
	e := New(Options{})
	c := stillCordonedWorld(e)
	now := at(31 * time.Minute)
	p, err := e.PlanUncordon(c, "n1", now)
	if err != nil || !p.Allowed || p.Write.Op != OpUncordon || p.Write.BootID != "n1-b2" || p.Action != model.ActionUncordon {
		t.Fatalf("plan %+v %v", p, err)
	}
	// The cluster as judged, but n1's boot id and cordon.
	mk := func(boot string, cordon bool) *fake.Clientset {
		objs := withNodes(p)
		for _, o := range objs {
			if n := o.(*corev1.Node); n.Name == "n1" {
				n.ResourceVersion, n.Spec.Unschedulable, n.Status.NodeInfo.BootID = "77", cordon, boot
			}
		}
		return newFakeClientset(objs...)
	}
	cs := mk("n1-b2", true)
	r := (&Actor{Client: cs, Who: "alice", Fresh: asJudged(p)}).Do(context.Background(), p, DoOptions{})
	if r.Outcome != model.OutcomeDone {
		t.Fatalf("do: %+v", r)
	}
	n, _ := cs.CoreV1().Nodes().Get(context.Background(), "n1", metav1.GetOptions{})
	if n.Spec.Unschedulable {
		t.Fatal("still cordoned after uncordon")
	}
	evs, _ := cs.CoreV1().Events(metav1.NamespaceDefault).List(context.Background(), metav1.ListOptions{})
	if len(evs.Items) != 1 || evs.Items[0].Reason != ReasonUncordoned || evs.Items[0].InvolvedObject.Kind != "Node" ||
		!strings.Contains(evs.Items[0].Message, "alice") {
		t.Fatalf("events %+v", evs.Items)
	}
	// Another reboot since the judgement, or already uncordoned: the fresh
	// read of the node list before the write refuses, and nothing is
	// written (the write's own preconditions check it again).
	for _, tc := range []struct {
		boot   string
		cordon bool
		want   string
		pre    string
	}{{"n1-b3", true, "boot=n1-b2 → boot=n1-b3", "rebooted again"}, {"n1-b2", false, "cordoned=true → cordoned=false", "no longer cordoned"}} {
		var pe *PreconditionError
		if _, err := applyUncordon(context.Background(), mk(tc.boot, tc.cordon), p.Write); !errors.As(err, &pe) || !strings.Contains(pe.Msg, tc.pre) {
			t.Fatalf("%s: the write's precondition: %v", tc.pre, err)
		}
		cs := mk(tc.boot, tc.cordon)
		r := (&Actor{Client: cs, Fresh: asJudged(p)}).Do(context.Background(), p, DoOptions{})
		if r.Outcome != model.OutcomeRefused || !strings.Contains(r.Message, "uncordon refused: fresh-data") || !strings.Contains(r.Message, tc.want) {
			t.Fatalf("%s: %+v", tc.want, r)
		}
		for _, a := range cs.Actions() {
			if a.GetVerb() == "update" {
				t.Fatalf("%s: wrote %v", tc.want, a)
			}
		}
	}
	// A node that is not done · still cordoned is refused by the node gate.
	q, err := e.PlanUncordon(c, "n2", now)
	if err != nil || q.Allowed || !strings.Contains(q.Refusal, "node: n2 is not cordoned") {
		t.Fatalf("n2: %+v %v", q, err)
	}
}

// A release of a fleetlock orphan plans two writes; --keep-cordoned drops
// the second; the actor makes both, each with its Event.
func TestFleetlockReleaseUncordons(t *testing.T) {
	e := New(Options{})
	c := build(e,
		step{at(0), []model.Event{nodesOK(), up(node("n1", machine(mid1))), up(node("n2", machine(mid2))), lockEv(fleet(zid1))}},
		step{at(time.Minute), []model.Event{up(node("n1", machine(mid1), cordoned()))}},
		step{at(5 * time.Minute), []model.Event{up(node("n1", machine(mid1), cordoned(), notReady(at(5*time.Minute))))}},
		step{at(8 * time.Minute), []model.Event{up(node("n1", machine(mid1), cordoned(), boot("n1-b2"), readySince(at(8*time.Minute))))}},
		step{at(30 * time.Minute), nil})
	now := at(30 * time.Minute)
	p, err := e.Plan(c, fleetRef, "", model.ActionRelease, now)
	if err != nil || !p.Allowed || p.Write.Op != fleetlock.OpClearHolder || p.Uncordon.Op != OpUncordon || p.Uncordon.Node != "n1" {
		t.Fatalf("plan %+v %v", p, err)
	}
	if k := p.KeepCordoned(); k.Uncordon.Op != "" || k.Write != p.Write {
		t.Fatalf("keep cordoned: %+v", k)
	}
	// The cluster as judged: n1 cordoned after its reboot (boot n1-b2), n2.
	cs := newFakeClientset(withNodes(p, lease(zid1, "200"))...)
	r := (&Actor{Client: cs, Who: "bob", Fresh: asJudged(p)}).Do(context.Background(), p, DoOptions{})
	if !r.Complete() || r.Uncordon.Outcome != model.OutcomeDone {
		t.Fatalf("do %+v", r)
	}
	n, _ := cs.CoreV1().Nodes().Get(context.Background(), "n1", metav1.GetOptions{})
	if n.Spec.Unschedulable {
		t.Fatal("holder still cordoned after release")
	}
	var reasons []string
	for _, ns := range []string{"default"} {
		evs, _ := cs.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
		for _, ev := range evs.Items {
			reasons = append(reasons, ev.InvolvedObject.Kind+"/"+ev.Reason)
		}
	}
	if strings.Join(reasons, ",") != "Lease/"+ReasonReleased+",Node/"+ReasonUncordoned && strings.Join(reasons, ",") != "Node/"+ReasonUncordoned+",Lease/"+ReasonReleased {
		t.Fatalf("events %v", reasons)
	}
}
