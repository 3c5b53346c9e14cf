package lock

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/rebootwatch/rebootwatch/internal/coord/fleetlock"
	"github.com/rebootwatch/rebootwatch/internal/coord/kured"
	"github.com/rebootwatch/rebootwatch/internal/fakekube"
	"github.com/rebootwatch/rebootwatch/model"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

// Machine ids for fleetlock tests; mid1's Zincati id is the DESIGN vector.
const (
	mid1 = "1c09ca98649c4c7abc779cd04c96812e"
	zid1 = "978a225b3d7b40e9acd7ce9b62f68444"
	mid2 = "2c09ca98649c4c7abc779cd04c96812e"
	mid3 = "3c09ca98649c4c7abc779cd04c96812e"
)

func zid(_ testing.TB, mid string) string {
	id, err := fleetlock.ZincatiNodeID(mid)
	if err != nil {
		panic(err)
	}
	return id
}

type nodeOpt func(*model.Node)

// node returns a Ready, schedulable node, Ready since t0-24h, boot "<name>-b1".
func node(name string, opts ...nodeOpt) model.Node {
	n := model.Node{Name: name, UID: "uid-" + name, BootID: name + "-b1",
		Conditions: []model.Condition{{Type: "Ready", Status: "True", LastTransition: at(-24 * time.Hour)}}}
	for _, o := range opts {
		o(&n)
	}
	return n
}

func readySince(t time.Time) nodeOpt {
	return func(n *model.Node) {
		n.Conditions = []model.Condition{{Type: "Ready", Status: "True", LastTransition: t}}
	}
}
func notReady(t time.Time) nodeOpt {
	return func(n *model.Node) {
		n.Conditions = []model.Condition{{Type: "Ready", Status: "False", LastTransition: t}}
	}
}
func noReady() nodeOpt { return func(n *model.Node) { n.Conditions = nil } }

// schedAt dates the node's spec.unschedulable write in managedFields (an
// uncordon that wrote false explicitly, as a server-side apply does).
func schedAt(t time.Time) nodeOpt {
	return func(n *model.Node) { n.UnschedulableSetAt, n.UnschedulableSetBy = t, "ops-apply" }
}

type podOpt func(*model.Pod)

// kuredPods is the pods source's picture of node: kured's DaemonSet pod
// with opts, or no kured pod at all when there are none.
func kuredPods(node string, opts ...podOpt) model.Event {
	ev := model.Batch{model.SourceChanged{Health: model.SourceHealth{Name: model.SourcePods, Status: model.StatusOK}}}
	pods := []model.Pod{{Namespace: "default", Name: "web-1", Node: node, Phase: model.PodRunning, Ready: true, OwnerKind: "ReplicaSet", OwnerName: "web"}}
	if len(opts) > 0 {
		p := model.Pod{Namespace: kuredRef.Namespace, Name: "kured-x1", Node: node, OwnerKind: "DaemonSet", OwnerName: kuredRef.Name}
		for _, o := range opts {
			o(&p)
		}
		pods = append(pods, p)
	}
	return append(ev, model.NodePodsSet{Node: node, Pods: pods, Watched: true})
}

// crashLooping: kured's container waits in CrashLoopBackOff, its last run
// ended at last.
func crashLooping(last time.Time) podOpt {
	return func(p *model.Pod) {
		p.Phase = model.PodRunning
		p.Containers = model.ContainerState{Reported: true, Waiting: "CrashLoopBackOff", Restarts: 7, LastExit: last, LastExitReason: "Error, exit code 1"}
	}
}

// runningSince: kured's container runs since t, Ready.
func runningSince(t time.Time) podOpt {
	return func(p *model.Pod) {
		p.Phase, p.Ready = model.PodRunning, true
		p.Containers = model.ContainerState{Reported: true, Running: true, StartedAt: t, Restarts: 1}
	}
}
func cordoned() nodeOpt                     { return func(n *model.Node) { n.Unschedulable = true } }
func boot(id string) nodeOpt                { return func(n *model.Node) { n.BootID = id } }
func machine(id string) nodeOpt             { return func(n *model.Node) { n.MachineID = id } }
func up(n model.Node) model.Event           { return model.NodeUpserted{Node: n} }
func gone(name string) model.Event          { return model.NodeDeleted{Name: name} }
func lockEv(l model.LockObject) model.Event { return model.LockUpserted{Lock: l} }

