package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/rebootwatch/rebootwatch/internal/live"
	"github.com/rebootwatch/rebootwatch/internal/lock"
	"github.com/rebootwatch/rebootwatch/model"
	"github.com/rebootwatch/rebootwatch/sources/sim"
	"github.com/rebootwatch/rebootwatch/tui"
)

// The dashboard's confirm runs the actor its wiring built (clusterOptions),
// whose fresh read before the write reads every gate's input again: a
// Longhorn volume that turned degraded after the dialog's plan was judged
// (here behind the demo's informer, in its fake API) refuses the release
// with fresh-data, and nothing is written; unchanged, the release is made
// (issue 22 §1).
func TestDashboardConfirmReadsEveryGateInputFresh(t *testing.T) {
	for _, degrade := range []bool{true, false} {
		env, _, _ := testEnv(demoStart)
		c := DefaultCommon()
		c.Demo, c.DemoScenario, c.DemoSpeed, c.DemoAt = true, "kured", 0, 22*time.Minute
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		s, err := live.Open(ctx, c.LiveOptions(env))
		if err != nil {
			t.Fatal(err)
		}
		co := clusterOptions(env, &c, s, &syncBuffer{})
		acts, ok := co.Actions.(tui.LockActions)
		if !ok {
			t.Fatalf("the dashboard's actions are %T", co.Actions)
		}
		cl, err := s.Collect(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var ref model.LockRef
		for _, l := range cl.Locks() {
			if l.Kind == model.LockKured {
				ref = l.LockRef
			}
		}
		p, err := acts.Plan(cl, ref, "", -1, model.ActionRelease, s.Clock())
		if err != nil || !p.Allowed {
			t.Fatalf("plan %+v %v", p, err)
		}
		var name string
		if degrade {
			vr := s.Sim.Dynamic.Resource(sim.VolumeGVR).Namespace(sim.LonghornNamespace)
			vs, err := vr.List(ctx, metav1.ListOptions{})
			if err != nil || len(vs.Items) == 0 {
				t.Fatalf("demo volumes: %v %v", vs, err)
			}
			v := vs.Items[0]
			name = v.GetName()
			if err := unstructured.SetNestedField(v.Object, "degraded", "status", "robustness"); err != nil {
				t.Fatal(err)
			}
			if _, err := vr.Update(ctx, &v, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		r := acts.Do(ctx, p, lock.DoOptions{})
		switch {
		case degrade && (r.Outcome != model.OutcomeRefused || !strings.Contains(r.Message, "release refused: fresh-data: Longhorn volume "+sim.LonghornNamespace+"/"+name+" is degraded now")):
			t.Errorf("degraded behind the dialog: %s: %s", r.Outcome, r.Message)
		case !degrade && r.Outcome != model.OutcomeDone:
			t.Errorf("unchanged: %s: %s", r.Outcome, r.Message)
		}
		s.Close()
		cancel()
	}
}
