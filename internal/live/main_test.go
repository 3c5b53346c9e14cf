package live

import (
	"testing"

	"github.com/rebootwatch/rebootwatch/internal/testenv/testcluster"
)

// The integration tests read the cluster whole (kube-system/kured, every
// node), so those that install no coordinator's CRD share one apiserver one
// at a time (testcluster.SharedAlone); the others start their own.
func TestMain(m *testing.M) { testcluster.Main(m) }
