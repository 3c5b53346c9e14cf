package cli

import (
	"context"
	"flag"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"

	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
)

// quietClientGo routes client-go's own logging (klog) and API warnings
// away from the terminal: they would tear the dashboard and clutter
// reports. With -v they go to stderr as structured lines.
//
// klog's global logger is set once per process, to a handler that forwards
// to the current run's destination: setting klog's logger again on every
// run would race with informers of an earlier run that are still logging
// (tests run many commands in one process).
func quietClientGo(env Env, verbose bool) {
	level := 0
	if verbose {
		level = 6
	}
	quietClientGoLevel(env, level)
}

// quietClientGoLevel is quietClientGo at klog level level (0: quiet).
func quietClientGoLevel(env Env, level int) {
	verbose := level > 0
	if verbose {
		// klog drops client-go's V(n) lines before any handler sees them
		// unless its verbosity allows them: -v is klog's -v=6 (requests,
		// responses, reflector diagnostics), all levels let through.
		var h slog.Handler = slog.NewTextHandler(env.Stderr, &slog.HandlerOptions{Level: slog.Level(-16)})
		klogDest.Store(&h)
		setKlogVerbosity(strconv.Itoa(level))
	} else {
		klogDest.Store(nil)
		setKlogVerbosity("0")
	}
	klogOnce.Do(func() { klog.SetSlogLogger(slog.New(forwardHandler{})) })
	if !verbose {
		rest.SetDefaultWarningHandler(rest.NoWarnings{})
	}
}

// setKlogVerbosity sets klog's global -v (an atomic level inside klog).
// The flag set itself is not safe for concurrent use (Set records the flag
// in a map), and tests run commands in parallel: klogFlagsMu serialises it.
func setKlogVerbosity(v string) {
	klogFlagsMu.Lock()
	defer klogFlagsMu.Unlock()
	if klogFlags == nil {
		klogFlags = flag.NewFlagSet("klog", flag.ContinueOnError)
		klog.InitFlags(klogFlags)
	}
	_ = klogFlags.Set("v", v)
}

var (
	klogFlagsMu sync.Mutex
	klogFlags   *flag.FlagSet
)

var (
	klogOnce sync.Once
	// klogDest is where client-go's lines go now; nil discards them.
	klogDest atomic.Pointer[slog.Handler]
)

// forwardHandler passes records to the handler in klogDest at the time
// they are logged, with the attributes and groups added on the way.
type forwardHandler struct {
	with []func(slog.Handler) slog.Handler
}

func (f forwardHandler) dest() slog.Handler {
	p := klogDest.Load()
	if p == nil {
		return nil
	}
	h := *p
	for _, w := range f.with {
		h = w(h)
	}
	return h
}

func (f forwardHandler) Enabled(ctx context.Context, l slog.Level) bool {
	p := klogDest.Load()
	return p != nil && (*p).Enabled(ctx, l)
}

func (f forwardHandler) Handle(ctx context.Context, r slog.Record) error {
	if h := f.dest(); h != nil {
		return h.Handle(ctx, r)
	}
	return nil
}

func (f forwardHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return forwardHandler{with: append(f.with[:len(f.with):len(f.with)], func(h slog.Handler) slog.Handler { return h.WithAttrs(as) })}
}

func (f forwardHandler) WithGroup(name string) slog.Handler {
	return forwardHandler{with: append(f.with[:len(f.with):len(f.with)], func(h slog.Handler) slog.Handler { return h.WithGroup(name) })}
}
