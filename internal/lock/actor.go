package lock

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/rebootwatch/rebootwatch/model"
)

// Action outcomes (Result.Outcome and model.ActionRecorded.Outcome).
const (
	OutcomeDone      = "done"
	OutcomeDryRun    = "dry-run"
	OutcomeRefused   = "refused"
	OutcomeConflict  = "conflict"
	OutcomeForbidden = "forbidden"
	OutcomeError     = "error"
)

// Event reasons recorded on the lock's object.
const (
	ReasonReaped   = "RebootLockReaped"
	ReasonReleased = "RebootLockReleased"
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
	Outcome string
	Message string
	Write   Write
}

// Recorded returns the result as a model event for the timeline.
func (r Result) Recorded(p Plan) model.ActionRecorded {
	return model.ActionRecorded{Lock: p.Status.LockRef, Holder: p.Status.Holder, Action: p.Action, Outcome: r.Outcome, Message: r.Message}
}

// Do performs the plan's write: it re-reads the lock's object, checks that
// its UID and resourceVersion are still the judged ones, and updates it
// carrying that resourceVersion. A change since the judgement is a conflict:
// nothing is written and nothing is retried. On success it records an Event
// on the object; every outcome is logged.
func (a *Actor) Do(ctx context.Context, p Plan, o DoOptions) Result {
	r := a.do(ctx, p, o)
	a.log(p, o, r)
	return r
}

func (a *Actor) do(ctx context.Context, p Plan, o DoOptions) Result {
	w := p.Write
	res := func(outcome, format string, args ...any) Result {
		return Result{Outcome: outcome, Message: fmt.Sprintf(format, args...), Write: w}
	}
	if w.Op == "" {
		return res(OutcomeRefused, "%s refused: lock %s (holder %q) has nothing to %s (verdict %s)", p.Action, p.Status.LockRef, p.Status.Holder, p.Action, p.Status.Verdict)
	}
	if w.UID == "" || w.ResourceVersion == "" {
		return res(OutcomeRefused, "%s refused: the judged lock has no UID/resourceVersion to use as a precondition", p.Action)
	}
	if !p.Allowed {
		switch {
		case p.Unattended:
			return res(OutcomeRefused, "%s (gates cannot be overridden unattended)", p.Refusal)
		case !o.AllowUnsafe:
			return res(OutcomeRefused, "%s", p.Refusal)
		}
	}
	if a.DryRun {
		return res(OutcomeDryRun, "dry run: would %s", w)
	}
	if a.Client == nil {
		return res(OutcomeError, "no Kubernetes client")
	}
	timeout := a.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	var (
		uid      types.UID
		newRV    string
		apiVer   string
		kind     string
		writeErr error
	)
	switch w.Ref.Kind {
	case model.LockKured:
		apiVer, kind = "apps/v1", "DaemonSet"
		dsc := a.Client.AppsV1().DaemonSets(w.Ref.Namespace)
		ds, err := dsc.Get(ctx, w.Ref.Name, metav1.GetOptions{})
		if err != nil {
			return a.apiErr(w, "get", "daemonsets.apps", err)
		}
		if r, bad := precondition(w, string(ds.UID), ds.ResourceVersion); bad {
			return r
		}
		cur, ok := ds.Annotations[KuredAnnotation]
		if !ok || cur != w.OldValue {
			return res(OutcomeConflict, "conflict: the annotation differs from what was judged at the same resourceVersion; nothing changed")
		}
		ds = ds.DeepCopy()
		switch w.Op {
		case OpRemoveAnnotation:
			delete(ds.Annotations, KuredAnnotation)
		case OpSetAnnotation:
			nv, err := RemoveKuredEntry(cur, w.Holder)
			if err != nil || nv != w.NewValue {
				return res(OutcomeConflict, "conflict: cannot remove %s from the current annotation; nothing changed", w.Holder)
			}
			ds.Annotations[KuredAnnotation] = nv
		default:
			return res(OutcomeError, "write op %q does not apply to a DaemonSet", w.Op)
		}
		up, err := dsc.Update(ctx, ds, metav1.UpdateOptions{FieldManager: "rebootwatch"})
		if err != nil {
			writeErr = err
			break
		}
		uid, newRV = up.UID, up.ResourceVersion
	case model.LockFleetlock:
		apiVer, kind = "coordination.k8s.io/v1", "Lease"
		lc := a.Client.CoordinationV1().Leases(w.Ref.Namespace)
		l, err := lc.Get(ctx, w.Ref.Name, metav1.GetOptions{})
		if err != nil {
			return a.apiErr(w, "get", "leases.coordination.k8s.io", err)
		}
		if r, bad := precondition(w, string(l.UID), l.ResourceVersion); bad {
			return r
		}
		if w.Op != OpClearHolder {
			return res(OutcomeError, "write op %q does not apply to a Lease", w.Op)
		}
		if h := holderOf(l); h != w.Holder {
			return res(OutcomeConflict, "conflict: the lease holder is %q, not the judged %q; nothing changed", h, w.Holder)
		}
		l = l.DeepCopy()
		empty := ""
		l.Spec.HolderIdentity = &empty
		up, err := lc.Update(ctx, l, metav1.UpdateOptions{FieldManager: "rebootwatch"})
		if err != nil {
			writeErr = err
			break
		}
		uid, newRV = up.UID, up.ResourceVersion
	default:
		return res(OutcomeError, "unknown lock kind %q", w.Ref.Kind)
	}
	if writeErr != nil {
		resource := "daemonsets.apps"
		if w.Ref.Kind == model.LockFleetlock {
			resource = "leases.coordination.k8s.io"
		}
		return a.apiErr(w, "update", resource, writeErr)
	}

	verb := "released"
	if p.Action == model.ActionReap {
		verb = "reaped"
	}
	msg := fmt.Sprintf("%s %s held by %s (verdict %s: %s) — %s (resourceVersion %s → %s)",
		verb, w.Ref, holderText(p.Status), p.Status.Verdict, p.Status.Reason, w, w.ResourceVersion, newRV)
	if !p.Allowed {
		msg += " — OVERRIDING failed gates: " + p.Refusal
	}
	if err := a.event(ctx, p, apiVer, kind, uid, newRV); err != nil {
		msg += "; the Event could not be recorded: " + err.Error()
	}
	return res(OutcomeDone, "%s", msg)
}

