// Package kube is the Kubernetes source: client-go shared informers for
// Nodes and for each registered lock kind (kured.go: kured's DaemonSets;
// fleetlock.go: fleetlock-* Leases in the fleetlock namespace), for
// PodDisruptionBudgets (pdb.go) and for narrow pod watches (pods.go: the pods
// of cordoned nodes, those matching kured's --blocking-pod-selector, and
// where kured runs as one DaemonSet per node pool each one's own pods —
// never a cluster-wide pod informer), turned into model events
// (NodeUpserted/NodeDeleted, LockUpserted/LockDeleted, PDBUpserted/PDBDeleted,
// NodePodsSet, BlockingSelectorsSet/BlockingPodsSet, LockScopeSet) and per-source health
// (SourceChanged for "nodes", each kind's source, "pdbs" and "pods").
//
// It works the same over a real apiserver and client-go fake clientsets (the
// demo in sources/sim). On a real apiserver the node informer's list and
// watch read the protobuf straight into the small *Node it caches
// (nodewatch.go, with nodeproto.go's reader); with a fake, or behind a
// proxy that passes no protobuf on (406, or JSON whatever was asked), nodes
// go through the typed client (JSON, as client-go negotiates it).
//
// Each informer and pod watch is kept honest by an audit (audit.go): a
// quorum list of what it watches, compared with its cache, which makes its
// source stale when the watch stopped delivering while the server answers.
//
// With Options.Once (a one-shot report: --snapshot) there are no informers,
// watches or probes: every part lists its resource once, all parts in
// parallel, each in one request (ListPageSize), and the same events and
// health come out of the same handlers. A part whose list failed delivers none of its objects
// (as an informer whose list failed delivers none): it reports why. Objects are stripped with SetTransform before they
// enter the cache, every list is bounded by a timeout, and a source that
// cannot sync is reported (error, forbidden, not-installed), never waited on
// forever. One failing informer never stops the others.
//
// It must only read: no writes to the cluster, no discovery round-trips, and
// no pointers into the informer cache handed out.
package kube

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/rebootwatch/rebootwatch/internal/coord/fleetlock"
	"github.com/rebootwatch/rebootwatch/internal/coord/kinds"
	"github.com/rebootwatch/rebootwatch/internal/coord/kured"
	"github.com/rebootwatch/rebootwatch/model"
	"github.com/rebootwatch/rebootwatch/sources"
)

// DefaultFleetlockNamespace is where fleetlock keeps its Leases by default.
const DefaultFleetlockNamespace = fleetlock.DefaultNamespace

// Options configure the Kubernetes source.
type Options struct {
	// Client is the typed client (real or fake). Required.
	Client kubernetes.Interface
	// FleetlockNamespace is the namespace of the fleetlock-* Leases (default "default").
	FleetlockNamespace string
	// KuredDaemonSet is "namespace/name" of kured's DaemonSet, or several
	// comma-separated (one per node pool, each trusted as kured's); empty
	// means discover them in every namespace: each DaemonSet that runs
	// kured's image and whose kured's --ds-namespace/--ds-name name it
	// (kured.go), one per node pool when kured runs as several.
	KuredDaemonSet string
	// Disabled are the lock kinds turned off, each with why: no informer
	// reads them and their source reports disabled (never error), so a
	// coordinator the cluster does not run blocks nothing.
	Disabled map[model.LockKind]string
	// RequestTimeout bounds each list request (default 20s).
	RequestTimeout time.Duration
	// StaleAfter is how long an informer may go without hearing from the
	// API server before it reports stale (default sources.DefaultStaleAfter).
	StaleAfter time.Duration
	// ProbeInterval is how often a quiet informer probes the API server
	// (default sources.DefaultProbeInterval).
	ProbeInterval time.Duration
	// AuditInterval is how often each informer's cache is compared with a
	// quorum list, and AuditGrace how long a change the list shows may take
	// to arrive by watch (defaults sources.DefaultAuditInterval and
	// DefaultAuditGrace; audit.go).
	AuditInterval, AuditGrace time.Duration
	// MaxPodWatchNodes bounds how many cordoned nodes get a watch of their
	// pods at once (default DefaultMaxPodWatchNodes).
	MaxPodWatchNodes int
	// Clock stamps health reports (default time.Now).
	Clock func() time.Time
	// Logger receives debug lines (default: discard).
	Logger *slog.Logger
	// Once lists every resource once instead of running informers (a
	// one-shot report): no watches, no probes, no freshness loop. Each
	// part's health is ok, not-installed, forbidden or error as of its
	// list, made just now.
	Once bool
	// PageSize pages Once's lists when > 0 (default ListPageSize: one
	// request each).
	PageSize int64
	// LockEvents watches the Events rebootwatch records when it releases
	// or reaps a lock, to say who freed it (lockevents.go). Not with Once.
	LockEvents bool
}

