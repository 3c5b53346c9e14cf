package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/rebootwatch/rebootwatch/sources"
)

// This file audits each informer (and each pod watch) against a quorum
// list of what it watches (sources.Audit, issue 22 §1): a watch stalled
// behind a proxy that still answers every list and probe turns its source
// stale. On a real apiserver the audit asks for the objects' metadata only
// (a PartialObjectMetadataList: no spec, no status, no node images), as
// protobuf, and reads only each item's namespace, name and resourceVersion
// (the ObjectMeta of every item is its field 1), with nodeproto.go's
// stream reader. A fake clientset (or a server that sends no protobuf) is
// listed through the typed client.

// metadataAccept asks for a PartialObjectMetadataList as protobuf.
const metadataAccept = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"

// auditTarget says how an audit lists what an informer watches: the same
// resource, namespace and selectors.
type auditTarget struct {
	what     string           // names the objects in messages ("node")
	rc       *rest.RESTClient // the group's REST client; nil: typed only (a fake)
	resource string           // e.g. "daemonsets"
	kind     string           // the protobuf list's kind with whole objects, e.g. "DaemonSetList"
	// objects lists whole objects (kind) instead of their metadata (for
	// the benchmark's comparison).
	objects bool
	ns      string
	lo      metav1.ListOptions // selectors, as the informer's
	// typed lists through the typed client (with the selectors applied).
	typed func(context.Context, metav1.ListOptions) (runtime.Object, error)
	// noProtobuf is set once the server answered a protobuf list with 406
	// or something that is not protobuf.
	noProtobuf *atomic.Bool
}

// restOf returns the REST client behind a typed client's group, or nil
// when it is not a real one (a fake's is a nil pointer).
func restOf(c rest.Interface) *rest.RESTClient {
	rc, ok := c.(*rest.RESTClient)
	if !ok || rc == nil {
		return nil
	}
	return rc
}

// newAudit returns the audit of an informer's store, or nil for a
// one-shot read.
func (s *Source) newAudit(store cache.Store, t auditTarget) *sources.Audit {
	if s.opts.Once {
		return nil
	}
	t.noProtobuf = &atomic.Bool{}
	return &sources.Audit{What: t.what, Interval: s.opts.AuditInterval, Grace: s.opts.AuditGrace,
		Timeout: s.opts.RequestTimeout, Clock: s.opts.Clock,
		Cache: func(each func(sources.ObjectKey, string)) { storeRVs(store, each) },
		Get:   func(k sources.ObjectKey) (string, bool) { return storeRV(store, k) },
		List:  t.list,
	}
}

// storeRVs calls each with every object of store.
func storeRVs(store cache.Store, each func(sources.ObjectKey, string)) {
	for _, o := range store.List() {
		if m, err := meta.Accessor(o); err == nil {
			each(sources.ObjectKey{Namespace: m.GetNamespace(), Name: m.GetName()}, m.GetResourceVersion())
		}
	}
}

// storeRV returns store's resourceVersion of k.
func storeRV(store cache.Store, k sources.ObjectKey) (string, bool) {
	o, ok, err := store.GetByKey(k.String())
	if err != nil || !ok {
		return "", false
	}
	m, err := meta.Accessor(o)
	if err != nil {
		return "", false
	}
	return m.GetResourceVersion(), true
}

// list lists the target by quorum read (resourceVersion unset).
func (t auditTarget) list(ctx context.Context, each func(ns, name, rv []byte)) error {
	if t.rc != nil && !t.noProtobuf.Load() {
		err := t.listProto(ctx, each)
		if !apierrors.IsNotAcceptable(err) && !errors.Is(err, errNotProtobuf) {
			return err
		}
		t.noProtobuf.Store(true)
	}
	obj, err := t.typed(ctx, t.lo)
	if err != nil {
		return err
	}
	return meta.EachListItem(obj, func(o runtime.Object) error {
		m, err := meta.Accessor(o)
		if err != nil {
			return err
		}
		each([]byte(m.GetNamespace()), []byte(m.GetName()), []byte(m.GetResourceVersion()))
		return nil
	})
}

// listProto lists the target's metadata as protobuf, reading only each
// item's namespace, name and resourceVersion as the list streams in.
func (t auditTarget) listProto(ctx context.Context, each func(ns, name, rv []byte)) error {
	lo := t.lo
	accept, kind := metadataAccept, "PartialObjectMetadataList"
	if t.objects {
		accept, kind = protobufAccept, t.kind
	}
	body, err := t.rc.Get().Namespace(t.ns).Resource(t.resource).VersionedParams(&lo, scheme.ParameterCodec).
		SetHeader("Accept", accept).Stream(ctx)
	if err != nil {
		return err
	}
	defer body.Close()
	d := &nodeStream{sources.NewPBStream(body, 64<<10)}
	_, err = d.listOf(kind, func(item []byte) error {
		ns, name, rv, err := sources.PBItemMeta(item)
		if err != nil {
			return err
		}
		each(ns, name, rv)
		return nil
	})
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	if err != nil && !errors.Is(err, errNotProtobuf) {
		return fmt.Errorf("%s list (protobuf): %w", t.resource, err)
	}
	return err
}

// audit sets p's audit of its informer's cache (none for a one-shot
// read); t.typed defaults to p's own list.
func (s *Source) audit(p *part, t auditTarget) {
	if s.opts.Once {
		return
	}
	if t.typed == nil {
		t.typed = p.list
	}
	p.audit = s.newAudit(p.inf.GetStore(), t)
}
