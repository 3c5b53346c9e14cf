package lock

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rebootwatch/rebootwatch/internal/coord/kured"
	"github.com/rebootwatch/rebootwatch/model"
)

// world is one generated cluster history: node states, volumes, lock shapes
// and a fault schedule applied over a few steps.
type world struct {
	steps []step
	now   time.Time
}

func genWorld(r *rand.Rand) world {
	var w world
	start := at(0)
	nNodes := r.IntN(6) // 0..5 nodes (0 = an empty list)
	names := []string{"n0", "n1", "n2", "n3", "n4"}[:nNodes]
	mids := []string{mid1, mid2, mid3, "4c09ca98649c4c7abc779cd04c96812e", "5c09ca98649c4c7abc779cd04c96812e"}
	nodeAt := func(i int, t time.Time) model.Node {
		var opts []nodeOpt
		switch r.IntN(10) {
		case 0:
			opts = append(opts, notReady(t.Add(-time.Duration(r.IntN(60))*time.Minute)))
		case 1:
			opts = append(opts, noReady())
		default:
			opts = append(opts, readySince(t.Add(-time.Duration(r.IntN(120))*time.Minute)))
		}
		if r.IntN(4) == 0 {
			opts = append(opts, cordoned())
		}
		if r.IntN(3) == 0 {
			opts = append(opts, boot(fmt.Sprintf("%s-b%d", names[i], r.IntN(3))))
		}
		switch r.IntN(8) {
		case 0: // no machine id
		case 1, 2:
			opts = append(opts, machine(mids[0])) // shared machine id
		default:
			opts = append(opts, machine(mids[i]))
		}
		return node(names[i], opts...)
	}
	holder := func() string {
		switch r.IntN(6) {
		case 0:
			return "ghost-" + fmt.Sprint(r.IntN(2))
		case 1:
			return kured.ManualHolder
		case 2:
			return strings.ToUpper("n" + fmt.Sprint(r.IntN(5)))
		default:
			return "n" + fmt.Sprint(r.IntN(5))
		}
	}
	kured := func(t time.Time) model.LockObject {
		e := func() entry {
			var ttl time.Duration
			if r.IntN(3) == 0 {
				ttl = time.Duration(r.IntN(120)) * time.Minute
			}
			var created time.Time
			if r.IntN(5) != 0 {
				created = t.Add(time.Duration(r.IntN(180)-150) * time.Minute) // sometimes in the future
			}
			return ent(holder(), created, ttl)
		}
		switch r.IntN(6) {
		case 0:
			return kuredAbsent()
		case 1:
			return kuredLock(`{"nodeID":` + fmt.Sprint(r.IntN(3)))
		case 2:
			return kuredLock(multi(2, e(), e()))
		case 3:
			return kuredLock(multi(3))
		default:
			return kuredLock(single(e()))
		}
	}
	fleetHolder := func() string {
		switch r.IntN(5) {
		case 0:
			return ""
		case 1:
			return "not-a-zincati-id"
		case 2:
			return zid(nil, mids[r.IntN(len(mids))])
		case 3:
			return zid(nil, "6c09ca98649c4c7abc779cd04c96812e") // matches no node
		}
		return zid1
	}
	statuses := []model.SourceStatus{model.StatusOK, model.StatusOK, model.StatusOK, model.StatusStale, model.StatusError, model.StatusForbidden}
	robust := []model.Robustness{model.RobustnessHealthy, model.RobustnessHealthy, model.RobustnessDegraded, model.RobustnessFaulted, model.RobustnessUnknown}

	nSteps := 1 + r.IntN(4)
	for s := 0; s < nSteps; s++ {
		t := start.Add(time.Duration(s) * time.Duration(1+r.IntN(20)) * time.Minute)
		var ev []model.Event
		// Fault schedule: the node, lock and Longhorn sources flip health.
		ev = append(ev, source(model.SourceNodes, statuses[r.IntN(len(statuses))]))
		if r.IntN(3) == 0 {
			ev = append(ev, source(model.SourceKured, statuses[r.IntN(len(statuses))]))
		}
		if r.IntN(3) == 0 {
			ev = append(ev, source(model.SourceFleetlock, statuses[r.IntN(len(statuses))]))
		}
		// Longhorn usually says something in the first picture, but not
		// always (a slow or hung list): the gates must cope with both.
		if (s == 0 && r.IntN(6) != 0) || r.IntN(3) == 0 {
			ev = append(ev, source(model.SourceLonghorn, append(statuses, model.StatusNotInstalled)[r.IntN(len(statuses)+1)]))
		}
		switch r.IntN(8) {
		case 0:
			ev = append(ev, model.AlertsFiring{Names: []string{"EtcdHighLatency"}})
		case 1:
			ev = append(ev, model.AlertsFiring{})
		}
		for i := range names {
			switch r.IntN(6) {
			case 0:
				ev = append(ev, gone(names[i])) // deleted (maybe back later)
			case 1: // unchanged (partial data: no update this step)
			default:
				ev = append(ev, up(nodeAt(i, t)))
			}
		}
		for v := 0; v < r.IntN(3); v++ {
			ev = append(ev, model.VolumeUpserted{Volume: model.Volume{Namespace: "longhorn-system", Name: fmt.Sprint("pvc-", v), Robustness: robust[r.IntN(len(robust))]}})
		}
		if s == 0 || r.IntN(2) == 0 {
			ev = append(ev, lockEv(kured(t)))
			l := fleet(fleetHolder())
			if r.IntN(2) == 0 {
				fspec(&l).AcquireTime = t.Add(-time.Duration(r.IntN(90)) * time.Minute)
			}
			ev = append(ev, lockEv(l))
		}
		w.steps = append(w.steps, step{t, ev})
		w.now = t
	}
	w.now = w.now.Add(time.Duration(r.IntN(30)) * time.Minute)
	w.steps = append(w.steps, step{w.now, nil})
	return w
}

