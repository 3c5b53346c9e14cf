package scalebench_test

import (
	"context"
	"errors"
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
	// list reads one list whole, gzip as client-go asks for it, and returns
	// its compressed size. It returns errors rather than failing the
	// benchmark: two lists run on goroutines of their own below, where
	// b.Fatal must not be called.
	list := func(ctx context.Context, path, accept string) (int64, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, host+path, nil)
		if err != nil {
			return 0, err
		}
		req.Header.Set("Accept", accept)
		// Set by hand, the transport leaves the body compressed: the
		// server's work, not our gunzip, is measured.
		req.Header.Set("Accept-Encoding", "gzip")
		resp, err := hc.Do(req)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		n, err := io.Copy(io.Discard, resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			return 0, fmt.Errorf("GET %s: %s, %v", path, resp.Status, err)
		}
		if enc := resp.Header.Get("Content-Encoding"); enc != "gzip" {
			return 0, fmt.Errorf("GET %s came as %q, not gzip: not the response client-go gets", path, enc)
		}
		return n, nil
	}
	volumes := func(ctx context.Context) (int64, error) {
		return list(ctx, "/apis/longhorn.io/v1beta2/volumes", "application/json")
	}
	nodes := func(ctx context.Context) (int64, error) {
		return list(ctx, "/api/v1/nodes", "application/vnd.kubernetes.protobuf")
	}
	var tv, tn, tboth []float64
	var vBytes, nBytes int64
	for range sc.runs {
		ctx := context.Background()
		t0 := time.Now()
		var err error
		if vBytes, err = volumes(ctx); err != nil {
			b.Fatal(err)
		}
		tv = append(tv, time.Since(t0).Seconds())
		t0 = time.Now()
		if nBytes, err = nodes(ctx); err != nil {
			b.Fatal(err)
		}
		tn = append(tn, time.Since(t0).Seconds())
		t0 = time.Now()
		var wg sync.WaitGroup
		var verr, nerr error
		wg.Go(func() { _, verr = volumes(ctx) })
		wg.Go(func() { _, nerr = nodes(ctx) })
		wg.Wait()
		tboth = append(tboth, time.Since(t0).Seconds())
		if err := errors.Join(verr, nerr); err != nil {
			b.Fatal(err)
		}
	}
	sc.report(b, "server alone", fmt.Sprintf("volumes JSON list s (%.1f MB gzipped)", float64(vBytes)/1e6), tv)
	sc.report(b, "server alone", fmt.Sprintf("nodes protobuf list s (%.1f MB gzipped)", float64(nBytes)/1e6), tn)
	sc.report(b, "server alone", "both at once s", tboth)
}