func holderOf(l *coordinationv1.Lease) string {
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
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

// precondition compares the live object with the judged one.
func precondition(w Write, uid, rv string) (Result, bool) {
	switch {
	case uid != w.UID:
		return Result{Outcome: OutcomeConflict, Write: w, Message: fmt.Sprintf(
			"conflict: %s was replaced since it was judged (uid %s → %s); nothing changed — judge it again", w.Object, w.UID, uid)}, true
	case rv != w.ResourceVersion:
		return Result{Outcome: OutcomeConflict, Write: w, Message: fmt.Sprintf(
			"conflict: %s changed since it was judged (resourceVersion %s → %s); nothing changed — judge it again", w.Object, w.ResourceVersion, rv)}, true
	}
	return Result{}, false
}

// apiErr classifies an API error.
func (a *Actor) apiErr(w Write, verb, resource string, err error) Result {
	who := a.Who
	if who == "" {
		who = "this user"
	}
	switch {
	case apierrors.IsConflict(err):
		return Result{Outcome: OutcomeConflict, Write: w, Message: fmt.Sprintf(
			"conflict: %s changed since it was judged (%v); nothing changed — judge it again", w.Object, err)}
	case apierrors.IsNotFound(err):
		return Result{Outcome: OutcomeConflict, Write: w, Message: fmt.Sprintf(
			"conflict: %s no longer exists; nothing changed", w.Object)}
	case apierrors.IsForbidden(err):
		return Result{Outcome: OutcomeForbidden, Write: w, Message: fmt.Sprintf(
			"forbidden: %s may not %s %s in namespace %s (grant %s on %s); nothing changed: %v", who, verb, resource, w.Ref.Namespace, verb, resource, err)}
	case apierrors.IsInvalid(err) && strings.Contains(strings.ToLower(err.Error()), "uid"):
		return Result{Outcome: OutcomeConflict, Write: w, Message: fmt.Sprintf(
			"conflict: %s was replaced since it was judged (%v); nothing changed", w.Object, err)}
	}
	return Result{Outcome: OutcomeError, Write: w, Message: fmt.Sprintf("%s %s failed: %v", verb, w.Object, err)}
}

// event records the action as a Kubernetes Event on the lock's object.
func (a *Actor) event(ctx context.Context, p Plan, apiVersion, kind string, uid types.UID, rv string) error {
	w := p.Write
	reason := ReasonReleased
	verb := "released"
	if p.Action == model.ActionReap {
		reason, verb = ReasonReaped, "reaped"
	}
	who := a.Who
	if who == "" {
		who = "rebootwatch"
	}
	msg := fmt.Sprintf("rebootwatch %s the reboot lock held by %s (verdict %s: %s); acted by %s",
		verb, holderText(p.Status), p.Status.Verdict, p.Status.Reason, who)
	if !p.Allowed {
		msg += "; failed gates overridden: " + p.Refusal
	}
	if len(msg) > 1000 {
		msg = msg[:1000]
	}
	now := metav1.NewTime(time.Now())
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{
			Name:      fmt.Sprintf("%s.%x", w.Ref.Name, time.Now().UnixNano()),
			Namespace: w.Ref.Namespace,
		},
		InvolvedObject: corev1.ObjectReference{
			APIVersion: apiVersion, Kind: kind, Namespace: w.Ref.Namespace, Name: w.Ref.Name,
			UID: uid, ResourceVersion: rv,
		},
		Reason:         reason,
		Message:        msg,
		Type:           corev1.EventTypeNormal,
		Source:         corev1.EventSource{Component: "rebootwatch"},
		FirstTimestamp: now,
		LastTimestamp:  now,
		Count:          1,
	}
	_, err := a.Client.CoreV1().Events(w.Ref.Namespace).Create(ctx, ev, metav1.CreateOptions{})
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
	case OutcomeError, OutcomeForbidden:
		level = slog.LevelError
	case OutcomeConflict, OutcomeRefused:
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
	)
}
