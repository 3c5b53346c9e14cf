package model

import (
	"testing"
	"time"
)

// freedCluster is a cluster whose one kured lock is held by worker-2 while
// *held is true, with the rebootwatch Events read.
func freedCluster(held *bool) (*Cluster, LockRef) {
	ref := LockRef{Kind: LockKured, Namespace: "kube-system", Name: "kured"}
	c := NewCluster("x", Options{})
	c.Judge = func(*Cluster, time.Time) []LockStatus {
		if !*held {
			return []LockStatus{{LockRef: ref, Verdict: VerdictFree}}
		}
		return []LockStatus{{LockRef: ref, Holder: "worker-2", HolderNodes: []string{"worker-2"}, Verdict: VerdictGhost}}
	}
	c.Apply(LockActionsWatched{Watched: true}, t0)
	c.Recompute(t0)
	return c, ref
}

func lastLockEntry(c *Cluster) string {
	for i := len(c.Timeline()) - 1; i >= 0; i-- {
		if e := c.Timeline()[i]; e.Kind == KindLock {
			return e.Message
		}
	}
	return ""
}

// TestTimelineSaysWhoFreedFromEvents is issue 27 item 4: another process
// reaped the lock, and the Event it recorded says who. Whether the Event
// arrives before or after the lock is seen gone, the entry names them,
// never the deleted holder.
func TestTimelineSaysWhoFreedFromEvents(t *testing.T) {
	const want = "kured:kube-system/kured held by worker-2 reaped by alice via rebootwatch"
	seen := LockActionSeen{Lock: LockRef{Kind: LockKured, Namespace: "kube-system", Name: "kured"}, Holder: "worker-2",
		Action: ActionReap, By: "alice via rebootwatch reap"}

	t.Run("event first", func(t *testing.T) {
		held := true
		c, _ := freedCluster(&held)
		c.Apply(seen, t0.Add(time.Second))
		held = false
		c.Recompute(t0.Add(time.Second))
		if got := lastLockEntry(c); got != want {
			t.Fatalf("timeline says %q, want %q", got, want)
		}
	})
	t.Run("lock gone first", func(t *testing.T) {
		held := true
		c, _ := freedCluster(&held)
		held = false
		c.Recompute(t0.Add(time.Second))
		if !c.ReleasesPending() {
			t.Fatal("the entry must wait for the Event")
		}
		c.Apply(seen, t0.Add(1500*time.Millisecond))
		c.Recompute(t0.Add(1500 * time.Millisecond))
		if got := lastLockEntry(c); got != want || c.ReleasesPending() {
			t.Fatalf("timeline says %q (pending %v), want %q", got, c.ReleasesPending(), want)
		}
		e := c.Timeline()[len(c.Timeline())-1]
		if !e.Time.Equal(t0.Add(time.Second)) {
			t.Fatalf("entry dated %v, want when the lock went away", e.Time)
		}
	})
	t.Run("no event: the holder released it", func(t *testing.T) {
		held := true
		c, _ := freedCluster(&held)
		held = false
		c.Recompute(t0.Add(time.Second))
		c.Recompute(t0.Add(time.Second + ReleaseAttributionWait))
		if got := lastLockEntry(c); got != "kured:kube-system/kured released by worker-2" || c.ReleasesPending() {
			t.Fatalf("timeline says %q (pending %v)", got, c.ReleasesPending())
		}
	})
	t.Run("an old event does not credit the next release", func(t *testing.T) {
		held := false
		c, _ := freedCluster(&held)
		c.Apply(seen, t0) // listed at start: its lock is long gone
		held = true
		c.Recompute(t0.Add(time.Second))
		held = false
		c.Recompute(t0.Add(2 * time.Second))
		c.Recompute(t0.Add(2*time.Second + ReleaseAttributionWait))
		if got := lastLockEntry(c); got != "kured:kube-system/kured released by worker-2" {
			t.Fatalf("timeline says %q", got)
		}
	})
	t.Run("events not read: no wait", func(t *testing.T) {
		held := true
		c, _ := freedCluster(&held)
		c.Apply(LockActionsWatched{Watched: false}, t0)
		held = false
		c.Recompute(t0.Add(time.Second))
		if got := lastLockEntry(c); got != "kured:kube-system/kured released by worker-2" || c.ReleasesPending() {
			t.Fatalf("timeline says %q (pending %v)", got, c.ReleasesPending())
		}
	})
}
