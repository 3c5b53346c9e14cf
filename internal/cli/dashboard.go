package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"github.com/rebootwatch/rebootwatch/internal/live"
	"github.com/rebootwatch/rebootwatch/internal/lock"
	"github.com/rebootwatch/rebootwatch/internal/multi"
	"github.com/rebootwatch/rebootwatch/themes"
	"github.com/rebootwatch/rebootwatch/tui"
)

// runDashboard opens the interactive dashboard on one cluster (or the demo),
// or, for --context a,b / --all-contexts, a cluster list whose enter opens
// one cluster's dashboard.
func runDashboard(ctx context.Context, env Env, c *Common) int {
	if !env.StdoutTTY || !env.StdinTTY {
		return fail(env, errors.New("the dashboard needs a terminal: use --snapshot or watch for scripts and pipes"))
	}
	th, err := chooseTheme(env, c.Theme)
	if err != nil {
		return fail(env, err)
	}
	opts := tui.Options{WallClock: env.Now, Context: ctx, ReadOnly: c.ReadOnly, DryRun: c.DryRun,
		AllowUnsafe: c.AllowUnsafe, Theme: th.start, FixedTheme: th.fixed, UserTheme: th.user,
		NoColor: th.noColor, Bell: c.Bell}
	// Action log lines cannot go to the terminal the dashboard draws on:
	// they are kept and printed when it exits.
	logs := &syncBuffer{}

	var root tea.Model
	if multi.Requested(c.Context, c.AllContexts) {
		contexts, err := resolveContexts(env, c)
		if err != nil {
			return fail(env, err)
		}
		// Open never waits for a cluster to answer; one that cannot be
		// opened is listed with why, the others go on.
		ms := multi.Open(ctx, c.LiveOptions(env), contexts, nil)
		defer multi.Close(ms)
		for _, m := range ms {
			if m.Session == nil {
				opts.Clusters = append(opts.Clusters, tui.ClusterOptions{
					Cluster: multi.Unreachable(m.Context, m.Err, env.Now()), Clock: env.Now})
				continue
			}
			opts.Clusters = append(opts.Clusters, clusterOptions(env, c, m.Session, logs))
		}
		root = tui.NewMulti(opts)
	} else {
		s, err := live.Open(ctx, c.LiveOptions(env))
		if err != nil {
			return fail(env, err)
		}
		defer s.CloseWithin(live.ExitGrace)
		co := clusterOptions(env, c, s, logs)
		opts.Cluster, opts.Events, opts.Clock, opts.Actions, opts.Demo = co.Cluster, co.Events, co.Clock, co.Actions, co.Demo
		root = tui.New(opts)
	}
	p := tea.NewProgram(root, programOptions(ctx, env)...)
	_, runErr := p.Run()
	if logs.Len() > 0 {
		fmt.Fprint(env.Stderr, logs.String())
	}
	if runErr != nil && !errors.Is(runErr, tea.ErrProgramKilled) && !errors.Is(runErr, context.Canceled) {
		return fail(env, runErr)
	}
	return ExitOK
}

// programOptions are the dashboard program's options. On the process's own
// stdout the color profile is the one lipgloss detected when it was
// initialised (its package-level Writer: os.Stdout, os.Environ(), which is
// what Bubble Tea would detect again): inside tmux each detection runs
// `tmux info`, a process of its own, before the first frame.
func programOptions(ctx context.Context, env Env) []tea.ProgramOption {
	opts := []tea.ProgramOption{tea.WithContext(ctx), tea.WithInput(env.Stdin), tea.WithOutput(env.Stdout)}
	if f, ok := env.Stdout.(*os.File); ok && f == os.Stdout {
		opts = append(opts, tea.WithColorProfile(lipgloss.Writer.Profile))
	}
	return opts
}

// clusterOptions wires one opened cluster for the dashboard: its model,
// events and clock, and (unless --read-only) its actions. One engine judges
// and plans, so a plan sees the verdicts (and the orphan grace clocks) the
// screen shows.
func clusterOptions(env Env, c *Common, s *live.Session, logs *syncBuffer) tui.ClusterOptions {
	eng := s.Engine()
	// Judged and explained by the session's engine, with the coordinator
	// kinds' blockers merged in (live.Session.NewCluster).
	cl := s.NewCluster()
	who := env.Getenv("USER")
	if who == "" {
		who = "someone"
	}
	actor := &lock.Actor{Client: s.Client, Who: who + " via rebootwatch", DryRun: c.DryRun,
		Logger: slog.New(slog.NewTextHandler(logs, nil)), Timeout: c.RequestTimeout, Fresh: s.FreshReaders()}
	co := tui.ClusterOptions{Cluster: cl, Events: s.Events, Clock: s.Clock, Demo: s.Demo}
	if !c.ReadOnly {
		co.Actions = tui.LockActions{Engine: eng, Actor: actor}
	}
	return co
}

type themeChoice struct {
	start, user *themes.Theme
	fixed       bool
	noColor     bool
}

// chooseTheme resolves --theme (a built-in name or a file), else the user
// theme file, else background detection; NO_COLOR wins over all of them.
func chooseTheme(env Env, flagValue string) (themeChoice, error) {
	var tc themeChoice
	tc.noColor = themes.NoColorRequested(env.Getenv)
	if flagValue != "" {
		if t, ok := themes.Builtin(flagValue); ok {
			tc.start, tc.fixed = t, true
			return tc, nil
		}
		t, err := themes.LoadFile(flagValue)
		if err != nil {
			return tc, fmt.Errorf("--theme: %w (built-in themes: %s)", err, strings.Join(themes.Names(), ", "))
		}
		tc.start, tc.user, tc.fixed = t, t, true
		return tc, nil
	}
	t, err := themes.LoadUser(env.Getenv)
	if err != nil {
		return tc, err
	}
	if t != nil {
		tc.start, tc.user, tc.fixed = t, t, true
	}
	return tc, nil
}

// syncBuffer is a bytes.Buffer safe for the actor's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Len()
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
