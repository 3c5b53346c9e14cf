package kube

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/rebootwatch/rebootwatch/internal/coord/kured"
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

// TestPodsWatchedOnKuredLockHolder: the pods of the node that holds kured's
// lock are watched even when it is schedulable (kured's own pod on it: did
// it come back after the reboot, since when), and no longer once the lock
// is released.
func TestPodsWatchedOnKuredLockHolder(t *testing.T) {
	lockOf := func(holder string) map[string]string {
		return map[string]string{kured.Annotation: `{"nodeID":"` + holder + `","metadata":{"unschedulable":false},"created":"2026-11-29T10:00:00Z","TTL":0}`}
	}
	cs := fake.NewClientset(node("w-1", true, nil), node("w-2", true, nil), ds("kube-system", "kured", lockOf("w-1"), nil),
		pod("kube-system", "kured-abc", "w-1", corev1.PodRunning, nil, "DaemonSet/kured"),
		pod("kube-system", "kured-def", "w-2", corev1.PodRunning, nil, "DaemonSet/kured"))
	r, _ := start(t, cs, Options{KuredDaemonSet: "kube-system/kured"})
	r.Eventually(t, "the holder's pods known", func(c *model.Cluster) bool {
		pods, known := c.NodePods("w-1")
		_, other := c.NodePods("w-2")
		return known && !other && len(pods) == 1 && pods[0].Name == "kured-abc"
	})
	if h := r.Source(model.SourcePods); h.Status != model.StatusOK || h.Message != "pods of cordoned or lock-holding node w-1" {
		t.Errorf("pods health %+v", h)
	}
	d, _ := cs.AppsV1().DaemonSets("kube-system").Get(t.Context(), "kured", metav1.GetOptions{})
	d.Annotations = nil
	if _, err := cs.AppsV1().DaemonSets("kube-system").Update(t.Context(), d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	r.Eventually(t, "the released holder's pods forgotten", func(c *model.Cluster) bool {
		_, known := c.NodePods("w-1")
		return !known
	})
}
