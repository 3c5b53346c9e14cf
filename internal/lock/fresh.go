package lock

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rebootwatch/rebootwatch/model"
)

// The fresh read before a write (DESIGN §6 rule 3, issue 11 §1).
//
// A plan is judged on the sources' caches, which follow watches: a frozen or
// black-holed API server leaves them quiet but unchanged, and a stale cache
// can pass every gate. So before it writes, the actor reads the node list
// again with a quorum read (resourceVersion unset: the API server answers
// from etcd's current state, or from a cache it first brought up to it) and
// compares what the gates read of each node with what the plan was judged
// on. A read that fails or a node list that differs refuses the action with
// the fresh-data gate, and nothing is written. The lock object itself is
// read again by its driver (Apply), with the judged resourceVersion as a
// precondition.

// nodeFacts is what the gates and verdicts read of one node: identity,
// readiness and when it last changed, cordon, boot id and machine id.
func nodeFacts(name, uid string, unschedulable bool, ready string, readySince time.Time, bootID, machineID string) string {
	since := ""
	if !readySince.IsZero() {
		since = readySince.UTC().Format(time.RFC3339)
	}
	return fmt.Sprintf("uid=%s ready=%s since=%s cordoned=%v boot=%s machine=%s", uid, orDash(ready), orDash(since), unschedulable, orDash(bootID), orDash(machineID))
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// judgedNodes returns every node of the model, sorted by name.
func judgedNodes(c *model.Cluster) []model.Node {
	out := make([]model.Node, 0, c.NodeCount())
	for _, name := range c.NodeNames() {
		if n, ok := c.Node(name); ok {
			out = append(out, *n)
		}
	}
	return out
}

// modelFacts returns the facts of judged nodes, by name.
func modelFacts(nodes []model.Node) map[string]string {
	out := make(map[string]string, len(nodes))
	for i := range nodes {
		n := &nodes[i]
		var ready string
		var since time.Time
		for _, cd := range n.Conditions {
			if cd.Type == "Ready" {
				ready, since = cd.Status, cd.LastTransition
			}
		}
		out[n.Name] = nodeFacts(n.Name, n.UID, n.Unschedulable, ready, since, n.BootID, n.MachineID)
	}
	return out
}

// liveNodeFacts returns the facts of one API Node.
func liveNodeFacts(n *corev1.Node) string {
	var ready string
	var since time.Time
	for _, cd := range n.Status.Conditions {
		if cd.Type == corev1.NodeReady {
			ready, since = string(cd.Status), cd.LastTransitionTime.Time
		}
	}
	return nodeFacts(n.Name, string(n.UID), n.Spec.Unschedulable, ready, since, n.Status.NodeInfo.BootID, n.Status.NodeInfo.MachineID)
}

// ReadNodesFresh lists every node with a quorum read and returns their
// facts by name. It is the read the actor makes before each write.
func (a *Actor) ReadNodesFresh(ctx context.Context) (map[string]string, error) {
	out := map[string]string{}
	// Pages of one consistent snapshot; resourceVersion unset: a quorum read.
	opts := metav1.ListOptions{Limit: 500, LabelSelector: a.NodeSelector}
	for {
		l, err := a.Client.CoreV1().Nodes().List(ctx, opts)
		if err != nil {
			return nil, err
		}
		for i := range l.Items {
			out[l.Items[i].Name] = liveNodeFacts(&l.Items[i])
		}
		if l.Continue == "" {
			return out, nil
		}
		opts.Continue = l.Continue
	}
}

// diffNodes describes how the node list read now differs from the judged
// one ("" when it does not), naming at most a few nodes.
func diffNodes(judged, now map[string]string) string {
	var diffs []string
	for name, f := range judged {
		g, ok := now[name]
		switch {
		case !ok:
			diffs = append(diffs, name+" is gone")
		case g != f:
			diffs = append(diffs, name+" changed ("+changed(f, g)+")")
		}
	}
	for name := range now {
		if _, ok := judged[name]; !ok {
			diffs = append(diffs, name+" is new")
		}
	}
	if len(diffs) == 0 {
		return ""
	}
	sort.Strings(diffs)
	return list(diffs, 5)
}

// changed names the facts that differ: "ready=True → ready=False".
func changed(was, is string) string {
	a, b := strings.Fields(was), strings.Fields(is)
	var out []string
	for i := range a {
		if i < len(b) && a[i] != b[i] {
			out = append(out, a[i]+" → "+b[i])
		}
	}
	return strings.Join(out, ", ")
}

// checkFresh reads the node list fresh and refuses (ok false) when the read
// fails or differs from the nodes the plan was judged on.
func (a *Actor) checkFresh(ctx context.Context, p Plan) (Result, bool) {
	refuse := func(format string, args ...any) (Result, bool) {
		return Result{Outcome: model.OutcomeRefused, Write: p.Write, Message: fmt.Sprintf("%s refused: %s: %s; nothing written",
			p.Action, GateFreshData, fmt.Sprintf(format, args...))}, false
	}
	if p.Nodes == nil {
		return refuse("the plan carries no judged node list to check against")
	}
	now, err := a.ReadNodesFresh(ctx)
	if apierrors.IsForbidden(err) {
		who := a.Who
		if who == "" {
			who = "this user"
		}
		return Result{Outcome: model.OutcomeForbidden, Write: p.Write, Message: fmt.Sprintf(
			"%s refused: %s: forbidden: %s may not list nodes (the fresh read of the node list before a write needs it; grant list on nodes); nothing written: %v",
			p.Action, GateFreshData, who, err)}, false
	}
	if err != nil {
		why := "list nodes: " + err.Error()
		if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) || apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) {
			why = "list nodes: request timed out"
		}
		return refuse("could not read the node list fresh for the action (%s): the API server may be frozen or unreachable", why)
	}
	if d := diffNodes(modelFacts(p.Nodes), now); d != "" {
		return refuse("the node list read now differs from the one judged: %s — judge again", d)
	}
	return Result{}, true
}
