package tui

import (
	"regexp"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/rebootwatch/rebootwatch/model"
)

// multiFixture is a cluster list over two copies of the fixture
// (prod-eu-1, prod-eu-2) and a cluster that could not be opened (lab).
type multiFixture struct {
	m     *Multi
	f     []*fixture
	ch    []chan model.Event
	clock *clock
	// init is the command Init returned (called before the first Update,
	// as the program does).
	init tea.Cmd
}

func newMultiFixture(o Options) *multiFixture {
	mf := &multiFixture{clock: &clock{now: t0}}
	for i, name := range []string{"prod-eu-1", "prod-eu-2"} {
		f := newFixture()
		f.c.Context = name
		f.clock = mf.clock
		ch := make(chan model.Event, 16)
		mf.f = append(mf.f, f)
		mf.ch = append(mf.ch, ch)
		o.Clusters = append(o.Clusters, ClusterOptions{Cluster: f.c, Events: ch, Clock: mf.clock.Now, Actions: f.actions})
		_ = i
	}
	lab := model.NewCluster("lab", model.Options{})
	lab.Apply(model.SourceChanged{Health: model.SourceHealth{Name: model.SourceNodes, Status: model.StatusError,
		Message: "dial tcp 127.0.0.1:1: connect: connection refused"}}, t0)
	lab.Recompute(t0)
	o.Clusters = append(o.Clusters, ClusterOptions{Cluster: lab, Clock: mf.clock.Now})
	o.WallClock = mf.clock.Now
	mf.m = NewMulti(o)
	mf.init = mf.m.Init()
	mf.m.Update(tea.WindowSizeMsg{Width: 120, Height: 30})
	return mf
}

func (mf *multiFixture) press(keys ...string) tea.Cmd {
	var last tea.Cmd
	for _, k := range keys {
		_, last = mf.m.Update(keyMsg(k))
	}
	return last
}

func (mf *multiFixture) screen() string { return ansi.Strip(mf.m.View().Content) }

// deliver queues evs on cluster i's channel, runs the real wait command and
// hands its message to Update; it returns Update's command.
func (mf *multiFixture) deliver(t *testing.T, i int, evs ...model.Event) tea.Cmd {
	t.Helper()
	for _, ev := range evs {
		mf.ch[i] <- ev
	}
	msg := waitCluster(i, mf.ch[i])()
	cm, ok := msg.(clusterMsg)
	if !ok || cm.i != i {
		t.Fatalf("waitCluster(%d) = %#v; want a clusterMsg tagged %d", i, msg, i)
	}
	_, cmd := mf.m.Update(msg)
	return cmd
}

var kuredRef = model.LockRef{Kind: model.LockKured, Namespace: "kube-system", Name: "kured"}

// lockTo moves kured's lock to holder (a node name, or a name of no node:
// a ghost).
func lockTo(holder, rv string) model.Event {
	return model.LockUpserted{Lock: model.LockObject{LockRef: kuredRef, UID: "ds-uid", ResourceVersion: rv, Spec: &fixSpec{kind: model.LockKured, holder: holder, at: t0}}}
}

func TestMultiListRenders(t *testing.T) {
	mf := newMultiFixture(Options{Demo: true})
	s := mf.screen()
	for _, want := range []string{"rebootwatch ⎈ 3 clusters", "prod-eu-1", "prod-eu-2", "3 of 3 need attention",
		"lab                unreachable: dial tcp", "connection refused", "5/12", "w-03, 978a225b3…", "ghost", "2 degraded", "4/5 ok · prometheus stale"} {
		if !strings.Contains(s, want) {
			t.Fatalf("list lacks %q:\n%s", want, s)
		}
	}
	if mf.m.Active() != "" {
		t.Fatalf("starts on %q; want the list", mf.m.Active())
	}
	if got := mf.m.View().WindowTitle; got != "rebootwatch · 3 clusters" {
		t.Fatalf("title %q", got)
	}
	assertScreen(t, mf.m.View().Content, 120, 30)
	golden(t, "multi-list", mf.m.View().Content)
}

