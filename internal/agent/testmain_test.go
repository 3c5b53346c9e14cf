package agent

import (
	"flag"
	"runtime"
	"strconv"
	"testing"

	"github.com/rebootwatch/rebootwatch/internal/testenv/testcluster"
)

// privateTests is how many tests run in parallel, on apiservers of their
// own (privateAgentCluster, and the fleet test's three) or the shared one
// to itself (parallelAgentCluster): they all wait on clocks in other
// processes, so all of them run at once.
const privateTests = 5

// TestMain runs the tests on one shared apiserver (testcluster.Main): the
// agent reads every node and kured's and fleetlock's objects at fixed
// names, so each integration test has it to itself (agentCluster) and
// leaves it as it found it; the longest ones, which wait on clocks, run
// together after them, each on an apiserver of its own
// (privateAgentCluster) but one, which has the shared one to itself
// (parallelAgentCluster). After the last test it removes the binaries the
// integration tests built once (buildOnce).
//
// Unless -parallel is given, the package runs privateTests parallel tests
// at once, not GOMAXPROCS (2 on the development machine): the private
// tests spend their time waiting (a Prometheus scrape, rule evaluation, a
// remote-write flush, the node audit's interval), and two at a time made
// their waits add up in three rounds.
func TestMain(m *testing.M) {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		_ = flag.Set("test.parallel", strconv.Itoa(max(runtime.GOMAXPROCS(0), privateTests)))
	}
	testcluster.Main(m)
}
