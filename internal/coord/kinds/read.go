package kinds

import (
	"context"
	"time"

	"github.com/rebootwatch/rebootwatch/internal/coord"
	"github.com/rebootwatch/rebootwatch/model"
)

// Result is one registered kind observed once.
type Result struct {
	Kind model.LockKind
	coord.Observation
}

// UnknownKind is the fleet-wide blocker of a coordinator that is installed
// but could not be judged: its wedges are unknown, not absent.
const UnknownKind model.BlockerKind = "coordinator-unknown"

// ReadAll observes every registered kind once, at now.
func ReadAll(ctx context.Context, c coord.Clients, now time.Time) []Result {
	var out []Result
	for _, d := range registry {
		obs, ok := d.(coord.Observer)
		if !ok {
			continue
		}
		r := Result{Kind: d.Capabilities().Kind, Observation: obs.Observe(ctx, c, now)}
		if r.Installed && r.Unknown != "" {
			r.Blockers = append(r.Blockers, model.Blocker{Kind: UnknownKind,
				Reason: string(r.Kind) + ": " + r.Unknown + "; its wedges are unknown",
				Short:  string(r.Kind) + " unread", Clears: "grant rebootwatch read access to its objects"})
		}
		out = append(out, r)
	}
	return out
}

// Blockers are every installed kind's blockers.
func Blockers(rs []Result) []model.Blocker {
	var out []model.Blocker
	for _, r := range rs {
		if r.Installed {
			out = append(out, r.Blockers...)
		}
	}
	return out
}
