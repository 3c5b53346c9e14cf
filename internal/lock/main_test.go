package lock

import (
	"testing"

	"github.com/rebootwatch/rebootwatch/internal/testenv/testcluster"
)

// The integration tests share one apiserver (testcluster.Shared). Each
// keeps to namespaces of its own and to nodes under a label of its own,
// which it deletes when it ends, and runs in parallel with the others;
// the fresh-read test reads every node and longhorn-system, so it runs
// first, alone.
func TestMain(m *testing.M) { testcluster.Main(m) }
