package highlevel

import (
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// apiPackages are the directories of the packages whose exported API
// speaks highlevel's language.
var apiPackages = []string{".", "linalg", "collective"}

// rawTypesAllowed are the exported functions and methods that may name a
// type of the raw bindings (cudadrv, cudart): those that hand out or take
// in a raw handle.
var rawTypesAllowed = map[string]bool{
	"ExternalStream": true,
}

// TestAPISignatures checks every exported function and method of
// highlevel, linalg and collective, and every exported field of their
// exported types: a *Stream comes first (after a context.Context); no
// type of an internal package appears; and no type of cudadrv or cudart
// does, except on Handle methods and rawTypesAllowed.
func TestAPISignatures(t *testing.T) {
	for _, dir := range apiPackages {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		fset := token.NewFileSet()
		for _, name := range files {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			src, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			checkAPIFile(t, fset, f)
		}
	}
}

// checkAPIFile checks the exported declarations of f.
func checkAPIFile(t *testing.T, fset *token.FileSet, f *ast.File) {
	internal, raw := map[string]bool{}, map[string]bool{}
	for _, im := range f.Imports {
		path, _ := strconv.Unquote(im.Path.Value)
		name := filepath.Base(path)
		if im.Name != nil {
			name = im.Name.Name
		}
		switch {
		case strings.Contains(path, "/internal/"):
			internal[name] = true
		case strings.HasSuffix(path, "/cudadrv"), strings.HasSuffix(path, "/cudart"):
			raw[name] = true
		}
	}
	// check reports the selectors of internal and raw packages in e.
	check := func(where string, e ast.Expr, rawOK bool) {
		ast.Inspect(e, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); ok {
				switch {
				case internal[x.Name]:
					t.Errorf("%s: %s names %s, of an internal package", fset.Position(e.Pos()), where, types.ExprString(sel))
				case raw[x.Name] && !rawOK:
					t.Errorf("%s: %s names %s, of a raw binding", fset.Position(e.Pos()), where, types.ExprString(sel))
				}
			}
			return true
		})
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			name := d.Name.Name
			if d.Recv != nil {
				recv := types.ExprString(d.Recv.List[0].Type)
				recv = strings.TrimLeft(recv, "*")
				recv, _, _ = strings.Cut(recv, "[")
				if !ast.IsExported(recv) {
					continue
				}
				name = recv + "." + name
			}
			if !d.Name.IsExported() {
				continue
			}
			rawOK := d.Name.Name == "Handle" || rawTypesAllowed[name]
			var params []string
			for _, fld := range d.Type.Params.List {
				check(name, fld.Type, rawOK)
				for range max(len(fld.Names), 1) {
					params = append(params, types.ExprString(fld.Type))
				}
			}
			if d.Type.Results != nil {
				for _, fld := range d.Type.Results.List {
					check(name, fld.Type, rawOK)
				}
			}
			first := 0
			if len(params) > 0 && params[0] == "context.Context" {
				first = 1
			}
			for i, p := range params {
				if (p == "*Stream" || p == "*highlevel.Stream") && i != first {
					t.Errorf("%s: %s takes its *Stream as parameter %d, not first (after a context)", fset.Position(d.Pos()), name, i+1)
				}
			}
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				ts, ok := spec.(*ast.TypeSpec)
				if !ok || !ts.Name.IsExported() {
					continue
				}
				st, ok := ts.Type.(*ast.StructType)
				if !ok {
					check(ts.Name.Name, ts.Type, false)
					continue
				}
				for _, fld := range st.Fields.List {
					for _, n := range fld.Names {
						if n.IsExported() {
							check(ts.Name.Name+"."+n.Name, fld.Type, false)
						}
					}
				}
			}
		}
	}
}
