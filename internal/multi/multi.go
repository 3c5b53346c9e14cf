// Package multi opens one or several clusters for `--context a,b,c`,
// `--all-contexts` — and a single cluster, which is a list of one for
// --snapshot as for watch: it opens one live.Session per context
// concurrently, collects their first pictures in parallel (each bounded by
// the sync timeout; Collect for one-shot callers, FanIn for watch, which
// then forwards every member's events tagged) and reports a cluster that
// cannot be opened or read as unreachable without ever letting it block the
// others. Exit codes of several clusters combine with Worst. The contexts
// themselves are resolved by internal/kubeconfig.
//
// It must not render anything nor decide anything about locks or phases:
// callers (snapshot, watch, the dashboard's cluster list) do that from the
// model.Cluster of each member.
package multi

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/rebootwatch/rebootwatch/internal/kubeconfig"
	"github.com/rebootwatch/rebootwatch/internal/live"
	"github.com/rebootwatch/rebootwatch/model"
	"github.com/rebootwatch/rebootwatch/sources/sim"
)

// Requested reports whether the flags ask for several clusters: a comma in
// --context, or --all-contexts.
func Requested(contextFlag string, all bool) bool {
	return all || strings.Contains(contextFlag, ",")
}

// Split parses a --context comma list (kubeconfig.Split); the contexts
// themselves are resolved by kubeconfig.Loader.Contexts.
func Split(list string) []string { return kubeconfig.Split(list) }

// Opener opens one cluster; live.Open in production.
type Opener func(ctx context.Context, o live.Options) (*live.Session, error)

// Member is one cluster of a multi-cluster run.
type Member struct {
	Context string
	// Session is nil when the cluster could not be opened; Err says why.
	Session *live.Session
	Err     error
}

// Options returns the session options of one context: base with the context
// set. For the demo, each context is its own simulated cluster with the
// seed offset by its position, so `--demo --context a,b` shows two different
// fleets.
func Options(base live.Options, context string, i int) live.Options {
	o := base
	o.Context = context
	if o.Demo {
		o.DemoSeed = base.DemoSeed + int64(i)
		// A context named after a scenario plays it; the others alternate
		// from the base scenario, so `--demo --context a,b` shows both.
		switch {
		case context == sim.ScenarioFleetlock || context == sim.ScenarioKured:
			o.DemoScenario = context
		case i%2 == 1 && (base.DemoScenario == sim.ScenarioFleetlock):
			o.DemoScenario = sim.ScenarioKured
		case i%2 == 1:
			o.DemoScenario = sim.ScenarioFleetlock
		}
	}
	return o
}

// Open opens every context concurrently and returns one member per context,
// in order. An open that fails is recorded in its member; it never stops the
// others. Open itself does not wait for any cluster to answer (live.Open
// returns at once); Collect or the caller's loop does, bounded.
func Open(ctx context.Context, base live.Options, contexts []string, open Opener) []*Member {
	if open == nil {
		open = live.Open
	}
	out := make([]*Member, len(contexts))
	var wg sync.WaitGroup
	for i, name := range contexts {
		out[i] = &Member{Context: name}
		wg.Add(1)
		go func(m *Member, i int) {
			defer wg.Done()
			s, err := open(ctx, Options(base, m.Context, i))
			if err != nil {
				m.Err = err
				return
			}
			// The demo names itself "demo"; several demo clusters are told
			// apart by the names they were asked for. Without a name (the
			// kubeconfig's current context) the session's own name stands.
			if m.Context != "" {
				s.Context = m.Context
			} else {
				m.Context = s.Context
			}
			m.Session = s
		}(out[i], i)
	}
	wg.Wait()
	return out
}

// Close closes every opened session, as a process about to exit does: each
// waits at most live.ExitGrace for its goroutines (live.Session.CloseWithin).
func Close(ms []*Member) {
	var wg sync.WaitGroup
	for _, m := range ms {
		if m.Session != nil {
			wg.Add(1)
			go func(s *live.Session) { defer wg.Done(); s.CloseWithin(live.ExitGrace) }(m.Session)
		}
	}
	wg.Wait()
}

// Result is one member's first picture.
type Result struct {
	Context string
	Cluster *model.Cluster
	// Now is the member's clock when the picture was taken.
	Now time.Time
	// Err is why the cluster could not be opened, or why its first sync
	// was incomplete (the cluster may still be partly readable).
	Err error
}

