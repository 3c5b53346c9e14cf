package cli

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/rebootwatch/rebootwatch/internal/live"
	"github.com/rebootwatch/rebootwatch/internal/multi"
	"github.com/rebootwatch/rebootwatch/internal/report"
	"github.com/rebootwatch/rebootwatch/model"
)

// runSnapshot prints one report and exits with the code it implies (DESIGN
// §7). One cluster is a list of one (internal/multi), as for watch: the
// same open, read and close; only the output differs (one document, not an
// array).
func runSnapshot(ctx context.Context, env Env, c *Common) int {
	if multi.Requested(c.Context, c.AllContexts) {
		return runSnapshotMulti(ctx, env, c, nil)
	}
	ms := multi.Open(ctx, snapshotOptions(env, c), []string{c.Context}, nil)
	defer multi.Close(ms)
	if err := ms[0].Err; err != nil {
		if ctx.Err() != nil {
			return interruptedNoReport(env)
		}
		return fail(env, err)
	}
	r := multi.Collect(ctx, ms, c.SyncTimeout, env.Now)[0]
	if ctx.Err() != nil {
		// Ctrl-C or SIGTERM during the sync: a report of what little
		// arrived ("0/0 upgraded") would read as a picture of the cluster.
		return interruptedNoReport(env)
	}
	if r.Err != nil && c.Verbose {
		say(env.Stderr, "rebootwatch: %v\n", r.Err)
	}
	defer tightHeap()()
	return writeSnapshot(env, c, r.Cluster, r.Now)
}

// tightHeap readies the heap for rendering a report once the model holds
// the picture, and returns the undo. The lists' data is garbage by then:
// collecting it now lets the report (the snapshot document and its JSON,
// about as large again as the model) reuse that memory rather than grow
// the heap, and a GC target of 50% for the rest of the run bounds that
// growth by half the model, not all of it: a lower peak RSS at the same
// CPU (docs/performance.md). It scales with the model (no fixed memory
// limit to thrash against on a larger cluster).
func tightHeap() (undo func()) {
	runtime.GC()
	old := debug.SetGCPercent(50)
	return func() { debug.SetGCPercent(old) }
}

// snapshotOptions are the session options of a one-shot report: the
// cluster is read once (parallel lists, one request each), with no informers.
func snapshotOptions(env Env, c *Common) live.Options {
	o := c.LiveOptions(env)
	o.Once = true
	return o
}

// interruptedNoReport says that an interrupt ended the command before its
// report: nothing is printed on stdout.
func interruptedNoReport(env Env) int {
	fmt.Fprintln(env.Stderr, "rebootwatch: interrupted before the cluster was read: no report")
	return ExitInterrupted
}

// writeSnapshot renders one cluster's snapshot and returns its exit code.
func writeSnapshot(env Env, c *Common, cl *model.Cluster, now time.Time) int {
	snap := cl.Snapshot(now)
	if c.Output == "json" {
		if err := writeJSON(env.Stdout, snap); err != nil {
			return fail(env, err)
		}
	} else if err := report.Text(env.Stdout, cl, now, report.Options{Color: colorOK(env)}); err != nil {
		return fail(env, err)
	}
	if snap.ExitCode == ExitError {
		say(env.Stderr, "rebootwatch: could not read the cluster %q: %s\n", cl.Context, failures(cl, nil))
	}
	return snap.ExitCode
}

// failures says what could not be read (model.Cluster.Unread): the node
// list, else the lock sources that failed or are forbidden (the node list
// was received then). syncErr, when the node list never came, is why.
func failures(cl *model.Cluster, syncErr error) string {
	if !cl.Readable() {
		return multi.Why(cl, syncErr)
	}
	if u := cl.Unread(); len(u) > 0 {
		return strings.Join(u, "; ")
	}
	return unreadable(cl)
}

// unreadable explains why the node list could not be read.
func unreadable(cl *model.Cluster) string {
	if h, ok := cl.Source(model.SourceNodes); ok && h.Message != "" {
		return fmt.Sprintf("nodes %s: %s", h.Status, h.Message)
	}
	return "no node list was received"
}

// colorOK says whether to colour output: a terminal, and NO_COLOR unset.
func colorOK(env Env) bool {
	return env.StdoutTTY && env.Getenv("NO_COLOR") == "" && env.Getenv("TERM") != "dumb"
}
