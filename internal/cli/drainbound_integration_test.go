package cli

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestDrainBoundRealCluster is issue 23 §4 on a real apiserver: a drain
// refused by a PodDisruptionBudget is said at once, muted (it does not
// stall yet); it stalls after the bound, which is kured's own
// --drain-timeout (read from its DaemonSet) when set, else --drain-bound.
func TestDrainBoundRealCluster(t *testing.T) {
	tc := cliCluster(t)
	ctx := context.Background()
	cs, shop := blkPDBDrain(t, tc, 3*time.Minute, "web") // w-1 draining for 3m

	flags := []string{"--kubeconfig", kubeconfigCopy(t, tc), "--request-timeout", "5s", "--sync-timeout", "30s"}
	type blocker struct {
		Kind, Reason string
		Stalls       bool
	}
	first := func(extra ...string) (blocker, string) {
		t.Helper()
		env, out, errb := multiEnv()
		code := run(ctx, append(append(append([]string{}, flags...), extra...), "--snapshot", "-o", "json"), env)
		var snap struct {
			Fleet struct{ Blockers []blocker }
			Nodes []struct {
				Name     string
				Blockers []blocker
			}
		}
		if err := json.Unmarshal([]byte(out.String()), &snap); err != nil || code == ExitError {
			t.Fatalf("snapshot exit %d: %v\n%s\n%s", code, err, out, errb)
		}
		env, out, _ = multiEnv()
		run(ctx, append(append(append([]string{}, flags...), extra...), "--snapshot"), env)
		for _, n := range snap.Nodes {
			if n.Name == "w-1" && len(n.Blockers) > 0 {
				// The cordon is dated 3m back and the test takes seconds
				// under load: "3m4s" reads as "3m".
				b := n.Blockers[0]
				b.Reason = threeMinutes.ReplaceAllString(b.Reason, "${1}3m")
				return b, threeMinutes.ReplaceAllString(out.String(), "${1}3m")
			}
		}
		t.Fatalf("w-1 has no blocker:\n%s", out)
		return blocker{}, ""
	}
	setKuredArgs := func(args ...string) {
		t.Helper()
		ds, err := cs.AppsV1().DaemonSets("kube-system").Get(ctx, "kured", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ds.Spec.Template.Spec.Containers[0].Args = args
		if _, err := cs.AppsV1().DaemonSets("kube-system").Update(ctx, ds, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	// 3m into the drain, the default bound (10m): said at once, muted.
	bl, text := first()
	if bl.Kind != "drain" || bl.Stalls || !strings.Contains(bl.Reason, "w-1 is draining (3m): PodDisruptionBudget "+shop+"/web allows 0 disruptions") ||
		!strings.Contains(bl.Reason, "a stall after 10m (--drain-bound)") {
		t.Fatalf("within the default bound: %+v\n%s", bl, text)
	}
	if !strings.Contains(text, "drain: PDB "+shop+"/web allows 0 disruptions") && !strings.Contains(text, "w-1 is draining (3m)") {
		t.Errorf("the text snapshot does not show the muted drain:\n%s", text)
	}
	// --drain-bound 2m: past it, a stall.
	if bl, text := first("--drain-bound", "2m"); bl.Kind != "drain" || !bl.Stalls || !strings.Contains(bl.Reason, "w-1 has been draining for 3m: PodDisruptionBudget "+shop+"/web") {
		t.Fatalf("past --drain-bound: %+v\n%s", bl, text)
	}
	// kured's --drain-timeout is the bound, whatever --drain-bound says.
	setKuredArgs("--period=1m", "--drain-timeout=2m")
	if bl, text := first("--drain-bound", "1h"); !bl.Stalls || !strings.Contains(bl.Reason, "w-1 has been draining for 3m, longer than kured's --drain-timeout 2m: PodDisruptionBudget") {
		t.Fatalf("past kured's --drain-timeout: %+v\n%s", bl, text)
	}
	setKuredArgs("--period=1m", "--drain-timeout=1h")
	if bl, text := first("--drain-bound", "2m"); bl.Stalls || !strings.Contains(bl.Reason, "a stall after 1h (kured's --drain-timeout)") {
		t.Fatalf("within kured's --drain-timeout: %+v\n%s", bl, text)
	}
}

// threeMinutes matches a duration of 3m and some seconds.
var threeMinutes = regexp.MustCompile(`(\W)3m\d+s\b`)
