// Package suc is Rancher's system-upgrade-controller (SUC; k3s, RKE2,
// Rancher, Harvester) as a reboot coordinator: the fields of its Plans and
// Jobs that rebootwatch reads (declared here: the module is not on the Go
// proxy), their parse from hostile unstructured objects, the Plan's slots
// (status.applying[] under spec.concurrency), each node's place in a plan's
// cycle, the blockers (job-failed, reboot-window, drain, plan not validated
// or not resolved, stuck-cordon, a slot held by a node that no longer
// exists), the uncordon it allows (only of a cordon one of its own jobs
// wrote, OwnCordon: DESIGN §6 rule 9), and its one-shot read.
//
// Read from rancher/system-upgrade-controller at commit
// d357e2302999662071e0467b96e94f31b5c470ba (v0.20.1-22-gd357e23):
// pkg/apis/upgrade.cattle.io/v1/types.go, pkg/apis/upgrade.cattle.io/constants.go,
// pkg/upgrade/handle_upgrade.go, handle_batch.go, pkg/upgrade/plan/plan.go,
// pkg/upgrade/job/job.go and pkg/upgrade/node/node.go (docs/coordinators-suc-fluo.md).
//
// It must never write a Plan or a Job (SUC owns them); take a Job for SUC's
// that SUC would not select (its controller label, a Plan's namespace);
// offer the uncordon of a cordon it cannot attribute to such a job, or
// while Jobs are unread; judge a slot holder a ghost from a node list that
// is not fresh and complete; read a field of the
// wrong type as its zero value (bad data is unknown, never free); or do I/O
// outside source.go and demo.go (whose demo scenario writes to the embedded
// demo cluster only).
package suc

import (
	"time"

	"github.com/rebootwatch/rebootwatch/model"
)

// Kind is SUC's lock kind and Source the model source that reads it.
const (
	Kind   model.LockKind   = "suc"
	Source model.SourceName = "suc"
)

// The API SUC serves and the names it writes (constants.go).
const (
	Group    = "upgrade.cattle.io"
	Version  = "v1"
	Resource = "plans"
	// LabelController, LabelNode, LabelPlan, LabelVersion and LabelExclusive
	// are on every Job SUC creates (job.New).
	LabelController = Group + "/controller"
	LabelNode       = Group + "/node"
	LabelPlan       = Group + "/plan"
	LabelVersion    = Group + "/version"
	LabelExclusive  = Group + "/exclusive"
	// LabelPlanPrefix + plan name is the node label SUC sets to the plan's
	// latestHash once the node's job completed ("disabled" opts out).
	LabelPlanPrefix = "plan." + Group + "/"
	// Disabled is the plan label value that opts a node out.
	Disabled = "disabled"
	// LabelHostname is the label applying[] entries name (node.Hostname).
	LabelHostname = "kubernetes.io/hostname"
)

// The Plan conditions (v1/types.go) and the reasons rebootwatch reads.
const (
	CondLatestResolved = "LatestResolved"
	CondValidated      = "Validated"
	CondComplete       = "Complete"
	// ReasonWaiting: Complete is False with this reason while the plan
	// waits outside its window (handle_upgrade.go).
	ReasonWaiting = "Waiting"
	// ReasonJobFailed: Complete is False with this reason after a job
	// failed (handle_batch.go).
	ReasonJobFailed = "JobFailed"
)

// KubectlManagers are the managedFields managers under which the
// apiserver records the cordon of SUC's job: its drain or cordon init
// container runs kubectl (job.go: rancher/kubectl, or the Windows kubectl
// image), whose cordon is a strategic-merge Patch with no field manager
// (k8s.io/kubectl/pkg/drain CordonHelper), so the manager is its user
// agent's command name — the same a person's kubectl cordon leaves.
var KubectlManagers = map[string]bool{"kubectl": true, "kubectl.exe": true}

// SUC's job defaults (job.go), used when a Job does not say.
const (
	DefaultBackoffLimit            = 2
	DefaultActiveDeadlineSeconds   = 600
	DefaultTTLSecondsAfterFinished = 900
)

// Blocker kinds SUC adds to model's (their strings are public like model's).
const (
	BlockerJobFailed    model.BlockerKind = "job-failed"
	BlockerNotValidated model.BlockerKind = "plan-not-validated"
	BlockerNotResolved  model.BlockerKind = "plan-not-resolved"
)

// Plan is the part of an upgrade.cattle.io/v1 Plan rebootwatch reads.
type Plan struct {
	Namespace, Name, UID, ResourceVersion string
	Created                               time.Time
	Spec                                  PlanSpec
	Status                                PlanStatus
	// Bad lists the fields that were not of the type SUC writes: what they
	// bear on is unknown.
	Bad []string
}

// Key is namespace/name.
func (p *Plan) Key() string { return p.Namespace + "/" + p.Name }

// PlanSpec is the part of spec read.
type PlanSpec struct {
	// Concurrency is spec.concurrency: at most this many nodes in applying.
	Concurrency int64
	// NodeSelector is spec.nodeSelector. nil (absent) selects no node, as
	// SUC's plan.NodeSelector reads it (LabelSelectorAsSelector(nil) is
	// labels.Nothing); an empty one selects every node.
	NodeSelector *model.LabelSelector
	Cordon       bool
	// Drain is set when spec.drain is (the node is then cordoned and
	// drained by the job's drain init container).
	Drain        bool
	DrainTimeout string
	Exclusive    bool
	Window       *Window
	Version      string
	Channel      string
	Image        string
	// JobActiveDeadlineSecs is spec.jobActiveDeadlineSecs (nil: SUC's default).
	JobActiveDeadlineSecs *int64
	PostCompleteDelay     time.Duration
}

// Window is spec.window (kured's timewindow fields).
type Window struct {
	Days                         []string
	StartTime, EndTime, TimeZone string
}

// PlanStatus is the part of status read.
type PlanStatus struct {
	Applying      []string
	LatestVersion string
	LatestHash    string
	Conditions    []Condition
}

// Condition is a wrangler GenericCondition (Plan) or a Job condition.
type Condition struct {
	Type, Status, Reason, Message string
	LastUpdate, LastTransition    time.Time
}

// Cond returns the condition of that type.
func (s PlanStatus) Cond(t string) (Condition, bool) {
	for _, c := range s.Conditions {
		if c.Type == t {
			return c, true
		}
	}
	return Condition{}, false
}

// Job is the part of a batch/v1 Job SUC created that rebootwatch reads.
type Job struct {
	Namespace, Name string
	// Plan, Node, Version and PlanHash are its labels (upgrade.cattle.io/plan,
	// /node, /version, plan.upgrade.cattle.io/<plan>); Controller is
	// upgrade.cattle.io/controller.
	Plan, Node, Version, PlanHash, Controller string
	Created                                   time.Time
	Started                                   time.Time
	Active                                    int
	Failed                                    int
	BackoffLimit                              *int32
	ActiveDeadlineSeconds                     *int64
	Conditions                                []Condition
}

// Key is namespace/name.
func (j *Job) Key() string { return j.Namespace + "/" + j.Name }

// Cond returns the True condition of that type (Complete, Failed).
func (j *Job) Cond(t string) (Condition, bool) {
	for _, c := range j.Conditions {
		if c.Type == t && c.Status == "True" {
			return c, true
		}
	}
	return Condition{}, false
}
