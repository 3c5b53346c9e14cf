package flatcar_test

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/rebootwatch/rebootwatch/internal/coord"
	"github.com/rebootwatch/rebootwatch/internal/coord/flatcar"
	ft "github.com/rebootwatch/rebootwatch/internal/coord/flatcar/flatcartest"
	"github.com/rebootwatch/rebootwatch/model"
)

var now = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC) // a Tuesday

const check = "example.com/before-reboot-test"

// fnode builds a node through FLUO's own steps; writes gives the
// managedFields times of the keys, readySince the Ready transition.
func fnode(name string, readySince time.Time, writes map[string]time.Time, steps ...ft.Step) coord.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	ft.Apply(n, append([]ft.Step{ft.AgentStarted}, steps...)...)
	c := coord.NodeFrom(n, nil)
	c.Ready = coord.Ready{Status: "True", Since: readySince}
	for k, at := range writes {
		if c.Writes == nil {
			c.Writes = map[string]coord.FieldWrite{}
		}
		mgr := "update-operator"
		if strings.Contains(k, "in-progress") {
			mgr = "update-agent"
		}
		c.Writes[k] = coord.FieldWrite{Manager: mgr, At: at}
	}
	return c
}

// agentCordoned is c as the apiserver records FLUO's agent's cordon: one
// manager, update-agent, owns agent-made-unschedulable and
// spec.unschedulable, last written at.
func agentCordoned(c coord.Node, at time.Time) coord.Node {
	if c.Writes == nil {
		c.Writes = map[string]coord.FieldWrite{}
	}
	c.Writes["annotation:"+ft.AnnAgentUnschedulable] = coord.FieldWrite{Manager: "update-agent", At: at}
	c.UnschedulableSetBy, c.UnschedulableSetAt = "update-agent", at
	return c
}

// noAgentPod: n's pods were read and no update-agent pod is there.
func noAgentPod(n string) map[string]flatcar.AgentPod {
	return map[string]flatcar.AgentPod{n: {Known: true}}
}

func settings(args ...string) flatcar.Settings {
	return flatcar.SettingsFrom("reboot-coordinator", "flatcar-linux-update-operator", &ft.Deployment("reboot-coordinator", args).Spec.Template.Spec.Containers[0])
}

func find(t *testing.T, bs []model.Blocker, node string, k model.BlockerKind) model.Blocker {
	t.Helper()
	for _, b := range bs {
		if b.Node == node && b.Kind == k {
			return b
		}
	}
	t.Fatalf("no %s blocker for %q in %+v", k, node, bs)
	return model.Blocker{}
}

const (
	inProgress = "annotation:" + ft.AnnRebootInProgress
	beforeLbl  = "label:" + ft.LabelBeforeReboot
	afterLbl   = "label:" + ft.LabelAfterReboot
)

var rebooting = []ft.Step{ft.UpdateDownloaded("4152.2.0"), ft.MarkBefore(), ft.CheckBeforePassed(), ft.AgentRebooting, ft.Cordon}