func TestMultiEnterOpensAndEscReturns(t *testing.T) {
	mf := newMultiFixture(Options{})
	mf.press("j", "enter")
	if mf.m.Active() != "prod-eu-2" {
		t.Fatalf("enter on the second row opened %q", mf.m.Active())
	}
	s := mf.screen()
	if !strings.Contains(s, "⎈ prod-eu-2") || !strings.Contains(s, "‹ esc clusters") || !strings.Contains(s, "Nodes") {
		t.Fatalf("cluster dashboard not shown:\n%s", s)
	}
	if got := mf.m.View().WindowTitle; got != "rebootwatch · prod-eu-2" {
		t.Fatalf("title %q", got)
	}
	// esc closes what is open inside the dashboard first.
	mf.press("enter")
	if !strings.Contains(mf.screen(), "Node w-03") {
		t.Fatalf("enter in the dashboard should open the node detail:\n%s", mf.screen())
	}
	mf.press("esc")
	if mf.m.Active() != "prod-eu-2" || !strings.Contains(mf.screen(), "sort: cycle") {
		t.Fatalf("esc from the detail must return to the dashboard, not the list:\n%s", mf.screen())
	}
	mf.press("/", "w", "-", "0", "4", "enter")
	mf.press("esc")
	if mf.m.Active() != "prod-eu-2" || mf.m.kids[1].table.Filter != "" {
		t.Fatalf("esc with a filter applied must clear it first (active %q)", mf.m.Active())
	}
	mf.press("esc")
	if mf.m.Active() != "" || !strings.Contains(mf.screen(), "Clusters") {
		t.Fatalf("esc at the top level must return to the list:\n%s", mf.screen())
	}
	// The selection stayed on the cluster just left.
	if mf.m.list.Selected() != "prod-eu-2" {
		t.Fatalf("selection %q", mf.m.list.Selected())
	}
	// The unreachable cluster opens too and says why.
	mf.press("j", "enter")
	if mf.m.Active() != "lab" || !strings.Contains(mf.screen(), "nodes ✗") {
		t.Fatalf("lab dashboard:\n%s", mf.screen())
	}
	mf.press("esc")
	// q quits from the list.
	if cmd := mf.press("q"); cmd == nil {
		t.Fatal("q on the list must quit")
	} else if _, ok := cmd().(tea.QuitMsg); !ok {
		t.Fatal("q on the list must quit")
	}
}

func TestMultiHiddenClusterKeepsApplyingEvents(t *testing.T) {
	mf := newMultiFixture(Options{})
	mf.press("enter") // prod-eu-1 on screen; prod-eu-2 hidden
	if cmd := mf.deliver(t, 1, lockTo("w-04", "500")); cmd == nil {
		t.Fatal("after a batch the hidden cluster must wait for its next events")
	} else {
		// The re-issued wait is for cluster 1, not the one on screen.
		mf.ch[1] <- lockTo("w-05", "501")
		if cm, ok := cmd().(clusterMsg); !ok || cm.i != 1 {
			t.Fatalf("re-issued wait returned %#v; want cluster 1's events", cm)
		} else {
			mf.m.Update(cm)
		}
	}
	if got := mf.f[1].c.Phase("w-05"); got != model.PhaseDraining {
		t.Fatalf("hidden cluster's w-05 phase = %s; want draining", got)
	}
	if got := mf.f[0].c.Phase("w-05"); got != model.PhasePending {
		t.Fatalf("the cluster on screen got the hidden cluster's events: w-05 %s", got)
	}
	if s := mf.screen(); !strings.Contains(s, "⎈ prod-eu-1") || strings.Contains(s, "prod-eu-2") {
		t.Fatalf("the screen must stay on prod-eu-1:\n%s", s)
	}
	// The tick re-derives every cluster: time passes in the hidden one.
	mf.clock.Add(3 * time.Minute)
	mf.m.Update(tickMsg(mf.clock.Now()))
	if tr := mf.f[1].c.Track("w-05"); tr == nil || mf.m.kids[1].now != mf.clock.Now() {
		t.Fatal("the hidden cluster was not recomputed on the tick")
	}
	mf.press("esc")
	if r := mf.m.list.Rows[1]; r.Holder != "w-05, 978a225b3d7b…" {
		t.Fatalf("row of the hidden cluster = %+v; want holder w-05 first", r)
	}
	mf.press("j", "enter")
	if !strings.Contains(mf.screen(), "draining") || mf.m.kids[1].derived.fleet.Nodes != 12 {
		t.Fatalf("prod-eu-2 dashboard:\n%s", mf.screen())
	}
	// A closed stream ends that cluster's waits, nobody else's.
	_, cmd := mf.m.Update(clusterMsg{i: 0, msg: streamClosedMsg{}})
	if cmd != nil || !mf.m.kids[0].streamClosed || mf.m.kids[1].streamClosed {
		t.Fatal("stream closed must mark only cluster 0")
	}
}

