package agent

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/rebootwatch/rebootwatch/internal/coord"
	"github.com/rebootwatch/rebootwatch/internal/sanitize"
	"github.com/rebootwatch/rebootwatch/model"
)

// UnrecordedWindow is how far back a new leader looks for a write of the
// agent's own (coord.AgentFieldManager in the lock object's managedFields)
// that no Event records: a leader killed between its write and its Event
// (issue 33 §1). Older writes are left alone.
const UnrecordedWindow = 15 * time.Minute

// ReasonWriteFound is the reason of the Event recorded for such a write
// when the agent's policy could have made it as a reap or a release (the
// managedFields entry does not say which).
const ReasonWriteFound = "RebootLockWriteFound"

// recordedReasons are the reasons of an Event that records a lock write.
var recordedReasons = map[string]bool{coord.ReasonReaped: true, coord.ReasonReleased: true, ReasonWriteFound: true}

// lockMeta reads a lock object's metadata (kured's DaemonSet, fleetlock's
// Lease) with the agent's own grants (get): its UID, resourceVersion and
// managedFields, and the API version and kind for the Event.
func (a *Agent) lockMeta(ctx context.Context, ref model.LockRef) (metav1.ObjectMeta, string, string, error) {
	switch ref.Kind {
	case model.LockFleetlock:
		l, err := a.Client.CoordinationV1().Leases(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			return metav1.ObjectMeta{}, "", "", err
		}
		return l.ObjectMeta, "coordination.k8s.io/v1", "Lease", nil
	case model.LockKured:
		ds, err := a.Client.AppsV1().DaemonSets(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			return metav1.ObjectMeta{}, "", "", err
		}
		return ds.ObjectMeta, "apps/v1", "DaemonSet", nil
	}
	return metav1.ObjectMeta{}, "", "", fmt.Errorf("no lock object of kind %q", ref.Kind)
}

// agentWrite is the time of the agent's own last update of the object,
// from its managedFields (zero when there is none).
func agentWrite(m metav1.ObjectMeta) time.Time {
	var at time.Time
	for _, e := range m.ManagedFields {
		if e.Manager == coord.AgentFieldManager && e.Operation == metav1.ManagedFieldsOperationUpdate && e.Time != nil && e.Time.After(at) {
			at = e.Time.Time
		}
	}
	return at
}

// recordUnrecorded is a new leader's look at the lock objects it judges:
// a write of the agent's own, recent, that no Event on the object records
// was made by a leader that stopped before recording it. It records the
// Event (and logs the line) once. It reports whether every object was
// read: what cannot be read (the object, or its Events) is not recorded,
// and is looked at again next iteration.
func (a *Agent) recordUnrecorded(ctx context.Context, now time.Time) bool {
	seen := map[model.LockRef]bool{}
	complete := true
	for _, s := range a.cluster.LockStatuses() {
		ref := s.LockRef
		if seen[ref] || (ref.Kind != model.LockKured && ref.Kind != model.LockFleetlock) {
			continue
		}
		seen[ref] = true
		if err := a.recordUnrecordedOn(ctx, ref, now); err != nil {
			if apierrors.IsForbidden(err) {
				// RBAC says no (an older Role without list on events):
				// said once per leadership, not every iteration; what was
				// not read is not recorded.
				a.Log.Warn("cannot check the lock for a write of the agent's without its Event: forbidden (grant list on events in the lock's namespace); not checked again while this agent leads",
					"lock", ref.String(), "error", sanitize.Line(err.Error()))
				continue
			}
			complete = false
			a.Log.Warn("could not check the lock for a write of the agent's without its Event; checked again next iteration",
				"lock", ref.String(), "error", sanitize.Line(err.Error()))
		}
	}
	return complete
}

func (a *Agent) recordUnrecordedOn(ctx context.Context, ref model.LockRef, now time.Time) error {
	ctx, cancel := context.WithTimeout(ctx, a.Config.RequestTimeout)
	defer cancel()
	meta, apiVersion, kind, err := a.lockMeta(ctx, ref)
	if err != nil {
		return err
	}
	at := agentWrite(meta)
	// managedFields times are whole seconds; a write from the future is
	// a skewed clock, not a recent write.
	if at.IsZero() || now.Sub(at) > UnrecordedWindow || at.After(now.Add(time.Minute)) {
		return nil
	}
	key := string(meta.UID) + "@" + at.UTC().Format(time.RFC3339)
	if a.recordedWrites[key] {
		return nil
	}
	sel := fields.OneTermEqualSelector("involvedObject.uid", string(meta.UID)).String()
	evs, err := a.Client.CoreV1().Events(ref.Namespace).List(ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		return fmt.Errorf("list the Events of %s: %w", ref, err)
	}
	for _, e := range evs.Items {
		t := e.LastTimestamp.Time
		if !e.EventTime.IsZero() && e.EventTime.After(t) {
			t = e.EventTime.Time
		}
		// The Event comes after its write: one from the write's second
		// on (the times are whole seconds) records it.
		if recordedReasons[e.Reason] && e.InvolvedObject.UID == meta.UID && !t.Before(at.Add(-time.Second)) {
			a.recordedWrites[key] = true
			return nil
		}
	}
	reason, verb := a.unrecordedReason()
	who := "rebootwatch-agent (" + a.Identity + ", after the writer stopped)"
	msg := fmt.Sprintf("rebootwatch-agent %s (lock %s) at %s (field manager %s in managedFields), but the agent that wrote it stopped before recording it; recorded by %s. The holder it freed is not in the object any more.",
		verb, ref, at.UTC().Format(time.RFC3339), coord.AgentFieldManager, a.Identity)
	ts := metav1.NewTime(now)
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{GenerateName: ref.Name + ".", Namespace: ref.Namespace,
			Annotations: map[string]string{coord.EventAnnotationLock: ref.String(), coord.EventAnnotationBy: who}},
		InvolvedObject: corev1.ObjectReference{APIVersion: apiVersion, Kind: kind, Namespace: ref.Namespace, Name: ref.Name,
			UID: meta.UID, ResourceVersion: meta.ResourceVersion},
		Reason: reason, Message: msg, Type: corev1.EventTypeNormal,
		Source:         corev1.EventSource{Component: "rebootwatch"},
		FirstTimestamp: ts, LastTimestamp: ts, Count: 1,
	}
	if _, err := a.Client.CoreV1().Events(ref.Namespace).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("record the Event on %s: %w", ref, err)
	}
	a.recordedWrites[key] = true
	a.Log.Warn("reboot lock write found without its Event: recorded", "lock", ref.String(), "reason", reason,
		"writtenAt", at.UTC().Format(time.RFC3339), "fieldManager", coord.AgentFieldManager, "recordedBy", a.Identity)
	return nil
}

// unrecordedReason is the Event's reason and verb for a write the agent's
// policy made: a reap when it only reaps, a release when it only releases,
// and, when it does both, a write found (the managedFields entry does not
// say which it was).
func (a *Agent) unrecordedReason() (string, string) {
	reaps := a.Config.ReapGhost || a.Config.ReapExpired
	switch {
	case reaps && !a.Config.ReleaseOrphaned:
		return coord.ReasonReaped, "reaped the reboot lock"
	case !reaps && a.Config.ReleaseOrphaned:
		return coord.ReasonReleased, "released the reboot lock"
	}
	return ReasonWriteFound, "reaped or released the reboot lock (which, the object does not say)"
}
