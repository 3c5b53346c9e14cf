package scalebench_test

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rebootwatch/rebootwatch/internal/testenv/testcluster"
)

// The terminal case runs the real `rebootwatch` binary (built from this
// tree) in a real terminal, as an operator sees it: a tmux pane of
// termCols×termRows with TERM=xterm-256color, a clean HOME and XDG
// directories (so no user configuration is read) and the benchmark's
// kubeconfig; each tool has its own HOME for all its runs, warmed by one
// run that is not counted (k9s keeps its discovery cache there, as an
// operator's does). It polls the pane's screen every pollEvery and
// measures, per run:
//
//   - first node row: wall time from the moment tmux is asked to start the
//     process (the command goes over one tmux control-mode client, so no
//     tmux client is forked) until a row of the Nodes table holding a
//     fixture node's name is on the screen;
//   - full picture: until the screen shows every node and every volume,
//     read fresh: the header's pills of nodes, kured, fleetlock and longhorn
//     say ✓, and so does every other pill but prometheus's, which may say
//     "off" or "not installed" (the fixture has no Prometheus); the Nodes
//     panel's title counts every node and the Longhorn panel's counts add
//     up to every volume;
//   - peak RSS (VmHWM of /proc/PID/status) and CPU time (utime+stime of
//     /proc/PID/stat) of the process, read once the full picture is on the
//     screen, just before the quit key is sent.
//
// With REBOOTWATCH_BENCH_K9S=/path/to/k9s the same runs are made with
// `k9s -c nodes` (k9s's default splash screen, which it holds for a fixed
// second, and again with --splashless), in the same pane size, environment
// and kubeconfig: first node row = a fixture node's name in k9s's table,
// full picture = k9s's table title counting every node (k9s shows no
// volumes on that screen), and the ratios rebootwatch/k9s of both times and
// of the peak RSS are reported. k9s is never built by this repository: build
// it yourself, e.g. `GOBIN=/tmp/k9s-bin go install github.com/derailed/k9s@v0.50.16`.
//
// REBOOTWATCH_BENCH_SCREENS=DIR writes, per tool and run, the screen seen
// at the first node row and at the full picture (for checking what was
// measured).
const (
	termCols, termRows = 160, 50
	pollEvery          = 10 * time.Millisecond
	termTimeout        = 3 * time.Minute
)

// screenTool is one program measured in the terminal.
type screenTool struct {
	name string
	argv []string
	// firstRow and full say whether the screen shows a first node row and
	// the full picture.
	firstRow, full func(screen string) bool
	// quit is the tmux key that quits it.
	quit string
}

// screenRun is one run's measures.
type screenRun struct {
	firstRow, full time.Duration
	hwmKiB         int64
	cpu            float64
	// polls is how many screens were captured, pollMax the slowest
	// capture.
	polls   int
	pollMax time.Duration
}

var (
	// A row of rebootwatch's Nodes table starts at the panel's border with
	// the node's name; the header's and the Locks panel's mentions of a
	// node never do.
	rwNodeRow   = regexp.MustCompile(`(?m)^│node-\d{5} `)
	rwNodeCount = regexp.MustCompile(`[─ ](\d+) nodes · sort`)
	// rwLonghorn is the Longhorn panel's count line, whole ("✓ 12 healthy  ! 0
	// degraded …") or compact when the panel is narrow ("✓6667 !1111 ✗1111 ?1111").
	rwLonghorn = regexp.MustCompile(`✓ ?(\d+)(?: healthy)? +! ?(\d+)(?: degraded)? +✗ ?(\d+)(?: faulted)? +\? ?(\d+)(?:[ …│]|$)`)
	// rwPill is one source pill of the header's first line.
	rwPill   = regexp.MustCompile(`(nodes|kured|fleetlock|longhorn|prometheus|pdbs|pods|flatcar|suc) (✓|[^│]*?)(?: │|$)`)
	k9sRow   = regexp.MustCompile(`(?m)^│?\s*node-\d{5}\s`)
	k9sTitle = regexp.MustCompile(`(?i)nodes(?:\([^)]*\))?\[([\d,]+)\]`)
)

func (sc *scaleCase) rebootwatchTool() screenTool {
	return screenTool{
		name: "rebootwatch",
		argv: []string{sc.bins.rebootwatch, "--kubeconfig", sc.c.Kubeconfig},
		firstRow: func(s string) bool {
			return rwNodeRow.MatchString(s)
		},
		full: func(s string) bool { return rwFull(s, sc.nodes, sc.volumes) },
		quit: "q",
	}
}

