package sim

import (
	"context"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"math/rand"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rebootwatch/rebootwatch/internal/coord/kinds"
	"github.com/rebootwatch/rebootwatch/internal/fakekube"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// Names of the objects the scenario plays with.
const (
	KuredNamespace     = "kube-system"
	KuredName          = "kured"
	FleetlockNamespace = "default"
	FleetlockLease     = "fleetlock-default"
	LonghornNamespace  = "longhorn-system"
	KuredLockKey       = "weave.works/kured-node-lock"
)

// VolumeGVR is the Longhorn volume resource.
var VolumeGVR = schema.GroupVersionResource{Group: "longhorn.io", Version: "v1beta2", Resource: "volumes"}

// The OS the fleet upgrades from and to.
const (
	OldImage  = "Ubuntu 24.04.2 LTS"
	OldKernel = "6.8.0-57-generic"
	NewImage  = "Ubuntu 24.04.3 LTS"
	NewKernel = "6.8.0-60-generic"
)

// Config shapes the scenario.
type Config struct {
	Seed int64
	// Start is the scenario's time zero.
	Start         time.Time
	ControlPlanes int // default 3
	Workers       int // default 4
	Volumes       int // default 12
	// KuredPeriod is how often kured tries to take the lock (default 1m).
	KuredPeriod time.Duration
	// OrphanIndex is the position in the reboot order of the node that never
	// releases (default 2: the first worker); negative disables it.
	OrphanIndex int
	// Scenario is ScenarioFleetlock (Fedora CoreOS nodes behind
	// poseidon/fleetlock: a ghost Lease and an orphaned, still-cordoned
	// holder) or ScenarioKured ("" is kured: kured's lock with an orphan
	// and a ghost fleetlock Lease beside it).
	Scenario string
	// GhostHolder, when set, is the ghost Lease's holder id instead of a
	// random Zincati id: hostile text for the end-to-end script
	// (REBOOTWATCH_DEMO_GHOST_HOLDER) and tests.
	GhostHolder string
}

func (c *Config) defaults() {
	if c.ControlPlanes == 0 {
		c.ControlPlanes = 3
	}
	if c.Workers == 0 {
		c.Workers = 4
	}
	if c.Volumes == 0 {
		c.Volumes = 12
	}
	if c.KuredPeriod == 0 {
		c.KuredPeriod = time.Minute
	}
	if c.OrphanIndex == 0 {
		c.OrphanIndex = 2
	}
	if c.Start.IsZero() {
		c.Start = time.Date(2026, 11, 29, 2, 0, 0, 0, time.UTC)
	}
}

type step int

const (
	stIdle step = iota
	stHolding
	stCordoned
	stDown
	stUp
	stUncordoned
	stDone
)

type node struct {
	name, role        string
	machineID, bootID string
	image, kernel     string
	created           time.Time
	needsReboot       bool
	orphan            bool
	ready             bool
	readySince        time.Time
	cordoned          bool
	st                step
	// times of the next steps of the current cycle
	cordonAt, downAt, upAt, uncordonAt, releaseAt time.Time
	rebuildAt                                     time.Time
	// unblockAt is set while a PodDisruptionBudget holds the node's drain:
	// when the budget lets the last pod go (pods.go).
	unblockAt time.Time
}

type volume struct {
	name     string
	replicas []string // nodes holding a replica
	missing  map[string]time.Time
	attached string
}

// Sim is the demo cluster.
type Sim struct {
	cfg     Config
	Client  *fake.Clientset
	Dynamic *dynfake.FakeDynamicClient

	mu       sync.Mutex
	rng      *rand.Rand
	nodes    []*node // in reboot order
	volumes  []*volume
	now      time.Time
	nextTry  time.Time
	rv       atomic.Int64
	lockedAt time.Time
	fleet    map[string]*fleetState // fleetlock scenario only
	coord    *coordDemo             // a coordinator kind's scenario only (coord.go)
	// The kured scenario's second act (pods.go).
	pods          map[string]*simPod // namespace/name
	pdbs          []*simPDB
	handReleaseAt time.Time
	window        window // kured's reboot window
}

// New builds the demo cluster at cfg.Start.
func New(cfg Config) (*Sim, error) {
	cfg.defaults()
	s := &Sim{cfg: cfg, rng: rand.New(rand.NewSource(cfg.Seed)), now: cfg.Start, window: windowFor(cfg.Start)}
	s.Client = fake.NewSimpleClientset()
	scheme := runtime.NewScheme()
	// Every coordinator kind's resources can be listed in every scenario
	// (none is there unless the scenario writes it).
	listKinds := map[schema.GroupVersionResource]string{VolumeGVR: "VolumeList"}
	for _, d := range kinds.Demos(cfg.Start) {
		for gvr, k := range d.ListKinds {
			listKinds[gvr] = k
		}
	}
	s.Dynamic = dynfake.NewSimpleDynamicClientWithCustomListKinds(scheme, listKinds)
	s.Client.PrependReactor("*", "*", s.versioned(s.Client.Tracker()))
	fakekube.GenerateNames(&s.Client.Fake) // the actions' Events
	s.Dynamic.PrependReactor("*", "*", s.versioned(s.Dynamic.Tracker()))
	seed := s.seed
	switch cfg.Scenario {
	case "", ScenarioKured:
	case ScenarioFleetlock:
		seed = s.seedFleetlock
	default:
		d, ok := coordDemoFor(cfg.Scenario, cfg.Start)
		if !ok {
			return nil, fmt.Errorf("unknown demo scenario %q (want one of %s)", cfg.Scenario, strings.Join(ScenarioNames(), ", "))
		}
		seed = s.seedCoord(d)
	}
	if err := seed(); err != nil {
		return nil, err
	}
	return s, nil
}

// versioned makes the fake clientset behave like the API server for
// optimistic concurrency: every write gets a new resourceVersion and an
// update carrying a stale one fails with 409 Conflict.
func (s *Sim) versioned(tr k8stesting.ObjectTracker) k8stesting.ReactionFunc {
	return func(action k8stesting.Action) (bool, runtime.Object, error) {
		var obj runtime.Object
		switch a := action.(type) {
		case k8stesting.UpdateAction:
			if a.GetVerb() == "create" {
				obj = a.GetObject()
				break
			}
			obj = a.GetObject()
			m, err := meta.Accessor(obj)
			if err != nil {
				return false, nil, nil
			}
			cur, err := tr.Get(a.GetResource(), a.GetNamespace(), m.GetName())
			if err == nil {
				cm, _ := meta.Accessor(cur)
				if rv := m.GetResourceVersion(); rv != "" && rv != cm.GetResourceVersion() {
					return true, nil, apierrors.NewConflict(a.GetResource().GroupResource(), m.GetName(),
						fmt.Errorf("the object has been modified; please apply your changes to the latest version and try again"))
				}
				if uid := m.GetUID(); uid != "" && uid != cm.GetUID() {
					return true, nil, apierrors.NewConflict(a.GetResource().GroupResource(), m.GetName(),
						fmt.Errorf("precondition failed: UID in object meta: %s, UID in precondition: %s", cm.GetUID(), uid))
				}
				if m.GetUID() == "" {
					m.SetUID(cm.GetUID())
				}
			}
		default:
			return false, nil, nil
		}
		if m, err := meta.Accessor(obj); err == nil {
			m.SetResourceVersion(strconv.FormatInt(s.rv.Add(1), 10))
			if m.GetUID() == "" {
				h := fnv.New64a()
				fmt.Fprintf(h, "%s/%s/%s", action.GetResource(), m.GetNamespace(), m.GetName())
				m.SetUID(types.UID(fmt.Sprintf("%016x-0000-4000-8000-%012d", h.Sum64(), s.cfg.Seed)))
			}
		}
		return false, nil, nil
	}
}

func (s *Sim) hex(n int) string {
	b := make([]byte, n)
	s.rng.Read(b)
	return hex.EncodeToString(b)
}

func (s *Sim) uuid() string {
	h := s.hex(16)
	return h[0:8] + "-" + h[8:12] + "-4" + h[13:16] + "-a" + h[17:20] + "-" + h[20:32]
}

// Nodes returns the node names in reboot order.
func (s *Sim) Nodes() []string {
	out := make([]string, len(s.nodes))
	for i, n := range s.nodes {
		out[i] = n.name
	}
	return out
}

// OrphanNode returns the node that will never release, or "".
func (s *Sim) OrphanNode() string {
	for _, n := range s.nodes {
		if n.orphan {
			return n.name
		}
	}
	return ""
}

func (s *Sim) seed() error {
	ctx := context.Background()
	start := s.cfg.Start
	for i := 0; i < s.cfg.ControlPlanes; i++ {
		s.nodes = append(s.nodes, &node{name: fmt.Sprintf("cp-%d", i+1), role: "control-plane"})
	}
	for i := 0; i < s.cfg.Workers; i++ {
		s.nodes = append(s.nodes, &node{name: fmt.Sprintf("worker-%d", i+1), role: "worker"})
	}
	for _, n := range s.nodes {
		n.machineID = s.hex(16)
		n.bootID = s.uuid()
		n.image, n.kernel = OldImage, OldKernel
		n.created = start.Add(-time.Duration(200+s.rng.Intn(100)) * 24 * time.Hour)
		n.ready = true
		n.readySince = start.Add(-time.Duration(30+s.rng.Intn(20)) * 24 * time.Hour)
		n.needsReboot = true
	}
	// cp-1 was upgraded before the window opened.
	first := s.nodes[0]
	first.image, first.kernel, first.needsReboot, first.st = NewImage, NewKernel, false, stDone
	first.readySince = start.Add(-12 * time.Minute)
	// The rest reboot in order: cp-2 first (it took the lock just before).
	s.nodes = append(s.nodes[1:], first)
	if i := s.cfg.OrphanIndex; i >= 0 && i < len(s.nodes) {
		s.nodes[i].orphan = true
	}
	for _, n := range s.nodes {
		if _, err := s.Client.CoreV1().Nodes().Create(ctx, s.apiNode(n), metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: KuredName, Namespace: KuredNamespace,
		CreationTimestamp: metav1.NewTime(start.Add(-400 * 24 * time.Hour)), Labels: map[string]string{"app.kubernetes.io/name": "kured"}},
		Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{Spec: s.window.kuredPodSpec()}}}
	if _, err := s.Client.AppsV1().DaemonSets(KuredNamespace).Create(ctx, ds, metav1.CreateOptions{}); err != nil {
		return err
	}
	// The ghost: a Zincati id of a machine that was destroyed 47 days ago.
	ghost := s.hex(16)
	if s.cfg.GhostHolder != "" {
		ghost = s.cfg.GhostHolder
	}
	acquired := metav1.NewMicroTime(start.Add(-47*24*time.Hour - 3*time.Hour))
	transitions := int32(12)
	holder := ghost
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: FleetlockLease, Namespace: FleetlockNamespace,
		CreationTimestamp: metav1.NewTime(start.Add(-300 * 24 * time.Hour))},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, AcquireTime: &acquired, RenewTime: &acquired, LeaseTransitions: &transitions}}
	if _, err := s.Client.CoordinationV1().Leases(FleetlockNamespace).Create(ctx, lease, metav1.CreateOptions{}); err != nil {
		return err
	}
	if err := s.seedVolumes(ctx); err != nil {
		return err
	}
	// cp-2 took the lock 20 seconds before time zero and is being cordoned.
	s.take(s.nodes[0], start.Add(-20*time.Second))
	s.nextTry = start.Add(s.cfg.KuredPeriod)
	if err := s.writeLock(ctx, s.nodes[0]); err != nil {
		return err
	}
	// The second act (pods.go): it draws nothing from the random source, so
	// a seed's first act does not depend on it.
	s.handReleaseAt = start.Add(HandReleaseAfter)
	return s.seedWorkloads(ctx)
}

