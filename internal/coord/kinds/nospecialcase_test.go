package kinds_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// generic lists the packages that must know no coordinator kind by name
// (issue 32 §1): each reaches kured and fleetlock only through the registry
// (internal/coord/kinds) and the contracts of internal/coord, so a fifth
// kind is its package and its registry line, never a case here. Add a
// package by its directory (from the module root). allow names the files
// (module-relative) that still hold a special case, each with why; an
// allowance that is no longer needed fails too, so the list only shrinks.
var generic = []struct {
	dir   string
	allow map[string]string
}{
	{"internal/lock", map[string]string{
		// The alert gate's fresh read takes kured's settings (its
		// Prometheus URL and blocking-alert filter), and a plan's judged
		// settings are compared as kured's: kured's settings move behind a
		// coordinator hook with the kured settings work (branch kuredcfg).
		"internal/lock/fresh.go": "the alert gate's kured settings (FreshReaders.Alerts, Judged.kuredConfig, specDiff)",
	}},
}

// kindPackages are the coordinator packages of the lock-object kinds named
// in issue 32 §1; kindConsts the model's constants naming them.
var (
	kindPackages = []string{"github.com/rebootwatch/rebootwatch/internal/coord/kured", "github.com/rebootwatch/rebootwatch/internal/coord/fleetlock"}
	kindConsts   = map[string]bool{"LockKured": true, "LockFleetlock": true}
)

// TestNoKindSpecialCase scans each generic package's non-test Go files
// (go/parser): no import of a lock-object kind's package (kured, fleetlock
// or their subpackages), and no comparison (==, !=, a switch case) against
// model.LockKured or model.LockFleetlock.
func TestNoKindSpecialCase(t *testing.T) {
	root := "../../.."
	for _, g := range generic {
		files, err := filepath.Glob(filepath.Join(root, g.dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: no Go files (%v)", g.dir, err)
		}
		sort.Strings(files)
		special := map[string][]string{}
		fset := token.NewFileSet()
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			rel, _ := filepath.Rel(root, f)
			rel = filepath.ToSlash(rel)
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			file, err := parser.ParseFile(fset, f, src, 0)
			if err != nil {
				t.Fatal(err)
			}
			special[rel] = append(special[rel], scanFile(fset, file)...)
		}
		for file, found := range special {
			why, allowed := g.allow[file]
			switch {
			case len(found) > 0 && !allowed:
				t.Errorf("%s knows a coordinator kind by name (issue 32 §1: go through internal/coord/kinds and a coord hook):\n  %s", file, strings.Join(found, "\n  "))
			case len(found) == 0 && allowed:
				t.Errorf("%s is allowed a special case (%s) it no longer has: remove the allowance", file, why)
			}
		}
		for file := range g.allow {
			if _, ok := special[file]; !ok {
				t.Errorf("allowance for %s, which is not a Go file of %s", file, g.dir)
			}
		}
	}
}

// scanFile lists a file's special cases, with their positions.
func scanFile(fset *token.FileSet, f *ast.File) []string {
	var out []string
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		for _, k := range kindPackages {
			if p == k || strings.HasPrefix(p, k+"/") {
				out = append(out, fset.Position(imp.Pos()).String()+": imports "+p)
			}
		}
	}
	isKind := func(e ast.Expr) bool {
		switch x := e.(type) {
		case *ast.SelectorExpr:
			return kindConsts[x.Sel.Name]
		case *ast.Ident:
			return kindConsts[x.Name]
		}
		return false
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.BinaryExpr:
			if (x.Op == token.EQL || x.Op == token.NEQ) && (isKind(x.X) || isKind(x.Y)) {
				out = append(out, fset.Position(x.Pos()).String()+": compares a lock kind with a kind constant")
			}
		case *ast.CaseClause:
			for _, e := range x.List {
				if isKind(e) {
					out = append(out, fset.Position(e.Pos()).String()+": a case of a kind constant")
				}
			}
		}
		return true
	})
	return out
}
