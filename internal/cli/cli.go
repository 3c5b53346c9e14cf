package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/rebootwatch/rebootwatch/internal/sanitize"
)

// Exit codes (DESIGN §7). A usage error (an unknown flag or command, a bad
// flag value) exits 1 as kubectl's do.
const (
	ExitOK        = 0
	ExitError     = 1
	ExitAttention = 2
	// ExitInterrupted: Ctrl-C or SIGTERM ended the command first (128+SIGINT, like kubectl).
	ExitInterrupted = 130
)

// Env is the process environment a command runs in; tests replace it.
type Env struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// StdoutTTY and StdinTTY say whether those are terminals.
	StdoutTTY bool
	StdinTTY  bool
	Getenv    func(string) string
	// Now is the wall clock (the demo has its own, in the session).
	Now func() time.Time
}

// OSEnv returns the real process environment.
func OSEnv() Env {
	return Env{
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		StdoutTTY: isTerminal(os.Stdout), StdinTTY: isTerminal(os.Stdin),
		Getenv: os.Getenv, Now: time.Now,
	}
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// Main runs rebootwatch with args (without the program name) and returns the exit code.
func Main(args []string, env Env) int {
	return mainAs("", args, env)
}

// PluginName is how kubectl runs the plugin binary kubectl-rebootwatch.
const PluginName = "kubectl rebootwatch"

// MainPlugin is Main for the kubectl plugin (`kubectl rebootwatch …`, the
// binary kubectl-rebootwatch): the same commands and flags, with the help
// and hints naming the command as the user typed it.
func MainPlugin(args []string, env Env) int {
	return mainAs(PluginName, args, env)
}

func mainAs(name string, args []string, env Env) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return execute(ctx, args, env, execOptions{displayName: name})
}

// run runs the command line in ctx (tests call it directly).
func run(ctx context.Context, args []string, env Env) int {
	return execute(ctx, args, env, execOptions{})
}

// execOptions are the seams of one execution.
type execOptions struct {
	// displayName names the command in help and hints ("" is rebootwatch).
	displayName string
	// common, when set, holds the shared flags' starting values (tests).
	common *Common
	// watch, when set, replaces watch's dependencies (tests).
	watch *watchDeps
}

// runner carries one execution's state to its commands.
type runner struct {
	env  Env
	c    *Common
	code int
	// watch is what the watch loop needs from the outside world.
	watch watchDeps
}

// reported is an error already printed on stderr: its code is the exit code.
type reported struct{ code int }

func (r reported) Error() string { return fmt.Sprintf("exit %d", r.code) }

// execute builds the command tree and runs args through it.
func execute(ctx context.Context, args []string, env Env, o execOptions) int {
	c := o.common
	if c == nil {
		d := DefaultCommon()
		c = &d
	}
	r := &runner{env: env, c: c, watch: defaultWatchDeps()}
	if o.watch != nil {
		r.watch = *o.watch
	}
	root := r.newRoot(o.displayName)
	root.SetArgs(args)
	root.SetIn(env.Stdin)
	root.SetOut(env.Stdout)
	root.SetErr(env.Stderr)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return r.code
	}
	var rep reported
	if errors.As(err, &rep) {
		return rep.code
	}
	var mode modeError
	if errors.As(err, &mode) {
		return fail(env, mode.error)
	}
	return usageError(env, cmd, args, err)
}

// usageError prints a usage error the way kubectl does — the error, then
// where to look — and returns ExitError:
//
//	error: unknown flag: --nope
//	See 'rebootwatch --help' for usage.
func usageError(env Env, cmd *cobra.Command, args []string, err error) int {
	msg := err.Error()
	if m := unknownCommand.FindStringSubmatch(msg); m != nil && cmd != nil {
		if s := commandHint(cmd, args, m[1]); s != "" {
			msg += " (did you mean " + s + "?)"
		} else if s := cmd.SuggestionsFor(m[1]); len(s) > 0 {
			msg += " (did you mean " + strings.Join(s, " or ") + "?)"
		}
	}
	path := "rebootwatch"
	if cmd != nil {
		path = cmd.CommandPath()
	}
	fmt.Fprintf(env.Stderr, "error: %s\nSee '%s --help' for usage.\n", sanitize.Short(msg, 2000), path)
	return ExitError
}

