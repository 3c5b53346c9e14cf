package agent

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/rebootwatch/rebootwatch/internal/coord/fleetlock"
	"github.com/rebootwatch/rebootwatch/internal/coord/kured"
	"github.com/rebootwatch/rebootwatch/internal/fakekube"
	"github.com/rebootwatch/rebootwatch/internal/lock"
	"github.com/rebootwatch/rebootwatch/model"
)

// The DESIGN §3 test vector: this machine id's Zincati app-specific id.
const (
	testMachineID = "1c09ca98649c4c7abc779cd04c96812e"
	testZincatiID = "978a225b3d7b40e9acd7ce9b62f68444"
)

// syncBuffer is a goroutine-safe log sink.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// from returns a copy of what was written from byte off on.
func (s *syncBuffer) from(off int) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Clone(s.b.Bytes()[off:])
}

// tail returns the last n lines written (without surrounding blank space),
// read from the end: a wait's failure message, built on every poll.
func (s *syncBuffer) tail(n int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := bytes.TrimSpace(s.b.Bytes())
	if n <= 0 {
		return ""
	}
	i := len(b)
	for ; n > 0; n-- {
		j := bytes.LastIndexByte(b[:i], '\n')
		if j < 0 {
			return string(b)
		}
		i = j
	}
	return string(b[i+1:])
}

// heartbeat is the part of a heartbeat line the tests read.
type heartbeat struct {
	Msg      string         `json:"msg"`
	Result   string         `json:"result"`
	Trigger  string         `json:"trigger"`
	Leader   bool           `json:"leader"`
	APIError string         `json:"apiError"`
	Locks    []LockReport   `json:"locks"`
	Sources  []SourceReport `json:"sources"`
	// AlertGate is the alert gate's decision: a filter, or none.
	AlertGate string         `json:"alertGate"`
	Blocker   *BlockerReport `json:"blocker"`
}

func heartbeats(t *testing.T, log string) []heartbeat {
	t.Helper()
	var out []heartbeat
	sc := bufio.NewScanner(strings.NewReader(log))
	sc.Buffer(nil, 1<<20) // grown as lines need, up to 1 MiB: tests call this in polls
	for sc.Scan() {
		var line struct{ Msg string }
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("log line is not JSON: %q: %v", sc.Text(), err)
		}
		if line.Msg != "heartbeat" {
			continue
		}
		var h heartbeat
		if err := json.Unmarshal(sc.Bytes(), &h); err != nil {
			t.Fatalf("heartbeat does not parse: %q: %v", sc.Text(), err)
		}
		out = append(out, h)
	}
	return out
}

// testStarter is a source that sends fixed events and then whatever the
// test pushes.
type testStarter struct {
	initial []model.Event
	sink    chan func(model.Event)
	// release, when set, holds the source's first sync until closed.
	release chan struct{}
}

type syncedSource struct{}

func (syncedSource) WaitForSync(context.Context) error { return nil }

func (s *testStarter) starter() Starter {
	return Starter{Name: "test", Start: func(ctx context.Context, sink func(model.Event)) (Source, error) {
		for _, ev := range s.initial {
			sink(ev)
		}
		s.sink <- sink
		if s.release != nil {
			return gatedSource{release: s.release}, nil
		}
		return syncedSource{}, nil
	}}
}

func readyNode(name, machineID string, readySince time.Time) model.Node {
	return model.Node{Name: name, UID: "uid-" + name, MachineID: machineID, BootID: "boot-" + name,
		Conditions: []model.Condition{{Type: "Ready", Status: "True", LastTransition: readySince}}}
}

