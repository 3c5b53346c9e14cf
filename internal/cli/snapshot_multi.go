package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/rebootwatch/rebootwatch/internal/live"
	"github.com/rebootwatch/rebootwatch/internal/multi"
	"github.com/rebootwatch/rebootwatch/internal/report"
	"github.com/rebootwatch/rebootwatch/model"
)

// runSnapshotMulti prints the snapshot of several clusters (--context a,b or
// --all-contexts): JSON is an array of per-cluster snapshot documents (each
// with its own schema field), text is one section per cluster. The clusters
// are opened and read concurrently, each bounded by --sync-timeout; one that
// cannot be read is reported as such and never holds up the others. The exit
// code is the worst of the clusters'.
func runSnapshotMulti(ctx context.Context, env Env, c *Common, open multi.Opener) int {
	contexts, err := resolveContexts(env, c)
	if err != nil {
		return fail(env, err)
	}
	if open == nil {
		open = live.Open
	}
	ms := multi.Open(ctx, snapshotOptions(env, c), contexts, open)
	defer multi.Close(ms)
	results := multi.Collect(ctx, ms, c.SyncTimeout, env.Now)
	if ctx.Err() != nil {
		return interruptedNoReport(env)
	}
	var codes []int
	snaps := make([]model.Snapshot, 0, len(results))
	for _, r := range results {
		s := r.Cluster.Snapshot(r.Now)
		snaps = append(snaps, s)
		codes = append(codes, s.ExitCode)
		if r.Err != nil && c.Verbose {
			say(env.Stderr, "rebootwatch: %s: %v\n", r.Context, r.Err)
		}
	}
	if c.Output == "json" {
		if err := writeJSON(env.Stdout, snaps); err != nil {
			return fail(env, err)
		}
	} else {
		for i, r := range results {
			if i > 0 {
				fmt.Fprintln(env.Stdout, "\n"+strings.Repeat("─", 72)+"\n")
			}
			if err := report.Text(env.Stdout, r.Cluster, r.Now, report.Options{Color: colorOK(env)}); err != nil {
				return fail(env, err)
			}
		}
	}
	for i, r := range results {
		if snaps[i].ExitCode == ExitError {
			say(env.Stderr, "rebootwatch: could not read the cluster %q: %s\n", r.Context, failures(r.Cluster, syncErr(r.Err, c.SyncTimeout)))
		}
	}
	return multi.Worst(codes...)
}
