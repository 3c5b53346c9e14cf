package coord

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// Demo is a coordinator kind's demo scenario: the story `rebootwatch
// --demo=<Name>` plays in the embedded simulated cluster (sources/sim),
// as timed writes of the objects the coordinator, its jobs and the
// kubelets write. A kind's package defines it (its demo.go); sources/sim
// plays it on fake clientsets, so rebootwatch reads the demo with the
// same code as a real cluster. The writes go to the demo cluster only:
// rebootwatch itself never writes a coordinator's objects.
type Demo struct {
	// Name is the --demo value.
	Name string
	// Summary says in a few words what the scenario shows (--help,
	// completion).
	Summary string
	// Builtin names a scenario sources/sim plays itself (kured,
	// fleetlock): Steps and ListKinds are then unused.
	Builtin bool
	// ListKinds are the list kinds of the custom resources the kind reads
	// (a fake dynamic client must know them to list them, in every
	// scenario).
	ListKinds map[schema.GroupVersionResource]string
	// Steps are the writes in time order, at offsets from the scenario's
	// time zero; a step at or before 0 is the cluster as the demo opens.
	Steps []DemoStep
}

// DemoStep is one timed write of a demo scenario.
type DemoStep struct {
	At time.Duration
	// What says which actor's write it reproduces ("the job's drain
	// container cordons k3s-agent-1").
	What string
	// Write makes it; now is the scenario time of the step.
	Write func(ctx context.Context, c DemoClients, now time.Time) error
}

// DemoClients are the demo cluster's clients.
type DemoClients struct {
	Kube    kubernetes.Interface
	Dynamic dynamic.Interface
}

// Demoer is a driver with a demo scenario hook: start is the scenario's
// time zero (the writes date their objects from it).
type Demoer interface {
	Demo(start time.Time) Demo
}