func fleetlockWorld(now time.Time) []model.Event {
	ok := func(n model.SourceName) model.Event {
		return model.SourceChanged{Health: model.SourceHealth{Name: n, Status: model.StatusOK, LastSync: now}}
	}
	return []model.Event{
		ok(model.SourceNodes), ok(model.SourceFleetlock),
		model.SourceChanged{Health: model.SourceHealth{Name: model.SourceKured, Status: model.StatusNotInstalled}},
		model.SourceChanged{Health: model.SourceHealth{Name: model.SourceLonghorn, Status: model.StatusNotInstalled}},
		model.NodeUpserted{Node: readyNode("n1", testMachineID, now.Add(-3*time.Hour))},
		model.NodeUpserted{Node: readyNode("n2", "22222222222222222222222222222222", now.Add(-time.Hour))},
		model.LockUpserted{Lock: model.LockObject{LockRef: model.LockRef{Kind: model.LockFleetlock, Namespace: "default", Name: "fleetlock-default"},
			UID: "lease-uid", ResourceVersion: "5", Spec: &fleetlock.Spec{Holder: testZincatiID, AcquireTime: now.Add(-2 * time.Hour)}}},
	}
}

// worldFresh are the actor's fresh reads of a world: the nodes through its
// client (clientFor), the lock objects as the world's events left them,
// Longhorn not installed and no blocking-alert filter, as the worlds here
// have them.
func worldFresh(world []model.Event) lock.FreshReaders {
	return lock.FreshReaders{
		Locks: func(context.Context) ([]model.LockObject, error) {
			locks := map[model.LockRef]model.LockObject{}
			for _, ev := range world {
				switch e := ev.(type) {
				case model.LockUpserted:
					locks[e.Lock.LockRef] = e.Lock
				case model.LockDeleted:
					delete(locks, e.Ref)
				}
			}
			var out []model.LockObject
			for _, l := range locks {
				out = append(out, l)
			}
			return out, nil
		},
		Volumes: func(context.Context) ([]model.Volume, bool, error) { return nil, false, nil },
		Alerts:  func(context.Context, *kured.Config) ([]string, bool, error) { return nil, false, nil },
	}
}

// clientFor returns a fake cluster holding objs and the Nodes the world's
// events leave: the API the agent's fresh read before a write sees.
func clientFor(world []model.Event, objs ...runtime.Object) *fake.Clientset {
	nodes := map[string]model.Node{}
	var order []string
	for _, ev := range world {
		switch e := ev.(type) {
		case model.NodeUpserted:
			if _, ok := nodes[e.Node.Name]; !ok {
				order = append(order, e.Node.Name)
			}
			nodes[e.Node.Name] = e.Node
		case model.NodeDeleted:
			delete(nodes, e.Name)
		}
	}
	for _, name := range order {
		n, ok := nodes[name]
		if !ok {
			continue
		}
		an := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name, UID: types.UID(n.UID)},
			Spec:   corev1.NodeSpec{Unschedulable: n.Unschedulable},
			Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{BootID: n.BootID, MachineID: n.MachineID}}}
		for _, c := range n.Conditions {
			an.Status.Conditions = append(an.Status.Conditions, corev1.NodeCondition{Type: corev1.NodeConditionType(c.Type),
				Status: corev1.ConditionStatus(c.Status), LastTransitionTime: metav1.NewTime(c.LastTransition)})
		}
		objs = append(objs, an)
	}
	return newFakeClientset(objs...)
}

// deleteNode deletes a node from the fake cluster and tells the agent, as
// its informer would.
func (h *harness) deleteNode(t *testing.T, name string) {
	t.Helper()
	if err := h.client.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.sink(model.NodeDeleted{Name: name})
}

func fleetLease(holder string) *coordinationv1.Lease {
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "fleetlock-default", UID: types.UID("lease-uid"), ResourceVersion: "5"},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder},
	}
}

type harness struct {
	agent  *Agent
	client *fake.Clientset
	log    *syncBuffer
	sink   func(model.Event)
	done   chan error
}

func startAgent(t *testing.T, cfg Config, client *fake.Clientset, initial []model.Event, mods ...func(*Agent)) *harness {
	t.Helper()
	return startAgentSyncing(t, cfg, client, initial, nil, mods...)
}

