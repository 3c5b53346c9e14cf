package lock

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rebootwatch/rebootwatch/internal/coord/kured"
	"github.com/rebootwatch/rebootwatch/model"
)

// kuredConf is kured's lock object with kured's configuration read from
// args (nil args: configuration not read).
func kuredConf(annotation string, args ...string) model.LockObject {
	o := kuredLock(annotation)
	if args != nil {
		cfg := kured.ParseConfig(args, nil, nil)
		kspec(&o).Config = &cfg
	}
	return o
}

const (
	n2Entry   = `{"nodeID":"n2","metadata":{"unschedulable":false},"created":"2026-11-29T12:55:00Z","TTL":0}`
	goneEntry = `{"nodeID":"gone","metadata":{"unschedulable":false},"created":"2026-11-29T11:00:00Z","TTL":0}`
)

// A value not in the form kured writes is judged unknown, with what is odd
// and what kured itself reads from it; it is never free, and neither a
// release nor a reap edits it without --allow-unsafe.
func TestKuredValueNotInKuredsFormIsUnknown(t *testing.T) {
	now := at(time.Hour)
	for _, tc := range []struct {
		name, value string
		args        []string
		want        []string // in the reason
	}{
		{"other key case hides a holder", `{"maxOwners":2,"Locks":[` + n2Entry + `]}`, []string{"--concurrency=2"},
			[]string{`key "Locks" is not kured's "locks"`, `held by "n2"`}},
		{"two locks keys: kured reads the last", `{"maxOwners":2,"locks":[` + goneEntry + `],"locks":[` + n2Entry + `]}`, []string{"--concurrency=2"},
			[]string{`duplicate key "locks"`, `held by "n2"`}},
		{"extra key", `{"nodeID":"gone","metadata":{"unschedulable":false},"created":"2026-11-29T11:00:00Z","TTL":0,"x":1}`, []string{},
			[]string{`extra key "x"`, `held by "gone"`}},
		{"two nodeID spellings: kured reads the last", `{"nodeID":"gone","NodeID":"n2"}`, []string{},
			[]string{`key "NodeID" is not kured's "nodeID"`, `held by "n2"`}},
		{"duplicate key inside an entry", `{"maxOwners":2,"locks":[{"nodeID":"gone","nodeID":"n2"}]}`, []string{"--concurrency=2"},
			[]string{`multi-lock entry 0: duplicate key "nodeID"`, `held by "n2"`}},
		{"duplicate key inside metadata", `{"nodeID":"gone","metadata":{"unschedulable":false,"unschedulable":true}}`, []string{},
			[]string{`metadata: duplicate key "unschedulable"`}},
		{"null: kured's single lock reads it as held by nobody forever", `null`, []string{},
			[]string{`JSON null`, `held by nodeID ""`, `forever`}},
		{"not JSON: kured cannot decode it", `{"nodeID":`, []string{},
			[]string{`cannot decode`, `no node reboots`}},
		{"configuration unknown: both of kured's readings", `{"maxOwners":2,"Locks":[` + n2Entry + `]}`, nil,
			[]string{`--concurrency is not known here`, `kured with --concurrency 1 reads it as held by nodeID ""`, `kured with --concurrency > 1 reads it as held by "n2"`}},
		{"multi-lock under kured --concurrency 1", `{"maxOwners":2,"locks":[` + goneEntry + `]}`, []string{},
			[]string{`multi-lock`, `--concurrency 1 (default)`, `held by nodeID ""`}},
		{"single lock under kured --concurrency 2", goneEntry, []string{"--concurrency", "2"},
			[]string{`single lock`, `--concurrency 2 (arg)`, `multi-lock with no holders`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := New(Options{})
			obj := kuredConf(tc.value, tc.args...)
			c := build(e, step{now, []model.Event{nodesOK(), up(node("n1")), up(node("n2")), lockEv(obj)}})
			sts := c.LockStatuses()
			if len(sts) != 1 || sts[0].Verdict != model.VerdictUnknown {
				t.Fatalf("statuses %+v", sts)
			}
			for _, w := range tc.want {
				if !strings.Contains(sts[0].Reason, w) {
					t.Errorf("reason %q lacks %q", sts[0].Reason, w)
				}
			}
			for _, a := range []model.Action{model.ActionReap, model.ActionRelease} {
				p, err := e.Plan(c, kuredRef, "", a, now)
				if err != nil || p.Allowed {
					t.Fatalf("%s: plan %+v %v", a, p, err)
				}
				cs := newFakeClientset(withNodes(p, ds(tc.value, "100"))...)
				if r := (&Actor{Client: cs}).Do(context.Background(), p, DoOptions{}); r.Outcome != model.OutcomeRefused {
					t.Fatalf("%s without --allow-unsafe: %+v", a, r)
				}
				if n := writesOf(cs); n != 0 {
					t.Fatalf("%s without --allow-unsafe wrote %d times", a, n)
				}
			}
		})
	}
}

