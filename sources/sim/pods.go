package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The kured scenario's pods and its second act (issue 15: "why is it
// stuck?"). Nothing of the second act happens before HandReleaseAfter.
//
//   - The orphan (worker-1) is kured's commonest wedge (issue 27): after its
//     reboot its kured pod crash-loops (CrashLoopBackOff), so nobody
//     uncordons it or releases the lock.
//   - At HandReleaseAfter, if nobody has released worker-1's orphaned lock,
//     an on-call engineer deletes kured's annotation by hand (kubectl
//     annotate ds kured weave.works/kured-node-lock-), uncordons worker-1 and
//     fixes its kured pod.
//   - worker-2 takes the lock and is drained. Its web pod is evicted (its
//     PodDisruptionBudget allows one disruption), but shop/postgres-1 is
//     not: the budget shop/postgres asks for minAvailable 2 of a 2-replica
//     StatefulSet, so it allows 0 disruptions and the drain waits.
//   - PDBStuckFor after the cordon, a DBA adds a third replica on
//     worker-4; the budget allows one disruption, postgres-1 is evicted
//     (recreated on worker-1) and worker-2 reboots.
//   - kured's reboot window (from its DaemonSet's args: 22:00–04:10
//     Europe/Berlin when time zero is 02:00 UTC) has closed meanwhile,
//     70 minutes in: worker-3 and worker-4 wait for it to open again the
//     next day.
//
// The pods are plain objects in the fake clientset: kured's own DaemonSet
// pod on every node, the postgres StatefulSet's two pods and the web
// Deployment's two. Names are fixed (no random draw), so the seed's story
// is unchanged.

// Timing of the second act.
const (
	// HandReleaseAfter is when the orphaned kured lock is removed by hand.
	HandReleaseAfter = 40 * time.Minute
	// PDBStuckFor is how long the PodDisruptionBudget holds the drain.
	PDBStuckFor = 30 * time.Minute
)

// kured's reboot window in the kured scenario (its DaemonSet's args), in
// WindowTimeZone. The demo starts now (its time zero is the wall clock), so
// the window is laid around time zero: it opened WindowOpenBefore before,
// its last minute is WindowCloseAfter after (it closes at the end of that
// minute), and it opens again the next day. With time zero at 02:00 UTC it
// is 22:00–04:10.
const (
	WindowTimeZone   = "Europe/Berlin"
	WindowOpenBefore = 5 * time.Hour
	WindowCloseAfter = 70 * time.Minute
)

// window is kured's reboot window as minutes of the day in WindowTimeZone,
// every day (kured's default --reboot-days).
type window struct{ start, end int }

// windowFor lays the window around time zero.
func windowFor(zero time.Time) window {
	loc := berlin()
	a := zero.Add(-WindowOpenBefore).In(loc)
	b := zero.Add(WindowCloseAfter).In(loc)
	return window{start: a.Hour()*60 + a.Minute(), end: b.Hour()*60 + b.Minute()}
}

func hhmm(m int) string { return fmt.Sprintf("%02d:%02d", m/60, m%60) }

// contains reports whether kured may reboot at t, as kured's timewindow
// judges it: from the start minute to the end of the end minute, wrapping
// midnight when the start is after the end.
func (w window) contains(t time.Time) bool {
	lt := t.In(berlin())
	m := lt.Hour()*60 + lt.Minute()
	if w.start <= w.end {
		return m >= w.start && m <= w.end
	}
	return m >= w.start || m <= w.end
}

// ShopNamespace holds the demo's workloads.
const ShopNamespace = "shop"

// simPod is one pod of the scenario.
type simPod struct {
	ns, name, node string
	app            string
	ownerKind      string
	ownerName      string
	created        time.Time // zero: before the scenario
	// started is when its container last started (zero: created);
	// crashing, when set, is when it last crashed: it then waits in
	// CrashLoopBackOff.
	started, crashing time.Time
	restarts          int32
}

// simPDB is one PodDisruptionBudget: minAvailable or maxUnavailable (>= 0;
// -1 unset) over the pods with its app label.
type simPDB struct {
	name                         string
	app                          string
	minAvailable, maxUnavailable int
}

// kuredArgs are kured's container args in the kured scenario.
func (w window) kuredArgs() []string {
	return []string{"--period=1m", "--start-time=" + hhmm(w.start), "--end-time=" + hhmm(w.end), "--time-zone=" + WindowTimeZone}
}

