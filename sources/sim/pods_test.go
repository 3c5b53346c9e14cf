package sim

import (
	"context"
	"encoding/json"
	"reflect"
	"sort"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The kured scenario's second act: nobody releases the orphan, an engineer
// removes the lock by hand at 40m, worker-2's drain is held by the postgres
// budget (0 disruptions allowed) for 30 minutes, and once it has rebooted
// kured's reboot window is closed: the rest waits for 22:00 Berlin time.
func TestSecondActPDBAndWindow(t *testing.T) {
	s, err := New(Config{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	start := s.cfg.Start
	holder := func() string {
		ds, _ := s.Client.AppsV1().DaemonSets(KuredNamespace).Get(ctx, KuredName, metav1.GetOptions{})
		var l kuredLock
		_ = json.Unmarshal([]byte(ds.Annotations[KuredLockKey]), &l)
		return l.NodeID
	}
	podsOn := func(node string) []string {
		list, err := s.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, p := range list.Items {
			if p.Spec.NodeName == node {
				out = append(out, p.Namespace+"/"+p.Name)
			}
		}
		sort.Strings(out)
		return out
	}
	allowed := func() int32 {
		b, err := s.Client.PolicyV1().PodDisruptionBudgets(ShopNamespace).Get(ctx, "postgres", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return b.Status.DisruptionsAllowed
	}
	step := func(at time.Duration) {
		t.Helper()
		if err := s.Step(start.Add(at)); err != nil {
			t.Fatal(err)
		}
	}
	// kured's window is in its DaemonSet's args.
	ds, _ := s.Client.AppsV1().DaemonSets(KuredNamespace).Get(ctx, KuredName, metav1.GetOptions{})
	if got := ds.Spec.Template.Spec.Containers[0].Args; !reflect.DeepEqual(got, []string{"--period=1m", "--start-time=22:00", "--end-time=04:10", "--time-zone=Europe/Berlin"}) {
		t.Fatalf("kured args %q", got)
	}

	step(39 * time.Minute)
	if holder() != "worker-1" {
		t.Fatalf("at 39m the orphan still holds: %q", holder())
	}
	step(60 * time.Minute)
	w2, _ := s.Client.CoreV1().Nodes().Get(ctx, "worker-2", metav1.GetOptions{})
	if holder() != "worker-2" || !w2.Spec.Unschedulable {
		t.Fatalf("at 60m worker-2 should hold the lock, cordoned: holder %q cordoned %v", holder(), w2.Spec.Unschedulable)
	}
	// The web pod was evicted (its budget allowed it); postgres-1 is held.
	if got := podsOn("worker-2"); !reflect.DeepEqual(got, []string{"kube-system/kured-eouhq", "shop/postgres-1"}) {
		t.Fatalf("pods on worker-2 while draining: %v", got)
	}
	if allowed() != 0 {
		t.Fatalf("the postgres budget allows %d", allowed())
	}
	for _, c := range w2.Status.Conditions {
		if c.Type == "Ready" && c.Status != "True" {
			t.Fatal("worker-2 went down with its drain unfinished")
		}
	}

	step(41*time.Minute + PDBStuckFor + 5*time.Minute)
	if allowed() != 1 || holder() != "" {
		t.Fatalf("after the fix: budget allows %d, holder %q", allowed(), holder())
	}
	if got := podsOn("worker-2"); !reflect.DeepEqual(got, []string{"kube-system/kured-eouhq"}) {
		t.Fatalf("pods on worker-2 after the drain: %v", got)
	}
	// The window closed after 04:10 Berlin (03:11 UTC): the lock stays free,
	// though worker-3 and worker-4 need a reboot.
	step(3 * time.Hour)
	if holder() != "" || !s.RebootRequired()["worker-3"] {
		t.Fatalf("outside the window: holder %q, reboot required %v", holder(), s.RebootRequired())
	}
	// 22:00 Berlin is 21:00 UTC: kured takes the lock at its next try.
	step(19*time.Hour + time.Minute)
	if holder() != "worker-3" {
		t.Fatalf("once the window opens worker-3 should take the lock, got %q", holder())
	}
}

func TestWindow(t *testing.T) {
	w := windowFor(time.Date(2026, 11, 29, 2, 0, 0, 0, time.UTC))
	if w != (window{start: 22 * 60, end: 4*60 + 10}) {
		t.Fatalf("window %s–%s", hhmm(w.start), hhmm(w.end))
	}
	for _, tc := range []struct {
		utc  string
		want bool
	}{
		{"2026-11-29T02:00:00Z", true},  // 03:00 Berlin
		{"2026-11-29T03:10:59Z", true},  // 04:10:59 Berlin: the end minute is in
		{"2026-11-29T03:11:00Z", false}, // 04:11 Berlin
		{"2026-11-29T20:59:59Z", false}, // 21:59:59 Berlin
		{"2026-11-29T21:00:00Z", true},  // 22:00 Berlin
		{"2026-11-29T23:30:00Z", true},  // past midnight Berlin
	} {
		at, _ := time.Parse(time.RFC3339, tc.utc)
		if got := w.contains(at); got != tc.want {
			t.Errorf("contains(%s) = %v", tc.utc, got)
		}
	}
	// Time zero at noon Berlin: a window that does not wrap, same story.
	noon := time.Date(2026, 6, 1, 10, 0, 0, 0, time.UTC) // 12:00 CEST
	w = windowFor(noon)
	if hhmm(w.start) != "07:00" || hhmm(w.end) != "13:10" {
		t.Fatalf("window %s–%s", hhmm(w.start), hhmm(w.end))
	}
	if !w.contains(noon) || !w.contains(noon.Add(WindowCloseAfter+59*time.Second)) || w.contains(noon.Add(WindowCloseAfter+time.Minute)) ||
		w.contains(noon.Add(-WindowOpenBefore-time.Minute)) || !w.contains(noon.Add(24*time.Hour-WindowOpenBefore)) {
		t.Error("the window is not laid around time zero")
	}
}
