package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/rebootwatch/rebootwatch/internal/kubeconfig"
	"github.com/rebootwatch/rebootwatch/internal/live"
	"github.com/rebootwatch/rebootwatch/internal/multi"
	"github.com/rebootwatch/rebootwatch/internal/sanitize"
	"github.com/rebootwatch/rebootwatch/internal/watch"
	"github.com/rebootwatch/rebootwatch/model"
)

// watchDeps are what the watch loop needs from the outside world; tests
// replace them to drive the loop deterministically.
type watchDeps struct {
	// open opens one cluster (live.Open).
	open multi.Opener
	// ticker returns the recompute tick channel and its stop function.
	ticker func(d time.Duration) (<-chan time.Time, func())
	// opened, when set, is told about every member once opened.
	opened func(m *multi.Member)
	// inspect, when set, carries functions the loop runs on its own
	// goroutine with every member's cluster (after applying what arrived).
	inspect chan func(clusters []*model.Cluster)
}

func defaultWatchDeps() watchDeps {
	return watchDeps{
		open: live.Open,
		ticker: func(d time.Duration) (<-chan time.Time, func()) {
			t := time.NewTicker(d)
			return t.C, t.Stop
		},
	}
}

// watchFlags are watch's own flags.
type watchFlags struct {
	untilDone    bool
	stallAfter   time.Duration
	summaryEvery time.Duration
	tick         time.Duration
}

