package lock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/rebootwatch/rebootwatch/internal/coord"
	"github.com/rebootwatch/rebootwatch/model"
)

// Event reasons recorded on the lock's object (and on the node for the
// uncordon that goes with a release), and the annotations on the Event of a
// release or reap: declared in internal/coord (lockobject.go) so that the
// sources read them without importing the engine.
const (
	ReasonReaped     = coord.ReasonReaped
	ReasonReleased   = coord.ReasonReleased
	ReasonUncordoned = coord.ReasonUncordoned

	EventAnnotationLock   = coord.EventAnnotationLock
	EventAnnotationHolder = coord.EventAnnotationHolder
	EventAnnotationBy     = coord.EventAnnotationBy
)

// DefaultTimeout bounds one action's API calls.
const DefaultTimeout = 20 * time.Second

// Actor performs planned actions against the Kubernetes API.
type Actor struct {
	Client kubernetes.Interface
	// Who acted, for the Event and the log (e.g. "alice via rebootwatch").
	Who string
	// DryRun makes Do return the write without making it.
	DryRun bool
	Logger *slog.Logger
	// Timeout bounds the API calls of one Do; 0 means DefaultTimeout.
	Timeout time.Duration
	// NodeSelector limits the fresh read of the node list made before each
	// write to nodes with these labels. Empty in production: the gates need
	// every node. Only tests whose scenarios share one API server, each
	// judged on its own nodes, set it.
	NodeSelector string
	// FieldManager, if set, is the field manager of the writes (default
	// coord.FieldManager); the agent names its own (coord.AgentFieldManager).
	FieldManager string
	// Fresh are the quorum reads of every gate's input made before each
	// write (fresh.go). The wiring sets them (sources/sourceset.FreshReaders);
	// a source without a reader refuses every write that needs it.
	Fresh FreshReaders
}

// DoOptions are per-action choices.
type DoOptions struct {
	// AllowUnsafe performs the write although gates failed. The caller must
	// have obtained the operator's typed confirmation; it has no effect on a
	// plan from an unattended (agent) engine.
	AllowUnsafe bool
}

// Result is what an action did.
type Result struct {
	// Outcome is done, dry-run, refused, conflict, forbidden or error.
	Outcome model.Outcome
	Message string
	Write   Write
	// By is who acted (the actor's Who), for the timeline.
	By string
	// Uncordon is the outcome of the plan's uncordon write, when it had one
	// and the lock write was done ("" Outcome otherwise).
	Uncordon struct {
		Outcome model.Outcome
		Message string
	}
}

// Complete reports whether every write of the plan was made (or, in a dry
// run, would be).
func (r Result) Complete() bool {
	return r.Outcome.Succeeded() && (r.Uncordon.Outcome == "" || r.Uncordon.Outcome.Succeeded())
}

// Recorded returns the result as a model event for the timeline.
func (r Result) Recorded(p Plan) model.ActionRecorded {
	msg := r.Message
	if r.Uncordon.Message != "" {
		msg += "; " + r.Uncordon.Message
	}
	return model.ActionRecorded{Lock: p.Status.LockRef, Holder: p.Status.Holder, Action: p.Action, Outcome: r.Outcome, Message: msg, By: r.By}
}

// Do performs the plan's write: it re-reads the lock's object, checks that
// its UID and resourceVersion are still the judged ones, and updates it
// carrying that resourceVersion. A change since the judgement is a conflict:
// nothing is written and nothing is retried. On success it records an Event
// on the object; every outcome is logged.
func (a *Actor) Do(ctx context.Context, p Plan, o DoOptions) Result {
	r := a.do(ctx, p, o)
	r.By = a.Who
	a.log(p, o, r)
	return r
}

