package lock

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/rebootwatch/rebootwatch/model"
)

// apiNode is the API Node a model node was read from.
func apiNode(n model.Node) *corev1.Node {
	out := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name, UID: types.UID(n.UID)},
		Spec:   corev1.NodeSpec{Unschedulable: n.Unschedulable},
		Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{BootID: n.BootID, MachineID: n.MachineID}}}
	for _, c := range n.Conditions {
		out.Status.Conditions = append(out.Status.Conditions, corev1.NodeCondition{Type: corev1.NodeConditionType(c.Type),
			Status: corev1.ConditionStatus(c.Status), LastTransitionTime: metav1.NewTime(c.LastTransition)})
	}
	return out
}

// withNodes returns objs plus the API Nodes the plan was judged on: the
// cluster as it really is when nothing changed since the judgement.
func withNodes(p Plan, objs ...runtime.Object) []runtime.Object {
	for _, n := range p.Nodes {
		objs = append(objs, apiNode(n))
	}
	return objs
}

func writesOf(cs *fake.Clientset) int {
	n := 0
	for _, a := range cs.Actions() {
		switch a.GetVerb() {
		case "get", "list", "watch":
		default:
			n++
		}
	}
	return n
}

// Before it writes, the actor reads the node list with a quorum read and
// refuses with fresh-data when it differs from the judged one, or when it
// cannot be read (a frozen API server): nothing is written (issue 11 §1).
func TestActorRefusesWhenFreshNodeListDiffers(t *testing.T) {
	ann := single(ent("n9", at(0), 0))
	p := ghostPlan(t, ann)
	if len(p.Nodes) != 1 || p.Nodes[0].Name != "n1" {
		t.Fatalf("the plan must carry the judged nodes: %+v", p.Nodes)
	}
	notReady := apiNode(p.Nodes[0])
	notReady.Status.Conditions[0].Status = corev1.ConditionFalse
	notReady.Status.Conditions[0].LastTransitionTime = metav1.NewTime(at(50 * time.Minute))
	extra := apiNode(node("n2"))
	cases := []struct {
		name  string
		objs  []runtime.Object
		wants []string
	}{
		{"a node went NotReady since", []runtime.Object{ds(ann, "100"), notReady}, []string{"n1 changed (ready=True → ready=False"}},
		{"a node joined since", withNodes(p, ds(ann, "100"), extra), []string{"n2 is new"}},
		{"a node left since", []runtime.Object{ds(ann, "100")}, []string{"n1 is gone"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cs := newFakeClientset(tc.objs...)
			a := &Actor{Client: cs, Who: "alice"}
			r := a.Do(context.Background(), p, DoOptions{})
			if r.Outcome != model.OutcomeRefused || !strings.Contains(r.Message, "reap refused: fresh-data: the node list read now differs") ||
				!strings.Contains(r.Message, "nothing written") {
				t.Fatalf("result %s: %s", r.Outcome, r.Message)
			}
			for _, w := range tc.wants {
				if !strings.Contains(r.Message, w) {
					t.Errorf("message %q lacks %q", r.Message, w)
				}
			}
			if n := writesOf(cs); n != 0 {
				t.Fatalf("%d writes after a refusal: %v", n, cs.Actions())
			}
			got, _ := cs.AppsV1().DaemonSets("kube-system").Get(context.Background(), "kured", metav1.GetOptions{})
			if got.Annotations[KuredAnnotation] != ann {
				t.Fatal("the lock changed")
			}
		})
	}
}

func TestActorRefusesWhenNodeListCannotBeReadFresh(t *testing.T) {
	ann := single(ent("n9", at(0), 0))
	p := ghostPlan(t, ann)
	cs := newFakeClientset(withNodes(p, ds(ann, "100"))...)
	cs.PrependReactor("list", "nodes", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, context.DeadlineExceeded
	})
	a := &Actor{Client: cs, Who: "alice"}
	r := a.Do(context.Background(), p, DoOptions{})
	if r.Outcome != model.OutcomeRefused || !strings.Contains(r.Message, "fresh-data: could not read the node list fresh") ||
		!strings.Contains(r.Message, "request timed out") {
		t.Fatalf("result %s: %s", r.Outcome, r.Message)
	}
	if n := writesOf(cs); n != 0 {
		t.Fatalf("%d writes: %v", n, cs.Actions())
	}
	var ds *appsv1.DaemonSet
	ds, _ = cs.AppsV1().DaemonSets("kube-system").Get(context.Background(), "kured", metav1.GetOptions{})
	if ds.Annotations[KuredAnnotation] != ann {
		t.Fatal("the lock changed")
	}
}
