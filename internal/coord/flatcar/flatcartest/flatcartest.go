// Package flatcartest writes what the Flatcar Linux Update Operator's agent
// and operator write on a Node, step by step through FLUO's cycle, for
// tests: each step is the update function upstream passes to
// k8sutil.UpdateNodeRetry (a Get, the change, a full Update), made by a
// client named as FLUO's binaries name theirs, so the managedFields
// managers are "update-agent" and "update-operator". The module is not on
// the Go proxy; these reproduce — never copy — what was read at
// flatcar/flatcar-linux-update-operator commit
// 8dd83d71a7d4e5461c5bd4d6e5dae52397afc7f0:
//
//   - pkg/agent/agent.go: process (on start: reboot-in-progress=false,
//     reboot-needed=false and the reboot-needed label; after reboot-ok:
//     reboot-in-progress=true, agent-made-unschedulable=true, then the
//     cordon; after the operator clears reboot-ok: the uncordon and
//     agent-made-unschedulable=false) and updateStatusCallback (status,
//     last-checked-time, new-version, reboot-needed=true on
//     UPDATE_STATUS_UPDATED_NEED_REBOOT).
//   - pkg/operator/operator.go: mark (the before-/after-reboot label set
//     to "true", the configured annotations deleted) and checkReboot (the
//     label and annotations deleted, reboot-ok set to "true" before the
//     reboot and "false" after it).
//   - examples/deploy/update-operator.yaml: the operator's Deployment.
//
// It is test support: production code must never import it.
package flatcartest

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
)

// The keys (pkg/constants).
const (
	Prefix                = "flatcar-linux-update.v1.flatcar-linux.net/"
	AnnRebootNeeded       = Prefix + "reboot-needed"
	AnnRebootInProgress   = Prefix + "reboot-in-progress"
	AnnRebootOK           = Prefix + "reboot-ok"
	AnnRebootPaused       = Prefix + "reboot-paused"
	AnnStatus             = Prefix + "status"
	AnnLastChecked        = Prefix + "last-checked-time"
	AnnNewVersion         = Prefix + "new-version"
	AnnAgentUnschedulable = Prefix + "agent-made-unschedulable"
	LabelRebootNeeded     = Prefix + "reboot-needed"
	LabelBeforeReboot     = Prefix + "before-reboot"
	LabelAfterReboot      = Prefix + "after-reboot"
)

// Step is one write of the agent or the operator: the update function
// FLUO hands to UpdateNodeRetry.
type Step func(*corev1.Node)

func set(m *map[string]string, kv ...string) {
	if *m == nil {
		*m = map[string]string{}
	}
	for i := 0; i+1 < len(kv); i += 2 {
		(*m)[kv[i]] = kv[i+1]
	}
}

// AgentStarted is what the agent writes when it starts (after a reboot
// too): reboot-in-progress and reboot-needed "false", and the
// reboot-needed label "false" (SetNodeAnnotationsLabels).
func AgentStarted(n *corev1.Node) {
	set(&n.Annotations, AnnRebootInProgress, "false", AnnRebootNeeded, "false")
	set(&n.Labels, LabelRebootNeeded, "false")
}

// UpdateDownloaded is updateStatusCallback on
// UPDATE_STATUS_UPDATED_NEED_REBOOT: the status annotations and
// reboot-needed "true" (annotation and label).
func UpdateDownloaded(version string) Step {
	return func(n *corev1.Node) {
		set(&n.Annotations, AnnStatus, "UPDATE_STATUS_UPDATED_NEED_REBOOT", AnnLastChecked, "1764590400",
			AnnNewVersion, version, AnnRebootNeeded, "true")
		set(&n.Labels, LabelRebootNeeded, "true")
	}
}

// MarkBefore is the operator's mark for before-reboot: the configured
// annotations deleted, the label set.
func MarkBefore(annotations ...string) Step { return mark(LabelBeforeReboot, annotations) }

// MarkAfter is the operator's mark for after-reboot.
func MarkAfter(annotations ...string) Step { return mark(LabelAfterReboot, annotations) }

func mark(label string, annotations []string) Step {
	return func(n *corev1.Node) {
		for _, a := range annotations {
			delete(n.Annotations, a)
		}
		set(&n.Labels, label, "true")
	}
}

// CheckBeforePassed is checkReboot for before-reboot once every
// annotation is "true": label and annotations deleted, reboot-ok "true".
func CheckBeforePassed(annotations ...string) Step {
	return check(LabelBeforeReboot, annotations, "true")
}

// CheckAfterPassed is checkReboot for after-reboot: reboot-ok "false".
func CheckAfterPassed(annotations ...string) Step {
	return check(LabelAfterReboot, annotations, "false")
}

func check(label string, annotations []string, ok string) Step {
	return func(n *corev1.Node) {
		delete(n.Labels, label)
		for _, a := range annotations {
			delete(n.Annotations, a)
		}
		set(&n.Annotations, AnnRebootOK, ok)
	}
}

// Annotate sets annotations as a check's own DaemonSet or an admin does.
func Annotate(kv ...string) Step {
	return func(n *corev1.Node) { set(&n.Annotations, kv...) }
}

// AgentRebooting is the agent after reboot-ok: reboot-in-progress "true"
// and, when the node was schedulable, agent-made-unschedulable "true".
func AgentRebooting(n *corev1.Node) {
	set(&n.Annotations, AnnRebootInProgress, "true")
	if !n.Spec.Unschedulable {
		set(&n.Annotations, AnnAgentUnschedulable, "true")
	}
}

// Cordon is k8sutil.Unschedulable(true); Uncordon its false.
func Cordon(n *corev1.Node) { n.Spec.Unschedulable = true }

