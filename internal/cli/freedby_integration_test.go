package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rebootwatch/rebootwatch/internal/testenv/testprom"
	"github.com/rebootwatch/rebootwatch/model"
)

// TestWatchSaysWhoReapedRealCluster is issue 27 item 4 on a real API
// server: a running watch sees kured's lock held by worker-2, a node that
// no longer exists (a ghost). Another rebootwatch process (the CLI, run by
// alice) reaps it. The watch must not say "released by worker-2", the
// deleted holder: it reads the Event the reap recorded and says who did.
// kured_reboot_required comes from a real Prometheus, so that --until-done
// can tell the window is done (without it, it never is).
func TestWatchSaysWhoReapedRealCluster(t *testing.T) {
	tc := cliCluster(t)
	prom := testprom.Start(t, testprom.Options{Rules: `groups:
  - name: test
    rules:
      - record: kured_reboot_required
        expr: label_replace(vector(0), "node", "worker-1", "", "")
`})
	waitProm(t, prom.URL, `kured_reboot_required{node="worker-1"}`)
	cs := tc.Client(t)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Second)
	mkNode(t, cs, "worker-1", "boot-1", now.Add(-time.Hour))
	blkKured(t, cs, "worker-2", now.Add(-30*time.Minute), "--period=1m")
	kc := kubeconfigCopy(t, tc)

	env, out, errb := multiEnv()
	deps := defaultWatchDeps()
	inspect := make(chan func([]*model.Cluster))
	deps.inspect = inspect
	code := make(chan int, 1)
	c := DefaultCommon()
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		code <- runWatchWith(wctx, env, &c, []string{"--kubeconfig", kc, "--tick", "50ms", "--request-timeout", "5s",
			"--sync-timeout", "30s", "--prometheus-url", prom.URL, "--prometheus-interval", "5s", "--until-done"}, deps)
	}()
	ghost := func(cl *model.Cluster) bool {
		for _, s := range cl.LockStatuses() {
			if s.Holder == "worker-2" && s.Verdict == model.VerdictGhost {
				return true
			}
		}
		return false
	}
	deadline := time.Now().Add(time.Minute)
	for seen := false; !seen; {
		select {
		case inspect <- func(cl []*model.Cluster) { seen = cl[0] != nil && ghost(cl[0]) }:
		case rc := <-code:
			t.Fatalf("watch exited (%d):\n%s\n%s", rc, out.String(), errb.String())
		}
		select { // a second round trip orders us after the function
		case inspect <- func([]*model.Cluster) {}:
		case rc := <-code:
			t.Fatalf("watch exited (%d):\n%s\n%s", rc, out.String(), errb.String())
		}
		if time.Now().After(deadline) {
			t.Fatalf("the watch never judged the lock a ghost:\n%s", out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}

	// Another process: alice's CLI reaps the ghost.
	renv, rout, rerr := multiEnv()
	renv.Getenv = func(k string) string {
		switch k {
		case "HOME":
			return "/nonexistent-home"
		case "USER":
			return "alice"
		}
		return ""
	}
	if rc := run(ctx, []string{"--kubeconfig", kc, "--request-timeout", "5s", "reap", "--kind", "kured", "--yes"}, renv); rc != ExitOK {
		t.Fatalf("reap exit %d:\n%s\n%s", rc, rout.String(), rerr.String())
	}

	select {
	case rc := <-code:
		if rc != ExitOK {
			t.Fatalf("watch exit %d:\n%s\n%s", rc, out.String(), errb.String())
		}
	case <-time.After(time.Minute):
		t.Fatalf("--until-done did not end after the reap:\n%s", out.String())
	}
	txt := out.String()
	want := "lock    kured:kube-system/kured held by worker-2 reaped by alice via rebootwatch"
	if !strings.Contains(txt, want) || strings.Contains(txt, "released by worker-2") {
		t.Fatalf("watch output lacks %q (or credits the holder):\n%s", want, txt)
	}
	if i, j := strings.Index(txt, want), strings.Index(txt, "done    done:"); j >= 0 && i > j {
		t.Fatalf("the done line came before the reap's:\n%s", txt)
	}
}
