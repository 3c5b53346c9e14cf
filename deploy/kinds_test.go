package deploy

import (
	"strings"
	"testing"

	"github.com/rebootwatch/rebootwatch/internal/coord/kinds"
)

// TestRBACGrantsWhatEveryLockKindDeclares: the agent watches every
// registered lock kind (kured, fleetlock) by default, so deploy/rbac.yaml
// and the chart's templates/rbac.yaml grant every read rule each of their
// drivers declares (coord.Capabilities.RBAC, rendered by
// kinds.RenderRBAC) — narrowed to the lock's namespace and name where the
// manifests narrow it, never missing. The coordinator kinds read with
// --coordinators (suc, flatcar) are checked by the components' own tests.
func TestRBACGrantsWhatEveryLockKindDeclares(t *testing.T) {
	for _, src := range []struct {
		name string
		objs func(t *testing.T) []Object
	}{
		{"deploy/rbac.yaml", objects},
		{"the chart's templates/rbac.yaml", func(t *testing.T) []Object { return render(t, defaultValues) }},
	} {
		got := grants(t, src.objs(t))
		for _, d := range kinds.LockDrivers() {
			c, ok := kinds.For(d.Kind())
			if !ok {
				t.Fatalf("lock kind %s is not in the registry", d.Kind())
			}
			for _, r := range c.Capabilities().RBAC {
				for _, g := range r.APIGroups {
					for _, res := range r.Resources {
						for _, v := range r.Verbs {
							want := v + " " + g + "/" + res
							found := false
							for _, have := range got {
								found = found || have == want+" cluster-wide" || strings.HasPrefix(have, want+" in ") || strings.HasPrefix(have, want+"/")
							}
							if !found {
								t.Errorf("%s: %s declares %q (kinds.RenderRBAC), which the agent is not granted", src.name, d.Kind(), want)
							}
						}
					}
				}
			}
		}
	}
}
