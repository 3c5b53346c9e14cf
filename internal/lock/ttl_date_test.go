package lock

import (
	"strings"
	"testing"
	"time"

	"github.com/rebootwatch/rebootwatch/model"
)

// Issue 22 §6: a kured lock created in year 0001 (with a TTL) expired
// longer ago than a time.Duration holds: the reason says the date it
// expired, never a saturated "106751d23h ago"; how long it has been held
// is unknown rather than that saturated figure.
func TestExpiredLongAgoSaysTheDate(t *testing.T) {
	now := at(time.Hour)
	c := model.NewCluster("t", model.Options{})
	c.Judge = New(Options{}).Judge
	c.Apply(nodesOK(), now)
	c.Apply(up(node("n1")), now)
	c.Apply(lockEv(kuredLock(`{"nodeID":"n1","metadata":{"unschedulable":false},"created":"0001-01-01T00:00:01Z","TTL":3600000000000}`)), now)
	c.Recompute(now)
	st := c.LockStatuses()
	if len(st) != 1 || st[0].Verdict != model.VerdictExpired {
		t.Fatalf("statuses %+v", st)
	}
	if r := st[0].Reason; strings.Contains(r, "106751d") || !strings.Contains(r, "TTL 1h0m0s passed on 0001-01-01 01:00:01 UTC") {
		t.Fatalf("reason %q", r)
	}
	if d, ok := st[0].HeldFor(now); ok {
		t.Fatalf("held for %s: a saturated duration", d)
	}
	// A TTL that passed an hour ago still says how long ago.
	c.Apply(lockEv(kuredLock(`{"nodeID":"n1","metadata":{"unschedulable":false},"created":"`+now.Add(-2*time.Hour).Format(time.RFC3339)+`","TTL":3600000000000}`)), now)
	c.Recompute(now)
	if r := c.LockStatuses()[0].Reason; r != "TTL 1h0m0s passed 1h ago" {
		t.Fatalf("reason %q", r)
	}
}
