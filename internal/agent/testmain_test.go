package agent

import (
	"testing"

	"github.com/rebootwatch/rebootwatch/internal/testenv/testcluster"
)

// TestMain runs the tests on one shared apiserver (testcluster.Main): the
// agent reads every node and kured's and fleetlock's objects at fixed
// names, so each integration test has it to itself (agentCluster) and
// leaves it as it found it. After the last test it removes the agent
// binary the integration tests built once (buildAgent).
func TestMain(m *testing.M) { testcluster.Main(m, removeAgentBin) }
