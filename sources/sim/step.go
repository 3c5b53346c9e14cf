package sim

import (
	"context"
	"encoding/json"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Now returns the scenario time the sim has reached.
func (s *Sim) Now() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.now
}

// RebootRequired returns kured_reboot_required per node, as kured would export it.
func (s *Sim) RebootRequired() map[string]bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]bool, len(s.nodes))
	for _, n := range s.nodes {
		out[n.name] = n.needsReboot
	}
	return out
}

// Step plays the scenario forward to now and writes what changed to the
// fake clientsets. Times before the sim's current time are ignored.
func (s *Sim) Step(now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ctx := context.Background()
	for {
		t, act := s.next()
		if act == nil || t.After(now) {
			break
		}
		s.now = t
		if err := act(ctx); err != nil {
			return err
		}
	}
	if now.After(s.now) {
		s.now = now
	}
	return nil
}

// next returns the earliest scheduled change and the function making it.
func (s *Sim) next() (time.Time, func(context.Context) error) {
	var best time.Time
	var act func(context.Context) error
	consider := func(t time.Time, f func(context.Context) error) {
		if t.IsZero() {
			return
		}
		if act == nil || t.Before(best) {
			best, act = t, f
		}
	}
	if s.coord != nil {
		s.nextCoord(consider)
		return best, act
	}
	if s.fleet != nil {
		s.nextFleet(consider)
		return best, act
	}
	consider(s.nextTry, s.kuredTry)
	consider(s.handReleaseAt, s.handRelease)
	for _, n := range s.nodes {
		n := n
		switch n.st {
		case stHolding:
			consider(n.cordonAt, func(ctx context.Context) error { return s.cordon(ctx, n) })
		case stCordoned:
			if !n.unblockAt.IsZero() {
				consider(n.unblockAt, func(ctx context.Context) error { return s.unblock(ctx, n) })
				break
			}
			consider(n.downAt, func(ctx context.Context) error { return s.down(ctx, n) })
		case stDown:
			consider(n.upAt, func(ctx context.Context) error { return s.up(ctx, n) })
		case stUp:
			if n.orphan && s.pods != nil {
				break // its kured pod crash-loops: nobody uncordons it (pods.go)
			}
			consider(n.uncordonAt, func(ctx context.Context) error { return s.uncordon(ctx, n) })
		case stUncordoned:
			consider(n.releaseAt, func(ctx context.Context) error { return s.release(ctx, n) })
		}
		if !n.rebuildAt.IsZero() && s.hasMissing(n.name) && n.st >= stUp {
			consider(n.rebuildAt, func(ctx context.Context) error { return s.rebuild(ctx, n) })
		}
	}
	return best, act
}

func (s *Sim) hasMissing(name string) bool {
	for _, v := range s.volumes {
		if _, ok := v.missing[name]; ok {
			return true
		}
	}
	return false
}

// kuredTry is kured's periodic attempt: the first node needing a reboot
// takes the lock when it is free.
func (s *Sim) kuredTry(ctx context.Context) error {
	s.nextTry = s.nextTry.Add(s.cfg.KuredPeriod)
	ds, err := s.Client.AppsV1().DaemonSets(KuredNamespace).Get(ctx, KuredName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if v := ds.Annotations[KuredLockKey]; v != "" {
		return nil
	}
	if !s.window.contains(s.now) {
		return nil // kured only reboots within its window
	}
	for _, n := range s.nodes {
		if n.needsReboot && n.st == stIdle {
			s.take(n, s.now)
			return s.writeLock(ctx, n)
		}
	}
	return nil
}

func (s *Sim) writeLock(ctx context.Context, n *node) error {
	ds, err := s.Client.AppsV1().DaemonSets(KuredNamespace).Get(ctx, KuredName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	v, _ := json.Marshal(kuredLock{NodeID: n.name, Metadata: map[string]any{"unschedulable": false}, Created: s.lockedAt.UTC(), TTL: 0})
	if ds.Annotations == nil {
		ds.Annotations = map[string]string{}
	}
	ds.Annotations[KuredLockKey] = string(v)
	_, err = s.Client.AppsV1().DaemonSets(KuredNamespace).Update(ctx, ds, metav1.UpdateOptions{})
	return err
}

func (s *Sim) cordon(ctx context.Context, n *node) error {
	n.st, n.cordoned = stCordoned, true
	for _, v := range s.volumes {
		for _, r := range v.replicas {
			if r == n.name {
				v.missing[r] = s.now
				if err := s.writeVolume(ctx, v); err != nil {
					return err
				}
			}
		}
	}
	if err := s.writeNode(ctx, n); err != nil {
		return err
	}
	// kured drains right after the cordon; a budget may hold a pod.
	if s.pods != nil {
		blocked, err := s.drain(ctx, n)
		if err != nil {
			return err
		}
		if blocked {
			n.unblockAt = s.now.Add(PDBStuckFor)
		}
	}
	return nil
}

func (s *Sim) down(ctx context.Context, n *node) error {
	n.st, n.ready, n.readySince = stDown, false, s.now
	if err := s.writeNode(ctx, n); err != nil {
		return err
	}
	return s.writePodsOf(ctx, n)
}

func (s *Sim) up(ctx context.Context, n *node) error {
	n.st, n.ready, n.readySince = stUp, true, s.now
	n.bootID = s.uuid()
	n.image, n.kernel, n.needsReboot = NewImage, NewKernel, false
	if err := s.writeNode(ctx, n); err != nil {
		return err
	}
	s.restartPodsOf(n)
	return s.writePodsOf(ctx, n)
}

func (s *Sim) uncordon(ctx context.Context, n *node) error {
	n.st, n.cordoned = stUncordoned, false
	return s.writeNode(ctx, n)
}

// release removes kured's lock if n still holds it — except the orphan,
// which never does.
func (s *Sim) release(ctx context.Context, n *node) error {
	n.st = stDone
	if n.orphan {
		return nil
	}
	ds, err := s.Client.AppsV1().DaemonSets(KuredNamespace).Get(ctx, KuredName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	var l kuredLock
	if json.Unmarshal([]byte(ds.Annotations[KuredLockKey]), &l) != nil || l.NodeID != n.name {
		return nil
	}
	delete(ds.Annotations, KuredLockKey)
	_, err = s.Client.AppsV1().DaemonSets(KuredNamespace).Update(ctx, ds, metav1.UpdateOptions{})
	return err
}

func (s *Sim) rebuild(ctx context.Context, n *node) error {
	for _, v := range s.volumes {
		if _, ok := v.missing[n.name]; ok {
			delete(v.missing, n.name)
			if err := s.writeVolume(ctx, v); err != nil {
				return err
			}
		}
	}
	n.rebuildAt = time.Time{}
	return nil
}

func (s *Sim) writeNode(ctx context.Context, n *node) error {
	_, err := s.Client.CoreV1().Nodes().Update(ctx, s.apiNode(n), metav1.UpdateOptions{})
	return err
}

func (s *Sim) writeVolume(ctx context.Context, v *volume) error {
	_, err := s.Dynamic.Resource(VolumeGVR).Namespace(LonghornNamespace).Update(ctx, s.apiVolume(v), metav1.UpdateOptions{})
	return err
}
