package deploy

import (
	"context"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	pmodel "github.com/prometheus/common/model"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/rebootwatch/rebootwatch/internal/testenv/testprom"
	promsource "github.com/rebootwatch/rebootwatch/sources/prometheus"
)

// fleetBrakeObjects reads deploy/monitoring/fleet-brake.yaml.
func fleetBrakeObjects(t *testing.T) []Object {
	t.Helper()
	b, err := os.ReadFile("monitoring/fleet-brake.yaml")
	if err != nil {
		t.Fatal(err)
	}
	objs, err := Decode("monitoring/fleet-brake.yaml", b)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// TestHelmFleetBrakeEqualsDeployMonitoring: deploy/monitoring/fleet-brake.yaml
// is the chart's fleet brake with the default values; K is a value.
func TestHelmFleetBrakeEqualsDeployMonitoring(t *testing.T) {
	v := defaultValues
	v.set = []string{"fleetBrake.enabled=true"}
	var got []Object
	for _, o := range render(t, v) {
		if u, ok := o.Object.(*unstructured.Unstructured); ok && strings.HasSuffix(u.GetName(), "-fleet-brake") {
			got = append(got, o)
		}
	}
	compareObjects(t, "deploy/monitoring/fleet-brake.yaml vs chart defaults", byKey(t, got), byKey(t, fleetBrakeObjects(t)))

	v.set = []string{"fleetBrake.enabled=true", "fleetBrake.maxClustersRebooting=5", "fleetBrake.clusterLabel=k8s_cluster"}
	found := false
	for _, o := range render(t, v) {
		if u, ok := o.Object.(*unstructured.Unstructured); ok && strings.HasSuffix(u.GetName(), "-fleet-brake") {
			b, _ := yaml.Marshal(u.Object)
			found = strings.Contains(string(b), ">= 5") && strings.Contains(string(b), "sum by (k8s_cluster)")
		}
	}
	if !found {
		t.Error("fleetBrake.maxClustersRebooting and clusterLabel do not reach the rule")
	}
	v.set = []string{"fleetBrake.enabled=true", "fleetBrake.maxClustersRebooting=0"}
	if out, err := runHelm(t, append([]string{"template", v.release, chartDir}, v.args()...)...); err == nil {
		t.Errorf("K=0 accepted:\n%.300s", out)
	}
}

// fleetBrakeRules is the brake as a Prometheus rule file.
func fleetBrakeRules(t *testing.T) string {
	t.Helper()
	objs := fleetBrakeObjects(t)
	if len(objs) == 0 {
		t.Fatal("no rule in monitoring/fleet-brake.yaml")
	}
	u := objs[0].Object.(*unstructured.Unstructured)
	spec, _, _ := unstructured.NestedFieldNoCopy(u.Object, "spec")
	b, err := yaml.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestIntegrationFleetBrakeFires (issue 25 §3): a real Prometheus sees
// three clusters' agents (rebootwatch_fleet_nodes with a cluster label)
// and evaluates the brake with its default K=2. One cluster rebooting: it
// does not fire, and kured's alert blocker (--alert-filter-regexp
// ^RebootwatchTooManyClustersRebooting$ --alert-filter-match-only) and the
// agent's gate (--prometheus-alerts) let the next reboot go. A second
// cluster starts draining: it fires, and both refuse the next reboot.
// The first finishes: it resolves.
func TestIntegrationFleetBrakeFires(t *testing.T) {
	t.Parallel() // beside TestImageFromTheDocs; its Prometheus and exporters are its own
	testprom.Binary(t)
	phases := map[string]*prometheus.GaugeVec{}
	var targets []string
	for _, c := range []string{"a", "b", "c"} {
		reg := prometheus.NewRegistry()
		g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "rebootwatch_fleet_nodes", Help: "Nodes by reboot phase."}, []string{"cluster", "phase"})
		reg.MustRegister(g)
		for _, p := range []string{"idle", "pending", "draining", "rebooting", "recovering", "done"} {
			g.WithLabelValues(c, p).Set(0)
		}
		g.WithLabelValues(c, "idle").Set(3)
		phases[c] = g
		srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		t.Cleanup(srv.Close)
		targets = append(targets, strings.TrimPrefix(srv.URL, "http://"))
	}
	prom := testprom.Start(t, testprom.Options{Targets: targets, Rules: fleetBrakeRules(t)})

	kured := promsource.Options{URL: prom.URL, KuredAlerts: &promsource.KuredAlerts{Filter: "^RebootwatchTooManyClustersRebooting$", MatchOnly: true}}
	agent := promsource.Options{URL: prom.URL, AlertFilter: "^RebootwatchTooManyClustersRebooting$"}
	blocking := func(o promsource.Options) []string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		names, filter, err := promsource.QueryAlerts(ctx, o)
		if err != nil || !filter {
			t.Fatalf("query alerts: %v (filter %v)", err, filter)
		}
		return names
	}
	cl, err := api.NewClient(api.Config{Address: prom.URL})
	if err != nil {
		t.Fatal(err)
	}
	papi := v1.NewAPI(cl)
	query := func(q string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		v, _, _, err := papi.Query(ctx, q, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		vec, _ := v.(pmodel.Vector)
		if len(vec) == 0 {
			return ""
		}
		return vec[0].Value.String()
	}
	// evaluatedSince reports whether the brake's group was evaluated
	// after t (so over the samples a query saw at t).
	evaluatedSince := func(at time.Time) bool {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		r, err := papi.Rules(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range r.Groups {
			for _, rule := range g.Rules {
				if a, ok := rule.(v1.AlertingRule); ok && a.Name == "RebootwatchTooManyClustersRebooting" {
					return a.LastEvaluation.After(at)
				}
			}
		}
		return false
	}
	waitUntil := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting until %s", what)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	phases["a"].WithLabelValues("a", "idle").Set(2)
	phases["a"].WithLabelValues("a", "rebooting").Set(1)
	waitUntil("Prometheus sees a rebooting", func() bool {
		return query(`count(sum by (cluster) (rebootwatch_fleet_nodes{phase=~"draining|rebooting|recovering"}) > 0)`) == "1"
	})
	seen := time.Now()
	waitUntil("the brake evaluated over a rebooting", func() bool { return evaluatedSince(seen) })
	if n := blocking(kured); len(n) != 0 {
		t.Fatalf("one cluster rebooting: kured would be blocked by %q", n)
	}
	if n := blocking(agent); len(n) != 0 {
		t.Fatalf("one cluster rebooting: the agent's gate blocks on %q", n)
	}

	phases["b"].WithLabelValues("b", "idle").Set(2)
	phases["b"].WithLabelValues("b", "draining").Set(1)
	waitUntil("the brake fires with two clusters in a cycle", func() bool {
		return slices.Equal(blocking(kured), []string{"RebootwatchTooManyClustersRebooting"})
	})
	if n := blocking(agent); !slices.Equal(n, []string{"RebootwatchTooManyClustersRebooting"}) {
		t.Errorf("the agent's gate does not refuse: %q", n)
	}

	phases["a"].WithLabelValues("a", "rebooting").Set(0)
	phases["a"].WithLabelValues("a", "done").Set(1)
	waitUntil("the brake resolves once a finished", func() bool { return len(blocking(kured)) == 0 })
}
