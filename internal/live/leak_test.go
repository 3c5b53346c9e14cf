package live

import (
	"bytes"
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// goroutineIDs returns the header line ("goroutine N [state]:") and stack of
// every goroutine by id, right now: no waiting and no retry.
func goroutineIDs() map[string]string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	out := map[string]string{}
	for _, g := range bytes.Split(buf, []byte("\n\n")) {
		head, _, _ := strings.Cut(string(g), "\n")
		f := strings.Fields(head)
		if len(f) >= 2 && f[0] == "goroutine" {
			out[f[1]] = string(g)
		}
	}
	return out
}

// exiting reports whether a goroutine's stack holds nothing but the
// wrapper that joined it (its deferred Done already ran) and the runtime's
// exit path: such a goroutine was joined and is only finishing its last
// instructions.
//
// client-go's reflector lists in a goroutine of its own that it never
// joins: the reflector waits only for its signal (close(listCh)), the last
// thing it does. Such a goroutine whose only frame is its own body (it is
// inside no call: not listing) has signalled and is ending too.
func exiting(stack string) bool {
	lines := strings.Split(stack, "\n")
	if len(lines) >= 2 && strings.HasPrefix(lines[1], "k8s.io/client-go/tools/cache.(*Reflector).list.func1(") {
		rest := lines[2:]
		if len(rest) > 0 && strings.HasPrefix(rest[0], "\t") {
			rest = rest[1:]
		}
		if len(rest) == 0 || strings.HasPrefix(rest[0], "created by ") {
			return true
		}
	}
	for _, line := range lines[1:] {
		if line == "" || strings.HasPrefix(line, "\t") || strings.HasPrefix(line, "created by ") {
			continue
		}
		fn := line
		if i := strings.LastIndex(fn, "("); i > 0 {
			fn = fn[:i]
		}
		switch fn {
		case "runtime.goexit1", "runtime.goexit", "runtime.goexit0",
			"k8s.io/apimachinery/pkg/util/wait.(*Group).Start.func1",
			"sync.(*WaitGroup).Go.func1":
		default:
			return false
		}
	}
	return true
}

func openDemo(ctx context.Context, t *testing.T) *Session {
	t.Helper()
	start := time.Date(2026, 11, 29, 2, 0, 0, 0, time.UTC)
	s, err := Open(ctx, Options{Demo: true, DemoSeed: 1, DemoSpeed: 50, DemoStart: start,
		WallNow: func() time.Time { return start }})
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.Collect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if c.NodeCount() == 0 {
		t.Fatal("the demo session delivered no node")
	}
	return s
}

// A closed session leaves no goroutine behind: Close joins every source's
// informers, polls and the demo's clock. Before Close joined them, this
// failed with the informers' and the Longhorn loop's goroutines still
// running (and the race detector caught them writing after the test ended).
//
// Two checks: goleak (which retries for a while, so it finds goroutines that
// never end), and an immediate one: once Close has returned nothing of the
// session may still run, not even a goroutine about to end — goleak's
// retries would hide that, and such a goroutine is what raced with the next
// session's setup.
func TestClosedSessionLeavesNoGoroutine(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// A first session starts whatever process-wide helpers client-go
	// starts once; they are not the session's.
	openDemo(ctx, t).Close()
	baseline := goroutineIDs()
	ignore := goleak.IgnoreCurrent()

	s := openDemo(ctx, t)
	s.Close()
	var left []string
	for id, stack := range goroutineIDs() {
		if _, ok := baseline[id]; !ok && !strings.Contains(stack, "goroutineIDs") && !exiting(stack) {
			left = append(left, stack)
		}
	}
	if len(left) > 0 {
		t.Fatalf("%d goroutines still run after Close returned:\n\n%s", len(left), strings.Join(left, "\n\n"))
	}
	if err := goleak.Find(ignore); err != nil {
		t.Fatal(err)
	}
}

// Cancelling the caller's context stops the sources too: Open keeps the
// caller's context (staticcheck SA4009), so a cancelled caller leaves no
// informer running until Close.
func TestOpenFollowsCallersContext(t *testing.T) {
	openDemo(context.Background(), t).Close()
	baseline := goroutineIDs()
	ctx, cancel := context.WithCancel(context.Background())
	s := openDemo(ctx, t)
	defer s.Close()
	cancel()
	// Nobody reads Events: the sources must still end, because their sink
	// gives up once the context is cancelled. Polled, not timed: the bound
	// only keeps a failing test from hanging.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var left []string
		for id, stack := range goroutineIDs() {
			if _, ok := baseline[id]; !ok && !strings.Contains(stack, "goroutineIDs") {
				left = append(left, stack)
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the caller's context was cancelled but %d goroutines of the session still run:\n\n%s", len(left), strings.Join(left, "\n\n"))
		}
	}
}
