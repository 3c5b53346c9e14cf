package cli

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rebootwatch/rebootwatch/internal/live"
	"github.com/rebootwatch/rebootwatch/internal/lock"
	"github.com/rebootwatch/rebootwatch/internal/multi"
	"github.com/rebootwatch/rebootwatch/internal/sanitize"
	"github.com/rebootwatch/rebootwatch/model"
)

const actionLong = `It judges the lock, prints the verdict and every safety gate, and makes one
write carrying the judged resourceVersion; releasing a fleetlock holder also
uncordons it (fleetlock cordoned it and uncordons only on the holder's own
unlock), a second write with its own precondition, unless --keep-cordoned.
Without a terminal it needs --yes. --allow-unsafe overrides failed gates only
on a terminal, after you type the holder's name; --yes alone never overrides
anything. -o json prints the verdict, the gates, the write and the outcome as
one JSON document.

Exit codes: 0 done (or dry run), 1 error (cluster unreadable, conflict,
forbidden, no such lock), 2 refused by the verdict or a gate.`

// actionFlags are release/reap's own flags.
type actionFlags struct {
	kind   string
	lock   string
	holder string
	entry  int
	node   string
	yes    bool
	// keepCordoned drops the uncordon that goes with a fleetlock release.
	keepCordoned bool
}

