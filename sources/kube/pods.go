package kube

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/rebootwatch/rebootwatch/model"
	"github.com/rebootwatch/rebootwatch/sources"
)

// This file is the pod source (issue 15). It never watches every pod of the
// cluster. It runs two kinds of narrow watches:
//
//   - the pods of each cordoned node (a node being drained, rebooting, or
//     left cordoned) and of each node that holds kured's lock (kured's own
//     pod on it: did it come back after the reboot, since when): a watch
//     field-selected on spec.nodeName, started when the node is seen
//     cordoned or holding and stopped when it is neither or deleted (at
//     most Options.MaxPodWatchNodes nodes at once, by name);
//   - the pods matching each of kured's --blocking-pod-selector values (read
//     from its DaemonSet): a watch label-selected on the selector and
//     field-selected on kured's own phase filter
//     (status.phase!=Succeeded,status.phase!=Failed,status.phase!=Unknown),
//     cluster-wide, because kured checks that selector on whichever node
//     wants to reboot (kured pkg/blockers/kubernetespod.go, which lists
//     pods with spec.nodeName=<node> plus the same filters);
//   - where kured runs as several DaemonSets (one per node pool), the pods
//     of each: a watch in the DaemonSet's namespace label-selected on its
//     spec.selector, of which only the pods whose controller is that
//     DaemonSet's UID count; their nodes are its pool (model.LockScopeSet).
//
// Their health is one source, "pods": a list of one pod every probe
// interval says whether pods can be read at all (forbidden is visible from
// the start, before any node drains), and each watch's failures are added.
// A watch whose audit finds it behind the server makes it stale
// (pods_audit.go).

// DefaultMaxPodWatchNodes bounds the cordoned nodes whose pods are watched.
const DefaultMaxPodWatchNodes = 20

// kuredPodPhases is kured's field selector on the phase of blocking pods.
const kuredPodPhases = "status.phase!=Succeeded,status.phase!=Failed,status.phase!=Unknown"

// mirrorAnnotation marks a static pod's mirror.
const mirrorAnnotation = corev1.MirrorPodAnnotationKey

// podSource runs the node and selector pod watches and reports their health.
// Lock order: mu, then a watch's mu, then Source.mu (send).
type podSource struct {
	s   *Source
	rep *sources.Reporter
	max int

	mu        sync.Mutex
	cordoned  map[string]bool
	holders   []string                    // the nodes kured's lock names
	nodes     map[string]*podWatch        // node -> watch
	selectors []string                    // kured's selectors in force (nil: not read)
	selSent   bool                        // a BlockingSelectorsSet was sent
	sels      map[string]*podWatch        // selector -> watch (valid selectors only)
	pools     map[model.LockRef]*podWatch // kured DaemonSet -> the watch of its own pods (several pools only)
	invalid   map[string]string           // selector -> why it cannot be listed
	probeErr  error
	probed    bool
	probedCh  chan struct{} // closed once probed
	settled   bool          // the first picture was reported: health reports go out
	kuredGen  uint64        // the reading of kured's DaemonSets last applied (kuredState)
}

// podWatch is one narrow pod watch.
type podWatch struct {
	ps       *podSource
	node     string          // a node watch: the node
	pool     *KuredPool      // a pool watch: the kured DaemonSet whose pods are its pool
	selector string          // a selector watch: kured's selector as written
	sel      labels.Selector // and parsed
	cancel   context.CancelFunc
	inf      cache.SharedIndexInformer
	done     chan struct{} // closed once synced or failed (first picture or why not)

	mu        sync.Mutex
	synced    bool
	stopped   bool
	err       error  // the last list/watch failure, nil once a call succeeds
	errVerb   string // the call that failed
	last      []model.Pod
	lastNodes []string // a pool watch's last nodes sent
	sentAny   bool
	audit     *sources.Audit // compares the cache with a quorum list (pods_audit.go)
}