// ListPageSize is the default page size of a one-shot list: 0, one request.
// The node list is decoded as it streams (nodeproto.go), so a page bounds
// nothing on this side, while every continue page is one more round trip,
// one after the other (measured in docs/performance.md). Options.PageSize
// > 0 pages.
const ListPageSize = 0

// ParseDaemonSetRef parses "namespace/name".
func ParseDaemonSetRef(s string) (ns, name string, err error) {
	ns, name, ok := strings.Cut(s, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return "", "", fmt.Errorf("kured DaemonSet %q: want namespace/name", s)
	}
	return ns, name, nil
}

// Source runs the informers. Stop it by cancelling the context given to Start.
type Source struct {
	opts  Options
	log   *slog.Logger
	mu    sync.Mutex // serialises calls to sink
	sink  sources.Sink
	parts []*part

	kuredDaemonSetRefs []kured.DaemonSetRef        // --kured-daemonset's DaemonSets (none: discovered)
	kured              map[string]model.LockRef    // uid -> ref of each DaemonSet reported as kured (the selected ones: a node pool each)
	kuredCands         map[string]*kured.Candidate // uid -> DaemonSets that may be kured's, as judged (kured.go)
	kuredCfgs          []KuredSettings             // kured's settings, from each selected kured DaemonSet, by namespace/name
	kuredGen           uint64                      // readings of kured's DaemonSets made, in order (podSource.kuredState)
	fleet              map[string]bool             // namespace/name of fleetlock Leases reported
	pods               *podSource                  // pods of cordoned nodes and kured's blocking pods (pods.go)
	ctx                context.Context             // Start's: the pod watches started later run under it

	wg sync.WaitGroup // every goroutine Start started
}

// part is one informer with its health.
type part struct {
	name     model.SourceName
	resource string // for messages, e.g. "leases.coordination.k8s.io"
	ns       string
	rep      *sources.Reporter
	hint     string // appended to a forbidden message
	inf      cache.SharedIndexInformer
	reg      cache.ResourceEventHandlerRegistration
	// probe is a cheap quorum read of the part's resource (limit=1).
	probe func(context.Context) error
	// audit compares the informer's cache with a quorum list (audit.go);
	// nil for a one-shot read.
	audit *sources.Audit
	// list, transform and handler serve Once (no informer then).
	list func(context.Context, metav1.ListOptions) (runtime.Object, error)
	// listPage, when set, serves Once instead of list and transform: one
	// page's objects, already transformed, and the continue token.
	listPage  func(context.Context, metav1.ListOptions) ([]any, string, error)
	transform cache.TransformFunc
	handler   cache.ResourceEventHandler

	refreshMu sync.Mutex // keeps status decisions and their reports in order

	mu     sync.Mutex
	synced bool // the initial sync was delivered
	failed bool // the last list/watch failed
	heard  time.Time
	stale  bool // reported stale; hearing again re-reports its status
	// whenSynced decides the status once synced (e.g. not-installed when
	// empty); "" when it cannot tell yet (the part stays unsettled).
	whenSynced func() (model.SourceStatus, string)
}

