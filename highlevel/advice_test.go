package highlevel

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoCNamesInDoc checks that the package's exported constants and
// variables are spelled in Go, so that go doc shows no cgo name (as the
// Advice constants once did: C.CU_MEM_ADVISE_SET_READ_MOSTLY).
func TestNoCNamesInDoc(t *testing.T) {
	files, _ := filepath.Glob("*.go")
	n := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		n++
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST && g.Tok != token.VAR {
				continue
			}
			for _, spec := range g.Specs {
				v := spec.(*ast.ValueSpec)
				if !v.Names[0].IsExported() {
					continue
				}
				for _, e := range v.Values {
					ast.Inspect(e, func(y ast.Node) bool {
						if s, ok := y.(*ast.SelectorExpr); ok {
							if id, ok := s.X.(*ast.Ident); ok && id.Name == "C" {
								t.Errorf("%s: %s = ...C.%s..., want a Go value", name, v.Names[0].Name, s.Sel.Name)
							}
						}
						return true
					})
				}
			}
		}
	}
	if n == 0 {
		t.Skip("the package's sources are not here (a test binary run elsewhere)")
	}
}
