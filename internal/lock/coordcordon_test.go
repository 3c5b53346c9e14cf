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
		read func(context.Context) (map[string]string, error)
		done bool
		want string
	}{
		{"still left cordoned", func(context.Context) (map[string]string, error) { return map[string]string{"n2": why}, nil }, true, ""},
		{"no longer", func(context.Context) (map[string]string, error) { return map[string]string{}, nil }, false, "no coordinator says it left n2 cordoned"},
		{"unread", func(context.Context) (map[string]string, error) { return nil, errors.New("suc: plans not read") }, false, "could not read the coordinator kinds"},
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
