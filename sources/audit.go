package sources

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Auditing a watch (issue 22 §1): a watch that stops delivering while the
// server still answers (a proxy that passes every request but holds the
// watch streams) keeps the probe succeeding, so silence alone cannot show
// it. An Audit compares what the server holds with what the watch gave:
// every AuditInterval it takes the watch's cache (key and resourceVersion
// of each object), then lists the same objects by quorum read
// (resourceVersion unset), and compares them object by object.
// resourceVersions are opaque, so only equality is used: the cache was
// taken before the list, so an object whose listed state (absent, or its
// resourceVersion) differs from the cache's is one the server changed
// that the watch had not given yet. A healthy watch gives it within
// moments; so AuditGrace later the cache is looked at again, and an object
// whose cached state has not moved at all since the cache was taken means
// the watch is not delivering. The source is then stale, naming that
// object and how long, until its cached state moves (the watch delivered)
// or a later audit finds the cache and the server agree.
const (
	// DefaultAuditInterval is how often a watch's cache is compared with a
	// quorum list.
	DefaultAuditInterval = 10 * time.Second
	// DefaultAuditGrace is how long a healthy watch may take to deliver a
	// change the list already shows.
	DefaultAuditGrace = 2 * time.Second
	// AuditCostFactor paces audits by what they cost the server: the next
	// audit waits at least this many times as long as the last list took,
	// so auditing holds the server's list handler at most a tenth of the
	// time (10,000 Longhorn volumes, whose metadata the server serves
	// nearly as slowly as the objects, stretch the interval on a slow
	// server instead of loading it further). Detection then takes about
	// that interval plus the grace.
	AuditCostFactor = 10
)

// ObjectKey names an object of a watch: its namespace ("" when cluster
// scoped) and name.
type ObjectKey struct{ Namespace, Name string }

func (k ObjectKey) String() string {
	if k.Namespace == "" {
		return k.Name
	}
	return k.Namespace + "/" + k.Name
}

// Audit compares a watch's cache with quorum lists of what it watches (see
// DefaultAuditInterval). Set the fields, then call Run once the watch's
// first list is in the cache (before it, the cache is not a picture).
// Lag tells whether the watch is behind. It is safe for concurrent use.
type Audit struct {
	// What names the objects in messages ("node", "volume").
	What string
	// Interval between audits and Grace after each list (defaults
	// DefaultAuditInterval and DefaultAuditGrace); Timeout bounds each list
	// (default DefaultRequestTimeout).
	Interval, Grace, Timeout time.Duration
	// Clock is the time (default time.Now).
	Clock func() time.Time
	// Cache calls each with every object of the watch's cache now.
	Cache func(each func(k ObjectKey, resourceVersion string))
	// Get returns the cache's resourceVersion of an object now (ok false:
	// not in the cache).
	Get func(k ObjectKey) (resourceVersion string, ok bool)
	// List lists the watched objects by quorum read, calling each with
	// every object's namespace, name and resourceVersion (bytes valid only
	// during the call).
	List func(ctx context.Context, each func(namespace, name, resourceVersion []byte)) error

	mu       sync.Mutex // guards lag and listTook
	lag      Lag
	listTook time.Duration // how long the last list took
	// Once's own, reused from one audit to the next: the cache taken, by
	// namespace and name (two levels, so a listed item is looked up from
	// its bytes without making strings), and the objects that differ.
	byNS map[string]map[string]int // index into objs
	objs []cached
	diff []divergence
}

// cached is an object's state in the cache when an audit took it.
type cached struct {
	key    ObjectKey
	rv     string
	listed bool // the list showed it too
}

// divergence is an object whose listed state differs from the cache's.
type divergence struct {
	key    ObjectKey
	rv     string // the cache's, when present
	cached bool   // present in the cache
	listed bool   // present on the server
}

// Lag says a watch is behind the server: Key is one object whose change
// the watch has not given (Listed false: the server no longer has it;
// Cached false: the watch never gave it), since Since (the list that
// first showed it). The zero Lag is a watch that is not known to be
// behind.
type Lag struct {
	What           string
	Key            ObjectKey
	Since          time.Time
	Cached, Listed bool
	rv             string // the cache's resourceVersion when found
}

// Behind reports whether the watch is behind.
func (l Lag) Behind() bool { return !l.Since.IsZero() }