// TestPropertyNoUnsafeAction generates cluster states and fault schedules
// and checks, for every lock, holder and action, that the engine never
// allows an action that breaks DESIGN §6.
func TestPropertyNoUnsafeAction(t *testing.T) {
	t.Parallel() // CPU-bound and self-contained: runs while the integration tests wait on the apiserver
	n := 3000
	if testing.Short() {
		n = 1000
	}
	r := rand.New(rand.NewPCG(4, 2026))
	var allowed, refused int
	verdicts := map[model.Verdict]int{}
	for k := 0; k < n; k++ {
		seed := r.Uint64()
		w := genWorld(rand.New(rand.NewPCG(seed, 1)))
		for _, unattended := range []bool{false, true} {
			e := New(Options{Unattended: unattended})
			c := build(e, w.steps...)
			for _, s := range c.LockStatuses() {
				verdicts[s.Verdict]++
				// Invariant 0: rule 1 — with a node list that is not fresh
				// no lock is ever judged ghost (or anything node-based).
				if !c.NodesFresh() && s.Holder != "" && s.Verdict != model.VerdictUnknown && s.Verdict != model.VerdictHeld {
					t.Fatalf("seed %d: nodes not fresh but verdict %s: %s", seed, s.Verdict, s.Reason)
				}
				if s.Verdict == model.VerdictGhost && len(s.HolderNodes) != 0 {
					t.Fatalf("seed %d: ghost with holder nodes %v", seed, s.HolderNodes)
				}
				for _, a := range []model.Action{model.ActionRelease, model.ActionReap} {
					p, err := e.PlanEntry(c, s.LockRef, s.Holder, s.Entry, a, w.now)
					if err != nil {
						t.Fatalf("seed %d: plan on a judged lock: %v", seed, err)
					}
					listed := false
					for _, x := range s.Actions {
						listed = listed || x == a
					}
					// Invariant 1: a listed action is one Plan allows.
					if listed && !p.Allowed {
						t.Fatalf("seed %d: %s listed but refused: %s", seed, a, p.Refusal)
					}
					if !p.Allowed {
						refused++
						// Invariant 2: a refusal names the failed gates.
						for _, g := range p.FailedGates() {
							if !strings.Contains(p.Refusal, g.Name) {
								t.Fatalf("seed %d: refusal %q does not name gate %s", seed, p.Refusal, g.Name)
							}
						}
						continue
					}
					allowed++
					checkAllowed(t, seed, c, e, p, unattended)
				}
			}
		}
	}
	t.Logf("%d worlds: %d allowed, %d refused plans; verdicts %v", n, allowed, refused, verdicts)
	if allowed == 0 || refused == 0 {
		t.Fatalf("generator too narrow: %d allowed, %d refused", allowed, refused)
	}
	for _, v := range []model.Verdict{model.VerdictFree, model.VerdictHeld, model.VerdictGhost, model.VerdictOrphaned, model.VerdictExpired, model.VerdictAmbiguous, model.VerdictUnknown} {
		if verdicts[v] == 0 {
			t.Errorf("generator never produced verdict %s", v)
		}
	}
}

