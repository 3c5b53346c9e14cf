package kube

import (
	"context"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/rebootwatch/rebootwatch/internal/testenv/scalefixture"
	"github.com/rebootwatch/rebootwatch/internal/testenv/testcluster"
	"github.com/rebootwatch/rebootwatch/sources"
)

// BenchmarkAudit is the cost of one audit of the node informer (audit.go)
// at 5,000 nodes on the real apiserver: the quorum list as protobuf, read
// for each node's name and resourceVersion only, compared with a cache of
// 5,000 *Node as the informer keeps them. "relist" is the informer's own
// list of the same nodes, for scale.
func BenchmarkAudit(b *testing.B) {
	if !testcluster.Integration() {
		b.Skip("seeds a real apiserver with 5,000 nodes: set " + testcluster.EnvIntegration + "=1 to run")
	}
	ctx := context.Background()
	c := testcluster.Start(b)
	c.InstallLonghornCRD(b)
	cs := c.Client(b)
	fx := &scalefixture.Fixture{Client: cs, Dynamic: c.Dynamic(b), Config: c.Admin}
	if err := fx.Grow(ctx, 5000, 0); err != nil {
		b.Fatal(err)
	}
	rc := nodeListREST(cs)
	rn := newRESTNodes(rc, cs)
	obj, err := rn.List(ctx, metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	for _, n := range obj.(*NodeList).Items {
		if err := store.Add(n); err != nil {
			b.Fatal(err)
		}
	}
	t := auditTarget{what: "node", rc: rc, resource: "nodes", kind: "NodeList", typed: rn.List, noProtobuf: &atomic.Bool{}}
	a := &sources.Audit{What: "node",
		Cache: func(each func(sources.ObjectKey, string)) { storeRVs(store, each) },
		Get:   func(k sources.ObjectKey) (string, bool) { return storeRV(store, k) },
		List:  t.list}
	b.Run("nodes=5000/audit", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			a.Once(ctx)
		}
		if l := a.Lag(); l.Behind() {
			b.Fatalf("behind: %s", l.Message(l.Since))
		}
	})
	// The same audit reading whole objects instead of their metadata.
	whole := t
	whole.objects = true
	wa := &sources.Audit{What: "node", Cache: a.Cache, Get: a.Get, List: whole.list}
	b.Run("nodes=5000/audit-whole-objects", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			wa.Once(ctx)
		}
	})
	b.Run("nodes=5000/relist", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := rn.List(ctx, metav1.ListOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
