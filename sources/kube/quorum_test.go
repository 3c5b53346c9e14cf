package kube

import (
	"context"
	"reflect"
	"sort"
	"testing"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/rebootwatch/rebootwatch/model"
)

// ReadLocks finds the lock objects the source finds (kured's DaemonSets
// as discovered or named, fleetlock's Leases) and converts them as the
// source does; ReadNodes reads the nodes as the informer makes them.
func TestReadLocksAndNodes(t *testing.T) {
	cs := fake.NewClientset(
		ds("reboots", "cluster-reboots", map[string]string{KuredLockAnnotation: single}, nil),
		ds("kube-system", "kured", nil, nil),
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
	ls, err := ReadLocks(ctx, cs, "", "locks")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := refs(ls), []string{"fleetlock:locks/fleetlock-default", "kured:kube-system/kured", "kured:reboots/cluster-reboots"}; !reflect.DeepEqual(got, want) {
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
	ls, err = ReadLocks(ctx, cs, "kube-system/kured", "")
	if got, want := refs(ls), []string{"kured:kube-system/kured"}; err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("named: %q %v, want %q", got, err, want)
	}
	if _, err := ReadLocks(ctx, cs, "kured", ""); err == nil {
		t.Error("a --kured-daemonset without namespace read")
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
