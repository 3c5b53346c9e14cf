package agent

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rebootwatch/rebootwatch/internal/testenv/testprom"
)

// buildCLI builds cmd/rebootwatch into a temporary directory.
func buildCLI(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "rebootwatch")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/rebootwatch")
	cmd.Dir = moduleRoot(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// fleetDoc is the part of `rebootwatch fleet --snapshot -o json` the test reads.
type fleetDoc struct {
	Schema   string
	ExitCode int
	Queries  int
	Error    *string
	Clusters []struct {
		Cluster, Context, Status string
		Sources                  []string
		Locks                    []struct{ Holder, HolderNode, Verdict string }
		DataAgeSeconds           *float64
	}
}

// TestIntegrationFleetThroughPrometheus (issue 25 §4): three real
// apiservers, each with an agent scraped by its own Debian Prometheus with
// external_labels {cluster: a|b|c}, remote-writing into a central
// Prometheus. `rebootwatch fleet --snapshot -o json` against the central
// one lists the three clusters; the ghost in b (its holder's node deleted,
// the agent told not to reap) is sorted first; stopping agent c turns row
// c stale within its staleness bound (--stale-after), and the exit code
// is 2, never 0. The fleet view sends at most 6 queries.
func TestIntegrationFleetThroughPrometheus(t *testing.T) {
	testprom.Binary(t)
	central := testprom.Start(t, testprom.Options{Receiver: true})
	cli := buildCLI(t)
	agents := map[string]*agentProc{}
	for _, name := range []string{"a", "b", "c"} {
		admin, bin, kc, _ := heldLeaseCluster(t)
		if name == "b" {
			ctx, cancel := bg()
			if err := admin.CoreV1().Nodes().Delete(ctx, "n1", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			cancel()
		}
		p := startAgentProc(t, bin, "agent-"+name, kc, "--interval=1s", "--request-timeout=10s", "--reap-ghost=false", "--leader-elect=false")
		agents[name] = p
		testprom.Start(t, testprom.Options{Targets: []string{p.metricsAddr}, ExternalLabels: map[string]string{"cluster": name},
			RemoteWrite: central.URL})
	}
	const staleAfter = 8 * time.Second
	snapshot := func() (fleetDoc, string) {
		t.Helper()
		cmd := exec.Command(cli, "fleet", "--snapshot", "-o", "json", "--prometheus-url", central.URL,
			"--stale-after", staleAfter.String(), "--context-for", "b=kind-b")
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		var d fleetDoc
		if jerr := json.Unmarshal(out.Bytes(), &d); jerr != nil {
			t.Fatalf("fleet --snapshot: %v / %v\nstdout %s\nstderr %s", err, jerr, out.String(), errb.String())
		}
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		if code != d.ExitCode {
			t.Fatalf("exit %d, document says %d", code, d.ExitCode)
		}
		if d.Queries > 6 {
			t.Errorf("%d queries, want at most 6", d.Queries)
		}
		return d, out.String()
	}
	status := func(d fleetDoc) string {
		var s []string
		for _, c := range d.Clusters {
			s = append(s, c.Cluster+":"+c.Status)
		}
		return strings.Join(s, " ")
	}
	var d fleetDoc
	eventually(t, "the central Prometheus shows b's ghost first, a and c in progress", func() (bool, string) {
		var raw string
		d, raw = snapshot()
		return status(d) == "b:ghost a:in-progress c:in-progress", raw
	})
	b := d.Clusters[0]
	if b.Context != "kind-b" || len(b.Locks) != 1 || b.Locks[0].Holder != testZincatiID || b.Locks[0].HolderNode != "" ||
		b.Locks[0].Verdict != "ghost" || b.Sources[0] != "agent" {
		t.Errorf("row b: %+v", b)
	}
	if d.ExitCode != 2 {
		t.Errorf("exit %d with a ghost, want 2", d.ExitCode)
	}

	stopped := time.Now()
	agents["c"].stop(t, syscall.SIGTERM)
	eventually(t, "row c turns stale", func() (bool, string) {
		var raw string
		d, raw = snapshot()
		return status(d) == "b:ghost c:stale a:in-progress", raw
	})
	took := time.Since(stopped)
	c := d.Clusters[1]
	if c.DataAgeSeconds == nil || *c.DataAgeSeconds < staleAfter.Seconds() {
		t.Errorf("row c stale with data age %v, want past %s", c.DataAgeSeconds, staleAfter)
	}
	// Its bound: --stale-after after the last judgement, plus a scrape
	// and a remote-write flush (1s each here) and the test's polling.
	t.Logf("row c stale %s after its agent stopped (--stale-after %s)", took.Round(100*time.Millisecond), staleAfter)
	if d.ExitCode != 2 {
		t.Errorf("exit %d, want 2", d.ExitCode)
	}
}
