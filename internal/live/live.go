package live

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/rebootwatch/rebootwatch/internal/coord"
	"github.com/rebootwatch/rebootwatch/internal/coord/kinds"
	"github.com/rebootwatch/rebootwatch/internal/explain"
	"github.com/rebootwatch/rebootwatch/internal/kubeclient"
	"github.com/rebootwatch/rebootwatch/internal/kubeconfig"
	"github.com/rebootwatch/rebootwatch/internal/lock"
	"github.com/rebootwatch/rebootwatch/model"
	"github.com/rebootwatch/rebootwatch/sources"
	"github.com/rebootwatch/rebootwatch/sources/longhorn"
	"github.com/rebootwatch/rebootwatch/sources/prometheus"
	"github.com/rebootwatch/rebootwatch/sources/sim"
	"github.com/rebootwatch/rebootwatch/sources/sourceset"
)

// Options say which cluster to open and how.
type Options struct {
	// Kube loads the cluster's configuration (kubectl's flags and rules);
	// Context names the kubeconfig context ("" is the current one).
	Kube    kubeconfig.Loader
	Context string

	RequestTimeout time.Duration
	// StaleAfter and ProbeInterval tune the freshness of the watch-based
	// sources (0: sources.DefaultStaleAfter, sources.DefaultProbeInterval).
	StaleAfter, ProbeInterval time.Duration
	KuredDaemonSet            string
	FleetlockNamespace        string

	PrometheusURL       string
	PrometheusTokenFile string
	PrometheusInsecure  bool
	PrometheusInterval  time.Duration
	PrometheusAlerts    string

	OrphanGrace time.Duration
	// DrainBound is --drain-bound (explain.Options.DrainBound).
	DrainBound time.Duration
	TargetOS   string

	Demo      bool
	DemoSeed  int64
	DemoSpeed float64
	DemoAt    time.Duration
	// DemoScenario is the demo cluster's scenario: sim.ScenarioFleetlock
	// or sim.ScenarioKured ("" is kured).
	DemoScenario string
	// DemoGhostHolder replaces the demo's ghost holder id (sim.Config).
	DemoGhostHolder string
	// SyncTimeout bounds the wait for the first picture (default 30s).
	SyncTimeout time.Duration
	// Once reads the cluster once, for a one-shot report (--snapshot):
	// parallel lists and no informers, watches or probes (see
	// kube.Options.Once, longhorn.Options.Once). The session then never
	// updates after its first picture.
	Once bool
	// Kinds selects the coordinator kinds read (--coordinators; the zero
	// value: every registered kind). A selected lock-object kind (kured,
	// fleetlock) runs its source; one left out reports disabled. The
	// selected kinds read once (system-upgrade-controller, the Flatcar
	// update operator: kinds.Selection.ReadAll) are read when the session
	// opens and, for a dashboard, again every CoordinatorInterval, each
	// reported not-installed when it is not: their blockers are added to
	// the model's, and a node one left cordoned may be uncordoned (behind
	// every gate). The demo reads them only in a coordinator kind's own
	// scenario (its demo cluster has no other). CoordinatorNames are their
	// names ("suc-namespace", "flatcar-operator").
	Kinds            kinds.Selection
	CoordinatorNames map[string]string
	// CoordinatorInterval is how often a dashboard reads the coordinator
	// kinds again (default 10s; 1s in the demo), each read bounded by
	// RequestTimeout.
	CoordinatorInterval time.Duration
	// Action marks a session opened for one action (release, reap,
	// uncordon): read once like Once, though its sources run.
	Action bool

	// DemoStart is the demo's scenario time zero (default: now, so the
	// demo's timestamps look current). Tests fix it.
	DemoStart time.Time
	// WallNow is the wall clock (time.Now when nil).
	WallNow func() time.Time
	// Config, when set, is used instead of a kubeconfig (tests).
	Config *rest.Config
}

