package lock

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rebootwatch/rebootwatch/internal/coord/fleetlock"
	"github.com/rebootwatch/rebootwatch/model"
)

// otherSpec is a lock shape of a kind no driver is registered for.
type otherSpec struct{}

func (otherSpec) LockKind() model.LockKind { return "nosuch" }

// An unregistered kind is an error in exactly one place (DriverFor), and
// every path through the engine reports it rather than falling back to a
// registered kind.
func TestUnregisteredKindIsAnError(t *testing.T) {
	if _, err := DriverFor("nosuch"); err == nil || !strings.Contains(err.Error(), `unknown lock kind "nosuch"`) ||
		!strings.Contains(err.Error(), "kured, fleetlock") {
		t.Fatalf("DriverFor: %v", err)
	}
	now := at(time.Hour)
	ref := model.LockRef{Kind: "nosuch", Namespace: "x", Name: "y"}
	e := New(Options{})
	c := build(e, step{now, []model.Event{nodesOK(), up(node("n1")),
		lockEv(model.LockObject{LockRef: ref, UID: "u", ResourceVersion: "1", Spec: otherSpec{}})}})
	s, err := statusFor(c.LockStatuses(), ref, "")
	if err != nil || s.Verdict != model.VerdictUnknown || !strings.Contains(s.Reason, `unknown lock kind "nosuch"`) {
		t.Fatalf("status %+v %v", s, err)
	}
	if m := resolve(NewIndex(nil, nil), "nosuch", "n1"); m.Kind != MatchInconclusive {
		t.Fatalf("resolve: %+v", m)
	}
	p, err := e.Plan(c, ref, "", model.ActionReap, now)
	if err != nil || p.Allowed || p.Write.Op != "" {
		t.Fatalf("plan %+v %v", p, err)
	}
	// A write naming an unregistered kind is never applied to any object.
	p.Write = Write{Ref: ref, Op: fleetlock.OpClearHolder, UID: "u", ResourceVersion: "1"}
	p.Allowed = true
	cs := newFakeClientset()
	r := (&Actor{Client: cs, Fresh: asJudged(p)}).Do(context.Background(), p, DoOptions{})
	if r.Outcome != model.OutcomeError || !strings.Contains(r.Message, `unknown lock kind "nosuch"`) || len(cs.Actions()) != 0 {
		t.Fatalf("do: %+v, %d API calls", r, len(cs.Actions()))
	}
}

// Every registered kind has a source (the mistake of a half-added kind).
func TestRegistryKindsHaveSources(t *testing.T) {
	seen := map[model.LockKind]bool{}
	for _, d := range registry {
		if seen[d.Kind()] {
			t.Fatalf("kind %s registered twice", d.Kind())
		}
		seen[d.Kind()] = true
		if d.Source() == "" {
			t.Fatalf("kind %s has no source", d.Kind())
		}
	}
}
