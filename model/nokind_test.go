package model

import (
	"testing"

	"github.com/rebootwatch/rebootwatch/internal/testenv/kindscan"
)

// Issue 32 §1: the model derives the cycle of every kind from what the
// coordinator packages declare (slots, node cycles, marks); it has no kured
// or fleetlock special case and no switch on a kind. Before this issue it
// read kured's reboot-in-progress annotation in Advance and set
// LockKind "kured" there. What remains is listed with why, to be removed
// by whoever moves it.
func TestNoKindSpecialCase(t *testing.T) {
	allowed := map[string]string{
		// Display order of the sources: names them, decides nothing.
		"types.go:AllSources": "display order",
		// Whether the reboot-required signal matters (kured publishes
		// it, fleetlock's Zincati does not): not a phase decision; to
		// become a capability the wiring injects (left for issue 32 §2).
		"fleet.go:Cluster.RebootRequiredUnknown": "reboot-required signal: kured only (to move)",
	}
	found, err := kindscan.Find(".", []string{"LockKured", "LockFleetlock", "SourceKured", "SourceFleetlock"},
		[]string{"kured", "fleetlock"}, allowed)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		t.Error(f)
	}
}
