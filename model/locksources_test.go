package model

import (
	"strings"
	"testing"
)

// The sources the lock verdicts depend on are injected (LockSources, from
// the lock registry), as Judge is: a third lock kind's source that is
// forbidden is "could not read" (exit 1), as kured's is, never attention
// (exit 2) only.
func TestInjectedLockSourceUnreadIsExit1(t *testing.T) {
	const acme SourceName = "acme"
	c := NewCluster("test", Options{})
	c.LockSources = []SourceName{SourceKured, SourceFleetlock, acme}
	for _, n := range []SourceName{SourceNodes, SourceKured, SourceFleetlock} {
		c.Apply(SourceChanged{Health: SourceHealth{Name: n, Status: StatusOK, LastSync: t0}}, t0)
	}
	c.Apply(SourceChanged{Health: SourceHealth{Name: acme, Status: StatusForbidden, Message: "cannot list widgets.acme.io (RBAC)"}}, t0)
	c.Apply(NodeUpserted{readyNode("a", "1", "x", "1", true)}, t0)
	c.Recompute(t0)
	if code := c.ExitCode(t0); code != 1 {
		t.Fatalf("exit %d, want 1; unread %v; attention %+v", code, c.Unread(), c.Attention(t0))
	}
	if u := strings.Join(c.Unread(), "; "); !strings.Contains(u, "acme forbidden: cannot list widgets.acme.io") {
		t.Fatalf("unread %q", u)
	}
	if why, unread := c.LocksUnread(); !unread || !strings.Contains(why, "acme forbidden") {
		t.Fatalf("locks unread %q %v", why, unread)
	}
}

// A coordinator kind read beside the locks (--coordinators) that is
// forbidden is "could not read" (exit 1) and "cannot tell what blocks the
// fleet"; one not installed is an answer (exit 0 here).
func TestCoordinatorSourceUnreadIsExit1(t *testing.T) {
	for _, tc := range []struct {
		st   SourceStatus
		want int
	}{{StatusForbidden, 1}, {StatusError, 1}, {StatusNotInstalled, 0}, {StatusOK, 0}} {
		c := NewCluster("test", Options{})
		c.LockSources = []SourceName{SourceKured, SourceFleetlock}
		c.CoordinatorSources = []SourceName{"suc"}
		for _, n := range []SourceName{SourceNodes, SourceKured, SourceFleetlock, SourceLonghorn} {
			c.Apply(SourceChanged{Health: SourceHealth{Name: n, Status: StatusOK, LastSync: t0}}, t0)
		}
		c.Apply(SourceChanged{Health: SourceHealth{Name: "suc", Status: tc.st, Message: "plans.upgrade.cattle.io is forbidden"}}, t0)
		c.Apply(NodeUpserted{readyNode("a", "1", "x", "1", true)}, t0)
		c.Recompute(t0)
		if code := c.ExitCode(t0); code != tc.want {
			t.Errorf("suc %s: exit %d, want %d; unread %v; attention %+v", tc.st, code, tc.want, c.Unread(), c.Attention(t0))
		}
		why, unread := UnreadReason(c.UnreadParts(), "fleet.blockers")
		if tc.want == 1 && (!unread || !strings.Contains(why, "coordinators unknown: suc "+string(tc.st))) {
			t.Errorf("suc %s: fleet.blockers %q %v", tc.st, why, unread)
		}
	}
}
