package suc

import (
	"context"
	"crypto/sha256"
	"fmt"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/rebootwatch/rebootwatch/internal/coord"
)

// The demo scenario (`rebootwatch --demo=suc`): a k3s cluster upgraded by
// the two Plans of k3s's own documentation (server-plan, then agent-plan,
// concurrency 1, cordon and drain), in SUC's headline wedge:
//
//   - at time zero agent-plan's job has run on k3s-agent-1 for 11 minutes:
//     its drain init container waits on shop/postgres-0, which the
//     PodDisruptionBudget shop/postgres (minAvailable 1 of one replica)
//     never lets go (rancher/system-upgrade-controller#78, #103);
//   - DemoJobFailsAt in, the job passes its activeDeadlineSeconds: the
//     job controller fails it (DeadlineExceeded), SUC's job handler writes
//     JobFailed on the plan — and k3s-agent-1 stays cordoned, since SUC
//     uncordons only after a successful job.
//
// The objects are written as SUC writes them (see suctest, which the demo
// test compares them with): the Plan's status as handle_upgrade.go and
// handle_batch.go set it, the Job as job.New builds it.

// The demo's names.
const (
	DemoName      = "suc"
	DemoNamespace = "system-upgrade"
	DemoNode      = "k3s-agent-1"
	DemoPlan      = "agent-plan"
	demoServer    = "server-plan"
	demoVersion   = "v1.31.4+k3s1"
	demoOld       = "v1.30.8+k3s1"
	demoSA        = "system-upgrade"
	// DemoJobFailsAt is when the held drain's job fails.
	DemoJobFailsAt = 4 * time.Minute
	demoJobAge     = 11 * time.Minute
	demoDeadline   = int64(900)
	demoShop       = "shop"
)

// demoHash is DigestStatus's latestHash for the demo's plans: hex sha224
// of the munged version then the service account name.
func demoHash() string {
	h := sha256.New224()
	h.Write([]byte(mungeVersion(demoVersion)))
	h.Write([]byte(demoSA))
	return fmt.Sprintf("%x", h.Sum(nil))
}

// mungeVersion is plan.MungeVersion.
func mungeVersion(v string) string { return strings.ReplaceAll(v, "+", "-") }

// demoJobName is job.New's name (wrangler's SafeConcatName).
func demoJobName(plan, node, hash string) string {
	full := strings.Join([]string{"apply", plan, "on", strings.SplitN(node, ".", 2)[0], "with", hash}, "-")
	if len(full) <= 63 {
		return full
	}
	sum := sha256.Sum256([]byte(full))
	return full[:57] + "-" + fmt.Sprintf("%x", sum)[:5]
}

// Demo is SUC's demo scenario hook (coord.Demoer).
func (Driver) Demo(start time.Time) coord.Demo {
	return coord.Demo{
		Name:      DemoName,
		Summary:   "system-upgrade-controller: a drain held by a PodDisruptionBudget, then a failed job leaves a node cordoned",
		ListKinds: map[schema.GroupVersionResource]string{PlanGVR: "PlanList"},
		Steps: []coord.DemoStep{
			{At: 0, What: "the k3s cluster, SUC's plans, agent-plan's job draining k3s-agent-1 against shop/postgres's budget", Write: demoSeed},
			{At: DemoJobFailsAt, What: "the job passes its deadline; SUC writes JobFailed on agent-plan; k3s-agent-1 stays cordoned", Write: demoJobFailed},
		},
	}
}

func demoCond(typ, status, reason, message string, at time.Time) map[string]any {
	c := map[string]any{"type": typ, "status": status, "lastUpdateTime": at.UTC().Format(time.RFC3339),
		"lastTransitionTime": at.UTC().Format(time.RFC3339)}
	if reason != "" {
		c["reason"] = reason
	}
	if message != "" {
		c["message"] = message
	}
	return c
}