// TestMultiActionOutcomeGoesToItsCluster: an action started in one cluster
// reports back to it even when another cluster is on screen by then.
func TestMultiActionOutcomeGoesToItsCluster(t *testing.T) {
	mf := newMultiFixture(Options{})
	mf.press("enter", "tab", "x")
	if mf.m.kids[0].dialog == nil {
		t.Fatalf("reap dialog not open:\n%s", mf.screen())
	}
	mf.clock.Add(time.Second)
	cmd := mf.press("y")
	if cmd == nil {
		t.Fatal("confirm must return the action's command")
	}
	mf.press("esc", "j", "enter") // now prod-eu-2 is on screen
	msg := cmd()
	cm, ok := msg.(clusterMsg)
	if !ok || cm.i != 0 {
		t.Fatalf("action outcome = %#v; want it tagged with cluster 0", msg)
	}
	mf.m.Update(cm)
	if len(mf.f[0].actions.calls) != 1 || mf.m.kids[0].busy || mf.m.kids[0].toast == nil ||
		!strings.Contains(mf.m.kids[0].toast.Text, "reap fleetlock:default/fleetlock-default: done") {
		t.Fatalf("cluster 0 did not get its outcome (toast %+v)", mf.m.kids[0].toast)
	}
	if mf.m.kids[1].toast != nil || strings.Contains(mf.screen(), "reap fleetlock") {
		t.Fatalf("cluster 1 got cluster 0's outcome:\n%s", mf.screen())
	}
}

func TestMultiThemeIsShared(t *testing.T) {
	mf := newMultiFixture(Options{})
	mf.press("t")
	if !strings.Contains(mf.screen(), "theme: light") {
		t.Fatalf("no theme toast:\n%s", mf.screen())
	}
	for i, k := range mf.m.kids {
		if k.Theme() != "light" {
			t.Fatalf("cluster %d theme %s", i, k.Theme())
		}
	}
	mf.press("enter", "t", "esc")
	for i, k := range mf.m.kids {
		if k.Theme() != mf.m.kids[0].Theme() || k.Theme() == "light" {
			t.Fatalf("cluster %d theme %s after t inside a dashboard", i, k.Theme())
		}
	}
	if mf.m.ctx.Theme.Name != mf.m.kids[0].Theme() {
		t.Fatalf("list theme %s", mf.m.ctx.Theme.Name)
	}
}

func TestMultiSizes(t *testing.T) {
	mf := newMultiFixture(Options{})
	for w := 1; w <= 200; w += 13 {
		for h := 1; h <= 50; h += 7 {
			mf.m.Update(tea.WindowSizeMsg{Width: w, Height: h})
			assertScreen(t, mf.m.View().Content, w, h)
		}
	}
}

// bellCounter counts the bells a model's commands carry. The model counts
// each bell it asks for (rang); Init and Update put the bell's command last,
// so for each counted bell the command is checked to end with it. Only the
// bell's command and tea.Batch's run here: the others block (the tick, event
// waits).
type bellCounter struct {
	rang *int
	seen int
}

func (b *bellCounter) bells(t *testing.T, cmd tea.Cmd) int {
	t.Helper()
	n := *b.rang - b.seen
	b.seen = *b.rang
	if n > 0 && !endsWithBell(cmd) {
		t.Fatalf("the model counted %d bell(s) its command does not carry", n)
	}
	return n
}

func endsWithBell(cmd tea.Cmd) bool {
	if cmd == nil {
		return false
	}
	switch msg := cmd().(type) {
	case bellMsg:
		return true
	case tea.BatchMsg:
		return len(msg) > 0 && endsWithBell(msg[len(msg)-1])
	}
	return false
}

// TestBellIsAMessage: the bell travels as an ordinary message, which the
// root (a dashboard alone, or the cluster list) writes out as BEL.
func TestBellIsAMessage(t *testing.T) {
	f := newFixture()
	m := f.model(Options{Bell: true})
	m.Init() // rings for the fixture's critical items: nothing is due after it
	mf := newMultiFixture(Options{Bell: true})
	for name, update := range map[string]func(tea.Msg) (tea.Model, tea.Cmd){"dashboard": m.Update, "cluster list": mf.m.Update} {
		_, cmd := update(ringBell())
		if cmd == nil {
			t.Fatalf("%s: no command for the bell message", name)
		}
		if raw, ok := cmd().(tea.RawMsg); !ok || raw.Msg != "\a" {
			t.Fatalf("%s: the bell message gave %#v, want BEL", name, cmd())
		}
	}
}

