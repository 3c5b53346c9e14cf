package model

import (
	"fmt"
	"strings"
	"time"
)

// Who freed a lock (issue 27 item 4). A lock that goes away was released by
// its holder, unless a rebootwatch process released or reaped it: this one
// (ActionRecorded) or another (LockActionSeen, from the Event it recorded).
// The Event is written just after the lock, and reaches this process by
// another watch, so the lock may be seen gone first: while Events are read,
// the "released" entry waits up to ReleaseAttributionWait for it.

// ReleaseAttributionWait is how long a freed lock's timeline entry waits
// for the Event that says who freed it, while those Events are read.
const ReleaseAttributionWait = 3 * time.Second

// seenActionTTL is how long an Event's attribution waits for its lock to
// go away (the lock's watch lagging behind the Event's).
const seenActionTTL = time.Minute

// pendingRelease is a freed lock whose entry waits for its attribution.
type pendingRelease struct {
	key    string
	status LockStatus
	at     time.Time
}

// released logs (or holds back) the entry of lock o, no longer seen at now.
func (c *Cluster) released(now time.Time, o LockStatus) {
	k := lockKey(o)
	if a, ok := c.freedBy[k]; ok {
		delete(c.freedBy, k)
		delete(c.freedSeen, k)
		c.releaseEntry(now, o, &a)
		return
	}
	if c.actionsWatched {
		c.pending = append(c.pending, pendingRelease{key: k, status: o, at: now})
		return
	}
	c.releaseEntry(now, o, nil)
}

// releaseEntry adds the entry of a freed lock: by whom, when known.
func (c *Cluster) releaseEntry(at time.Time, o LockStatus, a *ActionRecorded) {
	msg := fmt.Sprintf("%s released by %s", o.LockRef, holderLabel(o))
	if a != nil {
		// Someone else freed it: say who, not the holder.
		by := strings.TrimSuffix(a.By, " "+string(a.Action))
		if by == "" {
			by = "an operator"
		}
		verb := "released"
		if a.Action == ActionReap {
			verb = "reaped"
		}
		msg = fmt.Sprintf("%s held by %s %s by %s", o.LockRef, holderLabel(o), verb, by)
	}
	c.add(TimelineEntry{Time: at, Kind: KindLock, Node: o.HolderNode(), Change: ChangeReleased, Message: msg})
}

// attribute records who freed a lock (a release or reap that was done):
// the waiting entry, if the lock is already gone, else the lock's next
// disappearance.
func (c *Cluster) attribute(now time.Time, a ActionRecorded, fromEvent bool) {
	k := a.Lock.String() + "#" + a.Holder
	for i, p := range c.pending {
		if p.key == k {
			c.pending = append(c.pending[:i:i], c.pending[i+1:]...)
			c.releaseEntry(p.at, p.status, &a)
			return
		}
	}
	if fromEvent {
		// Only for a lock still held: an Event about a lock already
		// gone (this process's own action, an old Event listed at
		// start) says nothing about the next time it goes away.
		held := false
		for _, s := range c.statuses {
			held = held || (lockKey(s) == k && s.Holder != "")
		}
		if !held {
			return
		}
		if c.freedSeen == nil {
			c.freedSeen = map[string]time.Time{}
		}
		c.freedSeen[k] = now
	}
	if c.freedBy == nil {
		c.freedBy = map[string]ActionRecorded{}
	}
	c.freedBy[k] = a
}

// flushReleases logs the waiting entries whose wait is over (released by
// the holder, as far as anyone recorded) and forgets Event attributions
// whose lock never went away.
func (c *Cluster) flushReleases(now time.Time) {
	keep := c.pending[:0]
	for _, p := range c.pending {
		if !c.actionsWatched || now.Sub(p.at) >= ReleaseAttributionWait {
			c.releaseEntry(p.at, p.status, nil)
			continue
		}
		keep = append(keep, p)
	}
	c.pending = keep
	for k, at := range c.freedSeen {
		if now.Sub(at) >= seenActionTTL {
			delete(c.freedSeen, k)
			delete(c.freedBy, k)
		}
	}
}

// ReleasesPending reports whether a freed lock's timeline entry still
// waits for the Event that says who freed it (at most
// ReleaseAttributionWait): a watch that ends now would miss it.
func (c *Cluster) ReleasesPending() bool { return len(c.pending) > 0 }
