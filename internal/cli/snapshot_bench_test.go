package cli

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/rebootwatch/rebootwatch/internal/coord/kured/kuredtest"
	"github.com/rebootwatch/rebootwatch/internal/explain"
	"github.com/rebootwatch/rebootwatch/internal/lock"
	"github.com/rebootwatch/rebootwatch/internal/testenv/scalefixture"
	"github.com/rebootwatch/rebootwatch/model"
	"github.com/rebootwatch/rebootwatch/sources/kube"
)

// scaleEvents are the events a one-shot read of scalebench's fixture
// delivers (nodes nodes with a kubelet's full status, kured's DaemonSet
// holding a lock for node 1, a fleetlock Lease held by a ghost, volumes
// Longhorn volumes), read through the kube source from a fake clientset,
// and the time they were read at.
func scaleEvents(b *testing.B, nodes, volumes int) ([]model.Event, time.Time) {
	b.Helper()
	now := time.Now()
	var objs []runtime.Object
	for i := range nodes {
		objs = append(objs, scalefixture.Node(i))
	}
	holder := "0123456789abcdef0123456789abcdef"
	acquired := metav1.NewMicroTime(now.Add(-10 * time.Minute))
	objs = append(objs,
		&appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: scalefixture.KuredName, Namespace: scalefixture.KuredNamespace, UID: "kured-uid",
			Annotations: map[string]string{"weave.works/kured-node-lock": kuredtest.Single(scalefixture.NodeName(1), now.Add(-20*time.Minute), 0, false)}},
			Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "kured",
				Image: "ghcr.io/kubereboot/kured:1.17.1", Args: []string{"--ds-namespace=" + scalefixture.KuredNamespace, "--ds-name=" + scalefixture.KuredName}}}}}}},
		&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "fleetlock-default", Namespace: scalefixture.FleetlockNS, UID: "lease-uid"},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, AcquireTime: &acquired, RenewTime: &acquired}})
	var mu sync.Mutex
	var evs []model.Event
	ctx, cancel := context.WithCancel(context.Background())
	s, err := kube.Start(ctx, kube.Options{Client: fake.NewClientset(objs...), Once: true, Clock: func() time.Time { return now }},
		func(ev model.Event) {
			mu.Lock()
			evs = append(evs, ev)
			mu.Unlock()
		})
	if err != nil {
		b.Fatal(err)
	}
	wctx, wcancel := context.WithTimeout(ctx, time.Minute)
	if err := s.WaitForSync(wctx); err != nil {
		b.Fatal(err)
	}
	wcancel()
	cancel()
	s.Wait()
	batch := make(model.Batch, 0, volumes)
	for i := range volumes {
		batch = append(batch, model.VolumeUpserted{Volume: model.Volume{Namespace: scalefixture.LonghornNamespace,
			Name: fmt.Sprintf("pvc-%08d", i), Robustness: model.NormalRobustness(scalefixture.Robustness[i%len(scalefixture.Robustness)]),
			State: "attached", Replicas: 3, Node: scalefixture.NodeName(i % nodes)}})
	}
	evs = append(evs, batch,
		model.SourceChanged{Health: model.SourceHealth{Name: model.SourceLonghorn, Status: model.StatusOK, LastSync: now}},
		model.SourceChanged{Health: model.SourceHealth{Name: model.SourcePrometheus, Status: model.StatusDisabled, LastSync: now}},
		model.Synced{})
	return evs, now
}

// BenchmarkSnapshotAfterLists is --snapshot -o json's work once every list
// has arrived, at 5,000 nodes + 10,000 volumes of scalebench's fixture:
// the model applies the events, judges the locks and derives phases and
// blockers (Recompute), builds the snapshot and writes its JSON — all on
// the snapshot's critical path, after the last response. Run with
//
//	go test -run '^$' -bench SnapshotAfterLists -benchmem ./internal/cli/
func BenchmarkSnapshotAfterLists(b *testing.B) {
	evs, now := scaleEvents(b, 5000, 10000)
	b.ReportAllocs()
	for b.Loop() {
		e := lock.New(lock.Options{})
		c := model.NewCluster("bench", model.Options{})
		c.Judge, c.Explain = e.Judge, explain.For(explain.Options{})
		c.AwaitSync = true
		for _, ev := range evs {
			c.Apply(ev, now)
		}
		c.Recompute(now)
		if err := writeJSON(discard{}, c.Snapshot(now)); err != nil {
			b.Fatal(err)
		}
	}
}
