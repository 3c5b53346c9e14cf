package deploy

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/rebootwatch/rebootwatch/internal/agent"
	"github.com/rebootwatch/rebootwatch/internal/notify"
	"github.com/rebootwatch/rebootwatch/internal/testenv/testcluster"
)

// exportedMetrics are the names of every metric the agent registers: each
// collector field of agent.Metrics, described, plus the notifier's counter.
func exportedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	var collectors []prometheus.Collector
	m := agent.NewMetrics()
	v := reflect.ValueOf(m).Elem()
	for i := 0; i < v.NumField(); i++ {
		if c, ok := v.Field(i).Interface().(prometheus.Collector); ok {
			if _, isRegistry := c.(*prometheus.Registry); !isRegistry {
				collectors = append(collectors, c)
			}
		}
	}
	collectors = append(collectors, notify.NewWithTargets(nil, notify.Options{}).Counter())
	fq := regexp.MustCompile(`fqName: "([^"]+)"`)
	out := map[string]bool{}
	for _, c := range collectors {
		ch := make(chan *prometheus.Desc, 16)
		go func() { c.Describe(ch); close(ch) }()
		for d := range ch {
			if mm := fq.FindStringSubmatch(d.String()); mm != nil {
				out[mm[1]] = true
			}
		}
	}
	if len(out) < 10 || !out["rebootwatch_lock_verdict"] {
		t.Fatalf("exported metrics look wrong: %v", out)
	}
	return out
}

var metricName = regexp.MustCompile(`\brebootwatch_[a-z_]+`)

// checkQueries fails when a query names no rebootwatch metric or one the
// agent does not export.
func checkQueries(t *testing.T, what string, queries []string, exported map[string]bool) {
	t.Helper()
	if len(queries) == 0 {
		t.Fatalf("%s: no queries", what)
	}
	for _, q := range queries {
		names := metricName.FindAllString(q, -1)
		if len(names) == 0 {
			t.Errorf("%s: query %q names no rebootwatch_ metric", what, q)
		}
		for _, n := range names {
			// Histograms/summaries would add suffixes; the agent has none.
			if !exported[n] {
				t.Errorf("%s: query %q names %s, which the agent does not export", what, q, n)
			}
		}
	}
}

type rule struct {
	Alert       string            `json:"alert"`
	Expr        string            `json:"expr"`
	For         string            `json:"for,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

type ruleGroup struct {
	Name  string `json:"name"`
	Rules []rule `json:"rules"`
}

// ruleGroups returns the groups of deploy/monitoring/prometheusrule.yaml.
func ruleGroups(t *testing.T) []ruleGroup {
	t.Helper()
	for _, o := range monitoringObjects(t) {
		u := o.Object.(*unstructured.Unstructured)
		if u.GetKind() != "PrometheusRule" {
			continue
		}
		spec, _, _ := unstructured.NestedFieldNoCopy(u.Object, "spec")
		b, err := yaml.Marshal(spec)
		if err != nil {
			t.Fatal(err)
		}
		var s struct {
			Groups []ruleGroup `json:"groups"`
		}
		if err := yaml.UnmarshalStrict(b, &s); err != nil {
			t.Fatal(err)
		}
		return s.Groups
	}
	t.Fatal("no PrometheusRule in deploy/monitoring")
	return nil
}

// RulesFile is deploy/monitoring's rules as a Prometheus rule file.
func rulesFile(t *testing.T) []byte {
	t.Helper()
	b, err := yaml.Marshal(map[string]any{"groups": ruleGroups(t)})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestAlertsAreTheOnesOnCallNeeds pins the alert list (docs/agent.md names it) and
// checks each alert: a severity, a summary, a runbook description naming
// the rebootwatch command to run, and only metrics the agent exports.
func TestAlertsAreTheOnesOnCallNeeds(t *testing.T) {
	exported := exportedMetrics(t)
	var names, exprs []string
	for _, g := range ruleGroups(t) {
		for _, r := range g.Rules {
			names = append(names, r.Alert)
			exprs = append(exprs, r.Expr)
			if r.Labels["severity"] == "" || r.Annotations["summary"] == "" {
				t.Errorf("%s: no severity or summary", r.Alert)
			}
			if d := r.Annotations["description"]; !strings.Contains(d, "`rebootwatch ") {
				t.Errorf("%s: description names no rebootwatch command: %q", r.Alert, d)
			}
		}
	}
	want := []string{"RebootwatchAPIErrors", "RebootwatchAgentAbsent", "RebootwatchAgentHeartbeatStale", "RebootwatchExpiredLock",
		"RebootwatchFleetBlocked", "RebootwatchGhostLock", "RebootwatchNoLeader", "RebootwatchNotificationsFailing", "RebootwatchOrphanedLock"}
	sort.Strings(names)
	if !slices.Equal(names, want) {
		t.Errorf("alerts %v, want %v", names, want)
	}
	checkQueries(t, "prometheusrule.yaml", exprs, exported)
}

