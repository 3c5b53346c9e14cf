package sources_test

import (
	"bytes"
	"encoding/json"
	"runtime"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/cache"

	"github.com/rebootwatch/rebootwatch/internal/testenv/scalefixture"
	"github.com/rebootwatch/rebootwatch/model"
	"github.com/rebootwatch/rebootwatch/sources/kube"
	"github.com/rebootwatch/rebootwatch/sources/longhorn"
)

// BenchmarkRetainedBytes measures what stays in memory per node and per
// Longhorn volume while the dashboard, watch or agent runs (issue 14): the
// informer's store holding what it keeps on a real apiserver (node-store:
// the *kube.Node its protobuf list and watch read, kube.ReadNodeList;
// volume-store: TransformVolume's *longhorn.Volume), and the model's own
// copy. For comparison it also measures a store of untransformed objects
// (decoded from JSON, so each holds its own strings as a client's would)
// (what an informer without the transforms would keep), and the node store
// of a fake clientset's informer (node-store-transformed: TransformNode's
// stripped *corev1.Node, which the real apiserver's informer kept before
// it read protobuf into *kube.Node). Nodes and volumes are scalefixture's: a kubelet's
// full status with 30 images, a Longhorn volume with a realistic spec and
// status. Each figure is the live heap (HeapAlloc after a GC) a store of
// 5,000 nodes or 10,000 volumes adds, divided by their number.
//
//	go test -run '^$' -bench RetainedBytes -benchtime 1x ./sources/
func BenchmarkRetainedBytes(b *testing.B) {
	const nodes, volumes = 5000, 10000
	now := time.Now()
	var m map[string]float64
	for b.Loop() {
		m = map[string]float64{
			"B/node-store-untransformed": retained(nodes, func() any {
				st := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
				for i := range nodes {
					_ = st.Add(decodedNode(b, i))
				}
				return st
			}),
			"B/node-store-transformed": retained(nodes, func() any {
				st := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
				for i := range nodes {
					t, _ := kube.TransformNode(decodedNode(b, i))
					_ = st.Add(t)
				}
				return st
			}),
			"B/node-store": retained(nodes, func() any {
				st := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
				l, err := kube.ReadNodeList(bytes.NewReader(nodeListProto(b, nodes)))
				if err != nil || len(l.Items) != nodes {
					b.Fatal(err)
				}
				for _, n := range l.Items {
					_ = st.Add(n)
				}
				return st
			}),
			"B/node-model": retained(nodes, func() any {
				c := model.NewCluster("bench", model.Options{})
				for i := range nodes {
					c.Apply(model.NodeUpserted{Node: kube.NodeToModel(decodedNode(b, i))}, now)
				}
				return c
			}),
			"B/volume-store-untransformed": retained(volumes, func() any {
				st := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
				for i := range volumes {
					_ = st.Add(decodedVolume(b, i, nodes))
				}
				return st
			}),
			"B/volume-store": retained(volumes, func() any {
				st := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
				for i := range volumes {
					t, _ := longhorn.TransformVolume(decodedVolume(b, i, nodes))
					_ = st.Add(t)
				}
				return st
			}),
			"B/volume-model": retained(volumes, func() any {
				c := model.NewCluster("bench", model.Options{})
				for i := range volumes {
					c.Apply(model.VolumeUpserted{Volume: longhorn.VolumeToModel(decodedVolume(b, i, nodes))}, now)
				}
				return c
			}),
		}
	}
	for unit, v := range m {
		b.ReportMetric(v, unit)
	}
	b.ReportMetric(0, "ns/op")
}

// decodedNode is node i as a client decodes it: every string its own.
func decodedNode(b *testing.B, i int) *corev1.Node {
	raw, err := json.Marshal(scalefixture.Node(i))
	if err != nil {
		b.Fatal(err)
	}
	n := &corev1.Node{}
	if err := json.Unmarshal(raw, n); err != nil {
		b.Fatal(err)
	}
	return n
}

// nodeListProto is a NodeList of scalefixture's first n nodes as the
// apiserver sends it in protobuf (one list, as the informer reads it).
func nodeListProto(b *testing.B, n int) []byte {
	l := &corev1.NodeList{Items: make([]corev1.Node, n)}
	for i := range n {
		l.Items[i] = *scalefixture.Node(i)
	}
	var buf bytes.Buffer
	enc := scheme.Codecs.EncoderForVersion(protobuf.NewSerializer(scheme.Scheme, scheme.Scheme), corev1.SchemeGroupVersion)
	if err := enc.Encode(l, &buf); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

// decodedVolume is volume i as the dynamic client decodes it.
func decodedVolume(b *testing.B, i, nodes int) *unstructured.Unstructured {
	raw, err := json.Marshal(scalefixture.Volume(i, nodes).Object)
	if err != nil {
		b.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(raw); err != nil {
		b.Fatal(err)
	}
	return u
}

// retained returns the live heap build's result keeps, per object.
func retained(n int, build func() any) float64 {
	var before, after runtime.MemStats
	// Twice each time: one GC only moves sync.Pools' contents (encoding/json's
	// buffers) to their victim caches, which the next frees.
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&before)
	keep := build()
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(keep)
	return float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / float64(n)
}
