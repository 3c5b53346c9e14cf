package kube

import (
	"testing"

	"github.com/rebootwatch/rebootwatch/internal/testenv/testcluster"
)

// The integration tests read every node, and DaemonSets, pods and PDBs
// cluster-wide, so they share one apiserver one at a time
// (testcluster.SharedAlone); the one that stops its apiserver has its own.
func TestMain(m *testing.M) { testcluster.Main(m) }