// Session is one opened cluster.
type Session struct {
	Context string
	// Clock is the session's time: the wall clock, or the demo's scenario time.
	Clock   func() time.Time
	Client  kubernetes.Interface
	Dynamic dynamic.Interface
	// longhornREST is a JSON client for Longhorn's volumes (nil in the demo).
	longhornREST rest.Interface
	// Events carries every source's events, in order per source.
	Events <-chan model.Event
	Demo   bool
	// Sim is the demo cluster (nil for a real cluster).
	Sim *sim.Sim

	opts   Options
	engine *lock.Engine
	// explain is the stall explainer with the session's bounds.
	explain model.Explain
	// coordinators are the coordinator kinds as last read, at
	// coordinatorsAt (Options.Kinds; coordinators.go), under coordMu.
	coordMu        sync.Mutex
	coordinators   []kinds.Result
	coordinatorsAt time.Time
	coordOn        bool
	events         chan model.Event
	cancel         context.CancelFunc
	waits          []func(context.Context) error
	// joins waits for every source's goroutines to end (after cancel).
	joins []func()
	wg    sync.WaitGroup
	stop  sync.Once
	// cancelled makes cancel run once, whether Close or CloseWithin asks.
	cancelled sync.Once
}

// eventBuffer is how many events may wait for the model's owner.
const eventBuffer = 8192

// Open connects to the cluster the options name and starts its sources.
// It returns quickly: use WaitForSync to wait for the first full picture.
// The sources run until Close, or until ctx ends; Close must be called
// either way, and returns once every goroutine of the session has ended.
func Open(ctx context.Context, o Options) (*Session, error) {
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = 20 * time.Second
	}
	if o.WallNow == nil {
		o.WallNow = time.Now
	}
	if o.SyncTimeout <= 0 {
		o.SyncTimeout = 30 * time.Second
	}
	s := &Session{opts: o, events: make(chan model.Event, eventBuffer),
		engine:  lock.New(lock.Options{OrphanGrace: o.OrphanGrace}),
		explain: explain.For(explain.Options{DrainBound: o.DrainBound})}
	s.Events = s.events
	var err error
	if o.Demo {
		err = s.openDemo()
	} else {
		err = s.openReal()
	}
	if err != nil {
		return nil, err
	}
	ctx, s.cancel = context.WithCancel(ctx)
	var coordRead chan struct{}
	if o.Kinds.Observed() && (!o.Demo || sim.CoordinatorScenario(o.DemoScenario)) {
		// The first picture waits for the coordinator kinds' first read,
		// which runs beside the sources' lists, never before them: every
		// front end reads them by default, and a cluster without them
		// must not wait for their discovery (docs/performance.md).
		s.coordOn, coordRead = true, make(chan struct{})
		s.waits = append(s.waits, func(wctx context.Context) error {
			select {
			case <-coordRead:
				return nil
			case <-wctx.Done():
				return fmt.Errorf("coordinator kinds not read: %w", wctx.Err())
			}
		})
	}
	if err := s.start(ctx); err != nil {
		s.Close()
		return nil, err
	}
	if s.coordOn {
		sink := s.sink(ctx)
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer close(coordRead)
			s.readCoordinators(ctx)
			// Each kind's health as a source, and its slots and nodes'
			// cycle, before the first picture's Synced (announceSync
			// waits for coordRead).
			rs, at := s.coordinatorsRead()
			for _, r := range rs {
				sink(model.SourceChanged{Health: r.Health(at)})
				sink(r.Cycle())
			}
		}()
		if !o.Once && !o.Action {
			s.watchCoordinators(ctx)
		}
	}
	return s, nil
}

func (s *Session) openDemo() error {
	start := s.opts.DemoStart
	if start.IsZero() {
		start = s.opts.WallNow().Truncate(time.Second)
	}
	sm, err := sim.New(sim.Config{Seed: s.opts.DemoSeed, Start: start, GhostHolder: s.opts.DemoGhostHolder, Scenario: s.opts.DemoScenario})
	if err != nil {
		return fmt.Errorf("demo cluster: %w", err)
	}
	clock := sim.Clock{Start: start, Offset: s.opts.DemoAt, Speed: s.opts.DemoSpeed, Wall: s.opts.WallNow(), WallNow: s.opts.WallNow}
	if err := sm.Step(clock.Now()); err != nil {
		return fmt.Errorf("demo cluster: %w", err)
	}
	s.Sim, s.Demo, s.Context = sm, true, "demo"
	s.Clock = clock.Now
	s.Client, s.Dynamic = sm.Client, sm.Dynamic
	return nil
}

