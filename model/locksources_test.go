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