// TestPromtoolCheckRules runs Debian's promtool (package prometheus) on the
// rules.
func TestPromtoolCheckRules(t *testing.T) {
	if testing.Short() && !testcluster.Integration() {
		t.Skip("needs promtool: skipped in -short mode")
	}
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if testcluster.Integration() {
			t.Fatalf("promtool not found (apt-get install prometheus): %v", err)
		}
		t.Skipf("promtool not installed: %v", err)
	}
	check := func(content []byte) (string, error) {
		p := filepath.Join(t.TempDir(), "rules.yml")
		if err := os.WriteFile(p, content, 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(promtool, "check", "rules", p).CombinedOutput()
		return string(out), err
	}
	if out, err := check(rulesFile(t)); err != nil || !strings.Contains(out, "SUCCESS: 9 rules found") {
		t.Errorf("promtool check rules: %v\n%s", err, out)
	}
	// The dashboard's queries parse as PromQL: promtool checks them as
	// recording rules ($__rate_interval as Grafana would fill it in).
	var dash strings.Builder
	dash.WriteString("groups:\n- name: dashboard\n  rules:\n")
	n := 0
	for _, qs := range dashboardQueries(t) {
		for _, q := range qs {
			n++
			fmt.Fprintf(&dash, "  - record: dashboard:query%d\n    expr: %q\n", n, strings.ReplaceAll(q, "$__rate_interval", "5m"))
		}
	}
	if out, err := check([]byte(dash.String())); err != nil || !strings.Contains(out, fmt.Sprintf("SUCCESS: %d rules found", n)) {
		t.Errorf("promtool on the dashboard's queries: %v\n%s", err, out)
	}
	// promtool does fail on a broken expression.
	broken := strings.Replace(string(rulesFile(t)), "max by (kind, lock)", "max by (kind, lock", 1)
	if out, err := check([]byte(broken)); err == nil {
		t.Errorf("promtool accepted a broken expression:\n%s", out)
	}
}

type dashboardPanel struct {
	ID         int    `json:"id"`
	Title      string `json:"title"`
	Type       string `json:"type"`
	Datasource *struct {
		UID string `json:"uid"`
	} `json:"datasource"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
	Panels []dashboardPanel `json:"panels"`
}

// dashboardQueries returns every query of the Grafana dashboard, by panel.
func dashboardQueries(t *testing.T) map[string][]string {
	t.Helper()
	b, err := Monitoring.ReadFile("monitoring/grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		UID    string           `json:"uid"`
		Title  string           `json:"title"`
		Panels []dashboardPanel `json:"panels"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("grafana-dashboard.json: %v", err)
	}
	if d.UID == "" || d.Title == "" {
		t.Error("the dashboard has no uid or title")
	}
	out := map[string][]string{}
	ids := map[int]bool{}
	var walk func([]dashboardPanel)
	walk = func(ps []dashboardPanel) {
		for _, p := range ps {
			if ids[p.ID] {
				t.Errorf("panel id %d used twice", p.ID)
			}
			ids[p.ID] = true
			if p.Type == "row" {
				walk(p.Panels)
				continue
			}
			if p.Datasource == nil || p.Datasource.UID != "${datasource}" {
				t.Errorf("panel %q does not use the dashboard's datasource variable", p.Title)
			}
			if len(p.Targets) == 0 {
				t.Errorf("panel %q has no query", p.Title)
			}
			for _, tg := range p.Targets {
				out[p.Title] = append(out[p.Title], tg.Expr)
			}
		}
	}
	walk(d.Panels)
	return out
}

// TestGrafanaDashboardQueriesUseExportedMetrics: every query of the
// dashboard names a metric the agent exports, and the dashboard covers lock
// verdicts, fleet progress, actions and API errors.
func TestGrafanaDashboardQueriesUseExportedMetrics(t *testing.T) {
	exported := exportedMetrics(t)
	var all []string
	for title, qs := range dashboardQueries(t) {
		checkQueries(t, "dashboard panel "+title, qs, exported)
		all = append(all, qs...)
	}
	joined := strings.Join(all, "\n")
	for _, m := range []string{"rebootwatch_lock_verdict", "rebootwatch_fleet_nodes", "rebootwatch_fleet_upgraded_nodes",
		"rebootwatch_actions_total", "rebootwatch_api_errors_total", "rebootwatch_fleet_blocked_seconds"} {
		if !strings.Contains(joined, m) {
			t.Errorf("no dashboard panel shows %s", m)
		}
	}
}