func (s *Session) openReal() error {
	s.Clock = s.opts.WallNow
	cfg := s.opts.Config
	if cfg == nil {
		var name string
		var err error
		cfg, name, err = s.opts.Kube.RESTConfig(s.opts.Context)
		if err != nil {
			return err
		}
		s.Context = name
	} else {
		cfg = rest.CopyConfig(cfg)
		s.Context = s.opts.Context
	}
	// A token file is read again on the first 401 (a rotated token is
	// picked up at once, not after client-go's minute).
	cfg, err := kubeclient.RereadTokenOn401(cfg)
	if err != nil {
		return fmt.Errorf("kubernetes client: %w", err)
	}
	// Every request is bounded by --request-timeout, but a healthy watch
	// stream is not cut (an http.Client timeout would end each one).
	cfg = kubeclient.WatchConfig(cfg, s.opts.RequestTimeout)
	cfg.UserAgent = "rebootwatch"
	if cfg.QPS == 0 && cfg.RateLimiter == nil {
		// kubectl's own defaults, not client-go's 5/10: a one-shot read
		// at 5,000 nodes makes a dozen page requests at once, which the
		// default limiter would space 200 ms apart.
		cfg.QPS, cfg.Burst = 50, 300
	}
	// Built-in types travel as protobuf (a faster first sync at 5,000
	// nodes); custom resources (Longhorn) only speak JSON.
	if s.Client, err = kubernetes.NewForConfig(kubeclient.ProtobufConfig(cfg)); err != nil {
		return fmt.Errorf("kubernetes client: %w", err)
	}
	if s.Dynamic, err = dynamic.NewForConfig(cfg); err != nil {
		return fmt.Errorf("kubernetes client: %w", err)
	}
	// Longhorn's volumes are decoded straight into small structs, for the
	// informer and the one-shot read alike (sources/longhorn).
	if s.longhornREST, err = longhorn.NewREST(cfg); err != nil {
		return fmt.Errorf("kubernetes client: %w", err)
	}
	return nil
}

// sink forwards an event to the owner; it drops nothing, and gives up only
// when the session is closed.
func (s *Session) sink(ctx context.Context) sources.Sink {
	return func(ev model.Event) {
		select {
		case s.events <- ev:
		case <-ctx.Done():
		}
	}
}

// sourceOptions are the options of the session's sources.
func (s *Session) sourceOptions() sourceset.Options {
	return sourceset.Options{
		Client: s.Client, Dynamic: s.Dynamic, LonghornREST: s.longhornREST,
		RequestTimeout: s.opts.RequestTimeout, StaleAfter: s.opts.StaleAfter, ProbeInterval: s.opts.ProbeInterval,
		SyncTimeout: s.opts.SyncTimeout, Once: s.opts.Once,
		// The dashboard and watch paint the volumes from the snapshot's
		// read while the Longhorn informer lists them (issue 35 §1); an
		// action's session waits for its informers as before.
		SeedVolumes: !s.opts.Once && !s.opts.Action,
		// Who freed a lock, for the timeline of a running session.
		LockEvents:     !s.opts.Once && !s.Demo,
		KuredDaemonSet: s.opts.KuredDaemonSet, FleetlockNamespace: s.opts.FleetlockNamespace,
		Disabled: s.opts.Kinds.Disabled(),
		Prometheus: prometheus.Options{
			URL: s.opts.PrometheusURL, BearerTokenFile: s.opts.PrometheusTokenFile, InsecureSkipVerify: s.opts.PrometheusInsecure,
			Interval: s.opts.PrometheusInterval, AlertFilter: s.opts.PrometheusAlerts,
		},
		// The demo's reboot-required signal stands in for Prometheus.
		NoPrometheus: s.Demo,
	}
}

// FreshReaders are the reads an actor of this session makes before each
// write (lock.Actor.Fresh): the session's sources' own, read just now, and
// the coordinator kinds when the session reads them.
func (s *Session) FreshReaders() lock.FreshReaders {
	f := sourceset.FreshReaders(s.sourceOptions())
	if s.coordOn {
		f.LeftCordoned = s.leftCordonedNow
	}
	return f
}

func (s *Session) start(ctx context.Context) error {
	sink := s.sink(ctx)
	set, err := sourceset.Start(ctx, s.sourceOptions(), sink)
	if err != nil {
		return err
	}
	s.waits = append(s.waits, set.WaitForSync)
	s.joins = append(s.joins, set.Wait)
	if s.Demo {
		// The demo's first reboot-required value is there before the first
		// sync completes.
		sink(sim.Health(s.Clock()))
		sink(model.RebootRequiredSet{Values: s.Sim.RebootRequired()})
		// The demo starts playing once the informers hold the first picture,
		// so no change is lost between their list and their watch.
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			_ = set.WaitForSync(wctx)
			cancel()
			s.Sim.Run(ctx, s.Clock, 250*time.Millisecond, sink)
		}()
	}
	s.announceSync(ctx, sink)
	return nil
}