// The headline wedge (flatcar/Flatcar#2421): the node rebooted — Ready
// again after the agent set reboot-in-progress — but the agent never ran
// again to clear it. FLUO's one slot stays taken; the next node waits on
// it and that stalls; the node may be uncordoned.
func TestAgentStoppedAfterReboot(t *testing.T) {
	n1 := agentCordoned(fnode("n1", now.Add(-20*time.Minute), map[string]time.Time{inProgress: now.Add(-30 * time.Minute)}, rebooting...), now.Add(-30*time.Minute))
	n2 := fnode("n2", now.Add(-time.Hour), nil, ft.UpdateDownloaded("4152.2.0"))
	// First the agent pod is not read: the judging asks for it and offers
	// nothing on the strength of an unread pod.
	r := flatcar.Judge(flatcar.Input{Nodes: []coord.Node{n1, n2}, Settings: settings()}, now)
	if len(r.Uncordon) != 0 || len(r.NeedAgentPod) != 1 || r.NeedAgentPod[0] != "n1" {
		t.Errorf("agent pod unread: uncordon %v, need %v", r.Uncordon, r.NeedAgentPod)
	}
	r = flatcar.Judge(flatcar.Input{Nodes: []coord.Node{n1, n2}, Settings: settings(), AgentPods: noAgentPod("n1")}, now)
	b := find(t, r.Blockers, "n1", flatcar.BlockerAgentStopped)
	if !b.Stalls || !strings.Contains(b.Reason, "after update-agent set reboot-in-progress") {
		t.Errorf("agent-stopped = %+v", b)
	}
	if len(r.Uncordon) != 1 || r.Uncordon[0] != "n1" {
		t.Errorf("uncordon = %v", r.Uncordon)
	}
	if s := r.Slots; !s.Known || len(s.Held) != 1 || s.Held[0].Node != "n1" {
		t.Errorf("slots = %+v", s)
	}
	lk := find(t, r.Blockers, "n2", model.BlockerLock)
	if !lk.Stalls || !strings.Contains(lk.Reason, "agent did not run") {
		t.Errorf("n2 lock = %+v", lk)
	}
	// The same node not yet rebooted (Ready since before the write) is
	// draining, not wedged; within the agent's grace it is not either.
	n1 = fnode("n1", now.Add(-time.Hour), map[string]time.Time{inProgress: now.Add(-30 * time.Minute)}, rebooting...)
	r = flatcar.Judge(flatcar.Input{Nodes: []coord.Node{n1}, Settings: settings()}, now)
	if len(r.Blockers) != 0 || r.Nodes[0].Phase != model.PhaseDraining {
		t.Errorf("draining node: %+v, %+v", r.Blockers, r.Nodes)
	}
	n1 = fnode("n1", now.Add(-time.Minute), map[string]time.Time{inProgress: now.Add(-30 * time.Minute)}, rebooting...)
	if r = flatcar.Judge(flatcar.Input{Nodes: []coord.Node{n1}, Settings: settings()}, now); len(r.Blockers) != 0 {
		t.Errorf("within the agent's grace: %+v", r.Blockers)
	}
	// No record of when reboot-in-progress was set: cannot tell, no claim;
	// unless the caller saw the boot id change.
	n1 = fnode("n1", now.Add(-20*time.Minute), nil, rebooting...)
	if r = flatcar.Judge(flatcar.Input{Nodes: []coord.Node{n1}, Settings: settings()}, now); len(r.Blockers) != 0 || !strings.Contains(r.Nodes[0].Step, "cannot tell") {
		t.Errorf("no write record: %+v %+v", r.Blockers, r.Nodes)
	}
	r = flatcar.Judge(flatcar.Input{Nodes: []coord.Node{n1}, Settings: settings(), Rebooted: map[string]bool{"n1": true}}, now)
	find(t, r.Blockers, "n1", flatcar.BlockerAgentStopped)
}

// A before-reboot check still unset names its annotation; past the bound
// it stalls the fleet.
func TestCheckUnset(t *testing.T) {
	s := settings("--before-reboot-annotations="+check+",example.com/second", "-after-reboot-annotations", "example.com/after")
	if len(s.Before) != 2 || len(s.After) != 1 || s.Unknown != "" {
		t.Fatalf("settings = %+v", s)
	}
	n1 := fnode("n1", now.Add(-time.Hour), map[string]time.Time{beforeLbl: now.Add(-20 * time.Minute)},
		ft.UpdateDownloaded("4152.2.0"), ft.MarkBefore(s.Before...), ft.Annotate("example.com/second", "true"))
	r := flatcar.Judge(flatcar.Input{Nodes: []coord.Node{n1}, Settings: s}, now)
	b := find(t, r.Blockers, "n1", flatcar.BlockerRebootCheck)
	if !b.Stalls || !strings.Contains(b.Reason, check+" (unset)") || strings.Contains(b.Reason, "second") {
		t.Errorf("reboot-check = %+v", b)
	}
	// After the reboot.
	n1 = fnode("n1", now.Add(-time.Hour), map[string]time.Time{afterLbl: now.Add(-time.Minute)},
		ft.UpdateDownloaded("4152.2.0"), ft.CheckBeforePassed(), ft.AgentStarted, ft.MarkAfter(s.After...), ft.Annotate("example.com/after", "false"))
	r = flatcar.Judge(flatcar.Input{Nodes: []coord.Node{n1}, Settings: s}, now)
	b = find(t, r.Blockers, "n1", flatcar.BlockerRebootCheck)
	if b.Stalls || !strings.Contains(b.Reason, `example.com/after="false"`) {
		t.Errorf("after-reboot check = %+v", b)
	}
	// Settings unread: which annotations is unknown, never "none".
	r = flatcar.Judge(flatcar.Input{Nodes: []coord.Node{n1}, SettingsUnread: "forbidden: deployments.apps"}, now)
	if b = find(t, r.Blockers, "n1", flatcar.BlockerRebootCheck); !strings.Contains(b.Reason, "unknown (forbidden") {
		t.Errorf("unread settings = %q", b.Reason)
	}
}

