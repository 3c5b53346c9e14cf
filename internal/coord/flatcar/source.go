package flatcar

import (
	"context"
	"fmt"
	"path"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"

	"github.com/rebootwatch/rebootwatch/internal/coord"
	"github.com/rebootwatch/rebootwatch/model"
)

// Read reads FLUO's state once: every node, and the operator's settings
// from its Deployment (namespace/name, or "" to find the one Deployment
// whose container runs update-operator). What cannot be read is said in
// the Input's …Unread fields.
func Read(ctx context.Context, c kubernetes.Interface, deployment string) Input {
	var in Input
	nodes, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		in.NodesUnread = unread(err)
	} else {
		for i := range nodes.Items {
			in.Nodes = append(in.Nodes, coord.NodeFrom(&nodes.Items[i], NodeKeys))
		}
	}
	in.Settings, in.SettingsUnread = readSettings(ctx, c, deployment)
	return in
}

func readSettings(ctx context.Context, c kubernetes.Interface, deployment string) (Settings, string) {
	if deployment != "" {
		ns, name, ok := strings.Cut(deployment, "/")
		if !ok {
			return Settings{}, fmt.Sprintf("%q is not namespace/name", deployment)
		}
		d, err := c.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			if apierrors.IsNotFound(err) {
				return Settings{}, "operator Deployment " + deployment + " not found"
			}
			return Settings{}, unread(err)
		}
		ctr, ok := OperatorContainer(d)
		if !ok {
			return Settings{}, "Deployment " + deployment + " runs no update-operator container"
		}
		return SettingsFrom(ns, name, ctr), ""
	}
	list, err := c.AppsV1().Deployments("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return Settings{}, unread(err)
	}
	var found []string
	var s Settings
	for i := range list.Items {
		d := &list.Items[i]
		if ctr, ok := OperatorContainer(d); ok {
			found = append(found, d.Namespace+"/"+d.Name)
			s = SettingsFrom(d.Namespace, d.Name, ctr)
		}
	}
	sort.Strings(found)
	switch len(found) {
	case 0:
		return Settings{}, "no Deployment runs update-operator (not installed?)"
	case 1:
		return s, ""
	}
	return Settings{}, "several Deployments run update-operator (" + strings.Join(found, ", ") + "): name one"
}

// OperatorContainer is the Deployment's container that runs FLUO's
// update-operator (its command, or its image when the command is the
// image's own).
func OperatorContainer(d *appsv1.Deployment) (*corev1.Container, bool) {
	for i := range d.Spec.Template.Spec.Containers {
		ctr := &d.Spec.Template.Spec.Containers[i]
		if len(ctr.Command) > 0 && strings.HasSuffix(ctr.Command[0], "/update-operator") || len(ctr.Command) > 0 && ctr.Command[0] == "update-operator" {
			return ctr, true
		}
		if len(ctr.Command) == 0 && strings.Contains(ctr.Image, "flatcar-linux-update-operator") {
			return ctr, true
		}
	}
	return nil, false
}

func unread(err error) string {
	if apierrors.IsForbidden(err) {
		return "forbidden: " + err.Error()
	}
	return fmt.Sprintf("error: %v", err)
}

// ReadAgentPods reads FLUO's update-agent pod on each of nodes (a list of
// the node's pods, spec.nodeName, as the engine reads a node's pods): the
// pod one of whose containers runs update-agent. A node whose pods could
// not be read is Known false, saying why.
func ReadAgentPods(ctx context.Context, c kubernetes.Interface, nodes []string) map[string]AgentPod {
	out := make(map[string]AgentPod, len(nodes))
	for _, n := range nodes {
		list, err := c.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", n).String()})
		if err != nil {
			out[n] = AgentPod{Why: "pods " + unread(err)}
			continue
		}
		v := AgentPod{Known: true}
		for i := range list.Items {
			p := &list.Items[i]
			if p.Spec.NodeName != n || !runsAgent(p) {
				continue
			}
			got := agentPod(p)
			// Of several (one terminating, its replacement), the one that runs.
			if v.Name == "" || (!v.Running && got.Running) {
				v = got
			}
		}
		out[n] = v
	}
	return out
}

