package kube

import (
	"context"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/rebootwatch/rebootwatch/internal/lock"
	"github.com/rebootwatch/rebootwatch/model"
)

// This file is the kured lock kind's source: kured's DaemonSet (found by
// --kured-daemonset, else discovered: the one DaemonSet that runs kured's
// image and whose kured names it as its lock's; never by a name, label or
// annotation alone), its lock annotation and kured's configuration from the
// DaemonSet's pod template. Only that DaemonSet's lock and settings are
// reported; several plausible ones are ambiguous and none is used.

// KuredLockAnnotation is the DaemonSet annotation kured keeps its lock in by
// default (kured --lock-annotation changes it; the DaemonSet's own args say).
const KuredLockAnnotation = lock.KuredAnnotation

func init() { lockSources[model.LockKured] = startKured }

func startKured(s *Source) {
	cs := s.opts.Client
	dsNS := s.kuredNS // "" = all namespaces
	var dsSelector string
	if s.kuredName != "" {
		dsSelector = fields.OneTermEqualSelector("metadata.name", s.kuredName).String()
	}
	kured := s.newPart(model.SourceKured, "daemonsets.apps", dsNS, &appsv1.DaemonSet{}, TransformDaemonSet,
		func(ctx context.Context, lo metav1.ListOptions) (runtime.Object, error) {
			lo.FieldSelector = dsSelector
			return cs.AppsV1().DaemonSets(dsNS).List(ctx, lo)
		},
		func(ctx context.Context, lo metav1.ListOptions) (watch.Interface, error) {
			lo.FieldSelector = dsSelector
			return cs.AppsV1().DaemonSets(dsNS).Watch(ctx, lo)
		})
	s.audit(kured, auditTarget{what: "DaemonSet", rc: restOf(cs.AppsV1().RESTClient()), resource: "daemonsets",
		kind: "DaemonSetList", ns: dsNS, lo: metav1.ListOptions{FieldSelector: dsSelector}})
	if s.kuredName == "" {
		kured.hint = "pass --kured-daemonset namespace/name to read only kured's"
	}
	kured.whenSynced = func() (model.SourceStatus, string) { return s.kuredStatus() }
	s.handle(kured, cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { s.onDaemonSet(kured, obj, false) },
		UpdateFunc: func(_, obj any) { s.onDaemonSet(kured, obj, false) },
		DeleteFunc: func(obj any) { s.onDaemonSet(kured, unwrap(obj), true) },
	})
}

// kuredCand is a DaemonSet that may be kured's, as discovery judged it.
type kuredCand struct {
	ref  model.LockRef
	lock model.LockObject
	cfg  *lock.KuredConfig
	// plausible: it runs kured's image and kured's own --ds-namespace and
	// --ds-name name this DaemonSet (where kured keeps its lock); why says
	// what fails when not.
	plausible bool
	why       string
	// hasLock: it carries the lock annotation its kured would use.
	hasLock bool
}

// judgeKured judges a DaemonSet as kured's. ok is false for a DaemonSet
// that shows no sign of kured at all (not named, labelled, annotated or
// imaged as kured).
//
// A name, a label or the lock annotation can be given to any DaemonSet by
// anyone who may create one in some namespace; so can kured's image and
// arguments, but a DaemonSet whose kured keeps its lock elsewhere (its
// --ds-namespace/--ds-name name another DaemonSet, kube-system/kured by
// default) is not where kured's lock is. Only a DaemonSet that runs kured's
// image and whose kured names it is plausible.
func judgeKured(d *appsv1.DaemonSet) (kuredCand, bool) {
	l := DaemonSetToLock(d)
	c := kuredCand{ref: l.LockRef, lock: l}
	spec, _ := l.Spec.(*lock.KuredSpec)
	if spec != nil {
		c.cfg, c.hasLock = spec.Config, spec.Present
	}
	_, defaultLock := d.Annotations[KuredLockAnnotation]
	ct := lock.KuredContainer(&d.Spec.Template.Spec)
	image := ""
	if ct != nil {
		image = ct.Image
	}
	if !looksLikeKured(d) && !kuredImage(image) && !defaultLock && !c.hasLock {
		return c, false
	}
	switch {
	case !kuredImage(image):
		c.why = fmt.Sprintf("its image %q is not kured's", clip(image))
	case c.cfg == nil:
		c.why = "it has no container"
	case c.cfg.DSNamespace != d.Namespace || c.cfg.DSName != d.Name:
		c.why = fmt.Sprintf("its kured's --ds-namespace/--ds-name name %s/%s: kured keeps its lock there, not here", clip(c.cfg.DSNamespace), clip(c.cfg.DSName))
	default:
		c.plausible = true
	}
	return c, true
}