// The case: kured (--concurrency 2) reads n2 as holding its lock
// under "Locks"; n2 has just taken it (not cordoned yet). A reap of a ghost
// fleetlock must not pass the other-nodes gate: who holds kured's lock is
// unknown here.
func TestUnknownKuredLockFailsOtherNodesGate(t *testing.T) {
	now := at(time.Hour)
	e := New(Options{})
	c := build(e, step{now, []model.Event{nodesOK(), up(node("n1", machine(mid2))), up(node("n2", machine(mid3))),
		lockEv(fleet(zid1)), lockEv(kuredConf(`{"maxOwners":2,"Locks":[`+n2Entry+`]}`, "--concurrency=2"))}})
	p, err := e.Plan(c, fleetRef, "", model.ActionReap, now)
	if err != nil {
		t.Fatal(err)
	}
	if p.Status.Verdict != model.VerdictGhost || p.Allowed {
		t.Fatalf("reap of the ghost fleetlock allowed beside an unknown kured lock: %+v", p.Gates)
	}
	var g Gate
	for _, x := range p.Gates {
		if x.Name == GateOtherNodes {
			g = x
		}
	}
	if g.Passed || !strings.Contains(g.Reason, kuredRef.String()) || !strings.Contains(g.Reason, "unknown") {
		t.Fatalf("other-nodes gate %+v", g)
	}
}

// An invalid lock annotation name in kured's configuration (arg or env) is
// flagged: the lock is unknown, never free (kured's every write under that
// key is refused, and there is nowhere to read a lock from).
func TestInvalidKuredLockAnnotationIsUnknown(t *testing.T) {
	now := at(time.Hour)
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{args: []string{"--lock-annotation=Bad Key!"}, want: `--lock-annotation "Bad Key!" (arg) is not a valid annotation key`},
		{env: map[string]string{"KURED_LOCK_ANNOTATION": "a/b/c"}, want: `--lock-annotation "a/b/c" (env KURED_LOCK_ANNOTATION) is not a valid annotation key`},
		{args: []string{"--lock-annotation="}, want: `--lock-annotation "" (arg) is not a valid annotation key`},
	} {
		cfg := kured.ParseConfig(tc.args, tc.env, nil)
		obj := model.LockObject{LockRef: kuredRef, UID: "uid-ds", ResourceVersion: "100", Spec: &kured.Spec{Annotation: cfg.LockAnnotation, Config: &cfg}}
		e := New(Options{})
		c := build(e, step{now, []model.Event{nodesOK(), up(node("n1")), lockEv(obj)}})
		sts := c.LockStatuses()
		if len(sts) != 1 || sts[0].Verdict != model.VerdictUnknown || !strings.Contains(sts[0].Reason, tc.want) {
			t.Errorf("%v %v: statuses %+v", tc.args, tc.env, sts)
		}
		if cfg.LockAnnotationProblem() == "" {
			t.Errorf("%v %v: no problem reported", tc.args, tc.env)
		}
	}
	// A valid custom key is not flagged.
	if cfg := kured.ParseConfig([]string{"--lock-annotation=example.com/lock"}, nil, nil); cfg.LockAnnotationProblem() != "" {
		t.Fatal(cfg.LockAnnotationProblem())
	}
}