func newPodSource(s *Source) *podSource {
	limit := s.opts.MaxPodWatchNodes
	if limit <= 0 {
		limit = DefaultMaxPodWatchNodes
	}
	return &podSource{s: s, max: limit, cordoned: map[string]bool{}, nodes: map[string]*podWatch{},
		sels: map[string]*podWatch{}, pools: map[model.LockRef]*podWatch{}, invalid: map[string]string{}, probedCh: make(chan struct{}),
		rep: sources.NewReporter(model.SourcePods, 0, s.send, s.opts.Clock)}
}

// start runs the probe loop and the first report; the watches start as
// nodes and kured's DaemonSet are seen.
func (ps *podSource) start(ctx context.Context, waitFor ...*part) {
	s := ps.s
	cs := s.opts.Client
	probe := func(ctx context.Context) error {
		_, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{Limit: 1})
		return err
	}
	runProbe := func() {
		pctx, cancel := context.WithTimeout(ctx, s.opts.RequestTimeout)
		err := probe(pctx)
		cancel()
		if ctx.Err() != nil {
			return
		}
		ps.mu.Lock()
		if !ps.probed {
			close(ps.probedCh)
		}
		ps.probeErr, ps.probed = err, true
		ps.reportLocked()
		ps.mu.Unlock()
	}
	s.wg.Go(func() {
		runProbe()
		if s.opts.Once {
			return // a one-shot read probes once: nothing is kept fresh
		}
		t := time.NewTicker(s.opts.ProbeInterval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				runProbe()
			}
		}
	})
	s.wg.Go(func() { ps.settle(ctx, waitFor) })
	if !s.opts.Once {
		s.wg.Go(func() { ps.reportLags(ctx) })
	}
}

// settle reports the first picture once the nodes and kured's DaemonSet
// were read (so the watches they call for exist) and each of those watches
// delivered its first list or failed, so a one-shot snapshot sees the pods
// of nodes that were already cordoned. A watch that says nothing within the
// request timeout is reported as an error meanwhile.
func (ps *podSource) settle(ctx context.Context, waitFor []*part) {
	s := ps.s
	timer := time.AfterFunc(s.opts.RequestTimeout, func() {
		select {
		case <-ps.rep.Settled():
			return
		default:
		}
		if ctx.Err() == nil {
			ps.rep.Set(model.StatusError, fmt.Sprintf("no initial sync of pods within %s (still trying)", s.opts.RequestTimeout))
		}
	})
	defer timer.Stop()
	for _, p := range waitFor {
		select {
		case <-p.rep.Settled():
		case <-ctx.Done():
			return
		}
	}
	// The probe's answer, the moment it comes: waiting on its channel, not
	// polling, so a probe slower than every list holds the report no longer
	// than it takes.
	select {
	case <-ps.probedCh:
	case <-ctx.Done():
		return
	}
	// Then every watch that should run, including those started while
	// waiting (a node seen cordoned late): settled, and so ok, means each
	// has delivered its first list or failed.
	for {
		ps.mu.Lock()
		waits := ps.pendingLocked()
		if len(waits) == 0 {
			ps.settled = true
			ps.reportLocked()
			ps.mu.Unlock()
			return
		}
		ps.mu.Unlock()
		for _, d := range waits {
			select {
			case <-d:
			case <-ctx.Done():
				return
			}
		}
	}
}

// pendingLocked returns the done channels of the watches that have not
// delivered their first list nor failed yet. Called with ps.mu held.
func (ps *podSource) pendingLocked() []chan struct{} {
	var waits []chan struct{}
	for _, m := range []map[string]*podWatch{ps.nodes, ps.sels} {
		for _, w := range m {
			select {
			case <-w.done:
			default:
				waits = append(waits, w.done)
			}
		}
	}
	for _, w := range ps.pools {
		select {
		case <-w.done:
		default:
			waits = append(waits, w.done)
		}
	}
	return waits
}

// nodeSeen records whether a node is cordoned and starts or stops the watch
// of its pods.
func (ps *podSource) nodeSeen(name string, cordoned bool) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.cordoned[name] == cordoned {
		return
	}
	if cordoned {
		ps.cordoned[name] = true
	} else {
		delete(ps.cordoned, name)
	}
	ps.reconcileNodesLocked()
	ps.reportLocked()
}

