package agent

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rebootwatch/rebootwatch/internal/lock"
	"github.com/rebootwatch/rebootwatch/internal/notify"
	"github.com/rebootwatch/rebootwatch/model"
)

// gatedSource syncs only when released.
type gatedSource struct{ release chan struct{} }

func (g gatedSource) WaitForSync(ctx context.Context) error {
	select {
	case <-g.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// TestAgentNotifiesOnlyOnceSynced: a ghost seen before every source
// delivered its first picture is neither acted on nor told; once the
// sources synced, the ghost and its reap are told once each.
func TestAgentNotifiesOnlyOnceSynced(t *testing.T) {
	now := time.Now()
	world := fleetlockWorld(now)
	world = append(world, model.NodeDeleted{Name: "n1"}) // the holder is gone: a ghost
	client := clientFor(world, fleetLease(testZincatiID))
	var mu sync.Mutex
	var msgs []string
	got := make(chan struct{}, 10)
	target := notify.Target{Service: "test", Send: func(_ context.Context, text string) error {
		mu.Lock()
		msgs = append(msgs, text)
		mu.Unlock()
		got <- struct{}{}
		return nil
	}}
	logBuf := &syncBuffer{}
	logger := slog.New(slog.NewJSONHandler(logBuf, nil))
	gate := gatedSource{release: make(chan struct{})}
	cfg := testConfig()
	a := New(&Agent{
		Config: cfg, Log: logger, Identity: "test-agent", Client: client,
		Engine: lock.New(lock.Options{OrphanGrace: cfg.OrphanGrace, Unattended: true}),
		Actor:  &lock.Actor{Client: client, Who: "test-agent", Logger: logger, Timeout: cfg.RequestTimeout, Fresh: worldFresh(world)},
		Sources: []Starter{{Name: "gated", Start: func(ctx context.Context, sink func(model.Event)) (Source, error) {
			for _, ev := range world {
				sink(ev)
			}
			return gate, nil
		}}},
		Notify: notify.NewWithTargets([]notify.Target{target}, notify.Options{Interval: time.Millisecond}),
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("agent stopped with %v, want nil after cancel", err)
		}
	}()
	h := &harness{agent: a, client: client, log: logBuf}

	h.waitFor(t, "a ghost not acted on before the first picture", func(hb heartbeat) bool {
		for _, l := range hb.Locks {
			if l.Verdict == model.VerdictGhost && strings.Contains(l.Message, "first picture") {
				return true
			}
		}
		return false
	})
	mark := len(heartbeats(t, logBuf.String()))
	h.waitFor(t, "two more unsynced iterations", func(hb heartbeat) bool { return len(heartbeats(t, logBuf.String())) >= mark+2 })
	mu.Lock()
	early := len(msgs)
	mu.Unlock()
	if early != 0 {
		t.Fatalf("told %d messages before the sources synced", early)
	}

	close(gate.release)
	h.waitFor(t, "the ghost is reaped", func(hb heartbeat) bool { return lockWith(hb, model.VerdictGhost, model.OutcomeDone) })
	<-got
	<-got
	mark = len(heartbeats(t, logBuf.String()))
	h.waitFor(t, "three more iterations", func(hb heartbeat) bool { return len(heartbeats(t, logBuf.String())) >= mark+3 })
	mu.Lock()
	defer mu.Unlock()
	if len(msgs) != 2 || !strings.Contains(msgs[0], "turned ghost") || !strings.Contains(msgs[1], "reaped") {
		t.Fatalf("messages %q, want the ghost then the reap", msgs)
	}
}
