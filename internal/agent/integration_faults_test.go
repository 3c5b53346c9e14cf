package agent

import (
	"context"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rebootwatch/rebootwatch/internal/testenv/testcluster"
	"github.com/rebootwatch/rebootwatch/model"
)

// TestIntegrationNodeListForbidden: with nodes removed from the agent's
// ClusterRole, a lock whose holder matches no node is judged unknown (never
// ghost), nothing is written, and every heartbeat says why. Granting nodes
// back lets the agent judge it a ghost and reap it — so the refusal was the
// forbidden list and nothing else.
func TestIntegrationNodeListForbidden(t *testing.T) {
	c, bin, token := setup(t)
	admin := c.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cr, err := admin.RbacV1().ClusterRoles().Get(ctx, "rebootwatch-agent", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	full := cr.DeepCopy()
	var kept, removed []rbacv1.PolicyRule
	for _, r := range cr.Rules {
		if len(r.Resources) == 1 && r.Resources[0] == "nodes" {
			removed = append(removed, r)
			continue
		}
		kept = append(kept, r)
	}
	cr.Rules = kept
	if _, err := admin.RbacV1().ClusterRoles().Update(ctx, cr, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// RBAC authorizes from a cache that can lag the update: wait until the
	// agent's ServiceAccount is refused the nodes before the agent starts.
	sa := testcluster.ServiceAccountUser("rebootwatch", "rebootwatch-agent")
	for _, a := range testcluster.RuleAttributes("", removed) {
		c.WaitDenied(t, sa, a)
	}
	createNode(t, admin, "n2", "22222222222222222222222222222222", time.Now().Add(-3*time.Hour))
	createFleetLease(t, admin, testZincatiID, time.Now().Add(-2*time.Hour)) // n1 does not exist
	createKured(t, admin, "")

	a := startAgentProc(t, bin, "agent-forbidden", writeKubeconfig(t, c.URL, token),
		"--interval=1s", "--request-timeout=5s", "--leader-elect=false")
	seen := 0
	hb := a.waitHeartbeat(t, "three iterations judging unknown because nodes are forbidden", func(hb heartbeat) bool {
		l, ok := fleetlockLock(hb)
		if ok && l.Verdict == model.VerdictUnknown && l.Outcome == model.OutcomeSkipped &&
			strings.Contains(l.Reason, "forbidden") && strings.Contains(hb.APIError, "forbidden") && hb.Result == resultDegraded {
			seen++
		}
		return seen >= 3
	})
	l, _ := fleetlockLock(hb)
	t.Logf("heartbeat reason: %s; apiError: %s", l.Reason, hb.APIError)
	for _, h := range a.heartbeats(t) {
		if l, ok := fleetlockLock(h); ok && (l.Verdict == model.VerdictGhost || l.Outcome == model.OutcomeDone) {
			t.Fatalf("judged or acted on a forbidden node list: %+v", l)
		}
	}
	if h := fleetHolder(t, admin); h != testZincatiID {
		t.Fatalf("the lease changed: holder %q", h)
	}
	if code := a.probe("/readyz"); code != 503 {
		t.Errorf("/readyz %d with nodes forbidden, want 503", code)
	}

	// Grant nodes again: the same lock is now a ghost and is reaped.
	cur, err := admin.RbacV1().ClusterRoles().Get(ctx, "rebootwatch-agent", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Rules = full.Rules
	if _, err := admin.RbacV1().ClusterRoles().Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, a := range testcluster.RuleAttributes("", removed) {
		c.WaitAllowed(t, sa, a)
	}
	a.waitHeartbeat(t, "the ghost reaped once nodes are readable", func(hb heartbeat) bool {
		l, ok := fleetlockLock(hb)
		return ok && l.Verdict == model.VerdictGhost && l.Outcome == model.OutcomeDone
	})
	a.stop(t, syscall.SIGTERM)
	mustNotContainToken(t, token, a)
}

// blackHole is a loopback TCP proxy that either passes traffic to target or
// accepts connections and never answers.
type blackHole struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	hole  bool
	conns map[net.Conn]bool // open connections (piped or held)
	held  map[net.Conn]bool
}

func newBlackHole(t *testing.T, target string) *blackHole {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &blackHole{ln: ln, target: target, conns: map[net.Conn]bool{}, held: map[net.Conn]bool{}}
	go p.serve()
	t.Cleanup(func() { ln.Close(); p.closeAll(false) })
	return p
}

func (p *blackHole) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.hole {
			p.held[c] = true // accepted, never read, never answered
			p.mu.Unlock()
			continue
		}
		p.conns[c] = true
		p.mu.Unlock()
		go p.pipe(c)
	}
}

