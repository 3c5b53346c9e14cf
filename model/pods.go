package model

import (
	"sort"
	"strconv"
	"strings"
	"time"
)

// The inputs of the blockers that come from pods and PodDisruptionBudgets
// (issue 15): why a drain cannot finish, and which of kured's blocking pods
// stop a reboot. Sources fill them (sources/kube: PDBs cluster-wide, pods
// only on cordoned nodes, and pods matching kured's --blocking-pod-selector);
// the blockers engine reads them through the accessors below.

// LabelSelector is a Kubernetes label selector (metav1.LabelSelector) as
// plain values: every MatchLabels pair and every requirement must hold.
type LabelSelector struct {
	MatchLabels      map[string]string
	MatchExpressions []LabelRequirement
}

// LabelRequirement is one matchExpressions entry.
type LabelRequirement struct {
	Key string
	// Operator is In, NotIn, Exists or DoesNotExist; any other value
	// matches nothing.
	Operator string
	Values   []string
}

// Matches reports whether labels satisfy the selector, with
// metav1.LabelSelectorAsSelector's semantics: a nil selector matches
// nothing, an empty one everything, NotIn and DoesNotExist hold when the key
// is absent, and an unknown operator matches nothing.
func (s *LabelSelector) Matches(labels map[string]string) bool {
	if s == nil {
		return false
	}
	for k, v := range s.MatchLabels {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	for _, r := range s.MatchExpressions {
		v, has := labels[r.Key]
		switch r.Operator {
		case "In":
			if !has || !contains(r.Values, v) {
				return false
			}
		case "NotIn":
			if has && contains(r.Values, v) {
				return false
			}
		case "Exists":
			if !has {
				return false
			}
		case "DoesNotExist":
			if has {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// String renders the selector as kubectl writes one ("app=web,tier in
// (a,b),!canary"); "<none>" for nil and "" (everything) for empty.
func (s *LabelSelector) String() string {
	if s == nil {
		return "<none>"
	}
	var parts []string
	for _, k := range sortedKeys(s.MatchLabels) {
		parts = append(parts, k+"="+s.MatchLabels[k])
	}
	for _, r := range s.MatchExpressions {
		switch r.Operator {
		case "In", "NotIn":
			parts = append(parts, r.Key+" "+strings.ToLower(r.Operator)+" ("+strings.Join(r.Values, ",")+")")
		case "Exists":
			parts = append(parts, r.Key)
		case "DoesNotExist":
			parts = append(parts, "!"+r.Key)
		default:
			parts = append(parts, r.Key+" "+r.Operator+" ("+strings.Join(r.Values, ",")+")")
		}
	}
	return strings.Join(parts, ",")
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// PDB is the part of a policy/v1 PodDisruptionBudget the blockers need.
type PDB struct {
	Namespace string
	Name      string
	// Selector picks the pods the budget covers, in its own namespace. nil
	// covers no pod (policy/v1: a null selector matches nothing, an empty
	// one every pod of the namespace).
	Selector *LabelSelector
	// MinAvailable and MaxUnavailable are the spec as written ("2", "50%"),
	// "" when unset.
	MinAvailable, MaxUnavailable string
	// The disruption controller's status numbers.
	CurrentHealthy     int
	DesiredHealthy     int
	ExpectedPods       int
	DisruptionsAllowed int
	// Observed is false when the status is older than the spec
	// (status.observedGeneration < metadata.generation): the numbers may
	// not apply any more.
	Observed bool
	// UnhealthyPodEvictionPolicy is spec.unhealthyPodEvictionPolicy:
	// "IfHealthyBudget" (also when unset, "") or "AlwaysAllow" (pods that
	// are not Ready can be evicted whatever the budget says).
	UnhealthyPodEvictionPolicy string
	// BlockedReason and BlockedMessage are the DisruptionAllowed condition's
	// reason and message when it is False ("InsufficientPods", "SyncFailed").
	BlockedReason, BlockedMessage string
}

// Key returns namespace/name.
func (p *PDB) Key() string { return p.Namespace + "/" + p.Name }

// Covers reports whether the budget covers the pod: same namespace and the
// selector matches its labels.
func (p *PDB) Covers(pod *Pod) bool {
	return p.Namespace == pod.Namespace && p.Selector.Matches(pod.Labels)
}

// Refuses says whether the budget refuses to evict the pod now, as the
// eviction API decides: no disruption allowed, unless the pod is not Ready
// and the budget lets such pods go (unhealthyPodEvictionPolicy AlwaysAllow,
// or IfHealthyBudget with the budget healthy). Every drain blocker asks it.
func (p *PDB) Refuses(pod *Pod) bool {
	if p.DisruptionsAllowed > 0 {
		return false
	}
	if !pod.Ready && pod.Phase == PodRunning {
		if p.UnhealthyPodEvictionPolicy == "AlwaysAllow" {
			return false
		}
		if p.DesiredHealthy > 0 && p.CurrentHealthy >= p.DesiredHealthy {
			return false
		}
	}
	return true
}

// Pod phases (status.phase).
const (
	PodPending   = "Pending"
	PodRunning   = "Running"
	PodSucceeded = "Succeeded"
	PodFailed    = "Failed"
	PodUnknown   = "Unknown"
)

// Pod is the part of a Pod the blockers need.
type Pod struct {
	Namespace string
	Name      string
	// Node is spec.nodeName.
	Node string
	// Phase is status.phase (PodPending, PodRunning, ...).
	Phase string
	// Ready is the pod's Ready condition.
	Ready bool
	// Labels are the pod's labels (for PDB selectors).
	Labels map[string]string
	// OwnerKind and OwnerName are the controlling owner reference
	// ("DaemonSet", "ReplicaSet", "StatefulSet", "Job", ...); "" when none.
	OwnerKind, OwnerName string
	// Mirror is true for the mirror of a static pod
	// (kubernetes.io/config.mirror): drains skip it.
	Mirror bool
	// Deleting is when the pod's deletion was asked
	// (metadata.deletionTimestamp); zero when it is not terminating.
	Deleting time.Time
	// Containers sums up the pod's container statuses: whether its
	// process runs, since when, and how it last failed (what a stalled
	// kured pod shows: CrashLoopBackOff, restarts).
	Containers ContainerState
}

// ContainerState is what the pod's container statuses say, summed up over
// its containers.
type ContainerState struct {
	// Reported is false when the pod carries no container status at all
	// (not scheduled or not yet reported by the kubelet).
	Reported bool
	// Running is true when every container runs; StartedAt is then the
	// latest start among them (the current run of a restarted container).
	Running   bool
	StartedAt time.Time
	// Waiting is a waiting container's reason (CrashLoopBackOff,
	// ImagePullBackOff, ContainerCreating), "" when none waits.
	Waiting string
	// Restarts is the sum of the containers' restart counts.
	Restarts int
	// LastExit is when the latest terminated run ended (lastState or
	// state terminated), zero when none did; LastExitReason is its reason
	// and exit code ("Error, exit code 1").
	LastExit       time.Time
	LastExitReason string
}

// Describe says how the pod runs in a few words, for evidence: its phase,
// whether it is Ready, a waiting reason, its restarts and its last exit.
func (p *Pod) Describe() string {
	parts := []string{p.Phase}
	if p.Phase == "" {
		parts[0] = "phase unknown"
	}
	c := p.Containers
	switch {
	case c.Waiting != "":
		parts = append(parts, c.Waiting)
	case c.Running && !c.StartedAt.IsZero():
		parts = append(parts, "running since "+c.StartedAt.UTC().Format(time.RFC3339))
	}
	if p.Ready {
		parts = append(parts, "Ready")
	} else {
		parts = append(parts, "not Ready")
	}
	if c.Restarts > 0 {
		r := "1 restart"
		if c.Restarts > 1 {
			r = strconv.Itoa(c.Restarts) + " restarts"
		}
		parts = append(parts, r)
	}
	if !c.LastExit.IsZero() {
		last := "last exit " + c.LastExit.UTC().Format(time.RFC3339)
		if c.LastExitReason != "" {
			last += " (" + c.LastExitReason + ")"
		}
		parts = append(parts, last)
	}
	return strings.Join(parts, ", ")
}

// Key returns namespace/name.
func (p *Pod) Key() string { return p.Namespace + "/" + p.Name }

// Terminal reports whether the pod has finished (Succeeded or Failed).
func (p *Pod) Terminal() bool { return p.Phase == PodSucceeded || p.Phase == PodFailed }

// DrainSkips reports whether a drain as kured runs it (kubectl drain with
// --ignore-daemonsets) leaves the pod on the node instead of evicting it:
// DaemonSet pods and static pods' mirrors.
func (p *Pod) DrainSkips() bool { return p.OwnerKind == "DaemonSet" || p.Mirror }

// KuredBlockingPhase reports whether kured's blocking-pod check counts a
// pod in this phase: kured lists the node's pods with
// status.phase!=Succeeded,status.phase!=Failed,status.phase!=Unknown.
func (p *Pod) KuredBlockingPhase() bool {
	return p.Phase != PodSucceeded && p.Phase != PodFailed && p.Phase != PodUnknown
}

// BlockingPod is a pod that matches kured's --blocking-pod-selector.
type BlockingPod struct {
	Pod
	// Selectors are kured's selectors it matches.
	Selectors []string
}

// PDBUpserted adds or replaces a PodDisruptionBudget.
type PDBUpserted struct{ PDB PDB }

// PDBDeleted removes a PodDisruptionBudget.
type PDBDeleted struct{ Namespace, Name string }

// NodePodsSet replaces the pods known on one node. The source watches a
// node's pods only while the node is cordoned (draining, rebooting, still
// cordoned) and sends the whole list once that watch has synced and on every
// change. Watched false means it stopped watching the node: its pods are
// forgotten and unknown again.
type NodePodsSet struct {
	Node    string
	Pods    []Pod
	Watched bool
}

// BlockingSelectorsSet names kured's --blocking-pod-selector values in
// force (from its DaemonSet). Pods of other selectors are forgotten; a
// selector listed here but not yet answered by a BlockingPodsSet is unread.
// Empty: kured blocks on no pod.
type BlockingSelectorsSet struct{ Selectors []string }

// BlockingPodsSet replaces the pods matching one of kured's blocking pod
// selectors, cluster-wide, in every phase kured counts (pods in other phases
// may be included: the accessors filter). Err non-empty says the selector
// could not be read (forbidden, or invalid — kured then blocks every
// reboot): Pods is then ignored.
type BlockingPodsSet struct {
	Selector string
	Pods     []Pod
	Err      string
}

func (PDBUpserted) isEvent()          {}
func (PDBDeleted) isEvent()           {}
func (NodePodsSet) isEvent()          {}
func (BlockingSelectorsSet) isEvent() {}
func (BlockingPodsSet) isEvent()      {}

// podState is the cluster's pod and PDB inputs.
type podState struct {
	pdbs      map[string]*PDB // namespace/name
	pdbByNS   map[string][]*PDB
	pdbsDirty bool
	nodePods  map[string][]Pod // node -> pods, for watched nodes that synced
	selectors []string
	blocking  map[string]blockingRead // selector -> last read
}

type blockingRead struct {
	pods []Pod
	err  string
}

func (c *Cluster) applyPods(ev Event) {
	s := &c.pods
	switch e := ev.(type) {
	case PDBUpserted:
		if s.pdbs == nil {
			s.pdbs = map[string]*PDB{}
		}
		p := e.PDB
		s.pdbs[p.Key()] = &p
		s.pdbsDirty = true
	case PDBDeleted:
		delete(s.pdbs, e.Namespace+"/"+e.Name)
		s.pdbsDirty = true
	case NodePodsSet:
		if !e.Watched {
			delete(s.nodePods, e.Node)
			break
		}
		if s.nodePods == nil {
			s.nodePods = map[string][]Pod{}
		}
		pods := append([]Pod(nil), e.Pods...)
		sort.Slice(pods, func(i, j int) bool { return pods[i].Key() < pods[j].Key() })
		s.nodePods[e.Node] = pods
	case BlockingSelectorsSet:
		s.selectors = append([]string(nil), e.Selectors...)
		keep := map[string]blockingRead{}
		for _, sel := range s.selectors {
			if r, ok := s.blocking[sel]; ok {
				keep[sel] = r
			}
		}
		s.blocking = keep
	case BlockingPodsSet:
		if !contains(s.selectors, e.Selector) {
			break // a selector no longer in force
		}
		if s.blocking == nil {
			s.blocking = map[string]blockingRead{}
		}
		r := blockingRead{err: e.Err}
		if e.Err == "" {
			r.pods = append([]Pod(nil), e.Pods...)
		}
		s.blocking[e.Selector] = r
	}
}

// PDBs returns every PodDisruptionBudget, sorted by namespace/name.
func (c *Cluster) PDBs() []*PDB {
	out := make([]*PDB, 0, len(c.pods.pdbs))
	for _, k := range sortedKeys(c.pods.pdbs) {
		out = append(out, c.pods.pdbs[k])
	}
	return out
}

// PDBsCovering returns the budgets that cover a pod, sorted by name.
func (c *Cluster) PDBsCovering(p *Pod) []*PDB {
	s := &c.pods
	if s.pdbsDirty || s.pdbByNS == nil {
		s.pdbByNS = map[string][]*PDB{}
		for _, k := range sortedKeys(s.pdbs) {
			b := s.pdbs[k]
			s.pdbByNS[b.Namespace] = append(s.pdbByNS[b.Namespace], b)
		}
		s.pdbsDirty = false
	}
	var out []*PDB
	for _, b := range s.pdbByNS[p.Namespace] {
		if b.Covers(p) {
			out = append(out, b)
		}
	}
	return out
}

// NodePods returns the pods on a node, sorted by namespace/name, and
// whether they are known: only a node whose pods the source watches (a
// cordoned node) and whose watch has synced has a known list. The slice is
// shared: never write through it.
func (c *Cluster) NodePods(node string) ([]Pod, bool) {
	pods, ok := c.pods.nodePods[node]
	return pods, ok
}

// BlockingSelectors returns kured's --blocking-pod-selector values in force
// (nil: none, kured blocks on no pod).
func (c *Cluster) BlockingSelectors() []string { return c.pods.selectors }

// BlockingPodsOn returns the pods on node that kured's blocking-pod check
// counts (a selector matches, the phase is neither Succeeded, Failed nor
// Unknown), sorted by namespace/name, and the selectors whose pods could not
// be read, with why ("not read yet", forbidden, invalid). A non-empty unread
// means the answer is incomplete: kured itself blocks every reboot on a
// selector it cannot list.
func (c *Cluster) BlockingPodsOn(node string) (pods []BlockingPod, unread map[string]string) {
	s := &c.pods
	idx := map[string]int{}
	for _, sel := range s.selectors {
		r, ok := s.blocking[sel]
		switch {
		case !ok:
			if unread == nil {
				unread = map[string]string{}
			}
			unread[sel] = "not read yet"
			continue
		case r.err != "":
			if unread == nil {
				unread = map[string]string{}
			}
			unread[sel] = r.err
			continue
		}
		for _, p := range r.pods {
			if p.Node != node || !p.KuredBlockingPhase() {
				continue
			}
			if i, ok := idx[p.Key()]; ok {
				pods[i].Selectors = append(pods[i].Selectors, sel)
				continue
			}
			idx[p.Key()] = len(pods)
			pods = append(pods, BlockingPod{Pod: p, Selectors: []string{sel}})
		}
	}
	sort.Slice(pods, func(i, j int) bool { return pods[i].Key() < pods[j].Key() })
	return pods, unread
}