func TestBellSingle(t *testing.T) {
	for _, on := range []bool{true, false} {
		f := newFixture()
		m := f.model(Options{Bell: on})
		bc := &bellCounter{rang: &m.rang}
		// The fixture starts with two critical items (ghost lease, w-09 down).
		init := bc.bells(t, m.Init())
		size(m, 100, 30)
		want := map[bool]int{true: 1, false: 0}[on]
		if init != want || m.rang != want {
			t.Fatalf("bell=%v: %d bells at start (rang %d); want %d", on, init, m.rang, want)
		}
		// Time passes: the items' texts change (ages), they are not new.
		f.clock.Add(2 * time.Minute)
		_, cmd := m.Update(tickMsg(f.clock.Now()))
		if bc.bells(t, cmd) != 0 || m.rang != want {
			t.Fatalf("bell=%v: the tick rang again", on)
		}
		// A new critical item: kured's lock turns ghost.
		_, cmd = m.Update(eventsMsg{lockTo("gone-node", "900")})
		if got := bc.bells(t, cmd); got != want || m.rang != 2*want {
			t.Fatalf("bell=%v: %d bells for the new ghost; want %d", on, got, want)
		}
		// Nothing new: an unrelated event and ticks stay quiet.
		_, cmd = m.Update(eventsMsg{model.VolumeDeleted{Namespace: "longhorn-system", Name: "pvc-03"}})
		f.clock.Add(time.Minute)
		_, cmd2 := m.Update(tickMsg(f.clock.Now()))
		if bc.bells(t, cmd)+bc.bells(t, cmd2) != 0 || m.rang != 2*want {
			t.Fatalf("bell=%v: rang without a new item", on)
		}
		// The item goes, then comes back: new again.
		m.Update(eventsMsg{lockTo("w-03", "901")})
		_, cmd = m.Update(eventsMsg{lockTo("gone-node", "902")})
		if got := bc.bells(t, cmd); got != want || m.rang != 3*want {
			t.Fatalf("bell=%v: %d bells when the ghost came back; want %d", on, got, want)
		}
	}
}

func TestBellMulti(t *testing.T) {
	for _, on := range []bool{true, false} {
		mf := newMultiFixture(Options{Bell: on})
		bc := &bellCounter{rang: &mf.m.rang}
		want := map[bool]int{true: 1, false: 0}[on]
		// Both fixtures start with critical items: one bell, not two.
		if got := bc.bells(t, mf.init); got != want || mf.m.rang != want {
			t.Fatalf("bell=%v: %d bells at start; want %d", on, got, want)
		}
		for _, k := range mf.m.kids {
			if k.rang != 0 {
				t.Fatal("a cluster's dashboard rang by itself inside the list")
			}
		}
		mf.clock.Add(time.Minute)
		_, cmd := mf.m.Update(tickMsg(mf.clock.Now()))
		if bc.bells(t, cmd) != 0 {
			t.Fatalf("bell=%v: the tick rang", on)
		}
		// A hidden cluster (the list is on screen) gets a new ghost.
		if got := bc.bells(t, mf.deliver(t, 1, lockTo("gone-node", "900"))); got != want || mf.m.rang != 2*want {
			t.Fatalf("bell=%v: %d bells for a new ghost in a hidden cluster; want %d", on, got, want)
		}
		// Inside prod-eu-1, the other one's stays known: no bell.
		mf.press("enter")
		if got := bc.bells(t, mf.deliver(t, 1, model.VolumeDeleted{Namespace: "longhorn-system", Name: "pvc-03"})); got != 0 {
			t.Fatalf("bell=%v: rang for nothing new", on)
		}
		if got := bc.bells(t, mf.deliver(t, 0, lockTo("gone-node", "900"))); got != want || mf.m.rang != 3*want {
			t.Fatalf("bell=%v: %d bells for a new ghost in the cluster on screen; want %d", on, got, want)
		}
	}
}

func TestMultiFooterNamesTheMostUrgent(t *testing.T) {
	mf := newMultiFixture(Options{})
	s := mf.screen()
	last := s[strings.LastIndex(s, "\n")+1:]
	// The count follows the item it counts and stays when the item is cut.
	if !strings.HasPrefix(last, "✗ prod-eu-1: fleetlock lock default/fleetlock-default") || !regexp.MustCompile(`… \(\+\d+ more\) *$`).MatchString(last) {
		t.Fatalf("footer %q", last)
	}
	mf.press("enter", "?")
	if !strings.Contains(mf.screen(), "returns to the cluster list") {
		t.Fatalf("help does not say how to go back:\n%s", mf.screen())
	}
}
