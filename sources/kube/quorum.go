package kube

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/rebootwatch/rebootwatch/internal/coord/fleetlock"
	"github.com/rebootwatch/rebootwatch/internal/coord/kured"
	"github.com/rebootwatch/rebootwatch/model"
)

// This file is the read the lock engine's actor makes before a write (the
// wiring injects it: sources/sourceset.FreshReaders): every node and every lock
// object, each list a quorum read (resourceVersion unset) made just now, as
// this source would put them in the model. It reads only.

// ReadNodes lists every node with labels matching labelSelector ("" every
// node) in one quorum read, as the informer reads them: protobuf decoded
// straight into the model's nodes (nodeproto.go), or through the typed
// client when the server sends no protobuf or cs is not a real clientset.
func ReadNodes(ctx context.Context, cs kubernetes.Interface, labelSelector string) ([]model.Node, error) {
	lo := metav1.ListOptions{LabelSelector: labelSelector}
	rc := nodeListREST(cs)
	if rc == nil {
		l, err := cs.CoreV1().Nodes().List(ctx, lo)
		if err != nil {
			return nil, err
		}
		out := make([]model.Node, len(l.Items))
		for i := range l.Items {
			out[i] = NodeToModel(&l.Items[i])
		}
		return out, nil
	}
	obj, err := newRESTNodes(rc, cs).List(ctx, lo)
	if err != nil {
		return nil, err
	}
	l, ok := obj.(*NodeList)
	if !ok {
		return nil, fmt.Errorf("node list: got %T", obj)
	}
	out := make([]model.Node, len(l.Items))
	for i, n := range l.Items {
		out[i] = n.Model
	}
	return out, nil
}

// ReadLocks lists every lock object the source reads, each list a quorum
// read, selected and converted as the source selects and converts them:
// kured's DaemonSets (those kuredDaemonSets names, "namespace/name",
// comma-separated, one per node pool, each listed by its name in its
// namespace; else every plausible kured among every DaemonSet, judged as
// discovery judges it: one per node pool, as the source reports them) and
// the fleetlock Leases of fleetlockNamespace ("" the default one). A kind
// in disabled is not read at all (its source is turned off, and may not
// have the rights to read it).
func ReadLocks(ctx context.Context, cs kubernetes.Interface, kuredDaemonSets, fleetlockNamespace string, disabled map[model.LockKind]string) ([]model.LockObject, error) {
	var out []model.LockObject
	if _, off := disabled[model.LockKured]; !off {
		named, err := kured.ParseDaemonSets(kuredDaemonSets)
		if err != nil {
			return nil, err
		}
		ls, err := kured.ReadLocks(ctx, cs, named)
		if err != nil {
			return nil, err
		}
		out = append(out, ls...)
	}
	if _, off := disabled[model.LockFleetlock]; !off {
		if fleetlockNamespace == "" {
			fleetlockNamespace = DefaultFleetlockNamespace
		}
		ls, err := fleetlock.ReadLocks(ctx, cs, fleetlockNamespace)
		if err != nil {
			return nil, err
		}
		out = append(out, ls...)
	}
	return out, nil
}
