package deploy

import (
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
	"github.com/rebootwatch/rebootwatch/internal/testcluster"
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

// TestAlertsAreTheOnesOnCallNeeds pins the alert list (README names it) and
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
	// promtool does fail on a broken expression.
	broken := strings.Replace(string(rulesFile(t)), "max by (kind, lock)", "max by (kind, lock", 1)
	if out, err := check([]byte(broken)); err == nil {
		t.Errorf("promtool accepted a broken expression:\n%s", out)
	}
}