// kuredImage reports whether an image reference is kured's: its repository's
// last path component is "kured" (ghcr.io/kubereboot/kured:1.17.1,
// docker.io/weaveworks/kured, a mirror's …/kured@sha256:…).
func kuredImage(ref string) bool {
	if i := strings.Index(ref, "@"); i >= 0 {
		ref = ref[:i]
	}
	last := ref[strings.LastIndex(ref, "/")+1:]
	if i := strings.Index(last, ":"); i >= 0 {
		last = last[:i]
	}
	return last == "kured"
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
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
			l := DaemonSetToLock(d)
			c := kuredCand{ref: l.LockRef, lock: l, plausible: true}
			if spec, ok := l.Spec.(*lock.KuredSpec); ok {
				c.cfg, c.hasLock = spec.Config, spec.Present
			}
			s.kuredCands[uid] = &c
		}
	} else if c, ok := judgeKured(d); ok {
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
		holders = kuredHolders(sel.c.lock)
		if _, reported := s.kured[sel.uid]; !reported || sel.uid == uid {
			s.sink(model.LockUpserted{Lock: sel.c.lock})
		}
		s.kured[sel.uid] = sel.c.ref
		if sel.c.cfg != nil {
			s.kuredCfg, s.kuredCfgOf = sel.c.cfg, sel.c.ref.Namespace+"/"+sel.c.ref.Name
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
	c   *kuredCand
} {
	var out *struct {
		uid string
		c   *kuredCand
	}
	for uid, c := range s.kuredCands {
		if !c.plausible {
			continue
		}
		if out != nil {
			return nil
		}
		out = &struct {
			uid string
			c   *kuredCand
		}{uid, c}
	}
	return out
}

// kuredStatus is the kured source's status once synced: which DaemonSet is
// kured's, or why none is.
func (s *Source) kuredStatus() (model.SourceStatus, string) {
	var plausible, others, withLock []string
	for _, c := range s.kuredCands {
		name := c.ref.Namespace + "/" + c.ref.Name
		if c.plausible {
			plausible = append(plausible, name)
			continue
		}
		others = append(others, name+" ("+c.why+")")
		if c.hasLock {
			withLock = append(withLock, name+" ("+c.why+")")
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
	if sel := s.selectedKured(); sel != nil && sel.c.cfg != nil {
		if why := sel.c.cfg.LockAnnotationProblem(); why != "" {
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
func (s *Source) KuredConfig() (*lock.KuredConfig, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.kuredCfg, s.kuredCfgOf
}

// kuredConfigOf reads kured's configuration from a (full or transformed)
// DaemonSet; nil when it has no container.
func kuredConfigOf(d *appsv1.DaemonSet) *lock.KuredConfig {
	return lock.KuredConfigOf(&d.Spec.Template.Spec)
}

// TransformDaemonSet keeps a DaemonSet's identity, its kured lock annotation
// (the default one and the one kured's args name), the labels that identify
// kured, and of the pod template only kured's container's command, args and
// KURED_* environment (values of valueFrom variables are not kept); the rest
// of spec and status is dropped.
func TransformDaemonSet(obj any) (any, error) {
	d, ok := obj.(*appsv1.DaemonSet)
	if !ok {
		return obj, nil
	}
	out := &appsv1.DaemonSet{ObjectMeta: stripMeta(d.ObjectMeta)}
	keys := []string{KuredLockAnnotation}
	if c := kuredConfigOf(d); c != nil && c.LockAnnotation != KuredLockAnnotation {
		keys = append(keys, c.LockAnnotation)
	}
	for _, k := range keys {
		if v, ok := d.Annotations[k]; ok {
			if out.Annotations == nil {
				out.Annotations = map[string]string{}
			}
			out.Annotations[k] = v
		}
	}
	for _, k := range kuredLabels {
		if v, ok := d.Labels[k]; ok {
			if out.Labels == nil {
				out.Labels = map[string]string{}
			}
			out.Labels[k] = v
		}
	}
	if c := lock.KuredContainer(&d.Spec.Template.Spec); c != nil {
		k := corev1.Container{Name: c.Name, Image: c.Image, Command: c.Command, Args: c.Args}
		for _, e := range c.Env {
			if strings.HasPrefix(e.Name, "KURED_") {
				ke := corev1.EnvVar{Name: e.Name, Value: e.Value}
				if e.ValueFrom != nil {
					ke.ValueFrom = &corev1.EnvVarSource{}
				}
				k.Env = append(k.Env, ke)
			}
		}
		out.Spec.Template.Spec.Containers = []corev1.Container{k}
	}
	return out, nil
}

// kuredLabels are labels whose value "kured" marks kured's DaemonSet (the
// Helm chart's and the plain manifest's).
var kuredLabels = []string{"app.kubernetes.io/name", "name", "app"}

// looksLikeKured reports whether a DaemonSet shows a sign of kured that
// anyone may give it — it carries the lock annotation, is named kured (or
// <release>-kured), or is labelled as kured — so that discovery lists it
// (judgeKured decides; none of these makes it kured's).
func looksLikeKured(d *appsv1.DaemonSet) bool {
	if _, ok := d.Annotations[KuredLockAnnotation]; ok {
		return true
	}
	if d.Name == "kured" || strings.HasSuffix(d.Name, "-kured") {
		return true
	}
	for _, k := range kuredLabels {
		if d.Labels[k] == "kured" {
			return true
		}
	}
	return false
}

// DaemonSetToLock converts kured's DaemonSet to a lock object, reading the
// annotation kured's own configuration names.
func DaemonSetToLock(d *appsv1.DaemonSet) model.LockObject {
	cfg := kuredConfigOf(d)
	key := KuredLockAnnotation
	if cfg != nil && cfg.LockAnnotation != "" {
		key = cfg.LockAnnotation
	}
	v, ok := d.Annotations[key]
	return model.LockObject{
		LockRef:         model.LockRef{Kind: model.LockKured, Namespace: d.Namespace, Name: d.Name},
		UID:             string(d.UID),
		ResourceVersion: d.ResourceVersion,
		Spec:            &lock.KuredSpec{Annotation: key, Value: v, Present: ok, Config: cfg},
	}
}

// kuredHolders lists the nodes a kured lock names (none when it is free or
// malformed): their pods are watched, for kured's own pod on a holder
// (issue 27: whether kured came back after the reboot, and since when).
func kuredHolders(l model.LockObject) []string {
	spec, ok := l.Spec.(*lock.KuredSpec)
	if !ok || spec == nil || !spec.Present {
		return nil
	}
	kl, err := lock.ParseKured(spec.Value)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range kl.Entries {
		if e.NodeID != "" && e.NodeID != lock.ManualHolder {
			out = append(out, e.NodeID)
		}
	}
	return out
}
