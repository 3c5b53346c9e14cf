package lock

import (
	"strings"
	"testing"
	"time"

	"github.com/rebootwatch/rebootwatch/model"
)

// A kured multi-lock listing more holders than its maxOwners is flagged:
// every entry carries the warning and the evidence, and the cluster's
// attention list says it once. Within maxOwners nothing is flagged.
func TestMultiLockOverMaxOwnersIsFlagged(t *testing.T) {
	now := at(time.Hour)
	h := func(d time.Duration) time.Time { return now.Add(d) }
	for _, tc := range []struct {
		max  int
		want bool
	}{{1, true}, {2, false}, {3, false}} {
		e := New(Options{OrphanGrace: 10 * time.Minute})
		c := build(e, step{now, []model.Event{nodesOK(), up(node("n1")), up(node("n2")),
			lockEv(kuredLock(multi(tc.max, ent("n1", h(-5*time.Minute), 0), ent("n2", h(-3*time.Minute), 0))))}})
		sts := c.LockStatuses()
		if len(sts) != 2 {
			t.Fatalf("maxOwners %d: %d statuses", tc.max, len(sts))
		}
		for _, s := range sts {
			flagged := strings.Contains(s.Warning, "2 holders, more than its maxOwners 1")
			if flagged != tc.want {
				t.Errorf("maxOwners %d, entry %s: warning %q", tc.max, s.Holder, s.Warning)
			}
		}
		n := 0
		for _, a := range c.Attention(now) {
			if strings.Contains(a.Message, "more than its maxOwners") {
				n++
			}
		}
		if want := map[bool]int{true: 1, false: 0}[tc.want]; n != want {
			t.Errorf("maxOwners %d: %d attention items about it, want %d: %+v", tc.max, n, want, c.Attention(now))
		}
	}
}
