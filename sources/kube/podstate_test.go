package kube

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rebootwatch/rebootwatch/model"
)

// TestPodContainerState: what a stalled kured pod shows survives the
// transform: CrashLoopBackOff, the restarts and the last exit; a running
// container's start.
func TestPodContainerState(t *testing.T) {
	start := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	crash := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "kured-a"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: "kured", RestartCount: 7, Image: "x",
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 5m0s"}},
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error",
				StartedAt: metav1.NewTime(start), FinishedAt: metav1.NewTime(start.Add(2 * time.Second))}}}}}}
	tp, _ := TransformPod(crash)
	got := PodToModel(tp.(*corev1.Pod)).Containers
	want := model.ContainerState{Reported: true, Waiting: "CrashLoopBackOff", Restarts: 7, LastExit: start.Add(2 * time.Second), LastExitReason: "Error, exit code 1"}
	if got != want {
		t.Fatalf("crash-looping:\ngot  %+v\nwant %+v", got, want)
	}
	run := crash.DeepCopy()
	run.Status.ContainerStatuses[0].State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(start.Add(time.Minute))}}
	tp, _ = TransformPod(run)
	if got := PodToModel(tp.(*corev1.Pod)).Containers; !got.Running || !got.StartedAt.Equal(start.Add(time.Minute)) || got.Waiting != "" {
		t.Fatalf("running: %+v", got)
	}
	if got := PodToModel(&corev1.Pod{}).Containers; got.Reported || got.Running {
		t.Fatalf("no statuses: %+v", got)
	}
}
