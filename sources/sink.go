package sources

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/util/watchlist"

	"github.com/rebootwatch/rebootwatch/model"
)

// Sink receives the events of a source. Each source calls its sink from one
// goroutine at a time, but different sources may call the same sink
// concurrently: a sink shared by several sources must be safe for that (see
// Serial). A sink may block; the source then waits.
type Sink func(model.Event)

// Serial returns a sink that passes events to s one at a time.
func Serial(s Sink) Sink {
	var mu sync.Mutex
	return func(ev model.Event) {
		mu.Lock()
		defer mu.Unlock()
		s(ev)
	}
}

// DefaultRequestTimeout bounds every API request of a source unless told otherwise.
const DefaultRequestTimeout = 20 * time.Second

// Reporter tracks the health of one source and reports it to a sink as
// model.SourceChanged, only when it changes (and, for a polled source, on
// every successful poll so the model sees LastSync move). It is safe for
// concurrent use.
type Reporter struct {
	mu      sync.Mutex
	sink    Sink
	clock   func() time.Time
	h       model.SourceHealth
	sent    bool
	settled chan struct{}
}

// NewReporter returns a reporter for a source. interval is how often the
// source expects to sync (0 for watches); clock defaults to time.Now.
func NewReporter(name model.SourceName, interval time.Duration, sink Sink, clock func() time.Time) *Reporter {
	if clock == nil {
		clock = time.Now
	}
	return &Reporter{sink: sink, clock: clock, settled: make(chan struct{}),
		h: model.SourceHealth{Name: name, Interval: interval}}
}

// Health returns the last reported health (Status "" before the first report).
func (r *Reporter) Health() model.SourceHealth {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.h
}

// Settled is closed once the source has reported anything: it synced, or it
// failed and said why. WaitForSync of every source waits on it.
func (r *Reporter) Settled() <-chan struct{} { return r.settled }

// Wait waits until the reporter has settled (see Settled) or ctx ends. The
// error then reads "<what> not synced: <ctx's error>" and wraps ctx.Err().
// A settled reporter returns nil even when ctx has ended too.
func (r *Reporter) Wait(ctx context.Context, what string) error {
	select {
	case <-r.settled:
		return nil
	default:
	}
	select {
	case <-r.settled:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%s not synced: %w", what, ctx.Err())
	}
}

// OK reports a successful sync now.
func (r *Reporter) OK(msg string) { r.report(model.StatusOK, msg, true) }

// Set reports a status that is not a successful sync.
func (r *Reporter) Set(status model.SourceStatus, msg string) {
	r.report(status, msg, status == model.StatusOK)
}

// Stale reports a watch-based source that has not heard from its server
// since heard: LastSync becomes that moment, so the age shown next to it
// (pills, reports) is the time without word.
func (r *Reporter) Stale(heard time.Time, msg string) {
	r.mu.Lock()
	changed := !r.sent || r.h.Status != model.StatusStale || r.h.Message != msg || !r.h.LastSync.Equal(heard)
	r.h.Status, r.h.Message, r.h.LastSync = model.StatusStale, msg, heard
	first := !r.sent
	r.sent = true
	h := r.h
	if changed {
		r.sink(model.SourceChanged{Health: h})
	}
	r.mu.Unlock()
	if first {
		close(r.settled)
	}
}

// Fail reports a failed request: forbidden (with verb and resource) or error
// (with the API's message). See Classify.
func (r *Reporter) Fail(verb, resource, namespace string, err error) {
	st, msg := Classify(verb, resource, namespace, err)
	r.Set(st, msg)
}

func (r *Reporter) report(status model.SourceStatus, msg string, synced bool) {
	r.mu.Lock()
	changed := !r.sent || r.h.Status != status || r.h.Message != msg
	r.h.Status, r.h.Message = status, msg
	if synced {
		r.h.LastSync = r.clock()
		if r.h.Interval > 0 {
			changed = true
		}
	}
	first := !r.sent
	r.sent = true
	h := r.h
	if changed {
		// Sending under the lock keeps reports of one source in order.
		r.sink(model.SourceChanged{Health: h})
	}
	r.mu.Unlock()
	if first {
		close(r.settled)
	}
}

