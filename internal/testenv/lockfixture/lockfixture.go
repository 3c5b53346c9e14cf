// Package lockfixture builds the model-level pictures the lock engine's and
// the stall explainer's tests judge: nodes, kured's and fleetlock's lock
// objects, kured lock annotations, pods, sources' health and timed steps of
// events, all around one fixed time (T0).
//
// It is a test harness: imported only from _test.go files (depguard). It
// must not do I/O or start goroutines; it builds values only.
package lockfixture

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/rebootwatch/rebootwatch/internal/coord/fleetlock"
	"github.com/rebootwatch/rebootwatch/internal/coord/kinds"
	"github.com/rebootwatch/rebootwatch/internal/coord/kured"
	"github.com/rebootwatch/rebootwatch/model"
)

// T0 is the fixtures' now: Sunday 2026-11-29 12:00 UTC.
var T0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// At is T0 plus d.
func At(d time.Duration) time.Time { return T0.Add(d) }

// Machine ids for fleetlock tests; Mid1's Zincati id (Zid1) is the DESIGN
// vector.
const (
	Mid1 = "1c09ca98649c4c7abc779cd04c96812e"
	Zid1 = "978a225b3d7b40e9acd7ce9b62f68444"
	Mid2 = "2c09ca98649c4c7abc779cd04c96812e"
	Mid3 = "3c09ca98649c4c7abc779cd04c96812e"
)

// Zid is the Zincati app-specific id of a machine id (fleetlock's holder).
func Zid(_ testing.TB, mid string) string {
	id, err := fleetlock.ZincatiNodeID(mid)
	if err != nil {
		panic(err)
	}
	return id
}

// NodeOpt changes a fixture node.
type NodeOpt func(*model.Node)

// Node returns a Ready, schedulable node, Ready since T0-24h, boot "<name>-b1".
func Node(name string, opts ...NodeOpt) model.Node {
	n := model.Node{Name: name, UID: "uid-" + name, BootID: name + "-b1",
		Conditions: []model.Condition{{Type: "Ready", Status: "True", LastTransition: At(-24 * time.Hour)}}}
	for _, o := range opts {
		o(&n)
	}
	return n
}

// ReadySince makes the node Ready since t.
func ReadySince(t time.Time) NodeOpt {
	return func(n *model.Node) {
		n.Conditions = []model.Condition{{Type: "Ready", Status: "True", LastTransition: t}}
	}
}

// NotReady makes the node NotReady since t.
func NotReady(t time.Time) NodeOpt {
	return func(n *model.Node) {
		n.Conditions = []model.Condition{{Type: "Ready", Status: "False", LastTransition: t}}
	}
}

// NoReady removes the node's Ready condition.
func NoReady() NodeOpt { return func(n *model.Node) { n.Conditions = nil } }

// SchedAt dates the node's spec.unschedulable write in managedFields (an
// uncordon that wrote false explicitly, as a server-side apply does).
func SchedAt(t time.Time) NodeOpt {
	return func(n *model.Node) { n.UnschedulableSetAt, n.UnschedulableSetBy = t, "ops-apply" }
}

// Cordoned marks the node unschedulable.
func Cordoned() NodeOpt { return func(n *model.Node) { n.Unschedulable = true } }

// Boot sets the node's boot id.
func Boot(id string) NodeOpt { return func(n *model.Node) { n.BootID = id } }

// Machine sets the node's machine id.
func Machine(id string) NodeOpt { return func(n *model.Node) { n.MachineID = id } }

// Up is the node added or changed.
func Up(n model.Node) model.Event { return model.NodeUpserted{Node: n} }

// Gone is the node deleted.
func Gone(name string) model.Event { return model.NodeDeleted{Name: name} }

// LockEv is the lock object added or changed.
func LockEv(l model.LockObject) model.Event { return model.LockUpserted{Lock: l} }

// PodOpt changes kured's fixture pod.
type PodOpt func(*model.Pod)

// KuredPods is the pods source's picture of node: kured's DaemonSet pod
// with opts, or no kured pod at all when there are none.
func KuredPods(node string, opts ...PodOpt) model.Event {
	ev := model.Batch{model.SourceChanged{Health: model.SourceHealth{Name: model.SourcePods, Status: model.StatusOK}}}
	pods := []model.Pod{{Namespace: "default", Name: "web-1", Node: node, Phase: model.PodRunning, Ready: true, OwnerKind: "ReplicaSet", OwnerName: "web"}}
	if len(opts) > 0 {
		p := model.Pod{Namespace: KuredRef.Namespace, Name: "kured-x1", Node: node, OwnerKind: "DaemonSet", OwnerName: KuredRef.Name}
		for _, o := range opts {
			o(&p)
		}
		pods = append(pods, p)
	}
	return append(ev, model.NodePodsSet{Node: node, Pods: pods, Watched: true})
}

// CrashLooping makes kured's container wait in CrashLoopBackOff, its last run
// ended at last.
func CrashLooping(last time.Time) PodOpt {
	return func(p *model.Pod) {
		p.Phase = model.PodRunning
		p.Containers = model.ContainerState{Reported: true, Waiting: "CrashLoopBackOff", Restarts: 7, LastExit: last, LastExitReason: "Error, exit code 1"}
	}
}

