package live

import (
	"testing"

	"github.com/rebootwatch/rebootwatch/internal/testcluster"
)

// The integration tests read the cluster whole (kube-system/kured, every
// node), so they share one apiserver one at a time
// (testcluster.SharedAlone).
func TestMain(m *testing.M) { testcluster.Main(m) }