// kuredState applies one reading of kured's DaemonSets (the Source's
// kuredGen, taken under its lock when the reading was made): the blocking
// selectors in force (with cfgKnown, whether any kured's configuration is
// or was read), the pools whose pods are watched and the nodes kured's
// locks name. Readings are made in order under the Source's lock but
// applied here after it is released (a send takes that lock), so two
// DaemonSet events on two informers' goroutines may arrive out of order:
// a reading older than the one applied is dropped, never let to undo it
// (a second pool's watch stopped by the first pool's older reading).
func (ps *podSource) kuredState(gen uint64, cfgKnown bool, selectors []string, pools []KuredPool, holders []string) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if gen <= ps.kuredGen {
		return
	}
	ps.kuredGen = gen
	// Once selectors were said, an unknown configuration says none; before
	// that, nothing is said until a configuration is read.
	if cfgKnown || ps.selSent {
		ps.kuredSelectorsLocked(selectors)
	}
	ps.kuredPoolsLocked(pools)
	ps.lockHoldersLocked(holders)
	ps.reportLocked()
}

// lockHoldersLocked records the nodes kured's lock names (of the one kured
// selected) and starts or stops the watch of their pods; the caller
// reports the source's health (kuredState, once for the three).
func (ps *podSource) lockHoldersLocked(nodes []string) {
	if slicesEqual(ps.holders, nodes) {
		return
	}
	ps.holders = append([]string(nil), nodes...)
	ps.reconcileNodesLocked()
}