// announceSync sends model.Synced once every source has delivered its
// first picture or reported why it cannot (bounded by the sync timeout), so
// the model never derives phases from half a picture.
func (s *Session) announceSync(ctx context.Context, sink sources.Sink) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		wctx, cancel := context.WithTimeout(ctx, s.opts.SyncTimeout)
		defer cancel()
		_ = s.WaitForSync(wctx)
		sink(model.Synced{})
	}()
}

// WaitForSync waits until every source has delivered its first picture or
// reported why it cannot, bounded by ctx.
func (s *Session) WaitForSync(ctx context.Context) error {
	var errs []error
	for _, w := range s.waits {
		if err := w(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// NewCluster returns an empty model for this session with the session's
// lock engine wired as its Judge (and its lock kinds' sources as the
// model's LockSources) and the stall explainer as its Explain, with the
// coordinator kinds' blockers merged in.
func (s *Session) NewCluster() *model.Cluster {
	c := model.NewCluster(s.Context, model.Options{TargetOS: s.opts.TargetOS})
	c.Judge, c.Explain = s.engine.Judge, s.explain
	c.LockSources = lock.Sources()
	c.Marks = kinds.NodeMarks
	if s.coordOn {
		c.CoordinatorSources = s.opts.Kinds.CoordinatorSources()
		c.Explain = func(c *model.Cluster, now time.Time) model.Blockers {
			return coord.Merge(s.explain(c, now), s.coordinatorBlockers())
		}
	}
	// Each kind read is a source; a dashboard's later reads arrive as
	// events (watchCoordinators).
	rs, at := s.coordinatorsRead()
	for _, r := range rs {
		c.Apply(model.SourceChanged{Health: r.Health(at)}, at)
		c.Apply(r.Cycle(), at)
	}
	c.AwaitSync = true
	return c
}

// Engine returns the session's lock engine: the one that judges its model,
// so plans are made on the same memory (first-seen times, uncordons).
func (s *Session) Engine() *lock.Engine { return s.engine }

// Close stops the sources and the demo, and returns once every goroutine
// the session started (informers, polls, the demo's clock) has ended: a
// closed session leaves nothing running behind it.
func (s *Session) Close() {
	s.stop.Do(func() {
		s.cancelled.Do(s.cancel)
		s.wg.Wait()
		for _, j := range s.joins {
			j()
		}
	})
}

// ExitGrace bounds how long a command that is about to exit waits for its
// sessions' goroutines (CloseWithin).
const ExitGrace = 2 * time.Second

// CloseWithin is Close for a process that is about to exit: it stops every
// source at once but waits at most d for their goroutines. client-go's
// reflector sleeps between retries of a refused watch (backing off to about
// 30 s) without looking at its context, so Close alone can keep Ctrl-C
// waiting for up to a minute against an API server that refuses
// connections. It reports whether every goroutine was joined; when not,
// the rest end with the process. Code that keeps running after a session
// (tests, the agent) uses Close.
func (s *Session) CloseWithin(d time.Duration) bool {
	// Cancelled here, before the wait starts: on a busy machine the
	// goroutine below may not run before d is up, and the sources must be
	// told to stop whatever the wait's outcome.
	s.cancelled.Do(s.cancel)
	done := make(chan struct{})
	go func() {
		s.Close()
		close(done)
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}

// Collect waits for the first sync (bounded by ctx) and returns the model
// with every event delivered so far applied and derived. Events keep
// flowing to the model's owner only through Events; Collect is for
// one-shot callers.
func (s *Session) Collect(ctx context.Context) (*model.Cluster, error) {
	c := s.NewCluster()
	for !c.Synced() {
		select {
		case ev := <-s.events:
			c.Apply(ev, s.Clock())
		case <-ctx.Done():
			// Take what arrived: sources that never answered are reported
			// by their health, and the model judges without them.
			s.Drain(c)
			c.Apply(model.Synced{}, s.Clock())
			c.Recompute(s.Clock())
			return c, fmt.Errorf("sources did not sync: %w", ctx.Err())
		}
	}
	s.Drain(c)
	c.Recompute(s.Clock())
	return c, nil
}

// Drain applies every event already waiting, without blocking.
func (s *Session) Drain(c *model.Cluster) {
	for {
		select {
		case ev := <-s.events:
			c.Apply(ev, s.Clock())
		default:
			return
		}
	}
}
