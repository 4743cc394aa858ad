// Package examples holds no code: its test checks the example programs.
package examples

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Issue 47: every example is short enough to read through (maxLines, as
// wc -l counts them), and the programs a newcomer writes first fit on a
// screen (maxNewcomerLines).
const (
	maxLines         = 80
	maxNewcomerLines = 59
)

// newcomer are the programs of issue 47 that a newcomer writes first, and
// the longest each main.go may be.
var newcomer = map[string]int{"saxpy": maxNewcomerLines, "pipeline": maxNewcomerLines, "allreduce": maxNewcomerLines}

// forbidden are the imports no example needs: everyday CUDA programs speak
// highlevel's types, not raw pointers or the generated bindings.
var forbidden = []string{
	"unsafe",
	"github.com/gocuda/cuda/cudadrv",
	"github.com/gocuda/cuda/cudart",
}

// byteAPIs are highlevel's calls that take byte counts: typed data goes
// through Array[T] (AllocArray, ArrayFrom, CopyFromHost, ...) instead.
var byteAPIs = map[string]bool{
	"Alloc": true, "AllocAsync": true, "AllocPinned": true, "AllocPinnedUnpooled": true,
	"CopyFromDevice": true, "CopyFromDeviceAsync": true, "Memset": true, "MemsetAsync": true,
	"CopyFromHostPointer": true, "CopyFromHostPointerAsync": true,
	"CopyToHostPointer": true, "CopyToHostPointerAsync": true,
}

// TestExamples holds the example programs to issue 47's rules: their
// length, no byte counts in the newcomer's programs, and a doc comment that
// says how to run each.
func TestExamples(t *testing.T) {
	mains, err := filepath.Glob("*/main.go")
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, name := range mains {
		dir := filepath.Dir(name)
		have[dir] = true
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		limit := maxLines
		if l, ok := newcomer[dir]; ok {
			limit = l
		}
		if n := bytes.Count(src, []byte("\n")); n > limit {
			t.Errorf("%s has %d lines, want at most %d", name, n, limit)
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, src, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		if f.Name.Name != "main" {
			t.Errorf("%s is package %s, want main", name, f.Name.Name)
		}
		if run := "go run ./examples/" + dir; !strings.Contains(f.Doc.Text(), run) {
			t.Errorf("%s: the doc comment does not say %q", name, run)
		}
		if _, ok := newcomer[dir]; !ok {
			continue
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok && byteAPIs[sel.Sel.Name] {
				t.Errorf("%s: %s calls %s, which counts bytes; use Array[T]", name, dir, sel.Sel.Name)
			}
			return true
		})
	}
	for dir := range newcomer {
		if !have[dir] {
			t.Errorf("no example %s", dir)
		}
	}
	for _, dir := range []string{"sgemm", "bandwidth", "devicequery"} {
		if !have[dir] {
			t.Errorf("no example %s", dir)
		}
	}
}

// TestImports keeps unsafe and the generated bindings out of every file of
// every example, tests included.
func TestImports(t *testing.T) {
	files, err := filepath.Glob("*/*.go")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no example files found")
	}
	for _, name := range files {
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			for _, bad := range forbidden {
				if path == bad || strings.HasPrefix(path, bad+"/") {
					t.Errorf("%s imports %s", name, path)
				}
			}
		}
	}
}