// rwFull says whether rebootwatch's screen shows every node and volume,
// every source read fresh (prometheus's pill may say "off" or "not
// installed", no other pill anything but ✓).
func rwFull(s string, nodes, volumes int) bool {
	first, _, _ := strings.Cut(s, "\n")
	need := map[string]bool{"nodes": false, "kured": false, "fleetlock": false, "longhorn": false}
	for _, m := range rwPill.FindAllStringSubmatch(first, -1) {
		name, st := m[1], strings.TrimSpace(m[2])
		switch {
		case st == "✓":
			if _, ok := need[name]; ok {
				need[name] = true
			}
		case name == "prometheus" && (st == "off" || st == "not installed"):
		case (name == "flatcar" || name == "suc") && st == "not installed": // the cluster runs kured and fleetlock
		default:
			return false
		}
	}
	for _, ok := range need {
		if !ok {
			return false
		}
	}
	m := rwNodeCount.FindStringSubmatch(s)
	if m == nil || m[1] != strconv.Itoa(nodes) {
		return false
	}
	lh := rwLonghorn.FindStringSubmatch(s)
	if lh == nil {
		return false
	}
	total := 0
	for _, n := range lh[1:] {
		v, _ := strconv.Atoi(n)
		total += v
	}
	return total == volumes
}

func (sc *scaleCase) k9sTool(k9s string, extra ...string) screenTool {
	name := "k9s -c nodes"
	if len(extra) > 0 {
		name += " " + strings.Join(extra, " ")
	}
	return screenTool{
		name:     name,
		argv:     append([]string{k9s, "-c", "nodes", "--kubeconfig", sc.c.Kubeconfig}, extra...),
		firstRow: func(s string) bool { return k9sRow.MatchString(s) },
		full: func(s string) bool {
			m := k9sTitle.FindStringSubmatch(s)
			// k9s writes the count with thousands separators: [1,000].
			return m != nil && strings.ReplaceAll(m[1], ",", "") == strconv.Itoa(sc.nodes) && k9sRow.MatchString(s)
		},
		quit: "C-c",
	}
}

// terminal measures rebootwatch (and k9s, when REBOOTWATCH_BENCH_K9S is
// set) in a tmux pane, runs times each.
func (sc *scaleCase) terminal(b *testing.B) {
	if _, err := exec.LookPath("tmux"); err != nil {
		b.Skip("needs tmux for a real terminal")
	}
	tm := startTmux(b)
	defer tm.close()
	tools := []screenTool{sc.rebootwatchTool()}
	if k9s := os.Getenv("REBOOTWATCH_BENCH_K9S"); k9s != "" {
		sc.tab.add("k9s: %s", k9sVersion(b, k9s))
		tools = append(tools, sc.k9sTool(k9s), sc.k9sTool(k9s, "--splashless"))
	}
	type result struct{ first, full, rss, cpu []float64 }
	results := map[string]*result{}
	for _, t := range tools {
		r := &result{}
		results[t.name] = r
		var polls int
		var pollMax time.Duration
		// One HOME per tool, warmed by a run not counted: an operator's
		// k9s has its discovery cache (~/.kube/cache) as their kubectl has.
		home := b.TempDir()
		warm := sc.screenRun(b, tm, t, home, -1)
		b.Logf("%s: warm-up run (not counted): first node row %.3f s, full picture %.3f s", t.name, warm.firstRow.Seconds(), warm.full.Seconds())
		for i := range sc.runs {
			run := sc.screenRun(b, tm, t, home, i)
			r.first = append(r.first, run.firstRow.Seconds())
			r.full = append(r.full, run.full.Seconds())
			r.rss = append(r.rss, float64(run.hwmKiB)/1024)
			r.cpu = append(r.cpu, run.cpu)
			polls += run.polls
			pollMax = max(pollMax, run.pollMax)
		}
		b.Logf("%s: %d screens captured, the slowest capture took %s", t.name, polls, pollMax)
		what := "terminal " + t.name
		sc.report(b, what, "to first node row s", slices.Clone(r.first))
		sc.report(b, what, "to full picture s", slices.Clone(r.full))
		sc.report(b, what, "peak RSS MiB", slices.Clone(r.rss))
		sc.report(b, what, "CPU s (to full picture)", slices.Clone(r.cpu))
	}
	rw := results[tools[0].name]
	for _, t := range tools[1:] {
		k := results[t.name]
		what := "terminal rebootwatch / " + t.name
		sc.ratio(b, what, "first node row (medians)", rw.first, k.first)
		sc.ratio(b, what, "full picture (medians)", rw.full, k.full)
		sc.ratio(b, what, "peak RSS (medians)", rw.rss, k.rss)
	}
}

