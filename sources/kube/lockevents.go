package kube

import (
	"context"
	"errors"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/rebootwatch/rebootwatch/internal/coord"
	"github.com/rebootwatch/rebootwatch/model"
	"github.com/rebootwatch/rebootwatch/sources"
)

// This file reads who freed a lock (issue 27 item 4): the Events rebootwatch
// records on a lock's object when it releases or reaps it (internal/lock's Actor,
// RebootLockReleased and RebootLockReaped), written by any rebootwatch
// process — the agent, a colleague's CLI or dashboard. It watches only the
// Events whose source is rebootwatch, cluster-wide, and sends each new one
// as model.LockActionSeen; model.LockActionsWatched says whether they are
// read at all. It is not a source of its own with a health: without read
// access to Events the timeline only cannot say who freed a lock (the
// agent's RBAC does not grant it). Events listed at start describe actions
// of the past and are not sent.

// startLockEvents starts the Events watch (Options.LockEvents).
func (s *Source) startLockEvents(ctx context.Context) {
	cs := s.opts.Client
	sel := fields.OneTermEqualSelector("source", "rebootwatch").String()
	opts := func(lo metav1.ListOptions) metav1.ListOptions {
		lo.FieldSelector = sel
		return lo
	}
	watched := false
	setWatched := func(on bool) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if on != watched {
			watched = on
			s.sink(model.LockActionsWatched{Watched: on})
		}
	}
	synced := make(chan struct{})
	lw := &sources.ListWatch{Client: cs, Timeout: s.opts.RequestTimeout,
		ListFunc: func(ctx context.Context, lo metav1.ListOptions) (runtime.Object, error) {
			return cs.CoreV1().Events("").List(ctx, opts(lo))
		},
		WatchFunc: func(ctx context.Context, lo metav1.ListOptions) (watch.Interface, error) {
			return cs.CoreV1().Events("").Watch(ctx, opts(lo))
		},
		OnResult: func(_ string, err error) {
			switch {
			case err != nil && errors.Is(err, context.Canceled):
			case err != nil:
				setWatched(false)
			default:
				select {
				case <-synced:
					setWatched(true)
				default:
				}
			}
		},
	}
	inf := cache.NewSharedIndexInformerWithOptions(lw, &corev1.Event{}, cache.SharedIndexInformerOptions{ObjectDescription: "events"})
	if err := inf.SetTransform(transformLockEvent); err != nil {
		panic(err) // only fails once started
	}
	_ = inf.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *cache.Reflector, err error) {
		s.log.Debug("rebootwatch Events watch ended", "err", err)
	})
	reg, err := inf.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, initial bool) {
			if ev, ok := obj.(*corev1.Event); ok && !initial {
				if seen, ok := LockActionOf(ev); ok {
					s.send(seen)
				}
			}
		},
	})
	if err != nil {
		panic(err) // only fails once stopped
	}
	s.wg.Go(func() { inf.RunWithContext(ctx) })
	s.wg.Go(func() {
		select {
		case <-reg.HasSyncedChecker().Done():
		case <-ctx.Done():
			return
		}
		close(synced)
		setWatched(true)
	})
}

// LockActionOf reads a release or reap from an Event rebootwatch recorded
// on the lock's object; ok is false for any other Event, or one whose
// annotations do not name a lock of that object.
func LockActionOf(ev *corev1.Event) (model.LockActionSeen, bool) {
	var a model.Action
	switch ev.Reason {
	case coord.ReasonReleased:
		a = model.ActionRelease
	case coord.ReasonReaped:
		a = model.ActionReap
	default:
		return model.LockActionSeen{}, false
	}
	ref, ok := parseLockRef(ev.Annotations[coord.EventAnnotationLock])
	holder, hasHolder := ev.Annotations[coord.EventAnnotationHolder]
	// The Event is recorded on the lock's own object: one that names
	// another object's lock is not believed.
	if !ok || !hasHolder || ref.Namespace != ev.InvolvedObject.Namespace || ref.Name != ev.InvolvedObject.Name {
		return model.LockActionSeen{}, false
	}
	return model.LockActionSeen{Lock: ref, Holder: holder, Action: a, By: ev.Annotations[coord.EventAnnotationBy]}, true
}

// parseLockRef parses model.LockRef's String form, kind:namespace/name.
func parseLockRef(s string) (model.LockRef, bool) {
	kind, rest, ok := strings.Cut(s, ":")
	if !ok {
		return model.LockRef{}, false
	}
	ns, name, ok := strings.Cut(rest, "/")
	if !ok || kind == "" || ns == "" || name == "" {
		return model.LockRef{}, false
	}
	return model.LockRef{Kind: model.LockKind(kind), Namespace: ns, Name: name}, true
}

// transformLockEvent keeps of an Event what LockActionOf reads.
func transformLockEvent(obj any) (any, error) {
	ev, ok := obj.(*corev1.Event)
	if !ok {
		return obj, nil
	}
	out := &corev1.Event{ObjectMeta: stripMeta(ev.ObjectMeta), Reason: ev.Reason,
		InvolvedObject: corev1.ObjectReference{Namespace: ev.InvolvedObject.Namespace, Name: ev.InvolvedObject.Name}}
	if a := ev.Annotations; a != nil {
		out.Annotations = map[string]string{}
		for _, k := range []string{coord.EventAnnotationLock, coord.EventAnnotationHolder, coord.EventAnnotationBy} {
			if v, ok := a[k]; ok {
				out.Annotations[k] = v
			}
		}
	}
	return out, nil
}
