// Package suctest writes Rancher system-upgrade-controller's objects as SUC
// writes them, for tests: the Plan CRD's names and printer columns, a Plan's
// status as its plan handlers set it, the Jobs its job builder creates, the
// conditions the job handler writes after a failure, and the node label it
// sets after a success. The module is not on the Go proxy; these reproduce —
// never copy — what was read at rancher/system-upgrade-controller commit
// d357e2302999662071e0467b96e94f31b5c470ba:
//
//   - CRD: pkg/crds/yaml/generated/upgrade.cattle.io_plans.yaml (names,
//     scope, additionalPrinterColumns, status subresource).
//   - Status: pkg/upgrade/handle_upgrade.go (handlePlans: the status handler
//     setting Validated/LatestResolved, the generating handler setting
//     Applying and Complete) and pkg/upgrade/plan/plan.go (DigestStatus:
//     latestHash = hex sha224 of latestVersion and serviceAccountName;
//     MungeVersion).
//   - Jobs: pkg/upgrade/job/job.go (New: name, labels, annotations,
//     backoffLimit, activeDeadlineSeconds, ttlSecondsAfterFinished,
//     parallelism, the drain or cordon init container's kubectl args).
//   - After a job: pkg/upgrade/handle_batch.go (handleJobs: Complete False
//     reason JobFailed with "Job ns/name failed on Node n: reason: message";
//     on success the node label plan.upgrade.cattle.io/<plan>=<hash> and the
//     uncordon when the plan cordons or drains).
//
// It is test support: production code must never import it.
package suctest

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/rebootwatch/rebootwatch/internal/coord/suc"
)

// PlanGVR is the Plans resource.
var PlanGVR = suc.PlanGVR

// CRDName is the Plan CRD's name.
const CRDName = "plans.upgrade.cattle.io"

// ControllerName is the controller name SUC's manifests give it (the
// upgrade.cattle.io/controller label of its jobs).
const ControllerName = "system-upgrade-controller"

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// PrinterColumns are the Plan's additionalPrinterColumns as upstream's
// kubebuilder markers generate them (v1/types.go, the generated CRD).
func PrinterColumns() []any {
	col := func(name, path string) map[string]any {
		return map[string]any{"name": name, "type": "string", "jsonPath": path}
	}
	applying := col("Applying", ".status.applying")
	applying["priority"] = int64(10)
	return []any{
		col("Image", ".spec.upgrade.image"),
		col("Channel", ".spec.channel"),
		col("Version", ".spec.version"),
		col("Complete", ".status.conditions[?(@.type=='Complete')].status"),
		col("Message", ".status.conditions[?(@.message!='')].message"),
		applying,
	}
}

