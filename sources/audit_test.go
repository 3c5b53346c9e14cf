package sources

import (
	"context"
	"errors"
	"maps"
	"sync"
	"testing"
	"time"
)

// fakeWatch is a cache and a server for Audit: the server's objects and
// the cache's, by key, each with its resourceVersion.
type fakeWatch struct {
	mu            sync.Mutex
	server, cache map[ObjectKey]string
	listErr       error
	afterList     func() // runs after the list returned its objects (the watch delivering late)
}

func (f *fakeWatch) audit(now func() time.Time) *Audit {
	return &Audit{What: "node", Grace: time.Millisecond, Clock: now,
		Cache: func(each func(ObjectKey, string)) {
			f.mu.Lock()
			c := maps.Clone(f.cache)
			f.mu.Unlock()
			for k, rv := range c {
				each(k, rv)
			}
		},
		Get: func(k ObjectKey) (string, bool) {
			f.mu.Lock()
			defer f.mu.Unlock()
			rv, ok := f.cache[k]
			return rv, ok
		},
		List: func(_ context.Context, each func(ns, name, rv []byte)) error {
			f.mu.Lock()
			s, err := maps.Clone(f.server), f.listErr
			f.mu.Unlock()
			if err != nil {
				return err
			}
			for k, rv := range s {
				each([]byte(k.Namespace), []byte(k.Name), []byte(rv))
			}
			if f.afterList != nil {
				f.afterList()
			}
			return nil
		},
	}
}

func (f *fakeWatch) set(m map[ObjectKey]string, k ObjectKey, rv string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if rv == "" {
		delete(m, k)
	} else {
		m[k] = rv
	}
}

func TestAudit(t *testing.T) {
	w1, w2 := ObjectKey{Name: "w-1"}, ObjectKey{Name: "w-2"}
	now := time.Unix(1000, 0)
	clock := func() time.Time { return now }
	ctx := context.Background()
	newWatch := func() *fakeWatch {
		return &fakeWatch{server: map[ObjectKey]string{w1: "1", w2: "2"}, cache: map[ObjectKey]string{w1: "1", w2: "2"}}
	}

	t.Run("agreeing cache and server are not behind", func(t *testing.T) {
		f := newWatch()
		a := f.audit(clock)
		a.Once(ctx)
		if l := a.Lag(); l.Behind() {
			t.Fatalf("behind: %s", l.Message(now))
		}
	})
	for _, tc := range []struct {
		name, rv string
		key      ObjectKey
		want     string
	}{
		{"changed", "7", w1, "watch not delivering: the server has newer data for node w-1 than the watch gave, for 12s"},
		{"deleted", "", w2, "watch not delivering: the server no longer has node w-2, which the watch still holds, for 12s"},
		{"created", "9", ObjectKey{Name: "w-3"}, "watch not delivering: the server has node w-3, which the watch never gave, for 12s"},
	} {
		t.Run(tc.name+" on the server, not given by the watch", func(t *testing.T) {
			f := newWatch()
			a := f.audit(clock)
			f.set(f.server, tc.key, tc.rv)
			a.Once(ctx)
			l := a.Lag()
			if got := l.Message(now.Add(12 * time.Second)); !l.Behind() || got != tc.want {
				t.Fatalf("lag %+v: %q, want %q", l, got, tc.want)
			}
			// Another audit that finds it still not given keeps the time.
			later := now.Add(10 * time.Second)
			a.Clock = func() time.Time { return later }
			a.Once(ctx)
			if l2 := a.Lag(); !l2.Since.Equal(l.Since) {
				t.Fatalf("since moved from %s to %s", l.Since, l2.Since)
			}
			// The watch delivers: the lag is over at once.
			f.set(f.cache, tc.key, tc.rv)
			if l := a.Lag(); l.Behind() {
				t.Fatalf("still behind once delivered: %s", l.Message(now))
			}
		})
		t.Run(tc.name+" and given within the grace", func(t *testing.T) {
			f := newWatch()
			a := f.audit(clock)
			f.set(f.server, tc.key, tc.rv)
			f.afterList = func() { f.set(f.cache, tc.key, tc.rv) }
			a.Once(ctx)
			if l := a.Lag(); l.Behind() {
				t.Fatalf("behind: %s", l.Message(now))
			}
		})
	}
	t.Run("a cache ahead of the list is not behind", func(t *testing.T) {
		// The object changed after the list and the watch gave it at once:
		// the cache moved since it was taken.
		f := newWatch()
		a := f.audit(clock)
		f.afterList = func() { f.set(f.server, w1, "8"); f.set(f.cache, w1, "8") }
		a.Once(ctx)
		f.afterList = nil
		a.Once(ctx)
		if l := a.Lag(); l.Behind() {
			t.Fatalf("behind: %s", l.Message(now))
		}
	})
	t.Run("a failed list leaves the lag as it was", func(t *testing.T) {
		f := newWatch()
		a := f.audit(clock)
		f.set(f.server, w1, "7")
		a.Once(ctx)
		f.listErr = errors.New("boom")
		a.Once(ctx)
		if !a.Lag().Behind() {
			t.Fatal("a failed list cleared the lag")
		}
	})
	t.Run("a later audit that agrees ends the lag", func(t *testing.T) {
		f := newWatch()
		a := f.audit(clock)
		f.set(f.server, w1, "7")
		a.Once(ctx)
		f.set(f.server, w1, "1") // (a recreated object with the old state is as good)
		a.Once(ctx)
		if l := a.Lag(); l.Behind() {
			t.Fatalf("behind: %s", l.Message(now))
		}
	})
}

// TestAuditPacedByListCost: an audit whose list is slow waits
// AuditCostFactor times the list's duration before the next one, so a
// slow server is not loaded further; a fast list keeps the interval.
func TestAuditPacedByListCost(t *testing.T) {
	f := &fakeWatch{server: map[ObjectKey]string{{Name: "n1"}: "1"}, cache: map[ObjectKey]string{{Name: "n1"}: "1"}}
	a := f.audit(time.Now)
	list := a.List
	var delay time.Duration
	a.List = func(ctx context.Context, each func(ns, name, rv []byte)) error {
		time.Sleep(delay)
		return list(ctx, each)
	}
	a.Once(context.Background())
	if got := a.nextWait(10 * time.Second); got != 10*time.Second {
		t.Errorf("fast list: next audit in %s, want the interval 10s", got)
	}
	delay = 50 * time.Millisecond
	a.Once(context.Background())
	if got := a.nextWait(100 * time.Millisecond); got < AuditCostFactor*delay {
		t.Errorf("list of %s: next audit in %s, want at least %s", delay, got, AuditCostFactor*delay)
	}
}
