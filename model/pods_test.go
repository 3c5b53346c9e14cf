package model

import (
	"reflect"
	"testing"
	"time"
)

func TestLabelSelectorMatches(t *testing.T) {
	web := map[string]string{"app": "web", "tier": "front"}
	cases := []struct {
		name string
		sel  *LabelSelector
		lbls map[string]string
		want bool
	}{
		{"nil matches nothing", nil, web, false},
		{"empty matches everything", &LabelSelector{}, web, true},
		{"empty matches no labels", &LabelSelector{}, nil, true},
		{"matchLabels equal", &LabelSelector{MatchLabels: map[string]string{"app": "web"}}, web, true},
		{"matchLabels differ", &LabelSelector{MatchLabels: map[string]string{"app": "db"}}, web, false},
		{"matchLabels absent key", &LabelSelector{MatchLabels: map[string]string{"x": ""}}, web, false},
		{"In", &LabelSelector{MatchExpressions: []LabelRequirement{{"tier", "In", []string{"back", "front"}}}}, web, true},
		{"In absent key", &LabelSelector{MatchExpressions: []LabelRequirement{{"zone", "In", []string{"a"}}}}, web, false},
		{"NotIn holds when absent", &LabelSelector{MatchExpressions: []LabelRequirement{{"zone", "NotIn", []string{"a"}}}}, web, true},
		{"NotIn fails", &LabelSelector{MatchExpressions: []LabelRequirement{{"app", "NotIn", []string{"web"}}}}, web, false},
		{"Exists", &LabelSelector{MatchExpressions: []LabelRequirement{{"app", "Exists", nil}}}, web, true},
		{"DoesNotExist", &LabelSelector{MatchExpressions: []LabelRequirement{{"app", "DoesNotExist", nil}}}, web, false},
		{"unknown operator matches nothing", &LabelSelector{MatchExpressions: []LabelRequirement{{"app", "Gt", []string{"1"}}}}, web, false},
		{"all must hold", &LabelSelector{MatchLabels: map[string]string{"app": "web"},
			MatchExpressions: []LabelRequirement{{"tier", "In", []string{"back"}}}}, web, false},
	}
	for _, tc := range cases {
		if got := tc.sel.Matches(tc.lbls); got != tc.want {
			t.Errorf("%s: Matches = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestLabelSelectorString(t *testing.T) {
	sel := &LabelSelector{MatchLabels: map[string]string{"b": "2", "a": "1"}, MatchExpressions: []LabelRequirement{
		{"t", "In", []string{"x", "y"}}, {"c", "DoesNotExist", nil}, {"e", "Exists", nil}}}
	if got, want := sel.String(), "a=1,b=2,t in (x,y),!c,e"; got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
	if got := (*LabelSelector)(nil).String(); got != "<none>" {
		t.Errorf("nil String = %q", got)
	}
}

func TestPDBsCovering(t *testing.T) {
	c := NewCluster("t", Options{})
	now := time.Unix(0, 0)
	c.Apply(Batch{
		PDBUpserted{PDB{Namespace: "shop", Name: "web", Selector: &LabelSelector{MatchLabels: map[string]string{"app": "web"}}}},
		PDBUpserted{PDB{Namespace: "shop", Name: "all", Selector: &LabelSelector{}}},
		PDBUpserted{PDB{Namespace: "shop", Name: "none"}},
		PDBUpserted{PDB{Namespace: "other", Name: "web", Selector: &LabelSelector{MatchLabels: map[string]string{"app": "web"}}}},
	}, now)
	pod := &Pod{Namespace: "shop", Name: "web-1", Labels: map[string]string{"app": "web"}}
	if got := pdbNames(c.PDBsCovering(pod)); !reflect.DeepEqual(got, []string{"shop/all", "shop/web"}) {
		t.Fatalf("covering = %v", got)
	}
	c.Apply(PDBDeleted{Namespace: "shop", Name: "all"}, now)
	if got := pdbNames(c.PDBsCovering(pod)); !reflect.DeepEqual(got, []string{"shop/web"}) {
		t.Fatalf("after delete covering = %v", got)
	}
	c.Apply(PDBUpserted{PDB{Namespace: "shop", Name: "web", Selector: &LabelSelector{MatchLabels: map[string]string{"app": "db"}}}}, now)
	if got := pdbNames(c.PDBsCovering(pod)); len(got) != 0 {
		t.Fatalf("after selector change covering = %v", got)
	}
	if got := pdbNames(c.PDBs()); !reflect.DeepEqual(got, []string{"other/web", "shop/none", "shop/web"}) {
		t.Fatalf("PDBs = %v", got)
	}
}

func pdbNames(ps []*PDB) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Key())
	}
	return out
}

func TestNodePodsReplaceAndForget(t *testing.T) {
	c := NewCluster("t", Options{})
	now := time.Unix(0, 0)
	if _, known := c.NodePods("w1"); known {
		t.Fatal("pods of an unwatched node are known")
	}
	c.Apply(NodePodsSet{Node: "w1", Watched: true, Pods: []Pod{{Namespace: "b", Name: "p"}, {Namespace: "a", Name: "q"}}}, now)
	pods, known := c.NodePods("w1")
	if !known || len(pods) != 2 || pods[0].Key() != "a/q" {
		t.Fatalf("NodePods = %v %v", pods, known)
	}
	c.Apply(NodePodsSet{Node: "w1", Watched: true}, now)
	if pods, known := c.NodePods("w1"); !known || len(pods) != 0 {
		t.Fatalf("an empty watched node: %v %v", pods, known)
	}
	c.Apply(NodePodsSet{Node: "w1"}, now)
	if _, known := c.NodePods("w1"); known {
		t.Fatal("a node no longer watched still has known pods")
	}
}