// demoPlanObject is one of the demo's Plans as a user writes it (k3s's
// documented server-plan and agent-plan) with its status.
func demoPlanObject(name string, applying []string, complete map[string]any, at time.Time) *unstructured.Unstructured {
	spec := map[string]any{
		"concurrency": int64(1), "cordon": true, "serviceAccountName": demoSA, "version": demoVersion,
		"upgrade": map[string]any{"image": "rancher/k3s-upgrade"},
	}
	if name == demoServer {
		spec["nodeSelector"] = map[string]any{"matchExpressions": []any{
			map[string]any{"key": "node-role.kubernetes.io/control-plane", "operator": "In", "values": []any{"true"}}}}
	} else {
		spec["nodeSelector"] = map[string]any{"matchExpressions": []any{
			map[string]any{"key": "node-role.kubernetes.io/control-plane", "operator": "DoesNotExist"}}}
		spec["drain"] = map[string]any{"force": true, "skipWaitForDeleteTimeout": int64(60)}
		spec["prepare"] = map[string]any{"image": "rancher/k3s-upgrade", "args": []any{"prepare", demoServer}}
		spec["jobActiveDeadlineSecs"] = demoDeadline
	}
	latest := mungeVersion(demoVersion)
	status := map[string]any{"latestVersion": latest, "latestHash": demoHash(), "conditions": []any{
		demoCond(CondValidated, "True", "PlanIsValid", "", at), demoCond(CondLatestResolved, "True", "Version", "", at), complete}}
	if len(applying) > 0 {
		var a []any
		for _, h := range applying {
			a = append(a, h)
		}
		status["applying"] = a
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": Group + "/" + Version, "kind": "Plan",
		"metadata": map[string]any{"namespace": DemoNamespace, "name": name,
			"creationTimestamp": at.Add(-3 * time.Hour).UTC().Format(time.RFC3339)},
		"spec": spec, "status": status,
	}}
}

// demoJob is job.New's Job for agent-plan on node, started at started.
func demoJob(node string, started time.Time) *batchv1.Job {
	backoff, deadline, ttl, one := int32(DefaultBackoffLimit), demoDeadline, int32(DefaultTTLSecondsAfterFinished), int32(1)
	hash, latest := demoHash(), mungeVersion(demoVersion)
	labels := map[string]string{
		LabelController: "system-upgrade-controller", LabelExclusive: "false",
		LabelNode: node, LabelPlan: DemoPlan, LabelVersion: latest, LabelPlanPrefix + DemoPlan: hash,
	}
	st := metav1.NewTime(started)
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: demoJobName(DemoPlan, node, hash), Namespace: DemoNamespace, Labels: labels,
			CreationTimestamp: st, Annotations: map[string]string{Group + "/ttl-seconds-after-finished": fmt.Sprint(ttl)}},
		Spec: batchv1.JobSpec{
			BackoffLimit: &backoff, ActiveDeadlineSeconds: &deadline, TTLSecondsAfterFinished: &ttl, Completions: &one, Parallelism: &one,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, NodeName: node,
					InitContainers: []corev1.Container{{Name: "drain", Image: "rancher/kubectl:v1.30.3",
						Args: []string{"drain", node, "--pod-selector", "!" + LabelController, "--ignore-daemonsets", "--delete-emptydir-data", "--force", "--skip-wait-for-delete-timeout=60"}}},
					Containers: []corev1.Container{{Name: "upgrade", Image: "rancher/k3s-upgrade:" + latest}}},
			},
		},
		Status: batchv1.JobStatus{StartTime: &st, Active: 1},
	}
}

func demoNode(name string, server, cordoned bool, start time.Time) *corev1.Node {
	labels := map[string]string{LabelHostname: name, "kubernetes.io/os": "linux", "node.kubernetes.io/instance-type": "k3s"}
	if server {
		labels["node-role.kubernetes.io/control-plane"] = "true"
		labels["node-role.kubernetes.io/master"] = "true"
		// server-plan finished here before agent-plan began.
		labels[LabelPlanPrefix+demoServer] = demoHash()
	}
	kubelet := demoOld
	if server {
		kubelet = demoVersion
	}
	var taints []corev1.Taint
	var managed []metav1.ManagedFieldsEntry
	if cordoned {
		taints = []corev1.Taint{{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}}
		// The job's drain container cordoned it half a minute after the job
		// was created (what the apiserver records: OwnCordon reads it).
		at := metav1.NewTime(start.Add(-demoJobAge + 30*time.Second).UTC().Truncate(time.Second))
		managed = []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
			Time: &at, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:spec":{"f:unschedulable":{}}}`)}}
	}
	sum := sha256.Sum256([]byte(name))
	id := fmt.Sprintf("%x", sum)
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, CreationTimestamp: metav1.NewTime(start.Add(-180 * 24 * time.Hour)), ManagedFields: managed},
		Spec:       corev1.NodeSpec{Unschedulable: cordoned, Taints: taints},
		Status: corev1.NodeStatus{
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
				Message: "kubelet is posting ready status", LastTransitionTime: metav1.NewTime(start.Add(-9 * 24 * time.Hour))}},
			NodeInfo: corev1.NodeSystemInfo{MachineID: id[:32], BootID: id[32:40] + "-" + id[40:44] + "-4" + id[45:48] + "-a" + id[49:52] + "-" + id[52:64],
				OSImage: "Ubuntu 24.04.3 LTS", KernelVersion: "6.8.0-60-generic", KubeletVersion: kubelet,
				ContainerRuntimeVersion: "containerd://1.7.23-k3s2", OperatingSystem: "linux", Architecture: "amd64"},
		},
	}
}

