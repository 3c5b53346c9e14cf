package longhorn

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/rebootwatch/rebootwatch/model"
)

// This file is the one-shot read of Longhorn volumes (Options.Once):
// through REST, a Table of longhorn-system's volumes beside the JSON list of
// the other namespaces' (listREST), each streamed row by row or item by
// item into the few fields the model reads, so neither a whole list nor
// any unstructured map is ever held, whatever its size.

// ListPageSize is the default page size of the one-shot list: 0, one
// request. The decoder streams, so a page bounds nothing on this side,
// while the apiserver serves the continue pages of a custom resource at
// about twice the CPU of one list (docs/performance.md). Options.PageSize
// > 0 pages.
const ListPageSize = 0

// NewREST returns a JSON client for longhorn.io/v1beta2 made from cfg, for
// Options.REST.
func NewREST(cfg *rest.Config) (rest.Interface, error) {
	c := rest.CopyConfig(cfg)
	c.GroupVersion = &schema.GroupVersion{Group: VolumeGVR.Group, Version: VolumeGVR.Version}
	c.APIPath = "/apis"
	c.ContentType = "application/json"
	c.AcceptContentTypes = "application/json"
	c.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	return rest.RESTClientFor(c)
}

// listOnce lists the volumes once and reports: every volume and ok, or
// not-installed (the CRD is not served), or why the list failed — then
// nothing of a partial list is sent.
func (s *Source) listOnce(ctx context.Context) {
	var vols []model.Volume
	var err error
	if s.opts.REST != nil {
		vols, err = s.listREST(ctx, true)
	} else {
		vols, err = s.listDynamic(ctx)
	}
	switch {
	case ctx.Err() != nil:
		return
	case apierrors.IsNotFound(err):
		s.rep.Set(model.StatusNotInstalled, notInstalled)
		return
	case err != nil:
		s.log.Debug("longhorn list failed", "err", err)
		s.rep.Fail("list", "volumes.longhorn.io", s.opts.Namespace, err)
		return
	}
	// Nothing is remembered of what was sent (known): without an informer
	// no deletion follows.
	batch := make(model.Batch, 0, len(vols))
	s.mu.Lock()
	for _, v := range vols {
		batch = append(batch, model.VolumeUpserted{Volume: v})
	}
	if len(batch) > 0 {
		s.sink(batch)
	}
	s.mu.Unlock()
	s.rep.OK("")
}

func (s *Source) pageSize() int64 {
	if s.opts.PageSize > 0 {
		return s.opts.PageSize
	}
	return ListPageSize
}

// listDynamic lists through the dynamic client (a fake one in the demo).
func (s *Source) listDynamic(ctx context.Context) ([]model.Volume, error) {
	var out []model.Volume
	lo := metav1.ListOptions{Limit: s.pageSize()}
	for {
		lctx, cancel := context.WithTimeout(ctx, s.opts.RequestTimeout)
		var l *unstructured.UnstructuredList
		var err error
		if s.opts.Namespace != "" {
			l, err = s.opts.Client.Resource(VolumeGVR).Namespace(s.opts.Namespace).List(lctx, lo)
		} else {
			l, err = s.opts.Client.Resource(VolumeGVR).List(lctx, lo)
		}
		cancel()
		if apierrors.IsResourceExpired(err) && lo.Continue != "" {
			out, lo = nil, metav1.ListOptions{}
			continue
		}
		if err != nil {
			return nil, err
		}
		for i := range l.Items {
			out = append(out, VolumeToModel(&l.Items[i]))
		}
		if l.GetContinue() == "" {
			return out, nil
		}
		lo.Continue = l.GetContinue()
	}
}

// LonghornNamespace is the namespace Longhorn installs into by default,
// where the one-shot read asks for its volumes as a Table (listREST).
const LonghornNamespace = "longhorn-system"

// MaxFollowUps is how many volumes, at most, the one-shot read fetches
// whole after the Table (the volumes degraded or faulted, or attached
// without a currentNodeID): a Table has no spec.numberOfReplicas (the
// stall explainer's ", 3 replicas wanted") and no status.ownerID (the node
// of a volume attached without a currentNodeID). Healthy volumes and
// detached ones (Longhorn reports their robustness as unknown) are not
// fetched: the explainer names neither. The cap bounds the requests a
// cluster with many degraded volumes adds to the report; 50 is a judgment,
// not a measured break-even. Past it, no volume is fetched and the Table's
// picture stands: those volumes say no replica count.
const MaxFollowUps = 50

