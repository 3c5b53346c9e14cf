package lock

import (
	"context"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/rebootwatch/rebootwatch/internal/coord"
	coordkinds "github.com/rebootwatch/rebootwatch/internal/coord/kinds"
	"github.com/rebootwatch/rebootwatch/model"
)

// OpUncordon sets a Node's spec.unschedulable to false.
const OpUncordon = coord.OpUncordon

// uncordonWrite is the write that uncordons n, tied to the lock it goes
// with. A Node's resourceVersion moves with every status update, so the
// judged one would nearly always conflict: the precondition is instead the
// judged UID, the judged boot id and that the node is still cordoned; the
// update itself carries the resourceVersion just read, so a change between
// that read and the write is a conflict too.
func uncordonWrite(ref model.LockRef, n *model.Node) Write {
	return Write{Ref: ref, Object: "Node " + n.Name, UID: n.UID, Op: OpUncordon, Field: "spec.unschedulable",
		Node: n.Name, BootID: n.BootID, OldValue: "true", NewValue: "false",
		Summary: "set spec.unschedulable true → false (uncordon " + n.Name + ", " + uncordonsAs(ref.Kind) + ")"}
}

// uncordonsAs says what the coordinator of kind would have done, in its
// package's words (coord.Capabilities.Uncordons).
func uncordonsAs(kind model.LockKind) string {
	if d, ok := coordkinds.For(kind); ok {
		if how := d.Capabilities().Uncordons; how != "" {
			return "as " + how
		}
	}
	return "which its coordinator did not do"
}

// cordonWrite is the uncordon of a node done · still cordoned or left
// cordoned by a coordinator kind: uncordonWrite, tied also to the cordon
// judged (its managedFields manager and time), so that a cordon written
// since — by anyone — is not undone.
func cordonWrite(ref model.LockRef, kind model.LockKind, n *model.Node) Write {
	w := uncordonWrite(model.LockRef{Kind: kind}, n)
	w.Ref = ref
	w.CordonBy, w.CordonAt = n.UnschedulableSetBy, n.UnschedulableSetAt
	return w
}

// whose says whose cordon n carries, as its managedFields say.
func whose(n *model.Node) string {
	if n.UnschedulableSetBy == "" {
		return "who cordoned it cannot be read"
	}
	return "cordoned by " + n.UnschedulableSetBy + " at " + n.UnschedulableSetAt.UTC().Format(time.RFC3339)
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
		return Applied{}, &PreconditionError{Msg: fmt.Sprintf("conflict: node %s was replaced since it was judged (uid %s → %s); not uncordoned", w.Node, w.UID, n.UID)}
	case n.Status.NodeInfo.BootID != w.BootID:
		return Applied{}, &PreconditionError{Msg: fmt.Sprintf("conflict: node %s rebooted again since it was judged (boot id %s → %s); not uncordoned", w.Node, model.ShortID(w.BootID), model.ShortID(n.Status.NodeInfo.BootID))}
	case !n.Spec.Unschedulable:
		return Applied{}, &PreconditionError{Msg: fmt.Sprintf("conflict: node %s is no longer cordoned; nothing changed", w.Node)}
	}
	if w.CordonBy != "" {
		// The cordon undone must be the one judged: one written since (an
		// uncordon and a cordon by anyone, in between) is not.
		now := coord.NodeFrom(n, nil)
		if now.UnschedulableSetBy != w.CordonBy || !now.UnschedulableSetAt.Equal(w.CordonAt) {
			return Applied{}, &PreconditionError{Msg: fmt.Sprintf("conflict: node %s carries another cordon than the one judged (now: by %s at %s; judged: by %s at %s); not uncordoned",
				w.Node, orUnknown(now.UnschedulableSetBy), now.UnschedulableSetAt.UTC().Format(time.RFC3339), w.CordonBy, w.CordonAt.UTC().Format(time.RFC3339))}
		}
	}
	n = n.DeepCopy()
	n.Spec.Unschedulable = false
	up, err := nc.Update(ctx, n, metav1.UpdateOptions{FieldManager: FieldManager})
	if err != nil {
		return Applied{}, &APIError{Verb: "update", Resource: "nodes", Err: err}
	}
	ap := Applied{APIVersion: "v1", Kind: "Node", UID: up.UID, ResourceVersion: up.ResourceVersion}
	// Read it again as the scheduler does: spec.unschedulable.
	got, err := nc.Get(ctx, w.Node, metav1.GetOptions{})
	if err != nil {
		return ap, &VerifyError{Msg: fmt.Sprintf("the uncordon was written (resourceVersion %s), but reading node %s again failed (%v): whether it is schedulable is unknown", up.ResourceVersion, w.Node, err)}
	}
	if got.Spec.Unschedulable {
		return ap, &VerifyError{Msg: fmt.Sprintf("the uncordon was written (resourceVersion %s), but read again (resourceVersion %s), node %s is still cordoned (spec.unschedulable true)", up.ResourceVersion, got.ResourceVersion, w.Node)}
	}
	return ap, nil
}

// GateNode is the uncordon action's own gate: the node finished its cycle.
const GateNode = "node"

// LeftCordonedBy records that a coordinator kind of internal/coord (which
// holds no lock object the engine judges) left node cordoned, and why: its
// uncordon then passes the node gate like a node done · still cordoned,
// behind every other gate.
func (e *Engine) LeftCordonedBy(node, why string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.leftBy[node] = why
}

