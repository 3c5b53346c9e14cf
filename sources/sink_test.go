package sources

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/rebootwatch/rebootwatch/model"
)

func TestReporter(t *testing.T) {
	var got []model.SourceHealth
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	r := NewReporter(model.SourceNodes, 0, func(ev model.Event) {
		got = append(got, ev.(model.SourceChanged).Health)
	}, func() time.Time { return now })
	select {
	case <-r.Settled():
		t.Fatal("settled before any report")
	default:
	}
	cctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := r.Wait(cctx, "nodes source"); !errors.Is(err, context.Canceled) || err.Error() != "nodes source not synced: context canceled" {
		t.Fatalf("Wait before any report, ctx done: %v", err)
	}
	r.OK("")
	r.OK("") // unchanged watch source: not re-sent
	<-r.Settled()
	if err := r.Wait(cctx, "nodes source"); err != nil {
		t.Fatalf("Wait once settled: %v (must not fail even when ctx is done)", err)
	}
	r.Fail("list", "nodes", "", apierrors.NewInternalError(errors.New("boom")))
	r.Fail("list", "nodes", "", apierrors.NewInternalError(errors.New("boom")))
	r.OK("")
	if len(got) != 3 {
		t.Fatalf("reports %+v, want ok, error, ok", got)
	}
	if got[1].Status != model.StatusError || got[1].Message != "list nodes: Internal error occurred: boom" || !got[1].LastSync.Equal(now) {
		t.Errorf("error report %+v (LastSync must keep the last success)", got[1])
	}

	// A polled source re-sends every success so LastSync moves.
	var n int
	p := NewReporter(model.SourcePrometheus, time.Second, func(model.Event) { n++ }, nil)
	p.OK("")
	p.OK("")
	if n != 2 {
		t.Errorf("polled source sent %d reports for 2 successes", n)
	}
}

func TestClassify(t *testing.T) {
	gr := schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}
	cases := []struct {
		err    error
		status model.SourceStatus
		msg    string
	}{
		{apierrors.NewForbidden(gr, "", errors.New("no")), model.StatusForbidden, `cannot watch leases.coordination.k8s.io in namespace "ns" (RBAC)`},
		{fmt.Errorf("wrapped: %w", context.DeadlineExceeded), model.StatusError, `watch leases.coordination.k8s.io in namespace "ns": request timed out`},
		{apierrors.NewUnauthorized("token expired"), model.StatusError, `watch leases.coordination.k8s.io: unauthorized: token expired`},
		{errors.New("dial tcp 127.0.0.1:1: connect: connection refused"), model.StatusError, `watch leases.coordination.k8s.io in namespace "ns": dial tcp 127.0.0.1:1: connect: connection refused`},
		{&url.Error{Op: "Get", URL: "https://127.0.0.1:1/apis/coordination.k8s.io/v1/namespaces/ns/leases?watch=true", Err: errors.New("dial tcp 127.0.0.1:1: connect: connection refused")},
			model.StatusError, `watch leases.coordination.k8s.io in namespace "ns": dial tcp 127.0.0.1:1: connect: connection refused`},
	}
	for _, c := range cases {
		st, msg := Classify("watch", "leases.coordination.k8s.io", "ns", c.err)
		if st != c.status || msg != c.msg {
			t.Errorf("%v: got %s %q, want %s %q", c.err, st, msg, c.status, c.msg)
		}
	}
}

func TestListWatchTimeoutAndResults(t *testing.T) {
	var results []string
	lw := &ListWatch{
		Timeout: 20 * time.Millisecond,
		ListFunc: func(ctx context.Context, _ metav1.ListOptions) (runtime.Object, error) {
			<-ctx.Done() // a hung apiserver
			return nil, ctx.Err()
		},
		WatchFunc: func(_ context.Context, o metav1.ListOptions) (watch.Interface, error) {
			if o.TimeoutSeconds == nil || *o.TimeoutSeconds != 300 {
				return nil, fmt.Errorf("timeoutSeconds %v", o.TimeoutSeconds)
			}
			return watch.NewFake(), nil
		},
		OnResult: func(verb string, err error) { results = append(results, fmt.Sprint(verb, " ", err)) },
	}
	if _, err := lw.ListWithContext(context.Background(), metav1.ListOptions{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("list: %v", err)
	}
	if _, err := lw.WatchWithContext(context.Background(), metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if len(results) != 2 || results[0] != "list context deadline exceeded" || results[1] != "watch <nil>" {
		t.Errorf("results %q", results)
	}
	if !lw.IsWatchListSemanticsUnSupported() {
		t.Error("no client: must use list + watch")
	}
	lw.Client = fake.NewClientset()
	if !lw.IsWatchListSemanticsUnSupported() {
		t.Error("fake clientset: must use list + watch")
	}
	lw.Client = struct{}{} // a client that does not say it lacks WatchList
	if lw.IsWatchListSemanticsUnSupported() {
		t.Error("a real client: must use WatchList")
	}
	lw.ListThenWatch = true
	if !lw.IsWatchListSemanticsUnSupported() {
		t.Error("ListThenWatch: must use list + watch")
	}
}