// followUpConcurrency bounds the follow-up GETs in flight.
const followUpConcurrency = 8

// listREST reads every volume through the raw REST client, in two requests
// at once, whose union is every volume whatever namespace Longhorn lives
// in (a volume's namespace never changes):
//   - the volumes of LonghornNamespace (or of Options.Namespace, then the
//     only request) as a Table without objects (listTable): the apiserver
//     serialises a few cells per volume, not the whole object, whose
//     serialisation is nearly all of a JSON list's time (scalebench's
//     server case; docs/performance.md);
//   - the full JSON list of the volumes of every other namespace
//     (fieldSelector metadata.namespace!=longhorn-system), normally empty.
//
// Both need the same "list volumes" as the full list did. detail fetches
// whole what the Table says too little of (followUp).
func (s *Source) listREST(ctx context.Context, detail bool) ([]model.Volume, error) {
	ns := s.opts.Namespace
	if ns == "" {
		ns = LonghornNamespace
	}
	var (
		others   []model.Volume
		otherErr error
		wg       sync.WaitGroup
	)
	// Neither request cancels the other when it fails: each ends within
	// its own RequestTimeout, and a request cancelled while its connection
	// is still being dialled leaves client-go's -v tracing (its
	// debuggingRoundTripper) writing from the dial after the request
	// returned, a data race (TestVerboseShowsClientGoDiagnostics under
	// -race, against an unreachable apiserver).
	if s.opts.Namespace == "" {
		wg.Go(func() {
			others, otherErr = s.listJSON(ctx, "", "metadata.namespace!="+LonghornNamespace)
		})
	}
	vols, table, err := s.listTable(ctx, ns)
	wg.Wait()
	if err = cmp.Or(err, otherErr); err != nil {
		return nil, err
	}
	if table && detail {
		vols = s.followUp(ctx, vols)
	}
	return append(vols, others...), nil
}

// listTable reads the volumes of ns as a Table (pages as listJSON does) and
// says whether it did; when the server answers no Table (406, another kind)
// or one without the State, Robustness or Node column (an old or edited
// CRD), it reads them as the full JSON list instead.
func (s *Source) listTable(ctx context.Context, ns string) ([]model.Volume, bool, error) {
	var out []model.Volume
	cont := ""
	for {
		page, next, err := s.getTablePage(ctx, ns, cont)
		if apierrors.IsResourceExpired(err) && cont != "" {
			out, cont = nil, ""
			continue
		}
		if cont == "" && (apierrors.IsNotAcceptable(err) || errors.Is(err, errNotTable) || errors.Is(err, errTableColumns)) {
			s.log.Debug("longhorn: no usable Table of volumes, reading them whole", "namespace", ns, "err", err)
			vols, err := s.listJSON(ctx, ns, "")
			return vols, false, err
		}
		if err != nil {
			return nil, false, err
		}
		out = append(out, page...)
		if next == "" {
			return out, true, nil
		}
		cont = next
	}
}

func (s *Source) getTablePage(ctx context.Context, ns, cont string) ([]model.Volume, string, error) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.RequestTimeout)
	defer cancel()
	rv := restVolumes{c: s.opts.REST, ns: ns}
	body, err := rv.request(&metav1.ListOptions{Limit: s.pageSize(), Continue: cont}).
		SetHeader("Accept", TableAccept).Param("includeObject", string(metav1.IncludeNone)).Stream(ctx)
	if err != nil {
		return nil, "", err
	}
	defer body.Close()
	return DecodeVolumeTable(body, ns)
}

