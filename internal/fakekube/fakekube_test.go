package fakekube

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestGenerateNames(t *testing.T) {
	cs := fake.NewClientset()
	GenerateNames(&cs.Fake)
	ctx := context.Background()
	names := map[string]bool{}
	for range 3 {
		ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{GenerateName: "kured.", Namespace: "kube-system"}}
		got, err := cs.CoreV1().Events("kube-system").Create(ctx, ev, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Name) <= len("kured.") || got.Name[:len("kured.")] != "kured." || names[got.Name] {
			t.Fatalf("name %q (had %v)", got.Name, names)
		}
		names[got.Name] = true
	}
	// A named object keeps its name.
	ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "exact", GenerateName: "x.", Namespace: "ns"}}
	if got, err := cs.CoreV1().Events("ns").Create(ctx, ev, metav1.CreateOptions{}); err != nil || got.Name != "exact" {
		t.Fatalf("%v %v", got, err)
	}
}