func TestPausedAndWindow(t *testing.T) {
	n1 := fnode("n1", now.Add(-time.Hour), nil, ft.UpdateDownloaded("4152.2.0"), ft.Annotate(ft.AnnRebootPaused, "true"))
	n2 := fnode("n2", now.Add(-time.Hour), nil, ft.UpdateDownloaded("4152.2.0"))
	s := settings("--reboot-window-start=Sun 22:00", "--reboot-window-length=2h")
	r := flatcar.Judge(flatcar.Input{Nodes: []coord.Node{n1, n2}, Settings: s}, now)
	find(t, r.Blockers, "n1", flatcar.BlockerPaused)
	w := find(t, r.Blockers, "n2", model.BlockerWindow)
	if want := time.Date(2026, 12, 6, 22, 0, 0, 0, time.UTC); !w.Until.Equal(want) {
		t.Errorf("window until %v, want %v", w.Until, want)
	}
	// Inside a daily window: no window blocker, a free slot.
	s = settings("--reboot-window-start=11:30", "--reboot-window-length=1h")
	if r = flatcar.Judge(flatcar.Input{Nodes: []coord.Node{n2}, Settings: s}, now); len(r.Blockers) != 0 {
		t.Errorf("inside the window: %+v", r.Blockers)
	}
}

// A rebooted node the agent cordoned, done, still cordoned.
func TestLeftCordoned(t *testing.T) {
	n1 := agentCordoned(fnode("n1", now.Add(-time.Hour), nil, append(rebooting, ft.AgentStarted, ft.MarkAfter(), ft.CheckAfterPassed())...), now.Add(-2*time.Hour))
	r := flatcar.Judge(flatcar.Input{Nodes: []coord.Node{n1}, Settings: settings(), AgentPods: noAgentPod("n1")}, now)
	b := find(t, r.Blockers, "n1", model.BlockerCordon)
	if b.Action != model.ActionUncordon || r.Nodes[0].Phase != model.PhaseDone {
		t.Errorf("stuck-cordon = %+v, phase %s", b, r.Nodes[0].Phase)
	}
	// A node cordoned by someone else (agent-made-unschedulable absent).
	n2 := fnode("n2", now.Add(-time.Hour), nil, ft.Cordon)
	if r = flatcar.Judge(flatcar.Input{Nodes: []coord.Node{n2}, Settings: settings()}, now); len(r.Uncordon) != 0 {
		t.Errorf("uncordon offered for a node the agent did not cordon: %v", r.Uncordon)
	}
}

// Issue 32 §3: agent-made-unschedulable=true left over from a cycle that
// finished two days ago, then an administrator's kubectl cordon now: the
// cordon is kubectl's, not FLUO's agent's, and is never offered. Before
// the fix it was "still cordoned by FLUO's agent" with the uncordon.
func TestStaleAnnotationThenHandCordon(t *testing.T) {
	done := append(append([]ft.Step{}, rebooting...), ft.AgentStarted, ft.MarkAfter(), ft.CheckAfterPassed())
	n1 := agentCordoned(fnode("n1", now.Add(-47*time.Hour), nil, done...), now.Add(-48*time.Hour))
	n1.UnschedulableSetBy, n1.UnschedulableSetAt = "kubectl-cordon", now.Add(-time.Minute)
	r := flatcar.Judge(flatcar.Input{Nodes: []coord.Node{n1}, Settings: settings(), AgentPods: noAgentPod("n1")}, now)
	if len(r.Uncordon) != 0 {
		t.Fatalf("a hand cordon after a stale agent-made-unschedulable offered for uncordon: %v", r.Uncordon)
	}
	why := r.NotOwned["n1"]
	if !strings.Contains(why, "cordoned by kubectl-cordon at 2026-12-01T11:59:00Z, not by update-agent") {
		t.Errorf("not owned = %q", why)
	}
	if r.Nodes[0].Phase == model.PhaseDone {
		t.Errorf("a hand-cordoned node is %s %q: it is in no FLUO cycle", r.Nodes[0].Phase, r.Nodes[0].Step)
	}
	// After rebootwatch's own uncordon (which leaves the annotation), a
	// later hand cordon: the same.
	n1.UnschedulableSetBy = "kubectl-cordon"
	if r := flatcar.Judge(flatcar.Input{Nodes: []coord.Node{n1}, Settings: settings(), AgentPods: noAgentPod("n1")}, now); len(r.Uncordon) != 0 {
		t.Errorf("offered again after rebootwatch's uncordon: %v", r.Uncordon)
	}
	// Who cordoned it cannot be read: not offered either.
	n1.UnschedulableSetBy, n1.UnschedulableSetAt = "", time.Time{}
	if r := flatcar.Judge(flatcar.Input{Nodes: []coord.Node{n1}, Settings: settings(), AgentPods: noAgentPod("n1")}, now); len(r.Uncordon) != 0 || !strings.Contains(r.NotOwned["n1"], "cannot be read") {
		t.Errorf("unattributed cordon: %v %q", r.Uncordon, r.NotOwned["n1"])
	}
}

