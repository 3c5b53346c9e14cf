package agent

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/rebootwatch/rebootwatch/internal/coord"
	"github.com/rebootwatch/rebootwatch/model"
)

// unrecordedAgent is an agent on a fake clientset holding fleetlock's
// Lease, which the agent's field manager wrote at wrote.
func unrecordedAgent(t *testing.T, wrote time.Time) (*Agent, *fake.Clientset, *bytes.Buffer) {
	t.Helper()
	at := metav1.NewTime(wrote)
	empty := ""
	cs := fake.NewSimpleClientset(&coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "fleetlock-default", Namespace: "default", UID: "lease-uid", ResourceVersion: "7",
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: coord.AgentFieldManager, Operation: metav1.ManagedFieldsOperationUpdate, Time: &at}}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &empty},
	})
	var logs bytes.Buffer
	a := &Agent{Client: cs, Config: Config{RequestTimeout: 5 * time.Second, ReapGhost: true}, Identity: "agent-2",
		Log: slog.New(slog.NewJSONHandler(&logs, nil)), recordedWrites: map[string]bool{}}
	return a, cs, &logs
}

var fleetRef = model.LockRef{Kind: model.LockFleetlock, Namespace: "default", Name: "fleetlock-default"}

func TestRecordUnrecordedOnce(t *testing.T) {
	now := time.Date(2026, 12, 3, 12, 0, 30, 0, time.UTC)
	a, cs, logs := unrecordedAgent(t, now.Add(-20*time.Second))
	for i := 0; i < 3; i++ {
		if err := a.recordUnrecordedOn(context.Background(), fleetRef, now); err != nil {
			t.Fatal(err)
		}
	}
	evs, _ := cs.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{})
	if len(evs.Items) != 1 || evs.Items[0].Reason != coord.ReasonReaped || evs.Items[0].InvolvedObject.UID != "lease-uid" {
		t.Fatalf("Events %+v, want one RebootLockReaped on the Lease", evs.Items)
	}
	// Another new leader, with no memory of it, finds the Event.
	b, _, _ := unrecordedAgent(t, now)
	b.Client = cs
	if err := b.recordUnrecordedOn(context.Background(), fleetRef, now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if evs, _ := cs.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{}); len(evs.Items) != 1 {
		t.Errorf("%d Events after a second leader looked, want 1", len(evs.Items))
	}
	if n := strings.Count(logs.String(), "reboot lock write found without its Event"); n != 1 {
		t.Errorf("%d log lines, want 1:\n%s", n, logs)
	}
}

// An old write (past UnrecordedWindow) and Events that cannot be listed
// record nothing: what was not read is not recorded; forbidden is said
// once, not retried every iteration.
func TestRecordUnrecordedOnlyWhatWasRead(t *testing.T) {
	now := time.Date(2026, 12, 3, 12, 0, 30, 0, time.UTC)
	a, cs, _ := unrecordedAgent(t, now.Add(-UnrecordedWindow-time.Minute))
	if err := a.recordUnrecordedOn(context.Background(), fleetRef, now); err != nil {
		t.Fatal(err)
	}
	b, cs2, _ := unrecordedAgent(t, now.Add(-time.Minute))
	cs2.PrependReactor("list", "events", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "events"}, "", nil)
	})
	err := b.recordUnrecordedOn(context.Background(), fleetRef, now)
	if !apierrors.IsForbidden(err) {
		t.Fatalf("error %v, want forbidden", err)
	}
	for _, c := range []*fake.Clientset{cs, cs2} {
		if evs, _ := c.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{}); evs != nil && len(evs.Items) != 0 {
			t.Errorf("Events recorded: %+v", evs.Items)
		}
	}
}