func (p *blackHole) pipe(c net.Conn) {
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	p.conns[up] = true
	p.mu.Unlock()
	go func() { _, _ = io.Copy(up, c); up.Close() }()
	_, _ = io.Copy(c, up)
	c.Close()
}

// closeAll closes piped (or held) connections.
func (p *blackHole) closeAll(held bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	m := p.conns
	if held {
		m = p.held
	}
	for c := range m {
		c.Close()
		delete(m, c)
	}
}

// set turns the black hole on (existing connections are cut, new ones hang)
// or off (held connections are closed, new ones pass).
func (p *blackHole) set(on bool) {
	p.mu.Lock()
	p.hole = on
	p.mu.Unlock()
	p.closeAll(!on)
}

// TestIntegrationBlackHoledAPI: the agent talks to the API through a proxy
// that, when switched, accepts and never answers. Calls time out, the
// heartbeat says so, /healthz turns unhealthy (no successful iteration in
// 3× interval) and healthy again once traffic passes.
func TestIntegrationBlackHoledAPI(t *testing.T) {
	c, bin, token := setup(t)
	admin := c.Client(t)
	createNode(t, admin, "n1", testMachineID, time.Now().Add(-3*time.Hour))
	createFleetLease(t, admin, testZincatiID, time.Now().Add(-2*time.Hour))
	createKured(t, admin, "")
	u, err := url.Parse(c.URL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := newBlackHole(t, u.Host)
	server := "https://" + proxy.ln.Addr().String()

	a := startAgentProc(t, bin, "agent-blackhole", writeKubeconfig(t, server, token),
		"--interval=1s", "--request-timeout=1s", "--leader-elect=false")
	a.waitHeartbeat(t, "an ok iteration through the proxy", func(hb heartbeat) bool { return hb.Result == resultOK })
	eventually(t, "/healthz is 200", func() (bool, string) { return a.probe("/healthz") == 200, a.tail(3) })

	proxy.set(true)
	holed := time.Now()
	before := len(a.heartbeats(t))
	var hb heartbeat
	eventually(t, "a heartbeat logs the timed-out API", func() (bool, string) {
		hbs := a.heartbeats(t)
		for _, h := range hbs[before:] {
			if h.Result == resultError && (strings.Contains(h.APIError, "deadline exceeded") || strings.Contains(h.APIError, "Timeout")) {
				hb = h
				return true, ""
			}
		}
		return false, a.tail(3)
	})
	t.Logf("black-holed heartbeat apiError: %s", hb.APIError)
	eventually(t, "/healthz turns 503", func() (bool, string) { return a.probe("/healthz") == 503, a.tail(3) })
	t.Logf("MEASURED black hole → /healthz 503 after %s (interval 1s, so 3× interval = 3s after the last good iteration)", time.Since(holed).Round(10*time.Millisecond))
	for _, l := range hb.Locks {
		if l.Outcome == model.OutcomeDone {
			t.Fatalf("acted while the API was unreachable: %+v", l)
		}
	}

	m := a.metrics(t)
	for _, want := range []string{`rebootwatch_agent_iterations_total{result="error"}`, `rebootwatch_api_errors_total{verb="list"}`} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}

	proxy.set(false)
	passed := time.Now()
	eventually(t, "/healthz is 200 again", func() (bool, string) { return a.probe("/healthz") == 200, a.tail(3) })
	t.Logf("MEASURED traffic passes again → /healthz 200 after %s", time.Since(passed).Round(10*time.Millisecond))
	n := len(a.heartbeats(t))
	eventually(t, "an ok heartbeat again", func() (bool, string) {
		for _, h := range a.heartbeats(t)[n:] {
			if h.Result == resultOK {
				return true, ""
			}
		}
		return false, a.tail(3)
	})
	a.stop(t, syscall.SIGTERM)
	mustNotContainToken(t, token, a)
}
