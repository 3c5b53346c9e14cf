package model

import (
	"strings"
	"testing"
	"time"
)

func readyNode(name, boot, image, kernel string, ready bool) Node {
	st := "True"
	if !ready {
		st = "False"
	}
	return Node{Name: name, BootID: boot, OSImage: image, KernelVersion: kernel,
		Conditions: []Condition{{Type: "Ready", Status: st, LastTransition: t0.Add(-time.Hour)}}}
}

// testSpec is a lock kind's shape for the model's own tests: the model
// never looks inside a LockSpec; the test judges do.
type testSpec struct {
	Holder      string
	AcquireTime time.Time
}

func (*testSpec) LockKind() LockKind { return "test" }

// fixedJudge judges every lock as held by the node its Holder names.
func fixedJudge(v Verdict) Judge {
	return func(c *Cluster, now time.Time) []LockStatus {
		var out []LockStatus
		for _, l := range c.Locks() {
			sp, _ := l.Spec.(*testSpec)
			if sp == nil {
				sp = &testSpec{}
			}
			s := LockStatus{LockRef: l.LockRef, Holder: sp.Holder, Verdict: VerdictFree, Created: sp.AcquireTime}
			if sp.Holder != "" {
				s.Verdict = v
				if _, ok := c.Node(sp.Holder); ok {
					s.HolderNodes = []string{sp.Holder}
				}
			}
			out = append(out, s)
		}
		return out
	}
}

func newTestCluster(v Verdict) *Cluster {
	c := NewCluster("test", Options{})
	c.Judge = fixedJudge(v)
	c.Apply(SourceChanged{Health: SourceHealth{Name: SourceNodes, Status: StatusOK}}, t0)
	return c
}

func TestEmptyCluster(t *testing.T) {
	c := newTestCluster(VerdictHeld)
	c.Recompute(t0)
	f := c.Fleet(t0)
	if f.Nodes != 0 || f.Upgraded != 0 || f.ETA != nil || f.Target != (OS{}) {
		t.Fatalf("empty fleet: %+v", f)
	}
	if code := c.ExitCode(t0); code != 0 {
		t.Fatalf("exit %d", code)
	}
	s := c.Snapshot(t0)
	if s.Nodes == nil || s.Locks == nil || s.Attention == nil || s.Volumes != nil {
		t.Fatalf("snapshot arrays must be present and volumes null without Longhorn: %+v", s)
	}
}

func TestUnreadableClusterExitsOne(t *testing.T) {
	c := NewCluster("x", Options{})
	c.Apply(SourceChanged{Health: SourceHealth{Name: SourceNodes, Status: StatusError, Message: "connection refused"}}, t0)
	c.Recompute(t0)
	if code := c.ExitCode(t0); code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
}

func TestTargetOSAndUpgraded(t *testing.T) {
	c := newTestCluster(VerdictHeld)
	c.Apply(NodeUpserted{readyNode("a", "1", "Ubuntu 24.04.2 LTS", "6.8.0-57-generic", true)}, t0)
	c.Apply(NodeUpserted{readyNode("b", "2", "Ubuntu 24.04.3 LTS", "6.8.0-100-generic", true)}, t0)
	c.Apply(NodeUpserted{readyNode("c", "3", "Ubuntu 24.04.3 LTS", "6.8.0-99-generic", true)}, t0)
	c.Recompute(t0)
	f := c.Fleet(t0)
	if f.Target.Kernel != "6.8.0-100-generic" || f.Upgraded != 1 {
		t.Fatalf("target %+v upgraded %d: 100 > 99 numerically", f.Target, f.Upgraded)
	}
	c.Options.TargetOS = "Ubuntu 24.04.3 LTS"
	if f := c.Fleet(t0); f.Upgraded != 2 {
		t.Fatalf("with --target-os: upgraded %d, want 2", f.Upgraded)
	}
}