// actionCommand is the shared shape of release, reap and uncordon.
func (r *runner) actionCommand(action model.Action, use, short, example string) *cobra.Command {
	af := actionFlags{entry: -1}
	cmd := &cobra.Command{
		Use:     use,
		Short:   short,
		Long:    short + ".\n\n" + actionLong,
		Example: example,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r.code = runAction(cmd.Context(), r.env, r.c, string(action), af)
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&af.kind, "kind", "", "Lock kind: "+kindWords()+" (default: the one lock discovery finds, or of several the only one whose verdict allows the action)")
	fs.StringVar(&af.lock, "lock", "", "The lock as namespace/name (default: the one lock of that kind)")
	fs.StringVar(&af.holder, "holder", "", "The holder (node name or holder id) — needed for a kured multi-lock")
	fs.BoolVar(&af.yes, "yes", false, "Do not ask for confirmation (needed without a terminal; never overrides a gate)")
	if action == model.ActionUncordon {
		fs.StringVar(&af.node, "node", "", "The node that is done · still cordoned")
	}
	fs.IntVar(&af.entry, "entry", -1, "The entry's position (0-based) when a kured multi-lock lists the holder more than once")
	if action == model.ActionRelease {
		fs.BoolVar(&af.keepCordoned, "keep-cordoned", false, "Leave the holder cordoned (a fleetlock release otherwise also uncordons the holder, as fleetlock's own unlock does)")
	}
	_ = cmd.RegisterFlagCompletionFunc("kind", cobra.FixedCompletions(lockKinds(), cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// lockKinds are the registered lock kinds (the lock engine's, from the
// coordinator registry), for --kind's usage, help and completion.
func lockKinds() []string {
	var out []string
	for _, k := range lock.Kinds() {
		out = append(out, string(k))
	}
	return out
}

// kindWords names the lock kinds in a sentence: "a or b", "a, b or c".
func kindWords() string {
	ks := lockKinds()
	if len(ks) < 2 {
		return strings.Join(ks, "")
	}
	return strings.Join(ks[:len(ks)-1], ", ") + " or " + ks[len(ks)-1]
}

// kindUsage is --kind in a usage line: "[--kind a|b]".
func kindUsage() string { return "[--kind " + strings.Join(lockKinds(), "|") + "]" }

// runAction runs `rebootwatch release|reap|uncordon` (DESIGN §9, issue 4).
func runAction(ctx context.Context, env Env, c *Common, action string, af actionFlags) int {
	a := model.Action(action)
	if af.kind != "" {
		if _, err := lock.DriverFor(model.LockKind(af.kind)); err != nil {
			return fail(env, fmt.Errorf("--kind: %w", err))
		}
	}
	var want model.LockRef
	if af.lock != "" {
		ns, name, ok := strings.Cut(af.lock, "/")
		if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
			return fail(env, fmt.Errorf("--lock %q: want namespace/name", af.lock))
		}
		want.Namespace, want.Name = ns, name
	}
	if multi.Requested(c.Context, c.AllContexts) {
		return fail(env, errors.New(action+" acts on one cluster: pick one --context"))
	}
	if c.AllowUnsafe && !c.DryRun && !(env.StdinTTY && env.StdoutTTY) {
		return fail(env, errors.New("--allow-unsafe needs a terminal to type the holder's name on; it cannot be used from a script"))
	}

	lo := c.LiveOptions(env)
	lo.Action = true
	s, err := live.Open(ctx, lo)
	if err != nil {
		return fail(env, err)
	}
	defer s.CloseWithin(live.ExitGrace)
	sctx, cancel := context.WithTimeout(ctx, c.SyncTimeout)
	cl, syncErr := s.Collect(sctx)
	cancel()
	if ctx.Err() != nil {
		return interruptedNoReport(env)
	}
	if syncErr != nil && c.Verbose {
		say(env.Stderr, "rebootwatch: %v\n", syncErr)
	}
	if !cl.Readable() {
		return fail(env, fmt.Errorf("could not read the cluster %q: %s", cl.Context, unreadable(cl)))
	}
	eng := s.Engine()
	var ref model.LockRef
	if a == model.ActionUncordon {
		if af.node == "" {
			return fail(env, errors.New("uncordon needs --node NODE"))
		}
	} else if ref, err = pickLock(cl, model.LockKind(af.kind), want); err != nil {
		var several severalLocks
		if !errors.As(err, &several) {
			return fail(env, err)
		}
		// Several match: the one whose verdict allows the action, if
		// only one does (its gates are still judged below).
		var note string
		ref, note, err = pickByVerdict(several.refs, a, func(r model.LockRef) (bool, string) {
			return verdictAllows(eng, cl, r, a, af, s.Clock())
		})
		if err != nil {
			return fail(env, err)
		}
		say(env.Stderr, "rebootwatch: %s\n", sanitize.Short(note, 2000))
	}
	planFor := func() (lock.Plan, error) {
		if a == model.ActionUncordon {
			return eng.PlanUncordon(cl, af.node, s.Clock())
		}
		p, err := eng.PlanEntry(cl, ref, af.holder, af.entry, a, s.Clock())
		if af.keepCordoned {
			p = p.KeepCordoned()
		}
		return p, err
	}
	plan, err := planFor()
	if err != nil {
		return fail(env, err)
	}

	out := &actionOutput{env: env, json: c.Output == "json", plan: plan}
	out.describe()

	in := bufio.NewReader(env.Stdin)
	override := false
	asked := false // a person was asked, so time may have passed
	if !plan.Allowed && c.AllowUnsafe && plan.Write.Op != "" {
		if c.DryRun {
			override = true
		} else {
			name := holderName(plan.Status)
			say(env.Stderr, "\n%s\nOVERRIDE: this %s ignores the failed gates above. Type the holder's name (%s) to go ahead: ", plan.Refusal, action, name)
			line, ok := ask(ctx, in)
			if !ok {
				return interrupted(env)
			}
			asked = true
			if line != name {
				out.finish(lock.Result{Outcome: model.OutcomeRefused, Message: "override not confirmed (typed " + quoteOrNothing(line) + "); nothing changed", Write: plan.Write})
				return ExitAttention
			}
			override = true
		}
	}
	// The typed holder name confirms an override; an allowed action asks y/N.
	if plan.Allowed && !c.DryRun && !af.yes {
		if !(env.StdinTTY && env.StdoutTTY) {
			return fail(env, errors.New("no terminal to confirm on: pass --yes to "+action+" from a script (or --dry-run to see the write)"))
		}
		if a == model.ActionUncordon {
			say(env.Stderr, "\nUncordon node %s? [y/N] ", af.node)
		} else {
			say(env.Stderr, "\n%s %s held by %s? [y/N] ", capital(action), ref, holderName(plan.Status))
		}
		l, ok := ask(ctx, in)
		if !ok {
			return interrupted(env)
		}
		l = strings.ToLower(l)
		asked = true
		if l != "y" && l != "yes" {
			out.finish(lock.Result{Outcome: model.OutcomeRefused, Message: "not confirmed; nothing changed", Write: plan.Write})
			return ExitAttention
		}
	}

	// A person may have taken minutes to answer: judge again on the
	// cluster as it is now, and act only on the decision they saw.
	if asked {
		s.Drain(cl)
		cl.Recompute(s.Clock())
		fresh, err := planFor()
		if err != nil || !fresh.SameDecision(plan) {
			why := "the verdict, a gate or the write changed"
			if err != nil {
				why = err.Error()
			}
			out.finish(lock.Result{Outcome: model.OutcomeRefused, Message: "the cluster changed while waiting for confirmation (" + why + "): nothing changed; run the command again", Write: plan.Write})
			return ExitAttention
		}
	}

	who := env.Getenv("USER")
	if who == "" {
		who = "someone"
	}
	// The action's structured log line follows the human output, never
	// inside it (stdout and stderr share a terminal): it is held until the
	// result is printed, then written on stderr — from a script always (an
	// audit line for its log), on a terminal only with -v (the output
	// above already says what it says; the cluster keeps an Event).
	var logLine bytes.Buffer
	actor := &lock.Actor{Client: s.Client, Who: who + " via rebootwatch " + action, DryRun: c.DryRun,
		Logger: actionLogger(&logLine), Timeout: c.RequestTimeout, Fresh: s.FreshReaders()}
	r := actor.Do(ctx, plan, lock.DoOptions{AllowUnsafe: override})
	out.finish(r)
	if c.Verbose || !env.StdoutTTY {
		_, _ = env.Stderr.Write(logLine.Bytes())
	}
	switch {
	case r.Complete():
		return ExitOK
	case r.Outcome == model.OutcomeRefused:
		return ExitAttention
	}
	return ExitError
}

// actionLogger is the logger of the action's log line. Its
// values come from the cluster (a holder, a reason quoting it): each is
// bounded as the text output bounds them (maxValue, keeping its start and
// end); the text handler quotes and escapes what is not printable.
func actionLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Value.Kind() == slog.KindString || a.Value.Kind() == slog.KindAny {
			if s := a.Value.String(); len(s) > maxValue {
				a.Value = slog.StringValue(sanitize.Middle(s, maxValue))
			}
		}
		return a
	}}))
}

