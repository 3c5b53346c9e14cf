package tui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/rebootwatch/rebootwatch/internal/explain"
	"github.com/rebootwatch/rebootwatch/model"
)

// bigCluster is n nodes mid-upgrade: a tenth done, one draining, the rest
// pending, with a kured lock, a ghost lease and 500 volumes; the lock
// engine's blockers step names what each pending node waits for.
func bigCluster(n int) (*model.Cluster, *clock) {
	ck := &clock{now: t0}
	j := &fakeJudge{ids: map[string]string{}, verdicts: map[string]model.Verdict{}}
	c := model.NewCluster("big", model.Options{})
	c.Judge, c.Explain = j.Judge, explain.For(explain.Options{})
	var evs model.Batch
	req := map[string]bool{}
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("node-%05d", i)
		nd := node(name, []string{"worker"}, i%10 == 0, fmt.Sprintf("boot-%d", i))
		evs = append(evs, model.NodeUpserted{Node: nd})
		req[name] = i%10 != 0
	}
	evs = append(evs, model.RebootRequiredSet{Values: req},
		model.LockUpserted{Lock: model.LockObject{LockRef: model.LockRef{Kind: model.LockKured, Namespace: "kube-system", Name: "kured"},
			UID: "u", ResourceVersion: "1", Spec: &fixSpec{kind: model.LockKured, holder: "node-00001", at: t0.Add(-time.Minute)}}},
		model.LockUpserted{Lock: model.LockObject{LockRef: model.LockRef{Kind: model.LockFleetlock, Namespace: "default", Name: "fleetlock-default"},
			UID: "l", ResourceVersion: "2", Spec: &fixSpec{kind: model.LockFleetlock, holder: ghostID}}})
	for i := 0; i < 500; i++ {
		r := model.RobustnessHealthy
		if i%50 == 0 {
			r = model.RobustnessDegraded
		}
		evs = append(evs, model.VolumeUpserted{Volume: model.Volume{Namespace: "ns", Name: fmt.Sprintf("pvc-%03d", i), Robustness: r, Replicas: 3, Node: fmt.Sprintf("node-%05d", i)}})
	}
	for _, s := range model.AllSources {
		evs = append(evs, model.SourceChanged{Health: model.SourceHealth{Name: s, Status: model.StatusOK, LastSync: t0}})
	}
	c.Apply(evs, t0.Add(-time.Hour))
	c.Recompute(t0.Add(-time.Hour))
	c.Recompute(t0)
	return c, ck
}

// BenchmarkView renders one frame of 5,000 nodes at 200×60.
func BenchmarkView(b *testing.B) {
	c, ck := bigCluster(5000)
	m := New(Options{Cluster: c, Clock: ck.Now, Actions: &fakeActions{}})
	m.Update(tea.WindowSizeMsg{Width: 200, Height: 60})
	if s := m.View().Content; !strings.Contains(s, "node-00001") || strings.Count(s, "\n") != 59 {
		b.Fatalf("unexpected frame:\n%s", s)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_ = m.View()
	}
}

// BenchmarkTick is the once-a-second work with 5,000 nodes: recompute the
// model, rebuild and sort the rows, render.
func BenchmarkTick(b *testing.B) {
	c, ck := bigCluster(5000)
	m := New(Options{Cluster: c, Clock: ck.Now, Actions: &fakeActions{}})
	m.Update(tea.WindowSizeMsg{Width: 200, Height: 60})
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m.Update(tickMsg(ck.Now()))
		_ = m.View()
	}
}

// BenchmarkKey is one key press (cursor down) plus the frame it causes.
func BenchmarkKey(b *testing.B) {
	c, ck := bigCluster(5000)
	m := New(Options{Cluster: c, Clock: ck.Now, Actions: &fakeActions{}})
	m.Update(tea.WindowSizeMsg{Width: 200, Height: 60})
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m.Update(keyMsg("j"))
		_ = m.View()
	}
}

// BenchmarkMultiTick is the once-a-second work of a cluster list over four
// clusters of 5,000 nodes each (all recomputed, shown or not) plus the list
// frame.
func BenchmarkMultiTick(b *testing.B) {
	var o Options
	var ck *clock
	for i := 0; i < 4; i++ {
		c, k := bigCluster(5000)
		c.Context = fmt.Sprintf("big-%d", i)
		ck = k
		o.Clusters = append(o.Clusters, ClusterOptions{Cluster: c, Clock: k.Now, Actions: &fakeActions{}})
	}
	mm := NewMulti(o)
	mm.Update(tea.WindowSizeMsg{Width: 200, Height: 60})
	if s := mm.View().Content; !strings.Contains(s, "big-3") {
		b.Fatalf("unexpected frame:\n%s", s)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		mm.Update(tickMsg(ck.Now()))
		_ = mm.View()
	}
}

// BenchmarkMultiListFrame renders the list screen of four clusters.
func BenchmarkMultiListFrame(b *testing.B) {
	var o Options
	for i := 0; i < 4; i++ {
		c, k := bigCluster(5000)
		c.Context = fmt.Sprintf("big-%d", i)
		o.Clusters = append(o.Clusters, ClusterOptions{Cluster: c, Clock: k.Now})
	}
	mm := NewMulti(o)
	mm.Update(tea.WindowSizeMsg{Width: 200, Height: 60})
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_ = mm.View()
	}
}