// Classify turns a failed request into a source status and a one-line
// message: forbidden (RBAC) names the verb and resource; anything else is an
// error carrying the API's message.
func Classify(verb, resource, namespace string, err error) (model.SourceStatus, string) {
	where := ""
	if namespace != "" {
		where = fmt.Sprintf(" in namespace %q", namespace)
	}
	switch {
	case apierrors.IsForbidden(err):
		return model.StatusForbidden, fmt.Sprintf("cannot %s %s%s (RBAC)", verb, resource, where)
	case apierrors.IsUnauthorized(err):
		return model.StatusError, fmt.Sprintf("%s %s: unauthorized: %s", verb, resource, apiMessage(err))
	case errors.Is(err, context.DeadlineExceeded), apierrors.IsTimeout(err), apierrors.IsServerTimeout(err):
		return model.StatusError, fmt.Sprintf("%s %s%s: request timed out", verb, resource, where)
	}
	return model.StatusError, fmt.Sprintf("%s %s%s: %s", verb, resource, where, apiMessage(err))
}

func apiMessage(err error) string {
	var se apierrors.APIStatus
	if errors.As(err, &se) && se.Status().Message != "" {
		return se.Status().Message
	}
	// A transport error carries the whole request URL; its cause (which
	// names the host) is what an operator needs.
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	return err.Error()
}

// ListWatch is a cache.ListerWatcher that bounds every list request with a
// timeout and tells OnResult the outcome of every list and watch call, so a
// source can report its health from what the reflector actually does.
//
// When Client supports it (a real apiserver), the reflector may fetch the
// initial state as a WatchList stream (sendInitialEvents) rather than one big
// list: objects are transformed one by one instead of a whole decoded list
// being held at once, which lowers the peak memory at 5,000 nodes. Fakes
// (and a nil Client) use list + watch. Either way the model sees the same
// events; a failed initial stream is not reported, because the reflector
// falls back to a list, whose outcome is.
type ListWatch struct {
	// Client is the client the calls go to (typed or dynamic), consulted
	// only for whether it supports WatchList.
	Client any
	// Timeout bounds each list request (each page); default DefaultRequestTimeout.
	Timeout time.Duration
	// WatchTimeout is the server-side timeout asked for each watch
	// (timeoutSeconds) when the caller did not set one; default 5m.
	WatchTimeout time.Duration
	ListFunc     func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error)
	WatchFunc    func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
	// OnResult, if set, is called after every call with "list" or "watch" and
	// the error (nil on success).
	OnResult func(verb string, err error)
	// ListThenWatch makes the reflector list and then watch even when Client
	// supports WatchList: for a resource whose list is decoded as it streams
	// (no whole list held), where the apiserver serves the list much faster
	// than the same objects as watch events (custom resources: 3,000
	// Longhorn volumes in about half the time).
	ListThenWatch bool
}

// ListWithContext lists with the request timeout.
func (l *ListWatch) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	t := l.Timeout
	if t <= 0 {
		t = DefaultRequestTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, t)
	defer cancel()
	obj, err := l.ListFunc(ctx, opts)
	if l.OnResult != nil {
		l.OnResult("list", err)
	}
	return obj, err
}

// WatchWithContext starts a watch; the server ends it after WatchTimeout.
func (l *ListWatch) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	if opts.TimeoutSeconds == nil {
		t := l.WatchTimeout
		if t <= 0 {
			t = 5 * time.Minute
		}
		s := int64(t / time.Second)
		opts.TimeoutSeconds = &s
	}
	w, err := l.WatchFunc(ctx, opts)
	initial := opts.SendInitialEvents != nil && *opts.SendInitialEvents
	// A server that answered a failed initial stream (it may not support
	// WatchList) is followed by a list whose outcome is reported; one that
	// did not answer at all (connection refused, timeout) is reported now,
	// or a dead cluster would say nothing until the sync timeout.
	var status apierrors.APIStatus
	answered := err != nil && errors.As(err, &status)
	if l.OnResult != nil && (err == nil || !initial || !answered) {
		l.OnResult("watch", err)
	}
	return w, err
}

// List is the context-free form the cache.Lister interface still requires.
func (l *ListWatch) List(opts metav1.ListOptions) (runtime.Object, error) {
	return l.ListWithContext(context.Background(), opts)
}

// Watch is the context-free form the cache.Watcher interface still requires.
func (l *ListWatch) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return l.WatchWithContext(context.Background(), opts)
}

// IsWatchListSemanticsUnSupported tells the reflector to use list + watch
// unless Client supports WatchList (and ListThenWatch is not set).
func (l *ListWatch) IsWatchListSemanticsUnSupported() bool {
	return l.ListThenWatch || l.Client == nil || watchlist.DoesClientNotSupportWatchListSemantics(l.Client)
}
