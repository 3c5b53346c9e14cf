package lock

// registry is every lock kind rebootwatch knows, one line each. Adding a
// kind means: its driver file here (<kind>.go), its source file in
// sources/kube (<kind>.go), one line below, and the agent's RBAC rule for
// its objects (deploy/rbac.yaml).
var registry = []Driver{
	kuredDriver{},
	fleetlockDriver{},
}
