// Package sourceset is the one list of sources that feed a cluster's model,
// started the same way by a live session (dashboard, --snapshot, watch) and
// by rebootwatch-agent: nodes, locks, PodDisruptionBudgets and pods
// (sources/kube), Longhorn's volumes (sources/longhorn) and Prometheus
// (sources/prometheus) — the user's Prometheus when one is given, else
// kured's own, read from kured's DaemonSet once it was listed and followed
// as it changes.
//
// It only starts, waits for and joins sources, and hands the lock engine's
// actor the sources' one-shot reads for its fresh read before a write
// (FreshReaders). It must not interpret their events (the owner's model
// does), hold a model, or render anything.
package sourceset

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/rebootwatch/rebootwatch/internal/coord/kured"
	"github.com/rebootwatch/rebootwatch/model"
	"github.com/rebootwatch/rebootwatch/sources"
	"github.com/rebootwatch/rebootwatch/sources/kube"
	"github.com/rebootwatch/rebootwatch/sources/longhorn"
	"github.com/rebootwatch/rebootwatch/sources/prometheus"
)

// Options configure every source of one cluster.
type Options struct {
	Client  kubernetes.Interface
	Dynamic dynamic.Interface
	// LonghornREST is a JSON client for Longhorn's volumes
	// (longhorn.NewREST), read through it into small structs by the
	// informer and a one-shot read alike (nil: the dynamic client).
	LonghornREST rest.Interface

	RequestTimeout time.Duration
	StaleAfter     time.Duration
	ProbeInterval  time.Duration
	// SyncTimeout bounds the wait for kured's DaemonSet before kured's own
	// Prometheus settings are looked at (default 30s).
	SyncTimeout time.Duration
	// KuredFollowInterval is how often kured's settings are looked at
	// again, to follow a --prometheus-url or an alert filter that kured's
	// DaemonSet gained, changed or lost (default
	// DefaultKuredFollowInterval).
	KuredFollowInterval time.Duration
	// Once reads every source once, without informers (--snapshot).
	Once bool
	// SeedVolumes starts the Longhorn informer together with the one-shot
	// read of the volumes (longhorn.Options.Seed), whose volumes reach the
	// model at the snapshot's speed: for a session that paints a picture
	// (the dashboard, `watch`), not for the agent.
	SeedVolumes bool
	// LockEvents reads who freed a lock from rebootwatch's Events
	// (kube.Options.LockEvents).
	LockEvents bool

	KuredDaemonSet     string
	FleetlockNamespace string
	// Disabled are the lock kinds turned off, each with why (kube.Options).
	Disabled map[model.LockKind]string

	// Prometheus is the user's Prometheus (URL, alert filter, token). With
	// neither a URL nor an alert filter, kured's own --prometheus-url and
	// alert settings are used once its DaemonSet was read; without those
	// the source reports disabled.
	Prometheus prometheus.Options
	// NoPrometheus starts no Prometheus source (the demo stands in for it).
	NoPrometheus bool

	// Logger receives the sources' debug lines (default: discard).
	Logger *slog.Logger
}

// Set is the running sources of one cluster.
type Set struct {
	Kube     *kube.Source
	Longhorn *longhorn.Source

	mu    sync.Mutex
	prom  *prometheus.Source
	ready chan struct{} // closed once the Prometheus source started or gave up
	wg    sync.WaitGroup
}

