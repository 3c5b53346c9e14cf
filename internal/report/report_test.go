package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/rebootwatch/rebootwatch/model"
)

var now = time.Date(2026, 11, 29, 2, 0, 0, 0, time.UTC)

func TestEmptyClusterReadsWell(t *testing.T) {
	c := model.NewCluster("lab", model.Options{})
	c.Apply(model.SourceChanged{Health: model.SourceHealth{Name: model.SourceNodes, Status: model.StatusOK}}, now)
	c.Apply(model.SourceChanged{Health: model.SourceHealth{Name: model.SourceLonghorn, Status: model.StatusNotInstalled}}, now)
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
