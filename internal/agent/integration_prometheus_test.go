package agent

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rebootwatch/rebootwatch/internal/testenv/testprom"
	"github.com/rebootwatch/rebootwatch/model"
)

// TestIntegrationPrometheusAlertGate: with --prometheus-url and
// --prometheus-alerts (the chart's prometheus.url and alertFilter), the agent
// reads a real Prometheus; while a matching alert fires, a ghost is not
// reaped and the heartbeat names the alert; an agent whose filter matches
// nothing reaps it.
func TestIntegrationPrometheusAlertGate(t *testing.T) {
	testprom.Binary(t)
	prom := testprom.Start(t, testprom.Options{Rules: "groups:\n- name: blocking\n  rules:\n  - alert: Watchdog\n    expr: vector(1)\n"})
	waitFiring(t, prom.URL, "Watchdog")
	admin, bin, kc, _ := heldLeaseCluster(t)

	a := startAgentProc(t, bin, "agent-a", kc, "--interval=1s", "--request-timeout=10s",
		"--prometheus-url="+prom.URL, "--prometheus-alerts=^Watchdog$")
	a.waitHeartbeat(t, "prometheus ok and the lock held", func(hb heartbeat) bool {
		l, ok := fleetlockLock(hb)
		return ok && hb.Leader && l.Verdict == model.VerdictHeld && sourceStatus(hb, model.SourcePrometheus) == model.StatusOK
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := admin.CoreV1().Nodes().Delete(ctx, "n1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	hb := a.waitHeartbeat(t, "the reap is refused by the alert gate", func(hb heartbeat) bool {
		l, ok := fleetlockLock(hb)
		return ok && l.Verdict == model.VerdictGhost && l.Outcome == model.OutcomeRefused
	})
	if l, _ := fleetlockLock(hb); !strings.Contains(l.Message, "Watchdog") {
		t.Errorf("refusal %q does not name the firing alert", l.Message)
	}
	if h := fleetHolder(t, admin); h != testZincatiID {
		t.Fatalf("the ghost was reaped while a blocking alert fires: holder %q", h)
	}
	a.stop(t, syscall.SIGTERM) // the next agent takes the leader Lease at once

	b := startAgentProc(t, bin, "agent-b", kc, "--interval=1s", "--request-timeout=10s",
		"--prometheus-url="+prom.URL, "--prometheus-alerts=^NothingFires$")
	b.waitHeartbeat(t, "the ghost is reaped once no matching alert fires", func(hb heartbeat) bool {
		l, ok := fleetlockLock(hb)
		return ok && l.Verdict == model.VerdictGhost && l.Outcome == model.OutcomeDone
	})
}

func sourceStatus(hb heartbeat, name model.SourceName) model.SourceStatus {
	for _, s := range hb.Sources {
		if s.Name == name {
			return s.Status
		}
	}
	return ""
}

// TestIntegrationKuredPrometheusIsTheDefault: without --prometheus-url the
// agent starts the same sources as the dashboard (sources/sourceset), so kured's
// own --prometheus-url and --alert-filter-regexp, read from its DaemonSet,
// are the alert gate's defaults with kured's semantics (the regexp names
// alerts to ignore): DiskFull fires and is not ignored, so the ghost is not
// reaped, and the refusal names it. Real apiserver, real Prometheus.
func TestIntegrationKuredPrometheusIsTheDefault(t *testing.T) {
	testprom.Binary(t)
	prom := testprom.Start(t, testprom.Options{Rules: "groups:\n- name: blocking\n  rules:\n  - alert: Watchdog\n    expr: vector(1)\n  - alert: DiskFull\n    expr: vector(1)\n"})
	waitFiring(t, prom.URL, "Watchdog", "DiskFull")
	admin, bin, kc, _ := heldLeaseCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ds, err := admin.AppsV1().DaemonSets("kube-system").Get(ctx, "kured", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ds.Spec.Template.Spec.Containers[0].Args = []string{"--prometheus-url=" + prom.URL, "--alert-filter-regexp=^Watchdog$"}
	if _, err := admin.AppsV1().DaemonSets("kube-system").Update(ctx, ds, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	a := startAgentProc(t, bin, "agent-a", kc, "--interval=1s", "--request-timeout=10s")
	a.waitHeartbeat(t, "kured's Prometheus read and the lock held", func(hb heartbeat) bool {
		l, ok := fleetlockLock(hb)
		return ok && hb.Leader && l.Verdict == model.VerdictHeld && sourceStatus(hb, model.SourcePrometheus) == model.StatusOK &&
			strings.Contains(hb.AlertGate, "kured")
	})
	if err := admin.CoreV1().Nodes().Delete(ctx, "n1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	hb := a.waitHeartbeat(t, "the reap is refused by kured's alert filter", func(hb heartbeat) bool {
		l, ok := fleetlockLock(hb)
		return ok && l.Verdict == model.VerdictGhost && l.Outcome == model.OutcomeRefused
	})
	if l, _ := fleetlockLock(hb); !strings.Contains(l.Message, "DiskFull") || strings.Contains(l.Message, "Watchdog") {
		t.Errorf("refusal %q: want DiskFull named and the ignored Watchdog not", l.Message)
	}
	if h := fleetHolder(t, admin); h != testZincatiID {
		t.Fatalf("the ghost was reaped while a blocking alert fires: holder %q", h)
	}
}

// kured's DaemonSet gains its --prometheus-url while the agent runs: the
// agent follows it (its alert gate turns to kured's filter without a
// restart), and a reap is then judged by that filter — refused because
// DiskFull fires — rather than refused as "changed since judged" on every
// try, as when the source kept the settings it started with.
func TestIntegrationKuredPrometheusAddedLater(t *testing.T) {
	testprom.Binary(t)
	prom := testprom.Start(t, testprom.Options{Rules: "groups:\n- name: blocking\n  rules:\n  - alert: Watchdog\n    expr: vector(1)\n  - alert: DiskFull\n    expr: vector(1)\n"})
	waitFiring(t, prom.URL, "Watchdog", "DiskFull")
	admin, bin, kc, _ := heldLeaseCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	a := startAgentProc(t, bin, "agent-a", kc, "--interval=1s", "--request-timeout=10s")
	a.waitHeartbeat(t, "the lock held, no alert filter yet", func(hb heartbeat) bool {
		l, ok := fleetlockLock(hb)
		return ok && hb.Leader && l.Verdict == model.VerdictHeld && strings.HasPrefix(hb.AlertGate, "no blocking-alert filter")
	})
	ds, err := admin.AppsV1().DaemonSets("kube-system").Get(ctx, "kured", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ds.Spec.Template.Spec.Containers[0].Args = []string{"--prometheus-url=" + prom.URL, "--alert-filter-regexp=^Watchdog$"}
	if _, err := admin.AppsV1().DaemonSets("kube-system").Update(ctx, ds, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	a.waitHeartbeat(t, "kured's Prometheus followed without a restart", func(hb heartbeat) bool {
		return sourceStatus(hb, model.SourcePrometheus) == model.StatusOK && strings.Contains(hb.AlertGate, "kured")
	})
	if err := admin.CoreV1().Nodes().Delete(ctx, "n1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	hb := a.waitHeartbeat(t, "the reap is refused by kured's alert filter", func(hb heartbeat) bool {
		l, ok := fleetlockLock(hb)
		return ok && l.Verdict == model.VerdictGhost && l.Outcome == model.OutcomeRefused
	})
	if l, _ := fleetlockLock(hb); !strings.Contains(l.Message, "DiskFull") || strings.Contains(l.Message, "changed") {
		t.Errorf("refusal %q: want kured's filter's DiskFull, not a fresh-data difference", l.Message)
	}
	if h := fleetHolder(t, admin); h != testZincatiID {
		t.Fatalf("the ghost was reaped while a blocking alert fires: holder %q", h)
	}
}

// waitFiring waits until Prometheus's alerts named fire: a reap judged
// before its first rule evaluation would see no alert at all.
func waitFiring(t *testing.T, url string, names ...string) {
	t.Helper()
	eventually(t, fmt.Sprintf("Prometheus fires %v", names), func() (bool, string) {
		firing := map[string]bool{}
		for _, a := range alertsOf(t, url) {
			if a.State == "firing" {
				firing[a.Labels["alertname"]] = true
			}
		}
		for _, n := range names {
			if !firing[n] {
				return false, fmt.Sprintf("firing: %v", firing)
			}
		}
		return true, ""
	})
}