func (a *Actor) do(ctx context.Context, p Plan, o DoOptions) Result {
	w := p.Write
	res := func(outcome model.Outcome, format string, args ...any) Result {
		return Result{Outcome: outcome, Message: fmt.Sprintf(format, args...), Write: w}
	}
	if w.Op == "" {
		return res(model.OutcomeRefused, "%s refused: lock %s (holder %q) has nothing to %s (verdict %s)", p.Action, p.Status.LockRef, p.Status.Holder, p.Action, p.Status.Verdict)
	}
	if w.UID == "" || (w.ResourceVersion == "" && w.Op != OpUncordon) {
		return res(model.OutcomeRefused, "%s refused: the judged lock has no UID/resourceVersion to use as a precondition", p.Action)
	}
	if !p.Allowed {
		switch {
		case p.Unattended:
			return res(model.OutcomeRefused, "%s (gates cannot be overridden unattended)", p.Refusal)
		case !o.AllowUnsafe:
			return res(model.OutcomeRefused, "%s", p.Refusal)
		}
	}
	if a.DryRun {
		r := res(model.OutcomeDryRun, "dry run: would %s", w)
		if p.Uncordon.Op != "" {
			r.Uncordon.Outcome, r.Uncordon.Message = model.OutcomeDryRun, "dry run: would then "+p.Uncordon.String()
		}
		return r
	}
	if a.Client == nil {
		return res(model.OutcomeError, "no Kubernetes client")
	}
	timeout := a.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if a.FieldManager != "" {
		ctx = coord.WithFieldManager(ctx, a.FieldManager)
	}

	var d Driver
	if p.Action != model.ActionUncordon {
		var err error
		if d, err = DriverFor(w.Ref.Kind); err != nil {
			return res(model.OutcomeError, "%v", err)
		}
	}
	// The gates were judged on caches: confirm every input of them on
	// quorum reads first (fresh.go). An override of failed gates already
	// accepted data that is not fresh.
	if p.Allowed {
		if r, ok := a.checkFresh(ctx, p); !ok {
			return r
		}
	}
	if p.Action == model.ActionUncordon {
		return a.uncordonOnly(ctx, p, w)
	}
	ap, err := d.Apply(ctx, a.Client, w)
	var ve *VerifyError
	if errors.As(err, &ve) {
		// Written, but not freed for the coordinator: never done. The write
		// is recorded all the same, saying so.
		msg := fmt.Sprintf("%s %s: %s", p.Action, w.Ref, ve.Msg)
		if err := a.event(ctx, p, w, ap, eventFor(p).unverified(ve.Msg)); err != nil {
			msg += "; the Event could not be recorded: " + err.Error()
		}
		return res(model.OutcomeError, "%s", msg)
	}
	if err != nil {
		return a.classify(w, err)
	}

	verb := "released"
	if p.Action == model.ActionReap {
		verb = "reaped"
	}
	msg := fmt.Sprintf("%s %s held by %s (verdict %s: %s) — %s (resourceVersion %s → %s)",
		verb, w.Ref, holderText(p.Status), p.Status.Verdict, p.Status.Reason, w, w.ResourceVersion, ap.ResourceVersion)
	if !p.Allowed {
		msg += " — OVERRIDING failed gates: " + p.Refusal
	}
	if err := a.event(ctx, p, w, ap, eventFor(p)); err != nil {
		msg += "; the Event could not be recorded: " + err.Error()
	}
	r := res(model.OutcomeDone, "%s", msg)
	if u := p.Uncordon; u.Op != "" {
		r.Uncordon.Outcome, r.Uncordon.Message = a.uncordon(ctx, p, u)
	}
	return r
}

// uncordon makes the plan's second write, after the lock was freed.
func (a *Actor) uncordon(ctx context.Context, p Plan, u Write) (model.Outcome, string) {
	ap, err := applyUncordon(ctx, a.Client, u)
	var ve *VerifyError
	if errors.As(err, &ve) {
		msg := ve.Msg + " — the lock is released, but " + u.Node + " is not uncordoned: uncordon it when it is safe (kubectl uncordon " + u.Node + ")"
		if err := a.event(ctx, p, u, ap, eventFor(p).uncordon().unverified(ve.Msg)); err != nil {
			msg += "; the Event could not be recorded: " + err.Error()
		}
		return model.OutcomeError, msg
	}
	if err != nil {
		r := a.classify(u, err)
		return r.Outcome, r.Message + " — the lock is released, but " + u.Node + " is still cordoned: uncordon it when it is safe (kubectl uncordon " + u.Node + ")"
	}
	msg := fmt.Sprintf("uncordoned %s — %s", u.Node, u)
	if err := a.event(ctx, p, u, ap, eventFor(p).uncordon()); err != nil {
		msg += "; the Event could not be recorded: " + err.Error()
	}
	return model.OutcomeDone, msg
}