// newWatch is `rebootwatch watch` (DESIGN §9): a streaming log of a reboot
// window.
func (r *runner) newWatch() *cobra.Command {
	wf := watchFlags{summaryEvery: time.Minute, tick: time.Second}
	cmd := &cobra.Command{
		Use:   "watch [-o text|json] [--until-done] [--stall-after D] [--summary-every 1m] [--bell]",
		Short: "A streaming log of a reboot window, one line per change",
		Long: `A streaming log of a reboot window: one timestamped line per change that
matters (phase transitions, locks taken, released or judged ghost/orphaned,
volumes degraded or healthy, sources going stale, actions) and a progress
summary every --summary-every. -o json prints one JSON object per line.

Exit codes: 0 done (--until-done) or nothing needs attention, 1 a cluster could
not be read (or the output could not be written), 2 something needs attention or
the window stalled (--stall-after), 130 interrupted (Ctrl-C, SIGTERM).`,
		Example: `  # Follow the window until every node is done; exit 2 if it stalls for 30m
  rebootwatch watch --until-done --stall-after 30m

  # One JSON object per line, for a log pipeline
  rebootwatch watch -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case wf.stallAfter < 0:
				return failed(r.env, errors.New("--stall-after must not be negative"))
			case wf.summaryEvery < 0:
				return failed(r.env, errors.New("--summary-every must not be negative"))
			case wf.tick <= 0:
				return failed(r.env, errors.New("--tick must be positive"))
			}
			r.code = watchLoop(cmd.Context(), r.env, r.c, wf, r.watch)
			return nil
		},
	}
	fs := cmd.Flags()
	fs.BoolVar(&wf.untilDone, "until-done", false, "Exit once every node that needed a reboot is done and every lock is free: 0, or 2 if something still needs attention (a node down, a volume faulted)")
	fs.DurationVar(&wf.stallAfter, "stall-after", 0, "Exit 2 when nothing progresses for this long, or a lock turns ghost/orphaned (0: never)")
	fs.DurationVar(&wf.summaryEvery, "summary-every", wf.summaryEvery, "Print a progress summary this often (0: never)")
	fs.DurationVar(&wf.tick, "tick", wf.tick, "How often to re-derive phases and verdicts")
	return cmd
}

// runWatchWith runs `rebootwatch watch args` with c's values as the shared
// flags' starting values and deps as the loop's outside world (tests).
func runWatchWith(ctx context.Context, env Env, c *Common, args []string, deps watchDeps) int {
	return execute(ctx, append([]string{"watch"}, args...), env, execOptions{common: c, watch: &deps})
}

// member is one watched cluster.
type member struct {
	m       *multi.Member
	c       *model.Cluster
	w       *watch.Watcher
	clock   func() time.Time
	done    bool
	readErr bool // unreadable after the first sync: does not hold up --until-done
	// early holds events that arrived before the first picture was taken
	// in: the loop may pick them from their channel first.
	early []model.Event
	// why and said: why the cluster is unreachable and when that was last
	// printed (repeated as its summary while it stays unreachable).
	why  string
	said time.Time
}

// apply applies one event to the member's model, or keeps it until the
// first picture is in.
func (mb *member) apply(ev model.Event) {
	if mb.c == nil {
		mb.early = append(mb.early, ev)
		return
	}
	mb.c.Apply(ev, mb.clock())
}

// watchLoop runs the watch: opens every cluster, fans their events in and
// prints their lines until the end condition or ctx ends.
func watchLoop(ctx context.Context, env Env, c *Common, wf watchFlags, deps watchDeps) int {
	contexts := []string{c.Context}
	if multi.Requested(c.Context, c.AllContexts) {
		var err error
		if contexts, err = resolveContexts(env, c); err != nil {
			return fail(env, err)
		}
	}
	several := len(contexts) > 1
	base := c.LiveOptions(env)
	opened := multi.Open(ctx, base, contexts, deps.open)
	defer multi.Close(opened)
	if !several && opened[0].Err != nil {
		return fail(env, opened[0].Err)
	}
	for _, m := range opened {
		if deps.opened != nil {
			deps.opened(m)
		}
	}

	out := &lineWriter{env: env, json: c.Output == "json", bell: c.Bell, styles: watch.NewStyles(c.Output != "json" && colorOK(env))}
	// end is the exit code once the output has been written: a failed
	// write (a full disk, a closed pipe) ends the watch with 1, as a
	// --snapshot that cannot write its report does.
	end := func(code int) int {
		if out.err != nil {
			return fail(env, fmt.Errorf("writing the output: %w", out.err))
		}
		return code
	}
	wopts := watch.Options{Prefix: several, SummaryEvery: wf.summaryEvery, UntilDone: wf.untilDone, StallAfter: wf.stallAfter}
	members := make([]*member, len(opened))
	for i, m := range opened {
		mb := &member{m: m, w: watch.New(wopts), clock: env.Now}
		members[i] = mb
		if m.Session == nil {
			// Could not even be opened: reported now, never watched.
			mb.c = multi.Unreachable(m.Context, m.Err, env.Now())
			mb.readErr = true
			out.write(watch.Unreachable(m.Context, several, env.Now(), m.Err.Error()))
			say(env.Stderr, "rebootwatch: could not open the cluster %q: %v\n", m.Context, m.Err)
			continue
		}
		mb.clock = m.Session.Clock
	}

	// Each cluster's first picture is collected on its own (bounded by
	// --sync-timeout), so a slow or unreachable cluster never holds up
	// the others; then its events are fanned into one channel, tagged.
	fctx, stop := context.WithCancel(ctx)
	defer stop()
	ready, evs := multi.FanIn(fctx, opened, c.SyncTimeout)

	// stepOne derives one collected cluster and prints its lines; end is
	// true when it stalled.
	stepOne := func(mb *member) (end bool) {
		if mb.c == nil || mb.done {
			return false
		}
		now := mb.clock()
		mb.c.Recompute(now)
		if !mb.c.Readable() {
			return false // never read yet: reported once, watched from its first sync on
		}
		mb.readErr = false
		lines, oc := mb.w.Step(mb.c, now)
		for _, l := range lines {
			out.write(l)
		}
		if oc.Attention {
			out.ring()
		}
		switch {
		case oc.Stalled:
			say(env.Stderr, "rebootwatch: %s: stalled: %s\n", mb.m.Context, oc.Reason)
			return true
		case oc.Done:
			mb.done = true
		}
		return false
	}
	// finished says whether --until-done holds for every cluster that can
	// be read (unreadable ones make the exit code 1 instead).
	finished := func() (int, bool) {
		if !wf.untilDone {
			return 0, false
		}
		code := ExitOK
		for _, mb := range members {
			switch {
			case mb.c == nil:
				return 0, false // first picture still coming
			case mb.readErr:
				code = ExitError
			case !mb.done:
				return 0, false
			default:
				// Done, but anything still listed under attention (a node
				// down, a volume degraded or faulted, a source failing)
				// gives 2, so `watch --until-done && next-step` stops.
				code = multi.Worst(code, mb.c.ExitCode(mb.clock()))
			}
		}
		for _, mb := range members {
			if mb.c == nil || mb.readErr || !mb.done {
				continue
			}
			for _, a := range mb.c.Attention(mb.clock()) {
				say(env.Stderr, "rebootwatch: %s: done, but still needs attention: %s\n", mb.m.Context, sanitize.Line(a.Message))
			}
		}
		return code, true
	}
	if code, over := finished(); over {
		return end(code)
	}

	tick, stopTick := deps.ticker(wf.tick)
	defer stopTick()
	for {
		if out.err != nil {
			return end(ExitError)
		}
		select {
		case <-ctx.Done():
			// Ctrl-C or SIGTERM: 130 whatever the clusters said, so
			// `watch --until-done && next-step` never goes on.
			fmt.Fprintln(env.Stderr, "rebootwatch: interrupted")
			return ExitInterrupted
		case r := <-ready:
			mb := members[r.Index]
			mb.c = r.Cluster
			for _, ev := range mb.early {
				mb.c.Apply(ev, mb.clock())
			}
			mb.early = nil
			if r.Err != nil && c.Verbose {
				say(env.Stderr, "rebootwatch: %s: %v\n", mb.m.Context, r.Err)
			}
			if !mb.c.Readable() {
				mb.readErr = true
				mb.why = multi.Why(mb.c, syncErr(r.Err, c.SyncTimeout))
				mb.said = mb.clock()
				out.write(watch.Unreachable(mb.m.Context, several, mb.said, mb.why))
				say(env.Stderr, "rebootwatch: could not read the cluster %q: %s\n", mb.m.Context, mb.why)
			}
			if stepOne(mb) {
				return end(ExitAttention)
			}
			if code, over := finished(); over {
				return end(code)
			}
		case te := <-evs:
			members[te.Index].apply(te.Event)
		case f := <-deps.inspect:
			drain(evs, members)
			cs := make([]*model.Cluster, len(members))
			for i, mb := range members {
				cs[i] = mb.c
			}
			f(cs)
		case <-tick:
			drain(evs, members)
			for _, mb := range members {
				if stepOne(mb) {
					return end(ExitAttention)
				}
				// Still unreachable: say so again as its summary, so a
				// silent stream never reads as a quiet cluster.
				if mb.readErr && mb.c != nil && !mb.c.Readable() && wf.summaryEvery > 0 && mb.clock().Sub(mb.said) >= wf.summaryEvery {
					mb.said = mb.clock()
					out.write(watch.Unreachable(mb.m.Context, several, mb.said, "still no answer: "+mb.why))
				}
			}
			// --stall-after with no cluster that ever answered: nothing can
			// progress, so it is over (1, could not read).
			if wf.stallAfter > 0 && allUnread(members) {
				say(env.Stderr, "rebootwatch: no cluster answered within --sync-timeout %s: nothing to watch\n", c.SyncTimeout)
				return end(ExitError)
			}
			if code, over := finished(); over {
				return end(code)
			}
		}
	}
}

// allUnread says whether every cluster has been collected and none could be
// read.
func allUnread(members []*member) bool {
	for _, mb := range members {
		if mb.c == nil || !mb.readErr || mb.c.Readable() {
			return false
		}
	}
	return len(members) > 0
}

// syncErr is the error of a first sync that ended without the node list:
// the sync's own, else that nothing answered in time.
func syncErr(err error, timeout time.Duration) error {
	if err != nil {
		return err
	}
	return fmt.Errorf("no answer within --sync-timeout %s", timeout)
}

// drain applies every event already waiting.
func drain(evs <-chan multi.Tagged, members []*member) {
	for {
		select {
		case te := <-evs:
			members[te.Index].apply(te.Event)
		default:
			return
		}
	}
}

// resolveContexts turns --context a,b / --all-contexts into context names.
// The demo has no kubeconfig: its contexts are the names given.
func resolveContexts(env Env, c *Common) ([]string, error) {
	if c.Demo {
		if c.AllContexts {
			return nil, errors.New("--all-contexts needs a kubeconfig: with --demo, name the clusters with --context a,b")
		}
		return kubeconfig.Split(c.Context), nil
	}
	return c.Loader(env).Contexts(c.Context, c.AllContexts)
}

// lineWriter writes watch lines as text or JSON lines, and the bell.
type lineWriter struct {
	env    Env
	json   bool
	bell   bool
	styles watch.Styles
	// err is the first write error: nothing more is written after it,
	// and the watch ends with 1.
	err error
}

func (w *lineWriter) write(l watch.Line) {
	if w.err != nil {
		return
	}
	if w.json {
		b, err := l.JSON()
		if err != nil {
			say(w.env.Stderr, "rebootwatch: %v\n", err)
			return
		}
		b = append(b, '\n')
		_, w.err = w.env.Stdout.Write(b)
		return
	}
	_, w.err = io.WriteString(w.env.Stdout, l.Text(w.styles)+"\n")
}

// ring rings the terminal bell (--bell): on stdout for text, on stderr for
// JSON so the JSON stream stays clean.
func (w *lineWriter) ring() {
	if !w.bell {
		return
	}
	if w.json {
		_, _ = io.WriteString(w.env.Stderr, "\a")
		return
	}
	if w.err == nil {
		_, w.err = io.WriteString(w.env.Stdout, "\a")
	}
}
