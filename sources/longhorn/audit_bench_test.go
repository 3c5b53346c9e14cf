package longhorn

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/rebootwatch/rebootwatch/internal/testenv/scalefixture"
	"github.com/rebootwatch/rebootwatch/internal/testenv/testcluster"
	"github.com/rebootwatch/rebootwatch/sources"
)

// BenchmarkAudit is the cost of one audit of the volume informer
// (audit.go) at 10,000 volumes on the real apiserver: the quorum list
// streamed through the JSON reader, compared with a cache of 10,000
// *Volume as the informer keeps them. "relist" is the informer's own list
// of the same volumes, for scale.
func BenchmarkAudit(b *testing.B) {
	if !testcluster.Integration() {
		b.Skip("seeds a real apiserver with 10,000 volumes: set " + testcluster.EnvIntegration + "=1 to run")
	}
	ctx := context.Background()
	c := testcluster.Start(b)
	c.InstallLonghornCRD(b)
	fx := &scalefixture.Fixture{Client: c.Client(b), Dynamic: c.Dynamic(b), Config: c.Admin}
	if err := fx.Grow(ctx, 1, 10000); err != nil {
		b.Fatal(err)
	}
	rc, err := NewREST(c.Admin)
	if err != nil {
		b.Fatal(err)
	}
	rv := restVolumes{c: rc}
	obj, err := rv.List(ctx, metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	for i := range obj.(*VolumeList).Items {
		if err := store.Add(&obj.(*VolumeList).Items[i]); err != nil {
			b.Fatal(err)
		}
	}
	s := &Source{opts: Options{REST: rc}}
	a := s.newAudit(store, nil)
	b.Run("volumes=10000/audit", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			a.Once(ctx)
		}
		if l := a.Lag(); l.Behind() {
			b.Fatalf("behind: %s", l.Message(l.Since))
		}
	})
	b.Run("volumes=10000/audit-whole-objects", func(b *testing.B) {
		wa := &sources.Audit{What: "volume", Cache: a.Cache, Get: a.Get,
			List: func(ctx context.Context, each func(ns, name, rv []byte)) error { return rv.audit(ctx, false, each) }}
		b.ReportAllocs()
		for b.Loop() {
			wa.Once(ctx)
		}
	})
	b.Run("volumes=10000/relist", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := rv.List(ctx, metav1.ListOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
