package kinds

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/rebootwatch/rebootwatch/internal/coord"
	"github.com/rebootwatch/rebootwatch/model"
)

// Selection is which registered kinds a front end reads: --coordinators
// (the CLI, the agent, the chart's coordinators.kinds). The zero value
// selects every registered kind, each read when it is installed and
// reported not-installed when it is not.
type Selection struct {
	// only lists the selected kinds; nil selects every one.
	only []model.LockKind
}

// AllKinds selects every registered kind: the default.
func AllKinds() Selection { return Selection{} }

// Names are the registered kinds' names, in registry order.
func Names() []string {
	var out []string
	for _, d := range registry {
		out = append(out, string(d.Capabilities().Kind))
	}
	return out
}

// SelectionValues are the words Select takes besides kind names.
const (
	// SelectAll (and "true", the flag's old boolean form) selects every
	// registered kind.
	SelectAll = "all"
	// SelectLocks ("false", the old boolean's off) selects the lock-object
	// kinds only (kured, fleetlock): what rebootwatch read before the other
	// kinds were read without asking.
	SelectLocks = "locks"
)

// Select parses --coordinators: a comma list of registered kind names
// ("kured,suc"), or "all" (also "true" and "": every kind), or "locks"
// (also "false": the lock-object kinds). A name that is not registered is
// an error that lists the registered kinds; so is an empty selection.
func Select(spec string) (Selection, error) {
	switch strings.ToLower(strings.TrimSpace(spec)) {
	case "", SelectAll, "true":
		return Selection{}, nil
	case SelectLocks, "false":
		var only []model.LockKind
		for _, d := range LockDrivers() {
			only = append(only, d.Kind())
		}
		return Selection{only: only}, nil
	}
	var only []model.LockKind
	for _, w := range strings.Split(spec, ",") {
		w = strings.ToLower(strings.TrimSpace(w))
		if w == "" {
			continue
		}
		d, ok := For(model.LockKind(w))
		if !ok {
			return Selection{}, fmt.Errorf("unknown coordinator kind %q: the registered kinds are %s (or %s, %s)",
				w, strings.Join(Names(), ", "), SelectAll, SelectLocks)
		}
		if k := d.Capabilities().Kind; !slices.Contains(only, k) {
			only = append(only, k)
		}
	}
	if len(only) == 0 {
		return Selection{}, fmt.Errorf("no coordinator kind in %q: name one or more of %s", spec, strings.Join(Names(), ", "))
	}
	return Selection{only: only}, nil
}

// Has reports whether the kind is selected.
func (s Selection) Has(k model.LockKind) bool {
	return s.only == nil || slices.Contains(s.only, k)
}

// Kinds are the selected kinds, in registry order.
func (s Selection) Kinds() []model.LockKind {
	var out []model.LockKind
	for _, d := range registry {
		if k := d.Capabilities().Kind; s.Has(k) {
			out = append(out, k)
		}
	}
	return out
}

// String is the selection as Select reads it back: "all", or the kinds in
// registry order.
func (s Selection) String() string {
	if s.only == nil {
		return SelectAll
	}
	var out []string
	for _, k := range s.Kinds() {
		out = append(out, string(k))
	}
	return strings.Join(out, ",")
}

// Observed reports whether any selected kind is read once per reading
// (coord.Observer): then the front end reads them (ReadAll).
func (s Selection) Observed() bool { return len(s.CoordinatorSources()) > 0 }

// CoordinatorSources are the sources of the selected kinds ReadAll reads:
// the model's CoordinatorSources.
func (s Selection) CoordinatorSources() []model.SourceName {
	var out []model.SourceName
	for _, d := range registry {
		if _, ok := d.(coord.Observer); ok && s.Has(d.Capabilities().Kind) {
			out = append(out, d.Capabilities().Source)
		}
	}
	return out
}

// Disabled are the lock-object kinds the selection leaves out, each with
// why: the sources' Disabled (their source then reports disabled, never
// not-installed).
func (s Selection) Disabled() map[model.LockKind]string {
	off := map[model.LockKind]string{}
	for _, d := range LockDrivers() {
		if !s.Has(d.Kind()) {
			off[d.Kind()] = "not selected (--coordinators=" + s.String() + ")"
		}
	}
	return off
}

// ReadAll observes every selected kind once, at now (the package's
// ReadAll reads every registered one).
func (s Selection) ReadAll(ctx context.Context, c coord.Clients, now time.Time) []Result {
	var out []Result
	for _, d := range registry {
		obs, ok := d.(coord.Observer)
		if !ok || !s.Has(d.Capabilities().Kind) {
			continue
		}
		out = append(out, observe(ctx, d, obs, c, now))
	}
	return out
}