// followUp fetches whole, at most MaxFollowUps, the volumes the Table says
// too little of: those degraded or faulted (their replica count is the
// stall explainer's evidence) and those attached without a node (whose node is
// status.ownerID). A volume gone since (404) is dropped; any other failure
// keeps the Table's row (the read as a whole succeeded). The GETs together
// get one RequestTimeout: they only add detail to a read that succeeded,
// so a server that stalls on them holds the report for one timeout, not
// one per wave of followUpConcurrency; a GET not sent by then is not sent.
func (s *Source) followUp(ctx context.Context, vols []model.Volume) []model.Volume {
	var idx []int
	for i, v := range vols {
		bad := v.Robustness == model.RobustnessDegraded || v.Robustness == model.RobustnessFaulted
		if bad || (v.State == "attached" && v.Node == "") {
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 {
		return vols
	}
	if len(idx) > MaxFollowUps {
		s.log.Debug("longhorn: too many volumes to fetch whole; their replica counts are not read",
			"volumes", len(idx), "max", MaxFollowUps)
		return vols
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.RequestTimeout)
	defer cancel()
	gone := make([]bool, len(vols))
	sem := make(chan struct{}, followUpConcurrency)
	var wg sync.WaitGroup
	for _, i := range idx {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			if ctx.Err() != nil {
				return
			}
			v, err := s.getVolume(ctx, vols[i].Namespace, vols[i].Name)
			switch {
			case apierrors.IsNotFound(err):
				gone[i] = true
			case err != nil:
				s.log.Debug("longhorn: volume not fetched; its replica count is not read",
					"namespace", vols[i].Namespace, "name", vols[i].Name, "err", err)
			default:
				vols[i] = v
			}
		})
	}
	wg.Wait()
	out := vols[:0]
	for i, v := range vols {
		if !gone[i] {
			out = append(out, v)
		}
	}
	return out
}

// getVolume GETs one volume as JSON.
func (s *Source) getVolume(ctx context.Context, ns, name string) (model.Volume, error) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.RequestTimeout)
	defer cancel()
	body, err := s.opts.REST.Get().Namespace(ns).Resource(VolumeGVR.Resource).Name(name).Stream(ctx)
	if err != nil {
		return model.Volume{}, err
	}
	defer body.Close()
	return decodeVolume(body)
}

// decodeVolume reads one Volume's JSON as the model sees it.
func decodeVolume(r io.Reader) (model.Volume, error) {
	s := newScanner(r)
	c, err := s.next()
	if err == nil && c != '{' {
		err = fmt.Errorf("want an object, got %q", c)
	}
	var it volumeItem
	if err == nil {
		err = it.read(s)
	}
	if err == nil {
		var end bool
		if end, err = s.atEnd(); err == nil && !end {
			err = errors.New("data after the object")
		}
	}
	if err != nil {
		return model.Volume{}, fmt.Errorf("volume: %w", err)
	}
	return it.model(), nil
}

// listJSON lists the volumes of ns ("" for all) matching fieldSelector as
// JSON, a raw GET per page, decoding the JSON as it streams.
func (s *Source) listJSON(ctx context.Context, ns, fieldSelector string) ([]model.Volume, error) {
	var out []model.Volume
	cont := ""
	for {
		page, next, err := s.getPage(ctx, ns, fieldSelector, cont)
		if apierrors.IsResourceExpired(err) && cont != "" {
			out, cont = nil, ""
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, page...)
		if next == "" {
			return out, nil
		}
		cont = next
	}
}

func (s *Source) getPage(ctx context.Context, ns, fieldSelector, cont string) ([]model.Volume, string, error) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.RequestTimeout)
	defer cancel()
	// The same request as the informer's list (typed.go), decoded straight
	// into the model's volumes rather than kept as Volumes.
	rv := restVolumes{c: s.opts.REST, ns: ns}
	body, err := rv.request(&metav1.ListOptions{Limit: s.pageSize(), Continue: cont, FieldSelector: fieldSelector}).Stream(ctx)
	if err != nil {
		return nil, "", err
	}
	defer body.Close()
	return DecodeVolumeList(body)
}

// DecodeVolumeList reads a VolumeList's JSON from r, item by item, and
// returns the volumes as the model sees them and the list's continue token.
// It keeps only what the model reads of each item (volumeItem), in one pass
// over the bytes (scan.go); fields of an unexpected type read as absent, as
// VolumeToModel reads them. An object that is not a list (a Status, say) or
// a document that is cut short or not JSON is an error.
func DecodeVolumeList(r io.Reader) ([]model.Volume, string, error) {
	var out []model.Volume
	lm, err := decodeVolumeList(newScanner(r), func(it *volumeItem) { out = append(out, it.model()) })
	if err != nil {
		return nil, "", fmt.Errorf("volume list: %w", err)
	}
	return out, lm.Continue, nil
}
