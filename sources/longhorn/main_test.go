package longhorn

import (
	"testing"

	"github.com/rebootwatch/rebootwatch/internal/testenv/testcluster"
)

// The integration tests share one apiserver with the Longhorn CRD installed
// (testcluster.Shared, EnsureLonghornCRD). Those that read volumes in a
// namespace of their own run in parallel; those that read every namespace
// or longhorn-system (the Table tests) run first, one at a time, and leave
// no volume behind; so do those that install or remove the CRD
// (withoutLonghornCRD), which put EnsureLonghornCRD's back when they end.
func TestMain(m *testing.M) { testcluster.Main(m) }
