package deploy

import (
	"strings"
	"testing"

	"github.com/rebootwatch/rebootwatch/internal/coord/kinds"
)

// TestRBACGrantsWhatEveryKindDeclares: the agent reads every registered
// kind by default (kured and fleetlock, and the kinds read once per
// iteration, suc and flatcar, each reported not-installed when it is not
// there), so deploy/'s manifests and the chart's default render grant every
// read rule each of their drivers declares (coord.Capabilities.RBAC,
// rendered by kinds.RenderRBAC) — narrowed to the lock's namespace and name
// where the manifests narrow it, never missing.
func TestRBACGrantsWhatEveryKindDeclares(t *testing.T) {
	for _, src := range []struct {
		name string
		objs func(t *testing.T) []Object
	}{
		{"deploy/ (rbac.yaml, coordinators-rbac.yaml)", objects},
		{"the chart's templates/rbac.yaml", func(t *testing.T) []Object { return render(t, defaultValues) }},
	} {
		got := grants(t, src.objs(t))
		for _, c := range kinds.All() {
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
								t.Errorf("%s: %s declares %q (kinds.RenderRBAC), which the agent is not granted", src.name, c.Capabilities().Kind, want)
							}
						}
					}
				}
			}
		}
	}
}
