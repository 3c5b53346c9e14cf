package cli

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/rebootwatch/rebootwatch/model"
)

// TestSnapshotNamesTheFailingGate: a snapshot has no lock detail to point
// at, so a ghost whose reap waits shows the failing gate, in ACTIONS and in
// what clears the fleet's blocker (issue 23 §4).
func TestSnapshotNamesTheFailingGate(t *testing.T) {
	env, out, errb := testEnv(demoStart)
	run(context.Background(), append(append([]string{}, demo22...), "--snapshot"), env)
	s := out.String()
	var ghost string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, "fleetlock-default") && strings.Contains(l, " ghost ") {
			ghost = l
		}
	}
	if !strings.Contains(ghost, " reap ✗ other-nodes ") {
		t.Errorf("the ghost's ACTIONS does not name the failing gate: %q\n%s", ghost, errb)
	}
	if strings.Contains(s, "see the lock's detail") ||
		!strings.Contains(s, "ghost: reap it once the gate other-nodes passes (other nodes are not steady: worker-1 (mid-cycle (recovering), holds kured:kube-system/kured))") {
		t.Errorf("BLOCKED does not say what the reap waits for:\n%s", s)
	}
}

// TestActionsAgreeWithGatesOverTheDemo: over both demo scenarios at
// several moments, a lock's snapshot actions are exactly what its release
// and reap dry runs allow, and its pending action is the one refused, with
// the same failing gates. The one exception is deliberate: an operator may
// release a held lock whose holder rebooted (the verdict gate says so),
// which the actions never recommend.
func TestActionsAgreeWithGatesOverTheDemo(t *testing.T) {
	t.Parallel() // the demo only, in memory
	type lockDoc struct {
		Kind, Namespace, Name, Holder string
		Verdict                       model.Verdict
		Actions                       []model.Action
		Pending                       *model.SnapshotPending
		Entry                         *int
	}
	checked := 0
	for _, scenario := range []string{"--demo", "--demo=kured"} {
		for _, at := range []string{"0s", "3m", "8m", "15m", "22m", "40m", "90m"} {
			base := []string{scenario, "--speed", "0", "--demo-at", at}
			env, out, _ := testEnv(demoStart)
			run(context.Background(), append(append([]string{}, base...), "--snapshot", "-o", "json"), env)
			var snap struct{ Locks []lockDoc }
			if err := json.Unmarshal(out.Bytes(), &snap); err != nil {
				t.Fatalf("%v: %v\n%s", base, err, out)
			}
			for _, l := range snap.Locks {
				if l.Holder == "" {
					continue
				}
				for _, a := range []model.Action{model.ActionRelease, model.ActionReap} {
					args := append(append([]string{}, base...), string(a), "--kind", l.Kind, "--lock", l.Namespace+"/"+l.Name, "--holder", l.Holder, "--dry-run", "-o", "json")
					if l.Entry != nil {
						args = append(args, "--entry", string(rune('0'+*l.Entry)))
					}
					env, out, errb := testEnv(demoStart)
					run(context.Background(), args, env)
					var plan struct {
						Allowed bool
						Verdict model.Verdict
						Gates   []struct {
							Name   string
							Passed bool
							Reason string
						}
					}
					if err := json.Unmarshal(out.Bytes(), &plan); err != nil {
						t.Fatalf("%v: %v\n%s\n%s", args, err, out, errb)
					}
					checked++
					listed := slices.Contains(l.Actions, a)
					if listed != plan.Allowed && !(a == model.ActionRelease && plan.Allowed && l.Verdict == model.VerdictHeld) {
						t.Errorf("%s at %s, %s/%s held by %s (%s): actions %v, %s allowed %v: %+v", scenario, at, l.Namespace, l.Name, l.Holder, l.Verdict, l.Actions, a, plan.Allowed, plan.Gates)
					}
					if l.Pending == nil || l.Pending.Action != a {
						continue
					}
					var failed []string
					for _, g := range plan.Gates {
						if !g.Passed {
							failed = append(failed, g.Name+": "+g.Reason)
						}
					}
					var pending []string
					for _, g := range l.Pending.Failed {
						pending = append(pending, g.Name+": "+g.Reason)
					}
					if plan.Allowed || strings.Join(failed, "\n") != strings.Join(pending, "\n") {
						t.Errorf("%s at %s, %s/%s: pending %s waits for %q, its dry run fails %q", scenario, at, l.Namespace, l.Name, a, pending, failed)
					}
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no lock with a holder in any demo moment")
	}
}