// Uncordon marks n schedulable again, as FLUO's agent does after its reboot.
func Uncordon(n *corev1.Node) { n.Spec.Unschedulable = false }

// AgentUncordoned is what the agent writes after its uncordon.
func AgentUncordoned(n *corev1.Node) { set(&n.Annotations, AnnAgentUnschedulable, "false") }

// Apply makes the steps on a Node in memory, in order (unit tests).
func Apply(n *corev1.Node, steps ...Step) *corev1.Node {
	for _, s := range steps {
		s(n)
	}
	return n
}

// Write makes each step as UpdateNodeRetry does: Get, change, Update
// (retried on a conflict), one Update per step.
func Write(ctx context.Context, c kubernetes.Interface, node string, steps ...Step) error {
	return WriteAs(ctx, c, "", node, steps...)
}

// WriteAs is Write naming the field manager: "" against a real apiserver
// (which names it from the client's user agent, as for FLUO's own Updates);
// a fake clientset does not, so tests pass "update-agent" or
// "update-operator" there.
func WriteAs(ctx context.Context, c kubernetes.Interface, fieldManager, node string, steps ...Step) error {
	for _, s := range steps {
		err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
			n, err := c.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
			if err != nil {
				return err
			}
			s(n)
			_, err = c.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{FieldManager: fieldManager})
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// AgentClient and OperatorClient identify themselves as FLUO's binaries
// do (client-go's default user agent names the binary), so the apiserver
// records their writes under the managers "update-agent" and
// "update-operator".
func AgentClient(cfg *rest.Config) (kubernetes.Interface, error) {
	return named(cfg, "update-agent/v0.0.0 (linux/amd64) kubernetes/$Format")
}

// OperatorClient is a client named as FLUO's update-operator (see AgentClient).
func OperatorClient(cfg *rest.Config) (kubernetes.Interface, error) {
	return named(cfg, "update-operator/v0.0.0 (linux/amd64) kubernetes/$Format")
}

func named(cfg *rest.Config, ua string) (kubernetes.Interface, error) {
	c := rest.CopyConfig(cfg)
	c.UserAgent = ua
	return kubernetes.NewForConfig(c)
}

// Deployment is the operator's Deployment as examples/deploy writes it,
// with these args added to its update-operator container.
func Deployment(ns string, args []string, env ...corev1.EnvVar) *appsv1.Deployment {
	labels := map[string]string{"app": "flatcar-linux-update-operator"}
	one := int32(1)
	env = append([]corev1.EnvVar{{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}}, env...)
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "flatcar-linux-update-operator", Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: &one,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					ServiceAccountName: "flatcar-linux-update-operator-sa",
					Containers: []corev1.Container{{
						Name: "update-operator", Image: "ghcr.io/flatcar/flatcar-linux-update-operator:v0.10.0-rc2",
						Command: []string{"/bin/update-operator"}, Args: args, Env: env,
					}},
				},
			},
		},
	}
}

// WedgeNode is the node Wedge leaves with a stopped agent.
const WedgeNode = "flatcar-wedge-1"

// Wedge writes FLUO's headline wedge: the operator's Deployment in ns; a
// node registered as the kubelet does, taken through its before-reboot
// check and into its reboot by clients named as FLUO's agent and operator
// (fake says the API names no manager from the user agent, as a fake
// clientset: the writes then name theirs); then the kubelet back after the reboot,
// Ready since the agent's write plus 90s, with a new boot id — and the
// agent never runs again. It returns the node, the first blocker kind it
// must show, and the time to judge it at.
func Wedge(ctx context.Context, admin, agent, operator kubernetes.Interface, ns string, fake bool) (string, string, time.Time, error) {
	if _, err := admin.AppsV1().Deployments(ns).Create(ctx, Deployment(ns, nil), metav1.CreateOptions{}); err != nil {
		return "", "", time.Time{}, err
	}
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: WedgeNode, Labels: map[string]string{"kubernetes.io/hostname": WedgeNode, "kubernetes.io/os": "linux"}}}
	if _, err := admin.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
		return "", "", time.Time{}, err
	}
	agentMgr, operatorMgr := "", ""
	if fake {
		agentMgr, operatorMgr = "update-agent", "update-operator"
	}
	for _, w := range []struct {
		c     kubernetes.Interface
		mgr   string
		steps []Step
	}{
		{agent, agentMgr, []Step{AgentStarted, UpdateDownloaded("4152.2.0")}},
		{operator, operatorMgr, []Step{MarkBefore(), CheckBeforePassed()}},
		{agent, agentMgr, []Step{AgentRebooting, Cordon}},
	} {
		if err := WriteAs(ctx, w.c, w.mgr, WedgeNode, w.steps...); err != nil {
			return "", "", time.Time{}, err
		}
	}
	got, err := admin.CoreV1().Nodes().Get(ctx, WedgeNode, metav1.GetOptions{})
	if err != nil {
		return "", "", time.Time{}, err
	}
	var wrote time.Time
	for _, e := range got.ManagedFields {
		if e.Manager == "update-agent" && e.Time != nil && e.Time.After(wrote) {
			wrote = e.Time.Time
		}
	}
	if wrote.IsZero() {
		return "", "", time.Time{}, fmt.Errorf("no update-agent write recorded on %s", WedgeNode)
	}
	back := wrote.Add(90 * time.Second)
	got.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
		LastHeartbeatTime: metav1.NewTime(back), LastTransitionTime: metav1.NewTime(back)}}
	got.Status.NodeInfo.BootID = "boot-2"
	if _, err := admin.CoreV1().Nodes().UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
		return "", "", time.Time{}, err
	}
	return WedgeNode, "agent-stopped", back.Add(10 * time.Minute), nil
}