// Start starts every source feeding sink and returns at once. An error
// means a source could not be configured (a bad alert filter, say); sources
// that already started stop with ctx.
func Start(ctx context.Context, o Options, sink sources.Sink) (*Set, error) {
	if o.SyncTimeout <= 0 {
		o.SyncTimeout = 30 * time.Second
	}
	if o.KuredFollowInterval <= 0 {
		o.KuredFollowInterval = DefaultKuredFollowInterval
	}
	s := &Set{ready: make(chan struct{})}
	ks, err := kube.Start(ctx, kube.Options{
		Client: o.Client, RequestTimeout: o.RequestTimeout, StaleAfter: o.StaleAfter, ProbeInterval: o.ProbeInterval,
		KuredDaemonSet: o.KuredDaemonSet, FleetlockNamespace: o.FleetlockNamespace, Disabled: o.Disabled, Once: o.Once, Logger: o.Logger,
		LockEvents: o.LockEvents,
	}, sink)
	if err != nil {
		return nil, err
	}
	s.Kube = ks
	ls, err := longhorn.Start(ctx, longhorn.Options{Client: o.Dynamic, RequestTimeout: o.RequestTimeout,
		StaleAfter: o.StaleAfter, ProbeInterval: o.ProbeInterval, Once: o.Once, REST: o.LonghornREST, Logger: o.Logger,
		Seed: o.SeedVolumes && !o.Once}, sink)
	if err != nil {
		return nil, err
	}
	s.Longhorn = ls
	po := o.Prometheus
	if po.RequestTimeout <= 0 {
		po.RequestTimeout = o.RequestTimeout
	}
	if po.Logger == nil {
		po.Logger = o.Logger
	}
	switch {
	case o.NoPrometheus:
		close(s.ready)
	case po.URL == "" && po.AlertFilter == "":
		// The user gave no Prometheus: kured's own is the default, once read.
		s.wg.Add(1)
		go s.startKuredPrometheus(ctx, po, o, sink)
	default:
		if po.AlertFilter != "" && po.FilterFrom == "" {
			po.FilterFrom = "--prometheus-alerts"
		}
		p, err := prometheus.Start(ctx, po, sink)
		if err != nil {
			return nil, err
		}
		s.prom = p
		close(s.ready)
	}
	return s, nil
}

// DefaultKuredFollowInterval is how often a session without a Prometheus
// of its own looks again at kured's settings (Options.KuredFollowInterval).
const DefaultKuredFollowInterval = 2 * time.Second

// kuredPromKey is what of kured's settings the Prometheus source is
// started with: a change of any of them restarts it.
type kuredPromKey struct {
	url, filter, of       string
	matchOnly, firingOnly bool
	// conflict: kured's DaemonSets (node pools) name different Prometheus
	// settings; none is followed and the source says why.
	conflict string
}

// kuredPromKeyOf is the Prometheus settings of kured's DaemonSets: those
// every DaemonSet with a --prometheus-url shares (kured.PrometheusOf, as
// the fresh read before a write picks them), and which DaemonSets set them.
func kuredPromKeyOf(ks []kube.KuredSettings) kuredPromKey {
	cfgs := make([]*kured.Config, len(ks))
	names := make([]string, len(ks))
	for i, k := range ks {
		cfgs[i], names[i] = k.Config, k.Of()
	}
	cfg, conflict := kured.PrometheusOf(cfgs, names)
	if conflict != "" {
		return kuredPromKey{conflict: conflict}
	}
	if cfg == nil {
		return kuredPromKey{}
	}
	var of []string
	for _, k := range ks {
		if k.Config != nil && k.Config.PrometheusURL != "" {
			of = append(of, k.Of())
		}
	}
	return kuredPromKey{url: cfg.PrometheusURL, filter: cfg.AlertFilterRegexp, of: strings.Join(of, ", "),
		matchOnly: cfg.AlertFilterMatchOnly, firingOnly: cfg.AlertFiringOnly}
}

