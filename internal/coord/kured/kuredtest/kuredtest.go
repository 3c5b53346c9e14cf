// Package kuredtest writes kured's reboot lock exactly as kured writes it,
// for tests: its DaemonSet annotation, byte for byte (JSON field order, the
// fields written). kured's module is not served by the Go module proxy, so
// this reproduces — never copies — what was read in kubereboot/kured
// pkg/daemonsetlock/daemonsetlock.go (LockAnnotationValue,
// multiLockAnnotationValue, DaemonSetSingleLock.Acquire,
// DaemonSetMultiLock.Acquire via canAcquireMultiple), at commit
// 51220cc778a4c8cc5bdd35617697a2844887f8c7 (1.23.0-32-g51220cc).
//
// It is test support: it must never be imported by production code (the
// scale fixture aside).
package kuredtest

import (
	"context"
	"encoding/json"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Value mirrors kured's LockAnnotationValue as json.Marshal writes it:
// field order nodeID, metadata, created, TTL; metadata's omitempty has no
// effect on a struct, so it is always there; created is time.Now().UTC()
// (RFC3339 with nanoseconds); TTL is a time.Duration in nanoseconds.
type Value struct {
	NodeID   string        `json:"nodeID"`
	Metadata NodeMeta      `json:"metadata,omitempty"`
	Created  time.Time     `json:"created"`
	TTL      time.Duration `json:"TTL"`
}

// NodeMeta mirrors kured's NodeMeta.
type NodeMeta struct {
	Unschedulable bool `json:"unschedulable"`
}

// Single is a single-lock annotation value as kured's
// DaemonSetSingleLock.Acquire writes it.
func Single(holder string, created time.Time, ttl time.Duration, unschedulable bool) string {
	return marshal(Value{NodeID: holder, Metadata: NodeMeta{unschedulable}, Created: created.UTC(), TTL: ttl})
}

// Multi is a multi-lock annotation value as DaemonSetMultiLock.Acquire
// writes it ({"maxOwners":N,"locks":[...]}, entries in acquisition order;
// with a TTL, a node whose own entry expired appends a second entry).
func Multi(maxOwners int, entries ...Value) string {
	for i := range entries {
		entries[i].Created = entries[i].Created.UTC()
	}
	if entries == nil {
		entries = []Value{}
	}
	return marshal(struct {
		MaxOwners int     `json:"maxOwners"`
		Locks     []Value `json:"locks"`
	}{maxOwners, entries})
}

func marshal(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// Ghost is the holder of Wedge's lock: a node that no longer exists.
const Ghost = "gone-node"

// DaemonSet is kured's DaemonSet as its manifest installs it in ns, named
// name, whose kured keeps its lock on itself (--ds-namespace, --ds-name):
// discovery takes it as kured's.
func DaemonSet(ns, name string) *appsv1.DaemonSet {
	labels := map[string]string{"app.kubernetes.io/name": "kured"}
	return &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "kured", Image: "ghcr.io/kubereboot/kured:1.23.0",
					Command: []string{"/usr/bin/kured"}, Args: []string{"--ds-namespace=" + ns, "--ds-name=" + name}}}}}}}
}

// Wedge writes kured's headline wedge into ns: its DaemonSet, whose lock
// was taken (DaemonSetSingleLock.Acquire: Get, set the annotation, Update
// carrying the read resourceVersion) 40 minutes before now by Ghost, a
// node that no longer exists. kured itself never frees it: only the
// holder's own kured releases its lock.
func Wedge(ctx context.Context, c kubernetes.Interface, ns string, now time.Time) error {
	if _, err := c.AppsV1().DaemonSets(ns).Create(ctx, DaemonSet(ns, "kured"), metav1.CreateOptions{}); err != nil {
		return err
	}
	ds, err := c.AppsV1().DaemonSets(ns).Get(ctx, "kured", metav1.GetOptions{})
	if err != nil {
		return err
	}
	if ds.Annotations == nil {
		ds.Annotations = map[string]string{}
	}
	ds.Annotations[lockAnnotation] = Single(Ghost, now.Add(-40*time.Minute), 0, false)
	_, err = c.AppsV1().DaemonSets(ns).Update(ctx, ds, metav1.UpdateOptions{})
	return err
}

// lockAnnotation is kured's default --lock-annotation.
const lockAnnotation = "weave.works/kured-node-lock"
