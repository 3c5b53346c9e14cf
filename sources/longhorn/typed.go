package longhorn

import (
	"context"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
)

// restVolumes lists and watches Longhorn volumes through a JSON client
// (NewREST), decoding lists and watch events straight into Volume
// (decode.go): the informer's ListWatch on a real apiserver.
type restVolumes struct {
	c  rest.Interface
	ns string // "" for every namespace
}

func (r restVolumes) request(opts *metav1.ListOptions) *rest.Request {
	req := r.c.Get().Resource(VolumeGVR.Resource).
		SpecificallyVersionedParams(opts, metav1.ParameterCodec, metav1.SchemeGroupVersion)
	if r.ns != "" {
		req = req.Namespace(r.ns)
	}
	return req
}

// List lists the volumes (one page when opts.Limit is set) into a
// *VolumeList.
func (r restVolumes) List(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	opts.Watch = false
	body, err := r.request(&opts).Stream(ctx)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	l, err := decodeList(body)
	if err != nil {
		return nil, err
	}
	return l, nil
}

// Watch opens a watch whose events carry *Volume (or, for ERROR, the
// server's *metav1.Status). It lives until ctx ends, the server ends it, or
// it is stopped.
func (r restVolumes) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	body, err := r.request(&opts).Stream(ctx)
	if err != nil {
		return nil, err
	}
	// As client-go's own watches: a stream that cannot be decoded ends with
	// an ERROR event whose cause is unknown (500).
	return watch.NewStreamWatcher(newWatchDecoder(body),
		apierrors.NewClientErrorReporter(http.StatusInternalServerError, http.MethodGet, "ClientWatchDecoding")), nil
}
