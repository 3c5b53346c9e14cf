// Command gendocs writes the command line's flag reference into docs/cli.md,
// between the markers internal/cli.ReferenceBegin and ReferenceEnd, from
// the cobra command tree (internal/cli.Reference). Run it from the
// repository's root after changing a command or a flag:
//
//	go run ./hack/gendocs
//
// internal/cli's TestFlagReference fails while docs/cli.md is stale.
package main

import (
	"fmt"
	"os"

	"github.com/rebootwatch/rebootwatch/internal/cli"
)

func main() {
	const path = "docs/cli.md"
	b, err := os.ReadFile(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gendocs:", err)
		os.Exit(1)
	}
	out, ok := cli.ReplaceReference(string(b), cli.Reference())
	if !ok {
		fmt.Fprintf(os.Stderr, "gendocs: %s has no %q … %q markers\n", path, cli.ReferenceBegin, cli.ReferenceEnd)
		os.Exit(1)
	}
	if out == string(b) {
		fmt.Println("gendocs: docs/cli.md is up to date")
		return
	}
	if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "gendocs:", err)
		os.Exit(1)
	}
	fmt.Println("gendocs: docs/cli.md's flag reference rewritten")
}
