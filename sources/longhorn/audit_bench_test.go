package longhorn

import (
	"context"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/rebootwatch/rebootwatch/internal/testenv/scalefixture"
	"github.com/rebootwatch/rebootwatch/internal/testenv/testcluster"
	"github.com/rebootwatch/rebootwatch/sources"
)

// BenchmarkAudit is the cost of one audit of the volume informer
// (audit.go) at 10,000 volumes on the real apiserver: the quorum list of
// the volumes' metadata as protobuf, read as it streams, compared with a
// cache of 10,000 *Volume as the informer keeps them. Beside wall time and
// allocations it reports this process's CPU (cpu-s/op) and the
// apiserver's (apiserver-cpu-s/op, from its process_cpu_seconds_total).
// "audit-json-metadata" is the audit before issue 35 §2 (the metadata as
// JSON), "audit-whole-objects" the volumes' JSON, and "relist" the
// informer's own list of the same volumes, for scale.
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
		cpu := startCPU(b, rc)
		b.ReportAllocs()
		for b.Loop() {
			a.Once(ctx)
		}
		cpu.report(b)
		if l := a.Lag(); l.Behind() {
			b.Fatalf("behind: %s", l.Message(l.Since))
		}
	})
	b.Run("volumes=10000/audit-json-metadata", func(b *testing.B) {
		ja := &sources.Audit{What: "volume", Cache: a.Cache, Get: a.Get,
			List: func(ctx context.Context, each func(ns, name, rv []byte)) error { return rv.audit(ctx, true, each) }}
		cpu := startCPU(b, rc)
		b.ReportAllocs()
		for b.Loop() {
			ja.Once(ctx)
		}
		cpu.report(b)
		if l := ja.Lag(); l.Behind() {
			b.Fatalf("behind: %s", l.Message(l.Since))
		}
	})
	b.Run("volumes=10000/audit-whole-objects", func(b *testing.B) {
		wa := &sources.Audit{What: "volume", Cache: a.Cache, Get: a.Get,
			List: func(ctx context.Context, each func(ns, name, rv []byte)) error { return rv.audit(ctx, false, each) }}
		cpu := startCPU(b, rc)
		b.ReportAllocs()
		for b.Loop() {
			wa.Once(ctx)
		}
		cpu.report(b)
	})
	b.Run("volumes=10000/relist", func(b *testing.B) {
		cpu := startCPU(b, rc)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := rv.List(ctx, metav1.ListOptions{}); err != nil {
				b.Fatal(err)
			}
		}
		cpu.report(b)
	})
}

// cpuStart is the CPU this process and the apiserver had used when a
// benchmark started.
type cpuStart struct {
	rc        rest.Interface
	self, api float64
}

func startCPU(b *testing.B, rc rest.Interface) cpuStart {
	return cpuStart{rc: rc, self: selfCPU(b), api: apiserverCPU(b, rc)}
}

// report reports the CPU seconds per op of this process and of the
// apiserver since s.
func (s cpuStart) report(b *testing.B) {
	n := float64(b.N)
	b.ReportMetric((selfCPU(b)-s.self)/n, "cpu-s/op")
	b.ReportMetric((apiserverCPU(b, s.rc)-s.api)/n, "apiserver-cpu-s/op")
}

// selfCPU is this process's CPU time (user + system) in seconds.
func selfCPU(b *testing.B) float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// apiserverCPU is the apiserver's CPU time in seconds, from its metrics.
func apiserverCPU(b *testing.B, rc rest.Interface) float64 {
	raw, err := rc.Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.Lines(string(raw)) {
		if v, ok := strings.CutPrefix(line, "process_cpu_seconds_total "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				b.Fatal(err)
			}
			return f
		}
	}
	b.Fatal("no process_cpu_seconds_total in the apiserver's metrics")
	return 0
}
