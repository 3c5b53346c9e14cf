// Package kindscan is a test helper: it finds, in a package's source, the
// places that treat one coordinator kind apart from the others (issue 32
// §1: no kured or fleetlock special case in model; the same rule can hold
// internal/lock). It reads files only; it must not be imported by non-test
// code.
package kindscan

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
)

// Find scans the non-test Go files of dir for what would make code treat
// one coordinator kind apart from the others: a reference to a named
// kind's constant (idents, outside their own declaration), a string
// literal naming a kind (words: "kured", "fleetlock" also catch
// "weave.works/kured-…"), and a switch on a kind (a tag that is a .Kind or
// .LockKind selector). allowed maps "file:declaration" (a function,
// "Type.Method", or a var/const/type's first name) to why it may stay.
func Find(dir string, idents, words []string, allowed map[string]string) ([]string, error) {
	fset := token.NewFileSet()
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	files := map[string]*ast.File{}
	for _, p := range paths {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			return nil, err
		}
		files[p] = f
	}
	pkgs := map[string]struct{ Files map[string]*ast.File }{"": {Files: files}}
	isIdent := map[string]bool{}
	for _, n := range idents {
		isIdent[n] = true
	}
	var out []string
	for _, pkg := range pkgs {
		for path, f := range pkg.Files {
			file := filepath.Base(path)
			for _, d := range f.Decls {
				where := file + ":" + declName(d)
				if _, ok := allowed[where]; ok {
					continue
				}
				ast.Inspect(d, func(n ast.Node) bool {
					switch x := n.(type) {
					case *ast.ValueSpec:
						// A kind constant's own declaration names it; its value may too.
						for _, name := range x.Names {
							if isIdent[name.Name] {
								return false
							}
						}
					case *ast.Ident:
						if isIdent[x.Name] {
							out = append(out, fset.Position(x.Pos()).String()+": refers to "+x.Name)
						}
					case *ast.BasicLit:
						if x.Kind == token.STRING {
							for _, w := range words {
								if strings.Contains(strings.ToLower(x.Value), w) {
									out = append(out, fset.Position(x.Pos()).String()+": string names "+w+": "+x.Value)
								}
							}
						}
					case *ast.SwitchStmt:
						if sel, ok := x.Tag.(*ast.SelectorExpr); ok && (sel.Sel.Name == "Kind" || sel.Sel.Name == "LockKind") {
							out = append(out, fset.Position(x.Pos()).String()+": switches on ."+sel.Sel.Name)
						}
					}
					return true
				})
			}
		}
	}
	return out, nil
}

func declName(d ast.Decl) string {
	switch x := d.(type) {
	case *ast.FuncDecl:
		if x.Recv != nil && len(x.Recv.List) > 0 {
			t := x.Recv.List[0].Type
			if s, ok := t.(*ast.StarExpr); ok {
				t = s.X
			}
			if id, ok := t.(*ast.Ident); ok {
				return id.Name + "." + x.Name.Name
			}
		}
		return x.Name.Name
	case *ast.GenDecl:
		for _, s := range x.Specs {
			switch sp := s.(type) {
			case *ast.ValueSpec:
				return sp.Names[0].Name
			case *ast.TypeSpec:
				return sp.Name.Name
			}
		}
	}
	return "?"
}