// Issue 32 §3: the agent pod has been Running and Ready since the reboot:
// never "its update-agent has not run since the reboot", and no uncordon
// (the agent runs and uncordons the node itself). Its pod not read: the
// kind is unknown (unread), and no uncordon either.
func TestAgentPodRunningSinceReboot(t *testing.T) {
	n1 := agentCordoned(fnode("n1", now.Add(-20*time.Minute), map[string]time.Time{inProgress: now.Add(-30 * time.Minute)}, rebooting...), now.Add(-30*time.Minute))
	pod := flatcar.AgentPod{Known: true, Name: "reboot-coordinator/flatcar-linux-update-agent-x7k2p", Running: true,
		Since: now.Add(-19 * time.Minute), Ready: true, ReadySince: now.Add(-19 * time.Minute)}
	r := flatcar.Judge(flatcar.Input{Nodes: []coord.Node{n1}, Settings: settings(), AgentPods: map[string]flatcar.AgentPod{"n1": pod}}, now)
	b := find(t, r.Blockers, "n1", flatcar.BlockerAgentStopped)
	if strings.Contains(b.Reason, "has not run") || !strings.Contains(b.Reason, "Running and Ready since 2026-12-01T11:41:00Z") {
		t.Errorf("agent-stopped with its agent running = %q", b.Reason)
	}
	if len(r.Uncordon) != 0 || !strings.Contains(r.NotOwned["n1"], "the agent runs") {
		t.Errorf("uncordon %v while its agent runs (%q)", r.Uncordon, r.NotOwned["n1"])
	}
	r = flatcar.Judge(flatcar.Input{Nodes: []coord.Node{n1}, Settings: settings(),
		AgentPods: map[string]flatcar.AgentPod{"n1": {Why: "pods forbidden: pods is forbidden"}}}, now)
	if len(r.Uncordon) != 0 || !strings.Contains(r.Unknown, "update-agent pods not read (n1: pods forbidden") {
		t.Errorf("agent pod unread: uncordon %v, unknown %q", r.Uncordon, r.Unknown)
	}
}

// A slot holder whose kubelet went silent.
func TestHolderLost(t *testing.T) {
	n1 := fnode("n1", time.Time{}, map[string]time.Time{inProgress: now.Add(-2 * time.Hour)}, rebooting...)
	n1.Ready = coord.Ready{Status: "Unknown", Since: now.Add(-time.Hour), Reason: "NodeStatusUnknown"}
	r := flatcar.Judge(flatcar.Input{Nodes: []coord.Node{n1}, Settings: settings()}, now)
	if b := find(t, r.Blockers, "n1", model.BlockerSlowReboot); !b.Stalls {
		t.Errorf("lost holder = %+v", b)
	}
}

func TestNodesUnread(t *testing.T) {
	r := flatcar.Judge(flatcar.Input{NodesUnread: "stale"}, now)
	if r.Unknown == "" || r.Slots.Known || len(r.Blockers) != 0 {
		t.Errorf("report from unread nodes = %+v", r)
	}
}

