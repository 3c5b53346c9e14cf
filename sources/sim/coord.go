package sim

import (
	"context"
	"slices"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"

	"github.com/rebootwatch/rebootwatch/internal/coord"
	"github.com/rebootwatch/rebootwatch/internal/coord/kinds"
)

// Scenario is one scenario the demo cluster plays (a --demo value).
type Scenario struct {
	Name    string
	Summary string
}

// Scenarios lists every demo scenario: the two played here (fleetlock, the
// default, and kured), then each registered coordinator kind's own
// (internal/coord/kinds: its package's demo scenario hook).
func Scenarios() []Scenario {
	out := []Scenario{
		{ScenarioFleetlock, "Fedora CoreOS under fleetlock: a ghost Lease and an orphaned, cordoned holder"},
		{ScenarioKured, "kured: an orphaned lock, then a drain held by a PodDisruptionBudget and a closing window"},
	}
	seen := map[string]bool{ScenarioFleetlock: true, ScenarioKured: true}
	for _, d := range kinds.Demos(time.Time{}) {
		if !seen[d.Name] {
			seen[d.Name] = true
			out = append(out, Scenario{d.Name, d.Summary})
		}
	}
	return out
}

// ScenarioNames are Scenarios' names.
func ScenarioNames() []string {
	var out []string
	for _, s := range Scenarios() {
		out = append(out, s.Name)
	}
	return out
}

// CoordinatorScenario says whether the scenario is a registered
// coordinator kind's own (not one played here).
func CoordinatorScenario(name string) bool {
	_, ok := coordDemoFor(name, time.Time{})
	return ok
}

// coordDemo is a coordinator kind's scenario being played: its steps not
// yet written.
type coordDemo struct {
	steps []coord.DemoStep
}

// coordDemoFor returns the registered kind's scenario of that name.
func coordDemoFor(name string, start time.Time) (coord.Demo, bool) {
	for _, d := range kinds.Demos(start) {
		if d.Name == name && !d.Builtin {
			return d, true
		}
	}
	return coord.Demo{}, false
}

// seedCoord writes the scenario's steps at or before time zero.
func (s *Sim) seedCoord(d coord.Demo) func() error {
	return func() error {
		s.serve(d.ListKinds)
		s.coord = &coordDemo{steps: d.Steps}
		for len(s.coord.steps) > 0 && s.coord.steps[0].At <= 0 {
			if err := s.coordStep(context.Background()); err != nil {
				return err
			}
		}
		return nil
	}
}

// nextCoord is next() for a coordinator kind's scenario.
func (s *Sim) nextCoord(consider func(time.Time, func(context.Context) error)) {
	if len(s.coord.steps) > 0 {
		consider(s.cfg.Start.Add(s.coord.steps[0].At), s.coordStep)
	}
}

// coordStep writes the next step.
func (s *Sim) coordStep(ctx context.Context) error {
	st := s.coord.steps[0]
	s.coord.steps = s.coord.steps[1:]
	at := s.cfg.Start.Add(st.At)
	if at.Before(s.now) {
		at = s.now
	}
	return st.Write(ctx, coord.DemoClients{Kube: s.Client, Dynamic: s.Dynamic}, at)
}

// serve installs the scenario's custom resources in the demo cluster: its
// discovery serves them, as a real apiserver serves an installed CRD (a
// kind read without asking first asks whether its CRD is served). The
// other scenarios' resources can be listed (sim.New) but are not served.
func (s *Sim) serve(listKinds map[schema.GroupVersionResource]string) {
	fd, ok := s.Client.Discovery().(*fakediscovery.FakeDiscovery)
	if !ok {
		return
	}
	gvrs := make([]schema.GroupVersionResource, 0, len(listKinds))
	for gvr := range listKinds {
		gvrs = append(gvrs, gvr)
	}
	sort.Slice(gvrs, func(i, j int) bool { return gvrs[i].String() < gvrs[j].String() })
	for _, gvr := range gvrs {
		gv := gvr.GroupVersion().String()
		r := metav1.APIResource{Name: gvr.Resource, Namespaced: true, Kind: strings.TrimSuffix(listKinds[gvr], "List"),
			Verbs: metav1.Verbs{"get", "list", "watch"}}
		i := slices.IndexFunc(fd.Resources, func(l *metav1.APIResourceList) bool { return l.GroupVersion == gv })
		if i < 0 {
			fd.Resources = append(fd.Resources, &metav1.APIResourceList{GroupVersion: gv})
			i = len(fd.Resources) - 1
		}
		fd.Resources[i].APIResources = append(fd.Resources[i].APIResources, r)
	}
}