// uncordonOnly makes an uncordon plan's one write: the node's.
func (a *Actor) uncordonOnly(ctx context.Context, p Plan, w Write) Result {
	if w.Op != OpUncordon {
		return Result{Outcome: model.OutcomeError, Write: w, Message: "an uncordon plan carries no uncordon write"}
	}
	ap, err := applyUncordon(ctx, a.Client, w)
	uncordoned := eventText{ReasonUncordoned, "uncordoned the node, done · still cordoned after its reboot cycle,", ""}
	var ve *VerifyError
	if errors.As(err, &ve) {
		msg := "uncordon " + w.Node + ": " + ve.Msg
		if err := a.event(ctx, p, w, ap, uncordoned.unverified(ve.Msg)); err != nil {
			msg += "; the Event could not be recorded: " + err.Error()
		}
		return Result{Outcome: model.OutcomeError, Message: msg, Write: w}
	}
	if err != nil {
		return a.classify(w, err)
	}
	msg := fmt.Sprintf("uncordoned %s — %s", w.Node, w)
	if !p.Allowed {
		msg += " — OVERRIDING failed gates: " + p.Refusal
	}
	if err := a.event(ctx, p, w, ap, uncordoned); err != nil {
		msg += "; the Event could not be recorded: " + err.Error()
	}
	return Result{Outcome: model.OutcomeDone, Message: msg, Write: w}
}

// classify turns a driver's error into a result.
func (a *Actor) classify(w Write, err error) Result {
	var pe *PreconditionError
	if errors.As(err, &pe) {
		return Result{Outcome: model.OutcomeConflict, Write: w, Message: pe.Msg}
	}
	var ae *APIError
	if errors.As(err, &ae) {
		return a.apiErr(w, ae.Verb, ae.Resource, ae.Err)
	}
	return Result{Outcome: model.OutcomeError, Write: w, Message: err.Error()}
}

func holderText(s model.LockStatus) string {
	if n := s.HolderNode(); n != "" && n != s.Holder {
		return s.Holder + " (node " + n + ")"
	}
	if s.Holder == "" {
		return "nobody (malformed)"
	}
	return s.Holder
}

// apiErr classifies an API error.
func (a *Actor) apiErr(w Write, verb, resource string, err error) Result {
	who := a.Who
	if who == "" {
		who = "this user"
	}
	switch {
	case apierrors.IsConflict(err):
		return Result{Outcome: model.OutcomeConflict, Write: w, Message: fmt.Sprintf(
			"conflict: %s changed since it was judged (%v); nothing changed — judge it again", w.Object, err)}
	case apierrors.IsNotFound(err):
		return Result{Outcome: model.OutcomeConflict, Write: w, Message: fmt.Sprintf(
			"conflict: %s no longer exists; nothing changed", w.Object)}
	case apierrors.IsForbidden(err):
		return Result{Outcome: model.OutcomeForbidden, Write: w, Message: fmt.Sprintf(
			"forbidden: %s may not %s %s in namespace %s (grant %s on %s); nothing changed: %v", who, verb, resource, w.Ref.Namespace, verb, resource, err)}
	case apierrors.IsInvalid(err) && strings.Contains(strings.ToLower(err.Error()), "uid"):
		return Result{Outcome: model.OutcomeConflict, Write: w, Message: fmt.Sprintf(
			"conflict: %s was replaced since it was judged (%v); nothing changed", w.Object, err)}
	}
	return Result{Outcome: model.OutcomeError, Write: w, Message: fmt.Sprintf("%s %s failed: %v", verb, w.Object, err)}
}

// eventText is what an Event says; note, when set, says that the write was
// made but its coordinator does not read it as intended.
type eventText struct{ reason, verb, note string }

