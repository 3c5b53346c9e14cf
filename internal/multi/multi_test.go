package multi

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rebootwatch/rebootwatch/internal/coord/fleetlock"
	"github.com/rebootwatch/rebootwatch/internal/live"
	"github.com/rebootwatch/rebootwatch/model"
)

func TestSplitAndRequested(t *testing.T) {
	if got := strings.Join(Split(" a, b,,a ,c"), "|"); got != "a|b|c" {
		t.Fatalf("split %q", got)
	}
	for _, c := range []struct {
		ctx  string
		all  bool
		want bool
	}{{"", false, false}, {"prod", false, false}, {"a,b", false, true}, {"", true, true}} {
		if got := Requested(c.ctx, c.all); got != c.want {
			t.Fatalf("Requested(%q,%v) = %v", c.ctx, c.all, got)
		}
	}
}

func TestWorst(t *testing.T) {
	for _, c := range []struct {
		in   []int
		want int
	}{{nil, 0}, {[]int{0, 0}, 0}, {[]int{0, 1}, 1}, {[]int{0, 2}, 2},
		// An unreachable cluster never hides behind another's 2 (issue 11 §2).
		{[]int{1, 2, 0}, 1}, {[]int{2, 1}, 1}} {
		if got := Worst(c.in...); got != c.want {
			t.Fatalf("Worst(%v) = %d, want %d", c.in, got, c.want)
		}
	}
}

// One cluster that cannot be opened is recorded and the others open.
func TestOpenAndCollectWithOneFailing(t *testing.T) {
	start := time.Date(2026, 11, 29, 2, 0, 0, 0, time.UTC)
	base := live.Options{Demo: true, DemoSeed: 1, DemoStart: start, WallNow: func() time.Time { return start }}
	open := func(ctx context.Context, o live.Options) (*live.Session, error) {
		if o.Context == "broken" {
			return nil, errors.New("kubeconfig context \"broken\": no server")
		}
		return live.Open(ctx, o)
	}
	ms := Open(context.Background(), base, []string{"east", "broken", "west"}, open)
	defer Close(ms)
	if ms[0].Session == nil || ms[2].Session == nil || ms[1].Err == nil {
		t.Fatalf("members %+v %+v %+v", ms[0], ms[1], ms[2])
	}
	if ms[0].Session.Context != "east" || ms[2].Session.Context != "west" {
		t.Fatalf("names %q %q", ms[0].Session.Context, ms[2].Session.Context)
	}
	rs := Collect(context.Background(), ms, 30*time.Second, func() time.Time { return start })
	var codes []int
	for _, r := range rs {
		codes = append(codes, r.Cluster.ExitCode(r.Now))
	}
	if codes[0] != 2 || codes[1] != 1 || codes[2] != 2 || Worst(codes...) != 1 {
		t.Fatalf("codes %v", codes)
	}
	if rs[1].Cluster.Context != "broken" || !strings.Contains(Why(rs[1].Cluster, rs[1].Err), "no server") {
		t.Fatalf("broken: %q", Why(rs[1].Cluster, rs[1].Err))
	}
	// Each demo cluster is its own fleet (seed offset by position).
	l0, _ := rs[0].Cluster.Lock(model.LockRef{Kind: model.LockFleetlock, Namespace: "default", Name: "fleetlock-default"})
	l2, _ := rs[2].Cluster.Lock(model.LockRef{Kind: model.LockFleetlock, Namespace: "default", Name: "fleetlock-default"})
	if l0 == nil || l2 == nil || l0.Spec.(*fleetlock.Spec).Holder == l2.Spec.(*fleetlock.Spec).Holder {
		t.Fatalf("the two demo clusters share a ghost holder: %v %v", l0, l2)
	}
}

// FanIn delivers each opened member's first picture, tagged with its
// position (none for a member that could not be opened), then its events.
func TestFanIn(t *testing.T) {
	start := time.Date(2026, 11, 29, 2, 0, 0, 0, time.UTC)
	base := live.Options{Demo: true, DemoSeed: 1, DemoSpeed: 600, DemoStart: start}
	open := func(ctx context.Context, o live.Options) (*live.Session, error) {
		if o.Context == "broken" {
			return nil, errors.New("no server")
		}
		return live.Open(ctx, o)
	}
	ms := Open(context.Background(), base, []string{"east", "broken", "west"}, open)
	defer Close(ms)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready, events := FanIn(ctx, ms, 30*time.Second)
	guard := time.After(2 * time.Minute) // a hang guard, not a timing assertion
	got := map[int]bool{}
	for len(got) < 2 {
		select {
		case r := <-ready:
			if r.Index == 1 || r.Cluster == nil || r.Cluster.NodeCount() != 7 || got[r.Index] {
				t.Fatalf("ready %+v", r)
			}
			got[r.Index] = true
		case <-guard:
			t.Fatalf("first pictures: %v", got)
		}
	}
	select {
	case ev := <-events:
		if ev.Index != 0 && ev.Index != 2 || ev.Event == nil {
			t.Fatalf("event %+v", ev)
		}
	case <-guard:
		t.Fatal("no event after the first pictures (the demo plays at 600x)")
	}
	select {
	case r := <-ready:
		t.Fatalf("a third first picture: %+v", r)
	default:
	}
}
