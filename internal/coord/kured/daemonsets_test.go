package kured

import (
	"context"
	"reflect"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/rebootwatch/rebootwatch/internal/coord"
)

// --kured-daemonset names one or several DaemonSets (node pools), comma
// separated (a repeated flag is joined with commas): each is parsed, in
// order, a repeat once; anything that is not namespace/name is refused.
func TestParseDaemonSets(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []DaemonSetRef
		err  string
	}{
		{in: "", want: nil},
		{in: "kube-system/kured", want: []DaemonSetRef{{"kube-system", "kured"}}},
		{in: "kube-system/kured-a,kured-b/kured-b", want: []DaemonSetRef{{"kube-system", "kured-a"}, {"kured-b", "kured-b"}}},
		{in: "kube-system/kured-a, kube-system/kured-b", want: []DaemonSetRef{{"kube-system", "kured-a"}, {"kube-system", "kured-b"}}},
		{in: "a/x,a/x", want: []DaemonSetRef{{"a", "x"}}},
		{in: "kured", err: `"kured": want namespace/name`},
		{in: "a/x,,b/y", err: "an empty entry"},
		{in: "a/x,b", err: `"b": want namespace/name`},
		{in: "a/x/y", err: `"a/x/y": want namespace/name`},
		{in: "/x", err: `"/x": want namespace/name`},
	} {
		got, err := ParseDaemonSets(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseDaemonSets(%q) = %v, %v; want error containing %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParseDaemonSets(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	refs := []DaemonSetRef{{"kube-system", "kured-a"}, {"kured-b", "kured-b"}}
	if got := JoinDaemonSets(refs); got != "kube-system/kured-a,kured-b/kured-b" {
		t.Errorf("JoinDaemonSets = %q", got)
	}
}

// The driver's one-shot read takes c.Names["kured-daemonset"] as the
// sources do: every DaemonSet named (one per node pool), each marked
// named, and none other — not a kured DaemonSet discovery would take.
func TestDriverReadsNamedDaemonSets(t *testing.T) {
	mk := func(ns, name string) *appsv1.DaemonSet {
		return &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name)},
			Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{
				{Name: "kured", Image: "ghcr.io/kubereboot/kured:1.23.0", Args: []string{"--ds-namespace=" + ns, "--ds-name=" + name}}}}}}}
	}
	cs := fake.NewClientset(mk("kube-system", "kured-a"), mk("pool-b", "kured-b"), mk("kube-system", "kured"))
	ls, err := Driver{}.ReadLocks(context.Background(), coord.Clients{Kube: cs, Names: map[string]string{"kured-daemonset": "kube-system/kured-a,pool-b/kured-b"}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range ls {
		if s, ok := l.Spec.(*Spec); !ok || !s.Named {
			t.Errorf("%s: not marked named", l.LockRef)
		}
		got = append(got, l.Namespace+"/"+l.Name)
	}
	if strings.Join(got, " ") != "kube-system/kured-a pool-b/kured-b" {
		t.Errorf("read %v, want the two named", got)
	}
	if _, err := (Driver{}).ReadLocks(context.Background(), coord.Clients{Kube: cs, Names: map[string]string{"kured-daemonset": "kube-system/kured-a,kured-b"}}); err == nil {
		t.Error("a bad second name read")
	}
}