// startKuredPrometheus starts the Prometheus source once kured's DaemonSet
// was read (bounded by timeout): with kured's --prometheus-url and its alert
// blocker's settings when kured has them (the gate then says the filter is
// kured's), else disabled as without --prometheus-url. Unless the session
// reads once, it then follows kured's settings: when they change, the old
// source stops before one with the new settings starts, so the alert gate
// judges with what kured's DaemonSet says now — the same settings the fresh
// read before a write uses (FreshReaders), which would otherwise refuse
// every write as changed until a restart.
func (s *Set) startKuredPrometheus(ctx context.Context, po prometheus.Options, o Options, sink sources.Sink) {
	defer s.wg.Done()
	// Only kured's DaemonSet is needed, not the nodes: the Prometheus
	// query starts while a large node list is still coming.
	wctx, cancel := context.WithTimeout(ctx, o.SyncTimeout)
	_ = s.Kube.WaitForKured(wctx)
	cancel()
	if ctx.Err() != nil {
		close(s.ready)
		return
	}
	key := kuredPromKeyOf(s.Kube.KuredConfigs())
	stop := s.startKuredPromWith(ctx, po, key, sink)
	close(s.ready)
	if o.Once {
		return
	}
	t := time.NewTicker(o.KuredFollowInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		next := kuredPromKeyOf(s.Kube.KuredConfigs())
		if next == key {
			continue
		}
		stop()
		if next.url == "" && next.conflict == "" {
			// No gate any more: the model forgets the old filter's answer.
			sink(model.AlertsFiring{Off: true})
		}
		key = next
		stop = s.startKuredPromWith(ctx, po, key, sink)
	}
}

// startKuredPromWith starts the Prometheus source with kured's settings in
// key (none: disabled) and returns what stops it and waits for it to end.
func (s *Set) startKuredPromWith(ctx context.Context, po prometheus.Options, key kuredPromKey, sink sources.Sink) (stop func()) {
	if key.conflict != "" {
		// kured in some pool checks alerts, but which Prometheus is not
		// known: the alerts are unknown (the gate refuses), never none.
		sink(model.AlertsFiring{Unknown: true, From: "kured's own (its node pools disagree)"})
		sink(model.SourceChanged{Health: model.SourceHealth{Name: model.SourcePrometheus, Status: model.StatusError, Message: key.conflict}})
		s.mu.Lock()
		s.prom = nil
		s.mu.Unlock()
		return func() {}
	}
	if key.url != "" {
		po.URL = key.url
		po.KuredAlerts = &prometheus.KuredAlerts{Filter: key.filter, MatchOnly: key.matchOnly, FiringOnly: key.firingOnly}
		which := "DaemonSet "
		if strings.Contains(key.of, ", ") {
			which = "DaemonSets (node pools) "
		}
		po.FilterFrom = "kured's own (--prometheus-url and --alert-filter-regexp of " + which + key.of + ")"
	}
	pctx, cancel := context.WithCancel(ctx)
	p, err := prometheus.Start(pctx, po, sink)
	if err != nil {
		sink(model.SourceChanged{Health: model.SourceHealth{Name: model.SourcePrometheus, Status: model.StatusError,
			Message: "kured's Prometheus settings: " + err.Error()}})
		p = nil
	}
	s.mu.Lock()
	s.prom = p
	s.mu.Unlock()
	return func() {
		cancel()
		if p != nil {
			p.Wait()
		}
	}
}

func (s *Set) prometheus() *prometheus.Source {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.prom
}

// WaitForSync waits until every source has delivered its first picture or
// reported why it cannot, bounded by ctx.
func (s *Set) WaitForSync(ctx context.Context) error {
	var errs []error
	for _, w := range []func(context.Context) error{s.Kube.WaitForSync, s.Longhorn.WaitForSync} {
		if err := w(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	select {
	case <-s.ready:
		if p := s.prometheus(); p != nil {
			if err := p.WaitForSync(ctx); err != nil {
				errs = append(errs, err)
			}
		}
	case <-ctx.Done():
		errs = append(errs, ctx.Err())
	}
	return errors.Join(errs...)
}

// Wait returns once every source's goroutines ended (after ctx is done).
func (s *Set) Wait() {
	s.Kube.Wait()
	s.Longhorn.Wait()
	s.wg.Wait()
	if p := s.prometheus(); p != nil {
		p.Wait()
	}
}