// startAgentSyncing is startAgent with a source whose first sync waits for
// release to be closed (nil: synced at once); mods change the agent before
// it starts.
func startAgentSyncing(t *testing.T, cfg Config, client *fake.Clientset, initial []model.Event, release chan struct{}, mods ...func(*Agent)) *harness {
	t.Helper()
	logBuf := &syncBuffer{}
	logger := NewLogger(logBuf, "info")
	src := &testStarter{initial: initial, sink: make(chan func(model.Event), 1), release: release}
	a := &Agent{
		Config: cfg, Log: logger, Identity: "test-agent", Client: client,
		Engine: lock.New(lock.Options{OrphanGrace: cfg.OrphanGrace, Unattended: true}),
		Actor: &lock.Actor{Client: client, Who: "test-agent", DryRun: cfg.DryRun, Logger: logger, Timeout: cfg.RequestTimeout,
			Fresh: worldFresh(initial)},
		Sources: []Starter{src.starter()},
	}
	for _, m := range mods {
		m(a)
	}
	a = New(a)
	ctx, cancel := context.WithCancel(context.Background())
	h := &harness{agent: a, client: client, log: logBuf, done: make(chan error, 1)}
	go func() { h.done <- a.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-h.done:
			if err != nil {
				t.Errorf("agent stopped with %v, want nil after cancel", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("agent did not stop")
		}
	})
	select {
	case h.sink = <-src.sink:
	case <-time.After(10 * time.Second):
		t.Fatal("source not started")
	}
	return h
}

