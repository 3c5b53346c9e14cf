package main

import (
	"strings"
	"testing"

	"github.com/rebootwatch/rebootwatch/internal/testenv/golist"
)

// heavy are module paths that must never be in the binaries:
// k8s.io/cli-runtime (kubectl's genericclioptions) brings kustomize,
// kubectl's printers, the resource builder and discovery caches, which more
// than double the binary and the memory of every run (docs/performance.md).
// kubectlflags binds the same flags with client-go's clientcmd instead.
var heavy = []string{"k8s.io/cli-runtime", "sigs.k8s.io/kustomize", "k8s.io/kubectl"}

// TestNoCLIRuntime fails when cli-runtime, kustomize or kubectl's own
// packages are among the dependencies of the three binaries.
func TestNoCLIRuntime(t *testing.T) {
	deps := golist.Deps(t, 2, "./cmd/rebootwatch", "./cmd/kubectl-rebootwatch", "./cmd/rebootwatch-agent")
	// The listing is the real one: the cluster flags' own package is in it.
	found := false
	for _, p := range deps {
		if p == "k8s.io/client-go/tools/clientcmd" {
			found = true
		}
	}
	if !found {
		t.Fatalf("go list -deps does not list k8s.io/client-go/tools/clientcmd: %d packages", len(deps))
	}
	for _, h := range heavy {
		var in []string
		for _, p := range deps {
			if p == h || strings.HasPrefix(p, h+"/") {
				in = append(in, p)
			}
		}
		if len(in) > 0 {
			t.Errorf("%d packages of %s are dependencies again, e.g. %s (`go mod why %s` says through what)", len(in), h, in[0], in[0])
		}
	}
}
