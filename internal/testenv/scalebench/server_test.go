package scalebench_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/rebootwatch/rebootwatch/sources/longhorn"
)

// server measures what the apiserver alone needs to serve the lists a
// snapshot reads, with nothing decoded: a plain HTTP client reads every
// byte and throws it away. It is the floor under --snapshot's wall time:
//
//   - volumes JSON: the whole Longhorn volume list, JSON, gzip as client-go
//     asks (what the snapshot read before it asked for a Table, and still
//     reads from a server or CRD without a usable one);
//   - volumes Table: longhorn-system's volumes as a meta.k8s.io/v1 Table of
//     Longhorn's printer columns without the objects (includeObject=None),
//     as the snapshot asks for them (sources/longhorn/once.go);
//   - volumes Table with metadata: the same Table with each row's object
//     metadata (includeObject=Metadata), what an informer seeded from the
//     Table would need (issue 35 §1);
//   - volumes elsewhere: the JSON list of the other namespaces' volumes
//     (fieldSelector metadata.namespace!=longhorn-system), which the
//     snapshot asks for beside the Table: empty here, as usually;
//   - nodes: the nodes as protobuf, gzip, in one request;
//   - nodes metadata: the same nodes' metadata only
//     (PartialObjectMetadataList, protobuf), what a fresh read that GETs
//     only the nodes whose resourceVersion moved would list first (issue
//     35 §2);
//   - snapshot's lists at once: the Table, the other namespaces' list and
//     the nodes started together, until the last byte of all three.
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
		// The apiserver compresses only responses over 128 KiB (an
		// empty list of other namespaces' volumes is not).
		if enc := resp.Header.Get("Content-Encoding"); enc != "gzip" && n >= 128<<10 {
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
	nodesMeta := func(ctx context.Context) (int64, error) {
		return list(ctx, "/api/v1/nodes", "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1")
	}
	table := func(ctx context.Context) (int64, error) {
		return list(ctx, "/apis/longhorn.io/v1beta2/namespaces/"+longhorn.LonghornNamespace+"/volumes?includeObject=None", longhorn.TableAccept)
	}
	// tableMeta is the same Table with each row's object metadata
	// (includeObject=Metadata: name, namespace, uid, resourceVersion,
	// labels, managedFields): what an informer seeded from a Table would
	// need for its store and its watch's audit (issue 35 §1).
	tableMeta := func(ctx context.Context) (int64, error) {
		return list(ctx, "/apis/longhorn.io/v1beta2/namespaces/"+longhorn.LonghornNamespace+"/volumes?includeObject=Metadata", longhorn.TableAccept)
	}
	elsewhere := func(ctx context.Context) (int64, error) {
		return list(ctx, "/apis/longhorn.io/v1beta2/volumes?fieldSelector="+
			url.QueryEscape("metadata.namespace!="+longhorn.LonghornNamespace), "application/json")
	}
	// timed runs f and appends its time to *to.
	timed := func(to *[]float64, f func(context.Context) (int64, error)) int64 {
		t0 := time.Now()
		n, err := f(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		*to = append(*to, time.Since(t0).Seconds())
		return n
	}
	var tv, tt, tm, te, tn, tnm, tall []float64
	var vBytes, tBytes, mBytes, eBytes, nBytes, nmBytes int64
	for range sc.runs {
		vBytes = timed(&tv, volumes)
		tBytes = timed(&tt, table)
		mBytes = timed(&tm, tableMeta)
		eBytes = timed(&te, elsewhere)
		nBytes = timed(&tn, nodes)
		nmBytes = timed(&tnm, nodesMeta)
		ctx := context.Background()
		t0 := time.Now()
		var wg sync.WaitGroup
		var terr, eerr, nerr error
		wg.Go(func() { _, terr = table(ctx) })
		wg.Go(func() { _, eerr = elsewhere(ctx) })
		wg.Go(func() { _, nerr = nodes(ctx) })
		wg.Wait()
		tall = append(tall, time.Since(t0).Seconds())
		if err := errors.Join(terr, eerr, nerr); err != nil {
			b.Fatal(err)
		}
	}
	mb := func(n int64) string { return fmt.Sprintf("%.2f MB", float64(n)/1e6) }
	sc.report(b, "server alone", "volumes JSON list s ("+mb(vBytes)+" gzipped)", tv)
	sc.report(b, "server alone", "volumes Table s ("+mb(tBytes)+" gzipped)", tt)
	sc.report(b, "server alone", "volumes Table with metadata s ("+mb(mBytes)+" gzipped)", tm)
	sc.report(b, "server alone", "volumes elsewhere s ("+mb(eBytes)+")", te)
	sc.report(b, "server alone", "nodes protobuf list s ("+mb(nBytes)+" gzipped)", tn)
	sc.report(b, "server alone", "nodes metadata, protobuf, s ("+mb(nmBytes)+" gzipped)", tnm)
	sc.report(b, "server alone", "snapshot's lists at once s", tall)
}