// SetLeftCordoned replaces every record of LeftCordonedBy with left (node
// -> why): the coordinator kinds read again, so a node none of them says
// it left cordoned any longer is not uncordoned on an old reading.
func (e *Engine) SetLeftCordoned(left map[string]string) {
	m := make(map[string]string, len(left))
	for n, why := range left {
		m[n] = why
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.leftBy = m
}

// Cordons is what the coordinator kinds of internal/coord say, at one
// reading, of the cordoned nodes in their cycles.
type Cordons struct {
	// Left maps a node a kind left cordoned (its own cordon, for the cycle
	// that left it) to why: its uncordon passes the node gate.
	Left map[string]string
	// NotOwned maps a cordoned node whose cordon is not provably the
	// kind's to why (whose cordon it is, or which read is missing): its
	// uncordon is refused at the node gate, saying so.
	NotOwned map[string]string
	// Kinds maps each node of Left to the kind that left it cordoned.
	Kinds map[string]model.LockKind
}

// SetCordons replaces what the coordinator kinds said of their cordons
// with c (SetLeftCordoned, and the cordons they do not own).
func (e *Engine) SetCordons(c Cordons) {
	left := make(map[string]string, len(c.Left))
	for n, why := range c.Left {
		left[n] = why
	}
	not := make(map[string]string, len(c.NotOwned))
	for n, why := range c.NotOwned {
		not[n] = why
	}
	kinds := make(map[string]model.LockKind, len(c.Kinds))
	for n, k := range c.Kinds {
		kinds[n] = k
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.leftBy, e.notOwned, e.leftKind = left, not, kinds
}

// LeftCordoned says whether a coordinator kind left node cordoned, and why.
func (e *Engine) LeftCordoned(node string) (string, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	why, ok := e.leftBy[node]
	return why, ok
}

// PlanUncordon plans the uncordon of a node that is done · still cordoned:
// it rebooted in its cycle, holds no lock and its coordinator did not
// uncordon it (fleetlock after someone else freed its Lease; kured's stuck
// cordon). The gates are release's: fresh data, no other node NotReady or
// mid-cycle, no Longhorn volume degraded, no blocking alert; and the node
// itself must be Ready, still cordoned and hold no lock.
func (e *Engine) PlanUncordon(c *model.Cluster, node string, now time.Time) (Plan, error) {
	n, ok := c.Node(node)
	if !ok {
		return Plan{}, fmt.Errorf("no node %q", node)
	}
	js, ctx := e.judgeAll(c, now)
	t := c.Track(node)
	kind := model.LockKind("")
	if t != nil {
		kind = t.LockKind
	}
	st := model.LockStatus{LockRef: model.LockRef{Kind: kind}, Holder: node, HolderNodes: []string{node}}
	e.mu.Lock()
	leftBy, notOwned, leftKind := e.leftBy[node], e.notOwned[node], e.leftKind[node]
	e.mu.Unlock()
	if leftBy == "" || leftKind == "" {
		leftKind = kind
	}
	st.Reason = "done · still cordoned: rebooted in its cycle and holds no lock, but its coordinator did not uncordon it"
	switch {
	case notOwned != "":
		st.Reason = "cordoned, not by its coordinator: " + notOwned
	case leftBy != "":
		st.Reason = "left cordoned: " + leftBy
	case !c.StillCordoned(node):
		st.Reason = fmt.Sprintf("%s is %s, not done · still cordoned", node, c.Phase(node))
	}
	var gs []Gate
	add := func(name string, ok bool, format string, args ...any) {
		gs = append(gs, Gate{Name: name, Passed: ok, Reason: fmt.Sprintf(format, args...)})
	}
	gs = append(gs, freshDataGate(c, ""))
	ready, known, _ := n.Ready()
	var holds []string
	for _, j := range js {
		for _, h := range j.status.HolderNodes {
			if h == node && j.status.Holder != "" {
				holds = append(holds, j.status.LockRef.String())
			}
		}
	}
	switch {
	case !known || !ready:
		add(GateNode, false, "%s is not Ready", node)
	case !n.Unschedulable:
		add(GateNode, false, "%s is not cordoned", node)
	case len(holds) > 0:
		add(GateNode, false, "%s holds %s: release the lock (which uncordons it) instead", node, strings.Join(holds, ", "))
	case notOwned != "":
		// A coordinator kind read the cordon and says it is not its own
		// (a later cordon by someone else, or one it cannot attribute): a
		// cordon rebootwatch never undoes.
		add(GateNode, false, "%s: not its coordinator's cordon, never undone here: %s", node, notOwned)
	case leftBy != "":
		add(GateNode, true, "%s is Ready, holds no lock and is still cordoned (%s): %s", node, whose(n), leftBy)
	case !c.StillCordoned(node):
		add(GateNode, false, "%s is %s (%s): only a node that finished its reboot cycle is uncordoned here", node, c.Phase(node), whose(n))
	default:
		add(GateNode, true, "%s rebooted in its cycle, is Ready, holds no lock and is still cordoned (%s)", node, whose(n))
	}
	gs = append(gs, otherNodesGate(ctx, js, -1, map[string]bool{node: true}), volumesGate(c), alertsGate(c))
	p := Plan{Status: st, Action: model.ActionUncordon, Gates: gs, Allowed: allGatesPass(gs), Unattended: e.opts.Unattended, LeftBy: leftBy}
	if !p.Allowed {
		var why []string
		for _, g := range p.FailedGates() {
			why = append(why, g.Name+": "+g.Reason)
		}
		p.Refusal = fmt.Sprintf("uncordon refused: %s", strings.Join(why, "; "))
	}
	p.Write = cordonWrite(st.LockRef, leftKind, n)
	p.Nodes, p.Judged = judgedNodes(c), judgedInputs(c)
	return p, nil
}

func orUnknown(s string) string {
	if s == "" {
		return "(unknown)"
	}
	return s
}