// waitFor polls the heartbeats until cond holds (bounded, generous).
func (h *harness) waitFor(t *testing.T, what string, cond func(heartbeat) bool) heartbeat {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		for _, hb := range heartbeats(t, h.log.String()) {
			if cond(hb) {
				return hb
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	lines := strings.Split(strings.TrimSpace(h.log.String()), "\n")
	if len(lines) > 12 {
		lines = lines[len(lines)-12:]
	}
	t.Fatalf("no heartbeat where %s; last log lines:\n%s", what, strings.Join(lines, "\n"))
	return heartbeat{}
}

func (h *harness) holder(t *testing.T) string {
	t.Helper()
	l, err := h.client.CoordinationV1().Leases("default").Get(context.Background(), "fleetlock-default", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return *l.Spec.HolderIdentity
}

func lockWith(hb heartbeat, verdict model.Verdict, outcome model.Outcome) bool {
	for _, l := range hb.Locks {
		if l.Verdict == verdict && (outcome == "" || l.Outcome == outcome) {
			return true
		}
	}
	return false
}

func testConfig() Config {
	c := Defaults()
	c.Interval = 100 * time.Millisecond
	c.RequestTimeout = 2 * time.Second
	c.LeaderElect = false
	return c
}

func TestAgentReapsGhostOnNodeDelete(t *testing.T) {
	now := time.Now()
	client := clientFor(fleetlockWorld(now), fleetLease(testZincatiID))
	// An interval longer than the test: with 100ms the ticker may win the
	// loop's select and drain the delete event itself, which would reap on
	// trigger "interval" and hide whether the event alone triggers the reap.
	cfg := testConfig()
	cfg.Interval = time.Hour
	h := startAgent(t, cfg, client, fleetlockWorld(now))

	hb := h.waitFor(t, "the lock is held by n1", func(hb heartbeat) bool { return lockWith(hb, model.VerdictHeld, "") })
	// No Prometheus source: the heartbeat says the alert gate passes everything.
	if !strings.HasPrefix(hb.AlertGate, "no blocking-alert filter configured") {
		t.Errorf("heartbeat alertGate %q, want the visible 'no filter' decision", hb.AlertGate)
	}
	if got := h.holder(t); got != testZincatiID {
		t.Fatalf("a held lock was touched: holder %q", got)
	}
	h.deleteNode(t, "n1")
	hb = h.waitFor(t, "the ghost was reaped", func(hb heartbeat) bool { return lockWith(hb, model.VerdictGhost, model.OutcomeDone) })
	if hb.Trigger != "event" {
		t.Errorf("reaped on trigger %q, want the node-delete event", hb.Trigger)
	}
	if got := h.holder(t); got != "" {
		t.Fatalf("holder after reap %q, want empty", got)
	}
	evs, err := client.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{})
	if err != nil || len(evs.Items) != 1 || evs.Items[0].Reason != lock.ReasonReaped {
		t.Fatalf("events %v %v, want one %s", evs, err, lock.ReasonReaped)
	}
}

// An action skipped because the sources had not all synced is taken as
// soon as they have, not an --interval later (TestAgentReapsGhostOnNodeDelete
// failed under load: the node's delete arrived before the sync, and with a
// one-hour interval nothing judged again).
func TestAgentActsOnceSourcesSync(t *testing.T) {
	now := time.Now()
	client := clientFor(fleetlockWorld(now), fleetLease(testZincatiID))
	cfg := testConfig()
	cfg.Interval = time.Hour
	release := make(chan struct{})
	h := startAgentSyncing(t, cfg, client, fleetlockWorld(now), release)
	h.waitFor(t, "the lock is held by n1", func(hb heartbeat) bool { return lockWith(hb, model.VerdictHeld, "") })
	h.deleteNode(t, "n1")
	h.waitFor(t, "the ghost's reap skipped: not synced", func(hb heartbeat) bool { return lockWith(hb, model.VerdictGhost, model.OutcomeSkipped) })
	if got := h.holder(t); got != testZincatiID {
		t.Fatalf("acted before the sources synced: holder %q", got)
	}
	close(release)
	h.waitFor(t, "the ghost was reaped once synced", func(hb heartbeat) bool { return lockWith(hb, model.VerdictGhost, model.OutcomeDone) })
	if got := h.holder(t); got != "" {
		t.Fatalf("holder after reap %q, want empty", got)
	}
}

func TestAgentDryRunWritesNothing(t *testing.T) {
	cfg := testConfig()
	cfg.DryRun = true
	world := fleetlockWorld(time.Now())
	client := newFakeClientset(fleetLease(testZincatiID))
	h := startAgent(t, cfg, client, world)
	h.sink(model.NodeDeleted{Name: "n1"})
	hb := h.waitFor(t, "a dry-run reap", func(hb heartbeat) bool { return lockWith(hb, model.VerdictGhost, model.OutcomeDryRun) })
	if !strings.Contains(hb.Locks[0].Message, "would") {
		t.Errorf("dry-run message %q does not say what it would write", hb.Locks[0].Message)
	}
	if got := h.holder(t); got != testZincatiID {
		t.Fatalf("dry run wrote: holder %q", got)
	}
	for _, a := range client.Actions() {
		if a.GetVerb() != "get" && a.GetVerb() != "list" && a.GetVerb() != "watch" {
			t.Fatalf("dry run made a %s call", a.GetVerb())
		}
	}
}

func TestAgentNotLeaderDoesNotAct(t *testing.T) {
	cfg := testConfig()
	cfg.LeaderElect = true // never elected in this test
	world := append(fleetlockWorld(time.Now()), model.NodeDeleted{Name: "n1"})
	client := clientFor(world, fleetLease(testZincatiID))
	h := startAgent(t, cfg, client, world)
	h.waitFor(t, "ghost skipped: not the leader", func(hb heartbeat) bool {
		return !hb.Leader && lockWith(hb, model.VerdictGhost, model.OutcomeSkipped) && strings.Contains(hb.Locks[0].Message, "not the leader")
	})
	if got := h.holder(t); got != testZincatiID {
		t.Fatalf("a non-leader acted: holder %q", got)
	}
	// Becoming the leader acts at once.
	h.agent.SetLeader(true)
	h.waitFor(t, "the new leader reaped", func(hb heartbeat) bool { return hb.Leader && lockWith(hb, model.VerdictGhost, model.OutcomeDone) })
	if got := h.holder(t); got != "" {
		t.Fatalf("holder %q after the leader reaped", got)
	}
}

func TestAgentNodeListForbiddenIsUnknown(t *testing.T) {
	client := newFakeClientset(fleetLease(testZincatiID))
	client.PrependReactor("list", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "nodes"}, "", nil)
	})
	world := append(fleetlockWorld(time.Now()), model.NodeDeleted{Name: "n1"})
	h := startAgent(t, testConfig(), client, world)
	// Several iterations, all unknown and degraded, none acting.
	var n int
	hb := h.waitFor(t, "three forbidden iterations", func(hb heartbeat) bool {
		if hb.Result == resultDegraded && lockWith(hb, model.VerdictUnknown, model.OutcomeSkipped) && strings.Contains(hb.APIError, "forbidden") {
			n++
		}
		return n >= 3
	})
	if !strings.Contains(hb.Locks[0].Reason, "forbidden") {
		t.Errorf("reason %q does not say the node list is forbidden", hb.Locks[0].Reason)
	}
	if got := h.holder(t); got != testZincatiID {
		t.Fatalf("acted on a forbidden node list: holder %q", got)
	}
	// The API answered: the agent stays live (a restart fixes no RBAC).
	if ok, msg := h.agent.Health.Healthy(); !ok {
		t.Errorf("unhealthy on forbidden: %s", msg)
	}
}

