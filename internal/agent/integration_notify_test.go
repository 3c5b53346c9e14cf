package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rebootwatch/rebootwatch/deploy"
	"github.com/rebootwatch/rebootwatch/internal/testenv/testprom"
	"github.com/rebootwatch/rebootwatch/model"
)

// webhook is a generic-webhook receiver on loopback.
type webhook struct {
	srv  *httptest.Server
	mu   sync.Mutex
	msgs []string
}

func startWebhook(t *testing.T) *webhook {
	t.Helper()
	w := &webhook{}
	w.srv = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.mu.Lock()
		w.msgs = append(w.msgs, string(b))
		w.mu.Unlock()
	}))
	t.Cleanup(w.srv.Close)
	return w
}

func (w *webhook) messages() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.msgs...)
}

func countContaining(msgs []string, s string) int {
	n := 0
	for _, m := range msgs {
		if strings.Contains(m, s) {
			n++
		}
	}
	return n
}

// TestIntegrationNotifyGhostAndReapOnce: two agents (one leader) with the
// same --notify-url, the deploy/ RBAC and a TokenRequest token; a fleetlock
// holder's Node is deleted: the webhook receives the ghost and the reap
// notifications exactly once each, across many further iterations, and
// the URL's token appears in no log line.
func TestIntegrationNotifyGhostAndReapOnce(t *testing.T) {
	admin, bin, kc, token := heldLeaseCluster(t)

	hook := startWebhook(t)
	const secret = "T0KEN-4f9a2c"
	url := "generic+" + hook.srv.URL + "/hooks/" + secret
	args := []string{"--interval=1s", "--request-timeout=10s", "--notify-url=" + url}
	a := startAgentProc(t, bin, "agent-a", kc, args...)
	b := startAgentProc(t, bin, "agent-b", kc, args...)
	var leader *agentProc
	eventually(t, "one agent leads and sees n1 holding the lock", func() (bool, string) {
		for _, p := range []*agentProc{a, b} {
			hbs := p.heartbeats(t)
			if len(hbs) == 0 {
				continue
			}
			hb := hbs[len(hbs)-1]
			if l, ok := fleetlockLock(hb); ok && hb.Leader && l.Verdict == model.VerdictHeld {
				leader = p
				return true, ""
			}
		}
		return false, a.tail(3) + "\n" + b.tail(3)
	})
	if msgs := hook.messages(); len(msgs) != 0 {
		t.Fatalf("notifications before anything happened: %q", msgs)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := admin.CoreV1().Nodes().Delete(ctx, "n1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	leader.waitHeartbeat(t, "the ghost is reaped", func(hb heartbeat) bool {
		l, ok := fleetlockLock(hb)
		return ok && l.Verdict == model.VerdictGhost && l.Outcome == model.OutcomeDone
	})
	eventually(t, "the webhook received the ghost and the reap", func() (bool, string) {
		msgs := hook.messages()
		return countContaining(msgs, "turned ghost") >= 1 && countContaining(msgs, "reaped fleetlock:default/fleetlock-default") >= 1,
			fmt.Sprintf("%q", msgs)
	})
	// Further iterations of both agents (1s interval) tell nothing again.
	ma, mb := a.mark(t), b.mark(t)
	for _, p := range []struct {
		p    *agentProc
		mark int
	}{{a, ma}, {b, mb}} {
		seen := 0
		p.p.waitHeartbeatSince(t, p.mark, "three more iterations", func(hb heartbeat) bool {
			seen++
			return seen >= 3
		})
	}
	msgs := hook.messages()
	if countContaining(msgs, "turned ghost") != 1 || countContaining(msgs, "reaped fleetlock:default/fleetlock-default") != 1 || len(msgs) != 2 {
		t.Fatalf("want exactly one ghost and one reap notification, got %d: %q", len(msgs), msgs)
	}
	ghost := msgs[0]
	if !strings.HasPrefix(ghost, "rebootwatch-agent: fleetlock lock default/fleetlock-default turned ghost, holder "+testZincatiID) ||
		!strings.Contains(ghost, "rebootwatch reap --kind fleetlock --lock default/fleetlock-default") {
		t.Errorf("ghost notification %q", ghost)
	}
	sent := regexp.MustCompile(`rebootwatch_notifications_total\{result="sent",service="generic\+http"\} (\d+)`)
	if m := sent.FindStringSubmatch(leader.metrics(t)); m == nil || m[1] != "2" {
		t.Errorf("leader's rebootwatch_notifications_total sent = %v, want 2", m)
	}
	for _, p := range []*agentProc{a, b} {
		if strings.Contains(p.out.String(), secret) {
			t.Errorf("%s's log contains the notify URL's token", p.name)
		}
	}
	mustNotContainToken(t, token, a, b)
}

// alertRules returns deploy/monitoring's rules with every `for:` shortened
// to d, so a test sees an alert go pending and fire in seconds.
func alertRules(t *testing.T, d string) string {
	t.Helper()
	b, err := deploy.PrometheusRules()
	if err != nil {
		t.Fatal(err)
	}
	return regexp.MustCompile(`(?m)^(\s*for: )\S+$`).ReplaceAllString(string(b), "${1}"+d)
}

