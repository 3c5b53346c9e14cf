package explain

import (
	"strings"
	"testing"
	"time"

	"github.com/rebootwatch/rebootwatch/internal/coord/kured"
	"github.com/rebootwatch/rebootwatch/internal/lock"
	"github.com/rebootwatch/rebootwatch/internal/testenv/lockfixture"
	"github.com/rebootwatch/rebootwatch/model"
)

// explained applies the steps to a fresh cluster judged by the lock engine
// and explained with opts.
func explained(opts Options, steps ...lockfixture.Step) *model.Cluster {
	return lockfixture.Build(lock.New(lock.Options{}).Judge, For(opts), steps...)
}

// kuredWith is a kured lock object (annotation value, "" for free) with
// kured's configuration from its args.
func kuredWith(value string, args ...string) model.LockObject {
	cfg := kured.ParseConfig(args, nil, nil)
	l := lockfixture.KuredLock(value)
	if value == "" {
		l = lockfixture.KuredAbsent()
	}
	lockfixture.KSpec(&l).Config = &cfg
	return l
}

func needReboot(names ...string) model.Event {
	v := map[string]bool{}
	for _, n := range names {
		v[n] = true
	}
	return model.RebootRequiredSet{Values: v}
}

func kinds(bs []model.Blocker) []model.BlockerKind {
	var out []model.BlockerKind
	for _, b := range bs {
		out = append(out, b.Kind)
	}
	return out
}

