package kinds_test

import (
	"flag"
	"os"
	"strings"
	"testing"

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
// coordinators really do".
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
			if _, ok := d.(coord.Observer); !ok {
				t.Error("no one-shot read (coord.Observer)")
			}
			if len(c.NodeAnnotations) == 0 && len(c.NodeLabels) == 0 {
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
