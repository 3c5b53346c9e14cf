package kube

import (
	"context"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/rebootwatch/rebootwatch/internal/coord/kured"
	"github.com/rebootwatch/rebootwatch/model"
)

// This file is the kured lock kind's source: kured's DaemonSet (found by
// --kured-daemonset, else discovered: the one DaemonSet that runs kured's
// image and whose kured names it as its lock's; never by a name, label or
// annotation alone), its lock annotation and kured's configuration from the
// DaemonSet's pod template. Only that DaemonSet's lock and settings are
// reported; several plausible ones are ambiguous and none is used.

func init() { lockSources[model.LockKured] = startKured }

func startKured(s *Source) {
	cs := s.opts.Client
	dsNS := s.kuredNS // "" = all namespaces
	var dsSelector string
	if s.kuredName != "" {
		dsSelector = fields.OneTermEqualSelector("metadata.name", s.kuredName).String()
	}
	dsPart := s.newPart(model.SourceKured, "daemonsets.apps", dsNS, &appsv1.DaemonSet{}, kured.Transform,
		func(ctx context.Context, lo metav1.ListOptions) (runtime.Object, error) {
			lo.FieldSelector = dsSelector
			return cs.AppsV1().DaemonSets(dsNS).List(ctx, lo)
		},
		func(ctx context.Context, lo metav1.ListOptions) (watch.Interface, error) {
			lo.FieldSelector = dsSelector
			return cs.AppsV1().DaemonSets(dsNS).Watch(ctx, lo)
		})
	s.audit(dsPart, auditTarget{what: "DaemonSet", rc: restOf(cs.AppsV1().RESTClient()), resource: "daemonsets",
		kind: "DaemonSetList", ns: dsNS, lo: metav1.ListOptions{FieldSelector: dsSelector}})
	if s.kuredName == "" {
		dsPart.hint = "pass --kured-daemonset namespace/name to read only kured's"
	}
	dsPart.whenSynced = func() (model.SourceStatus, string) { return s.kuredStatus() }
	s.handle(dsPart, cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { s.onDaemonSet(dsPart, obj, false) },
		UpdateFunc: func(_, obj any) { s.onDaemonSet(dsPart, obj, false) },
		DeleteFunc: func(obj any) { s.onDaemonSet(dsPart, unwrap(obj), true) },
	})
}

// onDaemonSet judges a DaemonSet added, changed or deleted, selects kured's
// among the candidates, and reports the selected one's lock (and takes its
// settings: lock annotation, blocking selectors, Prometheus, window); a lock
// reported before and no longer selected is deleted.
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
	} else if s.kuredName != "" {
		if d.Namespace == s.kuredNS && d.Name == s.kuredName {
			// Named by the operator: trusted as kured's, whatever it runs.
			l := kured.LockOf(d)
			c := kured.Candidate{Ref: l.LockRef, Lock: l, Plausible: true}
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
	prevCfg := s.kuredCfg
	sel := s.selectedKured()
	for u, ref := range s.kured {
		if sel == nil || u != sel.uid {
			delete(s.kured, u)
			s.sink(model.LockDeleted{Ref: ref})
		}
	}
	s.kuredCfg, s.kuredCfgOf = nil, ""
	var holders []string
	if sel != nil {
		holders = kured.Holders(sel.c.Lock)
		if _, reported := s.kured[sel.uid]; !reported || sel.uid == uid {
			s.sink(model.LockUpserted{Lock: sel.c.Lock})
		}
		s.kured[sel.uid] = sel.c.Ref
		if sel.c.Config != nil {
			s.kuredCfg, s.kuredCfgOf = sel.c.Config, sel.c.Ref.Namespace+"/"+sel.c.Ref.Name
		}
	}
	var selectors []string
	if s.kuredCfg != nil {
		selectors = s.kuredCfg.BlockingPodSelectors
	}
	cfgNow := s.kuredCfg
	s.mu.Unlock()
	if cfgNow != nil || prevCfg != nil {
		s.pods.kuredSelectors(selectors)
	}
	s.pods.lockHolders(holders)
	if had || has {
		s.refresh(p)
	}
}

// selectedKured is the one plausible kured (nil when none, or several).
// Call with s.mu held.
func (s *Source) selectedKured() *struct {
	uid string
	c   *kured.Candidate
} {
	var out *struct {
		uid string
		c   *kured.Candidate
	}
	for uid, c := range s.kuredCands {
		if !c.Plausible {
			continue
		}
		if out != nil {
			return nil
		}
		out = &struct {
			uid string
			c   *kured.Candidate
		}{uid, c}
	}
	return out
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
	case len(plausible) == 0 && s.kuredName != "":
		// Named by the operator: absent means the lock cannot be read (a
		// typo, another namespace), not that there is none.
		return model.StatusError, fmt.Sprintf("DaemonSet %s/%s not found (named by --kured-daemonset)", s.kuredNS, s.kuredName)
	case len(plausible) > 1:
		return model.StatusError, fmt.Sprintf("ambiguous: %d DaemonSets run kured's image and name themselves as kured's lock (%s): which one is kured is not guessed — pass --kured-daemonset namespace/name",
			len(plausible), listOf(plausible, 5))
	case len(plausible) == 0 && len(withLock) > 0:
		return model.StatusError, fmt.Sprintf("no kured DaemonSet found, but %s carries a kured lock annotation: if it is kured's, pass --kured-daemonset namespace/name", listOf(withLock, 3))
	case len(plausible) == 0:
		msg := "no kured DaemonSet found"
		if ignored != "" {
			msg += "; " + ignored
		}
		return model.StatusNotInstalled, msg
	}
	if sel := s.selectedKured(); sel != nil && sel.c.Config != nil {
		if why := sel.c.Config.LockAnnotationProblem(); why != "" {
			return model.StatusError, "DaemonSet " + plausible[0] + ": " + why
		}
	}
	return model.StatusOK, ignored
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

// KuredConfig returns kured's settings as read from its DaemonSet (nil when
// no kured DaemonSet with a container was seen) and that DaemonSet's
// namespace/name.
func (s *Source) KuredConfig() (*kured.Config, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.kuredCfg, s.kuredCfgOf
}
