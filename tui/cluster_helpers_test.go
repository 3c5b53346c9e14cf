package tui

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/rebootwatch/rebootwatch/internal/lock"
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
			Annotations: map[string]string{lock.KuredAnnotation: value}},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "kured", Image: "kured:test"}}}}},
	}
	if _, err := cs.AppsV1().DaemonSets("kube-system").Create(context.Background(), ds, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}
