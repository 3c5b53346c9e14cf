package kured

import (
	"reflect"
	"strings"
	"testing"
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