// seedVolumes creates the Longhorn volumes: replicas on three of the
// workers, attached to one of them, all healthy.
func (s *Sim) seedVolumes(ctx context.Context) error {
	var workers []string
	for _, n := range s.nodes {
		if n.role == "worker" {
			workers = append(workers, n.name)
		}
	}
	sort.Strings(workers)
	for i := 0; i < s.cfg.Volumes && len(workers) > 0; i++ {
		v := &volume{name: fmt.Sprintf("pvc-%s", s.hex(4)), missing: map[string]time.Time{}}
		perm := s.rng.Perm(len(workers))
		for j := 0; j < len(perm) && j < 3; j++ {
			v.replicas = append(v.replicas, workers[perm[j]])
		}
		v.attached = v.replicas[0]
		s.volumes = append(s.volumes, v)
		if _, err := s.Dynamic.Resource(VolumeGVR).Namespace(LonghornNamespace).Create(ctx, s.apiVolume(v), metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	return nil
}

func (s *Sim) apiNode(n *node) *corev1.Node {
	status := corev1.ConditionTrue
	reason, msg := "KubeletReady", "kubelet is posting ready status"
	if !n.ready {
		status, reason, msg = corev1.ConditionUnknown, "NodeStatusUnknown", "Kubelet stopped posting node status."
	}
	labels := map[string]string{"kubernetes.io/hostname": n.name, "kubernetes.io/os": "linux"}
	if n.role == "control-plane" {
		labels["node-role.kubernetes.io/control-plane"] = ""
	} else {
		labels["node-role.kubernetes.io/worker"] = ""
	}
	var taints []corev1.Taint
	if n.cordoned {
		taints = append(taints, corev1.Taint{Key: "node.kubernetes.io/unschedulable", Effect: corev1.TaintEffectNoSchedule})
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: n.name, Labels: labels, CreationTimestamp: metav1.NewTime(n.created),
			UID: types.UID("node-" + n.machineID[:12])},
		Spec: corev1.NodeSpec{Unschedulable: n.cordoned, Taints: taints},
		Status: corev1.NodeStatus{
			Conditions: []corev1.NodeCondition{
				{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientMemory", LastTransitionTime: metav1.NewTime(n.created)},
				{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasNoDiskPressure", LastTransitionTime: metav1.NewTime(n.created)},
				{Type: corev1.NodeReady, Status: status, Reason: reason, Message: msg, LastTransitionTime: metav1.NewTime(n.readySince)},
			},
			NodeInfo: corev1.NodeSystemInfo{MachineID: n.machineID, BootID: n.bootID, OSImage: n.image,
				KernelVersion: n.kernel, KubeletVersion: "v1.34.2", ContainerRuntimeVersion: "containerd://2.1.4",
				OperatingSystem: "linux", Architecture: "amd64"},
		},
	}
}

func (s *Sim) apiVolume(v *volume) *unstructured.Unstructured {
	healthy := 0
	for _, r := range v.replicas {
		if _, gone := v.missing[r]; !gone {
			healthy++
		}
	}
	rob := "healthy"
	switch {
	case healthy == 0:
		rob = "faulted"
	case healthy < len(v.replicas):
		rob = "degraded"
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "longhorn.io/v1beta2", "kind": "Volume",
		"metadata": map[string]any{"name": v.name, "namespace": LonghornNamespace},
		"spec":     map[string]any{"numberOfReplicas": int64(len(v.replicas)), "nodeID": v.attached},
		"status":   map[string]any{"state": "attached", "robustness": rob, "currentNodeID": v.attached, "ownerID": v.attached},
	}}
}

// kuredLock is kured's single-lock annotation value.
type kuredLock struct {
	NodeID   string         `json:"nodeID"`
	Metadata map[string]any `json:"metadata"`
	Created  time.Time      `json:"created"`
	TTL      time.Duration  `json:"TTL"`
}

// take schedules n's cycle from t; the lock write happens in flush.
func (s *Sim) take(n *node, t time.Time) {
	n.st = stHolding
	s.lockedAt = t
	jit := func(lo, hi int) time.Duration { return time.Duration(lo+s.rng.Intn(hi-lo+1)) * time.Second }
	n.cordonAt = t.Add(jit(3, 6))
	n.downAt = n.cordonAt.Add(jit(45, 80))
	n.upAt = n.downAt.Add(jit(70, 110))
	n.uncordonAt = n.upAt.Add(jit(8, 15))
	n.releaseAt = n.uncordonAt.Add(jit(3, 6))
	n.rebuildAt = n.upAt.Add(jit(100, 160))
}