// TestBlockerKinds has one case per kind: the node that waits, what it
// waits for first, the words its reason must say, the action that clears
// it and whether it is the fleet's blocker.
func TestBlockerKinds(t *testing.T) {
	now := lockfixture.T0 // Sunday 2026-11-29 12:00 UTC, 13:00 in Berlin
	prom := lockfixture.Source(model.SourcePrometheus, model.StatusOK)
	cases := []struct {
		name   string
		opts   Options
		steps  []lockfixture.Step
		node   string // "" : the fleet-wide blocker
		kind   model.BlockerKind
		words  []string
		action model.Action
		stalls bool
	}{
		{name: "lock held by an orphaned holder",
			steps: []lockfixture.Step{{At: now, Ev: []model.Event{lockfixture.NodesOK(), prom, needReboot("w3"),
				lockfixture.Up(lockfixture.Node("w1", lockfixture.ReadySince(now.Add(-2*time.Hour)), lockfixture.SchedAt(now.Add(-2*time.Hour)))), lockfixture.Up(lockfixture.Node("w3")),
				lockfixture.LockEv(kuredWith(lockfixture.Single(lockfixture.Ent("w1", now.Add(-3*time.Hour), 0)))), lockfixture.Source(model.SourceKured, model.StatusOK)}}},
			node: "w3", kind: model.BlockerLock, action: model.ActionRelease, stalls: true,
			words: []string{"w3 waits for the kured lock, held by w1 for 3h, orphaned: release it"}},
		// Issue 27 §1: the holder rebooted and kured on it never came back:
		// the holder itself is what stops the fleet.
		{name: "holder whose kured never came back after its reboot",
			steps: []lockfixture.Step{{At: now, Ev: []model.Event{lockfixture.NodesOK(), prom, needReboot("w3"),
				lockfixture.Up(lockfixture.Node("w1", lockfixture.ReadySince(now.Add(-20*time.Minute)), lockfixture.Cordoned())), lockfixture.Up(lockfixture.Node("w3")), lockfixture.KuredPods("w1", lockfixture.CrashLooping(now.Add(-time.Minute))),
				lockfixture.LockEv(kuredWith(lockfixture.Single(lockfixture.Ent("w1", now.Add(-40*time.Minute), 0)), "--lock-release-delay=1m")), lockfixture.Source(model.SourceKured, model.StatusOK)}}},
			node: "w1", kind: model.BlockerLock, action: model.ActionRelease, stalls: true,
			words: []string{"kured on w1 has not finished its cycle 20m after the reboot", "CrashLoopBackOff", "release it (which also uncordons w1, as kured would)"}},
		{name: "lock held by a ghost",
			steps: []lockfixture.Step{{At: now, Ev: []model.Event{lockfixture.NodesOK(), prom, needReboot("w3"), lockfixture.Up(lockfixture.Node("w3")),
				lockfixture.LockEv(kuredWith(lockfixture.Single(lockfixture.Ent("old-node", now.Add(-5*time.Hour), 0))))}}},
			node: "w3", kind: model.BlockerLock, action: model.ActionReap, stalls: true,
			words: []string{"held by old-node for 5h, ghost: reap it"}},
		{name: "lock held by a node draining normally is queueing, not a stall",
			steps: []lockfixture.Step{{At: now, Ev: []model.Event{lockfixture.NodesOK(), prom, needReboot("w3"),
				lockfixture.Up(lockfixture.Node("w1", lockfixture.Cordoned())), lockfixture.Up(lockfixture.Node("w3")),
				lockfixture.LockEv(kuredWith(lockfixture.Single(lockfixture.Ent("w1", now.Add(-2*time.Minute), 0))))}}},
			node: "w3", kind: model.BlockerLock, stalls: false,
			words: []string{"held by w1 for 2m (draining), held"}},
		{name: "manual kured lock",
			steps: []lockfixture.Step{{At: now, Ev: []model.Event{lockfixture.NodesOK(), prom, needReboot("w3"), lockfixture.Up(lockfixture.Node("w3")),
				lockfixture.LockEv(kuredWith(lockfixture.Single(lockfixture.Ent(kured.ManualHolder, now.Add(-time.Hour), 0))))}}},
			node: "w3", kind: model.BlockerLock, stalls: true,
			words: []string{"held by manual for 1h, a manual lock"}},
		{name: "outside kured's reboot window",
			steps: []lockfixture.Step{{At: now, Ev: []model.Event{lockfixture.NodesOK(), prom, needReboot("w3"), lockfixture.Up(lockfixture.Node("w3")),
				lockfixture.LockEv(kuredWith("", "--reboot-days=su", "--start-time=22:00", "--end-time=04:00", "--time-zone=Europe/Berlin"))}}},
			node: "w3", kind: model.BlockerWindow, stalls: true,
			// "opens in 9h" first: a narrow screen cuts the end of the line.
			words: []string{"w3 waits for kured's reboot window: opens in 9h (su 22:00–04:00 Europe/Berlin)"}},
		{name: "outside kured's daily reboot window",
			steps: []lockfixture.Step{{At: now, Ev: []model.Event{lockfixture.NodesOK(), prom, needReboot("w3"), lockfixture.Up(lockfixture.Node("w3")),
				lockfixture.LockEv(kuredWith("", "--reboot-days=su,mo,tu,we,th,fr,sa", "--start-time=22:00", "--end-time=04:00", "--time-zone=Europe/Berlin"))}}},
			node: "w3", kind: model.BlockerWindow, stalls: true,
			words: []string{"w3 waits for kured's reboot window: opens in 9h (every day 22:00–04:00 Europe/Berlin)"}},
		{name: "a reboot window kured cannot parse",
			steps: []lockfixture.Step{{At: now, Ev: []model.Event{lockfixture.NodesOK(), prom, needReboot("w3"), lockfixture.Up(lockfixture.Node("w3")),
				lockfixture.LockEv(kuredWith("", "--time-zone=Mars/Olympus"))}}},
			node: "w3", kind: model.BlockerWindow, stalls: true,
			words: []string{`w3 cannot reboot: kured cannot start with these settings: "Failed to build time window: unknown time zone Mars/Olympus"`}},
		// kured does not trim its days: " fr" is no weekday, and kured exits
		// (issue 33 §2); never a window of ours.
		{name: "a blank in kured's days",
			steps: []lockfixture.Step{{At: now, Ev: []model.Event{lockfixture.NodesOK(), prom, needReboot("w3"), lockfixture.Up(lockfixture.Node("w3")),
				lockfixture.LockEv(kuredWith("", "--reboot-days=th, fr"))}}},
			node: "w3", kind: model.BlockerWindow, stalls: true,
			words: []string{`w3 cannot reboot: kured cannot start with these settings: "Failed to build time window: invalid weekday:  fr"`}},
		{name: "a blocking alert fires",
			steps: []lockfixture.Step{{At: now, Ev: []model.Event{lockfixture.NodesOK(), prom, needReboot("w3"), lockfixture.Up(lockfixture.Node("w3")), lockfixture.LockEv(kuredWith("")),
				model.AlertsFiring{Names: []string{"NodeFilesystemFull", "KubeAPIDown"}, From: "kured's --alert-filter-regexp"}}}},
			node: "w3", kind: model.BlockerAlert, stalls: true,
			words: []string{"2 blocking alerts are firing (NodeFilesystemFull, KubeAPIDown)"}},
		{name: "Longhorn not ready for the next node",
			steps: []lockfixture.Step{{At: now, Ev: []model.Event{lockfixture.NodesOK(), prom, needReboot("w3"), lockfixture.Up(lockfixture.Node("w3")), lockfixture.LockEv(kuredWith("")),
				model.VolumeUpserted{Volume: model.Volume{Namespace: "longhorn-system", Name: "pvc-db", Robustness: model.RobustnessDegraded, Replicas: 3, Node: "w2"}}}}},
			node: "w3", kind: model.BlockerLonghorn, stalls: true,
			words: []string{"1 volume degraded or faulted (pvc-db)", "draining w3"}},
		// Longhorn reports a detached volume's robustness as unknown: it
		// has no replica to lose to a drain, and the volumes gate lets it
		// pass; the explainer must not name it either.
		{name: "a detached (unknown) volume is not what Longhorn waits for",
			steps: []lockfixture.Step{{At: now, Ev: []model.Event{lockfixture.NodesOK(), prom, needReboot("w3"), lockfixture.Up(lockfixture.Node("w3")), lockfixture.LockEv(kuredWith("")),
				model.VolumeUpserted{Volume: model.Volume{Namespace: "longhorn-system", Name: "pvc-db", Robustness: model.RobustnessDegraded, Replicas: 3, Node: "w2"}},
				model.VolumeUpserted{Volume: model.Volume{Namespace: "longhorn-system", Name: "pvc-idle", Robustness: model.RobustnessUnknown, State: "detached"}}}}},
			node: "w3", kind: model.BlockerLonghorn, stalls: true,
			words: []string{"1 volume degraded or faulted (pvc-db)", "draining w3"}},
		{name: "a drain that does not finish",
			steps: []lockfixture.Step{{At: now.Add(-40 * time.Minute), Ev: []model.Event{lockfixture.NodesOK(), prom, lockfixture.Up(lockfixture.Node("w1", lockfixture.Cordoned())),
				lockfixture.LockEv(kuredWith(lockfixture.Single(lockfixture.Ent("w1", now.Add(-40*time.Minute), 0))))}}, {At: now, Ev: nil}},
			node: "w1", kind: model.BlockerDrain, stalls: true,
			words: []string{"w1 has been draining for 40m"}},
		{name: "kured's blocking pod on the node",
			steps: []lockfixture.Step{{At: now, Ev: []model.Event{lockfixture.NodesOK(), prom, needReboot("w3"), lockfixture.Up(lockfixture.Node("w3")), lockfixture.LockEv(kuredWith("", "--blocking-pod-selector=app=backup")),
				model.BlockingSelectorsSet{Selectors: []string{"app=backup"}},
				model.BlockingPodsSet{Selector: "app=backup", Pods: []model.Pod{
					{Namespace: "ops", Name: "backup-1", Node: "w3", Phase: model.PodRunning},
					{Namespace: "ops", Name: "backup-0", Node: "w3", Phase: model.PodSucceeded},
					{Namespace: "ops", Name: "backup-2", Node: "w4", Phase: model.PodRunning}}}}}},
			node: "w3", kind: model.BlockerPod, stalls: true,
			words: []string{"kured's --blocking-pod-selector matches 1 pod on it (ops/backup-1)"}},
		{name: "kured's blocking pods cannot be read here: said, not a stall",
			steps: []lockfixture.Step{{At: now, Ev: []model.Event{lockfixture.NodesOK(), prom, needReboot("w3"), lockfixture.Up(lockfixture.Node("w3")), lockfixture.LockEv(kuredWith("")),
				model.BlockingSelectorsSet{Selectors: []string{"app=backup"}},
				model.BlockingPodsSet{Selector: "app=backup", Err: "forbidden: pods is forbidden"}}}},
			node: "w3", kind: model.BlockerPod, stalls: false,
			words: []string{"cannot tell whether pods matching", "forbidden: pods is forbidden"}},
		{name: "an invalid blocking pod selector blocks every reboot",
			steps: []lockfixture.Step{{At: now, Ev: []model.Event{lockfixture.NodesOK(), prom, needReboot("w3"), lockfixture.Up(lockfixture.Node("w3")), lockfixture.LockEv(kuredWith("")),
				model.BlockingSelectorsSet{Selectors: []string{"app in (("}},
				model.BlockingPodsSet{Selector: "app in ((", Err: "invalid selector: unable to parse requirement"}}}},
			node: "w3", kind: model.BlockerPod, stalls: true,
			words: []string{"is invalid", "kured blocks every reboot"}},
		{name: "a drain held by a PodDisruptionBudget",
			steps: []lockfixture.Step{{At: now.Add(-40 * time.Minute), Ev: []model.Event{lockfixture.NodesOK(), prom, lockfixture.Up(lockfixture.Node("w1", lockfixture.Cordoned())),
				lockfixture.Source(model.SourcePods, model.StatusOK), lockfixture.Source(model.SourcePDBs, model.StatusOK),
				lockfixture.LockEv(kuredWith(lockfixture.Single(lockfixture.Ent("w1", now.Add(-40*time.Minute), 0))))}},
				{At: now, Ev: []model.Event{
					model.PDBUpserted{PDB: model.PDB{Namespace: "shop", Name: "web", Selector: &model.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
						MinAvailable: "2", CurrentHealthy: 2, DesiredHealthy: 2, ExpectedPods: 2, Observed: true}},
					model.NodePodsSet{Node: "w1", Watched: true, Pods: []model.Pod{
						{Namespace: "shop", Name: "web-1", Node: "w1", Phase: model.PodRunning, Ready: true, Labels: map[string]string{"app": "web"}, OwnerKind: "ReplicaSet"},
						{Namespace: "kube-system", Name: "kured-x", Node: "w1", Phase: model.PodRunning, Ready: true, OwnerKind: "DaemonSet"}}}}}},
			node: "w1", kind: model.BlockerDrain, stalls: true,
			words: []string{"w1 has been draining for 40m: PodDisruptionBudget shop/web allows 0 disruptions (2/2 healthy) for shop/web-1 still on it"}},
		{name: "a drain held by a PodDisruptionBudget, within the bound: said at once, muted",
			steps: []lockfixture.Step{{At: now.Add(-3 * time.Minute), Ev: []model.Event{lockfixture.NodesOK(), prom, lockfixture.Up(lockfixture.Node("w1", lockfixture.Cordoned())),
				lockfixture.Source(model.SourcePods, model.StatusOK), lockfixture.Source(model.SourcePDBs, model.StatusOK),
				lockfixture.LockEv(kuredWith(lockfixture.Single(lockfixture.Ent("w1", now.Add(-3*time.Minute), 0))))}},
				{At: now, Ev: []model.Event{
					model.PDBUpserted{PDB: model.PDB{Namespace: "shop", Name: "web", Selector: &model.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
						MinAvailable: "2", CurrentHealthy: 2, DesiredHealthy: 2, ExpectedPods: 2, Observed: true}},
					model.NodePodsSet{Node: "w1", Watched: true, Pods: []model.Pod{
						{Namespace: "shop", Name: "web-1", Node: "w1", Phase: model.PodRunning, Ready: true, Labels: map[string]string{"app": "web"}, OwnerKind: "ReplicaSet"}}}}}},
			node: "w1", kind: model.BlockerDrain, stalls: false,
			words: []string{"w1 is draining (3m): PodDisruptionBudget shop/web allows 0 disruptions (2/2 healthy) for shop/web-1 still on it", "a stall after 10m (--drain-bound)"}},
		{name: "kured's --drain-timeout is the bound: within it, muted",
			steps: []lockfixture.Step{{At: now.Add(-40 * time.Minute), Ev: []model.Event{lockfixture.NodesOK(), prom, lockfixture.Up(lockfixture.Node("w1", lockfixture.Cordoned())),
				lockfixture.Source(model.SourcePods, model.StatusOK), lockfixture.Source(model.SourcePDBs, model.StatusOK),
				lockfixture.LockEv(kuredWith(lockfixture.Single(lockfixture.Ent("w1", now.Add(-40*time.Minute), 0)), "--drain-timeout=1h"))}},
				{At: now, Ev: []model.Event{
					model.PDBUpserted{PDB: model.PDB{Namespace: "shop", Name: "web", Selector: &model.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
						MinAvailable: "2", CurrentHealthy: 2, DesiredHealthy: 2, ExpectedPods: 2, Observed: true}},
					model.NodePodsSet{Node: "w1", Watched: true, Pods: []model.Pod{
						{Namespace: "shop", Name: "web-1", Node: "w1", Phase: model.PodRunning, Ready: true, Labels: map[string]string{"app": "web"}, OwnerKind: "ReplicaSet"}}}}}},
			node: "w1", kind: model.BlockerDrain, stalls: false,
			words: []string{"w1 is draining (40m): PodDisruptionBudget shop/web", "a stall after 1h (kured's --drain-timeout)"}},
		{name: "kured's --drain-timeout is the bound: past it, a stall",
			steps: []lockfixture.Step{{At: now.Add(-40 * time.Minute), Ev: []model.Event{lockfixture.NodesOK(), prom, lockfixture.Up(lockfixture.Node("w1", lockfixture.Cordoned())),
				lockfixture.Source(model.SourcePods, model.StatusOK), lockfixture.Source(model.SourcePDBs, model.StatusOK),
				lockfixture.LockEv(kuredWith(lockfixture.Single(lockfixture.Ent("w1", now.Add(-40*time.Minute), 0)), "--drain-timeout=30m"))}},
				{At: now, Ev: []model.Event{
					model.PDBUpserted{PDB: model.PDB{Namespace: "shop", Name: "web", Selector: &model.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
						MinAvailable: "2", CurrentHealthy: 2, DesiredHealthy: 2, ExpectedPods: 2, Observed: true}},
					model.NodePodsSet{Node: "w1", Watched: true, Pods: []model.Pod{
						{Namespace: "shop", Name: "web-1", Node: "w1", Phase: model.PodRunning, Ready: true, Labels: map[string]string{"app": "web"}, OwnerKind: "ReplicaSet"}}}}}},
			node: "w1", kind: model.BlockerDrain, stalls: true,
			words: []string{"w1 has been draining for 40m, longer than kured's --drain-timeout 30m: PodDisruptionBudget shop/web"}},
		{name: "the --drain-bound flag is the bound without kured's --drain-timeout",
			opts: Options{DrainBound: time.Hour},
			steps: []lockfixture.Step{{At: now.Add(-40 * time.Minute), Ev: []model.Event{lockfixture.NodesOK(), prom, lockfixture.Up(lockfixture.Node("w1", lockfixture.Cordoned())),
				lockfixture.Source(model.SourcePods, model.StatusOK), lockfixture.Source(model.SourcePDBs, model.StatusOK),
				lockfixture.LockEv(kuredWith(lockfixture.Single(lockfixture.Ent("w1", now.Add(-40*time.Minute), 0))))}},
				{At: now, Ev: []model.Event{
					model.PDBUpserted{PDB: model.PDB{Namespace: "shop", Name: "web", Selector: &model.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
						MinAvailable: "2", CurrentHealthy: 2, DesiredHealthy: 2, ExpectedPods: 2, Observed: true}},
					model.NodePodsSet{Node: "w1", Watched: true, Pods: []model.Pod{
						{Namespace: "shop", Name: "web-1", Node: "w1", Phase: model.PodRunning, Ready: true, Labels: map[string]string{"app": "web"}, OwnerKind: "ReplicaSet"}}}}}},
			node: "w1", kind: model.BlockerDrain, stalls: false,
			words: []string{"w1 is draining (40m): PodDisruptionBudget shop/web", "a stall after 1h (--drain-bound)"}},
		{name: "a holder never cordoned: its drain has not begun (its pods are never watched)",
			steps: []lockfixture.Step{{At: now.Add(-40 * time.Minute), Ev: []model.Event{lockfixture.NodesOK(), prom, lockfixture.Up(lockfixture.Node("w1")),
				lockfixture.Source(model.SourcePods, model.StatusOK), lockfixture.Source(model.SourcePDBs, model.StatusOK),
				lockfixture.LockEv(kuredWith(lockfixture.Single(lockfixture.Ent("w1", now.Add(-40*time.Minute), 0))))}}, {At: now, Ev: nil}},
			node: "w1", kind: model.BlockerDrain, stalls: true,
			words: []string{"w1 has held the lock for 40m but is not cordoned: its coordinator has not begun the drain"}},
		{name: "a drain whose pods cannot be read",
			steps: []lockfixture.Step{{At: now.Add(-40 * time.Minute), Ev: []model.Event{lockfixture.NodesOK(), prom, lockfixture.Up(lockfixture.Node("w1", lockfixture.Cordoned())),
				model.SourceChanged{Health: model.SourceHealth{Name: model.SourcePods, Status: model.StatusForbidden, Message: "pods is forbidden"}},
				lockfixture.LockEv(kuredWith(lockfixture.Single(lockfixture.Ent("w1", now.Add(-40*time.Minute), 0))))}}, {At: now, Ev: nil}},
			node: "w1", kind: model.BlockerDrain, stalls: true,
			words: []string{"cannot tell why the drain is slow (forbidden: pods is forbidden)"}},
		{name: "a drain with an unready pod the budget lets go, and a terminating one",
			steps: []lockfixture.Step{{At: now.Add(-40 * time.Minute), Ev: []model.Event{lockfixture.NodesOK(), prom, lockfixture.Up(lockfixture.Node("w1", lockfixture.Cordoned())),
				lockfixture.Source(model.SourcePods, model.StatusOK), lockfixture.Source(model.SourcePDBs, model.StatusOK),
				lockfixture.LockEv(kuredWith(lockfixture.Single(lockfixture.Ent("w1", now.Add(-40*time.Minute), 0))))}},
				{At: now, Ev: []model.Event{
					model.PDBUpserted{PDB: model.PDB{Namespace: "shop", Name: "web", Selector: &model.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
						CurrentHealthy: 2, DesiredHealthy: 2, Observed: true}},
					model.NodePodsSet{Node: "w1", Watched: true, Pods: []model.Pod{
						{Namespace: "shop", Name: "web-1", Node: "w1", Phase: model.PodRunning, Ready: false, Labels: map[string]string{"app": "web"}, Deleting: now.Add(-30 * time.Minute)}}}}}},
			node: "w1", kind: model.BlockerDrain, stalls: true,
			words: []string{"1 pod is still terminating (shop/web-1), none held by a PodDisruptionBudget"}},
		{name: "a reboot taking too long, no reboot on record",
			steps: []lockfixture.Step{{At: now, Ev: []model.Event{lockfixture.NodesOK(), prom, lockfixture.Up(lockfixture.Node("w1", lockfixture.Cordoned(), lockfixture.NotReady(now.Add(-25*time.Minute)))),
				lockfixture.LockEv(kuredWith(lockfixture.Single(lockfixture.Ent("w1", now.Add(-40*time.Minute), 0))))}}},
			node: "w1", kind: model.BlockerSlowReboot, stalls: true,
			words: []string{"w1 has been rebooting for 25m; no reboot of this fleet seen yet"}},
		{name: "kured's release delay",
			steps: []lockfixture.Step{{At: now, Ev: []model.Event{lockfixture.NodesOK(), prom, lockfixture.Up(lockfixture.Node("w1", lockfixture.ReadySince(now.Add(-5*time.Minute)))),
				lockfixture.LockEv(kuredWith(lockfixture.Single(lockfixture.Ent("w1", now.Add(-40*time.Minute), 0)), "--lock-release-delay=30m"))}}},
			node: "w1", kind: model.BlockerReleaseDelay, stalls: true,
			words: []string{"--lock-release-delay", "26m left"}},
		{name: "done · still cordoned",
			steps: []lockfixture.Step{{At: now, Ev: []model.Event{lockfixture.NodesOK(), prom, lockfixture.LockEv(kuredWith("")),
				lockfixture.Up(lockfixture.Node("w1", lockfixture.Cordoned(), lockfixture.ReadySince(now.Add(-time.Hour)), func(n *model.Node) {
					n.Annotations = map[string]string{kured.MarkAnnotation: now.Add(-2 * time.Hour).Format(time.RFC3339)}
				}))}}},
			node: "w1", kind: model.BlockerCordon, action: model.ActionUncordon, stalls: true,
			words: []string{"w1 rebooted and holds no lock but is still cordoned: kured did not uncordon it"}},
		{name: "reboot-required unknown: Prometheus not configured",
			steps: []lockfixture.Step{{At: now, Ev: []model.Event{lockfixture.NodesOK(), lockfixture.Source(model.SourcePrometheus, model.StatusDisabled), lockfixture.Up(lockfixture.Node("w1")), lockfixture.Up(lockfixture.Node("w2")), lockfixture.LockEv(kuredWith(""))}}},
			kind:  model.BlockerUnknown, stalls: true,
			words: []string{"whether 2 nodes need a reboot is unknown: Prometheus is not configured"}},
		{name: "reboot-required unknown: kured's metric absent",
			steps: []lockfixture.Step{{At: now, Ev: []model.Event{lockfixture.NodesOK(), prom, needReboot("w2"), lockfixture.Up(lockfixture.Node("w1")), lockfixture.Up(lockfixture.Node("w2")), lockfixture.LockEv(kuredWith(""))}}},
			kind:  model.BlockerUnknown, stalls: true,
			words: []string{"whether 1 node needs a reboot is unknown: kured_reboot_required is absent"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := explained(tc.opts, tc.steps...)
			bs := c.Blockers()
			var got []model.Blocker
			if tc.node == "" {
				got = bs.General
			} else {
				got = c.NodeBlockers(tc.node)
			}
			if len(got) == 0 {
				t.Fatalf("no blocker for %q (phase %s); all: %+v", tc.node, c.Phase(tc.node), bs)
			}
			b := got[0]
			if b.Kind != tc.kind {
				t.Fatalf("first blocker %s (%s), want %s; all %v", b.Kind, b.Reason, tc.kind, kinds(got))
			}
			for _, w := range tc.words {
				if !strings.Contains(b.Reason, w) {
					t.Errorf("reason %q lacks %q", b.Reason, w)
				}
			}
			if b.Action != tc.action || b.Stalls != tc.stalls || b.Node != tc.node {
				t.Errorf("action %q stalls %v node %q, want %q %v %q", b.Action, b.Stalls, b.Node, tc.action, tc.stalls, tc.node)
			}
			if len(b.Evidence) == 0 || b.Clears == "" || b.Short == "" {
				t.Errorf("no evidence, no way to clear it or no short form: %+v", b)
			}
			switch {
			case tc.stalls && (bs.Fleet == nil || bs.Fleet.Reason != b.Reason):
				t.Errorf("fleet blocker %+v, want this one", bs.Fleet)
			case !tc.stalls && bs.Fleet != nil:
				t.Errorf("queueing is no fleet blocker: %+v", bs.Fleet)
			}
		})
	}
}

