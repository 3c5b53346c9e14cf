package kube

import (
	"context"
	"reflect"
	"sort"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/rebootwatch/rebootwatch/internal/coord/kured"
	"github.com/rebootwatch/rebootwatch/model"
)

// ReadLocks finds the lock objects the source finds, selected as the
// source selects them (kured's one plausible DaemonSet as discovered, or
// the one named; never a look-alike; none of several plausible ones;
// nothing of a kind turned off), and converts them as the source does;
// ReadNodes reads the nodes as the informer makes them.
func TestReadLocksAndNodes(t *testing.T) {
	const img = "ghcr.io/kubereboot/kured:1.23.0"
	cs := fake.NewClientset(
		withKured(ds("reboots", "cluster-reboots", map[string]string{kured.Annotation: single}, nil), img,
			"--ds-namespace=reboots", "--ds-name=cluster-reboots"),
		// Look-alikes: named, annotated and labelled as kured, but not
		// running kured's image, or running it for a lock kept elsewhere.
		ds("kube-system", "kured", map[string]string{kured.Annotation: single}, map[string]string{"app": "kured"}),
		withKured(ds("tenant", "tenant-kured", map[string]string{kured.Annotation: single}, nil), img),
		ds("kube-system", "kube-proxy", map[string]string{"x": "y"}, nil),
		lease("locks", "fleetlock-default", "978a225b3d7b40e9acd7ce9b62f68444"),
		lease("locks", "some-controller", "pod-1"),
		node("w-1", true, map[string]string{"pool": "a"}), node("w-2", false, nil),
	)
	ctx := context.Background()
	refs := func(ls []model.LockObject) []string {
		var out []string
		for _, l := range ls {
			out = append(out, l.LockRef.String())
		}
		sort.Strings(out)
		return out
	}
	ls, err := ReadLocks(ctx, cs, "", "locks", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := refs(ls), []string{"fleetlock:locks/fleetlock-default", "kured:reboots/cluster-reboots"}; !reflect.DeepEqual(got, want) {
		t.Errorf("discovered %q, want %q", got, want)
	}
	for _, l := range ls {
		if l.Name == "cluster-reboots" && (!kspec(&l).Present || kspec(&l).Value != single) {
			t.Errorf("kured lock %+v", l)
		}
		if l.Kind == model.LockFleetlock && fspec(&l).Holder != "978a225b3d7b40e9acd7ce9b62f68444" {
			t.Errorf("fleetlock lock %+v", l)
		}
	}
	ls, err = ReadLocks(ctx, cs, "kube-system/kured", "", nil)
	if got, want := refs(ls), []string{"kured:kube-system/kured"}; err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("named: %q %v, want %q", got, err, want)
	}
	if _, err := ReadLocks(ctx, cs, "kured", "", nil); err == nil {
		t.Error("a --kured-daemonset without namespace read")
	}
	ls, err = ReadLocks(ctx, cs, "", "locks", map[model.LockKind]string{model.LockKured: "turned off"})
	if got, want := refs(ls), []string{"fleetlock:locks/fleetlock-default"}; err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("kured turned off: %q %v, want %q", got, err, want)
	}
	ls, err = ReadLocks(ctx, cs, "", "locks", map[model.LockKind]string{model.LockFleetlock: "turned off"})
	if got, want := refs(ls), []string{"kured:reboots/cluster-reboots"}; err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("fleetlock turned off: %q %v, want %q", got, err, want)
	}
	// A second plausible kured (it names itself: a second node pool): the
	// source reports both locks, and so does the fresh read.
	if _, err := cs.AppsV1().DaemonSets("kube-system").Create(ctx, withKured(ds("kube-system", "kured2", nil, nil), img,
		"--ds-namespace=kube-system", "--ds-name=kured2"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ls, err = ReadLocks(ctx, cs, "", "locks", nil)
	if got, want := refs(ls), []string{"fleetlock:locks/fleetlock-default", "kured:kube-system/kured2", "kured:reboots/cluster-reboots"}; err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("two plausible kureds: %q %v, want %q", got, err, want)
	}

	nodes, err := ReadNodes(ctx, cs, "")
	if err != nil || len(nodes) != 2 {
		t.Fatalf("%+v %v", nodes, err)
	}
	for _, n := range nodes {
		want := NodeToModel(node(n.Name, n.Name == "w-1", nil))
		if n.Name == "w-1" {
			want = NodeToModel(node("w-1", true, map[string]string{"pool": "a"}))
		}
		if !reflect.DeepEqual(n, want) {
			t.Errorf("node %+v\nwant %+v", n, want)
		}
	}
	if nodes, err := ReadNodes(ctx, cs, "pool=a"); err != nil || len(nodes) != 1 || nodes[0].Name != "w-1" {
		t.Errorf("by label: %+v %v", nodes, err)
	}
}
