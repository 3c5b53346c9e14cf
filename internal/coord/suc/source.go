package suc

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/rebootwatch/rebootwatch/internal/coord"
	"github.com/rebootwatch/rebootwatch/model"
)

// PlanGVR is the Plans resource.
var PlanGVR = schema.GroupVersionResource{Group: Group, Version: Version, Resource: Resource}

// NodeKeys are the node keys whose writers NodeFrom keeps for SUC (none:
// SUC's reading rests on labels and the cordon's writer).
var NodeKeys []string

// Read reads SUC's objects once: the Plans and SUC's Jobs of namespace
// (every namespace when ""), and every node. Jobs are listed as SUC
// selects its own (handle_batch.go: the upgrade.cattle.io/controller
// label; here its presence, with the plan label job.New sets): the judging
// then keeps only those in a Plan's namespace. What cannot be read is said in
// the Input's …Unread fields, never left empty as if there were none. The
// pods and budgets of the drain blocker are the caller's to add (the engine
// already reads them).
func Read(ctx context.Context, dyn dynamic.Interface, c kubernetes.Interface, namespace string) Input {
	var in Input
	plans, err := dyn.Resource(PlanGVR).Namespace(namespace).List(ctx, metav1.ListOptions{})
	switch {
	case apierrors.IsNotFound(err):
		in.PlansUnread = "not installed (no " + Resource + "." + Group + " resource)"
	case err != nil:
		in.PlansUnread = unread(err)
	default:
		for i := range plans.Items {
			in.Plans = append(in.Plans, ParsePlan(plans.Items[i].Object))
		}
	}
	jobs, err := c.BatchV1().Jobs(namespace).List(ctx, metav1.ListOptions{LabelSelector: LabelController + "," + LabelPlan})
	if err != nil {
		in.JobsUnread = unread(err)
	} else {
		for i := range jobs.Items {
			if j, ok := JobFrom(&jobs.Items[i]); ok {
				in.Jobs = append(in.Jobs, j)
			}
		}
		sort.Slice(in.Jobs, func(a, b int) bool { return in.Jobs[a].Key() < in.Jobs[b].Key() })
	}
	nodes, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		in.NodesUnread = unread(err)
	} else {
		for i := range nodes.Items {
			in.Nodes = append(in.Nodes, coord.NodeFrom(&nodes.Items[i], NodeKeys))
		}
	}
	return in
}

func unread(err error) string {
	switch {
	case apierrors.IsForbidden(err):
		return "forbidden: " + err.Error()
	default:
		return fmt.Sprintf("error: %v", err)
	}
}

// Observe reads SUC once and judges it (coord.Observer); Names
// "suc-namespace" limits the Plans read to one namespace. It first asks
// whether the Plan CRD is served (Served): when not, SUC is not installed
// and nothing else is read; when that cannot be told, SUC is unknown.
func (Driver) Observe(ctx context.Context, c coord.Clients, now time.Time) coord.Observation {
	served, why := Served(ctx, c.Kube.Discovery())
	switch {
	case !served:
		return coord.Observation{}
	case why != "":
		return coord.Observation{Installed: true, Unknown: why}
	}
	in := Read(ctx, c.Dynamic, c.Kube, c.Names["suc-namespace"])
	if c.Drain != nil {
		if nodes := drainingNodes(in); len(nodes) > 0 {
			in.Pods, in.PDBs, in.PDBsUnread = c.Drain(ctx, nodes)
		}
	}
	r := Judge(in, now)
	o := coord.Observation{Installed: !strings.HasPrefix(in.PlansUnread, "not installed"),
		Unknown: r.Unknown, Blockers: r.Blockers, Uncordon: r.Uncordon, NotOwned: r.NotOwned}
	o.Judged, o.Slots, o.Nodes = r.Cycle()
	return o
}

// Cycle is the report in the model's terms: one slot group per Plan (its
// status.applying under its spec.concurrency), each holder with its job's
// step, and every selected node's place in each plan's cycle. judged is
// false when the Plans were not read.
func (r Report) Cycle() (judged bool, slots []model.SlotGroup, nodes []model.NodeCycle) {
	if r.Unknown != "" {
		return false, nil, nil
	}
	for _, p := range r.Plans {
		steps := map[string]string{}
		for _, n := range p.Nodes {
			steps[n.Node] = n.Step
			nodes = append(nodes, n.Cycle(Kind, p.Plan.Key()))
		}
		slots = append(slots, p.Slots.Group(Kind, p.Plan.Key(), func(n string) string { return steps[n] }))
	}
	return true, slots, nodes
}

// drainingNodes are the cordoned nodes a draining plan applies to: the
// ones whose pods the drain blocker reads.
func drainingNodes(in Input) []string {
	hosts := map[string]bool{}
	for _, p := range in.Plans {
		if p.Spec.Drain {
			for _, h := range p.Status.Applying {
				hosts[h] = true
			}
		}
	}
	var out []string
	for i := range in.Nodes {
		if n := &in.Nodes[i]; n.Unschedulable && hosts[Hostname(n)] {
			out = append(out, n.Name)
		}
	}
	sort.Strings(out)
	return out
}
