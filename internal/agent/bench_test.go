package agent

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/rebootwatch/rebootwatch/internal/lock"
	"github.com/rebootwatch/rebootwatch/model"
)

// benchAgent is an agent whose model holds n nodes and a held fleetlock lock.
func benchAgent(b *testing.B, n int) *Agent {
	b.Helper()
	cfg := testConfig()
	client := newFakeClientset()
	logger := slog.New(slog.NewJSONHandler(io.Discard, nil))
	a := New(&Agent{Config: cfg, Log: logger, Identity: "bench", Client: client,
		Engine: lock.New(lock.Options{Unattended: true}),
		Actor:  &lock.Actor{Client: client, DryRun: true, Logger: logger}})
	now := time.Now()
	for _, ev := range fleetlockWorld(now) {
		a.apply(ev)
	}
	for i := 0; i < n; i++ {
		a.apply(model.NodeUpserted{Node: readyNode(fmt.Sprintf("node-%05d", i), fmt.Sprintf("%032x", i+1000), now.Add(-3*time.Hour))})
	}
	return a
}

// BenchmarkIteration is one full iteration (probe against a fake client,
// judge, policies, heartbeat) at 5,000 nodes.
func BenchmarkIteration(b *testing.B) {
	a := benchAgent(b, 5000)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		a.iterate(ctx, "bench")
	}
}

// BenchmarkEventReaction is the work per informer event at 5,000 nodes:
// apply a node update and re-judge to see whether to act.
func BenchmarkEventReaction(b *testing.B) {
	a := benchAgent(b, 5000)
	now := time.Now()
	node := readyNode("node-00042", fmt.Sprintf("%032x", 42+1000), now.Add(-3*time.Hour))
	b.ReportAllocs()
	for b.Loop() {
		a.apply(model.NodeUpserted{Node: node})
		a.judgementChanged()
	}
}