func TestBlockingPodsOn(t *testing.T) {
	c := NewCluster("t", Options{})
	now := time.Unix(0, 0)
	if pods, unread := c.BlockingPodsOn("w1"); pods != nil || unread != nil {
		t.Fatalf("no selector: %v %v", pods, unread)
	}
	c.Apply(BlockingSelectorsSet{Selectors: []string{"app=backup", "block=yes", "bad=("}}, now)
	pods, unread := c.BlockingPodsOn("w1")
	if len(pods) != 0 || len(unread) != 3 || unread["app=backup"] != "not read yet" {
		t.Fatalf("before any read: %v %v", pods, unread)
	}
	backup := Pod{Namespace: "ops", Name: "backup", Node: "w1", Phase: PodRunning}
	c.Apply(Batch{
		BlockingPodsSet{Selector: "app=backup", Pods: []Pod{
			backup,
			{Namespace: "ops", Name: "done", Node: "w1", Phase: PodSucceeded},
			{Namespace: "ops", Name: "failed", Node: "w1", Phase: PodFailed},
			{Namespace: "ops", Name: "lost", Node: "w1", Phase: PodUnknown},
			{Namespace: "ops", Name: "starting", Node: "w1", Phase: PodPending},
			{Namespace: "ops", Name: "elsewhere", Node: "w2", Phase: PodRunning},
		}},
		BlockingPodsSet{Selector: "block=yes", Pods: []Pod{backup}},
		BlockingPodsSet{Selector: "bad=(", Err: "invalid selector", Pods: []Pod{{Namespace: "x", Name: "ignored", Node: "w1", Phase: PodRunning}}},
		BlockingPodsSet{Selector: "gone=1", Pods: []Pod{{Namespace: "x", Name: "not-in-force", Node: "w1", Phase: PodRunning}}},
	}, now)
	pods, unread = c.BlockingPodsOn("w1")
	var got []string
	for _, p := range pods {
		got = append(got, p.Key())
	}
	if !reflect.DeepEqual(got, []string{"ops/backup", "ops/starting"}) {
		t.Fatalf("blocking pods = %v", got)
	}
	if !reflect.DeepEqual(pods[0].Selectors, []string{"app=backup", "block=yes"}) {
		t.Fatalf("selectors of backup = %v", pods[0].Selectors)
	}
	if !reflect.DeepEqual(unread, map[string]string{"bad=(": "invalid selector"}) {
		t.Fatalf("unread = %v", unread)
	}
	c.Apply(BlockingSelectorsSet{Selectors: []string{"block=yes"}}, now)
	pods, unread = c.BlockingPodsOn("w1")
	if len(pods) != 1 || !reflect.DeepEqual(pods[0].Selectors, []string{"block=yes"}) || unread != nil {
		t.Fatalf("after the selectors changed: %v %v", pods, unread)
	}
}

func TestPodDrainSkips(t *testing.T) {
	cases := []struct {
		pod  Pod
		want bool
	}{
		{Pod{OwnerKind: "DaemonSet"}, true},
		{Pod{Mirror: true}, true},
		{Pod{OwnerKind: "ReplicaSet"}, false},
		{Pod{}, false},
	}
	for _, tc := range cases {
		if got := tc.pod.DrainSkips(); got != tc.want {
			t.Errorf("%+v DrainSkips = %v", tc.pod, got)
		}
	}
}

func TestPodSourcesAreListed(t *testing.T) {
	c := NewCluster("t", Options{})
	now := time.Unix(0, 0)
	c.Apply(Batch{
		SourceChanged{Health: SourceHealth{Name: SourcePods, Status: StatusForbidden, Message: "cannot list pods"}},
		SourceChanged{Health: SourceHealth{Name: SourceNodes, Status: StatusOK}},
		SourceChanged{Health: SourceHealth{Name: SourcePDBs, Status: StatusOK}},
	}, now)
	var names []SourceName
	for _, h := range c.Sources() {
		names = append(names, h.Name)
	}
	if !reflect.DeepEqual(names, []SourceName{SourceNodes, SourcePDBs, SourcePods}) {
		t.Fatalf("sources = %v", names)
	}
}

// TestPDBRefuses follows the eviction API: a budget with no disruption
// allowed refuses, unless the pod is running but not Ready and the budget
// lets unhealthy pods go (AlwaysAllow, or IfHealthyBudget while healthy).
func TestPDBRefuses(t *testing.T) {
	ready := &Pod{Phase: PodRunning, Ready: true}
	unready := &Pod{Phase: PodRunning}
	for _, c := range []struct {
		name string
		b    PDB
		p    *Pod
		want bool
	}{
		{"disruption allowed", PDB{DisruptionsAllowed: 1}, ready, false},
		{"none allowed", PDB{}, ready, true},
		{"unready, AlwaysAllow", PDB{UnhealthyPodEvictionPolicy: "AlwaysAllow"}, unready, false},
		{"unready, healthy budget", PDB{DesiredHealthy: 2, CurrentHealthy: 2}, unready, false},
		{"unready, unhealthy budget", PDB{DesiredHealthy: 2, CurrentHealthy: 1}, unready, true},
		{"ready, AlwaysAllow", PDB{UnhealthyPodEvictionPolicy: "AlwaysAllow"}, ready, true},
	} {
		if got := c.b.Refuses(c.p); got != c.want {
			t.Errorf("%s: Refuses = %v, want %v", c.name, got, c.want)
		}
	}
}