// checkAllowed asserts the DESIGN §6 invariants of an allowed plan.
func checkAllowed(t *testing.T, seed uint64, c *model.Cluster, e *Engine, p Plan, unattended bool) {
	t.Helper()
	fail := func(format string, a ...any) {
		t.Fatalf("seed %d: %s %s holder %q (verdict %s) allowed but "+format, append([]any{seed, p.Action, p.Status.LockRef, p.Status.Holder, p.Status.Verdict}, a...)...)
	}
	s := p.Status
	// Rule 1: only from fresh data — nodes, the lock's source and Longhorn.
	if !c.NodesFresh() {
		fail("the node list is not fresh")
	}
	if h, ok := c.Source(sourceOf(s.Kind)); ok && !h.Usable() {
		fail("the %s source is %s", h.Name, h.Status)
	}
	// Rule 3: the verdict allows the action.
	switch p.Action {
	case model.ActionReap:
		if s.Verdict != model.VerdictGhost && s.Verdict != model.VerdictExpired {
			fail("reap needs ghost or expired")
		}
	case model.ActionRelease:
		if s.Verdict != model.VerdictOrphaned && (unattended || s.Verdict != model.VerdictHeld) {
			fail("release needs orphaned (or held, operator only)")
		}
	}
	if s.Verdict == model.VerdictAmbiguous || s.Verdict == model.VerdictUnknown || s.Verdict == model.VerdictFree {
		fail("the verdict never allows an action")
	}
	if s.Holder == kured.ManualHolder && len(s.HolderNodes) == 0 {
		fail("a manual lock is an operator's")
	}
	// Rule 3: no node other than the holder is NotReady, of unknown
	// readiness, mid-cycle or holding another lock.
	holders := map[string]bool{}
	for _, n := range s.HolderNodes {
		holders[n] = true
	}
	for _, name := range c.NodeNames() {
		if holders[name] {
			continue
		}
		n, _ := c.Node(name)
		ready, known, _ := n.Ready()
		if !known || !ready {
			fail("node %s is not Ready", name)
		}
		if c.Phase(name).InCycle() {
			fail("node %s is mid-cycle (%s)", name, c.Phase(name))
		}
	}
	for _, o := range c.LockStatuses() {
		if o.LockRef == s.LockRef && o.Holder == s.Holder {
			continue
		}
		for _, n := range o.HolderNodes {
			if !holders[n] && o.Holder != "" {
				fail("node %s holds %s", n, o.LockRef)
			}
		}
	}
	// The holder itself, when a live node, is Ready and not draining.
	for name := range holders {
		n, ok := c.Node(name)
		if !ok {
			fail("holder node %s is gone", name)
		}
		ready, known, _ := n.Ready()
		if !known || !ready {
			fail("holder node %s is not Ready", name)
		}
	}
	// Rule 3: no Longhorn volume degraded or faulted; Longhorn data fresh;
	// and Longhorn has reported at all ("no volumes" from a source that never
	// answered is missing data, not a healthy cluster).
	if _, ok := c.Source(model.SourceLonghorn); !ok {
		fail("the longhorn source never reported")
	}
	if c.LonghornPresent() {
		if h, ok := c.Source(model.SourceLonghorn); ok && !h.Usable() {
			fail("the longhorn source is %s", h.Status)
		}
		for _, v := range c.Volumes() {
			if v.Robustness == model.RobustnessDegraded || v.Robustness == model.RobustnessFaulted {
				fail("volume %s is %s", v.Key(), v.Robustness)
			}
		}
	}
	// The alert gate: no blocking Prometheus alert fires.
	if names, known := c.FiringAlerts(); known && len(names) > 0 {
		fail("blocking alerts fire: %v", names)
	}
	// Rule 2: the write carries the judged UID and resourceVersion.
	obj, ok := c.Lock(s.LockRef)
	if !ok || p.Write.Op == "" || p.Write.UID != obj.UID || p.Write.ResourceVersion != obj.ResourceVersion ||
		p.Write.UID != s.UID || p.Write.ResourceVersion != s.ResourceVersion {
		fail("the write %+v lacks the judged preconditions", p.Write)
	}
	// The write frees exactly this holder: a multi-lock keeps every other entry.
	if p.Write.Op == kured.OpSetAnnotation {
		before, err1 := kured.Parse(kspec(obj).Value)
		after, err2 := kured.Parse(p.Write.NewValue)
		if err1 != nil || err2 != nil || len(after.Entries) != len(before.Entries)-1 || after.MaxOwners != before.MaxOwners {
			fail("multi-lock write %q from %q", p.Write.NewValue, kspec(obj).Value)
		}
		// Exactly the judged entry goes: the others stay in order, byte
		// for byte (a duplicated holder keeps its other entries).
		kept := append(append([]kured.Entry{}, before.Entries[:s.Entry]...), before.Entries[s.Entry+1:]...)
		if !slices.Equal(after.Entries, kept) || before.Entries[s.Entry].NodeID != s.Holder {
			fail("multi-lock write removed another entry than %d", s.Entry)
		}
	}
	if unattended && !p.Unattended {
		fail("an unattended engine's plan is not marked unattended (overridable)")
	}
}
