package deploy

import (
	"context"
	"maps"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/rebootwatch/rebootwatch/internal/testenv/testcluster"
)

// The integration tests install the chart's cluster-wide grants (bound to
// the user alice), CRDs and namespaces of fixed names, and read every
// coordinator kind or DaemonSet as alice: they share one apiserver one at a
// time (testcluster.SharedAlone), and each deletes what it made beyond the
// nodes, DaemonSets, pods and Leases SharedAlone empties (alice's roles and
// bindings, aliceGrants', waited on until the authorizer refuses her again;
// CRDs, Jobs and Deployments), so the next test, and a second -count round,
// find the apiserver as the first found it.
func TestMain(m *testing.M) { testcluster.Main(m) }

// ensureNamespace creates the namespace name with labels, or, when an
// earlier test or -count round made it (no controller-manager runs to
// finish a namespace's deletion, so namespaces of fixed names stay), sets
// those labels on it. Either way the namespace carries exactly labels
// besides the apiserver's own kubernetes.io/metadata.name.
func ensureNamespace(ctx context.Context, t *testing.T, cs kubernetes.Interface, name string, labels map[string]string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	_, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
	if err == nil {
		return
	}
	if !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	got, err := cs.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.DeletionTimestamp != nil {
		t.Fatalf("namespace %s is being deleted: nothing can be created in it", name)
	}
	want := map[string]string{corev1.LabelMetadataName: name}
	maps.Copy(want, labels)
	got.Labels = want
	if _, err := cs.CoreV1().Namespaces().Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}