func TestSettingsFrom(t *testing.T) {
	for _, c := range []struct {
		name        string
		args        []string
		env         []corev1.EnvVar
		before      []string
		window      bool
		unknownWith string
	}{
		{name: "none"},
		{name: "double dash space", args: []string{"--before-reboot-annotations", "a,b"}, before: []string{"a", "b"}},
		{name: "last wins", args: []string{"-before-reboot-annotations=a", "-before-reboot-annotations=b"}, before: []string{"b"}},
		{name: "env", env: []corev1.EnvVar{{Name: "UPDATE_OPERATOR_BEFORE_REBOOT_ANNOTATIONS", Value: "x"}}, before: []string{"x"}},
		{name: "flag beats env", args: []string{"--before-reboot-annotations=a"}, env: []corev1.EnvVar{{Name: "UPDATE_OPERATOR_BEFORE_REBOOT_ANNOTATIONS", Value: "x"}}, before: []string{"a"}},
		{name: "klog flags", args: []string{"-v", "4", "--logtostderr", "--before-reboot-annotations=a"}, before: []string{"a"}},
		{name: "window", args: []string{"--reboot-window-start", "mon 14:00", "--reboot-window-length", "1h30m"}, window: true},
		{name: "window start only", args: []string{"--reboot-window-start", "14:00"}},
		{name: "bad window", args: []string{"--reboot-window-start", "14:00", "--reboot-window-length", "25h"}, unknownWith: "exceed period"},
		{name: "unknown flag", args: []string{"--max-rebooting-nodes=2"}, unknownWith: "would not start"},
		{name: "env from secret", env: []corev1.EnvVar{{Name: "UPDATE_OPERATOR_AFTER_REBOOT_ANNOTATIONS", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}}}}}, unknownWith: "Secret s"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctr := ft.Deployment("ns", c.args, c.env...).Spec.Template.Spec.Containers[0]
			s := flatcar.SettingsFrom("ns", "op", &ctr)
			if c.unknownWith != "" {
				if !strings.Contains(s.Unknown, c.unknownWith) {
					t.Errorf("unknown = %q, want %q", s.Unknown, c.unknownWith)
				}
				return
			}
			if s.Unknown != "" || strings.Join(s.Before, "|") != strings.Join(c.before, "|") || (s.Window != nil) != c.window {
				t.Errorf("settings = %+v", s)
			}
		})
	}
}

// FLUO's window: a weekly or daily start and a length; inside while the
// most recent period has not ended.
func TestPeriodic(t *testing.T) {
	for _, c := range []struct {
		start, length string
		at            time.Time
		inside        bool
		next          time.Time
	}{
		{"Tue 11:00", "2h", now, true, time.Date(2026, 12, 8, 11, 0, 0, 0, time.UTC)},
		{"Tue 12:00", "1h", now, true, time.Date(2026, 12, 8, 12, 0, 0, 0, time.UTC)},
		{"Tue 12:01", "1h", now, false, time.Date(2026, 12, 1, 12, 1, 0, 0, time.UTC)},
		{"Mon 23:00", "14h", now, true, time.Date(2026, 12, 7, 23, 0, 0, 0, time.UTC)},
		{"23:00", "12h", now, false, time.Date(2026, 12, 1, 23, 0, 0, 0, time.UTC)},
		{"23:00", "13h30m", now, true, time.Date(2026, 12, 1, 23, 0, 0, 0, time.UTC)},
	} {
		p, err := flatcar.ParsePeriodic(c.start, c.length)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Inside(c.at); got != c.inside {
			t.Errorf("%s for %s: inside %v, want %v", c.start, c.length, got, c.inside)
		}
		if got := p.NextStart(c.at); !got.Equal(c.next) {
			t.Errorf("%s for %s: next %v, want %v", c.start, c.length, got, c.next)
		}
	}
	for _, bad := range [][2]string{{"", "1h"}, {"Funday 10:00", "1h"}, {"25:00", "1h"}, {"10:00", "-1h"}, {"Mon 10:00", "168h"}, {"10", "1h"}} {
		if _, err := flatcar.ParsePeriodic(bad[0], bad[1]); err == nil {
			t.Errorf("%q %q parsed", bad[0], bad[1])
		}
	}
}