// TestBlockerPrecedence: a node's blockers come in kured's order (window,
// then alerts, then the lock) with Longhorn last; the fleet's blocker is the
// in-cycle node's before any pending node's, with the others counted; the
// fleet-wide unknown only when no node is blocked.
func TestBlockerPrecedence(t *testing.T) {
	now := lockfixture.T0
	window := []string{"--reboot-days=su", "--start-time=22:00", "--end-time=04:00", "--time-zone=Europe/Berlin"}
	degraded := model.VolumeUpserted{Volume: model.Volume{Namespace: "lh", Name: "pvc-a", Robustness: model.RobustnessDegraded, Replicas: 3}}
	alerts := model.AlertsFiring{Names: []string{"KubeAPIDown"}, From: "kured"}
	prom := lockfixture.Source(model.SourcePrometheus, model.StatusOK)

	t.Run("one node: window, alert, lock, longhorn", func(t *testing.T) {
		c := explained(Options{}, lockfixture.Step{At: now, Ev: []model.Event{lockfixture.NodesOK(), prom, needReboot("w3"), alerts, degraded,
			lockfixture.Up(lockfixture.Node("w1", lockfixture.ReadySince(now.Add(-2*time.Hour)))), lockfixture.Up(lockfixture.Node("w3")),
			lockfixture.LockEv(kuredWith(lockfixture.Single(lockfixture.Ent("w1", now.Add(-3*time.Hour), 0)), window...))}})
		got := kinds(c.NodeBlockers("w3"))
		want := []model.BlockerKind{model.BlockerWindow, model.BlockerAlert, model.BlockerLock, model.BlockerLonghorn}
		if len(got) != len(want) {
			t.Fatalf("kinds %v, want %v", got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("kinds %v, want %v", got, want)
			}
		}
		if f := c.FleetBlocker(); f == nil || f.Kind != model.BlockerWindow || f.Node != "w3" || f.Others != 0 {
			t.Fatalf("fleet %+v", f)
		}
	})
	t.Run("the in-cycle node's blocker stops the fleet before pending ones", func(t *testing.T) {
		c := explained(Options{}, lockfixture.Step{At: now, Ev: []model.Event{lockfixture.NodesOK(), prom, needReboot("w2", "w3"),
			lockfixture.Up(lockfixture.Node("w1", lockfixture.Cordoned(), lockfixture.NotReady(now.Add(-30*time.Minute)))), lockfixture.Up(lockfixture.Node("w2")), lockfixture.Up(lockfixture.Node("w3")),
			lockfixture.LockEv(kuredWith(lockfixture.Single(lockfixture.Ent("w1", now.Add(-40*time.Minute), 0)), window...))}})
		f := c.FleetBlocker()
		if f == nil || f.Kind != model.BlockerSlowReboot || f.Node != "w1" || f.Others != 2 {
			t.Fatalf("fleet %+v, want w1's slow reboot with 2 others", f)
		}
	})
	t.Run("queueing behind a normal holder is skipped for the next stalled node", func(t *testing.T) {
		c := explained(Options{}, lockfixture.Step{At: now, Ev: []model.Event{lockfixture.NodesOK(), prom, needReboot("w3"),
			lockfixture.Up(lockfixture.Node("w1", lockfixture.Cordoned())), lockfixture.Up(lockfixture.Node("w3")), lockfixture.Up(lockfixture.Node("w4", lockfixture.Cordoned(), lockfixture.ReadySince(now.Add(-time.Hour)), func(n *model.Node) {
				n.Annotations = map[string]string{kured.MarkAnnotation: now.Add(-2 * time.Hour).Format(time.RFC3339)}
			})),
			lockfixture.LockEv(kuredWith(lockfixture.Single(lockfixture.Ent("w1", now.Add(-2*time.Minute), 0))))}})
		if b := c.NodeBlockers("w3"); len(b) == 0 || b[0].Stalls {
			t.Fatalf("w3 %+v", b)
		}
		if f := c.FleetBlocker(); f == nil || f.Node != "w4" || f.Kind != model.BlockerCordon || f.Others != 0 {
			t.Fatalf("fleet %+v, want w4's stuck cordon", f)
		}
	})
	t.Run("with kured here a pending node waits for kured's lock, not a fleetlock group's", func(t *testing.T) {
		c := explained(Options{}, lockfixture.Step{At: now, Ev: []model.Event{lockfixture.NodesOK(), prom, needReboot("w3"), lockfixture.Up(lockfixture.Node("w3")),
			lockfixture.LockEv(kuredWith("")), lockfixture.LockEv(lockfixture.Fleet("0123456789abcdef0123456789abcdef"))}})
		if b := c.NodeBlockers("w3"); len(b) != 0 {
			t.Fatalf("w3 waits for %+v", b)
		}
		c = explained(Options{}, lockfixture.Step{At: now, Ev: []model.Event{lockfixture.NodesOK(), prom, needReboot("w3"), lockfixture.Up(lockfixture.Node("w3", lockfixture.Machine(lockfixture.Mid1))),
			lockfixture.LockEv(lockfixture.Fleet(lockfixture.Zid(t, lockfixture.Mid2)))}})
		if b := c.NodeBlockers("w3"); len(b) != 1 || b[0].Kind != model.BlockerLock || !strings.Contains(b[0].Reason, "ghost") {
			t.Fatalf("without kured: %+v", b)
		}
	})
	t.Run("a fleetlock ghost blocks the fleet whose waiters are not seen", func(t *testing.T) {
		c := explained(Options{}, lockfixture.Step{At: now, Ev: []model.Event{lockfixture.NodesOK(), prom, lockfixture.Up(lockfixture.Node("w3", lockfixture.Machine(lockfixture.Mid1))), lockfixture.LockEv(lockfixture.Fleet(lockfixture.Zid(t, lockfixture.Mid2)))}})
		f := c.FleetBlocker()
		if f == nil || f.Kind != model.BlockerLock || f.Node != "" || !strings.HasPrefix(f.Reason, "no node can take the fleetlock lock default/fleetlock-default: held by "+lockfixture.Zid(t, lockfixture.Mid2)) ||
			!strings.Contains(f.Reason, ", ghost") || f.Lock == nil || *f.Lock != lockfixture.FleetRef {
			t.Fatalf("fleet %+v", f)
		}
		if len(c.Blockers().Nodes) != 0 {
			t.Fatalf("no node is seen waiting: %+v", c.Blockers().Nodes)
		}
		c = explained(Options{}, lockfixture.Step{At: now, Ev: []model.Event{lockfixture.NodesOK(), prom, lockfixture.Up(lockfixture.Node("w3", lockfixture.Machine(lockfixture.Mid1), lockfixture.Cordoned())), lockfixture.LockEv(lockfixture.Fleet(lockfixture.Zid(t, lockfixture.Mid1)))}})
		if f := c.FleetBlocker(); f != nil {
			t.Fatalf("a holder in a normal cycle blocks nothing: %+v", f)
		}
	})
	t.Run("the longest pending node first", func(t *testing.T) {
		c := explained(Options{},
			lockfixture.Step{At: now.Add(-time.Hour), Ev: []model.Event{lockfixture.NodesOK(), prom, needReboot("w9"), lockfixture.Up(lockfixture.Node("w1")), lockfixture.Up(lockfixture.Node("w9")), lockfixture.LockEv(kuredWith("", window...))}},
			lockfixture.Step{At: now, Ev: []model.Event{needReboot("w1", "w9")}})
		if f := c.FleetBlocker(); f == nil || f.Node != "w9" || f.Others != 1 {
			t.Fatalf("fleet %+v, want w9 (pending for an hour) with 1 other", f)
		}
	})
	t.Run("unknown is the fleet's blocker only when no node is blocked", func(t *testing.T) {
		c := explained(Options{}, lockfixture.Step{At: now, Ev: []model.Event{lockfixture.NodesOK(), prom, needReboot("w3"), lockfixture.Up(lockfixture.Node("w1")), lockfixture.Up(lockfixture.Node("w3")), lockfixture.LockEv(kuredWith("", window...))}})
		if f := c.FleetBlocker(); f == nil || f.Kind != model.BlockerWindow {
			t.Fatalf("fleet %+v", f)
		}
		if g := c.Blockers().General; len(g) != 1 || g[0].Kind != model.BlockerUnknown {
			t.Fatalf("general %+v", g)
		}
	})
	t.Run("nothing waiting: no blocker at all", func(t *testing.T) {
		c := explained(Options{}, lockfixture.Step{At: now, Ev: []model.Event{lockfixture.NodesOK(), prom, model.RebootRequiredSet{Values: map[string]bool{"w1": false}}, lockfixture.Up(lockfixture.Node("w1")), lockfixture.LockEv(kuredWith(""))}})
		if b := c.Blockers(); b.Fleet != nil || len(b.Nodes) != 0 || len(b.General) != 0 {
			t.Fatalf("%+v", b)
		}
	})
}