// commandHint explains an unknown command word that is not a misspelt
// command: the value of a flag whose value is optional, given after a space
// (`--demo kured`: pflag takes such a value only after "="), or the name of
// a flag typed as a command (`snapshot` for --snapshot).
func commandHint(cmd *cobra.Command, args []string, word string) string {
	for i := 1; i < len(args); i++ {
		if args[i] != word {
			continue
		}
		prev := args[i-1]
		var f *pflag.Flag
		switch {
		case strings.HasPrefix(prev, "--") && !strings.Contains(prev, "="):
			f = cmd.Flag(prev[2:])
		case len(prev) == 2 && prev[0] == '-' && prev[1] != '-':
			f = cmd.Flags().ShorthandLookup(prev[1:])
			if f == nil {
				f = cmd.InheritedFlags().ShorthandLookup(prev[1:])
			}
		}
		if f != nil && f.NoOptDefVal != "" {
			return optionalValueHint(cmd, prev, f, word)
		}
		break
	}
	if f := cmd.Flag(word); f != nil && !f.Hidden && len(word) > 1 {
		return "--" + word
	}
	return ""
}

// valueLister is a flag value that knows every value it accepts (--demo's
// scenarios).
type valueLister interface{ Values() []string }

// optionalValueHint says what `prev word` meant, where prev is a flag whose
// value is optional and word was taken as a command: the flag with that
// value when word is one it accepts (or when the flag does not list its
// values); the subcommand when word is a subcommand misspelt (`--demo
// watc`: `--demo watch`); the closest accepted value when word is a value
// misspelt (`--demo kurd`: `--demo=kured`). "" when nothing is close.
func optionalValueHint(cmd *cobra.Command, prev string, f *pflag.Flag, word string) string {
	vl, ok := f.Value.(valueLister)
	if !ok {
		return prev + "=" + word
	}
	values := vl.Values()
	if slices.Contains(values, word) {
		return prev + "=" + word
	}
	if s := cmd.SuggestionsFor(word); len(s) > 0 {
		out := make([]string, len(s))
		for i, c := range s {
			out[i] = prev + " " + c
		}
		return strings.Join(out, " or ")
	}
	var best []string
	bestD := 2 // one or two edits away
	for _, v := range values {
		switch d := editDistance(word, v); {
		case d > bestD:
		case d < bestD:
			best, bestD = []string{prev + "=" + v}, d
		default:
			best = append(best, prev+"="+v)
		}
	}
	return strings.Join(best, " or ")
}

var (
	unknownCommand = regexp.MustCompile(`^unknown command "([^"]*)"`)
	unknownFlag    = regexp.MustCompile(`^unknown flag: --([^\s]+)`)
)

// flagError adds a "did you mean" to an unknown flag one or two edits away
// from a known one, and says why --snapshot is refused with a subcommand.
func flagError(cmd *cobra.Command, err error) error {
	m := unknownFlag.FindStringSubmatch(err.Error())
	if m == nil {
		return err
	}
	if m[1] == "snapshot" && cmd.HasParent() {
		// --snapshot is a mode of its own: with a subcommand one of them
		// would be silently ignored.
		name := cmd.Name()
		return modeError{fmt.Errorf("--snapshot and %s are different modes: give one (rebootwatch --snapshot, or rebootwatch %s)", name, name)}
	}
	if s := suggestFlag(cmd.Flags(), m[1]); s != "" {
		return fmt.Errorf("%w (did you mean %s?)", err, s)
	}
	return err
}

// modeError is a usage error that explains itself in one line.
type modeError struct{ error }

// suggestFlag returns the known flags one or two edits from name.
func suggestFlag(fs *pflag.FlagSet, name string) string {
	var best []string
	bestD := 2 // one or two edits away
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		d := editDistance(name, f.Name)
		switch {
		case len(f.Name) < 2 || d > bestD:
		case d < bestD:
			best, bestD = []string{"--" + f.Name}, d
		default:
			best = append(best, "--"+f.Name)
		}
	})
	return strings.Join(best, " or ")
}

// editDistance is the Levenshtein distance of two short strings.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// fail prints one clear line and returns ExitError. Errors may quote
// cluster values (lock names, holders, API messages): sanitised here.
func fail(env Env, err error) int {
	fmt.Fprintf(env.Stderr, "rebootwatch: %s\n", sanitize.Short(err.Error(), 2000))
	return ExitError
}

// failed is fail for a command's hooks: the line is printed, and the
// returned error stops the command with ExitError.
func failed(env Env, err error) error {
	return reported{fail(env, err)}
}