// pickLock finds the lock the flags name: by kind and/or namespace/name,
// else the one lock discovery found, else an error naming the candidates.
func pickLock(cl *model.Cluster, kind model.LockKind, want model.LockRef) (model.LockRef, error) {
	var cands []model.LockRef
	for _, l := range cl.Locks() {
		if kind != "" && l.Kind != kind {
			continue
		}
		if want.Name != "" && (l.Namespace != want.Namespace || l.Name != want.Name) {
			continue
		}
		cands = append(cands, l.LockRef)
	}
	switch len(cands) {
	case 1:
		return cands[0], nil
	case 0:
		var all []string
		for _, l := range cl.Locks() {
			all = append(all, describeRef(l.LockRef))
		}
		what := "no lock"
		if kind != "" {
			what = "no " + string(kind) + " lock"
		}
		if want.Name != "" {
			what += " " + want.Namespace + "/" + want.Name
		}
		// Not found is an answer only where the locks were read.
		why, unread := cl.LocksUnread()
		if kind != "" {
			why, unread = cl.LockSourceUnread(kind)
		}
		if unread {
			which := "a lock"
			if kind != "" {
				which = "a " + string(kind) + " lock"
			}
			if want.Name != "" {
				which += " " + want.Namespace + "/" + want.Name
			}
			return model.LockRef{}, fmt.Errorf("cannot tell whether there is %s: locks unknown: %s", which, why)
		}
		if len(all) == 0 {
			return model.LockRef{}, fmt.Errorf("%s found: discovery found no kured DaemonSet and no fleetlock Lease (see --kured-daemonset, --fleetlock-namespace)", what)
		}
		return model.LockRef{}, fmt.Errorf("%s found; locks: %s", what, strings.Join(all, ", "))
	}
	return model.LockRef{}, severalLocks{cands}
}

// severalLocks is pickLock's answer when more than one lock matches.
type severalLocks struct{ refs []model.LockRef }

func (e severalLocks) Error() string {
	return fmt.Sprintf("%d locks match; pick one: %s", len(e.refs), describeRefs(e.refs))
}

