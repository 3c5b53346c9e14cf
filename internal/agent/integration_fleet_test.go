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
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/rebootwatch/rebootwatch/internal/testenv/testcluster"
	"github.com/rebootwatch/rebootwatch/internal/testenv/testprom"
	"github.com/rebootwatch/rebootwatch/internal/testenv/testtmux"
)

// ghostB is the fleetlock holder only cluster b's Lease names: a machine
// no node of b carries, so b's lock is a ghost and its dashboard shows a
// holder neither a's nor c's apiserver holds.
const ghostB = "b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0"

// buildCLI returns cmd/rebootwatch, built once for the package's tests.
func buildCLI(t *testing.T) string {
	t.Helper()
	return buildOnce(t, "./cmd/rebootwatch")
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
// one lists the three clusters; the ghost in b (its Lease held by a machine
// only b names, whose node is not there; the agent told not to reap) is
// sorted first; the fleet dashboard in tmux opens b's live dashboard on
// enter, through --context-for b=kind-b, showing the ghost lock b's own
// apiserver holds, and q returns to the fleet; stopping agent c turns row
// c stale within its staleness bound (--stale-after), and the exit code
// is 2, never 0. The fleet view sends at most 6 queries.
func TestIntegrationFleetThroughPrometheus(t *testing.T) {
	t.Parallel() // three apiservers of its own (privateAgentCluster)
	testprom.Binary(t)
	central := testprom.Start(t, testprom.Options{Receiver: true})
	cli := buildCLI(t)
	agents := map[string]*agentProc{}
	kubeconfigs := map[string]string{}
	for _, name := range []string{"a", "b", "c"} {
		// The fleet is three apiservers of the test's own.
		c := testcluster.Start(t)
		admin, bin, kc, _ := heldLeaseOn(t, c)
		kubeconfigs[name] = kc
		if name == "b" {
			ctx, cancel := bg()
			if err := admin.CoreV1().Nodes().Delete(ctx, "n1", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			cancel()
			setFleetHolder(t, admin, ghostB)
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
	if b.Context != "kind-b" || len(b.Locks) != 1 || b.Locks[0].Holder != ghostB || b.Locks[0].HolderNode != "" ||
		b.Locks[0].Verdict != "ghost" || b.Sources[0] != "agent" {
		t.Errorf("row b: %+v", b)
	}
	if d.ExitCode != 2 {
		t.Errorf("exit %d with a ghost, want 2", d.ExitCode)
	}

	fleetEnterOpensB(t, cli, central.URL, staleAfter, kubeconfigs)

	stopped := time.Now()
	agents["c"].stop(t, syscall.SIGTERM)
	eventually(t, "row c turns stale", func() (bool, string) {
		var raw string
		d, raw = snapshot()
		return status(d) == "b:ghost c:stale a:in-progress", raw
	})
	took := time.Since(stopped)
	c := d.Clusters[1]
	// Stale at once (issue 33 §1): its series stopped, whatever the age,
	// and the row keeps the lock state it last exported.
	if len(c.Locks) != 1 || c.Locks[0].Verdict != "held" {
		t.Errorf("row c stale without the last lock state it exported: %+v", c)
	}
	// Its bound: a scrape and a remote-write flush (1s each here), the
	// staleness marker and the test's polling; no longer --stale-after.
	t.Logf("row c stale %s after its agent stopped (--stale-after %s)", took.Round(100*time.Millisecond), staleAfter)
	if took > staleAfter {
		t.Errorf("row c stale only %s after its agent stopped, want at once (before --stale-after %s)", took, staleAfter)
	}
	if d.ExitCode != 2 {
		t.Errorf("exit %d, want 2", d.ExitCode)
	}
}

// fleetEnterOpensB runs the real fleet dashboard in tmux against the
// central Prometheus with one kubeconfig holding the three clusters'
// contexts: a and c under their labels' names (the default mapping), b as
// kind-b (reached only through --context-for b=kind-b). Enter on b's row
// (the ghost, first) opens b's live dashboard: its header names kind-b and
// its Locks panel shows the ghost held by ghostB, which only b's apiserver
// holds; q returns to the fleet view.
func fleetEnterOpensB(t *testing.T, cli, promURL string, staleAfter time.Duration, kubeconfigs map[string]string) {
	t.Helper()
	merged := clientcmdapi.NewConfig()
	for label, path := range kubeconfigs {
		one, err := clientcmd.LoadFromFile(path)
		if err != nil {
			t.Fatal(err)
		}
		name := label
		if label == "b" {
			name = "kind-b"
		}
		cur := one.Contexts[one.CurrentContext]
		merged.Clusters[name] = one.Clusters[cur.Cluster]
		merged.AuthInfos[name] = one.AuthInfos[cur.AuthInfo]
		merged.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	}
	merged.CurrentContext = "a"
	kc := filepath.Join(t.TempDir(), "fleet-kubeconfig")
	if err := clientcmd.WriteToFile(*merged, kc); err != nil {
		t.Fatal(err)
	}
	p := testtmux.Start(t, 120, 40, "env TERM=xterm-256color KUBECONFIG="+kc+" "+cli+" fleet --interval 1s --prometheus-url "+promURL+
		" --stale-after "+staleAfter.String()+" --context-for b=kind-b; sleep 600")
	const bound = 60 * time.Second
	inFleet := func(s string) bool { return strings.Contains(s, "fleet · 3 clusters") }
	s := p.WaitFor("the three clusters, b's ghost first under the cursor", bound, func(s string) bool {
		return inFleet(s) && strings.Contains(s, "▶ b ") && strings.Contains(s, "  a ") && strings.Contains(s, "  c ")
	})
	if i, j, k := strings.Index(s, "▶ b "), strings.Index(s, "  a "), strings.Index(s, "  c "); i > j || i > k {
		t.Errorf("b (ghost) is not first:\n%s", s)
	}
	p.Keys("Enter")
	s = p.WaitFor("b's live dashboard with b's ghost lock", bound, func(s string) bool {
		return !inFleet(s) && strings.Contains(s, "kind-b") && strings.Contains(s, ghostB[:12]) && strings.Contains(s, "ghost")
	})
	if strings.Contains(s, testZincatiID[:12]) || strings.Contains(s, "n1 ") {
		t.Errorf("b's dashboard shows a's or c's holder or node:\n%s", s)
	}
	t.Logf("enter on b opened:\n%s", s)
	p.Keys("q")
	p.WaitFor("back in the fleet view", bound, func(s string) bool { return inFleet(s) && strings.Contains(s, "▶ b ") })
	p.Keys("q")
}