// k9sVersion names the k9s binary's module version: a k9s built with `go
// install` says "dev" to `k9s version`, its build info does not.
func k9sVersion(b *testing.B, k9s string) string {
	out, err := exec.Command("go", "version", "-m", k9s).CombinedOutput()
	if err != nil {
		b.Fatalf("REBOOTWATCH_BENCH_K9S=%s: go version -m: %v\n%s", k9s, err, out)
	}
	for _, l := range strings.Split(string(out), "\n") {
		if f := strings.Fields(l); len(f) >= 3 && f[0] == "mod" {
			return f[1] + " " + f[2]
		}
	}
	return "unknown version"
}

// ratio records the ratio of two series' medians.
func (sc *scaleCase) ratio(b *testing.B, what, unit string, a, z []float64) {
	r := median(a) / median(z)
	b.ReportMetric(r, strings.ReplaceAll(what+" "+unit, " ", "-"))
	sc.tab.add("| %s | %s | %s | %.2f× |", sc.name, what, unit, r)
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// screenRun starts t in a fresh pane and measures one run.
func (sc *scaleCase) screenRun(b *testing.B, tm *tmux, t screenTool, home string, run int) screenRun {
	env := []string{"env", "-i", "PATH=/usr/bin:/bin", "HOME=" + home, "TERM=xterm-256color", "COLORTERM=truecolor",
		"LANG=C.UTF-8", "XDG_CONFIG_HOME=" + filepath.Join(home, "config"), "XDG_DATA_HOME=" + filepath.Join(home, "data"),
		"XDG_STATE_HOME=" + filepath.Join(home, "state"), "XDG_CACHE_HOME=" + filepath.Join(home, "cache")}
	session := fmt.Sprintf("run%d", tm.next())
	t0 := time.Now()
	out, err := tm.cmd("new-session -d -P -F '#{pane_pid}' -s " + session + fmt.Sprintf(" -x %d -y %d -- ", termCols, termRows) +
		quoteAll(append(env, t.argv...)))
	if err != nil {
		b.Fatalf("tmux new-session: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil {
		b.Fatalf("tmux new-session printed %q", out)
	}
	defer func() { _, _ = tm.cmd("kill-session -t " + session) }()
	var res screenRun
	var screen, lastTop string
	var trace strings.Builder
	capture := func() {
		c0 := time.Now()
		s, err := tm.cmd("capture-pane -p -t " + session)
		if err != nil {
			b.Fatalf("tmux capture-pane: %v", err)
		}
		res.polls++
		res.pollMax = max(res.pollMax, time.Since(c0))
		screen = s
		// The trace: the screen's top (header and panel titles) each time
		// it changes.
		if top := screenTop(s); top != lastTop {
			fmt.Fprintf(&trace, "--- %.3f s\n%s\n", c0.Sub(t0).Seconds(), top)
			lastTop = top
		}
	}
	wait := func(what string, done func(string) bool) time.Duration {
		next := time.Now()
		for {
			capture()
			if done(screen) {
				return time.Since(t0)
			}
			if time.Since(t0) > termTimeout {
				b.Fatalf("%s: no %s after %s; the screen:\n%s", t.name, what, termTimeout, screen)
			}
			if tm.paneDead(session) {
				capture()
				b.Fatalf("%s exited before its %s; the screen:\n%s", t.name, what, screen)
			}
			next = next.Add(pollEvery)
			if d := time.Until(next); d > 0 {
				time.Sleep(d)
			} else {
				next = time.Now()
			}
		}
	}
	res.firstRow = wait("first node row", t.firstRow)
	sc.saveScreen(b, t.name, run, "first-row", screen)
	res.full = wait("full picture", t.full)
	sc.saveScreen(b, t.name, run, "full", screen)
	sc.saveScreen(b, t.name, run, "trace", trace.String())
	res.hwmKiB = procKiB(pid, "VmHWM")
	res.cpu = testcluster.ProcCPUSeconds(pid)
	if res.hwmKiB == 0 {
		b.Fatalf("%s: no VmHWM for pid %d", t.name, pid)
	}
	if _, err := tm.cmd("send-keys -t " + session + " " + t.quit); err != nil {
		b.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		if tm.paneDead(session) {
			break
		}
		if time.Now().After(deadline) {
			capture()
			b.Fatalf("%s did not quit on %s; the screen:\n%s", t.name, t.quit, screen)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return res
}

func (sc *scaleCase) saveScreen(b *testing.B, tool string, run int, what, screen string) {
	dir := os.Getenv("REBOOTWATCH_BENCH_SCREENS")
	if dir == "" {
		return
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	name := fmt.Sprintf("%d-%s-%d-%s.txt", sc.nodes, strings.NewReplacer(" ", "_", "-", "").Replace(tool), run, what)
	if err := os.WriteFile(filepath.Join(dir, name), []byte(screen), 0o644); err != nil {
		b.Fatal(err)
	}
}

// screenTop is the screen's first 12 lines.
func screenTop(s string) string {
	lines := strings.SplitN(s, "\n", 13)
	return strings.Join(lines[:min(12, len(lines))], "\n")
}

// quoteAll quotes args for tmux's command parser.
func quoteAll(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

// tmux is a private tmux server driven through one control-mode client:
// each command is a line written to it, its output the lines between
// %begin and %end (or %error).
type tmux struct {
	sock  string
	ctl   *exec.Cmd
	in    io.WriteCloser
	out   *bufio.Reader
	mu    sync.Mutex
	count int
}

func startTmux(b *testing.B) *tmux {
	t := &tmux{sock: fmt.Sprintf("rwbench-%d", os.Getpid())}
	base := []string{"-L", t.sock, "-f", "/dev/null"}
	// A placeholder session keeps the server up; the panes stay when
	// their process exits, so an early exit's message can be read.
	if out, err := exec.Command("tmux", append(base, "new-session", "-d", "-s", "keep", "sleep 86400", ";",
		"set", "-g", "remain-on-exit", "on", ";", "set", "-g", "history-limit", "0")...).CombinedOutput(); err != nil {
		b.Fatalf("tmux: %v\n%s", err, out)
	}
	t.ctl = exec.Command("tmux", append(base, "-C", "attach", "-t", "keep")...)
	var err error
	if t.in, err = t.ctl.StdinPipe(); err != nil {
		b.Fatal(err)
	}
	stdout, err := t.ctl.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	t.out = bufio.NewReaderSize(stdout, 1<<16)
	if err := t.ctl.Start(); err != nil {
		b.Fatal(err)
	}
	if _, err := t.cmd("display -p ok"); err != nil {
		t.close()
		b.Fatalf("tmux control client: %v", err)
	}
	return t
}

func (t *tmux) next() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.count++
	return t.count
}

// cmd runs one tmux command and returns its output.
func (t *tmux) cmd(line string) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, err := io.WriteString(t.in, line+"\n"); err != nil {
		return "", err
	}
	for {
		// Skip notifications and the attach's own block until the reply
		// to this command begins.
		l, err := t.out.ReadString('\n')
		if err != nil {
			return "", err
		}
		if !strings.HasPrefix(l, "%begin ") {
			continue
		}
		// A block whose flags are not 1 answers a command that did not
		// come from this client (the attach itself): skip it.
		mine := strings.HasSuffix(strings.TrimSpace(l), " 1")
		var body []string
		for {
			l, err := t.out.ReadString('\n')
			if err != nil {
				return "", err
			}
			end, failed := strings.HasPrefix(l, "%end "), strings.HasPrefix(l, "%error ")
			switch {
			case (end || failed) && !mine:
			case end:
				return strings.Join(body, ""), nil
			case failed:
				return "", fmt.Errorf("%s: %s", line, strings.TrimSpace(strings.Join(body, "")))
			default:
				body = append(body, l)
				continue
			}
			break
		}
	}
}

// paneDead says whether the process of session's pane has exited (the
// pane stays: remain-on-exit).
func (t *tmux) paneDead(session string) bool {
	dead, _ := t.cmd("display -p -t " + session + " '#{pane_dead}'")
	return strings.TrimSpace(dead) == "1"
}

func (t *tmux) close() {
	_ = exec.Command("tmux", "-L", t.sock, "kill-server").Run()
	_ = t.in.Close()
	_ = t.ctl.Wait()
}
