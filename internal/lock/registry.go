package lock

import (
	"github.com/rebootwatch/rebootwatch/internal/coord/fleetlock"
	"github.com/rebootwatch/rebootwatch/internal/coord/kured"
)

// registry is every lock kind rebootwatch knows, one line each. Adding a
// kind means: its driver file here (<kind>.go: its model.LockKind and
// model.SourceName, its shape as a model.LockSpec, and the Driver), its
// source file in sources/kube (<kind>.go, adding itself to lockSources),
// one line below, and the agent's RBAC rule for its objects (deploy/rbac.yaml
// and the chart's templates/rbac.yaml). The conformance test then asks for
// the kind's fixture (conformance_test.go), and the RBAC test for its grants.
var registry = []Driver{
	kured.Driver{},
	fleetlock.Driver{},
}
