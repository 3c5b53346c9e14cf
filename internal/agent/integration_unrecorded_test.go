package agent

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/rebootwatch/rebootwatch/internal/coord"
)

// rebootwatchEventsOn lists the Events recorded on the object with uid:
// the lock writes' reasons only.
func rebootwatchEventsOn(t *testing.T, cs kubernetes.Interface, ns string, uid types.UID) []corev1.Event {
	t.Helper()
	ctx, cancel := bg()
	defer cancel()
	evs, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []corev1.Event
	for _, e := range evs.Items {
		if e.InvolvedObject.UID == uid && recordedReasons[e.Reason] {
			out = append(out, e)
		}
	}
	return out
}

// TestIntegrationReapEventAfterCrash (issue 33 §1): the agent leader was
// SIGKILLed about 10 ms after its reap write, so the Lease is free but no
// RebootLockReaped Event and no log line exist. The crash is simulated on
// the real apiserver: the reap write made with the agent's field manager
// (rebootwatch-agent) and no Event. A new leader started on that cluster
// finds the write (its own field manager in the Lease's managedFields,
// recent, no Event) and records it, once. A write of a person's CLI
// (field manager rebootwatch) on kured's DaemonSet, also without an Event,
// is not the agent's to record.
func TestIntegrationReapEventAfterCrash(t *testing.T) {
	admin, bin, kc, token := heldLeaseCluster(t)
	ctx, cancel := bg()
	defer cancel()
	// The crashed leader's reap: the Lease's holder cleared, by the agent.
	l, err := admin.CoordinationV1().Leases("default").Get(ctx, "fleetlock-default", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	empty := ""
	l.Spec.HolderIdentity = &empty
	l, err = admin.CoordinationV1().Leases("default").Update(ctx, l, metav1.UpdateOptions{FieldManager: coord.AgentFieldManager})
	if err != nil {
		t.Fatal(err)
	}
	// A person's write with the CLI's field manager, on kured's lock.
	ds, err := admin.AppsV1().DaemonSets("kube-system").Get(ctx, "kured", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ds.Annotations == nil {
		ds.Annotations = map[string]string{}
	}
	ds.Annotations["example.com/touched-by"] = "a person's rebootwatch CLI"
	ds, err = admin.AppsV1().DaemonSets("kube-system").Update(ctx, ds, metav1.UpdateOptions{FieldManager: coord.FieldManager})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(rebootwatchEventsOn(t, admin, "default", l.UID)); n != 0 {
		t.Fatalf("%d Events before the agent started", n)
	}

	p := startAgentProc(t, bin, "agent-after-crash", kc, "--interval=1s", "--request-timeout=5s",
		"--leader-elect-lease-duration=6s", "--leader-elect-renew-deadline=4s", "--leader-elect-retry-period=1s")
	const found = "reboot lock write found without its Event: recorded"
	eventually(t, "the new leader records the reap's Event", func() (bool, string) {
		return len(rebootwatchEventsOn(t, admin, "default", l.UID)) > 0, p.tail(3)
	})
	// Once: a few more iterations as leader record nothing more.
	mark := p.mark(t)
	eventually(t, "three more iterations as leader", func() (bool, string) {
		hbs := p.heartbeats(t)
		return len(hbs) >= mark+3 && hbs[len(hbs)-1].Leader, p.tail(3)
	})
	evs := rebootwatchEventsOn(t, admin, "default", l.UID)
	if len(evs) != 1 {
		t.Fatalf("%d Events on the Lease, want exactly one", len(evs))
	}
	e := evs[0]
	if e.Reason != coord.ReasonReaped || e.Annotations[coord.EventAnnotationLock] != "fleetlock:default/fleetlock-default" ||
		!strings.Contains(e.Annotations[coord.EventAnnotationBy], "after the writer stopped") || e.Source.Component != "rebootwatch" ||
		!strings.Contains(e.Message, coord.AgentFieldManager) {
		t.Errorf("Event %s %q annotations %v source %q", e.Reason, e.Message, e.Annotations, e.Source.Component)
	}
	n := 0
	for _, line := range p.lines(t) {
		if line["msg"] == found {
			n++
			if line["lock"] != "fleetlock:default/fleetlock-default" {
				t.Errorf("log line names %v", line["lock"])
			}
		}
	}
	if n != 1 {
		t.Errorf("%d log lines %q, want one", n, found)
	}
	if evs := rebootwatchEventsOn(t, admin, "kube-system", ds.UID); len(evs) != 0 {
		t.Errorf("a person's write on kured's DaemonSet was recorded as the agent's: %+v", evs)
	}
	mustNotContainToken(t, token, p)
	t.Logf("recorded: %s", e.Message)
}

// The write's time is the agent's own field manager's newest Update entry.
func TestAgentWriteIsTheAgentsOwnUpdate(t *testing.T) {
	at := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	mt := func(d time.Duration) *metav1.Time { x := metav1.NewTime(at.Add(d)); return &x }
	m := metav1.ObjectMeta{ManagedFields: []metav1.ManagedFieldsEntry{
		{Manager: coord.FieldManager, Operation: metav1.ManagedFieldsOperationUpdate, Time: mt(time.Minute)},
		{Manager: "fleetlock", Operation: metav1.ManagedFieldsOperationUpdate, Time: mt(2 * time.Minute)},
		{Manager: coord.AgentFieldManager, Operation: metav1.ManagedFieldsOperationApply, Time: mt(3 * time.Minute)},
		{Manager: coord.AgentFieldManager, Operation: metav1.ManagedFieldsOperationUpdate, Time: mt(0)},
	}}
	if got := agentWrite(m); !got.Equal(at) {
		t.Errorf("agentWrite %s, want %s", got, at)
	}
	if got := agentWrite(metav1.ObjectMeta{}); !got.IsZero() {
		t.Errorf("agentWrite of no entries %s", got)
	}
}