type promAlert struct {
	Labels map[string]string `json:"labels"`
	State  string            `json:"state"`
}

// alertsOf reads Prometheus's active alerts.
func alertsOf(t *testing.T, url string) []promAlert {
	t.Helper()
	cl := &http.Client{Timeout: 5 * time.Second}
	resp, err := cl.Get(url + "/api/v1/alerts")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var r struct {
		Data struct {
			Alerts []promAlert `json:"alerts"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatalf("/api/v1/alerts: %v", err)
	}
	return r.Data.Alerts
}

func ghostAlert(alerts []promAlert) (promAlert, bool) {
	for _, a := range alerts {
		if a.Labels["alertname"] == "RebootwatchGhostLock" {
			return a, true
		}
	}
	return promAlert{}, false
}

// TestIntegrationGhostAlertFires: a real Prometheus scrapes a running agent
// (deploy/ RBAC, real apiserver) and evaluates deploy/monitoring's rules
// (`for:` shortened to 3s); while the lock is held no ghost alert is
// active; once the holder's Node is deleted (the agent does not reap:
// --reap-ghost=false) RebootwatchGhostLock goes pending, then fires, with
// the lock's labels.
func TestIntegrationGhostAlertFires(t *testing.T) {
	admin, bin, kc, _ := heldLeaseOn(t, privateAgentCluster(t)) // waits on Prometheus's rule clock
	testprom.Binary(t)

	a := startAgentProc(t, bin, "agent-a", kc, "--interval=1s", "--request-timeout=10s", "--reap-ghost=false")
	a.waitHeartbeat(t, "n1 holds the lock", func(hb heartbeat) bool {
		l, ok := fleetlockLock(hb)
		return ok && hb.Leader && l.Verdict == model.VerdictHeld
	})
	prom := testprom.Start(t, testprom.Options{Targets: []string{a.metricsAddr}, Rules: alertRules(t, "3s")})
	// Prometheus has scraped the held lock and evaluated the rules on it.
	eventually(t, "Prometheus sees the held lock", func() (bool, string) {
		return promQuery(t, prom.URL, `rebootwatch_lock_verdict{verdict="held",lock="default/fleetlock-default"}`) == "1", ""
	})
	seenHeld := time.Now()
	eventually(t, "the lock rules were evaluated on the held lock", func() (bool, string) {
		last := lastEvaluation(t, prom.URL, "rebootwatch-locks")
		return last.After(seenHeld), "last evaluation " + last.String()
	})
	if al, ok := ghostAlert(alertsOf(t, prom.URL)); ok {
		t.Fatalf("ghost alert %s while the lock is held", al.State)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := admin.CoreV1().Nodes().Delete(ctx, "n1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	states := map[string]bool{}
	var firing promAlert
	eventually(t, "RebootwatchGhostLock fires", func() (bool, string) {
		al, ok := ghostAlert(alertsOf(t, prom.URL))
		if ok {
			states[al.State] = true
			firing = al
		}
		return ok && al.State == "firing", fmt.Sprintf("states seen %v\n%s", states, a.tail(2))
	})
	t.Logf("ghost alert states observed: %v", states)
	if firing.Labels["kind"] != "fleetlock" || firing.Labels["lock"] != "default/fleetlock-default" || firing.Labels["severity"] != "critical" {
		t.Errorf("firing alert labels %v", firing.Labels)
	}
	if h := fleetHolder(t, admin); h != testZincatiID {
		t.Errorf("--reap-ghost=false, yet the holder is %q", h)
	}
}

// promQuery returns the value of an instant query's single sample, or "".
func promQuery(t *testing.T, base, q string) string {
	t.Helper()
	cl := &http.Client{Timeout: 5 * time.Second}
	req, _ := http.NewRequest(http.MethodGet, base+"/api/v1/query", nil)
	qs := req.URL.Query()
	qs.Set("query", q)
	req.URL.RawQuery = qs.Encode()
	resp, err := cl.Do(req)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	var r struct {
		Data struct {
			Result []struct {
				Value []any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || len(r.Data.Result) != 1 || len(r.Data.Result[0].Value) != 2 {
		return ""
	}
	s, _ := r.Data.Result[0].Value[1].(string)
	return s
}

// lastEvaluation is when Prometheus last evaluated the rule group.
func lastEvaluation(t *testing.T, base, group string) time.Time {
	t.Helper()
	cl := &http.Client{Timeout: 5 * time.Second}
	resp, err := cl.Get(base + "/api/v1/rules")
	if err != nil {
		return time.Time{}
	}
	defer resp.Body.Close()
	var r struct {
		Data struct {
			Groups []struct {
				Name           string    `json:"name"`
				LastEvaluation time.Time `json:"lastEvaluation"`
			} `json:"groups"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatalf("/api/v1/rules: %v", err)
	}
	for _, g := range r.Data.Groups {
		if g.Name == group {
			return g.LastEvaluation
		}
	}
	return time.Time{}
}
