package sources

import (
	"context"
	"fmt"
	"time"
)

// Freshness of watch-based sources (issue 11, DESIGN §6 rule 1).
//
// A watch that has gone quiet looks exactly like a cluster where nothing
// changes: a frozen or black-holed API server sends no error, it just stops
// talking. So every watch-based source remembers when it last heard from the
// server — an object from its list or watch, a list or watch call that
// succeeded, or a cheap probe — and reports itself `stale`, with the age,
// once that is older than StaleAfter. The probe is a list of at most one
// object (limit=1, a quorum read: it needs etcd too), every ProbeInterval,
// each bounded by the request timeout.
const (
	// DefaultStaleAfter is how long a watch-based source may go without
	// hearing from the API server before it is stale: three missed probes.
	DefaultStaleAfter = 15 * time.Second
	// DefaultProbeInterval is how often a watch-based source probes the
	// API server while its watch is quiet.
	DefaultProbeInterval = 5 * time.Second
)

// StaleMessage is the message of a source that has not heard from the API
// server for age (bound is the StaleAfter in force).
func StaleMessage(age, bound time.Duration) string {
	return fmt.Sprintf("no word from the API server for %s (stale after %s)", age.Round(time.Second), bound)
}

// CheckEvery is how often staleness is checked for a bound: often enough
// that the reported age is within a fifth of the bound.
func CheckEvery(bound time.Duration) time.Duration {
	return max(bound/5, 10*time.Millisecond)
}

// ProbeLoop calls probe every interval until ctx ends, each call bounded by
// timeout, and heard after each one that succeeded. Calls never overlap: a
// hung probe delays the next one, while staleness (checked elsewhere) keeps
// counting.
func ProbeLoop(ctx context.Context, interval, timeout time.Duration, probe func(context.Context) error, heard func()) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		pctx, cancel := context.WithTimeout(ctx, timeout)
		err := probe(pctx)
		cancel()
		if err == nil && ctx.Err() == nil {
			heard()
		}
	}
}
