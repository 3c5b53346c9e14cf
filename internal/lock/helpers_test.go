package lock

import (
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/rebootwatch/rebootwatch/internal/fakekube"
	"github.com/rebootwatch/rebootwatch/internal/testenv/lockfixture"
	"github.com/rebootwatch/rebootwatch/model"
)

// The model-level fixtures are internal/testenv/lockfixture's, shared with
// the stall explainer's tests; these are their names here.
var (
	at             = lockfixture.At
	zid            = lockfixture.Zid
	node           = lockfixture.Node
	readySince     = lockfixture.ReadySince
	notReady       = lockfixture.NotReady
	noReady        = lockfixture.NoReady
	schedAt        = lockfixture.SchedAt
	kuredPods      = lockfixture.KuredPods
	crashLooping   = lockfixture.CrashLooping
	runningSince   = lockfixture.RunningSince
	cordoned       = lockfixture.Cordoned
	boot           = lockfixture.Boot
	machine        = lockfixture.Machine
	up             = lockfixture.Up
	gone           = lockfixture.Gone
	lockEv         = lockfixture.LockEv
	kuredRef       = lockfixture.KuredRef
	fleetRef       = lockfixture.FleetRef
	kuredLock      = lockfixture.KuredLock
	kuredAbsent    = lockfixture.KuredAbsent
	fleet          = lockfixture.Fleet
	kspec          = lockfixture.KSpec
	fspec          = lockfixture.FSpec
	ent            = lockfixture.Ent
	single         = lockfixture.Single
	multi          = lockfixture.Multi
	nodesOK        = lockfixture.NodesOK
	source         = lockfixture.Source
	statusFor      = lockfixture.StatusFor
	statusForEntry = lockfixture.StatusForEntry
)

const (
	mid1 = lockfixture.Mid1
	zid1 = lockfixture.Zid1
	mid2 = lockfixture.Mid2
	mid3 = lockfixture.Mid3
)

type (
	nodeOpt = lockfixture.NodeOpt
	entry   = lockfixture.KEntry
)

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

// newFakeClientset is fake.NewClientset naming generateName objects (the
// actions' Events) as the API server does.
func newFakeClientset(objs ...runtime.Object) *fake.Clientset {
	cs := fake.NewClientset(objs...)
	fakekube.GenerateNames(&cs.Fake)
	return cs
}