// Start validates the options, starts the informers and returns at once.
// Events and health go to sink until ctx is cancelled.
func Start(ctx context.Context, o Options, sink sources.Sink) (*Source, error) {
	if o.Client == nil {
		return nil, errors.New("kube source: no client")
	}
	if sink == nil {
		return nil, errors.New("kube source: no sink")
	}
	if o.FleetlockNamespace == "" {
		o.FleetlockNamespace = DefaultFleetlockNamespace
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = sources.DefaultRequestTimeout
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.StaleAfter <= 0 {
		o.StaleAfter = sources.DefaultStaleAfter
	}
	if o.ProbeInterval <= 0 {
		o.ProbeInterval = sources.DefaultProbeInterval
	}
	if o.AuditInterval <= 0 {
		o.AuditInterval = sources.DefaultAuditInterval
	}
	s := &Source{opts: o, log: o.Logger, sink: sink, kured: map[string]model.LockRef{}, kuredCands: map[string]*kured.Candidate{}, fleet: map[string]bool{}, ctx: ctx}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.pods = newPodSource(s)
	named, err := kured.ParseDaemonSets(o.KuredDaemonSet)
	if err != nil {
		return nil, err
	}
	s.kuredDaemonSetRefs = named
	cs := o.Client

	// Nodes. On a real apiserver the informer's list and watch read the
	// protobuf straight into *Node (nodewatch.go), or, once the server
	// answered that it sends none, take JSON through the typed client into
	// *Node; a fake clientset (the demo) goes through the typed client, and
	// TransformNode strips each *corev1.Node before it enters the cache.
	var (
		nodeExample runtime.Object = &corev1.Node{}
		nodeList                   = func(ctx context.Context, lo metav1.ListOptions) (runtime.Object, error) {
			return cs.CoreV1().Nodes().List(ctx, lo)
		}
		nodeWatch = func(ctx context.Context, lo metav1.ListOptions) (watch.Interface, error) {
			return cs.CoreV1().Nodes().Watch(ctx, lo)
		}
	)
	rc := nodeListREST(cs)
	var rn restNodes
	if rc != nil {
		rn = newRESTNodes(rc, cs)
		nodeExample, nodeList, nodeWatch = &Node{}, rn.List, rn.Watch
	}
	nodes := s.newPart(model.SourceNodes, "nodes", "", nodeExample, TransformNode, nodeList, nodeWatch)
	nodes.whenSynced = func() (model.SourceStatus, string) { return model.StatusOK, "" }
	s.audit(nodes, auditTarget{what: "node", rc: rc, resource: "nodes", kind: "NodeList"})
	if o.Once && rc != nil {
		// A real apiserver: pages are read straight into the model's
		// nodes as they stream in (nodeproto.go), never decoded whole; a
		// server that sends no protobuf is read through the typed client.
		nodes.listPage = func(ctx context.Context, lo metav1.ListOptions) ([]any, string, error) {
			if rn.useTyped() {
				return listNodesTyped(ctx, rn, lo)
			}
			objs, cont, err := listNodesProto(ctx, rc, lo)
			if err != nil && rn.fallBack(err) {
				return listNodesTyped(ctx, rn, lo)
			}
			return objs, cont, err
		}
	}
	s.handle(nodes, cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			switch n := obj.(type) {
			case *corev1.Node:
				s.send(model.NodeUpserted{Node: NodeToModel(n)})
				s.pods.nodeSeen(n.Name, n.Spec.Unschedulable)
			case *Node: // a real apiserver's, from restNodes
				s.send(model.NodeUpserted{Node: cloneNode(&n.Model)})
				s.pods.nodeSeen(n.Name, n.Model.Unschedulable)
			case *model.Node: // Once, from DecodeNodeList
				s.send(model.NodeUpserted{Node: *n})
				s.pods.nodeSeen(n.Name, n.Unschedulable)
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			if n, ok := newObj.(*Node); ok {
				s.pods.nodeSeen(n.Name, n.Model.Unschedulable)
				if o, ok := oldObj.(*Node); ok && sameNode(&o.Model, &n.Model) {
					return
				}
				s.send(model.NodeUpserted{Node: cloneNode(&n.Model)})
				return
			}
			o, ok1 := oldObj.(*corev1.Node)
			n, ok2 := newObj.(*corev1.Node)
			if !ok2 {
				return
			}
			s.pods.nodeSeen(n.Name, n.Spec.Unschedulable)
			mn := NodeToModel(n)
			if ok1 {
				if mo := NodeToModel(o); sameNode(&mo, &mn) {
					return
				}
			}
			s.send(model.NodeUpserted{Node: mn})
		},
		DeleteFunc: func(obj any) {
			switch n := unwrap(obj).(type) {
			case *Node:
				s.send(model.NodeDeleted{Name: n.Name})
				s.pods.nodeSeen(n.Name, false)
			case *corev1.Node:
				s.send(model.NodeDeleted{Name: n.Name})
				s.pods.nodeSeen(n.Name, false)
			}
		},
	})

	// One informer per registered lock kind, each in its own file.
	for _, d := range kinds.LockDrivers() {
		k := d.Kind()
		if why, off := o.Disabled[k]; off {
			s.send(model.SourceChanged{Health: model.SourceHealth{Name: d.Source(), Status: model.StatusDisabled, Message: why}})
			continue
		}
		startKind, ok := lockSources[k]
		if !ok {
			return nil, fmt.Errorf("kube source: lock kind %q is registered but has no source in sources/kube", k)
		}
		startKind(s)
	}
	startPDBs(s)

	if o.Once {
		for _, p := range s.parts {
			s.wg.Go(func() { s.listOnce(ctx, p) })
		}
		// The pods of cordoned nodes and kured's blocking pods come from
		// narrow watches started as the lists are handed over; their
		// source settles once those delivered their first list.
		s.pods.start(ctx, s.parts...)
		return s, nil
	}
	for _, p := range s.parts {
		s.wg.Go(func() { p.inf.RunWithContext(ctx) })
		s.wg.Go(func() { s.awaitSync(ctx, p) })
		s.wg.Go(func() {
			sources.ProbeLoop(ctx, o.ProbeInterval, o.RequestTimeout, p.probe, func() { s.heard(p) })
		})
	}
	s.wg.Go(func() { s.watchFreshness(ctx) })
	s.pods.start(ctx, s.parts...)
	if o.LockEvents {
		s.startLockEvents(ctx)
	}
	return s, nil
}

