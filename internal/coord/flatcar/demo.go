package flatcar

import (
	"context"
	"crypto/sha256"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rebootwatch/rebootwatch/internal/coord"
)

// The demo scenario (`rebootwatch --demo=flatcar`): a Flatcar cluster under
// FLUO in its headline wedge, an agent that stopped after the reboot
// (flatcar/Flatcar#2421):
//
//   - at time zero flatcar-worker-1 holds FLUO's one slot: the operator
//     let it reboot (reboot-ok), its update-agent set reboot-in-progress,
//     cordoned it (agent-made-unschedulable) and rebooted it; its kubelet
//     is silent. The other workers wait with reboot-needed.
//   - DemoBackAt in, the machine is back: its kubelet posts Ready with a
//     new boot id and Flatcar's new version. Its update-agent never runs
//     again, so reboot-in-progress stays and nothing uncordons the node;
//     once the agent's grace has passed rebootwatch names it, and the
//     uncordon FLUO's agent would have made is offered.
//
// The node writes are the agent's and operator's as flatcartest
// reproduces them (pkg/agent/agent.go process, pkg/operator/operator.go
// checkReboot), with the managedFields entries the apiserver records for
// clients named update-agent and update-operator.

// The demo's names.
const (
	DemoName      = "flatcar"
	DemoNode      = "flatcar-worker-1"
	DemoNamespace = "reboot-coordinator"
	// DemoBackAt is when the wedged node's kubelet is back after the reboot.
	DemoBackAt  = 15 * time.Second
	demoOld     = "Flatcar Container Linux by Kinvolk 4081.2.1 (Oklo)"
	demoNew     = "Flatcar Container Linux by Kinvolk 4152.2.0 (Oklo)"
	demoNewVer  = "4152.2.0"
	demoWroteAt = 6 * time.Minute // before time zero: the agent's reboot-in-progress
)

// Demo is FLUO's demo scenario hook (coord.Demoer).
func (Driver) Demo(start time.Time) coord.Demo {
	return coord.Demo{
		Name:    DemoName,
		Summary: "Flatcar update operator: a node's agent stops after its reboot, leaving it cordoned and the slot taken",
		Steps: []coord.DemoStep{
			{At: 0, What: "the Flatcar cluster, FLUO's operator, flatcar-worker-1 rebooting in FLUO's slot", Write: demoSeed},
			{At: DemoBackAt, What: "flatcar-worker-1's kubelet is back (new boot id); its update-agent never runs", Write: demoBack},
		},
	}
}

func demoID(s string) (machine, boot string) {
	sum := sha256.Sum256([]byte(s))
	id := fmt.Sprintf("%x", sum)
	return id[:32], id[32:40] + "-" + id[40:44] + "-4" + id[45:48] + "-a" + id[49:52] + "-" + id[52:64]
}

// demoFields is what the apiserver records for a write of these node
// fields by manager at t.
func demoFields(manager string, t time.Time, fields string) metav1.ManagedFieldsEntry {
	mt := metav1.NewTime(t.UTC().Truncate(time.Second))
	return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
		Time: &mt, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(fields)}
}

