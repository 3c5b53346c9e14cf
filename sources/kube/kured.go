package kube

import (
	"context"
	"fmt"
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
// --kured-daemonset, else discovered), its lock annotation and kured's
// configuration from the DaemonSet's pod template.

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
	if s.kuredName == "" {
		kured.hint = "pass --kured-daemonset namespace/name to read only kured's"
	}
	kured.whenSynced = func() (model.SourceStatus, string) {
		if len(s.kured) == 0 {
			if s.kuredName != "" {
				// Named by the operator: absent means the lock cannot be
				// read (a typo, another namespace), not that there is none.
				return model.StatusError, fmt.Sprintf("DaemonSet %s/%s not found (named by --kured-daemonset)", s.kuredNS, s.kuredName)
			}
			return model.StatusNotInstalled, "no kured DaemonSet found"
		}
		return model.StatusOK, ""
	}
	s.handle(kured, cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { s.onDaemonSet(kured, obj) },
		UpdateFunc: func(_, obj any) { s.onDaemonSet(kured, obj) },
		DeleteFunc: func(obj any) {
			d, ok := unwrap(obj).(*appsv1.DaemonSet)
			if !ok {
				return
			}
			s.mu.Lock()
			ref, tracked := s.kured[string(d.UID)]
			delete(s.kured, string(d.UID))
			if tracked {
				s.sink(model.LockDeleted{Ref: ref})
			}
			s.mu.Unlock()
			if tracked {
				s.refresh(kured)
			}
		},
	})
}

func (s *Source) onDaemonSet(p *part, obj any) {
	d, ok := obj.(*appsv1.DaemonSet)
	if !ok {
		return
	}
	s.mu.Lock()
	_, tracked := s.kured[string(d.UID)]
	match := tracked
	if s.kuredName != "" {
		match = d.Namespace == s.kuredNS && d.Name == s.kuredName
	} else if !match {
		match = looksLikeKured(d)
	}
	if match {
		l := DaemonSetToLock(d)
		s.kured[string(d.UID)] = l.LockRef
		if spec, ok := l.Spec.(*lock.KuredSpec); ok && spec.Config != nil {
			s.kuredCfg, s.kuredCfgOf = spec.Config, d.Namespace+"/"+d.Name
		}
		s.sink(model.LockUpserted{Lock: l})
	}
	var selectors []string
	if s.kuredCfg != nil {
		selectors = s.kuredCfg.BlockingPodSelectors
	}
	known := s.kuredCfg != nil
	s.mu.Unlock()
	if match && known {
		s.pods.kuredSelectors(selectors)
	}
	if match && !tracked {
		s.refresh(p)
	}
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

// looksLikeKured reports whether a DaemonSet is kured's without an explicit
// --kured-daemonset: it carries the lock annotation, is named kured (or
// <release>-kured), or is labelled as kured.
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