// lockSources starts the informer of each lock kind; every kind's file
// (kured.go, fleetlock.go) adds itself here.
var lockSources = map[model.LockKind]func(s *Source){}

// Wait returns once every goroutine of the source has ended: call it after
// cancelling Start's context, so nothing of the source outlives its owner.
func (s *Source) Wait() { s.wg.Wait() }

// heard records that p heard from the API server now. It only stamps the
// time (it runs inside the informer's queue, via the transform): the
// freshness loop reports the change.
func (s *Source) heard(p *part) {
	now := s.opts.Clock()
	p.mu.Lock()
	if now.After(p.heard) {
		p.heard = now
	}
	p.mu.Unlock()
}

// watchFreshness reports a synced, healthy part stale (with its age) while
// it has not heard from the API server for StaleAfter or its audit finds
// the watch behind the server, and its status again once it hears and the
// watch delivers.
func (s *Source) watchFreshness(ctx context.Context) {
	t := time.NewTicker(min(sources.CheckEvery(s.opts.StaleAfter), sources.CheckEvery(s.opts.AuditInterval)))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for _, p := range s.parts {
			s.checkFresh(ctx, p)
		}
	}
}

func (s *Source) checkFresh(ctx context.Context, p *part) {
	var lag sources.Lag
	if p.audit != nil {
		lag = p.audit.Lag()
	}
	now := s.opts.Clock()
	p.mu.Lock()
	heard := p.heard
	age := now.Sub(heard)
	healthy := p.synced && !p.failed
	wasStale := p.stale
	silent := age > s.opts.StaleAfter
	p.stale = healthy && (silent || lag.Behind())
	nowStale := p.stale
	p.mu.Unlock()
	switch {
	case ctx.Err() != nil:
	case nowStale:
		since, msg := heard, sources.StaleMessage(age, s.opts.StaleAfter)
		if !silent {
			since, msg = lag.Since, lag.Message(now)
		}
		p.refreshMu.Lock()
		p.rep.Stale(since, msg)
		p.refreshMu.Unlock()
	case wasStale:
		s.refresh(p)
	}
}

