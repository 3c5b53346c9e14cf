package tui

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	tea "charm.land/bubbletea/v2"

	"github.com/rebootwatch/rebootwatch/internal/coord/kured"
	"github.com/rebootwatch/rebootwatch/model"
)

// createReadyNode creates a Node on a real apiserver and sets its status
// through the status subresource: Ready since readySince, last heartbeat at
// heartbeat, the given boot and machine ids, OS "os 1" and kernel "k1".
func createReadyNode(t *testing.T, cs kubernetes.Interface, name string, readySince, heartbeat time.Time, bootID, machineID string) {
	t.Helper()
	ctx := context.Background()
	n, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
		LastHeartbeatTime: metav1.NewTime(heartbeat), LastTransitionTime: metav1.NewTime(readySince)}}
	n.Status.NodeInfo = corev1.NodeSystemInfo{BootID: bootID, MachineID: machineID, OSImage: "os 1", KernelVersion: "k1"}
	if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// createKured creates kured's DaemonSet in kube-system with the given pod
// labels and its lock annotation set to value.
func createKured(t *testing.T, cs kubernetes.Interface, labels map[string]string, value string) {
	t.Helper()
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "kured", Namespace: "kube-system", Labels: labels,
			Annotations: map[string]string{kured.Annotation: value}},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "kured", Image: "kured:test"}}}}},
	}
	if _, err := cs.AppsV1().DaemonSets("kube-system").Create(context.Background(), ds, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// sessionPump returns a pump that applies a live session's events to m
// (and a tick every 200 ms of quiet) until cond holds of the screen, or
// fails the test after 90 s. It starts one reader of events for the whole
// test, so that no batch is lost between waits (a reader left behind by a
// wait that timed out would take the next batch and drop it).
func sessionPump(t *testing.T, ctx context.Context, m *Model, events <-chan model.Event) func(what string, cond func(string) bool) {
	msgs := make(chan tea.Msg)
	go func() {
		for {
			msg := waitEvents(events)()
			select {
			case msgs <- msg:
			case <-ctx.Done():
				return
			}
			if _, closed := msg.(streamClosedMsg); closed {
				return
			}
		}
	}()
	return func(what string, cond func(string) bool) {
		t.Helper()
		deadline := time.After(90 * time.Second)
		for !cond(screen(m)) {
			select {
			case msg := <-msgs:
				m.Update(msg)
			case <-time.After(200 * time.Millisecond):
				m.Update(tickMsg(time.Now()))
			case <-deadline:
				t.Fatalf("timed out waiting for %s:\n%s", what, screen(m))
			}
		}
	}
}
