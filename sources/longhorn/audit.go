package longhorn

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	"github.com/rebootwatch/rebootwatch/sources"
)

// This file audits the informer's cache against a quorum list of the
// volumes (sources.Audit, issue 22 §1): a watch stalled behind a proxy
// that still answers every list and probe turns the source stale. Through
// REST the audit asks for the volumes' metadata only (a
// PartialObjectMetadataList: no spec or status) as protobuf, which the
// apiserver serves for a custom resource's metadata (never for its
// objects) in about half the CPU the same metadata costs it as JSON, read
// as it streams by sources.ReadMetadataList, keeping only each item's
// identity and resourceVersion (issue 35 §2). A server or proxy that sends
// no protobuf (406, or another body) gets the JSON metadata list from then
// on, streamed through the JSON reader (decode.go); one that cannot send
// metadata only (406) gets the plain list. The dynamic client (the demo's
// fake) lists unstructured objects.

// metadataAccept asks for a PartialObjectMetadataList as JSON.
const metadataAccept = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"

// newAudit returns the audit of the informer's store; list is the
// informer's own list, used without REST.
func (s *Source) newAudit(store cache.Store, list func(context.Context, metav1.ListOptions) (runtime.Object, error)) *sources.Audit {
	a := &sources.Audit{What: "volume", Interval: s.opts.AuditInterval, Grace: s.opts.AuditGrace,
		Timeout: s.opts.RequestTimeout, Clock: s.opts.Clock,
		Cache: func(each func(sources.ObjectKey, string)) {
			for _, o := range store.List() {
				if v, ok := o.(*Volume); ok {
					each(sources.ObjectKey{Namespace: v.Namespace, Name: v.Name}, v.ResourceVersion)
				}
			}
		},
		Get: func(k sources.ObjectKey) (string, bool) {
			o, ok, err := store.GetByKey(k.String())
			if v, isVol := o.(*Volume); err == nil && ok && isVol {
				return v.ResourceVersion, true
			}
			return "", false
		},
	}
	if s.opts.REST != nil {
		rv := restVolumes{c: s.opts.REST, ns: s.opts.Namespace}
		var noProtobuf atomic.Bool // the server sent no protobuf once
		a.List = func(ctx context.Context, each func(ns, name, rv []byte)) error {
			if !noProtobuf.Load() {
				err := rv.auditProto(ctx, each)
				if !apierrors.IsNotAcceptable(err) && !errors.Is(err, sources.ErrNotProtobuf) {
					return err
				}
				noProtobuf.Store(true)
			}
			err := rv.audit(ctx, true, each)
			if apierrors.IsNotAcceptable(err) {
				err = rv.audit(ctx, false, each)
			}
			return err
		}
		return a
	}
	a.List = func(ctx context.Context, each func(ns, name, rv []byte)) error {
		obj, err := list(ctx, metav1.ListOptions{})
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
	return a
}

// auditProto lists the volumes' metadata as protobuf by quorum read,
// streaming, calling each with every volume's namespace, name and
// resourceVersion. A response that is not protobuf is
// sources.ErrNotProtobuf before any item is read.
func (r restVolumes) auditProto(ctx context.Context, each func(ns, name, rv []byte)) error {
	body, err := r.request(&metav1.ListOptions{}).SetHeader("Accept", sources.MetadataListAccept).Stream(ctx)
	if err != nil {
		return err
	}
	defer body.Close()
	if _, err := sources.ReadMetadataList(body, each); err != nil {
		if errors.Is(err, sources.ErrNotProtobuf) {
			return err
		}
		return fmt.Errorf("volume list (protobuf): %w", err)
	}
	return nil
}

// audit lists the volumes (their metadata only, with metadataOnly) by
// quorum read, streaming, calling each with every volume's namespace, name
// and resourceVersion.
func (r restVolumes) audit(ctx context.Context, metadataOnly bool, each func(ns, name, rv []byte)) error {
	req := r.request(&metav1.ListOptions{})
	if metadataOnly {
		req = req.SetHeader("Accept", metadataAccept)
	}
	body, err := req.Stream(ctx)
	if err != nil {
		return err
	}
	defer body.Close()
	_, err = decodeVolumeList(newScanner(body), func(it *volumeItem) {
		each([]byte(it.namespace), []byte(it.name), []byte(it.resourceVersion))
	})
	if err != nil {
		return fmt.Errorf("volume list: %w", err)
	}
	return nil
}
