package live

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rebootwatch/rebootwatch/internal/testenv/testcluster"
	"github.com/rebootwatch/rebootwatch/internal/testenv/testprom"
	"github.com/rebootwatch/rebootwatch/model"
)

// Issue 10 §3: with no --prometheus-url/--prometheus-alerts, kured's own
// Prometheus URL and alert filter (from its DaemonSet's args) become the
// alert gate's defaults, with kured's semantics (the regexp names alerts to
// ignore), and the gate says whose filter it used. Real apiserver, real
// Prometheus.
func TestKuredPrometheusIsTheAlertGateDefault(t *testing.T) {
	tc := testcluster.SharedAlone(t)
	prom := testprom.Start(t, testprom.Options{Rules: `groups:
  - name: test
    rules:
      - alert: Watchdog
        expr: vector(1)
      - alert: DiskFull
        expr: vector(1)
`})
	cs := tc.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	labels := map[string]string{"app.kubernetes.io/name": "kured"}
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "kured", Namespace: "kube-system", Labels: labels},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "kured", Image: "ghcr.io/kubereboot/kured:1.23.0",
					Command: []string{"/usr/bin/kured"}, Args: []string{"--prometheus-url=" + prom.URL, "--alert-filter-regexp=^Watchdog$"}}}}}}}
	if _, err := cs.AppsV1().DaemonSets("kube-system").Create(ctx, ds, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s, err := Open(ctx, Options{Config: tc.Admin, Context: "itest", RequestTimeout: 5 * time.Second, PrometheusInterval: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c, err := s.Collect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		names, known := c.FiringAlerts()
		if known && len(names) == 1 && names[0] == "DiskFull" {
			break
		}
		if time.Now().After(deadline) {
			h, _ := c.Source(model.SourcePrometheus)
			t.Fatalf("alerts %v known %v; prometheus %+v", names, known, h)
		}
		select {
		case ev := <-s.Events:
			c.Apply(ev, s.Clock())
		case <-time.After(200 * time.Millisecond):
		}
	}
	if from := c.AlertFilterFrom(); !strings.Contains(from, "kured's own") || !strings.Contains(from, "kube-system/kured") {
		t.Fatalf("whose filter: %q", from)
	}
}