// kuredPodSpec is kured's DaemonSet pod template in the kured scenario.
func (w window) kuredPodSpec() corev1.PodSpec {
	return corev1.PodSpec{Containers: []corev1.Container{{Name: "kured", Image: "ghcr.io/kubereboot/kured:1.17.1",
		Command: []string{"/usr/bin/kured"}, Args: w.kuredArgs()}}}
}

// berlin is the window's time zone; without the tz database (a minimal
// image) November's fixed offset stands in.
func berlin() *time.Location {
	if l, err := time.LoadLocation(WindowTimeZone); err == nil {
		return l
	}
	return time.FixedZone("CET", 3600)
}

// seedWorkloads creates kured's pods, the shop's pods and their budgets.
func (s *Sim) seedWorkloads(ctx context.Context) error {
	s.pdbs = []*simPDB{
		{name: "postgres", app: "postgres", minAvailable: 2, maxUnavailable: -1},
		{name: "web", app: "web", minAvailable: -1, maxUnavailable: 1},
	}
	var names []string
	for _, n := range s.nodes {
		names = append(names, n.name)
	}
	sort.Strings(names)
	for i, name := range names {
		s.addPod(&simPod{ns: KuredNamespace, name: fmt.Sprintf("kured-%c%c%c%c%c", 'a'+i, 'k'+i, 'q'+i, 'd'+i, 'm'+i),
			node: name, app: "kured", ownerKind: "DaemonSet", ownerName: KuredName})
	}
	s.addPod(&simPod{ns: ShopNamespace, name: "postgres-0", node: "worker-3", app: "postgres", ownerKind: "StatefulSet", ownerName: "postgres"})
	s.addPod(&simPod{ns: ShopNamespace, name: "postgres-1", node: "worker-2", app: "postgres", ownerKind: "StatefulSet", ownerName: "postgres"})
	s.addPod(&simPod{ns: ShopNamespace, name: "web-7d4b9c8f6-2xkqp", node: "worker-2", app: "web", ownerKind: "ReplicaSet", ownerName: "web-7d4b9c8f6"})
	s.addPod(&simPod{ns: ShopNamespace, name: "web-7d4b9c8f6-9hz4m", node: "worker-4", app: "web", ownerKind: "ReplicaSet", ownerName: "web-7d4b9c8f6"})
	for _, p := range s.podList() {
		if _, err := s.Client.CoreV1().Pods(p.ns).Create(ctx, s.apiPod(p), metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	for _, b := range s.pdbs {
		if _, err := s.Client.PolicyV1().PodDisruptionBudgets(ShopNamespace).Create(ctx, s.apiPDB(b), metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	return nil
}

func (s *Sim) addPod(p *simPod) {
	if s.pods == nil {
		s.pods = map[string]*simPod{}
	}
	s.pods[p.ns+"/"+p.name] = p
}

func (s *Sim) podList() []*simPod {
	keys := make([]string, 0, len(s.pods))
	for k := range s.pods {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]*simPod, 0, len(keys))
	for _, k := range keys {
		out = append(out, s.pods[k])
	}
	return out
}

func (s *Sim) nodeByName(name string) *node {
	for _, n := range s.nodes {
		if n.name == name {
			return n
		}
	}
	return nil
}

// healthy reports whether a pod counts as healthy for a budget: its node is Ready.
func (s *Sim) healthy(p *simPod) bool {
	n := s.nodeByName(p.node)
	return n != nil && n.ready
}

// budget returns a PDB's status numbers from the pods.
func (s *Sim) budget(b *simPDB) (current, desired, expected, allowed int) {
	for _, p := range s.pods {
		if p.app != b.app || p.ns != ShopNamespace {
			continue
		}
		expected++
		if s.healthy(p) {
			current++
		}
	}
	if b.minAvailable >= 0 {
		desired = b.minAvailable
	} else {
		desired = max(expected-b.maxUnavailable, 0)
	}
	return current, desired, expected, max(current-desired, 0)
}

func (s *Sim) apiPod(p *simPod) *corev1.Pod {
	yes := true
	created := p.created
	if created.IsZero() {
		created = s.cfg.Start.Add(-20 * 24 * time.Hour)
	}
	ready := corev1.ConditionTrue
	if !s.healthy(p) {
		ready = corev1.ConditionFalse
	}
	started := p.started
	if started.IsZero() {
		started = created
	}
	cs := corev1.ContainerStatus{Name: p.app, Image: "registry.example/" + p.app + ":1", RestartCount: p.restarts, Ready: ready == corev1.ConditionTrue,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(started)}}}
	if !p.crashing.IsZero() {
		ready, cs.Ready = corev1.ConditionFalse, false
		cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff",
			Message: "back-off 5m0s restarting failed container=kured"}}
		cs.LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error",
			StartedAt: metav1.NewTime(p.crashing.Add(-time.Second)), FinishedAt: metav1.NewTime(p.crashing)}}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: p.ns, Name: p.name, Labels: map[string]string{"app": p.app},
			CreationTimestamp: metav1.NewTime(created),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: p.ownerKind, Name: p.ownerName,
				UID: "owner-uid", Controller: &yes}}},
		Spec: corev1.PodSpec{NodeName: p.node, Containers: []corev1.Container{{Name: p.app, Image: "registry.example/" + p.app + ":1"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: ready}}, ContainerStatuses: []corev1.ContainerStatus{cs}},
	}
}

