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
	s, err := start(ctx, r.Sink)
	if err != nil {
		t.Fatal(err)
	}
	wctx, wcancel := context.WithTimeout(ctx, DefaultTimeout)
	defer wcancel()
	if err := s.WaitForSync(wctx); err != nil {
		t.Fatal(err)
	}
	return s
}