// TestSlowRebootIsRelativeToTheFleetsMedian: with a 4m reboot on record the
// bound is 12m (3× the median): 10m is not slow, 25m is.
func TestSlowRebootIsRelativeToTheFleetsMedian(t *testing.T) {
	lock := func(holder string, since time.Time) model.Event {
		return lockfixture.LockEv(kuredWith(lockfixture.Single(lockfixture.Ent(holder, since, 0))))
	}
	base := lockfixture.T0.Add(-2 * time.Hour)
	steps := []lockfixture.Step{
		{At: base, Ev: []model.Event{lockfixture.NodesOK(), lockfixture.Source(model.SourcePrometheus, model.StatusOK), lockfixture.Up(lockfixture.Node("w1")), lockfixture.Up(lockfixture.Node("w2")), lock("w1", base)}},
		{At: base.Add(time.Minute), Ev: []model.Event{lockfixture.Up(lockfixture.Node("w1", lockfixture.Cordoned(), lockfixture.NotReady(base.Add(time.Minute))))}},
		{At: base.Add(5 * time.Minute), Ev: []model.Event{lockfixture.Up(lockfixture.Node("w1", lockfixture.Cordoned(), lockfixture.Boot("w1-b2"), lockfixture.ReadySince(base.Add(5*time.Minute))))}},
		{At: base.Add(6 * time.Minute), Ev: []model.Event{lockfixture.Up(lockfixture.Node("w1", lockfixture.Boot("w1-b2"), lockfixture.ReadySince(base.Add(5*time.Minute)))), lockfixture.LockEv(kuredWith(""))}},
	}
	for _, tc := range []struct {
		down time.Duration
		slow bool
	}{{10 * time.Minute, false}, {25 * time.Minute, true}} {
		s := append([]lockfixture.Step(nil), steps...)
		s = append(s, lockfixture.Step{At: lockfixture.T0.Add(-tc.down - time.Minute), Ev: []model.Event{lock("w2", lockfixture.T0.Add(-tc.down-time.Minute))}},
			lockfixture.Step{At: lockfixture.T0.Add(-tc.down), Ev: []model.Event{lockfixture.Up(lockfixture.Node("w2", lockfixture.Cordoned(), lockfixture.NotReady(lockfixture.T0.Add(-tc.down))))}},
			lockfixture.Step{At: lockfixture.T0, Ev: nil})
		c := explained(Options{}, s...)
		if got := c.RebootDurations(); len(got) != 1 || got[0] != 4*time.Minute {
			t.Fatalf("reboots on record %v", got)
		}
		b := c.NodeBlockers("w2")
		if !tc.slow {
			if len(b) != 0 {
				t.Fatalf("down %s: %+v", tc.down, b)
			}
			continue
		}
		if len(b) == 0 || b[0].Kind != model.BlockerSlowReboot || !strings.Contains(b[0].Reason, "w2 has been rebooting for 25m; this fleet's median is 4m") {
			t.Fatalf("down %s: %+v", tc.down, b)
		}
	}
}

