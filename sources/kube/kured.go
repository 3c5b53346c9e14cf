package kube

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/rebootwatch/rebootwatch/internal/coord/kured"
	"github.com/rebootwatch/rebootwatch/model"
	"github.com/rebootwatch/rebootwatch/sources"
)

// This file is the kured lock kind's source: kured's DaemonSets (those
// --kured-daemonset names, one informer each, listed by name in its
// namespace as a least-privilege Role allows; else discovered: each
// DaemonSet that runs kured's image and whose kured names it as its lock's;
// never by a name, label or annotation alone), their lock annotations and
// kured's configuration from each DaemonSet's pod template. kured may run as
// several DaemonSets, one per node pool, each with its own --ds-name and
// --lock-annotation: each is reported as a lock of its own, judged with its
// own settings, and the pods each owns say which nodes are its pool
// (pods.go, model.LockScopeSet) — always when the DaemonSets are named
// (another, unnamed pool may run beside them), else when there are
// several. A look-alike whose kured names another DaemonSet is not taken.

func init() { lockSources[model.LockKured] = startKured }

func startKured(s *Source) {
	if len(s.kuredDaemonSetRefs) == 0 {
		p := s.startKuredPart("", "")
		p.hint = "pass --kured-daemonset namespace/name to read only kured's"
		p.whenSynced = func() (model.SourceStatus, string) { return s.kuredStatus() }
		return
	}
	// Named: an informer per DaemonSet, and one health for the source (the
	// worst of theirs, each named) once each has said something.
	var merge *healthMerge
	if len(s.kuredDaemonSetRefs) > 1 {
		merge = newHealthMerge(s.kuredDaemonSetRefs, s.send)
	}
	for i, r := range s.kuredDaemonSetRefs {
		p := s.startKuredPart(r.Namespace, r.Name)
		if merge != nil {
			p.rep = sources.NewReporter(model.SourceKured, 0, merge.sink(i), s.opts.Clock)
		}
		p.whenSynced = func() (model.SourceStatus, string) { return s.kuredStatusNamed(r) }
	}
}

// startKuredPart starts the informer of kured's DaemonSets in ns ("" every
// namespace), only the one called name when name is given.
func (s *Source) startKuredPart(ns, name string) *part {
	cs := s.opts.Client
	var dsSelector string
	if name != "" {
		dsSelector = fields.OneTermEqualSelector("metadata.name", name).String()
	}
	dsPart := s.newPart(model.SourceKured, "daemonsets.apps", ns, &appsv1.DaemonSet{}, kured.Transform,
		func(ctx context.Context, lo metav1.ListOptions) (runtime.Object, error) {
			lo.FieldSelector = dsSelector
			return cs.AppsV1().DaemonSets(ns).List(ctx, lo)
		},
		func(ctx context.Context, lo metav1.ListOptions) (watch.Interface, error) {
			lo.FieldSelector = dsSelector
			return cs.AppsV1().DaemonSets(ns).Watch(ctx, lo)
		})
	s.audit(dsPart, auditTarget{what: "DaemonSet", rc: restOf(cs.AppsV1().RESTClient()), resource: "daemonsets",
		kind: "DaemonSetList", ns: ns, lo: metav1.ListOptions{FieldSelector: dsSelector}})
	s.handle(dsPart, cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { s.onDaemonSet(dsPart, obj, false) },
		UpdateFunc: func(_, obj any) { s.onDaemonSet(dsPart, obj, false) },
		DeleteFunc: func(obj any) { s.onDaemonSet(dsPart, unwrap(obj), true) },
	})
	return dsPart
}

// named reports whether the user named the DaemonSet ns/name.
func (s *Source) named(ns, name string) bool {
	for _, r := range s.kuredDaemonSetRefs {
		if r.Namespace == ns && r.Name == name {
			return true
		}
	}
	return false
}

