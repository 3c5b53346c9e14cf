package lock

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/rebootwatch/rebootwatch/internal/coord/kured"
	"github.com/rebootwatch/rebootwatch/model"
)

// Faults injected between judging and acting.
const (
	faultNone      = iota
	faultChanged   // the object's resourceVersion moved on
	faultReplaced  // the object was deleted and re-created (new UID)
	faultServer409 // the update itself meets a conflict
	faultForbidden // the update is forbidden
	faultDryRun    // the actor is in dry-run mode
	numFaults
)

// actUnderFault performs an allowed plan against a fake API holding the
// judged object, with a fault, and checks rules 2 and 4 of DESIGN §6:
// a write happens only on the unchanged judged object, changes exactly the
// judged holder's lock, is never retried, and is recorded by an Event;
// anything else changes nothing.
func actUnderFault(t *testing.T, seed uint64, c *model.Cluster, p Plan, fault int) {
	t.Helper()
	obj, _ := c.Lock(p.Status.LockRef)
	uid, rv := obj.UID, obj.ResourceVersion
	switch fault {
	case faultChanged:
		rv += "1"
	case faultReplaced:
		uid += "-new"
	}
	var cs *fake.Clientset
	var resource string
	switch obj.Kind {
	case model.LockKured:
		resource = "daemonsets"
		ann := map[string]string{"unrelated": "kept"}
		if kspec(obj).Present {
			ann[kured.Annotation] = kspec(obj).Value
		}
		cs = newFakeClientset(withNodes(p, &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: obj.Name, Namespace: obj.Namespace,
			UID: typesUID(uid), ResourceVersion: rv, Annotations: ann}})...)
	case model.LockFleetlock:
		resource = "leases"
		h, tr := fspec(obj).Holder, fspec(obj).LeaseTransitions
		cs = newFakeClientset(withNodes(p, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: obj.Name, Namespace: obj.Namespace,
			UID: typesUID(uid), ResourceVersion: rv}, Spec: coordinationv1.LeaseSpec{HolderIdentity: &h, LeaseTransitions: &tr}})...)
	}
	updates := 0
	cs.PrependReactor("update", resource, func(k8stesting.Action) (bool, runtime.Object, error) {
		updates++
		switch fault {
		case faultServer409:
			return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: resource}, obj.Name, nil)
		case faultForbidden:
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: resource}, obj.Name, nil)
		}
		return false, nil, nil
	})
	a := &Actor{Client: cs, Who: "property", DryRun: fault == faultDryRun, Logger: slog.New(slog.DiscardHandler), Fresh: asJudged(p)}
	r := a.Do(context.Background(), p, DoOptions{})
	events, _ := cs.CoreV1().Events(obj.Namespace).List(context.Background(), metav1.ListOptions{})
	want := map[int]model.Outcome{faultNone: model.OutcomeDone, faultChanged: model.OutcomeConflict, faultReplaced: model.OutcomeConflict,
		faultServer409: model.OutcomeConflict, faultForbidden: model.OutcomeForbidden, faultDryRun: model.OutcomeDryRun}[fault]
	if r.Outcome != want {
		t.Fatalf("seed %d fault %d: outcome %s (%s), want %s", seed, fault, r.Outcome, r.Message, want)
	}
	// Rule 2: no retry — at most one update, and none unless the object was
	// exactly the judged one.
	switch fault {
	case faultNone, faultServer409, faultForbidden:
		if updates != 1 {
			t.Fatalf("seed %d fault %d: %d updates, want exactly 1", seed, fault, updates)
		}
	default:
		if updates != 0 {
			t.Fatalf("seed %d fault %d: %d updates, want none", seed, fault, updates)
		}
	}
	// Rule 4: an Event exactly when something was written.
	if (fault == faultNone) != (len(events.Items) == 1) || len(events.Items) > 1 {
		t.Fatalf("seed %d fault %d: %d events", seed, fault, len(events.Items))
	}
	if fault != faultNone {
		return
	}
	// The write changed exactly the judged holder's lock.
	switch obj.Kind {
	case model.LockKured:
		ds, _ := cs.AppsV1().DaemonSets(obj.Namespace).Get(context.Background(), obj.Name, metav1.GetOptions{})
		if ds.Annotations["unrelated"] != "kept" {
			t.Fatalf("seed %d: unrelated annotation lost", seed)
		}
		v, ok := ds.Annotations[kured.Annotation]
		switch p.Write.Op {
		case kured.OpRemoveAnnotation:
			if ok {
				t.Fatalf("seed %d: annotation still there: %s", seed, v)
			}
		case kured.OpSetAnnotation:
			if !ok || v != p.Write.NewValue {
				t.Fatalf("seed %d: annotation %q, want %q", seed, v, p.Write.NewValue)
			}
		}
	case model.LockFleetlock:
		l, _ := cs.CoordinationV1().Leases(obj.Namespace).Get(context.Background(), obj.Name, metav1.GetOptions{})
		if *l.Spec.HolderIdentity != "" || *l.Spec.LeaseTransitions != fspec(obj).LeaseTransitions {
			t.Fatalf("seed %d: lease after release %v/%v", seed, *l.Spec.HolderIdentity, *l.Spec.LeaseTransitions)
		}
	}
}

// TestPropertyActUnderFaults runs every allowed plan of generated worlds
// against a fake API with a random fault between judging and acting.
func TestPropertyActUnderFaults(t *testing.T) {
	t.Parallel() // CPU-bound and self-contained: runs while the integration tests wait on the apiserver
	n := 1500
	if testing.Short() {
		n = 500
	}
	r := rand.New(rand.NewPCG(9, 2026))
	seen := map[int]int{}
	for k := 0; k < n; k++ {
		seed := r.Uint64()
		w := genWorld(rand.New(rand.NewPCG(seed, 1)))
		e := New(Options{})
		c := build(e, w.steps...)
		for _, s := range c.LockStatuses() {
			for _, a := range s.Actions {
				p, err := e.Plan(c, s.LockRef, s.Holder, a, w.now)
				if err != nil || !p.Allowed {
					t.Fatalf("seed %d: listed action %s not allowed: %v %s", seed, a, err, p.Refusal)
				}
				fault := r.IntN(numFaults)
				seen[fault]++
				actUnderFault(t, seed, c, p, fault)
			}
		}
	}
	for f := 0; f < numFaults; f++ {
		if seen[f] == 0 {
			t.Errorf("fault %d never exercised", f)
		}
	}
	t.Logf("faults exercised: %v", seen)
}

func typesUID(s string) types.UID { return types.UID(s) }
