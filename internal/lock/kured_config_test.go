package lock

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rebootwatch/rebootwatch/internal/coord/kured"
	"github.com/rebootwatch/rebootwatch/model"
)

// A holder is never orphaned (and never released by the agent) before
// kured's own --lock-release-delay has passed since its reboot.
func TestKuredReleaseDelay(t *testing.T) {
	now := at(time.Hour)
	cfg := kured.ParseConfig([]string{"--lock-release-delay=30m"}, nil, nil)
	l := kuredLock(single(ent("n1", now.Add(-40*time.Minute), 0)))
	kspec(&l).Config = &cfg
	for _, tc := range []struct {
		rebooted time.Duration
		want     model.Verdict
	}{{-20 * time.Minute, model.VerdictHeld}, {-35 * time.Minute, model.VerdictOrphaned}} {
		e := New(Options{})
		c := build(e, step{now, []model.Event{nodesOK(), up(node("n1", readySince(now.Add(tc.rebooted)), schedAt(now.Add(tc.rebooted)))), up(node("n2")), lockEv(l)}})
		s, _ := statusFor(c.LockStatuses(), kuredRef, "n1")
		if s.Verdict != tc.want {
			t.Fatalf("rebooted %s ago: %s (%s), want %s", -tc.rebooted, s.Verdict, s.Reason, tc.want)
		}
		if tc.want == model.VerdictHeld {
			if !strings.Contains(s.Reason, "--lock-release-delay") {
				t.Fatalf("reason %q", s.Reason)
			}
			p, _ := e.Plan(c, kuredRef, "n1", model.ActionRelease, now)
			if p.Allowed || !strings.Contains(p.Refusal, "release delay") {
				t.Fatalf("operator release inside the delay: %+v", p)
			}
		}
		if len(s.Settings) == 0 {
			t.Fatal("no kured settings on the status")
		}
	}
}

// A custom --lock-annotation is read and written; the default key and every
// other annotation are left alone.
func TestKuredCustomAnnotation(t *testing.T) {
	now := at(time.Hour)
	const key = "example.com/reboot-lock"
	cfg := kured.ParseConfig([]string{"--lock-annotation=" + key}, nil, nil)
	v := single(ent("gone", now.Add(-time.Hour), 0))
	obj := model.LockObject{LockRef: kuredRef, UID: "uid-ds", ResourceVersion: "100", Spec: &kured.Spec{Annotation: key, Value: v, Present: true, Config: &cfg}}
	e := New(Options{})
	c := build(e, step{now, []model.Event{nodesOK(), up(node("n1")), lockEv(obj)}})
	p, err := e.Plan(c, kuredRef, "gone", model.ActionReap, now)
	if err != nil || !p.Allowed || p.Write.Key != key || !strings.Contains(p.Write.String(), key) {
		t.Fatalf("plan %+v %v", p, err)
	}
	cs := newFakeClientset(withNodes(p, &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "kured", Namespace: "kube-system", UID: "uid-ds", ResourceVersion: "100",
		Annotations: map[string]string{key: v, kured.Annotation: "untouched", "other": "kept"}}})...)
	if r := (&Actor{Client: cs, Fresh: asJudged(p)}).Do(context.Background(), p, DoOptions{}); r.Outcome != model.OutcomeDone {
		t.Fatalf("do %+v", r)
	}
	ds, _ := cs.AppsV1().DaemonSets("kube-system").Get(context.Background(), "kured", metav1.GetOptions{})
	if _, ok := ds.Annotations[key]; ok || ds.Annotations[kured.Annotation] != "untouched" || ds.Annotations["other"] != "kept" {
		t.Fatalf("annotations after reap %v", ds.Annotations)
	}
}

