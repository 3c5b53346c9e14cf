package sourcetest

import (
	"context"
	"errors"
	"testing"

	"github.com/rebootwatch/rebootwatch/model"
	"github.com/rebootwatch/rebootwatch/sources"
)

type fakeSource struct {
	ctx     context.Context
	syncErr error
	waited  bool
}

func (f *fakeSource) WaitForSync(ctx context.Context) error {
	f.waited = ctx.Err() == nil
	return f.syncErr
}

func TestStart(t *testing.T) {
	r := NewRecorder("rec")
	var src *fakeSource
	t.Run("start", func(t *testing.T) {
		src = Start(t, r, func(ctx context.Context, sink sources.Sink) (*fakeSource, error) {
			sink(model.SourceChanged{Health: model.SourceHealth{Name: model.SourceNodes, Status: model.StatusOK}})
			return &fakeSource{ctx: ctx}, nil
		})
		if src.ctx.Err() != nil {
			t.Error("source context cancelled before the test ended")
		}
	})
	if !src.waited || r.Events() != 1 || r.Source(model.SourceNodes).Status != model.StatusOK {
		t.Errorf("waited=%v events=%d health=%+v: the source must report to the recorder and be waited for",
			src.waited, r.Events(), r.Source(model.SourceNodes))
	}
	if src.ctx.Err() == nil {
		t.Error("source context not cancelled by the test's cleanup")
	}
}

func TestStartFails(t *testing.T) {
	for name, start := range map[string]func(context.Context, sources.Sink) (*fakeSource, error){
		"start error": func(context.Context, sources.Sink) (*fakeSource, error) { return nil, errors.New("no client") },
		"sync error": func(ctx context.Context, _ sources.Sink) (*fakeSource, error) {
			return &fakeSource{ctx: ctx, syncErr: errors.New("not synced")}, nil
		},
	} {
		msg, returned := fatal(t, func(tb testing.TB) { Start(tb, NewRecorder("rec"), start) })
		if returned || msg == "" {
			t.Errorf("%s: Start returned=%v, fatal %q; want the test failed", name, returned, msg)
		}
	}
}