// watchedNodes lists the nodes whose pods are wanted: cordoned, or
// holding kured's lock; sorted.
func (ps *podSource) watchedNodesLocked() []string {
	set := map[string]bool{}
	for n := range ps.cordoned {
		set[n] = true
	}
	for _, n := range ps.holders {
		set[n] = true
	}
	names := make([]string, 0, len(set))
	for n := range set {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func (ps *podSource) reconcileNodesLocked() {
	names := ps.watchedNodesLocked()
	want := map[string]bool{}
	for _, n := range names[:min(len(names), ps.max)] {
		want[n] = true
	}
	for n, w := range ps.nodes {
		if !want[n] {
			w.stop()
			delete(ps.nodes, n)
		}
	}
	for _, n := range names {
		if want[n] && ps.nodes[n] == nil && ps.s.ctx.Err() == nil {
			ps.nodes[n] = ps.startWatch(&podWatch{node: n})
		}
	}
}

// kuredSelectorsLocked sets kured's --blocking-pod-selector values in
// force (nil when kured's configuration is unknown or sets none) and starts
// or stops their watches.
func (ps *podSource) kuredSelectorsLocked(selectors []string) {
	if ps.selSent && slicesEqual(ps.selectors, selectors) {
		return
	}
	ps.selectors = append([]string(nil), selectors...)
	ps.selSent = true
	ps.s.send(model.BlockingSelectorsSet{Selectors: ps.selectors})
	want := map[string]bool{}
	for _, sel := range selectors {
		want[sel] = true
	}
	for sel, w := range ps.sels {
		if !want[sel] {
			w.stop()
			delete(ps.sels, sel)
		}
	}
	for sel := range ps.invalid {
		if !want[sel] {
			delete(ps.invalid, sel)
		}
	}
	for _, sel := range ps.selectors {
		if ps.sels[sel] != nil || ps.invalid[sel] != "" {
			continue
		}
		if why := unlistable(sel); why != "" {
			ps.invalid[sel] = why
			ps.s.send(model.BlockingPodsSet{Selector: sel, Err: why})
			continue
		}
		parsed, _ := labels.Parse(sel)
		if ps.s.ctx.Err() == nil {
			ps.sels[sel] = ps.startWatch(&podWatch{selector: sel, sel: parsed})
		}
	}
}

// KuredPool is one of several kured DaemonSets whose own pods' nodes are
// its node pool.
type KuredPool struct {
	Ref model.LockRef
	UID string
	// Selector is the DaemonSet's spec.selector ("" when unreadable).
	Selector string
}

// kuredPoolsLocked sets the kured DaemonSets whose pods are watched for
// their pools (none: a single kured, which answers for every node) and
// starts or stops their watches; a pool no longer watched has its scope
// forgotten.
func (ps *podSource) kuredPoolsLocked(pools []KuredPool) {
	want := map[model.LockRef]KuredPool{}
	for _, p := range pools {
		want[p.Ref] = p
	}
	for ref, w := range ps.pools {
		if p, ok := want[ref]; ok && *w.pool == p {
			continue
		}
		w.stop()
		delete(ps.pools, ref)
		ps.s.send(model.LockScopeSet{Ref: ref, Off: true})
	}
	for _, p := range pools {
		if ps.pools[p.Ref] != nil || ps.s.ctx.Err() != nil {
			continue
		}
		if p.Selector == "" {
			ps.s.send(model.LockScopeSet{Ref: p.Ref, Err: "its DaemonSet's spec.selector cannot be read, so neither can the pods it runs"})
			continue
		}
		parsed, err := labels.Parse(p.Selector)
		if err != nil {
			ps.s.send(model.LockScopeSet{Ref: p.Ref, Err: fmt.Sprintf("its DaemonSet's spec.selector %q: %v", p.Selector, err)})
			continue
		}
		pool := p
		ps.pools[p.Ref] = ps.startWatch(&podWatch{pool: &pool, sel: parsed})
	}
}

// unlistable says why kured cannot list the pods of a selector (and so
// blocks every reboot), or "" when it can. An empty selector is listed by
// kured and matches every pod of the node, kured's own among them: it is
// not watched here (that would be every pod of the cluster), it is said.
func unlistable(sel string) string {
	if strings.TrimSpace(sel) == "" {
		return "kured's --blocking-pod-selector is empty: it matches every pod on the node (kured's own pod too), so kured blocks every reboot"
	}
	if _, err := labels.Parse(sel); err != nil {
		return fmt.Sprintf("kured's --blocking-pod-selector %q is not a valid label selector (%v): kured's pod query fails and it blocks every reboot", sel, err)
	}
	return ""
}

func slicesEqual(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// startWatch starts a node or selector watch. Called with ps.mu held.
func (ps *podSource) startWatch(w *podWatch) *podWatch {
	s := ps.s
	cs := s.opts.Client
	w.ps = ps
	w.done = make(chan struct{})
	var ns, fieldSel, labelSel string
	switch {
	case w.node != "":
		fieldSel = fields.OneTermEqualSelector("spec.nodeName", w.node).String()
	case w.pool != nil:
		ns, labelSel = w.pool.Ref.Namespace, w.pool.Selector
	default:
		fieldSel, labelSel = kuredPodPhases, w.selector
	}
	opts := func(lo metav1.ListOptions) metav1.ListOptions {
		lo.FieldSelector, lo.LabelSelector = fieldSel, labelSel
		return lo
	}
	lw := &sources.ListWatch{Client: cs, Timeout: s.opts.RequestTimeout,
		ListFunc: func(ctx context.Context, lo metav1.ListOptions) (runtime.Object, error) {
			return cs.CoreV1().Pods(ns).List(ctx, opts(lo))
		},
		WatchFunc: func(ctx context.Context, lo metav1.ListOptions) (watch.Interface, error) {
			return cs.CoreV1().Pods(ns).Watch(ctx, opts(lo))
		},
		OnResult: func(verb string, err error) { ps.onResult(w, verb, err) },
	}
	w.inf = cache.NewSharedIndexInformerWithOptions(lw, &corev1.Pod{}, cache.SharedIndexInformerOptions{ObjectDescription: "pods"})
	if err := w.inf.SetTransform(TransformPod); err != nil {
		panic(err) // only fails once started
	}
	_ = w.inf.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *cache.Reflector, err error) {
		s.log.Debug("pod watch ended", "node", w.node, "selector", w.selector, "err", err)
	})
	reg, err := w.inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { w.publish() },
		UpdateFunc: func(any, any) { w.publish() },
		DeleteFunc: func(any) { w.publish() },
	})
	if err != nil {
		panic(err) // only fails once stopped
	}
	w.audit = ps.newPodAudit(w, ns, fieldSel, labelSel)
	ctx, cancel := context.WithCancel(s.ctx)
	w.cancel = cancel
	s.wg.Go(func() { w.inf.RunWithContext(ctx) })
	s.wg.Go(func() {
		select {
		case <-reg.HasSyncedChecker().Done():
		case <-ctx.Done():
			return
		}
		w.mu.Lock()
		w.synced = true
		w.mu.Unlock()
		w.publish()
		w.markDone()
		ps.mu.Lock()
		ps.reportLocked()
		ps.mu.Unlock()
		if w.audit != nil {
			w.audit.Run(ctx) // until the watch stops
		}
	})
	return w
}

