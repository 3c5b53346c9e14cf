package kured

import (
	"context"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"

	"github.com/rebootwatch/rebootwatch/internal/coord"
	"github.com/rebootwatch/rebootwatch/model"
)

// This file is what kured's source reads from kured's DaemonSets (the
// informer that watches them is sources/kube's): discovery (each DaemonSet
// that runs kured's image and whose kured names it as its lock's — one per
// node pool where kured runs as several DaemonSets; never by a name, label
// or annotation alone), the informer's transform, the lock objects and the
// nodes they name, and the one-shot read.

// Candidate is a DaemonSet that may be kured's, as discovery judged it.
type Candidate struct {
	Ref    model.LockRef
	Lock   model.LockObject
	Config *Config
	// plausible: it runs kured's image and kured's own --ds-namespace and
	// --ds-name name this DaemonSet (where kured keeps its lock); why says
	// what fails when not.
	Plausible bool
	Why       string
	// hasLock: it carries the lock annotation its kured would use.
	HasLock bool
	// PodSelector is the DaemonSet's spec.selector as a label selector
	// ("" when it has none or it cannot be written as one): the pods it
	// owns, whose nodes are its pool, are listed with it (and then kept
	// only when their controller is this DaemonSet's UID).
	PodSelector string
}

// Discover judges a DaemonSet as kured's. ok is false for a DaemonSet
// that shows no sign of kured at all (not named, labelled, annotated or
// imaged as kured).
//
// A name, a label or the lock annotation can be given to any DaemonSet by
// anyone who may create one in some namespace; so can kured's image and
// arguments, but a DaemonSet whose kured keeps its lock elsewhere (its
// --ds-namespace/--ds-name name another DaemonSet, kube-system/kured by
// default) is not where kured's lock is. Only a DaemonSet that runs kured's
// image and whose kured names it is plausible.
func Discover(d *appsv1.DaemonSet) (Candidate, bool) {
	l := LockOf(d)
	c := Candidate{Ref: l.LockRef, Lock: l, PodSelector: PodSelector(d)}
	spec, _ := l.Spec.(*Spec)
	if spec != nil {
		c.Config, c.HasLock = spec.Config, spec.Present
	}
	_, defaultLock := d.Annotations[Annotation]
	ct := Container(&d.Spec.Template.Spec)
	image := ""
	if ct != nil {
		image = ct.Image
	}
	if !LooksLike(d) && !Image(image) && !defaultLock && !c.HasLock {
		return c, false
	}
	switch {
	case !Image(image):
		c.Why = fmt.Sprintf("its image %q is not kured's", coord.Clip(image))
	case c.Config == nil:
		c.Why = "it has no container"
	case c.Config.DSNamespace != d.Namespace || c.Config.DSName != d.Name:
		c.Why = fmt.Sprintf("its kured's --ds-namespace/--ds-name name %s/%s: kured keeps its lock there, not here", coord.Clip(c.Config.DSNamespace), coord.Clip(c.Config.DSName))
	default:
		c.Plausible = true
	}
	return c, true
}

// PodSelector is a DaemonSet's spec.selector written as a label selector,
// "" when it has none or it does not convert.
func PodSelector(d *appsv1.DaemonSet) string {
	if d.Spec.Selector == nil {
		return ""
	}
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil || sel.Empty() {
		return ""
	}
	return sel.String()
}

// Image reports whether an image reference is kured's: its repository's
// last path component is "kured" (ghcr.io/kubereboot/kured:1.17.1,
// docker.io/weaveworks/kured, a mirror's …/kured@sha256:…).
func Image(ref string) bool {
	if i := strings.Index(ref, "@"); i >= 0 {
		ref = ref[:i]
	}
	last := ref[strings.LastIndex(ref, "/")+1:]
	if i := strings.Index(last, ":"); i >= 0 {
		last = last[:i]
	}
	return last == "kured"
}

// configOfDS reads kured's configuration from a (full or transformed)
// DaemonSet; nil when it has no container.
func configOfDS(d *appsv1.DaemonSet) *Config {
	return ConfigOf(&d.Spec.Template.Spec)
}

