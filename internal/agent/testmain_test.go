package agent

import (
	"testing"

	"github.com/rebootwatch/rebootwatch/internal/testenv/testcluster"
)

// TestMain runs the tests on one shared apiserver (testcluster.Main): the
// agent reads every node and kured's and fleetlock's objects at fixed
// names, so each integration test has it to itself (agentCluster) and
// leaves it as it found it; the longest ones, which wait on clocks, have
// an apiserver of their own each and run together after them
// (privateAgentCluster). After the last test it removes the binaries the
// integration tests built once (buildOnce).
func TestMain(m *testing.M) { testcluster.Main(m, removeBuilt) }
