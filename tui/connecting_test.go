package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/rebootwatch/rebootwatch/model"
)

// While a live cluster is still connecting (AwaitSync, no Synced event
// yet), the locks are not judged: the Locks panel must say so, not "no
// reboot lock found" — at 1,000 nodes the dashboard showed that for
// seconds, with kured's lock already read, until Longhorn's first list
// arrived. Once synced, the lock is listed. Likewise the progress line
// counts upgraded nodes only once every source has delivered.
func TestLocksPanelWhileConnecting(t *testing.T) {
	now := t0
	c := model.NewCluster("prod", model.Options{})
	c.LockSources = []model.SourceName{model.SourceKured, model.SourceFleetlock}
	c.AwaitSync = true
	f := &fakeJudge{ids: map[string]string{}, verdicts: map[string]model.Verdict{}}
	c.Judge = f.Judge
	ok := func(n model.SourceName) model.SourceChanged {
		return model.SourceChanged{Health: model.SourceHealth{Name: n, Status: model.StatusOK, LastSync: now}}
	}
	kured := model.LockRef{Kind: model.LockKured, Namespace: "kube-system", Name: "kured"}
	c.Apply(model.Batch{ok(model.SourceNodes), ok(model.SourceKured), ok(model.SourceFleetlock),
		model.NodeUpserted{Node: node("w-01", []string{"worker"}, false, "boot-a")},
		model.LockUpserted{Lock: model.LockObject{LockRef: kured, UID: "ds-uid", ResourceVersion: "1",
			Spec: &fixSpec{kind: model.LockKured, holder: "w-01", at: now.Add(-time.Minute)}}}}, now)
	c.Recompute(now)
	m := New(Options{Cluster: c, Clock: func() time.Time { return now }, WallClock: func() time.Time { return now }})
	size(m, 160, 40)
	s := screen(m)
	if strings.Contains(s, "no reboot lock found") {
		t.Fatalf("while connecting the Locks panel claims no lock was found:\n%s", s)
	}
	if !strings.Contains(s, "not judged yet") {
		t.Fatalf("while connecting the Locks panel does not say the locks are not judged yet:\n%s", s)
	}
	if !strings.Contains(s, "w-01") {
		t.Fatalf("the node row is not shown while connecting:\n%s", s)
	}
	// The nodes read so far may be a part of the fleet: no upgrade count
	// (it said "1/1 upgraded (100%)" with 1,000 nodes still arriving).
	if strings.Contains(s, "upgraded") || !strings.Contains(s, "1 nodes read so far") {
		t.Fatalf("while connecting the progress line claims an upgrade count:\n%s", s)
	}
	m.Update(eventsMsg{model.Synced{}})
	s = screen(m)
	if !strings.Contains(s, "1/1 upgraded") {
		t.Fatalf("once synced the progress line counts the upgraded nodes:\n%s", s)
	}
	if strings.Contains(s, "not judged yet") || !strings.Contains(s, "kube-system/kured") {
		t.Fatalf("once synced the Locks panel lists the lock:\n%s", s)
	}
}

// With the lock sources forbidden the Locks panel must say the locks are
// unknown and why, never "no reboot lock found" (issue 22 §4): the text
// report and watch say so, and so must the dashboard.
func TestLocksPanelUnreadIsNotNone(t *testing.T) {
	now := t0
	c := model.NewCluster("prod", model.Options{})
	c.LockSources = []model.SourceName{model.SourceKured, model.SourceFleetlock}
	f := &fakeJudge{ids: map[string]string{}, verdicts: map[string]model.Verdict{}}
	c.Judge = f.Judge
	forbidden := func(n model.SourceName, msg string) model.SourceChanged {
		return model.SourceChanged{Health: model.SourceHealth{Name: n, Status: model.StatusForbidden, Message: msg}}
	}
	c.Apply(model.Batch{
		model.SourceChanged{Health: model.SourceHealth{Name: model.SourceNodes, Status: model.StatusOK, LastSync: now}},
		forbidden(model.SourceKured, "cannot list daemonsets.apps (RBAC)"),
		forbidden(model.SourceFleetlock, "cannot list leases.coordination.k8s.io (RBAC)"),
		model.NodeUpserted{Node: node("w-01", []string{"worker"}, false, "boot-a")}}, now)
	c.Recompute(now)
	m := New(Options{Cluster: c, Clock: func() time.Time { return now }, WallClock: func() time.Time { return now }})
	size(m, 160, 40)
	s := screen(m)
	if strings.Contains(s, "no reboot lock found") {
		t.Fatalf("with the lock sources forbidden the Locks panel claims no lock was found:\n%s", s)
	}
	if !strings.Contains(s, "locks unknown") || !strings.Contains(s, "daemonsets.apps") {
		t.Fatalf("the Locks panel does not say the locks are unknown and why:\n%s", s)
	}
}