func TestAgentOrphanedPolicy(t *testing.T) {
	now := time.Now()
	kuredEvents := func() []model.Event {
		ok := func(n model.SourceName) model.Event {
			return model.SourceChanged{Health: model.SourceHealth{Name: n, Status: model.StatusOK, LastSync: now}}
		}
		created := now.Add(-time.Hour).UTC().Format(time.RFC3339)
		return []model.Event{ok(model.SourceNodes), ok(model.SourceKured),
			model.SourceChanged{Health: model.SourceHealth{Name: model.SourceLonghorn, Status: model.StatusNotInstalled}},
			// Uncordoned 30 minutes ago, as a managedFields entry dates it
			// (without a date, a fresh engine must watch it for the grace).
			model.NodeUpserted{Node: func() model.Node {
				n := readyNode("n1", "11111111111111111111111111111111", now.Add(-30*time.Minute))
				n.UnschedulableSetAt, n.UnschedulableSetBy = now.Add(-30*time.Minute), "ops-apply"
				return n
			}()},
			model.LockUpserted{Lock: model.LockObject{LockRef: model.LockRef{Kind: model.LockKured, Namespace: "kube-system", Name: "kured"},
				UID: "ds-uid", ResourceVersion: "7", Spec: &kured.Spec{Present: true,
					Value: `{"nodeID":"n1","metadata":{"unschedulable":false},"created":"` + created + `","TTL":0}`}}},
		}
	}
	for _, enabled := range []bool{false, true} {
		cfg := testConfig()
		cfg.ReleaseOrphaned = enabled
		cfg.OrphanGrace = time.Minute
		cfg.DryRun = true
		h := startAgent(t, cfg, newFakeClientset(), kuredEvents())
		if enabled {
			h.waitFor(t, "orphaned released (dry run)", func(hb heartbeat) bool { return lockWith(hb, model.VerdictOrphaned, model.OutcomeDryRun) })
		} else {
			hb := h.waitFor(t, "orphaned left alone", func(hb heartbeat) bool { return lockWith(hb, model.VerdictOrphaned, model.OutcomeSkipped) })
			if !strings.Contains(hb.Locks[0].Message, "--release-orphaned") {
				t.Errorf("skip message %q does not name the flag", hb.Locks[0].Message)
			}
		}
	}
}

