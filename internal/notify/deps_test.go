package notify

import (
	"slices"
	"testing"

	"github.com/rebootwatch/rebootwatch/internal/testenv/golist"
)

// templateExecuting are the shoutrrr packages the agent must not link: the
// router (the shoutrrr package and pkg/router link every service) and the
// three services that execute text/template templates. One reachable
// (*template.Template).Execute makes the linker keep every exported method
// of every type: 27 MB of binary and about 11 MiB of the idle agent's RSS
// (docs/performance.md, "Where the agent's memory goes").
var templateExecuting = []string{
	"github.com/nicholas-fedor/shoutrrr",
	"github.com/nicholas-fedor/shoutrrr/pkg/router",
	"github.com/nicholas-fedor/shoutrrr/pkg/services/specialized/generic",
	"github.com/nicholas-fedor/shoutrrr/pkg/services/specialized/logger",
	"github.com/nicholas-fedor/shoutrrr/pkg/services/email/smtp",
}

// TestAgentLinksNoTemplateExecutingService fails when the agent depends on
// shoutrrr's router or on one of its template-executing services again.
func TestAgentLinksNoTemplateExecutingService(t *testing.T) {
	deps := golist.Deps(t, 2, "./cmd/rebootwatch-agent")
	// The listing is the real one: shoutrrr's services are in it.
	if !slices.Contains(deps, "github.com/nicholas-fedor/shoutrrr/pkg/services/chat/slack") {
		t.Fatalf("go list -deps does not list shoutrrr's slack service: %d packages", len(deps))
	}
	for _, p := range templateExecuting {
		if slices.Contains(deps, p) {
			t.Errorf("the agent depends on %s again (`go mod why %s` says through what): it executes text/template", p, p)
		}
	}
}
