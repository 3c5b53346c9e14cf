package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/rebootwatch/rebootwatch/model"
	"github.com/rebootwatch/rebootwatch/themes"
)

var now = time.Date(2026, 11, 29, 2, 0, 0, 0, time.UTC)

func TestEmptyClusterReadsWell(t *testing.T) {
	c := model.NewCluster("lab", model.Options{})
	c.LockSources = []model.SourceName{model.SourceKured, model.SourceFleetlock}
	c.Apply(model.SourceChanged{Health: model.SourceHealth{Name: model.SourceNodes, Status: model.StatusOK}}, now)
	c.Apply(model.SourceChanged{Health: model.SourceHealth{Name: model.SourceLonghorn, Status: model.StatusNotInstalled}}, now)
	c.Apply(model.SourceChanged{Health: model.SourceHealth{Name: model.SourceKured, Status: model.StatusNotInstalled}}, now)
	c.Apply(model.SourceChanged{Health: model.SourceHealth{Name: model.SourceFleetlock, Status: model.StatusNotInstalled}}, now)
	c.Recompute(now)
	var b bytes.Buffer
	if err := Text(&b, c, now, Options{}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"context lab", "Fleet: 0/0 upgraded to ? · ETA unknown\n", "no reboot lock found", "no nodes",
		"Longhorn not installed: no volume gate", "nothing needs attention"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "\x1b[") {
		t.Fatal("escapes without Color")
	}
}

func TestColourMarksVerdictsAndSteppers(t *testing.T) {
	c := model.NewCluster("lab", model.Options{})
	c.LockSources = []model.SourceName{model.SourceKured, model.SourceFleetlock}
	c.Judge = func(c *model.Cluster, now time.Time) []model.LockStatus {
		return []model.LockStatus{{LockRef: model.LockRef{Kind: model.LockFleetlock, Namespace: "default", Name: "fleetlock-default"},
			Holder: "0123456789abcdef0123456789abcdef", Verdict: model.VerdictGhost, Reason: "no such node", Created: now.Add(-47 * 24 * time.Hour)}}
	}
	c.Apply(model.SourceChanged{Health: model.SourceHealth{Name: model.SourceNodes, Status: model.StatusOK}}, now)
	c.Apply(model.NodeUpserted{Node: model.Node{Name: "n1", Conditions: []model.Condition{{Type: "Ready", Status: "True"}}}}, now)
	c.Recompute(now)
	var b bytes.Buffer
	if err := Text(&b, c, now, Options{Color: true}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if !strings.Contains(out, "\x1b[") || !strings.Contains(out, "0123456789ab… (no node)") || !strings.Contains(out, "47d") {
		t.Fatalf("coloured report:\n%s", out)
	}
	// The colours are the theme's: the ghost verdict in its critical colour
	// (dark by default, light when asked).
	for _, tc := range []struct {
		theme *themes.Theme
		sgr   string
	}{{nil, "38;2;224;108;117"}, {themes.Light(), "38;2;207;34;46"}} {
		b.Reset()
		if err := Text(&b, c, now, Options{Color: true, Theme: tc.theme}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), tc.sgr) {
			t.Fatalf("report lacks the theme's critical colour %s:\n%q", tc.sgr, b.String())
		}
	}
	steps := map[model.Phase]string{model.PhasePending: "●○○○○", model.PhaseRecovering: "●●●●○", model.PhaseDone: "●●●●●",
		model.PhaseDown: "✗ down", model.PhaseIdle: "· idle", model.PhaseUnknown: "? ?"}
	for p, want := range steps {
		if got := Stepper(p); got != want {
			t.Errorf("Stepper(%s) = %q, want %q", p, got, want)
		}
	}
}