// onDaemonSet judges a DaemonSet added, changed or deleted, selects
// kured's among the candidates (every plausible one: a node pool each), and
// reports each selected one's lock (and takes its settings: lock
// annotation, blocking selectors, Prometheus, window); a lock reported
// before and no longer selected is deleted.
func (s *Source) onDaemonSet(p *part, obj any, deleted bool) {
	d, ok := obj.(*appsv1.DaemonSet)
	if !ok {
		return
	}
	uid := string(d.UID)
	s.mu.Lock()
	_, had := s.kuredCands[uid]
	if deleted {
		delete(s.kuredCands, uid)
	} else if len(s.kuredDaemonSetRefs) > 0 {
		if s.named(d.Namespace, d.Name) {
			// Named by the operator: trusted as kured's, whatever it runs.
			l := kured.NamedLockOf(d)
			c := kured.Candidate{Ref: l.LockRef, Lock: l, Plausible: true, PodSelector: kured.PodSelector(d)}
			if spec, ok := l.Spec.(*kured.Spec); ok {
				c.Config, c.HasLock = spec.Config, spec.Present
			}
			s.kuredCands[uid] = &c
		}
	} else if c, ok := kured.Discover(d); ok {
		s.kuredCands[uid] = &c
	} else {
		delete(s.kuredCands, uid)
	}
	_, has := s.kuredCands[uid]
	prevCfg := len(s.kuredCfgs) > 0
	sel := s.selectedKured()
	chosen := map[string]bool{}
	for _, k := range sel {
		chosen[k.uid] = true
	}
	for u, ref := range s.kured {
		if !chosen[u] {
			delete(s.kured, u)
			s.sink(model.LockDeleted{Ref: ref})
		}
	}
	s.kuredCfgs = nil
	var holders []string
	var pools []KuredPool
	seenSel := map[string]bool{}
	var selectors []string
	for _, k := range sel {
		holders = append(holders, kured.Holders(k.c.Lock)...)
		if _, reported := s.kured[k.uid]; !reported || k.uid == uid {
			s.sink(model.LockUpserted{Lock: k.c.Lock})
		}
		s.kured[k.uid] = k.c.Ref
		if k.c.Config != nil {
			s.kuredCfgs = append(s.kuredCfgs, KuredSettings{Ref: k.c.Ref, Config: k.c.Config})
			for _, bs := range k.c.Config.BlockingPodSelectors {
				if !seenSel[bs] {
					seenSel[bs] = true
					selectors = append(selectors, bs)
				}
			}
		}
		pools = append(pools, KuredPool{Ref: k.c.Ref, UID: k.uid, Selector: k.c.PodSelector})
	}
	if len(pools) < 2 && len(s.kuredDaemonSetRefs) == 0 {
		// A single kured, discovered, answers for every node: discovery
		// read every kured there is (docs/coordinators.md, kured pools).
		// Named ones are scoped by their pods even alone: an unnamed pool
		// may run beside them.
		pools = nil
	}
	cfgNow := len(s.kuredCfgs) > 0
	s.kuredGen++
	gen := s.kuredGen
	s.mu.Unlock()
	s.pods.kuredState(gen, cfgNow || prevCfg, selectors, pools, holders)
	if had || has {
		s.refresh(p)
	}
}

// selectedKured lists the plausible kureds, by namespace/name: one per
// node pool. Call with s.mu held.
func (s *Source) selectedKured() []selectedKured {
	var out []selectedKured
	for uid, c := range s.kuredCands {
		if c.Plausible {
			out = append(out, selectedKured{uid, c})
		}
	}
	slices.SortFunc(out, func(a, b selectedKured) int {
		return strings.Compare(a.c.Ref.Namespace+"/"+a.c.Ref.Name, b.c.Ref.Namespace+"/"+b.c.Ref.Name)
	})
	return out
}

type selectedKured struct {
	uid string
	c   *kured.Candidate
}

// kuredStatus is the kured source's status once synced: which DaemonSet is
// kured's, or why none is.
func (s *Source) kuredStatus() (model.SourceStatus, string) {
	var plausible, others, withLock []string
	for _, c := range s.kuredCands {
		name := c.Ref.Namespace + "/" + c.Ref.Name
		if c.Plausible {
			plausible = append(plausible, name)
			continue
		}
		others = append(others, name+" ("+c.Why+")")
		if c.HasLock {
			withLock = append(withLock, name+" ("+c.Why+")")
		}
	}
	slices.Sort(plausible)
	slices.Sort(others)
	slices.Sort(withLock)
	ignored := ""
	if len(others) > 0 {
		ignored = "not taken as kured: " + listOf(others, 3)
	}
	switch {
	case len(plausible) == 0 && len(withLock) > 0:
		return model.StatusError, fmt.Sprintf("no kured DaemonSet found, but %s carries a kured lock annotation: if it is kured's, pass --kured-daemonset namespace/name", listOf(withLock, 3))
	case len(plausible) == 0:
		msg := "no kured DaemonSet found"
		if ignored != "" {
			msg += "; " + ignored
		}
		return model.StatusNotInstalled, msg
	}
	for _, k := range s.selectedKured() {
		if k.c.Config == nil {
			continue
		}
		if why := k.c.Config.LockAnnotationProblem(); why != "" {
			return model.StatusError, "DaemonSet " + k.c.Ref.Namespace + "/" + k.c.Ref.Name + ": " + why
		}
	}
	if len(plausible) > 1 {
		// kured's layout for node pools: a DaemonSet each, each its own
		// lock. Said, so that a second one nobody expected is seen.
		msg := fmt.Sprintf("%d kured DaemonSets, one lock each (node pools): %s", len(plausible), listOf(plausible, 5))
		if ignored != "" {
			msg += "; " + ignored
		}
		return model.StatusOK, msg
	}
	return model.StatusOK, ignored
}

