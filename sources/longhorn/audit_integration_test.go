package longhorn

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// TestAuditReadsProtobufMetadata (issue 35 §2): the volume audit asks the
// real apiserver for the volumes' metadata as protobuf (half the server's
// CPU of the same metadata as JSON, the audit's whole cost at 10,000
// volumes) and still finds a change the cache has not got. Behind a proxy
// that sends no protobuf (it rewrites the Accept header to JSON, or
// answers protobuf with 406) it reads the JSON metadata list from then on,
// with the same verdicts.
func TestAuditReadsProtobufMetadata(t *testing.T) {
	t.Parallel()
	c, ns, ri := volumeNamespace(t)
	createVol(t, ri, "pvc-a", "healthy", "w-1")
	createVol(t, ri, "pvc-b", "healthy", "w-2")

	for i, proxy := range []string{"none", "JSON only", "406 to protobuf"} {
		t.Run(proxy, func(t *testing.T) {
			var (
				mu    sync.Mutex
				types []string // the Content-Type of every volume list answered
			)
			rp := c.ReverseProxy(t, c.Admin)
			rp.ModifyResponse = func(resp *http.Response) error {
				if strings.HasSuffix(resp.Request.URL.Path, "/volumes") {
					mu.Lock()
					types = append(types, resp.Header.Get("Content-Type"))
					mu.Unlock()
				}
				return nil
			}
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				protobuf := strings.Contains(r.Header.Get("Accept"), "protobuf")
				switch {
				case proxy == "JSON only" && protobuf:
					r.Header.Set("Accept", "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1")
				case proxy == "406 to protobuf" && protobuf:
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(http.StatusNotAcceptable)
					_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotAcceptable","code":406}`))
					return
				}
				rp.ServeHTTP(w, r)
			}))
			t.Cleanup(srv.Close)
			rc, err := NewREST(&rest.Config{Host: srv.URL, QPS: -1})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			obj, err := restVolumes{c: rc, ns: ns}.List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			store := cache.NewStore(cache.MetaNamespaceKeyFunc)
			for i := range obj.(*VolumeList).Items {
				if err := store.Add(&obj.(*VolumeList).Items[i]); err != nil {
					t.Fatal(err)
				}
			}
			s := &Source{opts: Options{REST: rc, Namespace: ns, AuditGrace: 1}}
			a := s.newAudit(store, nil)
			mu.Lock()
			types = nil
			mu.Unlock()
			a.Once(ctx)
			if l := a.Lag(); l.Behind() {
				t.Fatalf("the cache agrees with the server, yet: %s", l.Message(l.Since))
			}
			// A change the cache does not get (each subtest's its own).
			setRobustness(t, ri, "pvc-b", []string{"degraded", "faulted", "unknown"}[i])
			a.Once(ctx)
			if l := a.Lag(); !l.Behind() || l.Key.Name != "pvc-b" {
				t.Fatalf("a change the cache has not got: lag %+v", l)
			}
			mu.Lock()
			defer mu.Unlock()
			want := "application/vnd.kubernetes.protobuf"
			if proxy != "none" {
				want = "application/json"
			}
			if len(types) < 2 {
				t.Fatalf("volume lists answered: %q", types)
			}
			for _, ct := range types[len(types)-2:] {
				if !strings.HasPrefix(ct, want) {
					t.Errorf("the audit's lists came as %q, want %s", types, want)
					break
				}
			}
		})
	}
}