// Issue 32 §3 (review): FLUO's image runs update-agent as its ENTRYPOINT
// (Dockerfile: ENTRYPOINT ["/bin/update-agent"]), so an agent DaemonSet
// that sets no command runs the agent all the same. Its pod, Running on
// the node, must be read as the agent's: the agent uncordons the node
// itself, and the uncordon is not offered. Before the fix it was "no
// update-agent pod runs on n1" and the uncordon was offered while the
// agent ran.
func TestAgentPodFromTheImagesEntrypoint(t *testing.T) {
	ctx := t.Context()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "reboot-coordinator", Name: "flatcar-linux-update-agent-q9z4m"},
		Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "update-agent",
			Image: "ghcr.io/flatcar/flatcar-linux-update-operator:v0.10.0-rc2"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: "update-agent",
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(now.Add(-19 * time.Minute))}}}}},
	}
	pods := flatcar.ReadAgentPods(ctx, fake.NewClientset(pod), []string{"n1"})
	if p := pods["n1"]; !p.Running || p.Name != "reboot-coordinator/flatcar-linux-update-agent-q9z4m" {
		t.Fatalf("the agent pod running FLUO's image's entrypoint is not read as the agent's: %s", p.Describe("n1"))
	}
	n1 := agentCordoned(fnode("n1", now.Add(-20*time.Minute), map[string]time.Time{inProgress: now.Add(-30 * time.Minute)}, rebooting...), now.Add(-30*time.Minute))
	r := flatcar.Judge(flatcar.Input{Nodes: []coord.Node{n1}, Settings: settings(), AgentPods: pods}, now)
	if len(r.Uncordon) != 0 || !strings.Contains(r.NotOwned["n1"], "the agent runs") {
		t.Errorf("uncordon %v while its agent runs (%q)", r.Uncordon, r.NotOwned["n1"])
	}
	// Another image with no command is not the agent.
	other := pod.DeepCopy()
	other.Namespace, other.Spec.Containers[0].Image = "tenant", "registry.example/tenant/flatcar-linux-update-operator-docs:1"
	if p := flatcar.ReadAgentPods(ctx, fake.NewClientset(other), []string{"n1"})["n1"]; p.Name != "" {
		t.Errorf("a pod of another image is read as the agent's: %s", p.Describe("n1"))
	}
}

// Issue 32 §3 (review): the agent cordoned n1 (update-agent owns
// spec.unschedulable and wrote agent-made-unschedulable=true), then an
// administrator server-side applied unschedulable: true to keep it
// cordoned (an Apply of the same value: the apiserver records both as
// owners), and the agent wrote the node again after (its entry is the
// newest). The cordon is also the administrator's: never offered. Before
// the fix the newest owner alone was read, and it was offered.
func TestAgentCordonAlsoAppliedByAnAdministrator(t *testing.T) {
	// The agent's entry's time is its last write (after the reboot).
	agentAt, applyAt := metav1.NewTime(now.Add(-time.Hour)), metav1.NewTime(now.Add(-90*time.Minute))
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", ManagedFields: []metav1.ManagedFieldsEntry{
		{Manager: "ops-apply", Operation: metav1.ManagedFieldsOperationApply, Time: &applyAt, FieldsType: "FieldsV1",
			FieldsV1: metav1.NewFieldsV1(`{"f:spec":{"f:unschedulable":{}}}`)},
		{Manager: "update-agent", Operation: metav1.ManagedFieldsOperationUpdate, Time: &agentAt, FieldsType: "FieldsV1",
			FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:annotations":{"f:` + ft.AnnAgentUnschedulable + `":{}}},"f:spec":{"f:unschedulable":{}}}`)},
	}}}
	done := append(append([]ft.Step{ft.AgentStarted}, rebooting...), ft.AgentStarted, ft.MarkAfter(), ft.CheckAfterPassed())
	ft.Apply(n, done...)
	n1 := coord.NodeFrom(n, flatcar.NodeKeys)
	n1.Ready = coord.Ready{Status: "True", Since: now.Add(-time.Hour)}
	if n1.UnschedulableSetBy != "update-agent" {
		t.Fatalf("fixture: newest owner %q", n1.UnschedulableSetBy)
	}
	r := flatcar.Judge(flatcar.Input{Nodes: []coord.Node{n1}, Settings: settings(), AgentPods: noAgentPod("n1")}, now)
	if len(r.Uncordon) != 0 {
		t.Fatalf("a cordon an administrator also applied offered for uncordon: %v", r.Uncordon)
	}
	if why := r.NotOwned["n1"]; !strings.Contains(why, "also owned by ops-apply (Apply)") {
		t.Errorf("not owned = %q", why)
	}
}