// restartPodsOf restarts n's containers after its reboot; the orphan's
// kured crash-loops from then on.
func (s *Sim) restartPodsOf(n *node) {
	for _, p := range s.pods {
		if p.node != n.name {
			continue
		}
		p.started = s.now
		p.restarts++
		if n.orphan && p.ownerKind == "DaemonSet" && p.ownerName == KuredName {
			p.crashing = s.now.Add(2 * time.Second)
			p.restarts += 3
		}
	}
}

func (s *Sim) apiPDB(b *simPDB) *policyv1.PodDisruptionBudget {
	current, desired, expected, allowed := s.budget(b)
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: ShopNamespace, Name: b.name, Generation: 1,
			CreationTimestamp: metav1.NewTime(s.cfg.Start.Add(-90 * 24 * time.Hour))},
		Spec: policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": b.app}}},
		Status: policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 1, CurrentHealthy: int32(current),
			DesiredHealthy: int32(desired), ExpectedPods: int32(expected), DisruptionsAllowed: int32(allowed)},
	}
	if b.minAvailable >= 0 {
		v := intstr.FromInt(b.minAvailable)
		pdb.Spec.MinAvailable = &v
	} else {
		v := intstr.FromInt(b.maxUnavailable)
		pdb.Spec.MaxUnavailable = &v
	}
	cond := metav1.Condition{Type: policyv1.DisruptionAllowedCondition, Status: metav1.ConditionTrue,
		Reason: policyv1.SufficientPodsReason, ObservedGeneration: 1}
	if allowed == 0 {
		cond.Status, cond.Reason = metav1.ConditionFalse, policyv1.InsufficientPodsReason
	}
	pdb.Status.Conditions = []metav1.Condition{cond}
	return pdb
}

// writeBudgets writes every budget's status, as the disruption controller would.
func (s *Sim) writeBudgets(ctx context.Context) error {
	for _, b := range s.pdbs {
		if _, err := s.Client.PolicyV1().PodDisruptionBudgets(ShopNamespace).UpdateStatus(ctx, s.apiPDB(b), metav1.UpdateOptions{}); err != nil {
			return err
		}
	}
	return nil
}

// drain evicts n's pods as kured's drain does (DaemonSet pods stay), each
// only when every budget covering it allows a disruption. It reports whether
// a pod is left that no budget lets go: the drain waits.
func (s *Sim) drain(ctx context.Context, n *node) (blocked bool, err error) {
	for _, p := range s.podList() {
		if p.node != n.name || p.ownerKind == "DaemonSet" {
			continue
		}
		ok := true
		for _, b := range s.pdbs {
			if b.app == p.app {
				if _, _, _, allowed := s.budget(b); allowed == 0 {
					ok = false
				}
			}
		}
		if !ok {
			blocked = true
			continue
		}
		if err := s.evict(ctx, p, n.name); err != nil {
			return false, err
		}
	}
	return blocked, nil
}

