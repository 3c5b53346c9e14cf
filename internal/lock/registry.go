package lock

import coordkinds "github.com/rebootwatch/rebootwatch/internal/coord/kinds"

// registry is every lock kind rebootwatch judges: the kinds of the one
// registry of coordinators (internal/coord/kinds) whose slots are one lock
// object (coord.LockDriver). Adding a kind is its package under
// internal/coord and its line there; the conformance tests
// (internal/coord/kinds, and conformance_test.go here) then ask for its
// fixture, and the RBAC tests for its grants.
var registry = coordkinds.LockDrivers()