// Collect waits for the first sync of every opened member concurrently, each
// bounded by syncTimeout, and returns their models in member order. A member
// that could not be opened gets an Unreachable model. now stamps those.
func Collect(ctx context.Context, ms []*Member, syncTimeout time.Duration, now func() time.Time) []Result {
	out := make([]Result, len(ms))
	var wg sync.WaitGroup
	for i, m := range ms {
		if m.Session == nil {
			t := now()
			out[i] = Result{Context: m.Context, Cluster: Unreachable(m.Context, m.Err, t), Now: t, Err: m.Err}
			continue
		}
		wg.Add(1)
		go func(i int, m *Member) {
			defer wg.Done()
			sctx, cancel := context.WithTimeout(ctx, syncTimeout)
			defer cancel()
			c, err := m.Session.Collect(sctx)
			out[i] = Result{Context: m.Context, Cluster: c, Now: m.Session.Clock(), Err: err}
		}(i, m)
	}
	wg.Wait()
	return out
}

// Ready is one member's first picture, as FanIn delivers it.
type Ready struct {
	// Index is the member's position.
	Index   int
	Cluster *model.Cluster
	// Err is why the first sync was incomplete (see live.Session.Collect).
	Err error
}

// Tagged is one member's event, as FanIn delivers it.
type Tagged struct {
	Index int
	Event model.Event
}

// FanIn follows every opened member at once, for a long-running caller
// (watch): each member's first picture is collected on its own goroutine
// (bounded by syncTimeout), so a slow or unreachable cluster never holds up
// the others, and sent on ready; from then on its events are forwarded,
// tagged with its position and in order per member, on events. A member
// that could not be opened sends nothing. Everything stops when ctx ends;
// ready has room for every member, so a first picture is never lost.
func FanIn(ctx context.Context, ms []*Member, syncTimeout time.Duration) (ready <-chan Ready, events <-chan Tagged) {
	rd := make(chan Ready, len(ms))
	evs := make(chan Tagged, 256)
	for i, m := range ms {
		if m.Session == nil {
			continue
		}
		go func(i int, s *live.Session) {
			sctx, cancel := context.WithTimeout(ctx, syncTimeout)
			cl, err := s.Collect(sctx)
			cancel()
			select {
			case rd <- Ready{Index: i, Cluster: cl, Err: err}:
			case <-ctx.Done():
				return
			}
			for {
				select {
				case ev := <-s.Events:
					select {
					case evs <- Tagged{Index: i, Event: ev}:
					case <-ctx.Done():
						return
					}
				case <-ctx.Done():
					return
				}
			}
		}(i, m.Session)
	}
	return rd, evs
}

// Unreachable returns the model of a cluster that could not be opened: its
// node source is in error with the reason, so its snapshot says so and its
// exit code is 1.
func Unreachable(context string, err error, now time.Time) *model.Cluster {
	c := model.NewCluster(context, model.Options{})
	msg := "could not open the cluster"
	if err != nil {
		msg = err.Error()
	}
	c.Apply(model.SourceChanged{Health: model.SourceHealth{Name: model.SourceNodes, Status: model.StatusError, Message: msg}}, now)
	c.Recompute(now)
	return c
}

// Why explains in one line why a cluster is not readable: the node
// source's own report, else the first sync's error (a cluster that never
// answered within the sync timeout).
func Why(c *model.Cluster, syncErr error) string {
	if h, ok := c.Source(model.SourceNodes); ok && h.Message != "" {
		return fmt.Sprintf("nodes %s: %s", h.Status, h.Message)
	}
	if syncErr != nil {
		return "no node list was received: " + syncErr.Error()
	}
	return "no node list was received"
}

// Worst combines exit codes (DESIGN §7) of several clusters: a cluster that
// could not be read (1) outranks one that needs attention (2), which
// outranks all fine (0). Unreadable wins because nothing is known about it:
// it must never disappear behind another cluster's 2. Each cluster's own
// code is in its snapshot (exitCode) and its stderr line.
func Worst(codes ...int) int {
	rank := func(c int) int {
		switch c {
		case 0:
			return 0
		case 2:
			return 1
		case 1:
			return 2
		}
		return 3 // anything else (an internal error code) is worse still
	}
	w := 0
	for _, c := range codes {
		if rank(c) > rank(w) {
			w = c
		}
	}
	return w
}
