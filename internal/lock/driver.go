package lock

import (
	"fmt"

	"github.com/rebootwatch/rebootwatch/internal/coord"
	"github.com/rebootwatch/rebootwatch/model"
)

// Driver is one lock kind as the engine uses it: the lock-object driver
// contract each coordinator package implements (coord.LockDriver), found
// through the registry (registry.go).
type Driver = coord.LockDriver

// The types the drivers speak, declared in internal/coord so coordinator
// packages implement them without importing the engine.
type (
	// Parsed is a lock object as its driver reads it.
	Parsed = coord.Parsed
	// Entry is one holder's entry of a lock.
	Entry = coord.Entry
	// Write is the one write that frees an entry.
	Write = coord.Write
	// Applied is what a write did.
	Applied = coord.Applied
	// PreconditionError is a write refused for a changed object.
	PreconditionError = coord.PreconditionError
	// VerifyError is a write its coordinator does not read as intended.
	VerifyError = coord.VerifyError
	// APIError is a failed API call of a write.
	APIError = coord.APIError
	// Index maps holder ids to nodes.
	Index = coord.Index
	// Mapping is where a holder id maps.
	Mapping = coord.Mapping
	// MatchKind is how a holder id maps.
	MatchKind = coord.MatchKind
)

// The holder mapping results (coord.MatchKind).
const (
	MatchOne          = coord.MatchOne
	MatchSeveral      = coord.MatchSeveral
	MatchNone         = coord.MatchNone
	MatchInconclusive = coord.MatchInconclusive
	MatchManual       = coord.MatchManual
)

// FieldManager is the field manager of every write rebootwatch makes.
const FieldManager = coord.FieldManager

// NewIndex builds the holder index of a set of nodes (coord.NewIndex).
func NewIndex(nodes []*model.Node, cache map[string]string) *Index {
	return coord.NewIndex(nodes, cache)
}

// resolve maps a holder id of a lock kind to nodes, through the kind's
// driver; an unregistered kind is inconclusive.
func resolve(ix *Index, kind model.LockKind, holder string) Mapping {
	d, err := DriverFor(kind)
	if err != nil {
		return Mapping{Kind: MatchInconclusive, How: err.Error()}
	}
	return d.Resolve(ix, holder)
}

func clip(s string) string { return coord.Clip(s) }

// DriverFor returns the driver of a lock kind. It is the one place an
// unregistered kind is an error.
func DriverFor(k model.LockKind) (Driver, error) {
	for _, d := range registry {
		if d.Kind() == k {
			return d, nil
		}
	}
	return nil, fmt.Errorf("unknown lock kind %q (registered: %s)", k, kindList())
}

// Kinds lists the registered lock kinds in registry order.
func Kinds() []model.LockKind {
	out := make([]model.LockKind, 0, len(registry))
	for _, d := range registry {
		out = append(out, d.Kind())
	}
	return out
}

// Sources lists the sources of the registered lock kinds in registry order.
func Sources() []model.SourceName {
	out := make([]model.SourceName, 0, len(registry))
	for _, d := range registry {
		out = append(out, d.Source())
	}
	return out
}

func kindList() string {
	s := ""
	for i, k := range Kinds() {
		if i > 0 {
			s += ", "
		}
		s += string(k)
	}
	return s
}

// sourceOf is the source of a lock kind ("" for an unregistered kind).
func sourceOf(k model.LockKind) model.SourceName {
	if d, err := DriverFor(k); err == nil {
		return d.Source()
	}
	return ""
}
