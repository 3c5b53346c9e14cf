package lock

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/rebootwatch/rebootwatch/model"
)

// OpUncordon sets a Node's spec.unschedulable to false.
const OpUncordon = "uncordon"

// uncordonWrite is the write that uncordons n, tied to the lock it goes
// with. A Node's resourceVersion moves with every status update, so the
// judged one would nearly always conflict: the precondition is instead the
// judged UID, the judged boot id and that the node is still cordoned; the
// update itself carries the resourceVersion just read, so a change between
// that read and the write is a conflict too.
func uncordonWrite(ref model.LockRef, n *model.Node) Write {
	return Write{Ref: ref, Object: "Node " + n.Name, UID: n.UID, Op: OpUncordon, Field: "spec.unschedulable",
		Node: n.Name, BootID: n.BootID, OldValue: "true", NewValue: "false",
		Summary: "set spec.unschedulable true → false (uncordon " + n.Name + ", as its coordinator does when the holder unlocks itself)"}
}

// applyUncordon makes an uncordon write.
func applyUncordon(ctx context.Context, c kubernetes.Interface, w Write) (Applied, error) {
	nc := c.CoreV1().Nodes()
	n, err := nc.Get(ctx, w.Node, metav1.GetOptions{})
	if err != nil {
		return Applied{}, &APIError{Verb: "get", Resource: "nodes", Err: err}
	}
	switch {
	case string(n.UID) != w.UID:
		return Applied{}, &PreconditionError{fmt.Sprintf("conflict: node %s was replaced since it was judged (uid %s → %s); not uncordoned", w.Node, w.UID, n.UID)}
	case n.Status.NodeInfo.BootID != w.BootID:
		return Applied{}, &PreconditionError{fmt.Sprintf("conflict: node %s rebooted again since it was judged (boot id %s → %s); not uncordoned", w.Node, short8(w.BootID), short8(n.Status.NodeInfo.BootID))}
	case !n.Spec.Unschedulable:
		return Applied{}, &PreconditionError{fmt.Sprintf("conflict: node %s is no longer cordoned; nothing changed", w.Node)}
	}
	n = n.DeepCopy()
	n.Spec.Unschedulable = false
	up, err := nc.Update(ctx, n, metav1.UpdateOptions{FieldManager: FieldManager})
	if err != nil {
		return Applied{}, &APIError{Verb: "update", Resource: "nodes", Err: err}
	}
	return Applied{APIVersion: "v1", Kind: "Node", UID: up.UID, ResourceVersion: up.ResourceVersion}, nil
}
