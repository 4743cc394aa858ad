package highlevel

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gocuda/cuda/internal/testsrc"
)

// TestOneBoundary checks that highlevel and its packages are plain Go but
// internal/driver, the one boundary to C: none imports "C", so no cgo name
// shows in go doc, and each call into the driver goes through the shim.
func TestOneBoundary(t *testing.T) {
	boundary := filepath.Join("internal", "driver")
	testsrc.Require(t, "doc.go", boundary)
	n := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && (path == boundary || d.Name() == "testdata"):
			return filepath.SkipDir
		case d.IsDir() || !strings.HasSuffix(path, ".go"):
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		n++
		for _, imp := range f.Imports {
			if imp.Path.Value == `"C"` {
				t.Errorf("%s imports \"C\": only %s may", path, boundary)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("no Go file read")
	}
}
