package prometheus_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	promclient "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/rebootwatch/rebootwatch/internal/testenv/testprom"
	"github.com/rebootwatch/rebootwatch/model"
	"github.com/rebootwatch/rebootwatch/sources/prometheus"
	"github.com/rebootwatch/rebootwatch/sources/sourcetest"
)

// exporter serves kured_reboot_required{node} like kured's pods do.
func exporter(t *testing.T) (*promclient.GaugeVec, string) {
	reg := promclient.NewRegistry()
	g := promclient.NewGaugeVec(promclient.GaugeOpts{Name: "kured_reboot_required",
		Help: "OS requires reboot due to software updates."}, []string{"node"})
	reg.MustRegister(g)
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	t.Cleanup(srv.Close)
	return g, strings.TrimPrefix(srv.URL, "http://")
}

func required(c *model.Cluster, node string) string {
	v, known := c.RebootRequired(node)
	switch {
	case !known:
		return "unknown"
	case v:
		return "yes"
	}
	return "no"
}

func status(c *model.Cluster) model.SourceStatus {
	h, _ := c.Source(model.SourcePrometheus)
	return h.Status
}

const rules = `groups:
  - name: test
    rules:
      - alert: RebootBlocker
        expr: vector(1)
      - alert: Harmless
        expr: vector(1)
`

func TestRealPrometheus(t *testing.T) {
	g, target := exporter(t)
	g.WithLabelValues("w-1").Set(1)
	g.WithLabelValues("w-2").Set(0)
	prom := testprom.Start(t, testprom.Options{Targets: []string{target}, Rules: rules})

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := sourcetest.NewRecorder("t").WithTimeout(sourcetest.IntegrationTimeout)
	s, err := prometheus.Start(ctx, prometheus.Options{URL: prom.URL, Interval: 500 * time.Millisecond,
		AlertFilter: "^RebootBlocker$"}, r.Sink)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
	r.Eventually(t, "per-node values and the alert gate", func(c *model.Cluster) bool {
		alerts, known := c.FiringAlerts()
		return status(c) == model.StatusOK && required(c, "w-1") == "yes" && required(c, "w-2") == "no" &&
			required(c, "w-3") == "unknown" && known && len(alerts) == 1 && alerts[0] == "RebootBlocker"
	})
	g.WithLabelValues("w-2").Set(1)
	g.WithLabelValues("w-1").Set(0)
	r.Eventually(t, "changed values", func(c *model.Cluster) bool {
		return required(c, "w-1") == "no" && required(c, "w-2") == "yes"
	})
}

func TestRealPrometheusStoppedAndBack(t *testing.T) {
	g, target := exporter(t)
	g.WithLabelValues("w-1").Set(1)
	prom := testprom.Start(t, testprom.Options{Targets: []string{target}})

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := sourcetest.NewRecorder("t").WithTimeout(sourcetest.IntegrationTimeout)
	if _, err := prometheus.Start(ctx, prometheus.Options{URL: prom.URL, Interval: 300 * time.Millisecond,
		RequestTimeout: 2 * time.Second}, r.Sink); err != nil {
		t.Fatal(err)
	}
	r.Eventually(t, "ok", func(c *model.Cluster) bool { return status(c) == model.StatusOK && required(c, "w-1") == "yes" })

	prom.Stop()
	r.Eventually(t, "error or stale while Prometheus is down", func(c *model.Cluster) bool {
		h, _ := c.Source(model.SourcePrometheus)
		return (h.Status == model.StatusError && strings.Contains(h.Message, "kured_reboot_required")) || h.Status == model.StatusStale
	})
	var att []model.Attention
	r.Read(func(c *model.Cluster) { att = c.Attention(time.Now()) })
	found := false
	for _, a := range att {
		found = found || strings.Contains(a.Message, "prometheus")
	}
	if !found {
		t.Errorf("the model's attention list does not mention the failing source: %+v", att)
	}

	g.WithLabelValues("w-1").Set(0)
	prom.Restart(t)
	r.Eventually(t, "recovered with fresh values", func(c *model.Cluster) bool {
		return status(c) == model.StatusOK && required(c, "w-1") == "no"
	})
}
