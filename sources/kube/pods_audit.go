package kube

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/rebootwatch/rebootwatch/sources"
)

// This file audits the pod watches (audit.go, sources.Audit): each node or
// selector watch's cache is compared with a quorum list of the same pods
// (the same field and label selectors), and a watch behind the server
// makes the pods source stale.

// newPodAudit returns the audit of a pod watch listing as its informer
// does (nil for a one-shot read).
func (ps *podSource) newPodAudit(w *podWatch, ns, fieldSel, labelSel string) *sources.Audit {
	s := ps.s
	cs := s.opts.Client
	return s.newAudit(w.inf.GetStore(), auditTarget{what: "pod", rc: restOf(cs.CoreV1().RESTClient()), resource: "pods",
		kind: "PodList", ns: ns, lo: metav1.ListOptions{FieldSelector: fieldSel, LabelSelector: labelSel},
		typed: func(ctx context.Context, lo metav1.ListOptions) (runtime.Object, error) {
			return cs.CoreV1().Pods(ns).List(ctx, lo)
		}})
}

// lagLocked returns the lag of the first watch (nodes, then selectors, by
// name) whose audit finds it behind the server. Called with ps.mu held.
func (ps *podSource) lagLocked() sources.Lag {
	for _, ws := range []map[string]*podWatch{ps.nodes, ps.sels} {
		for _, k := range sortedWatchKeys(ws) {
			w := ws[k]
			if w.audit == nil {
				continue
			}
			w.mu.Lock()
			healthy := w.synced && w.err == nil && !w.stopped
			w.mu.Unlock()
			if !healthy {
				continue
			}
			if lag := w.audit.Lag(); lag.Behind() {
				return lag
			}
		}
	}
	return sources.Lag{}
}

// reportLags re-reports the pod source's health every check interval, so
// that a watch found behind turns it stale (with the lag's age) and one
// that delivered again turns it back, until ctx ends.
func (ps *podSource) reportLags(ctx context.Context) {
	t := time.NewTicker(min(sources.CheckEvery(ps.s.opts.StaleAfter), sources.CheckEvery(ps.s.opts.AuditInterval)))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		ps.mu.Lock()
		ps.reportLocked()
		ps.mu.Unlock()
	}
}