func TestNaturalCompare(t *testing.T) {
	cases := []struct {
		a, b string
		want int
	}{
		{"5.15.0-105", "5.15.0-99", 1}, {"a", "a", 0}, {"40.20240416.3.1", "40.20240504.3.0", -1},
		{"", "x", -1}, {"1.02", "1.2", 0}, {"v10", "v9", 1},
	}
	for _, tc := range cases {
		if got := naturalCompare(tc.a, tc.b); got != tc.want {
			t.Errorf("naturalCompare(%q,%q)=%d want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestRecomputeDrivesPhasesTimelineAndETA(t *testing.T) {
	c := newTestCluster(VerdictHeld)
	ref := LockRef{Kind: LockFleetlock, Namespace: "default", Name: "fleetlock-default"}
	for _, n := range []string{"a", "b", "c"} {
		c.Apply(NodeUpserted{readyNode(n, n+"1", "os-1", "1", true)}, t0)
	}
	c.Apply(RebootRequiredSet{Values: map[string]bool{"a": true, "b": true, "c": true}}, t0)
	c.Apply(LockUpserted{LockObject{LockRef: ref}}, t0)
	c.Recompute(t0)
	if c.Phase("a") != PhasePending {
		t.Fatalf("a: %s", c.Phase("a"))
	}
	// a takes the lock, reboots, comes back upgraded and releases: 10 minutes.
	c.Apply(LockUpserted{LockObject{LockRef: ref, Spec: &testSpec{Holder: "a", AcquireTime: t0}}}, t0)
	c.Recompute(t0)
	c.Apply(NodeUpserted{readyNode("a", "a1", "os-1", "1", false)}, t0.Add(2*time.Minute))
	c.Recompute(t0.Add(2 * time.Minute))
	c.Apply(NodeUpserted{readyNode("a", "a2", "os-2", "2", true)}, t0.Add(8*time.Minute))
	c.Apply(RebootRequiredSet{Values: map[string]bool{"a": false, "b": true, "c": true}}, t0.Add(8*time.Minute))
	c.Recompute(t0.Add(8 * time.Minute))
	if c.Phase("a") != PhaseRecovering {
		t.Fatalf("a: %s", c.Phase("a"))
	}
	c.Apply(LockUpserted{LockObject{LockRef: ref}}, t0.Add(10*time.Minute))
	c.Recompute(t0.Add(10 * time.Minute))
	if c.Phase("a") != PhaseDone {
		t.Fatalf("a: %s", c.Phase("a"))
	}
	f := c.Fleet(t0.Add(10 * time.Minute))
	if f.ETA == nil || *f.ETA != 20*time.Minute {
		t.Fatalf("ETA %v, want 20m (two pending × 10m median)", f.ETA)
	}
	if f.Upgraded != 1 || f.Phases[PhaseDone] != 1 || f.Phases[PhasePending] != 2 {
		t.Fatalf("fleet %+v", f)
	}
	var msgs []string
	for _, e := range c.Timeline() {
		msgs = append(msgs, e.Message)
	}
	all := strings.Join(msgs, "\n")
	for _, want := range []string{"taken by a", "a pending → draining", "a draining → rebooting", "booted", "a rebooting → recovering", "released by a", "a recovering → done"} {
		if !strings.Contains(all, want) {
			t.Errorf("timeline lacks %q:\n%s", want, all)
		}
	}
	// The structured fields say the same as the messages.
	var changes []string
	for _, e := range c.Timeline() {
		switch e.Kind {
		case KindPhase:
			changes = append(changes, "phase:"+e.To)
		case KindLock:
			changes = append(changes, "lock:"+e.Change+":"+string(e.Verdict))
		case KindNode:
			changes = append(changes, "node:"+e.Change)
		}
	}
	if got := strings.Join(changes, " "); got != "lock:taken:held phase:draining phase:rebooting node:booted phase:recovering lock:released: phase:done" {
		t.Fatalf("structured timeline: %s", got)
	}
	last := c.Timeline()[len(c.Timeline())-1].Seq
	if got := c.TimelineSince(last); len(got) != 0 {
		t.Fatalf("nothing after the last seq, got %v", got)
	}
	if got := c.TimelineSince(0); len(got) != len(c.Timeline()) {
		t.Fatal("TimelineSince(0) returns all")
	}
}

// A lock source that failed or is forbidden, or a node list never read, is
// "could not read" (exit 1), never "no lock" (exit 0): a lock may be there
// unseen (issue 11 §2). A stale one was read: attention (2).
func TestUnreadLockSourceIsExit1(t *testing.T) {
	for _, tc := range []struct {
		name   string
		source SourceName
		status SourceStatus
		msg    string
		want   int
	}{
		{"kured forbidden", SourceKured, StatusForbidden, "cannot list daemonsets.apps (RBAC)", 1},
		{"fleetlock forbidden", SourceFleetlock, StatusForbidden, "cannot list leases.coordination.k8s.io in namespace \"default\" (RBAC)", 1},
		{"named kured DaemonSet missing", SourceKured, StatusError, "DaemonSet nosuch/nosuch not found (named by --kured-daemonset)", 1},
		{"nodes error", SourceNodes, StatusError, "list nodes: request timed out", 1},
		{"kured not installed", SourceKured, StatusNotInstalled, "no kured DaemonSet found", 0},
		{"kured stale", SourceKured, StatusStale, "no word from the API server for 20s (stale after 15s)", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := SourceHealth{Name: tc.source, Status: tc.status, Message: tc.msg}
			c := NewCluster("test", Options{})
			c.LockSources = []SourceName{SourceKured, SourceFleetlock}
			for _, n := range []SourceName{SourceNodes, SourceKured, SourceFleetlock} {
				if n != tc.source {
					c.Apply(SourceChanged{Health: SourceHealth{Name: n, Status: StatusOK, LastSync: t0}}, t0)
				}
			}
			c.Apply(SourceChanged{Health: h}, t0)
			if tc.source != SourceNodes {
				c.Apply(NodeUpserted{readyNode("a", "1", "x", "1", true)}, t0)
			}
			c.Recompute(t0)
			snap := c.Snapshot(t0)
			if snap.ExitCode != tc.want || c.ExitCode(t0) != tc.want {
				t.Fatalf("exit %d (snapshot %d), want %d; unread %v; attention %+v", c.ExitCode(t0), snap.ExitCode, tc.want, c.Unread(), snap.Attention)
			}
			if tc.want == 1 {
				if u := strings.Join(c.Unread(), "; "); !strings.Contains(u, tc.msg) {
					t.Fatalf("unread %q does not say why (%q)", u, tc.msg)
				}
				if len(snap.Attention) == 0 || snap.Attention[0].Severity != SeverityCritical || !strings.Contains(snap.Attention[0].Message, "could not read") {
					t.Fatalf("the attention list must lead with what could not be read: %+v", snap.Attention)
				}
			}
			if tc.want == 0 && len(snap.Attention) != 0 {
				t.Fatalf("exit 0 with attention %+v", snap.Attention)
			}
		})
	}
}

func TestAttentionAndExitCodes(t *testing.T) {
	ref := LockRef{Kind: LockKured, Namespace: "kube-system", Name: "kured"}
	cases := []struct {
		name     string
		verdict  Verdict
		holder   string
		down     bool
		volume   Robustness
		longhorn SourceStatus
		want     int
		wantMsg  string
	}{
		{"all quiet", VerdictFree, "", false, RobustnessHealthy, StatusOK, 0, ""},
		{"held lock is fine", VerdictHeld, "a", false, RobustnessHealthy, StatusOK, 0, ""},
		{"ghost lock", VerdictGhost, "gone", false, RobustnessHealthy, StatusOK, 2, "ghost"},
		{"orphaned lock", VerdictOrphaned, "a", false, RobustnessHealthy, StatusOK, 2, "orphaned"},
		{"expired lock", VerdictExpired, "a", false, RobustnessHealthy, StatusOK, 2, "expired"},
		{"ambiguous lock", VerdictAmbiguous, "a", false, RobustnessHealthy, StatusOK, 2, "ambiguous"},
		// Anything under attention gives 2, warnings too (issue 11 §2):
		// exit 0 means nothing is listed.
		{"unknown lock is attention", VerdictUnknown, "a", false, RobustnessHealthy, StatusOK, 2, "cannot be judged"},
		{"node down", VerdictFree, "", true, RobustnessHealthy, StatusOK, 2, "NotReady outside"},
		{"volume faulted", VerdictFree, "", false, RobustnessFaulted, StatusOK, 2, "faulted"},
		{"volume degraded is attention", VerdictFree, "", false, RobustnessDegraded, StatusOK, 2, "degraded"},
		{"longhorn forbidden is attention", VerdictFree, "", false, RobustnessHealthy, StatusForbidden, 2, "source longhorn is forbidden"},
		{"longhorn not installed ignores volumes", VerdictFree, "", false, RobustnessFaulted, StatusNotInstalled, 0, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newTestCluster(tc.verdict)
			c.Apply(NodeUpserted{readyNode("a", "1", "x", "1", true)}, t0)
			c.Apply(NodeUpserted{readyNode("b", "1", "x", "1", !tc.down)}, t0)
			c.Apply(LockUpserted{LockObject{LockRef: ref, Spec: &testSpec{Holder: tc.holder}}}, t0)
			c.Apply(SourceChanged{Health: SourceHealth{Name: SourceLonghorn, Status: tc.longhorn}}, t0)
			c.Apply(VolumeUpserted{Volume{Namespace: "longhorn-system", Name: "v1", Robustness: tc.volume}}, t0)
			c.Recompute(t0)
			if got := c.ExitCode(t0); got != tc.want {
				t.Fatalf("exit %d want %d; attention %+v", got, tc.want, c.Attention(t0))
			}
			var all []string
			for _, a := range c.Attention(t0) {
				all = append(all, a.Message)
			}
			if tc.wantMsg == "" && len(all) != 0 {
				t.Fatalf("unexpected attention %v", all)
			}
			if !strings.Contains(strings.Join(all, "\n"), tc.wantMsg) {
				t.Fatalf("attention %v lacks %q", all, tc.wantMsg)
			}
		})
	}
}

func TestUnjudgedLocksAreUnknown(t *testing.T) {
	c := NewCluster("x", Options{})
	c.Apply(LockUpserted{LockObject{LockRef: LockRef{Kind: LockKured, Namespace: "n", Name: "kured"}}}, t0)
	c.Recompute(t0)
	if s := c.LockStatuses(); len(s) != 1 || s[0].Verdict != VerdictUnknown || s[0].Reason == "" {
		t.Fatalf("%+v", s)
	}
}

func TestNodeDeletedForgetsTrack(t *testing.T) {
	c := newTestCluster(VerdictHeld)
	c.Apply(NodeUpserted{readyNode("a", "1", "x", "1", true)}, t0)
	c.Recompute(t0)
	c.Apply(NodeDeleted{Name: "a"}, t0)
	c.Recompute(t0)
	if c.NodeCount() != 0 || c.Track("a") != nil || len(c.NodeNames()) != 0 {
		t.Fatal("deleted node still present")
	}
}

func TestHumanDuration(t *testing.T) {
	cases := map[time.Duration]string{0: "0s", 45 * time.Second: "45s", 90 * time.Second: "1m30s", 12 * time.Minute: "12m",
		3*time.Hour + 4*time.Minute: "3h4m", 50 * time.Hour: "2d2h", 47 * 24 * time.Hour: "47d", -time.Second: "0s"}
	for d, want := range cases {
		if got := HumanDuration(d); got != want {
			t.Errorf("%v: %q want %q", d, got, want)
		}
	}
}

func TestAwaitSyncHoldsDerivation(t *testing.T) {
	c := newTestCluster(VerdictHeld)
	c.AwaitSync = true
	c.Apply(NodeUpserted{readyNode("a", "1", "x", "1", false)}, t0)
	c.Recompute(t0)
	if c.Synced() || c.Phase("a") != PhaseUnknown || len(c.Timeline()) != 0 {
		t.Fatalf("derived before sync: phase %s timeline %v", c.Phase("a"), c.Timeline())
	}
	// The lock arrives with the rest of the first picture: a is rebooting, never "down".
	c.Apply(LockUpserted{LockObject{LockRef: LockRef{Kind: LockKured, Namespace: "k", Name: "kured"}, Spec: &testSpec{Holder: "a", AcquireTime: t0}}}, t0)
	c.Apply(Synced{}, t0)
	c.Recompute(t0)
	if !c.Synced() || c.Phase("a") != PhaseRebooting {
		t.Fatalf("after sync: %s", c.Phase("a"))
	}
	for _, e := range c.Timeline() {
		if strings.Contains(e.Message, "down") {
			t.Fatalf("timeline shows a transient down: %v", e.Message)
		}
	}
}

// A source the model does not list (a lock kind added later) is still
// reported, after the known ones.
func TestSourcesKeepsUnknownSources(t *testing.T) {
	c := NewCluster("x", Options{})
	for _, n := range []SourceName{"zeta-locks", SourceNodes, "alpha-locks", SourceKured} {
		c.Apply(SourceChanged{Health: SourceHealth{Name: n, Status: StatusOK}}, t0)
	}
	var got []string
	for _, h := range c.Sources() {
		got = append(got, string(h.Name))
	}
	if strings.Join(got, ",") != "nodes,kured,alpha-locks,zeta-locks" {
		t.Fatalf("sources %v", got)
	}
}

// A holder listed twice in one lock is told apart in the snapshot by its
// entry's position; a holder listed once has no entry field.
func TestSnapshotEntryOfDuplicates(t *testing.T) {
	ref := LockRef{Kind: LockKured, Namespace: "k", Name: "kured"}
	c := NewCluster("x", Options{})
	c.Judge = func(*Cluster, time.Time) []LockStatus {
		return []LockStatus{{LockRef: ref, Holder: "a", Entry: 0, Duplicate: true, Verdict: VerdictExpired},
			{LockRef: ref, Holder: "b", Entry: 1, Verdict: VerdictHeld},
			{LockRef: ref, Holder: "a", Entry: 2, Duplicate: true, Verdict: VerdictHeld}}
	}
	c.Recompute(t0)
	s := c.Snapshot(t0)
	if len(s.Locks) != 3 || s.Locks[0].Entry == nil || *s.Locks[0].Entry != 0 || s.Locks[1].Entry != nil ||
		s.Locks[2].Entry == nil || *s.Locks[2].Entry != 2 {
		t.Fatalf("locks %+v", s.Locks)
	}
}

// While connecting, nothing has been read: the attention list says so, so no
// screen shows "nothing needs attention" and the exit code is not 0.
func TestConnectingIsNotAllClear(t *testing.T) {
	c := NewCluster("test", Options{})
	c.AwaitSync = true
	c.Recompute(t0)
	att := c.Attention(t0)
	if len(att) == 0 || !strings.Contains(att[len(att)-1].Message, "connecting") {
		t.Fatalf("attention while connecting: %+v", att)
	}
	if c.ExitCode(t0) == 0 {
		t.Fatal("exit 0 before anything was read")
	}
	c.Apply(SourceChanged{Health: SourceHealth{Name: SourceNodes, Status: StatusOK, LastSync: t0}}, t0)
	c.Apply(Synced{}, t0)
	c.Recompute(t0)
	for _, a := range c.Attention(t0) {
		if strings.Contains(a.Message, "connecting") {
			t.Fatalf("still connecting after the first picture: %+v", a)
		}
	}
}

// After an operator's release the timeline says who freed the lock, not
// "released by <holder>" (issue 11 §4); a holder that unlocks itself is
// still "released by" it.
func TestTimelineSaysWhoReleased(t *testing.T) {
	ref := LockRef{Kind: LockKured, Namespace: "kube-system", Name: "kured"}
	held := true
	c := NewCluster("x", Options{})
	c.Judge = func(*Cluster, time.Time) []LockStatus {
		if !held {
			return []LockStatus{{LockRef: ref, Verdict: VerdictFree}}
		}
		return []LockStatus{{LockRef: ref, Holder: "worker-1", HolderNodes: []string{"worker-1"}, Verdict: VerdictOrphaned}}
	}
	c.Recompute(t0)
	c.Apply(ActionRecorded{Lock: ref, Holder: "worker-1", Action: ActionRelease, Outcome: "done", By: "alice via rebootwatch"}, t0)
	held = false
	c.Recompute(t0.Add(time.Second))
	last := c.Timeline()[len(c.Timeline())-1].Message
	if last != "kured:kube-system/kured held by worker-1 released by alice via rebootwatch" {
		t.Fatalf("timeline says %q", last)
	}
	// The holder unlocks itself next time: its own release.
	held = true
	c.Recompute(t0.Add(2 * time.Second))
	held = false
	c.Recompute(t0.Add(3 * time.Second))
	if last := c.Timeline()[len(c.Timeline())-1].Message; last != "kured:kube-system/kured released by worker-1" {
		t.Fatalf("timeline says %q", last)
	}
}

// TestAttentionKeys: every item has a key naming what it is about; keys are
// distinct, and stay the same while the messages' ages move on.
func TestAttentionKeys(t *testing.T) {
	c := newTestCluster(VerdictGhost)
	c.Apply(NodeUpserted{readyNode("a", "1", "x", "1", true)}, t0)
	c.Apply(NodeUpserted{readyNode("b", "1", "x", "1", false)}, t0)
	c.Apply(LockUpserted{LockObject{LockRef: LockRef{Kind: LockKured, Namespace: "kube-system", Name: "kured"}, Spec: &testSpec{Holder: "gone"}}}, t0)
	c.Apply(SourceChanged{Health: SourceHealth{Name: SourceLonghorn, Status: StatusOK}}, t0)
	c.Apply(VolumeUpserted{Volume{Namespace: "longhorn-system", Name: "v1", Robustness: RobustnessFaulted}}, t0)
	c.Apply(VolumeUpserted{Volume{Namespace: "longhorn-system", Name: "v2", Robustness: RobustnessDegraded}}, t0)
	c.Apply(SourceChanged{Health: SourceHealth{Name: SourcePrometheus, Status: StatusError, Message: "refused"}}, t0)
	c.Recompute(t0)
	later := t0.Add(7 * time.Minute)
	first, second := c.Attention(t0), c.Attention(later)
	if len(first) != 5 || len(second) != len(first) {
		t.Fatalf("attention %+v", first)
	}
	seen := map[string]bool{}
	moved := false
	for i, a := range first {
		if a.Key == "" || seen[a.Key] {
			t.Fatalf("item %d %q: key %q empty or repeated", i, a.Message, a.Key)
		}
		seen[a.Key] = true
		if second[i].Key != a.Key {
			t.Fatalf("key of %q changed with time: %q then %q", a.Message, a.Key, second[i].Key)
		}
		moved = moved || second[i].Message != a.Message
	}
	if !moved {
		t.Fatal("no message carries an age: the test does not show keys outlast their text")
	}
	for _, want := range []string{"lock kured:kube-system/kured#gone ghost", "node b down", "volumes faulted", "volumes degraded", "source prometheus error"} {
		if !seen[want] {
			t.Fatalf("no key %q in %v", want, seen)
		}
	}
}

func TestShortID(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"3b0c5c2e-0d1e-4a56-8d6b-5a9e0d7c2f11", "3b0c5c2e"},
		{"abc", "abc"},
		{"", ""},
	} {
		if got := ShortID(tc.in); got != tc.want {
			t.Errorf("ShortID(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestFirstFewAndAside(t *testing.T) {
	for _, c := range []struct {
		xs   []string
		want string
	}{{nil, ""}, {[]string{"a"}, "a"}, {[]string{"a", "b", "c"}, "a, b, c"}, {[]string{"a", "b", "c", "d", "e"}, "a, b, c and 2 more"}} {
		if got := FirstFew(c.xs, 3); got != c.want {
			t.Errorf("FirstFew(%q, 3) = %q, want %q", c.xs, got, c.want)
		}
	}
	if Aside("") != "" || Aside("refused") != " (refused)" {
		t.Errorf("Aside: %q %q", Aside(""), Aside("refused"))
	}
}

// TestActionSubject: an uncordon names its node, never an empty lock
// ("uncordon :/"); a release names the lock and its holder.
func TestActionSubject(t *testing.T) {
	ref := LockRef{Kind: LockFleetlock, Namespace: "default", Name: "fleetlock-default"}
	for _, c := range []struct {
		a    ActionRecorded
		want string
	}{
		{ActionRecorded{Action: ActionRelease, Lock: ref, Holder: "z1"}, "fleetlock:default/fleetlock-default (holder z1)"},
		{ActionRecorded{Action: ActionUncordon, Lock: LockRef{Kind: LockKured}, Holder: "w1"}, "node w1 (kured)"},
		{ActionRecorded{Action: ActionUncordon, Holder: "k3s-agent-1"}, "node k3s-agent-1"},
	} {
		if got := c.a.Subject(); got != c.want {
			t.Errorf("%s: %q, want %q", c.a.Action, got, c.want)
		}
	}
}