// runsAgent: one of the pod's containers runs FLUO's update-agent
// (examples/deploy/update-agent.yaml: command /bin/update-agent), or sets
// no command and runs FLUO's image, whose ENTRYPOINT is /bin/update-agent
// (Dockerfile). Taking a look-alike for the agent only refuses more; not
// knowing the real one would offer the uncordon while it runs.
func runsAgent(p *corev1.Pod) bool {
	for _, c := range p.Spec.Containers {
		if len(c.Command) > 0 && path.Base(c.Command[0]) == "update-agent" {
			return true
		}
		if len(c.Command) == 0 && imageRepo(c.Image) == "flatcar-linux-update-operator" {
			return true
		}
	}
	return false
}

// imageRepo is the last path element of an image reference's repository
// (no registry, tag or digest): "flatcar-linux-update-operator" for
// ghcr.io/flatcar/flatcar-linux-update-operator:v0.10.0-rc2.
func imageRepo(image string) string {
	image, _, _ = strings.Cut(image, "@")
	base := path.Base(image)
	if i := strings.LastIndex(base, ":"); i >= 0 {
		base = base[:i]
	}
	return base
}

func agentPod(p *corev1.Pod) AgentPod {
	v := AgentPod{Known: true, Name: p.Namespace + "/" + p.Name}
	running := p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil && len(p.Status.ContainerStatuses) > 0
	for _, cs := range p.Status.ContainerStatuses {
		v.Restarts += int(cs.RestartCount)
		switch {
		case cs.State.Running != nil:
			if t := cs.State.Running.StartedAt.Time; t.After(v.Since) {
				v.Since = t
			}
		case cs.State.Waiting != nil:
			running = false
			v.Waiting = cs.State.Waiting.Reason
		default:
			running = false
		}
	}
	v.Running = running
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			v.Ready, v.ReadySince = c.Status == corev1.ConditionTrue, c.LastTransitionTime.Time
		}
	}
	return v
}

// Observe reads FLUO once and judges it (coord.Observer); Names
// "flatcar-operator" is the operator Deployment's namespace/name. FLUO is
// installed when a node carries its agent's label or its operator's
// Deployment is found (Discover, which reads nothing else when neither is
// there); then every node and the operator's settings are read.
func (Driver) Observe(ctx context.Context, c coord.Clients, now time.Time) coord.Observation {
	installed, why := Discover(ctx, c.Kube, c.Names["flatcar-operator"])
	switch {
	case !installed:
		return coord.Observation{}
	case why != "":
		return coord.Observation{Installed: true, Unknown: why}
	}
	in := Read(ctx, c.Kube, c.Names["flatcar-operator"])
	r := Judge(in, now)
	if len(r.NeedAgentPod) > 0 {
		// Whose agent runs decides the uncordon and the agent-stopped
		// wording: read those nodes' agent pods, then judge again.
		in.AgentPods = ReadAgentPods(ctx, c.Kube, r.NeedAgentPod)
		r = Judge(in, now)
	}
	o := coord.Observation{Installed: true, Unknown: r.Unknown, Blockers: r.Blockers, Uncordon: r.Uncordon, NotOwned: r.NotOwned}
	o.Judged, o.Slots, o.Nodes = r.Cycle()
	if o.Unknown == "" && in.SettingsUnread != "" {
		o.Unknown = "operator settings not read: " + in.SettingsUnread
	}
	return o
}

// Cycle is the report in the model's terms: FLUO's one computed slot group
// (no object of its own: owner ""), each holder with its step, and every
// node's place in FLUO's cycle. judged is false when the nodes were not
// read.
func (r Report) Cycle() (judged bool, slots []model.SlotGroup, nodes []model.NodeCycle) {
	if r.Unknown != "" {
		return false, nil, nil
	}
	steps := map[string]string{}
	for _, n := range r.Nodes {
		steps[n.Node] = n.Step
		nodes = append(nodes, n.Cycle(Kind, ""))
	}
	return true, []model.SlotGroup{r.Slots.Group(Kind, "", func(n string) string { return steps[n] })}, nodes
}