// kuredStatusNamed is the status of the informer of a DaemonSet the user
// named, once synced: absent means its lock cannot be read (a typo,
// another namespace), not that there is none. Call with s.mu held.
func (s *Source) kuredStatusNamed(r kured.DaemonSetRef) (model.SourceStatus, string) {
	for _, c := range s.kuredCands {
		if c.Ref.Namespace != r.Namespace || c.Ref.Name != r.Name {
			continue
		}
		if c.Config != nil {
			if why := c.Config.LockAnnotationProblem(); why != "" {
				return model.StatusError, "DaemonSet " + r.String() + ": " + why
			}
		}
		return model.StatusOK, ""
	}
	return model.StatusError, fmt.Sprintf("DaemonSet %s not found (named by --kured-daemonset)", r)
}

// healthMerge is the one health of the kured source read as several named
// DaemonSets, an informer each: reported once each has said something, ok
// when each is, else the worst of theirs with each one's message (an
// unread pool is never hidden behind another's ok).
type healthMerge struct {
	mu    sync.Mutex
	named []kured.DaemonSetRef
	last  []*model.SourceHealth
	send  sources.Sink
}

func newHealthMerge(named []kured.DaemonSetRef, send sources.Sink) *healthMerge {
	return &healthMerge{named: named, last: make([]*model.SourceHealth, len(named)), send: send}
}

// sink is the reporter sink of the i-th named DaemonSet's informer.
func (m *healthMerge) sink(i int) sources.Sink {
	return func(ev model.Event) {
		sc, ok := ev.(model.SourceChanged)
		if !ok {
			m.send(ev)
			return
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		h := sc.Health
		m.last[i] = &h
		for _, l := range m.last {
			if l == nil {
				return // not every informer has said something yet
			}
		}
		m.send(model.SourceChanged{Health: m.combined()})
	}
}

// statusRank orders the statuses that are not ok, worst first: unread
// (error, forbidden) before stale before not-installed.
var statusRank = map[model.SourceStatus]int{model.StatusOK: 0, model.StatusNotInstalled: 1, model.StatusStale: 2, model.StatusForbidden: 3, model.StatusError: 4}

// combined is the source's health: the worst status of the informers',
// the messages of those at fault (each named; every one's when all are
// ok) and the oldest last sync. Call with m.mu held.
func (m *healthMerge) combined() model.SourceHealth {
	out := model.SourceHealth{Name: model.SourceKured, Status: model.StatusOK}
	names := make([]string, len(m.last))
	for i, h := range m.last {
		names[i] = m.named[i].String()
		if i == 0 || h.LastSync.Before(out.LastSync) {
			out.LastSync = h.LastSync
		}
		if statusRank[h.Status] > statusRank[out.Status] {
			out.Status = h.Status
		}
	}
	var msgs []string
	if out.Status == model.StatusOK {
		msgs = append(msgs, fmt.Sprintf("%d kured DaemonSets named, one lock each (node pools): %s", len(names), listOf(names, 5)))
	}
	for i, h := range m.last {
		if (out.Status == model.StatusOK || h.Status != model.StatusOK) && h.Message != "" {
			msgs = append(msgs, names[i]+": "+h.Message)
		}
	}
	out.Message = strings.Join(msgs, "; ")
	return out
}

func listOf(xs []string, n int) string {
	if len(xs) <= n {
		return strings.Join(xs, ", ")
	}
	return strings.Join(xs[:n], ", ") + fmt.Sprintf(" and %d more", len(xs)-n)
}

// WaitForKured waits until kured's DaemonSets were read (or why they could
// not be was reported), bounded by ctx: KuredConfig is then as of that
// read. It does not wait for the other parts (5,000 nodes, say).
func (s *Source) WaitForKured(ctx context.Context) error {
	for _, p := range s.parts {
		if p.name != model.SourceKured {
			continue
		}
		select {
		case <-p.rep.Settled():
		case <-ctx.Done():
			return fmt.Errorf("kube source: kured not synced: %w", ctx.Err())
		}
	}
	return nil
}

// KuredSettings is one kured DaemonSet's settings as read from it.
type KuredSettings struct {
	Ref    model.LockRef
	Config *kured.Config
}

// Of is the DaemonSet's namespace/name.
func (k KuredSettings) Of() string { return k.Ref.Namespace + "/" + k.Ref.Name }

// KuredConfigs returns the settings of each kured DaemonSet taken as
// kured's with a container (none when none was seen), by namespace/name:
// one per node pool where kured runs as several DaemonSets.
func (s *Source) KuredConfigs() []KuredSettings {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.kuredCfgs)
}
