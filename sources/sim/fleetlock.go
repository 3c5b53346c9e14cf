package sim

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rebootwatch/rebootwatch/internal/coord/fleetlock"
)

// The fleetlock scenario (the default demo): a Fedora CoreOS fleet whose
// Zincati agents reboot through poseidon/fleetlock, in the ghost-Lease
// incident. It plays what fleetlock really does (poseidon/fleetlock
// internal/server.go lock/unlock, internal/lease.go, internal/drain.go, at
// commit c42d494): the Lease carries only holderIdentity and
// leaseTransitions (no acquireTime, no renewTime; the time of the holder's
// write is in managedFields, manager "fleetlock"); the holder is cordoned and
// drained when it takes the lock and uncordoned only when it calls
// steady-state while still holding it — a holder whose Lease someone else
// freed stays cordoned.
//
// At time zero two groups are stuck:
//   - fleetlock-default is held by the Zincati id of a machine destroyed 47
//     days ago (a ghost): the control planes' group is blocked;
//   - fleetlock-workers is held by worker-1, which rebooted into the new OS
//     30 minutes ago but whose Zincati never called steady-state (orphaned,
//     and still cordoned by fleetlock's drain).
//
// The other workers' Zincati retry every ZincatiPeriod (first at
// ZincatiPeriod), so an operator who releases the orphan can reap the ghost
// before worker-2 takes the workers' lock.

// Fleetlock lease names of the scenario.
const (
	FleetlockWorkersLease = "fleetlock-workers"
	fleetOldImage         = "Fedora CoreOS 42.20251012.3.0"
	fleetOldKernel        = "6.16.10-200.fc42.x86_64"
	fleetNewImage         = "Fedora CoreOS 43.20251110.3.1"
	fleetNewKernel        = "6.17.7-300.fc43.x86_64"
	// ZincatiPeriod is how often a waiting Zincati asks fleetlock again.
	ZincatiPeriod = 10 * time.Minute
)

// Scenario names (Config.Scenario).
const (
	ScenarioFleetlock = "fleetlock"
	ScenarioKured     = "kured"
)

// fleetState is the fleetlock scenario's own part of a node.
type fleetState struct {
	group     string
	zincatiID string
	nextTry   time.Time
	stuck     bool // Zincati never calls steady-state
}

func (s *Sim) seedFleetlock() error {
	ctx := context.Background()
	start := s.cfg.Start
	for i := 0; i < s.cfg.ControlPlanes; i++ {
		s.nodes = append(s.nodes, &node{name: fmt.Sprintf("cp-%d", i+1), role: "control-plane"})
	}
	for i := 0; i < s.cfg.Workers; i++ {
		s.nodes = append(s.nodes, &node{name: fmt.Sprintf("worker-%d", i+1), role: "worker"})
	}
	s.fleet = map[string]*fleetState{}
	for i, n := range s.nodes {
		n.machineID = s.hex(16)
		n.bootID = s.uuid()
		n.created = start.Add(-time.Duration(200+s.rng.Intn(100)) * 24 * time.Hour)
		n.ready = true
		id, err := fleetlock.ZincatiNodeID(n.machineID)
		if err != nil {
			return err
		}
		fs := &fleetState{group: "default", zincatiID: id}
		if n.role == "worker" {
			fs.group = "workers"
		}
		s.fleet[n.name] = fs
		switch {
		case n.role == "control-plane":
			// Upgraded last week, before the ghost blocked their group.
			n.image, n.kernel, n.st = fleetNewImage, fleetNewKernel, stDone
			n.readySince = start.Add(-time.Duration(6*24+i) * time.Hour)
		case n.name == "worker-1":
			// The orphan: rebooted 30 minutes ago, still cordoned.
			n.image, n.kernel, n.st = fleetNewImage, fleetNewKernel, stUp
			n.readySince, n.cordoned, n.orphan = start.Add(-30*time.Minute), true, true
			fs.stuck = true
		default:
			n.image, n.kernel, n.needsReboot = fleetOldImage, fleetOldKernel, true
			n.readySince = start.Add(-time.Duration(30+s.rng.Intn(20)) * 24 * time.Hour)
			fs.nextTry = start.Add(ZincatiPeriod + time.Duration(i)*30*time.Second)
		}
		if _, err := s.Client.CoreV1().Nodes().Create(ctx, s.apiNode(n), metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	ghost := s.hex(16)
	if s.cfg.GhostHolder != "" {
		ghost = s.cfg.GhostHolder
	}
	if err := s.createLease(ctx, FleetlockLease, ghost, 31, start.Add(-47*24*time.Hour-3*time.Hour), start.Add(-300*24*time.Hour)); err != nil {
		return err
	}
	if err := s.createLease(ctx, FleetlockWorkersLease, s.fleet["worker-1"].zincatiID, 9, start.Add(-40*time.Minute), start.Add(-200*24*time.Hour)); err != nil {
		return err
	}
	return s.seedVolumes(ctx)
}

// fleetlockFields is what the apiserver records for fleetlock's write of
// the holder at t (see internal/coord/fleetlock/fleetlocktest).
func fleetlockFields(t time.Time) []metav1.ManagedFieldsEntry {
	mt := metav1.NewTime(t.UTC().Truncate(time.Second))
	return []metav1.ManagedFieldsEntry{{Manager: "fleetlock", Operation: metav1.ManagedFieldsOperationUpdate,
		APIVersion: "coordination.k8s.io/v1", Time: &mt, FieldsType: "FieldsV1",
		FieldsV1: metav1.NewFieldsV1(`{"f:spec":{"f:holderIdentity":{},"f:leaseTransitions":{}}}`)}}
}

func (s *Sim) createLease(ctx context.Context, name, holder string, transitions int32, heldSince, created time.Time) error {
	h, tr := holder, transitions
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: FleetlockNamespace,
		CreationTimestamp: metav1.NewTime(created), ManagedFields: fleetlockFields(heldSince)},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &h, LeaseTransitions: &tr}}
	_, err := s.Client.CoordinationV1().Leases(FleetlockNamespace).Create(ctx, l, metav1.CreateOptions{})
	return err
}