func (w *podWatch) markDone() {
	w.mu.Lock()
	defer w.mu.Unlock()
	select {
	case <-w.done:
	default:
		close(w.done)
	}
}

// stop ends the watch; a node watch's pods are forgotten by the model.
// Called with ps.mu held.
func (w *podWatch) stop() {
	w.cancel()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
	if w.node != "" {
		w.ps.s.send(model.NodePodsSet{Node: w.node, Watched: false})
	}
	select {
	case <-w.done:
	default:
		close(w.done)
	}
}

// publish sends the watch's current pods once it has synced, when they
// changed. The store is read whole: a node holds at most a few hundred pods,
// and a blocking selector is meant to match few.
func (w *podWatch) publish() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.synced || w.stopped {
		return
	}
	if w.pool != nil {
		w.publishPool()
		return
	}
	var pods []model.Pod
	for _, obj := range w.inf.GetStore().List() {
		p, ok := obj.(*corev1.Pod)
		if !ok {
			continue
		}
		// The server filters already; this keeps a client that does not
		// (client-go's fake, under the demo) to the same answer.
		if w.node != "" && p.Spec.NodeName != w.node {
			continue
		}
		if w.sel != nil && !w.sel.Matches(labels.Set(p.Labels)) {
			continue
		}
		m := PodToModel(p)
		if w.sel != nil && !m.KuredBlockingPhase() {
			continue
		}
		pods = append(pods, m)
	}
	sort.Slice(pods, func(i, j int) bool { return pods[i].Key() < pods[j].Key() })
	if w.sentAny && reflect.DeepEqual(pods, w.last) {
		return
	}
	w.last, w.sentAny = pods, true
	if w.node != "" {
		w.ps.s.send(model.NodePodsSet{Node: w.node, Pods: pods, Watched: true})
	} else {
		w.ps.s.send(model.BlockingPodsSet{Selector: w.selector, Pods: pods})
	}
}

// publishPool sends the nodes of a pool watch: where a pod whose
// controller is the DaemonSet's UID is bound (a look-alike pod with the
// same labels, or one another DaemonSet owns, is not the pool's). Called
// with w.mu held, once synced.
func (w *podWatch) publishPool() {
	set := map[string]bool{}
	for _, obj := range w.inf.GetStore().List() {
		p, ok := obj.(*corev1.Pod)
		if !ok || p.Spec.NodeName == "" || !w.sel.Matches(labels.Set(p.Labels)) {
			continue
		}
		if c := metav1.GetControllerOf(p); c == nil || c.Kind != "DaemonSet" || string(c.UID) != w.pool.UID {
			continue
		}
		set[p.Spec.NodeName] = true
	}
	nodes := make([]string, 0, len(set))
	for n := range set {
		nodes = append(nodes, n)
	}
	sort.Strings(nodes)
	if w.sentAny && slicesEqual(nodes, w.lastNodes) {
		return
	}
	w.lastNodes, w.sentAny = nodes, true
	w.ps.s.send(model.LockScopeSet{Ref: w.pool.Ref, Nodes: nodes})
}

