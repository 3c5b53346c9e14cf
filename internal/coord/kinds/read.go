package kinds

import (
	"context"
	"strings"
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

// CoordinatorSources are the sources of every registered kind ReadAll
// reads (those with a one-shot read, coord.Observer): the model's
// CoordinatorSources when every kind is selected (Selection).
func CoordinatorSources() []model.SourceName { return AllKinds().CoordinatorSources() }

// ReadAll observes every registered kind once, at now.
func ReadAll(ctx context.Context, c coord.Clients, now time.Time) []Result {
	return AllKinds().ReadAll(ctx, c, now)
}

// observe reads one kind: a kind installed but not judged also names the
// fleet-wide coordinator-unknown blocker.
func observe(ctx context.Context, d coord.Driver, obs coord.Observer, c coord.Clients, now time.Time) Result {
	r := Result{Kind: d.Capabilities().Kind, Observation: obs.Observe(ctx, c, now)}
	if r.Installed && r.Unknown != "" {
		r.Blockers = append(r.Blockers, model.Blocker{Kind: UnknownKind,
			Reason: string(r.Kind) + ": " + r.Unknown + "; its wedges are unknown",
			Short:  string(r.Kind) + " unread", Clears: "grant rebootwatch read access to its objects, or leave the kind out (--coordinators)"})
	}
	return r
}

// Health is what the kind's read says as a source: not installed, ok, or
// why it could not be read (forbidden, or an error): never "ok" for a kind
// that was not read.
func (r Result) Health(at time.Time) model.SourceHealth {
	h := model.SourceHealth{Name: model.SourceName(r.Kind), Status: model.StatusOK, LastSync: at}
	if d, ok := For(r.Kind); ok {
		h.Name = d.Capabilities().Source
	}
	switch {
	case !r.Installed:
		h.Status, h.LastSync = model.StatusNotInstalled, time.Time{}
	case r.Unknown != "":
		h.Status, h.Message, h.LastSync = model.StatusError, r.Unknown, time.Time{}
		if strings.Contains(strings.ToLower(r.Unknown), "forbidden") {
			h.Status = model.StatusForbidden
		}
	}
	return h
}

// Cycle is the kind's read as the model takes it: its slots and its
// nodes' places in its cycle (model.CoordinatorRead). A kind not installed
// is known and empty; one installed but not judged is unknown.
func (r Result) Cycle() model.CoordinatorRead {
	if !r.Installed {
		return model.CoordinatorRead{Kind: r.Kind, Known: true}
	}
	if !r.Judged {
		return model.CoordinatorRead{Kind: r.Kind, Unknown: r.Unknown}
	}
	return model.CoordinatorRead{Kind: r.Kind, Known: true, Slots: r.Slots, Nodes: r.Nodes}
}

// Blockers are every installed kind's blockers. Those that stall the
// fleet, and a kind that could not be judged, are listed under attention
// (a warning): a coordinator's wedge has no lock verdict to raise it. A
// node waiting for a slot another node holds is not: the holder's own
// blocker names the wedge.
func Blockers(rs []Result) []model.Blocker {
	var out []model.Blocker
	for _, r := range rs {
		if !r.Installed {
			continue
		}
		for _, b := range r.Blockers {
			if b.Stalls && (b.Kind != model.BlockerLock || b.Node == "") || b.Kind == UnknownKind {
				b.Attention = model.SeverityWarning
			}
			out = append(out, b)
		}
	}
	return out
}

// NodeMarks reads a node's marks of every registered kind that marks its
// nodes (coord.NodeMarker): the model's Cluster.Marks.
func NodeMarks(n *model.Node) []model.NodeCycle {
	var out []model.NodeCycle
	for _, d := range registry {
		if m, ok := d.(coord.NodeMarker); ok {
			out = append(out, m.NodeMarks(n)...)
		}
	}
	return out
}
