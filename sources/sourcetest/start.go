package sourcetest

import (
	"context"
	"testing"

	"github.com/rebootwatch/rebootwatch/sources"
)

// Syncer is a started source: kube, longhorn and prometheus Sources are.
type Syncer interface {
	WaitForSync(ctx context.Context) error
}

// Start starts a source with r's Sink on a context that the test's cleanup
// cancels, and waits up to DefaultTimeout for its first sync. A start or
// sync error fails the test.
func Start[S Syncer](t testing.TB, r *Recorder, start func(ctx context.Context, sink sources.Sink) (S, error)) S {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	wctx, wcancel := context.WithTimeout(ctx, DefaultTimeout)
	defer wcancel()
	return StartWith(t, ctx, wctx, r, start)
}

// StartWith starts a source with r's Sink on ctx (which stops it) and waits
// for its first sync until wctx ends: tests that start several sources give
// them one deadline. A start or sync error fails the test.
func StartWith[S Syncer](t testing.TB, ctx, wctx context.Context, r *Recorder, start func(ctx context.Context, sink sources.Sink) (S, error)) S {
	t.Helper()
	s, err := start(ctx, r.Sink)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.WaitForSync(wctx); err != nil {
		t.Fatal(err)
	}
	return s
}
