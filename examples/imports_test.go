// Package examples holds no code: its test checks the example programs.
package examples

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"testing"
)

// TestNoUnsafe holds the examples to what the package promises: everyday
// CUDA programs need no unsafe.
func TestNoUnsafe(t *testing.T) {
	files, err := filepath.Glob("*/*.go")
	if err != nil {
		t.Fatal(err)
	}
	var programs int
	for _, name := range files {
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		if f.Name.Name == "main" {
			programs++
		}
		for _, imp := range f.Imports {
			if path, _ := strconv.Unquote(imp.Path.Value); path == "unsafe" {
				t.Errorf("%s imports unsafe", name)
			}
		}
	}
	for _, want := range []string{"saxpy", "sgemm"} {
		if m, _ := filepath.Glob(filepath.Join(want, "*.go")); len(m) == 0 {
			t.Errorf("no example %s", want)
		}
	}
	if programs == 0 {
		t.Error("no example programs found")
	}
}
