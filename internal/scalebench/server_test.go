package scalebench_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// server measures what the apiserver alone needs to serve the lists a
// snapshot reads, with nothing decoded: a plain HTTP client reads every
// byte and throws it away. It is the floor under --snapshot's wall time:
//
//   - volumes: the Longhorn volume list, JSON, gzip as client-go asks (one
//     request, as the snapshot makes it);
//   - nodes: the nodes as protobuf, gzip, in one request (the snapshot
//     pages them by 500, which costs the server a little more);
//   - both: the two started together, until the last byte of both.
func (sc *scaleCase) server(b *testing.B) {
	hc, err := rest.HTTPClientFor(sc.c.Admin)
	if err != nil {
		b.Fatal(err)
	}
	host := sc.c.Admin.Host
	get := func(ctx context.Context, path, accept string) (string, int64) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, host+path, nil)
		if err != nil {
			b.Fatal(err)
		}
		req.Header.Set("Accept", accept)
		// Set by hand, the transport leaves the body compressed: the
		// server's work, not our gunzip, is measured.
		req.Header.Set("Accept-Encoding", "gzip")
		resp, err := hc.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		n, err := io.Copy(io.Discard, resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			b.Fatalf("GET %s: %s, %v", path, resp.Status, err)
		}
		return resp.Header.Get("Content-Encoding"), n
	}
	volumes := func(ctx context.Context) int64 {
		enc, n := get(ctx, "/apis/longhorn.io/v1beta2/volumes", "application/json")
		if enc != "gzip" {
			b.Fatalf("the volume list came as %q, not gzip: not the response client-go gets", enc)
		}
		return n
	}
	nodes := func(ctx context.Context) int64 {
		enc, n := get(ctx, "/api/v1/nodes", "application/vnd.kubernetes.protobuf")
		if enc != "gzip" {
			b.Fatalf("the node list came as %q, not gzip: not the response client-go gets", enc)
		}
		return n
	}
	var tv, tn, tboth []float64
	var vBytes, nBytes int64
	for range sc.runs {
		ctx := context.Background()
		t0 := time.Now()
		vBytes = volumes(ctx)
		tv = append(tv, time.Since(t0).Seconds())
		t0 = time.Now()
		nBytes = nodes(ctx)
		tn = append(tn, time.Since(t0).Seconds())
		t0 = time.Now()
		var wg sync.WaitGroup
		wg.Go(func() { volumes(ctx) })
		wg.Go(func() { nodes(ctx) })
		wg.Wait()
		tboth = append(tboth, time.Since(t0).Seconds())
	}
	sc.report(b, "server alone", fmt.Sprintf("volumes JSON list s (%.1f MB gzipped)", float64(vBytes)/1e6), tv)
	sc.report(b, "server alone", fmt.Sprintf("nodes protobuf list s (%.1f MB gzipped)", float64(nBytes)/1e6), tn)
	sc.report(b, "server alone", "both at once s", tboth)
}
