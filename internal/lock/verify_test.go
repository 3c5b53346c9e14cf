package lock

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"github.com/rebootwatch/rebootwatch/internal/coord/kured"
	"github.com/rebootwatch/rebootwatch/model"
)

// After its write the actor re-reads the object and reads it as the
// coordinator does: when the coordinator still reads the holder (here, the
// holder is put back by the time the write lands, as a mutating webhook or
// a racing writer would), the outcome is error, never done, and says what the
// coordinator reads now.
func TestWriteVerifiedAsTheCoordinatorReadsIt(t *testing.T) {
	ctx := context.Background()
	t.Run("kured", func(t *testing.T) {
		ann := single(ent("n9", at(0), 0))
		p := ghostPlan(t, ann)
		cs := newFakeClientset(withNodes(p, ds(ann, "100"))...)
		cs.PrependReactor("update", "daemonsets", func(a k8stesting.Action) (bool, runtime.Object, error) {
			d := a.(k8stesting.UpdateAction).GetObject().(*appsv1.DaemonSet)
			d.Annotations[kured.Annotation] = ann
			return false, nil, nil
		})
		r := (&Actor{Client: cs, Fresh: asJudged(p)}).Do(ctx, p, DoOptions{})
		if r.Outcome != model.OutcomeError || !strings.Contains(r.Message, `kured (--concurrency 1) reads it as held by "n9"`) {
			t.Fatalf("%s: %s", r.Outcome, r.Message)
		}
	})
	t.Run("fleetlock", func(t *testing.T) {
		e := New(Options{})
		now := at(time.Hour)
		c := build(e, step{now, []model.Event{nodesOK(), up(node("n1", machine(mid2))), lockEv(fleet(zid1))}})
		p, err := e.Plan(c, fleetRef, "", model.ActionReap, now)
		if err != nil || !p.Allowed {
			t.Fatalf("plan %+v %v", p, err)
		}
		cs := newFakeClientset(withNodes(p, lease(zid1, "200"))...)
		cs.PrependReactor("update", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
			l := a.(k8stesting.UpdateAction).GetObject().(*coordinationv1.Lease)
			h := zid1
			l.Spec.HolderIdentity = &h
			return false, nil, nil
		})
		r := (&Actor{Client: cs, Fresh: asJudged(p)}).Do(ctx, p, DoOptions{})
		if r.Outcome != model.OutcomeError || !strings.Contains(r.Message, "fleetlock reads holder "+`"`+zid1+`"`) {
			t.Fatalf("%s: %s", r.Outcome, r.Message)
		}
	})
	t.Run("uncordon", func(t *testing.T) {
		e := New(Options{})
		c := stillCordonedWorld(e)
		p, err := e.PlanUncordon(c, "n1", at(31*time.Minute))
		if err != nil || !p.Allowed {
			t.Fatalf("plan %+v %v", p, err)
		}
		cs := newFakeClientset(withNodes(p)...)
		cs.PrependReactor("update", "nodes", func(a k8stesting.Action) (bool, runtime.Object, error) {
			a.(k8stesting.UpdateAction).GetObject().(*corev1.Node).Spec.Unschedulable = true
			return false, nil, nil
		})
		r := (&Actor{Client: cs, Fresh: asJudged(p)}).Do(ctx, p, DoOptions{})
		if r.Outcome != model.OutcomeError || !strings.Contains(r.Message, "still cordoned") {
			t.Fatalf("%s: %s", r.Outcome, r.Message)
		}
	})
}