func eventFor(p Plan) eventText {
	if p.Action == model.ActionReap {
		return eventText{ReasonReaped, "reaped the reboot lock held by", ""}
	}
	return eventText{ReasonReleased, "released the reboot lock held by", ""}
}

func (eventText) uncordon() eventText {
	return eventText{ReasonUncordoned, "uncordoned the node after releasing the reboot lock held by", ""}
}

func (t eventText) unverified(msg string) eventText {
	t.note = "NOT EFFECTIVE: " + msg
	return t
}

// event records a write as a Kubernetes Event on the object written. A
// Node's Events go to the default namespace, as kubectl's and the kubelet's do.
func (a *Actor) event(ctx context.Context, p Plan, w Write, ap Applied, t eventText) error {
	who := a.Who
	if who == "" {
		who = "rebootwatch"
	}
	msg := fmt.Sprintf("rebootwatch %s %s (lock %s, verdict %s: %s); acted by %s",
		t.verb, holderText(p.Status), p.Status.LockRef, p.Status.Verdict, p.Status.Reason, who)
	if p.Action == model.ActionUncordon {
		msg = fmt.Sprintf("rebootwatch uncordoned node %s (%s); acted by %s", w.Node, p.Status.Reason, who)
	}
	if !p.Allowed {
		msg += "; failed gates overridden: " + p.Refusal
	}
	if t.note != "" {
		msg = t.note + " — " + msg
	}
	if len(msg) > 1000 {
		msg = msg[:1000]
	}
	ns, name := w.Ref.Namespace, w.Ref.Name
	if w.Op == OpUncordon {
		ns, name = metav1.NamespaceDefault, w.Node
	}
	now := metav1.NewTime(time.Now())
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{
			// The API server names it (name.<random>): no two actions
			// in the same instant collide, whatever the clock says.
			GenerateName: name + ".",
			Namespace:    ns,
		},
		InvolvedObject: corev1.ObjectReference{
			APIVersion: ap.APIVersion, Kind: ap.Kind, Name: name,
			UID: ap.UID, ResourceVersion: ap.ResourceVersion,
		},
		Reason:         t.reason,
		Message:        msg,
		Type:           corev1.EventTypeNormal,
		Source:         corev1.EventSource{Component: "rebootwatch"},
		FirstTimestamp: now,
		LastTimestamp:  now,
		Count:          1,
	}
	if w.Op != OpUncordon {
		ev.InvolvedObject.Namespace = ns
		if t.note == "" {
			// Only a write that freed the lock for its coordinator
			// says who freed it (not one recorded NOT EFFECTIVE).
			ev.Annotations = map[string]string{EventAnnotationLock: p.Status.LockRef.String(),
				EventAnnotationHolder: p.Status.Holder, EventAnnotationBy: who}
		}
	}
	_, err := a.Client.CoreV1().Events(ns).Create(ctx, ev, metav1.CreateOptions{})
	return err
}

// log writes one line per action with who, what, why and the outcome.
func (a *Actor) log(p Plan, o DoOptions, r Result) {
	l := a.Logger
	if l == nil {
		l = slog.Default()
	}
	level := slog.LevelInfo
	switch r.Outcome {
	case model.OutcomeError, model.OutcomeForbidden:
		level = slog.LevelError
	case model.OutcomeConflict, model.OutcomeRefused:
		level = slog.LevelWarn
	}
	l.Log(context.Background(), level, "reboot lock "+string(p.Action),
		"outcome", r.Outcome,
		"who", a.Who,
		"lock", p.Status.LockRef.String(),
		"holder", p.Status.Holder,
		"holderNode", p.Status.HolderNode(),
		"verdict", string(p.Status.Verdict),
		"reason", p.Status.Reason,
		"resourceVersion", p.Write.ResourceVersion,
		"allowUnsafe", o.AllowUnsafe && !p.Allowed,
		"dryRun", a.DryRun,
		"message", r.Message,
		"uncordon", r.Uncordon.Outcome,
		"uncordonMessage", r.Uncordon.Message,
	)
}
