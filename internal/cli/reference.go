package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// Markers of the generated flag reference in docs/cli.md.
const (
	ReferenceBegin = "<!-- BEGIN GENERATED FLAG REFERENCE: `go run ./hack/gendocs` writes it from the cobra commands; a test fails when it is stale -->"
	ReferenceEnd   = "<!-- END GENERATED FLAG REFERENCE -->"
)

// Reference renders the command line's reference from the command tree: for
// each command its usage line, what it does and its own flags, the root's
// flags being the shared ones. docs/cli.md holds it between ReferenceBegin and
// ReferenceEnd (hack/gendocs writes it; TestFlagReference checks it).
func Reference() string {
	r := &runner{env: Env{Getenv: func(string) string { return "" }}}
	d := DefaultCommon()
	r.c = &d
	root := r.newRoot("")
	var b strings.Builder
	for _, c := range append([]*cobra.Command{root}, root.Commands()...) {
		if !c.IsAvailableCommand() && c != root {
			continue
		}
		fmt.Fprintf(&b, "#### `%s`\n\n%s.\n\n```\n%s\n", c.CommandPath(), strings.TrimSuffix(c.Short, "."), c.UseLine())
		own := c.LocalFlags()
		if c == root {
			own = c.LocalNonPersistentFlags()
		}
		if fl := own.FlagUsagesWrapped(0); fl != "" {
			fmt.Fprintf(&b, "\nFlags:\n%s", fl)
		}
		if c == root {
			fmt.Fprintf(&b, "\nShared flags (every command, before or after its name):\n%s", c.PersistentFlags().FlagUsagesWrapped(0))
		}
		b.WriteString("```\n\n")
	}
	return strings.TrimRight(b.String(), "\n") + "\n"
}

// ReplaceReference returns readme with its generated reference replaced by
// ref; ok is false when the markers are missing.
func ReplaceReference(readme, ref string) (string, bool) {
	i := strings.Index(readme, ReferenceBegin)
	j := strings.Index(readme, ReferenceEnd)
	if i < 0 || j < i {
		return readme, false
	}
	return readme[:i+len(ReferenceBegin)] + "\n\n" + ref + "\n" + readme[j:], true
}
