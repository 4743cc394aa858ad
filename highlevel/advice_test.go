package highlevel

import (
	"go/ast"
	"go/parser"
	"go/token"
	"testing"
)

// TestAdviceConstantsHaveNoCNames checks that the Advice constants are
// spelled in Go, so that go doc shows no cgo name (C.CU_MEM_ADVISE_...).
func TestAdviceConstantsHaveNoCNames(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "managed.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	ast.Inspect(f, func(x ast.Node) bool {
		v, ok := x.(*ast.ValueSpec)
		if !ok || v.Type == nil || v.Type.(*ast.Ident).Name != "Advice" {
			return true
		}
		n++
		for _, e := range v.Values {
			ast.Inspect(e, func(y ast.Node) bool {
				if s, ok := y.(*ast.SelectorExpr); ok {
					if id, ok := s.X.(*ast.Ident); ok && id.Name == "C" {
						t.Errorf("%s = C.%s, want a Go constant", v.Names[0].Name, s.Sel.Name)
					}
				}
				return true
			})
		}
		return true
	})
	if n != 6 {
		t.Errorf("found %d Advice constants, want 6", n)
	}
}
