package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rebootwatch/rebootwatch/internal/live"
	"github.com/rebootwatch/rebootwatch/internal/testenv/testcluster"
	"github.com/rebootwatch/rebootwatch/model"
)

// TestWatchHoldsPhasesThroughFreezeAndRestart is issue 22 item 7 on a real
// API server: n1 holds kured's lock and rebooted long ago (orphaned,
// recovering). The API server is frozen (SIGSTOP) until every source is
// stale, thawed, then restarted (etcd's data kept). n1 must stay
// recovering throughout — never recovering → done while stale and done →
// draining after (a new cycle, ETA of days) — and watch logs no phase or
// lock line from stale data.
func TestWatchHoldsPhasesThroughFreezeAndRestart(t *testing.T) {
	// It freezes and restarts the apiserver, so it has the shared one to
	// itself (SharedToItself), beside the package's other parallel tests,
	// none of which uses it.
	t.Parallel()
	tc := testcluster.SharedToItself(t)
	cs := tc.Client(t)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Second)

	mkNode(t, cs, "n1", "boot-2", now.Add(-20*time.Minute))
	mkNode(t, cs, "n2", "boot-a", now.Add(-3*time.Hour))
	lock := fmt.Sprintf(`{"nodeID":"n1","metadata":{"unschedulable":false},"created":%q,"TTL":0}`, now.Add(-40*time.Minute).Format(time.RFC3339))
	labels := map[string]string{"app.kubernetes.io/name": "kured"}
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "kured", Namespace: "kube-system", Labels: labels,
			Annotations: map[string]string{"weave.works/kured-node-lock": lock}},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "kured", Image: "kured:test"}}}}},
	}
	if _, err := cs.AppsV1().DaemonSets("kube-system").Create(ctx, ds, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	b, err := os.ReadFile(tc.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(kc, b, 0o600); err != nil {
		t.Fatal(err)
	}

	env, out, errb := multiEnv()
	deps := defaultWatchDeps()
	deps.open = func(ctx context.Context, o live.Options) (*live.Session, error) {
		o.StaleAfter, o.ProbeInterval = 2*time.Second, 200*time.Millisecond
		return live.Open(ctx, o)
	}
	inspect := make(chan func([]*model.Cluster))
	deps.inspect = inspect
	code := make(chan int, 1)
	c := DefaultCommon()
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	thawed := true
	defer func() {
		if !thawed {
			_ = tc.Thaw()
		}
	}()
	go func() {
		// A short orphan grace: n1's uncordon is not dated (no
		// managedFields entry), so the watch counts n1 steady from when it
		// first saw it schedulable (issue 27 §3).
		code <- runWatchWith(wctx, env, &c, []string{"--kubeconfig", kc, "--tick", "50ms",
			"--request-timeout", "3s", "--sync-timeout", "30s", "--orphan-grace", "2s"}, deps)
	}()

	// look runs f on the watch loop's model; every look also checks that
	// n1 is still in its one cycle.
	looks := 0
	look := func(f func(c *model.Cluster)) {
		t.Helper()
		var phase model.Phase
		var cycles int
		ok := false
		select {
		case inspect <- func(cl []*model.Cluster) {
			if cl[0] == nil {
				return
			}
			ok = true
			phase, cycles = cl[0].Phase("n1"), len(cl[0].CycleDurations())
			f(cl[0])
		}:
		case rc := <-code:
			t.Fatalf("watch exited (%d):\n%s\n%s", rc, out.String(), errb.String())
		case <-time.After(time.Minute):
			t.Fatal("watch loop unresponsive")
		}
		select { // a second round trip orders us after the function
		case inspect <- func([]*model.Cluster) {}:
		case rc := <-code:
			t.Fatalf("watch exited (%d):\n%s", rc, out.String())
		}
		if !ok {
			return
		}
		looks++
		if phase != model.PhaseRecovering || cycles != 0 {
			t.Fatalf("look %d: n1 %s with %d finished cycle(s), want recovering in its one cycle:\n%s", looks, phase, cycles, out.String())
		}
	}
	// until looks until cond holds (on the loop's model).
	until := func(what string, cond func(c *model.Cluster) bool) {
		t.Helper()
		deadline := time.Now().Add(90 * time.Second)
		for {
			met := false
			look(func(c *model.Cluster) { met = cond(c) })
			if met {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s:\n%s", what, out.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	status := func(c *model.Cluster, n model.SourceName) model.SourceStatus {
		h, _ := c.Source(n)
		return h.Status
	}
	allOK := func(c *model.Cluster) bool {
		return status(c, model.SourceNodes) == model.StatusOK && status(c, model.SourceKured) == model.StatusOK
	}
	orphaned := func(c *model.Cluster) bool {
		for _, s := range c.LockStatuses() {
			if s.Holder == "n1" && s.Verdict == model.VerdictOrphaned {
				return true
			}
		}
		return false
	}
	// some recomputes: the loop's clock moved on by d since this call.
	some := func(d time.Duration, also func(c *model.Cluster)) {
		t.Helper()
		var from time.Time
		look(func(c *model.Cluster) { from = c.Now() })
		until(fmt.Sprintf("%s of recomputes", d), func(c *model.Cluster) bool {
			also(c)
			return c.Now().Sub(from) >= d
		})
	}
	// phaseLines are the phase and lock lines logged since the freeze
	// (before it, n1's lock may be judged orphaned once its grace passed).
	mark := 0
	phaseLines := func() []string {
		var ls []string
		for _, l := range strings.Split(out.String()[mark:], "\n") {
			if strings.Contains(l, " phase ") || strings.Contains(l, "judged") || strings.Contains(l, "released") || strings.Contains(l, "taken") {
				ls = append(ls, l)
			}
		}
		return ls
	}

	until("n1 recovering, its lock orphaned, every source ok", func(c *model.Cluster) bool { return allOK(c) && orphaned(c) })

	// The freeze: every source stale, and several recomputes while so.
	mark = len(out.String())
	if err := tc.Freeze(); err != nil {
		t.Fatal(err)
	}
	thawed = false
	until("nodes and kured stale", func(c *model.Cluster) bool {
		return status(c, model.SourceNodes) == model.StatusStale && status(c, model.SourceKured) == model.StatusStale
	})
	some(3*time.Second, func(c *model.Cluster) {
		if len(c.StaleInputs()) == 0 && !allOK(c) {
			t.Errorf("sources not ok but StaleInputs is empty")
		}
	})
	if err := tc.Thaw(); err != nil {
		t.Fatal(err)
	}
	thawed = true
	until("every source ok after the thaw, the lock orphaned again", func(c *model.Cluster) bool { return allOK(c) && orphaned(c) })
	some(time.Second, func(*model.Cluster) {})

	// The restart: connections break, lists fail until it is back.
	notOK := false
	restarted := make(chan error, 1)
	go func() { restarted <- tc.RestartAPIServer() }()
	until("a source not ok during the restart", func(c *model.Cluster) bool {
		notOK = notOK || !allOK(c)
		return notOK
	})
	if err := <-restarted; err != nil {
		t.Fatal(err)
	}
	until("every source ok after the restart, the lock orphaned again", func(c *model.Cluster) bool { return allOK(c) && orphaned(c) })
	some(time.Second, func(*model.Cluster) {})

	if ls := phaseLines(); len(ls) != 0 {
		t.Fatalf("watch logged phase or lock lines from the freeze on:\n%s\n\nfull output:\n%s", strings.Join(ls, "\n"), out.String())
	}
	if before := out.String()[:mark]; !strings.Contains(before, "kured:kube-system/kured held by n1") || !strings.Contains(before, "orphaned") {
		t.Errorf("the lock and its orphaned verdict are not logged before the freeze:\n%s", out.String())
	}
	txt := out.String()
	if after := txt[mark:]; strings.Contains(after, " blocker ") {
		t.Errorf("blocker lines from stale data:\n%s", after)
	}
	for _, want := range []string{"source nodes ok → stale", "source kured ok → stale", "source nodes stale → ok"} {
		if !strings.Contains(txt, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("output:\n%s", txt)
	}
	cancel()
	<-code
}