// demoSeed writes the cluster as the demo opens.
func demoSeed(ctx context.Context, c coord.DemoClients, now time.Time) error {
	nodes := []*corev1.Node{demoNode("k3s-server-1", true, false, now)}
	for i := 1; i <= 3; i++ {
		name := fmt.Sprintf("k3s-agent-%d", i)
		nodes = append(nodes, demoNode(name, false, name == DemoNode, now))
	}
	for _, n := range nodes {
		if _, err := c.Kube.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	started := now.Add(-demoJobAge)
	plans := c.Dynamic.Resource(PlanGVR).Namespace(DemoNamespace)
	for _, p := range []*unstructured.Unstructured{
		demoPlanObject(demoServer, nil, demoCond(CondComplete, "True", "Complete", "", now.Add(-demoJobAge-2*time.Minute)), now.Add(-demoJobAge-2*time.Minute)),
		demoPlanObject(DemoPlan, []string{DemoNode}, demoCond(CondComplete, "False", "SyncJob", "", started), started),
	} {
		if _, err := plans.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	if _, err := c.Kube.BatchV1().Jobs(DemoNamespace).Create(ctx, demoJob(DemoNode, started), metav1.CreateOptions{}); err != nil {
		return err
	}
	// The workload whose budget holds the drain: one postgres replica,
	// minAvailable 1.
	tr := true
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: demoShop, Name: "postgres-0", Labels: map[string]string{"app": "postgres"},
			CreationTimestamp: metav1.NewTime(now.Add(-20 * 24 * time.Hour)),
			OwnerReferences:   []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "postgres", UID: "postgres", Controller: &tr}}},
		Spec: corev1.PodSpec{NodeName: DemoNode, Containers: []corev1.Container{{Name: "postgres", Image: "postgres:17"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "postgres", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(now.Add(-20 * 24 * time.Hour))}}}}},
	}
	if _, err := c.Kube.CoreV1().Pods(demoShop).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return err
	}
	one := intstr.FromInt(1)
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: demoShop, Name: "postgres", Generation: 1, CreationTimestamp: metav1.NewTime(now.Add(-90 * 24 * time.Hour))},
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "postgres"}}},
		Status: policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 1, CurrentHealthy: 1, DesiredHealthy: 1, ExpectedPods: 1, DisruptionsAllowed: 0,
			Conditions: []metav1.Condition{{Type: policyv1.DisruptionAllowedCondition, Status: metav1.ConditionFalse, Reason: policyv1.InsufficientPodsReason, ObservedGeneration: 1}}},
	}
	_, err := c.Kube.PolicyV1().PodDisruptionBudgets(demoShop).Create(ctx, pdb, metav1.CreateOptions{})
	return err
}

// demoJobFailed is the job controller failing the job past its deadline,
// then SUC's handleJobs writing JobFailed on the plan (handle_batch.go);
// the node stays cordoned.
func demoJobFailed(ctx context.Context, c coord.DemoClients, now time.Time) error {
	jobs := c.Kube.BatchV1().Jobs(DemoNamespace)
	name := demoJobName(DemoPlan, DemoNode, demoHash())
	jb, err := jobs.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	t := metav1.NewTime(now)
	const reason, msg = "DeadlineExceeded", "Job was active longer than specified deadline"
	jb.Status.Active, jb.Status.Failed = 0, 1
	jb.Status.Conditions = []batchv1.JobCondition{
		{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: reason, Message: msg, LastProbeTime: t, LastTransitionTime: t},
		{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: reason, Message: msg, LastProbeTime: t, LastTransitionTime: t},
	}
	if _, err := jobs.UpdateStatus(ctx, jb, metav1.UpdateOptions{}); err != nil {
		return err
	}
	plans := c.Dynamic.Resource(PlanGVR).Namespace(DemoNamespace)
	p, err := plans.Get(ctx, DemoPlan, metav1.GetOptions{})
	if err != nil {
		return err
	}
	failed := fmt.Sprintf("Job %s/%s failed on Node %s: %s: %s", DemoNamespace, name, DemoNode, reason, msg)
	np := demoPlanObject(DemoPlan, []string{DemoNode}, demoCond(CondComplete, "False", ReasonJobFailed, failed, now), now)
	// The status handler's Validated and LatestResolved keep their times.
	conds := np.Object["status"].(map[string]any)["conditions"].([]any)
	if old, ok := p.Object["status"].(map[string]any); ok {
		if oc, ok := old["conditions"].([]any); ok && len(oc) >= 2 {
			conds[0], conds[1] = oc[0], oc[1]
		}
	}
	p.Object["status"] = np.Object["status"]
	_, err = plans.UpdateStatus(ctx, p, metav1.UpdateOptions{})
	return err
}