// RunningSince makes kured's container run since t, Ready.
func RunningSince(t time.Time) PodOpt {
	return func(p *model.Pod) {
		p.Phase, p.Ready = model.PodRunning, true
		p.Containers = model.ContainerState{Reported: true, Running: true, StartedAt: t, Restarts: 1}
	}
}

// The fixtures' lock objects.
var (
	KuredRef = model.LockRef{Kind: model.LockKured, Namespace: "kube-system", Name: "kured"}
	FleetRef = model.LockRef{Kind: model.LockFleetlock, Namespace: "default", Name: "fleetlock-default"}
)

// KuredLock is kured's DaemonSet with its lock annotation set to annotation.
func KuredLock(annotation string) model.LockObject {
	return model.LockObject{LockRef: KuredRef, UID: "uid-ds", ResourceVersion: "100", Spec: &kured.Spec{Value: annotation, Present: true}}
}

// KuredAbsent is kured's DaemonSet without its lock annotation.
func KuredAbsent() model.LockObject {
	return model.LockObject{LockRef: KuredRef, UID: "uid-ds", ResourceVersion: "100", Spec: &kured.Spec{}}
}

// Fleet is fleetlock's Lease held by holder ("" for free).
func Fleet(holder string) model.LockObject {
	return model.LockObject{LockRef: FleetRef, UID: "uid-lease", ResourceVersion: "200", Spec: &fleetlock.Spec{Holder: holder, LeaseTransitions: 3}}
}

// KSpec is a kured lock object's kind shape.
func KSpec(o *model.LockObject) *kured.Spec { return o.Spec.(*kured.Spec) }

// FSpec is a fleetlock lock object's kind shape.
func FSpec(o *model.LockObject) *fleetlock.Spec { return o.Spec.(*fleetlock.Spec) }

// KEntry is one kured lock entry for building annotations, with kured's
// JSON field names.
type KEntry struct {
	NodeID   string         `json:"nodeID"`
	Metadata map[string]any `json:"metadata,omitempty"`
	Created  *time.Time     `json:"created,omitempty"`
	TTL      *int64         `json:"TTL,omitempty"`
}

// Ent is a kured lock entry for nodeID, created at created (zero: none),
// with a TTL.
func Ent(nodeID string, created time.Time, ttl time.Duration) KEntry {
	e := KEntry{NodeID: nodeID, Metadata: map[string]any{"unschedulable": false}}
	if !created.IsZero() {
		c := created
		e.Created = &c
	}
	n := int64(ttl)
	e.TTL = &n
	return e
}

// Single is kured's single-holder lock annotation of e.
func Single(e KEntry) string {
	b, _ := json.Marshal(e)
	return string(b)
}

// Multi is kured's multi-holder (--concurrency > 1) lock annotation.
func Multi(maxOwners int, es ...KEntry) string {
	if es == nil {
		es = []KEntry{}
	}
	b, _ := json.Marshal(map[string]any{"maxOwners": maxOwners, "locks": es})
	return string(b)
}

// NodesOK is the usual healthy picture: nodes listed, Longhorn reported
// (with whatever volumes the case adds).
func NodesOK() model.Event {
	return model.Batch{
		model.SourceChanged{Health: model.SourceHealth{Name: model.SourceNodes, Status: model.StatusOK}},
		model.SourceChanged{Health: model.SourceHealth{Name: model.SourceLonghorn, Status: model.StatusOK}},
	}
}

// Source is a source's health changing to st.
func Source(name model.SourceName, st model.SourceStatus) model.Event {
	return model.SourceChanged{Health: model.SourceHealth{Name: name, Status: st, Message: "test"}}
}

// Step applies events at a time, then recomputes.
type Step struct {
	At time.Time
	Ev []model.Event
}

// Build applies the steps to a fresh cluster judged by judge and explained
// by explain (either may be nil).
func Build(judge model.Judge, explain model.Explain, steps ...Step) *model.Cluster {
	c := model.NewCluster("test", model.Options{})
	c.Judge, c.Explain = judge, explain
	c.Marks = kinds.NodeMarks
	for _, d := range kinds.LockDrivers() {
		c.LockSources = append(c.LockSources, d.Source())
	}
	for _, s := range steps {
		for _, ev := range s.Ev {
			c.Apply(ev, s.At)
		}
		c.Recompute(s.At)
	}
	return c
}

// StatusForEntry is StatusFor that tells apart the entries of a holder the
// lock lists more than once by their position.
func StatusForEntry(ss []model.LockStatus, ref model.LockRef, holder string, entry int) (model.LockStatus, error) {
	for _, s := range ss {
		if s.LockRef == ref && s.Holder == holder && (!s.Duplicate || s.Entry == entry) {
			return s, nil
		}
	}
	return model.LockStatus{}, fmt.Errorf("no status for %s holder %q entry %d in %v", ref, holder, entry, ss)
}

// StatusFor is the status of holder in the lock ref.
func StatusFor(ss []model.LockStatus, ref model.LockRef, holder string) (model.LockStatus, error) {
	for _, s := range ss {
		if s.LockRef == ref && s.Holder == holder {
			return s, nil
		}
	}
	return model.LockStatus{}, fmt.Errorf("no status for %s holder %q in %v", ref, holder, ss)
}