// setHolder is fleetlock's RebootLease.Update: the whole spec replaced by
// holderIdentity and leaseTransitions; the write is dated in managedFields.
func (s *Sim) setHolder(ctx context.Context, l *coordinationv1.Lease, holder string, transitions int32) error {
	h, tr := holder, transitions
	l.Spec = coordinationv1.LeaseSpec{HolderIdentity: &h, LeaseTransitions: &tr}
	l.ManagedFields = fleetlockFields(s.now)
	_, err := s.Client.CoordinationV1().Leases(FleetlockNamespace).Update(ctx, l, metav1.UpdateOptions{})
	return err
}

// nextFleet is next() for the fleetlock scenario.
func (s *Sim) nextFleet(consider func(time.Time, func(context.Context) error)) {
	for _, n := range s.nodes {
		n := n
		fs := s.fleet[n.name]
		switch n.st {
		case stIdle:
			if n.needsReboot {
				consider(fs.nextTry, func(ctx context.Context) error { return s.preReboot(ctx, n) })
			}
		case stHolding:
			consider(n.cordonAt, func(ctx context.Context) error { return s.cordon(ctx, n) })
		case stCordoned:
			consider(n.downAt, func(ctx context.Context) error { return s.down(ctx, n) })
		case stDown:
			consider(n.upAt, func(ctx context.Context) error { return s.upFleet(ctx, n) })
		case stUp:
			if !fs.stuck {
				consider(n.uncordonAt, func(ctx context.Context) error { return s.steadyState(ctx, n) })
			}
		}
		if !n.rebuildAt.IsZero() && s.hasMissing(n.name) && n.st >= stUp {
			consider(n.rebuildAt, func(ctx context.Context) error { return s.rebuild(ctx, n) })
		}
	}
}

// preReboot is Zincati's pre-reboot call and fleetlock's lock: a free Lease
// is taken (holder, transitions+1) and the node drained (cordoned first);
// a held one answers "held by …" and Zincati retries later.
func (s *Sim) preReboot(ctx context.Context, n *node) error {
	fs := s.fleet[n.name]
	fs.nextTry = s.now.Add(ZincatiPeriod)
	name := "fleetlock-" + fs.group
	l, err := s.Client.CoordinationV1().Leases(FleetlockNamespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	holder := ""
	if l.Spec.HolderIdentity != nil {
		holder = *l.Spec.HolderIdentity
	}
	if holder != "" && holder != fs.zincatiID {
		return nil
	}
	var tr int32
	if l.Spec.LeaseTransitions != nil {
		tr = *l.Spec.LeaseTransitions
	}
	if holder == "" {
		if err := s.setHolder(ctx, l, fs.zincatiID, tr+1); err != nil {
			return err
		}
	}
	s.take(n, s.now)
	return nil
}

func (s *Sim) upFleet(ctx context.Context, n *node) error {
	n.st, n.ready, n.readySince = stUp, true, s.now
	n.bootID = s.uuid()
	n.image, n.kernel, n.needsReboot = fleetNewImage, fleetNewKernel, false
	return s.writeNode(ctx, n)
}

// steadyState is Zincati's steady-state call and fleetlock's unlock: only
// while the node still holds the Lease does fleetlock uncordon it and clear
// the holder; otherwise "already unlocked" and the node stays cordoned.
func (s *Sim) steadyState(ctx context.Context, n *node) error {
	fs := s.fleet[n.name]
	n.st = stDone
	l, err := s.Client.CoordinationV1().Leases(FleetlockNamespace).Get(ctx, "fleetlock-"+fs.group, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != fs.zincatiID {
		return nil
	}
	// The uncordon only applies to the node as it is now (an operator may
	// have uncordoned it already).
	cur, err := s.Client.CoreV1().Nodes().Get(ctx, n.name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	n.cordoned = cur.Spec.Unschedulable
	if n.cordoned {
		n.cordoned = false
		if err := s.writeNode(ctx, n); err != nil {
			return err
		}
	}
	var tr int32
	if l.Spec.LeaseTransitions != nil {
		tr = *l.Spec.LeaseTransitions
	}
	return s.setHolder(ctx, l, "", tr)
}