// Removing the last multi-lock entry removes the annotation (kured itself
// would leave {"maxOwners":N,"locks":[]}, which a kured switched to
// concurrency 1 reads as held by "" forever); removing one of two keeps the
// other byte for byte.
func TestKuredLastEntryRemovesAnnotation(t *testing.T) {
	now := at(time.Hour)
	e := New(Options{})
	c := build(e, step{now, []model.Event{nodesOK(), up(node("n1")), lockEv(kuredLock(multi(2, ent("gone", now.Add(-time.Hour), 0))))}})
	p, err := e.Plan(c, kuredRef, "gone", model.ActionReap, now)
	if err != nil || !p.Allowed || p.Write.Op != kured.OpRemoveAnnotation || !strings.Contains(p.Write.Summary, "last entry") {
		t.Fatalf("plan %+v %v", p.Write, err)
	}
	// Written as kured writes it (maxOwners first), with a duplicate.
	n1a := `{"nodeID":"n1","metadata":{"unschedulable":false},"created":"2026-11-29T12:00:00.123456789Z","TTL":3600000000000}`
	n1b := `{"nodeID":"n1","metadata":{"unschedulable":false},"created":"2026-11-29T13:05:00.5Z","TTL":3600000000000}`
	gone := `{"nodeID":"gone","metadata":{"unschedulable":true},"created":"2026-11-29T12:30:00Z","TTL":0}`
	two := `{"maxOwners":3,"locks":[` + n1a + `,` + gone + `,` + n1b + `]}`
	nv, last, err := kured.RemoveEntry(two, 2, "n1")
	want := `{"maxOwners":3,"locks":[` + n1a + `,` + gone + `]}`
	if err != nil || last || nv != want {
		t.Fatalf("remove one of two: %q %v %v, want %q", nv, last, err, want)
	}
	if _, _, err := kured.RemoveEntry(two, 0, "gone"); err == nil {
		t.Fatal("removed entry 0 as gone's although it is n1's")
	}
}

// The alert gate says whose filter decided (the user's --prometheus-alerts
// or kured's own settings).
func TestAlertGateSaysWhoseFilter(t *testing.T) {
	now := at(time.Hour)
	e := New(Options{})
	c := build(e, step{now, []model.Event{nodesOK(), source(model.SourcePrometheus, model.StatusOK), up(node("n1")),
		model.AlertsFiring{Names: []string{"DiskFull"}, From: "kured's own (--prometheus-url and --alert-filter-regexp of DaemonSet kube-system/kured)"},
		lockEv(kuredLock(single(ent("gone", now.Add(-time.Hour), 0))))}})
	p, err := e.Plan(c, kuredRef, "gone", model.ActionReap, now)
	if err != nil || p.Allowed || !strings.Contains(p.Refusal, "blocking alerts firing: DiskFull (filter: kured's own") {
		t.Fatalf("plan %+v %v", p.Refusal, err)
	}
}

// Settings kured rejects at start are attention (exit 2), quoting kured's
// own error, even with the lock free and no node waiting: kured's pods exit
// at start, so nothing reboots (issue 33 §2: "th, fr" read as Thursday and
// Friday said nothing blocks). A configuration kured starts with is quiet.
func TestKuredStartErrorIsAttention(t *testing.T) {
	now := at(time.Hour)
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{args: []string{"--reboot-days=th, fr"}, want: `kured cannot start with these settings: "Failed to build time window: invalid weekday:  fr"`},
		{env: map[string]string{"KURED_REBOOT_DAYS": "sa, th"}, want: `kured cannot start with these settings: "Failed to build time window: invalid weekday:  th"`},
		{env: map[string]string{"KURED_CONCURRENCY": "0x3"}, want: `kured cannot start with these settings: "Invalid value for env var named KURED_CONCURRENCY"`},
		{args: []string{"--reboot-days=th"}, env: map[string]string{"KURED_REBOOT_DAYS": "sa", "KURED_CONCURRENCY": "+1"}},
	} {
		cfg := kured.ParseConfig(tc.args, tc.env, nil)
		for _, value := range []string{"", single(ent("n1", now.Add(-time.Minute), 0))} {
			l := kuredLock(value)
			if value == "" {
				l = kuredAbsent()
			}
			kspec(&l).Config = &cfg
			e := New(Options{})
			c := build(e, step{now, []model.Event{nodesOK(), up(node("n1")), up(node("n2")), lockEv(l)}})
			att := c.Attention(now)
			var said []string
			for _, a := range att {
				said = append(said, a.Message)
			}
			if tc.want == "" {
				if len(att) != 0 || c.ExitCode(now) != 0 {
					t.Errorf("%v %v lock %q: attention %q", tc.args, tc.env, value, said)
				}
				continue
			}
			if !strings.Contains(strings.Join(said, "\n"), tc.want) || c.ExitCode(now) != 2 {
				t.Errorf("%v %v lock %q: exit %d, attention %q, want %q", tc.args, tc.env, value, c.ExitCode(now), said, tc.want)
			}
		}
	}
}