// onResult records the outcome of a watch's list or watch call. A selector
// watch that fails before its first list tells the model why its pods are
// unknown.
func (ps *podSource) onResult(w *podWatch, verb string, err error) {
	if err != nil && errors.Is(err, context.Canceled) {
		return // stopped
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	w.mu.Lock()
	if w.stopped {
		w.mu.Unlock()
		return
	}
	w.err = err
	if err != nil {
		w.errVerb = verb
	}
	failedFirst := err != nil && !w.synced && !w.stopped
	w.mu.Unlock()
	if failedFirst {
		switch {
		case w.selector != "":
			_, msg := sources.Classify(verb, "pods", "", err)
			ps.s.send(model.BlockingPodsSet{Selector: w.selector, Err: msg})
		case w.pool != nil:
			_, msg := sources.Classify(verb, "pods", w.pool.Ref.Namespace, err)
			ps.s.send(model.LockScopeSet{Ref: w.pool.Ref, Err: msg})
		}
		w.markDone()
	}
	ps.reportLocked()
}

// reportLocked reports the pod source's health: forbidden or error when the
// probe or a watch fails, else ok with what is watched once every watch
// has listed. A watch started since (a node cordoned now) holds the report
// until its list arrives or fails (a list that hangs fails at the request
// timeout): the model has the node's pods as unknown meanwhile, and the
// health does not flap on every cordon. Called with ps.mu held; silent
// until the first picture is settled.
func (ps *podSource) reportLocked() {
	if !ps.settled {
		return
	}
	worst, msg := model.StatusOK, ""
	consider := func(verb string, err error) {
		if err == nil {
			return
		}
		st, m := sources.Classify(verb, "pods", "", err)
		if st == model.StatusForbidden {
			m += "; cannot tell why a drain is slow"
		}
		if worst == model.StatusOK || (st == model.StatusForbidden && worst != model.StatusForbidden) {
			worst, msg = st, m
		}
	}
	consider("list", ps.probeErr)
	for _, n := range sortedWatchKeys(ps.nodes) {
		w := ps.nodes[n]
		w.mu.Lock()
		consider(w.errVerb, w.err)
		w.mu.Unlock()
	}
	for _, sel := range sortedWatchKeys(ps.sels) {
		w := ps.sels[sel]
		w.mu.Lock()
		consider(w.errVerb, w.err)
		w.mu.Unlock()
	}
	for _, w := range ps.pools {
		w.mu.Lock()
		consider(w.errVerb, w.err)
		w.mu.Unlock()
	}
	if worst != model.StatusOK {
		ps.rep.Set(worst, msg)
		return
	}
	if lag := ps.lagLocked(); lag.Behind() {
		ps.rep.Stale(lag.Since, lag.Message(ps.s.opts.Clock()))
		return
	}
	if len(ps.pendingLocked()) > 0 {
		return
	}
	ps.rep.OK(ps.summaryLocked())
}

// summaryLocked says what is watched, for the ok message.
func (ps *podSource) summaryLocked() string {
	var parts []string
	which := "cordoned"
	for _, name := range ps.watchedNodesLocked() {
		if !ps.cordoned[name] {
			which = "cordoned or lock-holding"
		}
	}
	switch n := len(ps.nodes); {
	case n == 1:
		for name := range ps.nodes {
			parts = append(parts, "pods of "+which+" node "+name)
		}
	case n > 1:
		parts = append(parts, fmt.Sprintf("pods of %d %s nodes", n, which))
	}
	if extra := len(ps.watchedNodesLocked()) - len(ps.nodes); extra > 0 {
		parts = append(parts, fmt.Sprintf("%d more %s node(s) not watched (at most %d)", extra, which, ps.max))
	}
	if n := len(ps.selectors); n > 0 {
		parts = append(parts, fmt.Sprintf("%d kured blocking selector(s)", n))
	}
	if n := len(ps.pools); n > 0 {
		parts = append(parts, fmt.Sprintf("kured's pods of %d node pools", n))
	}
	return strings.Join(parts, "; ")
}

func sortedWatchKeys(m map[string]*podWatch) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// TransformPod keeps of a Pod what the blockers need: identity, labels (PDB
// selectors), the mirror annotation, the controlling owner, the node, the
// phase, the Ready condition and a summary of the container statuses
// (states, restarts: a stalled kured pod). Containers, volumes and the rest
// of status are dropped.
func TransformPod(obj any) (any, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	out := &corev1.Pod{ObjectMeta: stripMeta(p.ObjectMeta)}
	out.Labels = p.Labels
	if v, ok := p.Annotations[mirrorAnnotation]; ok {
		out.Annotations = map[string]string{mirrorAnnotation: v}
	}
	if c := metav1.GetControllerOf(p); c != nil {
		out.OwnerReferences = []metav1.OwnerReference{{APIVersion: c.APIVersion, Kind: c.Kind, Name: c.Name, UID: c.UID, Controller: c.Controller}}
	}
	out.Spec.NodeName = p.Spec.NodeName
	out.Status.Phase = p.Status.Phase
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			out.Status.Conditions = []corev1.PodCondition{{Type: c.Type, Status: c.Status}}
		}
	}
	// Of the container statuses, what ContainerState keeps: the state's
	// kind, times and reason, the last termination and the restarts.
	for _, c := range p.Status.ContainerStatuses {
		out.Status.ContainerStatuses = append(out.Status.ContainerStatuses, corev1.ContainerStatus{
			State: keepState(c.State), LastTerminationState: keepState(c.LastTerminationState), RestartCount: c.RestartCount})
	}
	return out, nil
}