func TestAgentMetrics(t *testing.T) {
	world := fleetlockWorld(time.Now())
	client := clientFor(world, fleetLease(testZincatiID))
	h := startAgent(t, testConfig(), client, world)
	h.deleteNode(t, "n1")
	h.waitFor(t, "reaped", func(hb heartbeat) bool { return lockWith(hb, model.VerdictGhost, model.OutcomeDone) })
	// The informer would deliver the written Lease.
	h.sink(model.LockUpserted{Lock: model.LockObject{LockRef: model.LockRef{Kind: model.LockFleetlock, Namespace: "default", Name: "fleetlock-default"},
		UID: "lease-uid", ResourceVersion: "6", Spec: &fleetlock.Spec{}}})
	h.waitFor(t, "free after reap", func(hb heartbeat) bool { return lockWith(hb, model.VerdictFree, "") })
	code, body := serve(h.agent.Metrics.Handler())
	if code != 200 {
		t.Fatalf("metrics %d", code)
	}
	for _, want := range []string{
		`rebootwatch_actions_total{action="reap",kind="fleetlock",result="done"} 1`,
		`rebootwatch_lock_verdict{kind="fleetlock",lock="default/fleetlock-default",verdict="free"} 1`,
		`rebootwatch_lock_verdict{kind="fleetlock",lock="default/fleetlock-default",verdict="ghost"} 0`,
		`rebootwatch_agent_iterations_total{result="ok"}`,
		`rebootwatch_agent_last_success_timestamp_seconds`,
		`rebootwatch_agent_leader 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

func TestAgentPolicies(t *testing.T) {
	now := time.Now()
	ok := func(n model.SourceName) model.Event {
		return model.SourceChanged{Health: model.SourceHealth{Name: n, Status: model.StatusOK, LastSync: now}}
	}
	expiredKured := func() []model.Event {
		created := now.Add(-2 * time.Hour).UTC().Format(time.RFC3339)
		return []model.Event{ok(model.SourceNodes), ok(model.SourceKured),
			model.SourceChanged{Health: model.SourceHealth{Name: model.SourceLonghorn, Status: model.StatusNotInstalled}},
			model.NodeUpserted{Node: readyNode("n1", "11111111111111111111111111111111", now.Add(-3*time.Hour))},
			model.LockUpserted{Lock: model.LockObject{LockRef: model.LockRef{Kind: model.LockKured, Namespace: "kube-system", Name: "kured"},
				UID: "ds-uid", ResourceVersion: "7", Spec: &kured.Spec{Present: true,
					Value: `{"nodeID":"n1","metadata":{"unschedulable":false},"created":"` + created + `","TTL":3600000000000}`}}},
		}
	}
	ghost := func() []model.Event { return append(fleetlockWorld(now), model.NodeDeleted{Name: "n1"}) }
	for _, tc := range []struct {
		name    string
		world   func() []model.Event
		set     func(*Config)
		verdict model.Verdict
		outcome model.Outcome
		message string
	}{
		{"expired reaped", expiredKured, func(*Config) {}, model.VerdictExpired, model.OutcomeDryRun, "would"},
		{"expired left with --reap-expired=false", expiredKured, func(c *Config) { c.ReapExpired = false }, model.VerdictExpired, model.OutcomeSkipped, "--reap-expired=false"},
		{"ghost left with --reap-ghost=false", ghost, func(c *Config) { c.ReapGhost = false }, model.VerdictGhost, model.OutcomeSkipped, "--reap-ghost=false"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.DryRun = true
			tc.set(&cfg)
			h := startAgent(t, cfg, newFakeClientset(), tc.world())
			hb := h.waitFor(t, tc.name, func(hb heartbeat) bool { return lockWith(hb, tc.verdict, tc.outcome) })
			if !strings.Contains(hb.Locks[0].Message, tc.message) {
				t.Errorf("message %q lacks %q", hb.Locks[0].Message, tc.message)
			}
		})
	}
}

func TestAgentNeverActsOnAmbiguous(t *testing.T) {
	now := time.Now()
	world := fleetlockWorld(now)
	// A second node with n1's machine id: the holder maps to both.
	world = append(world, model.NodeUpserted{Node: readyNode("n1-twin", testMachineID, now.Add(-3*time.Hour))})
	client := newFakeClientset(fleetLease(testZincatiID))
	h := startAgent(t, testConfig(), client, world)
	n := 0
	hb := h.waitFor(t, "three iterations skipping the ambiguous lock", func(hb heartbeat) bool {
		if lockWith(hb, model.VerdictAmbiguous, model.OutcomeSkipped) {
			n++
		}
		return n >= 3
	})
	if !strings.Contains(hb.Locks[0].Message, "never acts on an ambiguous") {
		t.Errorf("message %q", hb.Locks[0].Message)
	}
	if got := h.holder(t); got != testZincatiID {
		t.Fatalf("acted on an ambiguous lock: holder %q", got)
	}
}

// TestAgentNamesTheFleetBlocker: the heartbeat names what stops the fleet
// (here a fleetlock Lease whose holder maps to two nodes: no node can take
// it, and the agent never acts on it) and rebootwatch_fleet_blocked{kind}
// says its kind, 0 for the others.
func TestAgentNamesTheFleetBlocker(t *testing.T) {
	now := time.Now()
	world := fleetlockWorld(now)
	world = append(world, model.NodeUpserted{Node: readyNode("n1-twin", testMachineID, now.Add(-3*time.Hour))})
	h := startAgent(t, testConfig(), newFakeClientset(fleetLease(testZincatiID)), world)
	hb := h.waitFor(t, "a heartbeat naming the blocker", func(hb heartbeat) bool { return hb.Blocker != nil })
	b := hb.Blocker
	if b.Kind != model.BlockerLock || b.Node != "" || !b.Stuck ||
		!strings.HasPrefix(b.Reason, "no node can take the fleetlock lock default/fleetlock-default: held by "+testZincatiID) ||
		!strings.Contains(b.Reason, "ambiguous") {
		t.Fatalf("blocker %+v", b)
	}
	code, body := serve(h.agent.Metrics.Handler())
	if code != 200 {
		t.Fatalf("metrics %d", code)
	}
	for _, want := range []string{`rebootwatch_fleet_blocked{kind="lock-held"} 1`, `rebootwatch_fleet_blocked{kind="reboot-window"} 0`,
		`rebootwatch_fleet_blocked{kind="drain"} 0`} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

// A watch source that turned stale (no word from the API server, issue 11
// §1) makes /readyz fail naming it; once it is fresh again the agent is
// ready.
func TestAgentReadyzFollowsStaleSource(t *testing.T) {
	world := fleetlockWorld(time.Now())
	client := clientFor(world, fleetLease(testZincatiID))
	h := startAgent(t, testConfig(), client, world)
	ready := func(want bool, text string) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			ok, msg := h.agent.Health.Ready()
			if ok == want && strings.Contains(msg, text) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("readyz %v %q, want %v containing %q", ok, msg, want, text)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	ready(true, "ok")
	h.sink(model.SourceChanged{Health: model.SourceHealth{Name: model.SourceNodes, Status: model.StatusStale,
		Message: "no word from the API server for 16s (stale after 15s)", LastSync: time.Now().Add(-16 * time.Second)}})
	ready(false, "nodes stale (no word from the API server for 16s")
	h.sink(model.SourceChanged{Health: model.SourceHealth{Name: model.SourceNodes, Status: model.StatusOK, LastSync: time.Now()}})
	ready(true, "ok")
}

// newFakeClientset is fake.NewClientset naming generateName objects (the
// actions' Events) as the API server does.
func newFakeClientset(objs ...runtime.Object) *fake.Clientset {
	cs := fake.NewClientset(objs...)
	fakekube.GenerateNames(&cs.Fake)
	return cs
}

// Every string from the cluster is hostile: a 200,000-character holder
// carrying a bidi override and a C1 control leaves the heartbeat and the
// action's log line bounded (start and end kept), with those runes
// escaped as \uXXXX, and the JSON still decoding to the bounded value.
func TestAgentLogBoundsAndEscapesHostileValues(t *testing.T) {
	now := time.Now()
	holder := "start\u202e" + strings.Repeat("h", 200000) + "\u0085end"
	world := fleetlockWorld(now)
	for i, ev := range world {
		if e, ok := ev.(model.LockUpserted); ok {
			e.Lock.Spec = &fleetlock.Spec{Holder: holder, AcquireTime: now.Add(-2 * time.Hour)}
			world[i] = e
		}
	}
	cfg := testConfig()
	cfg.DryRun = true
	h := startAgent(t, cfg, clientFor(world, fleetLease(holder)), world)
	hb := h.waitFor(t, "the hostile holder is judged", func(hb heartbeat) bool { return len(hb.Locks) == 1 && hb.Locks[0].Verdict != "" })
	got := hb.Locks[0].Holder
	if len([]rune(got)) > 1000 || !strings.HasPrefix(got, "start\u202e") || !strings.HasSuffix(got, "\u0085end") {
		t.Errorf("heartbeat holder is %d runes, %q…%q: want at most 1,000 with its start and end", len([]rune(got)), got[:min(len(got), 12)], got[max(0, len(got)-8):])
	}
	for _, line := range strings.Split(strings.TrimSpace(h.log.String()), "\n") {
		if len(line) > 20000 {
			t.Errorf("log line of %d bytes: every value should be bounded", len(line))
		}
		if strings.ContainsAny(line, "\u202e\u0085") {
			t.Errorf("log line carries a raw bidi or C1 control: %.120q", line)
		}
	}
}