// InstallCRD installs plans.upgrade.cattle.io (v1, namespaced, status
// subresource, upstream's printer columns; the schema keeps unknown fields
// so a test can also write what SUC never would) and waits until Plans can
// be listed and discovery d lists them: rebootwatch reads SUC only when
// discovery serves its Plans (suc.Served), and the apiserver's discovery
// catches up with a new CRD after its handler does.
func InstallCRD(ctx context.Context, dyn dynamic.Interface, d discovery.DiscoveryInterface) error {
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": CRDName},
		"spec": map[string]any{
			"group": "upgrade.cattle.io", "scope": "Namespaced",
			"names": map[string]any{"kind": "Plan", "listKind": "PlanList", "plural": "plans", "singular": "plan"},
			"versions": []any{map[string]any{
				"name": "v1", "served": true, "storage": true,
				"schema":                   map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
				"subresources":             map[string]any{"status": map[string]any{}},
				"additionalPrinterColumns": PrinterColumns(),
			}},
		},
	}}
	if _, err := dyn.Resource(crdGVR).Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	for {
		_, err := dyn.Resource(PlanGVR).List(ctx, metav1.ListOptions{Limit: 1})
		if err == nil {
			var served bool
			if served, err = discovered(ctx, d); served {
				return nil
			} else if err == nil {
				err = fmt.Errorf("discovery does not serve %s yet", PlanGVR.GroupVersion())
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("plans never served: %w", err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// RemoveCRD deletes plans.upgrade.cattle.io (and so every Plan) and waits
// until Plans are no longer served: a test that installed SUC on a shared
// apiserver leaves it as it found it, since SUC is read whenever it is
// served.
func RemoveCRD(ctx context.Context, dyn dynamic.Interface, d discovery.DiscoveryInterface) error {
	if err := dyn.Resource(crdGVR).Delete(ctx, CRDName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	for {
		_, err := dyn.Resource(PlanGVR).List(ctx, metav1.ListOptions{Limit: 1})
		if apierrors.IsNotFound(err) {
			if served, derr := discovered(ctx, d); !served && derr == nil {
				return nil
			} else if derr != nil {
				err = derr
			} else {
				err = fmt.Errorf("discovery still lists %s", PlanGVR.Resource)
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("plans still served: %v", err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// discovered says whether discovery d serves Plans, read by suc.Served
// itself (what rebootwatch reads); a discovery it cannot read is an error.
func discovered(ctx context.Context, d discovery.DiscoveryInterface) (bool, error) {
	served, unknown := suc.Served(ctx, d)
	if unknown != "" {
		return false, errors.New(unknown)
	}
	return served, nil
}

// Serve makes a fake clientset's discovery serve plans.upgrade.cattle.io/v1,
// as a real apiserver does once the CRD is installed (InstallCRD): SUC is
// read only when its Plans are served (suc.Served). It does nothing to a
// real client's discovery, and nothing twice.
func Serve(c kubernetes.Interface) {
	fd, ok := c.Discovery().(*fakediscovery.FakeDiscovery)
	if !ok {
		return
	}
	gv := PlanGVR.GroupVersion().String()
	for _, l := range fd.Resources {
		if l.GroupVersion == gv {
			return
		}
	}
	fd.Resources = append(fd.Resources, &metav1.APIResourceList{GroupVersion: gv, APIResources: []metav1.APIResource{
		{Name: PlanGVR.Resource, SingularName: "plan", Namespaced: true, Kind: "Plan", Verbs: metav1.Verbs{"get", "list", "watch"}},
	}})
}

// PlanSpec is what a test's Plan says (a user writes it).
type PlanSpec struct {
	Concurrency  int64
	NodeSelector map[string]string // matchLabels; nil: every node (an empty selector)
	Cordon       bool
	Drain        bool
	Version      string
	Image        string
	// Window: days, start, end, zone (nil: no window).
	Window             []string
	ServiceAccountName string
}

// Plan is a Plan as a user writes it.
func Plan(ns, name string, s PlanSpec) *unstructured.Unstructured {
	sel := map[string]any{}
	if s.NodeSelector != nil {
		ml := map[string]any{}
		for k, v := range s.NodeSelector {
			ml[k] = v
		}
		sel["matchLabels"] = ml
	}
	image := s.Image
	if image == "" {
		image = "rancher/k3s-upgrade"
	}
	spec := map[string]any{
		"concurrency": s.Concurrency, "nodeSelector": sel, "version": s.Version,
		"upgrade": map[string]any{"image": image},
	}
	if s.ServiceAccountName != "" {
		spec["serviceAccountName"] = s.ServiceAccountName
	}
	if s.Cordon {
		spec["cordon"] = true
	}
	if s.Drain {
		spec["drain"] = map[string]any{"force": true}
	}
	if len(s.Window) == 4 {
		var days []any
		for _, d := range strings.Split(s.Window[0], ",") {
			days = append(days, d)
		}
		spec["window"] = map[string]any{"days": days, "startTime": s.Window[1], "endTime": s.Window[2], "timeZone": s.Window[3]}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "upgrade.cattle.io/v1", "kind": "Plan",
		"metadata": map[string]any{"namespace": ns, "name": name},
		"spec":     spec,
	}}
}

// MungeVersion is plan.MungeVersion: "+" becomes "-".
func MungeVersion(v string) string { return strings.ReplaceAll(v, "+", "-") }

// LatestHash is DigestStatus's hash for a plan without secrets or a digest
// annotation: hex sha224 of latestVersion then serviceAccountName.
func LatestHash(latestVersion, serviceAccountName string) string {
	h := sha256.New224()
	h.Write([]byte(latestVersion))
	h.Write([]byte(serviceAccountName))
	return fmt.Sprintf("%x", h.Sum(nil))
}

// Cond is a wrangler GenericCondition as SUC's condition package writes it
// (lastUpdateTime always, lastTransitionTime on a status change).
func Cond(typ, status, reason, message string, at time.Time) map[string]any {
	c := map[string]any{"type": typ, "status": status, "lastUpdateTime": at.UTC().Format(time.RFC3339)}
	if reason != "" {
		c["reason"] = reason
	}
	if message != "" {
		c["message"] = message
	}
	c["lastTransitionTime"] = at.UTC().Format(time.RFC3339)
	return c
}

// Status is what a status is made of.
type Status struct {
	Applying   []string
	Conditions []map[string]any
}

// Synced is the status after the status handler validated and resolved the
// plan from spec.version and the generating handler synced jobs on applying
// (Complete False, reason SyncJob), or found no node left (Complete True,
// reason Complete) when applying is empty.
func Synced(version, serviceAccountName string, applying []string, at time.Time) map[string]any {
	complete := Cond("Complete", "False", "SyncJob", "", at)
	if len(applying) == 0 {
		complete = Cond("Complete", "True", "Complete", "", at)
	}
	return StatusWith(version, serviceAccountName, applying,
		Cond("Validated", "True", "PlanIsValid", "", at), Cond("LatestResolved", "True", "Version", "", at), complete)
}

// StatusWith is a status with these conditions.
func StatusWith(version, serviceAccountName string, applying []string, conds ...map[string]any) map[string]any {
	latest := MungeVersion(version)
	st := map[string]any{"latestVersion": latest, "latestHash": LatestHash(latest, serviceAccountName)}
	var cs []any
	for _, c := range conds {
		cs = append(cs, c)
	}
	st["conditions"] = cs
	if len(applying) > 0 {
		var a []any
		for _, h := range applying {
			a = append(a, h)
		}
		st["applying"] = a
	}
	return st
}

// Waiting is the status while the plan waits outside its window
// (handle_upgrade.go: Complete False, reason Waiting, ErrOutsideWindow).
func Waiting(version, serviceAccountName string, at time.Time) map[string]any {
	return StatusWith(version, serviceAccountName, nil,
		Cond("Validated", "True", "PlanIsValid", "", at), Cond("LatestResolved", "True", "Version", "", at),
		Cond("Complete", "False", "Waiting", "current time is not within configured window", at))
}

// JobFailedMessage is handle_batch.go's message for a failed job.
func JobFailedMessage(ns, job, node, reason, message string) string {
	return fmt.Sprintf("Job %s/%s failed on Node %s: %s: %s", ns, job, node, reason, message)
}

// JobName is job.New's name: SafeConcatName("apply", plan, "on",
// shortNodeName, "with", latestHash) — joined with "-", and above 63
// characters cut to 57 plus "-" and 5 hex digits of a sha256 of the whole
// (wrangler's name.SafeConcatName).
func JobName(plan, node, hash string) string {
	short := strings.SplitN(node, ".", 2)[0]
	full := strings.Join([]string{"apply", plan, "on", short, "with", hash}, "-")
	if len(full) <= 63 {
		return full
	}
	sum := sha256.Sum256([]byte(full))
	return full[:57] + "-" + fmt.Sprintf("%x", sum)[:5]
}

// Job is the Job job.New creates for a node (only what rebootwatch reads
// and what the apiserver requires; the pod template carries the drain or
// cordon init container's kubectl args as SUC writes them).
func Job(ns, plan, node, version, hash string, drain, cordon bool) *batchv1.Job {
	backoff, deadline, ttl := int32(2), int64(600), int32(900)
	one, paused := int32(1), int32(1)
	labels := map[string]string{
		"upgrade.cattle.io/controller":   ControllerName,
		"upgrade.cattle.io/exclusive":    "false",
		"upgrade.cattle.io/node":         node,
		"upgrade.cattle.io/plan":         plan,
		"upgrade.cattle.io/version":      version,
		"plan.upgrade.cattle.io/" + plan: hash,
	}
	var inits []corev1.Container
	switch {
	case drain:
		inits = append(inits, corev1.Container{Name: "drain", Image: "rancher/kubectl:v1.30.3",
			Args: []string{"drain", node, "--pod-selector", "!upgrade.cattle.io/controller", "--ignore-daemonsets", "--delete-emptydir-data", "--force"}})
	case cordon:
		inits = append(inits, corev1.Container{Name: "cordon", Image: "rancher/kubectl:v1.30.3", Args: []string{"cordon", node}})
	}
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: JobName(plan, node, hash), Namespace: ns, Labels: labels,
			Annotations: map[string]string{"upgrade.cattle.io/ttl-seconds-after-finished": "900"}},
		Spec: batchv1.JobSpec{
			BackoffLimit: &backoff, ActiveDeadlineSeconds: &deadline, TTLSecondsAfterFinished: &ttl,
			Completions: &one, Parallelism: &paused,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, InitContainers: inits,
					Containers: []corev1.Container{{Name: "upgrade", Image: "rancher/k3s-upgrade:" + version}}},
			},
		},
	}
}

// Create creates a Plan and then writes its status through the status
// subresource, as SUC's handlers do; status nil leaves it unprocessed.
func Create(ctx context.Context, dyn dynamic.Interface, plan *unstructured.Unstructured, status map[string]any) (*unstructured.Unstructured, error) {
	got, err := dyn.Resource(PlanGVR).Namespace(plan.GetNamespace()).Create(ctx, plan, metav1.CreateOptions{})
	if err != nil || status == nil {
		return got, err
	}
	return SetStatus(ctx, dyn, got, status)
}

// SetStatus replaces a Plan's status through the status subresource.
func SetStatus(ctx context.Context, dyn dynamic.Interface, plan *unstructured.Unstructured, status map[string]any) (*unstructured.Unstructured, error) {
	plan = plan.DeepCopy()
	plan.Object["status"] = status
	return dyn.Resource(PlanGVR).Namespace(plan.GetNamespace()).UpdateStatus(ctx, plan, metav1.UpdateOptions{})
}

// CreateJob creates the job and sets its status: started at started; when
// failedAt is set, Failed as Kubernetes' job controller writes it after
// the backoff limit (reason BackoffLimitExceeded, 3 failed pods).
func CreateJob(ctx context.Context, c kubernetes.Interface, job *batchv1.Job, started, failedAt time.Time) (*batchv1.Job, error) {
	got, err := c.BatchV1().Jobs(job.Namespace).Create(ctx, job, metav1.CreateOptions{})
	if err != nil {
		return nil, err
	}
	st := metav1.NewTime(started)
	got.Status.StartTime = &st
	if failedAt.IsZero() {
		got.Status.Active = 1
	} else {
		ft := metav1.NewTime(failedAt)
		got.Status.Failed = 3
		got.Status.Conditions = []batchv1.JobCondition{
			{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit", LastProbeTime: ft, LastTransitionTime: ft},
			{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit", LastProbeTime: ft, LastTransitionTime: ft},
		}
	}
	return c.BatchV1().Jobs(job.Namespace).UpdateStatus(ctx, got, metav1.UpdateOptions{})
}

// WedgeNode is the node Wedge leaves cordoned by a failed job.
const WedgeNode = "suc-wedge-1"

// KubectlManager is the field manager Wedge's cordon is written under: the
// drain init container's kubectl (job.go: kubectl drain <node>), which
// cordons the node from the job's pod after the job was created. The
// apiserver records kubectl's cordon under "kubectl" (its user agent's
// name; seen with the real kubectl in suc's TestReadAgainstAPIServer),
// whoever runs it: a person's kubectl cordon leaves the same manager, and
// only the time tells them apart.
const KubectlManager = "kubectl"

// Wedge writes SUC's headline wedge into a cluster whose Plan resource is
// served (InstallCRD, or a fake dynamic client knowing PlanList): a node
// registered as the kubelet does, the plan syncing it, its job created,
// the node cordoned by the job's drain container (KubectlManager) after
// that, and the job failed past its backoff limit after the cordon. It
// returns the node and the first blocker kind it must show.
func Wedge(ctx context.Context, c kubernetes.Interface, dyn dynamic.Interface, ns string, now time.Time) (string, string, error) {
	Serve(c)
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: WedgeNode, Labels: map[string]string{"kubernetes.io/hostname": WedgeNode, "kubernetes.io/os": "linux"}}}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))}}
	if _, err := c.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
		return "", "", err
	}
	spec := PlanSpec{Concurrency: 1, Drain: true, Version: "v1.31.4+k3s1", NodeSelector: map[string]string{"kubernetes.io/hostname": WedgeNode}}
	latest := MungeVersion(spec.Version)
	jb := Job(ns, "wedge", WedgeNode, latest, LatestHash(latest, ""), true, false)
	msg := JobFailedMessage(ns, jb.Name, WedgeNode, "BackoffLimitExceeded", "Job has reached the specified backoff limit")
	if _, err := Create(ctx, dyn, Plan(ns, "wedge", spec), StatusWith(spec.Version, "", []string{WedgeNode},
		Cond("Validated", "True", "PlanIsValid", "", now), Cond("LatestResolved", "True", "Version", "", now),
		Cond("Complete", "False", "JobFailed", msg, now))); err != nil {
		return "", "", err
	}
	if _, err := CreateJob(ctx, c, jb, now.Add(-20*time.Minute), time.Time{}); err != nil {
		return "", "", err
	}
	if err := CordonAs(ctx, c, KubectlManager, WedgeNode, true); err != nil {
		return "", "", err
	}
	if _, err := FailJob(ctx, c, ns, jb.Name, time.Now()); err != nil {
		return "", "", err
	}
	return WedgeNode, "job-failed", nil
}

// CordonAs sets node's spec.unschedulable with an Update under field
// manager (a real apiserver then records who cordoned it and when, in the
// node's managedFields).
func CordonAs(ctx context.Context, c kubernetes.Interface, manager, node string, cordon bool) error {
	n, err := c.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return err
	}
	n.Spec.Unschedulable = cordon
	_, err = c.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{FieldManager: manager})
	return err
}

// FailJob is Kubernetes' job controller failing a running job past its
// backoff limit at failedAt (the conditions CreateJob writes).
func FailJob(ctx context.Context, c kubernetes.Interface, ns, name string, failedAt time.Time) (*batchv1.Job, error) {
	got, err := c.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	ft := metav1.NewTime(failedAt)
	got.Status.Active, got.Status.Failed = 0, 3
	got.Status.Conditions = []batchv1.JobCondition{
		{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit", LastProbeTime: ft, LastTransitionTime: ft},
		{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit", LastProbeTime: ft, LastTransitionTime: ft},
	}
	return c.BatchV1().Jobs(ns).UpdateStatus(ctx, got, metav1.UpdateOptions{})
}
