package longhorn

import (
	"context"
	"errors"
	"log/slog"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/rebootwatch/rebootwatch/model"
	"github.com/rebootwatch/rebootwatch/sources"
)

// ReadVolumes lists every Longhorn volume now, with quorum reads, as the
// one-shot read does (once.go: longhorn-system's as a Table beside the
// other namespaces' JSON list through o.REST, else through o.Client), but
// without its follow-up GETs: it is the read the lock engine's actor makes
// before a write (the wiring injects it: sources/sourceset.FreshReaders), which
// needs each volume's robustness, not its replica count. installed is false
// when Longhorn's volumes are not served (no CRD). It reads only.
func ReadVolumes(ctx context.Context, o Options) (vols []model.Volume, installed bool, err error) {
	if o.Client == nil && o.REST == nil {
		return nil, false, errors.New("longhorn: no client")
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = sources.DefaultRequestTimeout
	}
	s := &Source{opts: o, log: o.Logger}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if o.REST != nil {
		vols, err = s.listREST(ctx, false)
	} else {
		vols, err = s.listDynamic(ctx)
	}
	if apierrors.IsNotFound(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return vols, true, nil
}
