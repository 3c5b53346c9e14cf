package lock_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/rebootwatch/rebootwatch/internal/lock"
	"github.com/rebootwatch/rebootwatch/internal/testenv/testcluster"
)

const freshBenchNodes = 5000

// BenchmarkFreshNodeRead is the cost of the quorum read of the node list
// that the actor makes before every write (issue 11 §1), on a real
// apiserver holding 5,000 nodes of realistic size (30 images each), with
// the typed client as the CLI, dashboard and agent configure it (protobuf)
// and, for comparison, JSON. One op = one full read (pages of 500).
//
//	REBOOTWATCH_INTEGRATION=1 go test -run '^$' -bench FreshNodeRead -benchtime 10x -timeout 30m ./internal/lock/
func BenchmarkFreshNodeRead(b *testing.B) {
	if !testcluster.Integration() {
		b.Skip("seeds a real apiserver with 5,000 nodes: set " + testcluster.EnvIntegration + "=1 to run")
	}
	c := testcluster.Start(b)
	seedNodes(b, c.Client(b))
	for _, ct := range []string{"protobuf", "json"} {
		b.Run(ct, func(b *testing.B) {
			cfg := rest.CopyConfig(c.Admin)
			if ct == "protobuf" {
				cfg.ContentType = "application/vnd.kubernetes.protobuf"
				cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
			}
			cs, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				b.Fatal(err)
			}
			a := &lock.Actor{Client: cs}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				got, err := a.ReadNodesFresh(context.Background())
				if err != nil {
					b.Fatal(err)
				}
				if len(got) != freshBenchNodes {
					b.Fatalf("read %d nodes, want %d", len(got), freshBenchNodes)
				}
			}
			b.ReportMetric(freshBenchNodes, "nodes")
		})
	}
}

func seedNodes(b *testing.B, cs kubernetes.Interface) {
	b.Helper()
	start := time.Now()
	var images []corev1.ContainerImage
	for i := 0; i < 30; i++ {
		images = append(images, corev1.ContainerImage{Names: []string{
			fmt.Sprintf("registry.example/team/image-%02d@sha256:%064x", i, i),
			fmt.Sprintf("registry.example/team/image-%02d:v1.%d.0", i, i)}, SizeBytes: int64(i+1) << 22})
	}
	jobs := make(chan int)
	var failed atomic.Value
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for i := range jobs {
				name := fmt.Sprintf("node-%05d", i)
				t := metav1.NewTime(time.Now().Add(-time.Hour))
				n := &corev1.Node{
					ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
						"node-role.kubernetes.io/worker": "", "kubernetes.io/hostname": name, "kubernetes.io/os": "linux"}},
					Spec: corev1.NodeSpec{PodCIDR: fmt.Sprintf("10.%d.%d.0/24", i/256, i%256), ProviderID: "bench://" + name},
					Status: corev1.NodeStatus{
						Conditions: []corev1.NodeCondition{
							{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientMemory", LastHeartbeatTime: t, LastTransitionTime: t},
							{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "kubelet is posting ready status", LastHeartbeatTime: t, LastTransitionTime: t},
						},
						NodeInfo: corev1.NodeSystemInfo{BootID: fmt.Sprintf("boot-%05d", i), MachineID: fmt.Sprintf("%032x", i),
							OSImage: "Ubuntu 24.04.3 LTS", KernelVersion: "6.8.0-60-generic", KubeletVersion: "v1.37.2"},
						Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: fmt.Sprintf("10.200.%d.%d", i/256, i%256)}},
						Images:    images,
					},
				}
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				if _, err := cs.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
					failed.Store(err)
				}
				cancel()
			}
		})
	}
	for i := 0; i < freshBenchNodes && failed.Load() == nil; i++ {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		b.Fatalf("seed: %v", err)
	}
	b.Logf("seeded %d nodes in %s", freshBenchNodes, time.Since(start).Round(time.Millisecond))
}