// Message says what the watch has not given and for how long at now, e.g.
// "watch not delivering: the server has newer data for node w-1 than the
// watch gave, for 12s". The key comes from the cluster: sanitize before
// display, as every health message.
func (l Lag) Message(now time.Time) string {
	what := l.What + " " + l.Key.String()
	var s string
	switch {
	case !l.Cached:
		s = "the server has " + what + ", which the watch never gave"
	case !l.Listed:
		s = "the server no longer has " + what + ", which the watch still holds"
	default:
		s = "the server has newer data for " + what + " than the watch gave"
	}
	return fmt.Sprintf("watch not delivering: %s, for %s", s, max(now.Sub(l.Since), 0).Round(time.Second))
}

func (a *Audit) clock() time.Time {
	if a.Clock == nil {
		return time.Now()
	}
	return a.Clock()
}

// Run audits until ctx ends, every Interval, or AuditCostFactor times the
// last list's duration when that is longer.
func (a *Audit) Run(ctx context.Context) {
	interval := a.Interval
	if interval <= 0 {
		interval = DefaultAuditInterval
	}
	t := time.NewTimer(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		a.Once(ctx)
		t.Reset(a.nextWait(interval))
	}
}

// nextWait is how long Run waits before the next audit: interval, or
// AuditCostFactor times the last list's duration when that is longer.
func (a *Audit) nextWait(interval time.Duration) time.Duration {
	a.mu.Lock()
	took := a.listTook
	a.mu.Unlock()
	return max(interval, AuditCostFactor*took)
}

// Lag returns whether the watch is behind. A lag whose object has since
// moved in the cache (the watch delivered something for it) is over.
func (a *Audit) Lag() Lag {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.lag.Behind() && a.moved(a.lag.Key, a.lag.Cached, a.lag.rv) {
		a.lag = Lag{}
	}
	return a.lag
}

// moved reports whether the cache's state of k differs from (cached, rv).
func (a *Audit) moved(k ObjectKey, wasCached bool, rv string) bool {
	cur, ok := a.Get(k)
	return ok != wasCached || (ok && cur != rv)
}

// Once runs one audit: it takes the cache, lists, and, when they differ,
// looks at the cache again Grace later. A list that fails leaves the lag
// as it was (the source's probe and watch report failures). Calls must not
// overlap (Run makes them one after the other); Lag may be called
// meanwhile.
func (a *Audit) Once(ctx context.Context) {
	if a.byNS == nil {
		a.byNS = map[string]map[string]int{}
	}
	for _, names := range a.byNS {
		clear(names)
	}
	a.objs, a.diff = a.objs[:0], a.diff[:0]
	a.Cache(func(k ObjectKey, rv string) {
		names := a.byNS[k.Namespace]
		if names == nil {
			names = map[string]int{}
			a.byNS[k.Namespace] = names
		}
		names[k.Name] = len(a.objs)
		a.objs = append(a.objs, cached{key: k, rv: rv})
	})
	timeout := a.Timeout
	if timeout <= 0 {
		timeout = DefaultRequestTimeout
	}
	lctx, cancel := context.WithTimeout(ctx, timeout)
	listStart := time.Now()
	err := a.List(lctx, func(ns, name, rv []byte) {
		i, ok := a.byNS[string(ns)][string(name)]
		if !ok {
			a.diff = append(a.diff, divergence{key: ObjectKey{Namespace: string(ns), Name: string(name)}, listed: true})
			return
		}
		c := &a.objs[i]
		if c.rv != string(rv) {
			a.diff = append(a.diff, divergence{key: c.key, rv: c.rv, cached: true, listed: true})
		}
		c.listed = true
	})
	cancel()
	took := time.Since(listStart)
	a.mu.Lock()
	a.listTook = took
	a.mu.Unlock()
	listed := a.clock()
	if err != nil || ctx.Err() != nil {
		return
	}
	for _, c := range a.objs {
		if !c.listed {
			a.diff = append(a.diff, divergence{key: c.key, rv: c.rv, cached: true})
		}
	}
	if len(a.diff) == 0 {
		a.mu.Lock()
		a.lag = Lag{}
		a.mu.Unlock()
		return
	}
	grace := a.Grace
	if grace <= 0 {
		grace = DefaultAuditGrace
	}
	select {
	case <-ctx.Done():
		return
	case <-time.After(grace):
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	var stuck *divergence
	for i := range a.diff {
		d := &a.diff[i]
		if a.moved(d.key, d.cached, d.rv) {
			continue
		}
		if a.lag.Behind() && d.key == a.lag.Key {
			return // the object first found is still not given: the lag goes on
		}
		if stuck == nil {
			stuck = d
		}
	}
	a.lag = Lag{}
	if stuck != nil {
		a.lag = Lag{What: a.What, Key: stuck.key, Since: listed, Cached: stuck.cached, Listed: stuck.listed, rv: stuck.rv}
	}
}
