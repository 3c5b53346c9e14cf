package kinds_test

import (
	"context"
	"flag"
	"os"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/rebootwatch/rebootwatch/internal/coord"
	"github.com/rebootwatch/rebootwatch/internal/coord/kinds"
	"github.com/rebootwatch/rebootwatch/model"
)

var update = flag.Bool("update", false, "rewrite testdata/rbac.yaml")

// TestRBACRender: the rendered rules are the ones checked in: the render,
// the chart's coordinators rules and deploy/'s coordinators component.
func TestRBACRender(t *testing.T) {
	for _, f := range []struct{ path, got string }{
		{"testdata/rbac.yaml", kinds.RenderRBAC()},
		{"../../../deploy/helm/rebootwatch-agent/files/coordinators-rbac.yaml", kinds.CoordinatorsRBAC()},
		{"../../../deploy/components/coordinators/rbac.yaml", kinds.CoordinatorsComponent()},
	} {
		if *update {
			if err := os.WriteFile(f.path, []byte(f.got), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(f.path)
		if err != nil {
			t.Fatal(err)
		}
		if f.got != string(want) {
			t.Errorf("%s is not what the drivers declare; run go test ./internal/coord/kinds -update\n got:\n%s", f.path, f.got)
		}
	}
}

// TestRegistered fails when a registered kind lacks one of its pieces:
// its capabilities, read-only RBAC, blockers, actions the engine knows,
// its row in docs/coordinators-suc-fluo.md and in README's "What the
// coordinators really do"; a lock-object kind also the lock driver the
// engine judges it through and its one-shot read.
func TestRegistered(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/coordinators-suc-fluo.md")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, _ := strings.Cut(string(readme), "## What the coordinators really do")
	table, _, _ = strings.Cut(table, "\n## ")
	seen := map[model.LockKind]bool{}
	for _, d := range kinds.All() {
		c := d.Capabilities()
		t.Run(string(c.Kind), func(t *testing.T) {
			if c.Kind == "" || c.Source == "" || seen[c.Kind] {
				t.Fatalf("kind %q source %q (duplicate %v)", c.Kind, c.Source, seen[c.Kind])
			}
			seen[c.Kind] = true
			if got, ok := kinds.For(c.Kind); !ok || got.Capabilities().Kind != c.Kind {
				t.Error("For does not find it")
			}
			switch c.Slots {
			case coord.SlotsLockObject, coord.SlotsObjectStatus, coord.SlotsNodeAnnotations:
			default:
				t.Errorf("slot model %q", c.Slots)
			}
			if c.DefaultCapacity == 0 && c.Slots != coord.SlotsObjectStatus {
				t.Error("no capacity: only a kind reading it per object may leave it 0")
			}
			if c.CapacityFrom == "" || len(c.Blockers) == 0 || len(c.RBAC) == 0 {
				t.Errorf("capacity from %q, %d blockers, %d RBAC rules", c.CapacityFrom, len(c.Blockers), len(c.RBAC))
			}
			for _, r := range c.RBAC {
				for _, v := range r.Verbs {
					if v != "get" && v != "list" && v != "watch" {
						t.Errorf("RBAC verb %q on %v: a kind's own objects are read only", v, r.Resources)
					}
				}
			}
			for _, a := range c.Actions {
				if a != model.ActionUncordon && a != model.ActionRelease && a != model.ActionReap {
					t.Errorf("action %q", a)
				}
			}
			_, observes := d.(coord.Observer)
			ld, isLock := d.(coord.LockDriver)
			_, reads := d.(coord.LockReader)
			switch {
			case isLock && (!reads || c.Slots != coord.SlotsLockObject || ld.Kind() != c.Kind || ld.Source() != c.Source):
				t.Errorf("a lock driver needs a one-shot read (coord.LockReader: %v), slots %q and its own kind and source (%s, %s)", reads, c.Slots, ld.Kind(), ld.Source())
			case !isLock && !observes:
				t.Error("no one-shot read (coord.Observer) and no lock driver (coord.LockDriver)")
			}
			demo(t, d)
			// A lock-object kind may map its holders through a node field
			// alone (fleetlock: the machine id); every other kind reads
			// node keys.
			if len(c.NodeAnnotations) == 0 && len(c.NodeLabels) == 0 && !isLock {
				t.Error("declares no node key")
			}
			if !strings.Contains(string(doc), "| `"+string(c.Kind)+"` |") {
				t.Errorf("docs/coordinators-suc-fluo.md has no row for %s", c.Kind)
			}
			if !strings.Contains(table, "| `"+string(c.Kind)+"` |") {
				t.Errorf("README's \"What the coordinators really do\" has no row for %s", c.Kind)
			}
		})
	}
}

// simBuiltin are the scenarios sources/sim plays itself: a kind named so
// (kured, fleetlock) may have no demo hook yet, or one that names it
// (coord.Demo.Builtin).
var simBuiltin = map[model.LockKind]bool{model.LockKured: true, model.LockFleetlock: true}

// demo checks a kind's demo scenario hook (issue 24 §1: "its demo scenario
// hook"): named after the kind, summarised, and its steps in time order,
// each written without error to fake clientsets that know only its list
// kinds.
func demo(t *testing.T, d coord.Driver) {
	t.Helper()
	c := d.Capabilities()
	h, ok := d.(coord.Demoer)
	if !ok {
		if !simBuiltin[c.Kind] {
			t.Error("no demo scenario hook (coord.Demoer)")
		}
		return
	}
	start := time.Date(2026, 11, 29, 2, 0, 0, 0, time.UTC)
	dm := h.Demo(start)
	if dm.Name != string(c.Kind) || dm.Summary == "" {
		t.Errorf("demo %q (summary %q): the --demo value is the kind's name", dm.Name, dm.Summary)
	}
	if dm.Builtin {
		if !simBuiltin[c.Kind] {
			t.Errorf("demo %q names a scenario sources/sim does not play", dm.Name)
		}
		return
	}
	if len(dm.Steps) == 0 || dm.Steps[0].At > 0 {
		t.Fatalf("demo %q: no step at time zero", dm.Name)
	}
	lk := map[schema.GroupVersionResource]string{}
	for g, k := range dm.ListKinds {
		lk[g] = k
	}
	cl := coord.DemoClients{Kube: fake.NewSimpleClientset(), Dynamic: dynfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), lk)}
	for i, st := range dm.Steps {
		if i > 0 && st.At < dm.Steps[i-1].At {
			t.Errorf("demo %q: step %d (%s) before the one it follows", dm.Name, i, st.What)
		}
		if st.What == "" || st.At > time.Minute*10 {
			t.Errorf("demo %q: step %d at %v (%q): each step says what it is, and the story plays within 10 minutes of scenario time (the first minute at the default --speed 10)", dm.Name, i, st.At, st.What)
		}
		if err := st.Write(context.Background(), cl, start.Add(st.At)); err != nil {
			t.Errorf("demo %q: step %d (%s): %v", dm.Name, i, st.What, err)
		}
	}
}

// TestUncordonWording: every kind whose node the engine may uncordon says,
// in its own package, when the coordinator itself uncordons (the write's
// words, issue 32 §4): the engine has no kind switch for it.
func TestUncordonWording(t *testing.T) {
	for _, d := range kinds.All() {
		c := d.Capabilities()
		offers := strings.Contains(c.Writes, "uncordon")
		for _, a := range c.Actions {
			offers = offers || a == model.ActionUncordon
		}
		if c.Slots == coord.SlotsLockObject {
			offers = true // done · still cordoned holders are uncordoned
		}
		if offers && c.Uncordons == "" {
			t.Errorf("kind %s may be uncordoned but declares no Uncordons wording", c.Kind)
		}
	}
}
