package flatcar_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/rebootwatch/rebootwatch/internal/coord"
	"github.com/rebootwatch/rebootwatch/internal/coord/flatcar"
	"github.com/rebootwatch/rebootwatch/internal/coord/flatcar/flatcartest"
)

// Issue 32 §2: FLUO is read without being asked, so it is discovered
// first, from as little as tells it: a node its agent labelled (a label
// selector), else its operator's Deployment. Neither there: not installed,
// and no unselected node list is read. Either there: installed and read.
// A discovery read that fails: unknown, never "not installed".
func TestObserveDiscoversFLUO(t *testing.T) {
	ctx, now := context.Background(), time.Now()
	plain := func() *fake.Clientset {
		return fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"kubernetes.io/os": "linux"}}})
	}

	kube := plain()
	o := flatcar.Driver{}.Observe(ctx, coord.Clients{Kube: kube}, now)
	if o.Installed || o.Unknown != "" {
		t.Errorf("no agent label, no operator: %+v, want not installed", o)
	}
	for _, a := range kube.Actions() {
		if l, ok := a.(k8stesting.ListAction); ok && a.GetResource().Resource == "nodes" &&
			l.GetListRestrictions().Labels.String() != flatcar.LabelRebootNeeded {
			t.Errorf("not installed, yet every node was listed (%q)", l.GetListRestrictions().Labels)
		}
	}

	kube = plain()
	if err := flatcartest.Write(ctx, kube, "n1", flatcartest.AgentStarted); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.AppsV1().Deployments("reboot-coordinator").Create(ctx, flatcartest.Deployment("reboot-coordinator", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if o := (flatcar.Driver{}).Observe(ctx, coord.Clients{Kube: kube}, now); !o.Installed || o.Unknown != "" {
		t.Errorf("agent label and operator: %+v, want installed and read", o)
	}

	kube = plain()
	if _, err := kube.AppsV1().Deployments("reboot-coordinator").Create(ctx, flatcartest.Deployment("reboot-coordinator", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if o := (flatcar.Driver{}).Observe(ctx, coord.Clients{Kube: kube}, now); !o.Installed || o.Unknown != "" {
		t.Errorf("operator alone: %+v, want installed and read", o)
	}

	forbid := func(res string) *fake.Clientset {
		k := plain()
		k.PrependReactor("list", res, func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: res}, "", nil)
		})
		return k
	}
	for _, res := range []string{"nodes", "deployments"} {
		o := flatcar.Driver{}.Observe(ctx, coord.Clients{Kube: forbid(res)}, now)
		if !o.Installed || !strings.Contains(o.Unknown, "cannot tell whether the Flatcar update operator is installed") || !strings.Contains(o.Unknown, "forbidden") {
			t.Errorf("%s forbidden: %+v, want unknown, never not installed", res, o)
		}
	}
}