// send passes one event to the sink, one at a time.
func (s *Source) send(ev model.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sink(ev)
}

func (s *Source) newPart(name model.SourceName, resource, ns string, example runtime.Object, transform cache.TransformFunc,
	list func(context.Context, metav1.ListOptions) (runtime.Object, error),
	watchFn func(context.Context, metav1.ListOptions) (watch.Interface, error)) *part {
	p := &part{name: name, resource: resource, ns: ns, list: list, transform: transform}
	p.rep = sources.NewReporter(name, 0, s.send, s.opts.Clock)
	s.parts = append(s.parts, p)
	if s.opts.Once {
		return p
	}
	p.probe = func(ctx context.Context) error {
		_, err := list(ctx, metav1.ListOptions{Limit: 1})
		return err
	}
	// Every object the informer receives is word from the server.
	heardTransform := func(obj any) (any, error) {
		s.heard(p)
		return transform(obj)
	}
	lw := &sources.ListWatch{Client: s.opts.Client, Timeout: s.opts.RequestTimeout, ListFunc: list, WatchFunc: watchFn,
		OnResult: func(verb string, err error) { s.onResult(p, verb, err) }}
	p.inf = cache.NewSharedIndexInformerWithOptions(lw, example, cache.SharedIndexInformerOptions{
		ObjectDescription: resource,
	})
	if err := p.inf.SetTransform(heardTransform); err != nil {
		panic(err) // only fails once started
	}
	// Failures are reported as health by OnResult; client-go's default
	// handler would also print them to stderr (under a TUI).
	_ = p.inf.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *cache.Reflector, err error) {
		s.log.Debug("watch ended", "source", name, "err", err)
	})
	return p
}

func (s *Source) handle(p *part, h cache.ResourceEventHandler) {
	if s.opts.Once {
		p.handler = h
		return
	}
	reg, err := p.inf.AddEventHandler(h)
	if err != nil {
		panic(err) // only fails once stopped
	}
	p.reg = reg
}

// onResult turns the outcome of a list or watch call into health.
func (s *Source) onResult(p *part, verb string, err error) {
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return // shutting down
		}
		p.mu.Lock()
		p.failed = true
		p.mu.Unlock()
		s.log.Debug("source request failed", "source", p.name, "verb", verb, "err", err)
		st, msg := sources.Classify(verb, p.resource, p.ns, err)
		if st == model.StatusForbidden && p.hint != "" {
			msg += "; " + p.hint
		}
		p.rep.Set(st, msg)
		return
	}
	p.mu.Lock()
	recovered := p.failed && p.synced
	p.failed = false
	p.mu.Unlock()
	if recovered {
		s.refresh(p)
	}
	s.heard(p)
}

// refresh re-reports a synced, healthy part's status (ok or not-installed).
func (s *Source) refresh(p *part) {
	p.refreshMu.Lock()
	defer p.refreshMu.Unlock()
	p.mu.Lock()
	ok := p.synced && !p.failed && !p.stale
	p.mu.Unlock()
	if !ok {
		return
	}
	s.mu.Lock()
	st, msg := p.whenSynced()
	s.mu.Unlock()
	if st == "" {
		return // not decided yet: the part refreshes again when it is
	}
	if st == model.StatusOK {
		p.rep.OK(msg)
	} else {
		p.rep.Set(st, msg)
	}
}