// TestDrainDelayIsKuredsOwnWait: kured waits --drain-delay after taking the
// lock before it cordons (cmd/kured/main.go, drain), so a holder not yet
// cordoned within that delay plus the bound is not a stall; past it, the
// bound says where it comes from.
func TestDrainDelayIsKuredsOwnWait(t *testing.T) {
	now := lockfixture.T0
	prom := lockfixture.Source(model.SourcePrometheus, model.StatusOK)
	holder := func(delay string) *model.Cluster {
		return explained(Options{}, lockfixture.Step{At: now.Add(-20 * time.Minute), Ev: []model.Event{lockfixture.NodesOK(), prom, lockfixture.Up(lockfixture.Node("w1")),
			lockfixture.Source(model.SourcePods, model.StatusOK), lockfixture.Source(model.SourcePDBs, model.StatusOK),
			lockfixture.LockEv(kuredWith(lockfixture.Single(lockfixture.Ent("w1", now.Add(-20*time.Minute), 0)), "--drain-delay="+delay))}},
			lockfixture.Step{At: now})
	}
	if bs := holder("30m").NodeBlockers("w1"); len(bs) > 0 {
		t.Errorf("within kured's --drain-delay 30m + --drain-bound 10m: %+v", bs)
	}
	bs := holder("5m").NodeBlockers("w1")
	if len(bs) == 0 || bs[0].Kind != model.BlockerDrain || !bs[0].Stalls {
		t.Fatalf("past kured's --drain-delay 5m + --drain-bound 10m: %+v", bs)
	}
	found := false
	for _, e := range bs[0].Evidence {
		found = found || (e.Key == "bound" && e.Value == "15m (kured's --drain-delay + --drain-bound)")
	}
	if !found {
		t.Errorf("evidence %+v lacks the bound 15m (kured's --drain-delay + --drain-bound)", bs[0].Evidence)
	}
}
