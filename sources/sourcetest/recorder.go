// Package sourcetest holds test helpers for the sources' tests: a Recorder
// that applies a source's events to a model.Cluster, as a sink, and polls it
// until a condition holds, and Start, which starts a source on it and waits
// for the first sync.
//
// It is for _test.go files only. It imports "testing", so it must never be
// imported by non-test code (a test in this package checks that). It starts
// nothing and talks to no cluster: the tests bring their own source.
package sourcetest

import (
	"sync"
	"testing"
	"time"

	"github.com/rebootwatch/rebootwatch/model"
)

// DefaultTimeout bounds Eventually unless WithTimeout says otherwise.
const DefaultTimeout = 20 * time.Second

// IntegrationTimeout is the bound integration tests give Eventually: a real
// apiserver or Prometheus on a loaded machine may take a while.
const IntegrationTimeout = 60 * time.Second

// pollInterval is how often Eventually looks at the cluster again.
const pollInterval = 10 * time.Millisecond

// Recorder applies every event it is given to a model.Cluster, under a mutex
// so that a source's goroutines and the test can share it.
type Recorder struct {
	timeout time.Duration // bounds Eventually

	mu sync.Mutex
	c  *model.Cluster
	n  int
}

// NewRecorder returns a recorder over a fresh cluster with the given context and
// default model options.
func NewRecorder(context string) *Recorder {
	return &Recorder{c: model.NewCluster(context, model.Options{}), timeout: DefaultTimeout}
}

// WithTimeout sets how long Eventually waits and returns r. Call it before
// the recorder is shared.
func (r *Recorder) WithTimeout(d time.Duration) *Recorder {
	r.timeout = d
	return r
}

// Sink applies ev to the cluster. It is a sources.Sink.
func (r *Recorder) Sink(ev model.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n++
	r.c.Apply(ev, time.Now())
}

// Events returns how many events the sink has been given.
func (r *Recorder) Events() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}

// Read calls f with the cluster, holding the lock: f must not keep c.
func (r *Recorder) Read(f func(c *model.Cluster)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f(r.c)
}

// Source returns the last reported health of a source (zero if none).
func (r *Recorder) Source(name model.SourceName) model.SourceHealth {
	r.mu.Lock()
	defer r.mu.Unlock()
	h, _ := r.c.Source(name)
	return h
}

// Eventually polls until f holds on the cluster (f runs under the lock), and
// fails the test, naming what it waited for and the sources' health, when it
// does not within the recorder's timeout.
func (r *Recorder) Eventually(t testing.TB, what string, f func(c *model.Cluster) bool) {
	t.Helper()
	deadline := time.Now().Add(r.timeout)
	for {
		r.mu.Lock()
		ok := f(r.c)
		r.mu.Unlock()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			r.mu.Lock()
			defer r.mu.Unlock()
			t.Fatalf("never saw: %s; sources %+v; %d nodes, %d volumes", what, r.c.Sources(), r.c.NodeCount(), r.c.VolumeCount())
		}
		time.Sleep(pollInterval)
	}
}