// awaitSync reports a part once its handler has seen the initial list.
//
// A part that has neither synced nor failed within the request timeout (a
// hung initial stream, say) is reported as an error meanwhile, so no source
// stays silent: it turns ok when the sync completes.
func (s *Source) awaitSync(ctx context.Context, p *part) {
	timer := time.AfterFunc(s.opts.RequestTimeout, func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		select {
		case <-p.rep.Settled():
			return // it said something already
		default:
		}
		if !p.synced && ctx.Err() == nil {
			p.rep.Set(model.StatusError, fmt.Sprintf("no initial sync of %s within %s (still trying)", p.resource, s.opts.RequestTimeout))
		}
	})
	defer timer.Stop()
	// The registration's Done channel, not cache.WaitForCacheSync: that
	// polls from a goroutine of its own, which outlives ctx for a moment
	// and would outlive Session.Close.
	select {
	case <-p.reg.HasSyncedChecker().Done():
	case <-ctx.Done():
		return
	}
	p.mu.Lock()
	p.synced = true
	p.failed = false
	p.heard = s.opts.Clock()
	p.mu.Unlock()
	s.refresh(p)
	if p.audit != nil {
		p.audit.Run(ctx) // until ctx ends
	}
}

// listOnce lists p's resource once (one request, or pages when
// Options.PageSize says so) and hands every object (as its informer's
// transform would keep it) to p's handler once the whole list arrived;
// then reports p's status. A failed list hands over nothing
// and reports why: a partial list is never a picture.
func (s *Source) listOnce(ctx context.Context, p *part) {
	limit := s.opts.PageSize
	if limit <= 0 {
		limit = ListPageSize
	}
	var objs []any
	lo := metav1.ListOptions{Limit: limit}
	for {
		lctx, cancel := context.WithTimeout(ctx, s.opts.RequestTimeout)
		page, next, err := s.listPage(lctx, p, lo)
		cancel()
		if apierrors.IsResourceExpired(err) && lo.Continue != "" {
			// The continue token expired between pages: list again, whole.
			objs, lo = nil, metav1.ListOptions{}
			continue
		}
		if err != nil {
			s.onResult(p, "list", err)
			return
		}
		objs = append(objs, page...)
		if next == "" {
			break
		}
		lo.Continue = next
	}
	if ctx.Err() != nil {
		return
	}
	for _, o := range objs {
		p.handler.OnAdd(o, true)
	}
	p.mu.Lock()
	p.synced, p.failed = true, false
	p.heard = s.opts.Clock()
	p.mu.Unlock()
	s.refresh(p)
}

// listPage lists one page of p's resource: its objects as p's transform
// keeps them, and the continue token.
func (s *Source) listPage(ctx context.Context, p *part, lo metav1.ListOptions) ([]any, string, error) {
	if p.listPage != nil {
		return p.listPage(ctx, lo)
	}
	list, err := p.list(ctx, lo)
	if err != nil {
		return nil, "", err
	}
	var objs []any
	err = meta.EachListItem(list, func(o runtime.Object) error {
		t, err := p.transform(o)
		if err != nil {
			return err
		}
		objs = append(objs, t)
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	lm, err := meta.ListAccessor(list)
	if err != nil {
		return objs, "", nil
	}
	return objs, lm.GetContinue(), nil
}

// WaitForSync waits until every informer has synced or reported why it
// cannot (error, forbidden), or ctx ends. It does not wait for a failing
// informer to recover: its health says what is wrong.
func (s *Source) WaitForSync(ctx context.Context) error {
	reps := make([]*sources.Reporter, 0, len(s.parts)+1)
	for _, p := range s.parts {
		reps = append(reps, p.rep)
	}
	reps = append(reps, s.pods.rep)
	for _, rep := range reps {
		select {
		case <-rep.Settled():
		case <-ctx.Done():
			var waiting []string
			for _, r := range reps {
				select {
				case <-r.Settled():
				default:
					waiting = append(waiting, string(r.Health().Name))
				}
			}
			return fmt.Errorf("kube source: %s not synced: %w", strings.Join(waiting, ", "), ctx.Err())
		}
	}
	return nil
}

// Health returns the current health of the nodes, kured, fleetlock, pdbs
// and pods sources.
func (s *Source) Health() []model.SourceHealth {
	out := make([]model.SourceHealth, 0, len(s.parts)+1)
	for _, p := range s.parts {
		out = append(out, p.rep.Health())
	}
	return append(out, s.pods.rep.Health())
}

func unwrap(obj any) any {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return d.Obj
	}
	return obj
}