func demoNode(name string, role string, now time.Time) *corev1.Node {
	machine, boot := demoID(name)
	labels := map[string]string{"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "node-role.kubernetes.io/" + role: "",
		Prefix + "id": "flatcar", Prefix + "version": "4081.2.1", Prefix + "group": "stable"}
	ann := map[string]string{AnnRebootNeeded: "false", AnnRebootInProgress: "false", AnnStatus: "UPDATE_STATUS_IDLE"}
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: ann, CreationTimestamp: metav1.NewTime(now.Add(-120 * 24 * time.Hour))},
		Status: corev1.NodeStatus{
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
				Message: "kubelet is posting ready status", LastTransitionTime: metav1.NewTime(now.Add(-15 * 24 * time.Hour))}},
			NodeInfo: corev1.NodeSystemInfo{MachineID: machine, BootID: boot, OSImage: demoOld, KernelVersion: "6.6.74-flatcar",
				KubeletVersion: "v1.33.5", ContainerRuntimeVersion: "containerd://1.7.23", OperatingSystem: "linux", Architecture: "amd64"},
		},
	}
	if role == "control-plane" {
		// Updated yesterday: the agent set everything back after its reboot.
		n.Labels[Prefix+"version"] = demoNewVer
		n.Status.NodeInfo.OSImage = demoNew
		n.Status.Conditions[0].LastTransitionTime = metav1.NewTime(now.Add(-20 * time.Hour))
		return n
	}
	// Every worker downloaded the update (updateStatusCallback).
	n.Annotations[AnnStatus] = "UPDATE_STATUS_UPDATED_NEED_REBOOT"
	n.Annotations[AnnNewVersion] = demoNewVer
	n.Annotations[AnnRebootNeeded] = True
	n.Labels[Prefix+"reboot-needed"] = True
	if name != DemoNode {
		return n
	}
	// The operator let it reboot (reboot-ok after an empty before-reboot
	// check); its agent marked it in progress, cordoned it and rebooted it.
	wrote := now.Add(-demoWroteAt)
	n.Annotations[AnnRebootOK] = True
	n.Annotations[AnnRebootInProgress] = True
	n.Annotations[AnnAgentUnschedulable] = True
	n.Spec.Unschedulable = true
	n.Spec.Taints = []corev1.Taint{{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}}
	n.ManagedFields = []metav1.ManagedFieldsEntry{
		demoFields("update-operator", wrote.Add(-40*time.Second), `{"f:metadata":{"f:annotations":{"f:`+AnnRebootOK+`":{}}}}`),
		demoFields("update-agent", wrote, `{"f:metadata":{"f:annotations":{"f:`+AnnRebootInProgress+`":{},"f:`+AnnAgentUnschedulable+`":{}}},"f:spec":{"f:unschedulable":{}}}`),
	}
	n.Status.Conditions[0] = corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, Reason: "NodeStatusUnknown",
		Message: "Kubelet stopped posting node status.", LastTransitionTime: metav1.NewTime(wrote.Add(50 * time.Second))}
	return n
}

// demoSeed writes the cluster as the demo opens.
func demoSeed(ctx context.Context, c coord.DemoClients, now time.Time) error {
	for _, n := range []*corev1.Node{demoNode("flatcar-cp-1", "control-plane", now), demoNode(DemoNode, "worker", now),
		demoNode("flatcar-worker-2", "worker", now), demoNode("flatcar-worker-3", "worker", now)} {
		if _, err := c.Kube.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	// The operator's Deployment as examples/deploy/update-operator.yaml
	// writes it (no checks, no window).
	labels := map[string]string{"app": "flatcar-linux-update-operator"}
	one := int32(1)
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "flatcar-linux-update-operator", Namespace: DemoNamespace, CreationTimestamp: metav1.NewTime(now.Add(-120 * 24 * time.Hour))},
		Spec: appsv1.DeploymentSpec{Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{ServiceAccountName: "flatcar-linux-update-operator-sa",
					Containers: []corev1.Container{{Name: "update-operator", Image: "ghcr.io/flatcar/flatcar-linux-update-operator:v0.10.0-rc2",
						Command: []string{"/bin/update-operator"},
						Env:     []corev1.EnvVar{{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}}}}}}},
	}
	_, err := c.Kube.AppsV1().Deployments(DemoNamespace).Create(ctx, d, metav1.CreateOptions{})
	return err
}

// demoBack is the kubelet posting Ready after the reboot, with a new boot
// id and the new OS; the agent writes nothing.
func demoBack(ctx context.Context, c coord.DemoClients, now time.Time) error {
	nodes := c.Kube.CoreV1().Nodes()
	n, err := nodes.Get(ctx, DemoNode, metav1.GetOptions{})
	if err != nil {
		return err
	}
	_, boot := demoID(DemoNode + " after " + demoNewVer)
	n.Status.NodeInfo.BootID, n.Status.NodeInfo.OSImage = boot, demoNew
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
		Message: "kubelet is posting ready status", LastHeartbeatTime: metav1.NewTime(now), LastTransitionTime: metav1.NewTime(now)}}
	_, err = nodes.UpdateStatus(ctx, n, metav1.UpdateOptions{})
	return err
}