var (
	kuredRef = model.LockRef{Kind: model.LockKured, Namespace: "kube-system", Name: "kured"}
	fleetRef = model.LockRef{Kind: model.LockFleetlock, Namespace: "default", Name: "fleetlock-default"}
)

func kuredLock(annotation string) model.LockObject {
	return model.LockObject{LockRef: kuredRef, UID: "uid-ds", ResourceVersion: "100", Spec: &kured.Spec{Value: annotation, Present: true}}
}
func kuredAbsent() model.LockObject {
	return model.LockObject{LockRef: kuredRef, UID: "uid-ds", ResourceVersion: "100", Spec: &kured.Spec{}}
}
func fleet(holder string) model.LockObject {
	return model.LockObject{LockRef: fleetRef, UID: "uid-lease", ResourceVersion: "200", Spec: &fleetlock.Spec{Holder: holder, LeaseTransitions: 3}}
}

// kspec and fspec are a lock object's kind shapes.
func kspec(o *model.LockObject) *kured.Spec     { return o.Spec.(*kured.Spec) }
func fspec(o *model.LockObject) *fleetlock.Spec { return o.Spec.(*fleetlock.Spec) }

// entry is one kured lock entry for building annotations.
type entry struct {
	NodeID   string         `json:"nodeID"`
	Metadata map[string]any `json:"metadata,omitempty"`
	Created  *time.Time     `json:"created,omitempty"`
	TTL      *int64         `json:"TTL,omitempty"`
}

func ent(nodeID string, created time.Time, ttl time.Duration) entry {
	e := entry{NodeID: nodeID, Metadata: map[string]any{"unschedulable": false}}
	if !created.IsZero() {
		c := created
		e.Created = &c
	}
	n := int64(ttl)
	e.TTL = &n
	return e
}

func single(e entry) string {
	b, _ := json.Marshal(e)
	return string(b)
}

func multi(maxOwners int, es ...entry) string {
	if es == nil {
		es = []entry{}
	}
	b, _ := json.Marshal(map[string]any{"maxOwners": maxOwners, "locks": es})
	return string(b)
}

// nodesOK is the usual healthy picture: nodes listed, Longhorn reported
// (with whatever volumes the case adds).
func nodesOK() model.Event {
	return model.Batch{
		model.SourceChanged{Health: model.SourceHealth{Name: model.SourceNodes, Status: model.StatusOK}},
		model.SourceChanged{Health: model.SourceHealth{Name: model.SourceLonghorn, Status: model.StatusOK}},
	}
}
func source(name model.SourceName, st model.SourceStatus) model.Event {
	return model.SourceChanged{Health: model.SourceHealth{Name: name, Status: st, Message: "test"}}
}

// step applies events at a time, then recomputes.
type step struct {
	at time.Time
	ev []model.Event
}

// build applies the steps to a fresh cluster judged by e.
func build(e *Engine, steps ...step) *model.Cluster {
	c := model.NewCluster("test", model.Options{})
	c.Judge = e.Judge
	for _, s := range steps {
		for _, ev := range s.ev {
			c.Apply(ev, s.at)
		}
		c.Recompute(s.at)
	}
	return c
}

// statusForEntry is statusFor that tells apart the entries of a holder the
// lock lists more than once by their position.
func statusForEntry(ss []model.LockStatus, ref model.LockRef, holder string, entry int) (model.LockStatus, error) {
	for _, s := range ss {
		if s.LockRef == ref && s.Holder == holder && (!s.Duplicate || s.Entry == entry) {
			return s, nil
		}
	}
	return model.LockStatus{}, fmt.Errorf("no status for %s holder %q entry %d in %v", ref, holder, entry, ss)
}

func statusFor(ss []model.LockStatus, ref model.LockRef, holder string) (model.LockStatus, error) {
	for _, s := range ss {
		if s.LockRef == ref && s.Holder == holder {
			return s, nil
		}
	}
	return model.LockStatus{}, fmt.Errorf("no status for %s holder %q in %v", ref, holder, ss)
}

// newFakeClientset is fake.NewClientset naming generateName objects (the
// actions' Events) as the API server does.
func newFakeClientset(objs ...runtime.Object) *fake.Clientset {
	cs := fake.NewClientset(objs...)
	fakekube.GenerateNames(&cs.Fake)
	return cs
}
