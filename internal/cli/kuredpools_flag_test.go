package cli

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// rebootwatch --kured-daemonset names every kured DaemonSet (node pool) to
// read: repeated, comma-separated, or both; each is kept, in order, and
// each is checked.
func TestKuredDaemonSetFlagTakesSeveral(t *testing.T) {
	parse := func(args ...string) (Common, error) {
		c := DefaultCommon()
		fs := pflag.NewFlagSet("rebootwatch", pflag.ContinueOnError)
		c.Register(fs)
		if err := fs.Parse(args); err != nil {
			return c, err
		}
		return c, c.validate()
	}
	for _, args := range [][]string{
		{"--kured-daemonset=kube-system/kured-a,kured-b/kured-b"},
		{"--kured-daemonset=kube-system/kured-a", "--kured-daemonset=kured-b/kured-b"},
	} {
		c, err := parse(args...)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		if c.KuredDaemonSet != "kube-system/kured-a,kured-b/kured-b" {
			t.Errorf("%v: KuredDaemonSet = %q, want both, comma-separated", args, c.KuredDaemonSet)
		}
	}
	if _, err := parse("--kured-daemonset=kube-system/kured-a,kured-b"); err == nil || !strings.Contains(err.Error(), `"kured-b": want namespace/name`) {
		t.Errorf("a bad second entry: err = %v", err)
	}
}