// describeRefs names locks as the flags that pick them, sorted.
func describeRefs(refs []model.LockRef) string {
	names := make([]string, len(refs))
	for i, r := range refs {
		names[i] = describeRef(r)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// pickByVerdict picks, of several matching locks, the only one whose
// verdict allows action a (allows says whether it does, and why not), and
// returns a note saying which and why. With none, or more than one, it
// refuses and names them all: which lock to free is the operator's choice.
func pickByVerdict(refs []model.LockRef, a model.Action, allows func(model.LockRef) (bool, string)) (model.LockRef, string, error) {
	var yes []model.LockRef
	var not []string
	for _, r := range refs {
		if ok, why := allows(r); ok {
			yes = append(yes, r)
		} else {
			not = append(not, r.String()+": "+why)
		}
	}
	switch len(yes) {
	case 1:
		return yes[0], fmt.Sprintf("%d locks match; picked %s, the only one whose verdict allows %s (%s)",
			len(refs), describeRef(yes[0]), a, strings.Join(not, "; ")), nil
	case 0:
		return model.LockRef{}, "", fmt.Errorf("%d locks match and no verdict allows %s; pick one: %s", len(refs), a, describeRefs(refs))
	}
	return model.LockRef{}, "", fmt.Errorf("%d locks match and the verdicts of %d allow %s; pick one: %s", len(refs), len(yes), a, describeRefs(yes))
}

// verdictAllows says whether the verdict of a holder of lock ref (the one
// --holder/--entry name, else any) allows action a — the plan's verdict
// gate — and, when not, the gate's reason.
func verdictAllows(eng *lock.Engine, cl *model.Cluster, ref model.LockRef, a model.Action, af actionFlags, now time.Time) (bool, string) {
	why := "no holder"
	for _, st := range cl.LockStatuses() {
		if st.LockRef != ref || st.Holder == "" {
			continue
		}
		if af.holder != "" && st.Holder != af.holder && st.HolderNode() != af.holder {
			continue
		}
		if af.entry >= 0 && st.Entry != af.entry {
			continue
		}
		p, err := eng.PlanEntry(cl, ref, st.Holder, st.Entry, a, now)
		if err != nil {
			why = err.Error()
			continue
		}
		for _, g := range p.Gates {
			if g.Name == lock.GateVerdict {
				if g.Passed {
					return true, ""
				}
				why = g.Reason
			}
		}
	}
	return false, why
}

func describeRef(r model.LockRef) string {
	return "--kind " + string(r.Kind) + " --lock " + r.Namespace + "/" + r.Name
}

// holderName is what the operator types to confirm an override: the node
// the holder maps to, else the raw holder id.
func holderName(s model.LockStatus) string {
	if n := s.HolderNode(); n != "" {
		return n
	}
	return s.Holder
}

// ask reads the answer to a prompt. ok is false when ctx ended first (Ctrl-C
// or SIGTERM while waiting): the caller must write nothing. The read goes on
// in the background until the process exits.
func ask(ctx context.Context, r *bufio.Reader) (line string, ok bool) {
	got := make(chan string, 1)
	go func() {
		l, _ := r.ReadString('\n')
		got <- strings.TrimSpace(l)
	}()
	select {
	case l := <-got:
		// An interrupt that raced the answer still wins: nothing is written.
		return l, ctx.Err() == nil
	case <-ctx.Done():
		return "", false
	}
}

// interrupted reports an interrupted prompt: nothing was written.
func interrupted(env Env) int {
	fmt.Fprintln(env.Stderr, "\nrebootwatch: interrupted: nothing written")
	return ExitInterrupted
}

// maxValue bounds one cluster value in the action output: a 200,000-char
// holder is shown with its start and end around "…"; real values are shorter.
const maxValue = 1000

// say is fmt.Fprintf for the action's text output with every string,
// Stringer and error argument sanitised (sanitize.ShortMiddle): the values
// come from the cluster, and this is the output's one boundary.
func say(w io.Writer, format string, args ...any) {
	for i, a := range args {
		switch v := a.(type) {
		case string:
			args[i] = sanitize.ShortMiddle(v, maxValue)
		case error:
			args[i] = sanitize.ShortMiddle(v.Error(), maxValue)
		case fmt.Stringer:
			args[i] = sanitize.ShortMiddle(v.String(), maxValue)
		}
	}
	fmt.Fprintf(w, format, args...)
}

func quoteOrNothing(s string) string {
	if s == "" {
		return "nothing"
	}
	return fmt.Sprintf("%q", s)
}

func capital(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// actionOutput prints the verdict, the gates and the result, as text or
// one JSON document.
type actionOutput struct {
	env  Env
	json bool
	plan lock.Plan
}

func (o *actionOutput) describe() {
	if o.json {
		return
	}
	p, w := o.plan, o.env.Stdout
	s := p.Status
	holder := s.Holder
	if n := s.HolderNode(); n != "" && n != s.Holder {
		holder += " (node " + n + ")"
	}
	if holder == "" {
		holder = "—"
	}
	if p.Action == model.ActionUncordon {
		say(w, "Node:    %s\nState:   %s\n", s.Holder, s.Reason)
	} else {
		say(w, "Lock:    %s\nHolder:  %s\nVerdict: %s — %s\n", s.LockRef, holder, string(s.Verdict), s.Reason)
	}
	for _, e := range s.Evidence {
		say(w, "         %s: %s\n", e.Key, e.Value)
	}
	say(w, "Gates for %s:\n", string(p.Action))
	for _, g := range p.Gates {
		mark := "✓"
		if !g.Passed {
			mark = "✗"
		}
		say(w, "  %s %-12s %s\n", mark, g.Name, g.Reason)
	}
	say(w, "Write:   %s\n", p.Write)
	if p.Uncordon.Op != "" {
		say(w, "Then:    %s\n         (the lock's coordinator cordoned the holder and would not uncordon it now; --keep-cordoned leaves it cordoned)\n", p.Uncordon)
	}
}

type jsonGate struct {
	Name   string `json:"name"`
	Passed bool   `json:"passed"`
	Reason string `json:"reason"`
}

type jsonAction struct {
	Action     model.Action     `json:"action"`
	Kind       model.LockKind   `json:"kind"`
	Namespace  string           `json:"namespace"`
	Name       string           `json:"name"`
	Holder     string           `json:"holder"`
	HolderNode *string          `json:"holderNode"`
	Verdict    model.Verdict    `json:"verdict"`
	Reason     string           `json:"reason"`
	Evidence   []model.Evidence `json:"evidence"`
	Gates      []jsonGate       `json:"gates"`
	Allowed    bool             `json:"allowed"`
	Write      string           `json:"write"`
	Outcome    model.Outcome    `json:"outcome"`
	Message    string           `json:"message"`
	// Uncordon is the second write of a release whose coordinator cordoned
	// the holder (fleetlock), with its own outcome; absent otherwise.
	Uncordon *jsonUncordon `json:"uncordon,omitempty"`
}

type jsonUncordon struct {
	Write   string        `json:"write"`
	Outcome model.Outcome `json:"outcome"`
	Message string        `json:"message"`
}

func (o *actionOutput) finish(r lock.Result) {
	p := o.plan
	if !o.json {
		say(o.env.Stdout, "Result:  %s — %s\n", r.Outcome, r.Message)
		if r.Uncordon.Outcome != "" {
			say(o.env.Stdout, "Uncordon: %s — %s\n", r.Uncordon.Outcome, r.Uncordon.Message)
		}
		return
	}
	s := p.Status
	doc := jsonAction{Action: p.Action, Kind: s.Kind, Namespace: s.Namespace, Name: s.Name, Holder: s.Holder,
		Verdict: s.Verdict, Reason: s.Reason, Evidence: s.Evidence, Gates: []jsonGate{}, Allowed: p.Allowed,
		Write: p.Write.String(), Outcome: r.Outcome, Message: r.Message}
	if p.Uncordon.Op != "" {
		doc.Uncordon = &jsonUncordon{Write: p.Uncordon.String(), Outcome: r.Uncordon.Outcome, Message: r.Uncordon.Message}
	}
	if doc.Evidence == nil {
		doc.Evidence = []model.Evidence{}
	}
	if n := s.HolderNode(); n != "" {
		doc.HolderNode = &n
	}
	for _, g := range p.Gates {
		doc.Gates = append(doc.Gates, jsonGate{g.Name, g.Passed, g.Reason})
	}
	_ = writeJSON(o.env.Stdout, doc)
}
