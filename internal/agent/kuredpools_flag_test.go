package agent

import (
	"io"
	"strings"
	"testing"
)

// --kured-daemonset names every kured DaemonSet (node pool) the agent
// reads: repeated, comma-separated, or both; each is kept, in order.
func TestKuredDaemonSetFlagTakesSeveral(t *testing.T) {
	for _, args := range [][]string{
		{"--kured-daemonset=kube-system/kured-a,kured-b/kured-b"},
		{"--kured-daemonset=kube-system/kured-a", "--kured-daemonset=kured-b/kured-b"},
		{"--kured-daemonset", "kube-system/kured-a", "--kured-daemonset", "kured-b/kured-b"},
	} {
		cfg, err := ParseFlags(args, io.Discard)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		if cfg.KuredDaemonSet != "kube-system/kured-a,kured-b/kured-b" {
			t.Errorf("%v: KuredDaemonSet = %q, want both, comma-separated", args, cfg.KuredDaemonSet)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--kured-daemonset=kube-system/kured-a,kured-b"}, `"kured-b": want namespace/name`},
		{[]string{"--kured-daemonset=kube-system/kured-a", "--kured-daemonset=,"}, "an empty entry"},
	} {
		_, err := ParseFlags(tc.args, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err = %v, want %q", tc.args, err, tc.want)
		}
	}
}