// evict deletes a pod and recreates it (its controller would) on the first
// other Ready, schedulable worker by name.
func (s *Sim) evict(ctx context.Context, p *simPod, from string) error {
	if err := s.Client.CoreV1().Pods(p.ns).Delete(ctx, p.name, metav1.DeleteOptions{}); err != nil {
		return err
	}
	delete(s.pods, p.ns+"/"+p.name)
	if err := s.writeBudgets(ctx); err != nil {
		return err
	}
	var to string
	for _, name := range []string{"worker-1", "worker-2", "worker-3", "worker-4"} {
		if c := s.nodeByName(name); c != nil && name != from && c.ready && !c.cordoned {
			to = name
			break
		}
	}
	if to == "" {
		return nil // stays Pending nowhere: not modelled
	}
	np := *p
	np.node, np.created = to, s.now
	s.addPod(&np)
	if _, err := s.Client.CoreV1().Pods(np.ns).Create(ctx, s.apiPod(&np), metav1.CreateOptions{}); err != nil {
		return err
	}
	return s.writeBudgets(ctx)
}

// unblock is the DBA's fix: a third postgres replica on worker-4; the
// budget then lets postgres-1 go, the drain ends and the node reboots.
func (s *Sim) unblock(ctx context.Context, n *node) error {
	n.unblockAt = time.Time{}
	third := &simPod{ns: ShopNamespace, name: "postgres-2", node: "worker-4", app: "postgres", ownerKind: "StatefulSet",
		ownerName: "postgres", created: s.now}
	s.addPod(third)
	if _, err := s.Client.CoreV1().Pods(ShopNamespace).Create(ctx, s.apiPod(third), metav1.CreateOptions{}); err != nil {
		return err
	}
	if err := s.writeBudgets(ctx); err != nil {
		return err
	}
	blocked, err := s.drain(ctx, n)
	if err != nil || blocked {
		return err
	}
	// The cycle resumes from now, with the same step lengths as taken.
	shift := s.now.Add(20 * time.Second).Sub(n.downAt)
	if shift > 0 {
		n.downAt = n.downAt.Add(shift)
		n.upAt = n.upAt.Add(shift)
		n.uncordonAt = n.uncordonAt.Add(shift)
		n.releaseAt = n.releaseAt.Add(shift)
		n.rebuildAt = n.rebuildAt.Add(shift)
	}
	return nil
}

// writePodsOf rewrites the Ready condition of n's pods (the node went down
// or came back).
func (s *Sim) writePodsOf(ctx context.Context, n *node) error {
	if s.pods == nil {
		return nil
	}
	for _, p := range s.podList() {
		if p.node != n.name {
			continue
		}
		if _, err := s.Client.CoreV1().Pods(p.ns).UpdateStatus(ctx, s.apiPod(p), metav1.UpdateOptions{}); err != nil {
			return err
		}
	}
	return s.writeBudgets(ctx)
}

// handRelease removes the orphan's kured lock by hand, if it is still
// there, uncordons the orphan (kured never came back to) and fixes its kured
// pod.
func (s *Sim) handRelease(ctx context.Context) error {
	s.handReleaseAt = time.Time{}
	orphan := s.OrphanNode()
	if orphan == "" {
		return nil
	}
	ds, err := s.Client.AppsV1().DaemonSets(KuredNamespace).Get(ctx, KuredName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	var l kuredLock
	if json.Unmarshal([]byte(ds.Annotations[KuredLockKey]), &l) != nil || l.NodeID != orphan {
		return s.fixOrphan(ctx)
	}
	delete(ds.Annotations, KuredLockKey)
	if _, err := s.Client.AppsV1().DaemonSets(KuredNamespace).Update(ctx, ds, metav1.UpdateOptions{}); err != nil {
		return err
	}
	return s.fixOrphan(ctx)
}

// fixOrphan is the rest of the engineer's fix: the orphan uncordoned (if
// still cordoned) and its kured pod running again.
func (s *Sim) fixOrphan(ctx context.Context) error {
	n := s.nodeByName(s.OrphanNode())
	if n == nil {
		return nil
	}
	if n.st == stUp {
		n.st = stDone
	}
	if n.cordoned {
		// Read the node as it is: an operator's release may have
		// uncordoned it already.
		cur, err := s.Client.CoreV1().Nodes().Get(ctx, n.name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		n.cordoned = false
		if cur.Spec.Unschedulable {
			if err := s.writeNode(ctx, n); err != nil {
				return err
			}
		}
	}
	for _, p := range s.podList() {
		if p.node == n.name && !p.crashing.IsZero() {
			p.crashing, p.started = time.Time{}, s.now
			p.restarts++
			if _, err := s.Client.CoreV1().Pods(p.ns).UpdateStatus(ctx, s.apiPod(p), metav1.UpdateOptions{}); err != nil {
				return err
			}
		}
	}
	return nil
}