// Transform keeps a DaemonSet's identity, its kured lock annotation
// (the default one and the one kured's args name), the labels that identify
// kured, its spec.selector (the pods it owns: its node pool), and of the
// pod template only kured's container's command, args and
// KURED_* environment (values of valueFrom variables are not kept); the rest
// of spec and status is dropped.
func Transform(obj any) (any, error) {
	d, ok := obj.(*appsv1.DaemonSet)
	if !ok {
		return obj, nil
	}
	out := &appsv1.DaemonSet{ObjectMeta: keepMeta(d.ObjectMeta)}
	out.Spec.Selector = d.Spec.Selector
	keys := []string{Annotation}
	if c := configOfDS(d); c != nil && c.LockAnnotation != Annotation {
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
	for _, k := range Labels {
		if v, ok := d.Labels[k]; ok {
			if out.Labels == nil {
				out.Labels = map[string]string{}
			}
			out.Labels[k] = v
		}
	}
	if c := Container(&d.Spec.Template.Spec); c != nil {
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

// Labels are labels whose value "kured" marks kured's DaemonSet (the
// Helm chart's and the plain manifest's).
var Labels = []string{"app.kubernetes.io/name", "name", "app"}

// LooksLike reports whether a DaemonSet shows a sign of kured that
// anyone may give it — it carries the lock annotation, is named kured (or
// <release>-kured), or is labelled as kured — so that discovery lists it
// (Discover decides; none of these makes it kured's).
func LooksLike(d *appsv1.DaemonSet) bool {
	if _, ok := d.Annotations[Annotation]; ok {
		return true
	}
	if d.Name == "kured" || strings.HasSuffix(d.Name, "-kured") {
		return true
	}
	for _, k := range Labels {
		if d.Labels[k] == "kured" {
			return true
		}
	}
	return false
}

// LockOf converts kured's DaemonSet to a lock object, reading the
// annotation kured's own configuration names.
func LockOf(d *appsv1.DaemonSet) model.LockObject {
	cfg := configOfDS(d)
	key := Annotation
	if cfg != nil && cfg.LockAnnotation != "" {
		key = cfg.LockAnnotation
	}
	v, ok := d.Annotations[key]
	return model.LockObject{
		LockRef:         model.LockRef{Kind: model.LockKured, Namespace: d.Namespace, Name: d.Name},
		UID:             string(d.UID),
		ResourceVersion: d.ResourceVersion,
		Spec:            &Spec{Annotation: key, Value: v, Present: ok, Config: cfg},
	}
}

// Holders lists the nodes a kured lock names (none when it is free or
// malformed): their pods are watched, for kured's own pod on a holder
// (issue 27: whether kured came back after the reboot, and since when).
func Holders(l model.LockObject) []string {
	spec, ok := l.Spec.(*Spec)
	if !ok || spec == nil || !spec.Present {
		return nil
	}
	kl, err := Parse(spec.Value)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range kl.Entries {
		if e.NodeID != "" && e.NodeID != ManualHolder {
			out = append(out, e.NodeID)
		}
	}
	return out
}

// keepMeta is the identity of an object, all the informer keeps of its
// metadata beside what Transform picks.
func keepMeta(m metav1.ObjectMeta) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion,
		CreationTimestamp: m.CreationTimestamp, DeletionTimestamp: m.DeletionTimestamp}
}

// ReadLocks reads kured's locks once: the DaemonSets named (trusted as
// kured's, whatever they run; one per node pool, each listed in its
// namespace by its name, as the source's least-privilege Role allows), else
// every plausible kured DaemonSet of every namespace: one per node pool
// when kured runs as several DaemonSets, each naming itself as its lock's.
// A named DaemonSet that is not there is not in the answer.
func ReadLocks(ctx context.Context, cs kubernetes.Interface, named []DaemonSetRef) ([]model.LockObject, error) {
	var out []model.LockObject
	if len(named) == 0 {
		dss, err := cs.AppsV1().DaemonSets("").List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("list daemonsets.apps: %w", err)
		}
		for i := range dss.Items {
			if c, ok := Discover(&dss.Items[i]); ok && c.Plausible {
				out = append(out, c.Lock)
			}
		}
		return out, nil
	}
	for _, r := range named {
		lo := metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", r.Name).String()}
		dss, err := cs.AppsV1().DaemonSets(r.Namespace).List(ctx, lo)
		if err != nil {
			return nil, fmt.Errorf("list daemonsets.apps %s: %w", r, err)
		}
		for i := range dss.Items {
			if d := &dss.Items[i]; d.Namespace == r.Namespace && d.Name == r.Name {
				out = append(out, NamedLockOf(d))
			}
		}
	}
	return out, nil
}

// NamedLockOf is the lock object of a DaemonSet the user named: LockOf's,
// marked Named.
func NamedLockOf(d *appsv1.DaemonSet) model.LockObject {
	l := LockOf(d)
	l.Spec.(*Spec).Named = true
	return l
}
