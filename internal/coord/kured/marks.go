package kured

import (
	"time"

	"github.com/rebootwatch/rebootwatch/model"
)

// NodeMarks implements coord.NodeMarker: kured with --annotate-nodes sets
// MarkAnnotation (the time, RFC3339) on a node it is about to reboot. A
// mark the node's Ready condition has not transitioned since is a reboot
// kured wants and has not made yet (pending, step "marked
// reboot-in-progress"); a mark older than the Ready transition is a reboot
// it went through (done, LeftCordoned: if the node is still cordoned and
// holds no lock, kured's known stuck cordon). An unparsable mark says
// nothing.
func (Driver) NodeMarks(n *model.Node) []model.NodeCycle {
	v, ok := n.Annotations[MarkAnnotation]
	if !ok {
		return nil
	}
	marked, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return nil
	}
	_, _, readySince := n.Ready()
	if readySince.IsZero() || !readySince.After(marked) {
		return []model.NodeCycle{{Kind: Kind, Node: n.Name, Phase: model.PhasePending, Step: "marked reboot-in-progress at " + v}}
	}
	return []model.NodeCycle{{Kind: Kind, Node: n.Name, Phase: model.PhaseDone, LeftCordoned: true,
		Step: "rebooted after kured's reboot-in-progress mark at " + v}}
}