// keepState keeps of a container state its kind, start and end times,
// reason and exit code.
func keepState(st corev1.ContainerState) corev1.ContainerState {
	var out corev1.ContainerState
	if r := st.Running; r != nil {
		out.Running = &corev1.ContainerStateRunning{StartedAt: r.StartedAt}
	}
	if w := st.Waiting; w != nil {
		out.Waiting = &corev1.ContainerStateWaiting{Reason: w.Reason}
	}
	if t := st.Terminated; t != nil {
		out.Terminated = &corev1.ContainerStateTerminated{ExitCode: t.ExitCode, Reason: t.Reason, StartedAt: t.StartedAt, FinishedAt: t.FinishedAt}
	}
	return out
}

// containerState sums up a pod's container statuses.
func containerState(cs []corev1.ContainerStatus) model.ContainerState {
	var out model.ContainerState
	if len(cs) == 0 {
		return out
	}
	out.Reported, out.Running = true, true
	lastExit := func(t *corev1.ContainerStateTerminated) {
		if t == nil || t.FinishedAt.IsZero() || !t.FinishedAt.After(out.LastExit) {
			return
		}
		out.LastExit = t.FinishedAt.Time
		out.LastExitReason = t.Reason
		if t.ExitCode != 0 || t.Reason == "" {
			if out.LastExitReason != "" {
				out.LastExitReason += ", "
			}
			out.LastExitReason += "exit code " + strconv.Itoa(int(t.ExitCode))
		}
	}
	for _, c := range cs {
		out.Restarts += int(c.RestartCount)
		switch {
		case c.State.Running != nil:
			if t := c.State.Running.StartedAt.Time; t.After(out.StartedAt) {
				out.StartedAt = t
			}
		default:
			out.Running = false
			if w := c.State.Waiting; w != nil && out.Waiting == "" {
				out.Waiting = w.Reason
				if out.Waiting == "" {
					out.Waiting = "waiting"
				}
			}
		}
		lastExit(c.State.Terminated)
		lastExit(c.LastTerminationState.Terminated)
	}
	if !out.Running {
		out.StartedAt = time.Time{}
	}
	return out
}

// PodToModel converts a (transformed or full) Pod.
func PodToModel(p *corev1.Pod) model.Pod {
	m := model.Pod{Namespace: p.Namespace, Name: p.Name, Node: p.Spec.NodeName, Phase: string(p.Status.Phase),
		Labels: maps.Clone(p.Labels)}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			m.Ready = c.Status == corev1.ConditionTrue
		}
	}
	if c := metav1.GetControllerOf(p); c != nil {
		m.OwnerKind, m.OwnerName = c.Kind, c.Name
	}
	_, m.Mirror = p.Annotations[mirrorAnnotation]
	if p.DeletionTimestamp != nil {
		m.Deleting = p.DeletionTimestamp.Time
	}
	m.Containers = containerState(p.Status.ContainerStatuses)
	return m
}
