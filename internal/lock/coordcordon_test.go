package lock

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rebootwatch/rebootwatch/model"
)

// Issue 24 §4: the uncordon of a node a coordinator kind left cordoned
// (its node gate rests on the kind's reading, not the model's phases) is
// re-read before the write like every gate's input: the actor reads the
// kinds again, and refuses, writing nothing, when they no longer say so or
// cannot be read.
func TestUncordonCoordinatorReadAgainBeforeWrite(t *testing.T) {
	e := New(Options{})
	c := build(e, step{at(0), []model.Event{nodesOK(), up(node("n1", machine(mid1))), up(node("n2", machine(mid2), cordoned()))}},
		step{at(time.Minute), nil})
	now := at(time.Minute)
	if p, _ := e.PlanUncordon(c, "n2", now); p.Allowed {
		t.Fatalf("uncordon allowed with no coordinator reading: %+v", p.Gates)
	}
	const why = "suc: plan ns/p cordoned n2 for job ns/j, which failed"
	e.SetLeftCordoned(map[string]string{"n2": why})
	p, err := e.PlanUncordon(c, "n2", now)
	if err != nil || !p.Allowed || p.LeftBy != why {
		t.Fatalf("plan: %s %v %+v", p.Refusal, err, p.Gates)
	}
	for _, tc := range []struct {
		name string
		read func(context.Context) (Cordons, error)
		done bool
		want string
	}{
		{"still left cordoned", func(context.Context) (Cordons, error) { return Cordons{Left: map[string]string{"n2": why}}, nil }, true, ""},
		{"no longer", func(context.Context) (Cordons, error) { return Cordons{}, nil }, false, "no coordinator says it left n2 cordoned"},
		// Issue 32 §3: judged again from a fresh read, the cordon is now
		// someone else's (cordoned again by hand since the plan).
		{"not its own now", func(context.Context) (Cordons, error) {
			return Cordons{NotOwned: map[string]string{"n2": "suc: cordoned by kubectl-cordon at 2026-12-01T12:00:00Z, after job ns/j ended"}}, nil
		}, false, "the cordon of n2 is not its coordinator's: suc: cordoned by kubectl-cordon"},
		{"unread", func(context.Context) (Cordons, error) { return Cordons{}, errors.New("suc: plans not read") }, false, "could not read the coordinator kinds"},
		{"no reader", nil, false, "cannot read again"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := withNodes(p)
			for _, o := range objs {
				if n := o.(*corev1.Node); n.Name == "n2" {
					n.ResourceVersion = "7"
				}
			}
			cs := newFakeClientset(objs...)
			f := asJudged(p)
			f.LeftCordoned = tc.read
			r := (&Actor{Client: cs, Who: "alice", Fresh: f}).Do(context.Background(), p, DoOptions{})
			n, _ := cs.CoreV1().Nodes().Get(context.Background(), "n2", metav1.GetOptions{})
			if tc.done {
				if r.Outcome != model.OutcomeDone || n.Spec.Unschedulable {
					t.Fatalf("%+v; cordoned %v", r, n.Spec.Unschedulable)
				}
				return
			}
			if r.Outcome != model.OutcomeRefused || !strings.Contains(r.Message, tc.want) || !n.Spec.Unschedulable {
				t.Fatalf("%+v; cordoned %v", r, n.Spec.Unschedulable)
			}
		})
	}
}

// Issue 32 §3: a coordinator kind says the cordon is not its own (a later
// cordon by someone else): the node gate refuses, saying whose cordon it
// is, and the plan's write is tied to the cordon judged — one written
// since, by anyone, is not undone.
func TestUncordonNotOwnedAndCordonPrecondition(t *testing.T) {
	e := New(Options{})
	c := build(e, step{at(0), []model.Event{nodesOK(), up(node("n1", machine(mid1))), up(node("n2", machine(mid2), cordoned()))}},
		step{at(time.Minute), nil})
	now := at(time.Minute)
	const whose = "flatcar: cordoned by kubectl-cordon at 2026-12-01T12:00:00Z, not by update-agent, which wrote agent-made-unschedulable=true"
	e.SetCordons(Cordons{NotOwned: map[string]string{"n2": whose}})
	p, err := e.PlanUncordon(c, "n2", now)
	if err != nil || p.Allowed {
		t.Fatalf("uncordon of a cordon its coordinator does not own allowed: %+v", p.Gates)
	}
	if g := p.FailedGates(); len(g) != 1 || g[0].Name != GateNode || !strings.Contains(g[0].Reason, whose) {
		t.Errorf("node gate %+v", g)
	}
	// The write carries the judged cordon; a cordon written since is not
	// undone.
	e.SetCordons(Cordons{Left: map[string]string{"n2": "flatcar: left cordoned by its agent"}})
	n2, _ := c.Node("n2")
	n2.UnschedulableSetBy, n2.UnschedulableSetAt = "update-agent", at(-time.Hour).Truncate(time.Second)
	p, _ = e.PlanUncordon(c, "n2", now)
	if !p.Allowed || p.Write.CordonBy != "update-agent" || !strings.Contains(p.Write.String(), "still the cordon of update-agent") {
		t.Fatalf("plan %s; write %s", p.Refusal, p.Write)
	}
	objs := withNodes(p)
	for _, o := range objs {
		if n := o.(*corev1.Node); n.Name == "n2" {
			mt := metav1.NewTime(at(0).Truncate(time.Second))
			n.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl-cordon", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
				Time: &mt, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:spec":{"f:unschedulable":{}}}`)}}
		}
	}
	cs := newFakeClientset(objs...)
	f := asJudged(p)
	f.LeftCordoned = func(context.Context) (Cordons, error) {
		return Cordons{Left: map[string]string{"n2": "flatcar: left cordoned by its agent"}}, nil
	}
	r := (&Actor{Client: cs, Who: "alice", Fresh: f}).Do(context.Background(), p, DoOptions{})
	n, _ := cs.CoreV1().Nodes().Get(context.Background(), "n2", metav1.GetOptions{})
	if r.Outcome == model.OutcomeDone || !n.Spec.Unschedulable || !strings.Contains(r.Message, "carries another cordon than the one judged (now: by kubectl-cordon") {
		t.Fatalf("%+v; cordoned %v", r, n.Spec.Unschedulable)
	}
}

// Issue 32 §4: the uncordon write says what that node's coordinator would
// have done, in its package's words (coord.Capabilities.Uncordons), never
// fleetlock's "when the holder unlocks itself" for another kind.
func TestUncordonSaysWhatItsCoordinatorWouldDo(t *testing.T) {
	e := New(Options{})
	c := build(e, step{at(0), []model.Event{nodesOK(), up(node("n1", machine(mid1))), up(node("n2", machine(mid2), cordoned()))}},
		step{at(time.Minute), nil})
	for kind, want := range map[model.LockKind]string{
		"suc":     "as system-upgrade-controller does only after a successful job",
		"flatcar": "as FLUO's update-agent does after the operator's after-reboot checks",
	} {
		e.SetCordons(Cordons{Left: map[string]string{"n2": string(kind) + ": left cordoned"}, Kinds: map[string]model.LockKind{"n2": kind}})
		p, err := e.PlanUncordon(c, "n2", at(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		if s := p.Write.String(); !strings.Contains(s, want) || strings.Contains(s, "unlocks itself") {
			t.Errorf("%s: write %q, want %q", kind, s, want)
		}
	}
}