// No ✓ statement about data that was not read (issue 11 §2): a forbidden
// Longhorn or lock source is neither "not installed" nor "nothing needs
// attention"; the report says what is unknown and why.
func TestUnreadSourcesAreNotClaimedClean(t *testing.T) {
	c := model.NewCluster("lab", model.Options{})
	c.LockSources = []model.SourceName{model.SourceKured, model.SourceFleetlock}
	c.Apply(model.SourceChanged{Health: model.SourceHealth{Name: model.SourceNodes, Status: model.StatusOK}}, now)
	c.Apply(model.SourceChanged{Health: model.SourceHealth{Name: model.SourceKured, Status: model.StatusForbidden,
		Message: "cannot list daemonsets.apps (RBAC)"}}, now)
	c.Apply(model.SourceChanged{Health: model.SourceHealth{Name: model.SourceLonghorn, Status: model.StatusForbidden,
		Message: "cannot list volumes.longhorn.io (RBAC)"}}, now)
	c.Recompute(now)
	var b bytes.Buffer
	if err := Text(&b, c, now, Options{}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, bad := range []string{"Longhorn not installed", "nothing needs attention"} {
		if strings.Contains(out, bad) {
			t.Errorf("report claims %q about data it did not read:\n%s", bad, out)
		}
	}
	for _, want := range []string{"volumes unknown: Longhorn source forbidden: cannot list volumes.longhorn.io (RBAC)",
		"could not read: source kured is forbidden"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if code := c.ExitCode(now); code != 1 {
		t.Errorf("exit %d, want 1 (a lock source could not be read)", code)
	}
}

// TestBlockedSection: the fleet's blocker leads with its evidence and what
// clears it and counts the others; fleet-wide blockers follow; every
// waiting node's blockers are listed, first first.
func TestBlockedSection(t *testing.T) {
	c := model.NewCluster("lab", model.Options{})
	c.LockSources = []model.SourceName{model.SourceKured, model.SourceFleetlock}
	c.Apply(model.SourceChanged{Health: model.SourceHealth{Name: model.SourceNodes, Status: model.StatusOK}}, now)
	for _, n := range []string{"w3", "w4"} {
		c.Apply(model.NodeUpserted{Node: model.Node{Name: n, Conditions: []model.Condition{{Type: "Ready", Status: "True"}}}}, now)
	}
	win := model.Blocker{Kind: model.BlockerWindow, Node: "w3", Stalls: true, Reason: "w3 waits for kured's reboot window (su 22:00–04:00 Europe/Berlin), which opens Sun 22:00 Europe/Berlin, in 9h",
		Clears: "wait: it opens Sun 22:00 Europe/Berlin, in 9h", Evidence: []model.Evidence{{Key: "kured --reboot-days", Value: "su (arg)"}}}
	queued := model.Blocker{Kind: model.BlockerLock, Node: "w4", Reason: "w4 waits for the kured lock, held by w1 for 2m (draining), held", Clears: "wait for w1 to finish its cycle"}
	c.Explain = func(*model.Cluster, time.Time) model.Blockers {
		return model.Blockers{Nodes: map[string][]model.Blocker{"w3": {win}, "w4": {queued}}, Fleet: &model.FleetBlocker{Blocker: win, Others: 2},
			General: []model.Blocker{{Kind: model.BlockerUnknown, Stalls: true, Reason: "whether 3 nodes need a reboot is unknown"}}}
	}
	c.Recompute(now)
	out := render(t, c, false)
	i := strings.Index(out, "\nBLOCKED\n")
	if i < 0 || i > strings.Index(out, "\nATTENTION\n") {
		t.Fatalf("no BLOCKED section before ATTENTION:\n%s", out)
	}
	for _, want := range []string{
		"  ■ fleet: w3 waits for kured's reboot window (su 22:00–04:00 Europe/Berlin), which opens Sun 22:00 Europe/Berlin, in 9h (and 2 other nodes blocked)\n",
		"    clears: wait: it opens Sun 22:00 Europe/Berlin, in 9h\n",
		"    kured --reboot-days: su (arg)\n",
		"  · whether 3 nodes need a reboot is unknown\n",
		"NODE  BLOCKER        CLEARS",
		"w3    reboot-window  wait: it opens",
		"w4    lock-held      wait for w1 to finish its cycle",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	c.Explain = func(*model.Cluster, time.Time) model.Blockers { return model.Blockers{} }
	c.Apply(model.SourceChanged{Health: model.SourceHealth{Name: model.SourceKured, Status: model.StatusOK}}, now)
	c.Apply(model.SourceChanged{Health: model.SourceHealth{Name: model.SourceFleetlock, Status: model.StatusNotInstalled}}, now)
	c.Recompute(now)
	if out := render(t, c, false); !strings.Contains(out, "BLOCKED\n  nothing stops the fleet\n") {
		t.Fatalf("unblocked:\n%s", out)
	}
}

// Never claim what was not read (issue 22 §4): with the nodes read but the
// DaemonSets and Leases forbidden, the report says the locks are unknown
// and why, never "no reboot lock found" or "nothing stops the fleet"; the
// JSON's unread names the parts whose emptiness is no claim.
func TestUnreadLocksAreNotNone(t *testing.T) {
	c := model.NewCluster("lab", model.Options{})
	c.LockSources = []model.SourceName{model.SourceKured, model.SourceFleetlock}
	c.Apply(model.SourceChanged{Health: model.SourceHealth{Name: model.SourceNodes, Status: model.StatusOK}}, now)
	c.Apply(model.SourceChanged{Health: model.SourceHealth{Name: model.SourceLonghorn, Status: model.StatusNotInstalled}}, now)
	c.Apply(model.SourceChanged{Health: model.SourceHealth{Name: model.SourceKured, Status: model.StatusForbidden,
		Message: "cannot list daemonsets.apps (RBAC)"}}, now)
	c.Apply(model.SourceChanged{Health: model.SourceHealth{Name: model.SourceFleetlock, Status: model.StatusForbidden,
		Message: "cannot list leases.coordination.k8s.io (RBAC)"}}, now)
	c.Apply(model.NodeUpserted{Node: model.Node{Name: "n1", Conditions: []model.Condition{{Type: "Ready", Status: "True"}}}}, now)
	c.Recompute(now)
	out := render(t, c, false)
	for _, bad := range []string{"no reboot lock found", "nothing stops the fleet"} {
		if strings.Contains(out, bad) {
			t.Errorf("report claims %q about locks it did not read:\n%s", bad, out)
		}
	}
	for _, want := range []string{
		"LOCKS\n  locks unknown: kured forbidden (cannot list daemonsets.apps (RBAC)), fleetlock forbidden (cannot list leases.coordination.k8s.io (RBAC))\n",
		"BLOCKED\n  cannot tell what blocks the fleet: locks unknown: kured forbidden",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	snap := c.Snapshot(now)
	var fields []string
	for _, u := range snap.Unread {
		fields = append(fields, u.Field)
	}
	if len(snap.Locks) != 0 || len(snap.Fleet.Blockers) != 0 || strings.Join(fields, ",") != "locks,fleet.blockers" {
		t.Fatalf("snapshot locks %v blockers %v unread %+v", snap.Locks, snap.Fleet.Blockers, snap.Unread)
	}
	// Read, the same emptiness is a claim, and unread is empty.
	c.Apply(model.SourceChanged{Health: model.SourceHealth{Name: model.SourceKured, Status: model.StatusNotInstalled}}, now)
	c.Apply(model.SourceChanged{Health: model.SourceHealth{Name: model.SourceFleetlock, Status: model.StatusNotInstalled}}, now)
	c.Recompute(now)
	if out := render(t, c, false); !strings.Contains(out, "no reboot lock found") || !strings.Contains(out, "nothing stops the fleet") {
		t.Fatalf("read and empty:\n%s", out)
	}
	if u := c.Snapshot(now).Unread; u == nil || len(u) != 0 {
		t.Fatalf("unread %#v, want []", u)
	}
}
