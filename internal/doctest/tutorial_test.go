// Package doctest checks the Go programs of the repository's documentation:
// each compiles against the module as it is.
package doctest

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gocuda/cuda/internal/testsrc"
)

// docs are the Markdown files whose ```go blocks are whole programs that
// compile, from this package's directory (path) and as messages name them
// (name); steps marks the tutorial, whose numbered steps have one each.
var docs = []struct {
	path, name string
	steps      bool
}{
	{"../../docs/tutorial.md", "docs/tutorial.md", true},
	{"../../README.md", "README.md", false},
}

// A block is one ```go block of a Markdown file.
type block struct {
	line    int    // the line of its first line of code, from 1
	section string // the heading of the section it is in
	code    []byte
}

// goBlocks returns the ```go blocks of the Markdown in src, the file
// docName.
func goBlocks(t *testing.T, docName string, src []byte) []block {
	t.Helper()
	var blocks []block
	var cur *block
	section := ""
	sc := bufio.NewScanner(bytes.NewReader(src))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case cur == nil && strings.TrimSpace(line) == "```go":
			cur = &block{line: n + 1, section: section}
		case cur == nil && strings.HasPrefix(line, "## "):
			section = strings.TrimPrefix(line, "## ")
		case cur != nil && strings.TrimSpace(line) == "```":
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			cur.code = append(append(cur.code, line...), '\n')
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if cur != nil {
		t.Fatalf("%s:%d: a ```go block that does not end", docName, cur.line-1)
	}
	return blocks
}

// step is the heading of a numbered step of the tutorial: "3. A kernel".
var step = regexp.MustCompile(`^[0-9]+\. `)

// TestTutorial checks every ```go block of docs/tutorial.md and of
// README.md's quick start: a whole program (package main, func main),
// gofmt'd, one in each numbered step of the tutorial, that go vet (which type-checks and compiles it) passes against the
// module as it is. Each is written to a directory of its own under a
// temporary one of this package's whose name begins with "_", which
// patterns such as ./... leave out, and vetted there by its path, so that
// its imports of the module resolve to the module's own packages with no
// go.mod of its own, offline. Errors name the line of the Markdown file.
func TestTutorial(t *testing.T) {
	for _, d := range docs {
		testsrc.Require(t, d.path)
	}
	if testing.Short() {
		t.Skip("compiles every program of the tutorial")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to compile the tutorial's programs with:", err)
	}
	for _, d := range docs {
		t.Run(d.name, func(t *testing.T) { checkDoc(t, goTool, d.path, d.name, d.steps) })
	}
}

// checkDoc checks the ```go blocks of the Markdown file at path, named
// docName, as TestTutorial says.
func checkDoc(t *testing.T, goTool, path, docName string, steps bool) {
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	blocks := goBlocks(t, docName, src)
	if len(blocks) == 0 {
		t.Fatalf("%s: no ```go block", docName)
	}

	perStep := map[string]int{}
	for _, b := range blocks {
		if step.MatchString(b.section) {
			perStep[b.section]++
		}
	}
	for _, line := range strings.Split(string(src), "\n") {
		if s, ok := strings.CutPrefix(line, "## "); ok && steps && step.MatchString(s) && perStep[s] != 1 {
			t.Errorf("%s: step %q has %d ```go blocks, want one program", docName, s, perStep[s])
		}
	}

	dir, err := os.MkdirTemp(".", "_doc")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	var pkgs []string
	for _, b := range blocks {
		where := fmt.Sprintf("%s:%d (%s)", docName, b.line, b.section)
		name := fmt.Sprintf("line%d/main.go", b.line) // as the go command names it
		f, err := parser.ParseFile(token.NewFileSet(), name, b.code, parser.SkipObjectResolution)
		if err != nil {
			t.Errorf("%s: %s", where, relines(docName, err.Error()))
			continue
		}
		if f.Name.Name != "main" || !hasMain(f.Decls) {
			t.Errorf("%s: not a whole program: want package main with func main", where)
		}
		if formatted, err := format.Source(b.code); err == nil && !bytes.Equal(formatted, b.code) {
			t.Errorf("%s: not gofmt'd", where)
		}
		pkg := filepath.Join(dir, "line"+strconv.Itoa(b.line))
		if err := os.Mkdir(pkg, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(pkg, "main.go"), b.code, 0o644); err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, "./"+filepath.ToSlash(pkg))
	}
	if len(pkgs) == 0 {
		return
	}

	cmd := exec.Command(goTool, append([]string{"vet"}, pkgs...)...)
	// The platform and C compiler the go command picks for this machine,
	// not those of a cross-built test's run (make test-arm64); the module
	// alone, without go.work's others; and no GOFLAGS of the run's, such
	// as -mod=mod, which may need the network.
	for _, v := range os.Environ() {
		switch name, _, _ := strings.Cut(v, "="); name {
		case "GOOS", "GOARCH", "CC", "CGO_ENABLED", "GOFLAGS", "GOWORK":
		default:
			cmd.Env = append(cmd.Env, v)
		}
	}
	cmd.Env = append(cmd.Env, "GOWORK=off", "GOTOOLCHAIN=local")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Errorf("go vet of the programs of %s: %v\n%s", docName, err, relines(docName, string(out)))
	}
}

// hasMain reports whether decls declare func main.
func hasMain(decls []ast.Decl) bool {
	for _, d := range decls {
		if f, ok := d.(*ast.FuncDecl); ok && f.Recv == nil && f.Name.Name == "main" {
			return true
		}
	}
	return false
}

var (
	// position is a position in a block's file, as the go command and
	// go/parser write it: [dir/]line<N>/main.go:<line>.
	position = regexp.MustCompile(`(?:[^\s:]*/)?line([0-9]+)/main\.go:([0-9]+)`)
	// pkgPath is the import path or directory of a block's package, in
	// brackets where the go command names it a second time.
	pkgPath = regexp.MustCompile(`\[?[^\s:\[]*_doc[0-9]*/line([0-9]+)\]?`)
)

// relines rewrites the positions in the go command's output s as lines of
// the Markdown file docName: a block's line<N>/main.go:<L> is the file's line
// N+L-1, and its package the block at line N (the second of two lines
// that say the same is left out).
func relines(docName, s string) string {
	s = position.ReplaceAllStringFunc(s, func(m string) string {
		sm := position.FindStringSubmatch(m)
		first, _ := strconv.Atoi(sm[1])
		l, _ := strconv.Atoi(sm[2])
		return fmt.Sprintf("%s:%d", docName, first+l-1)
	})
	s = pkgPath.ReplaceAllString(s, "the block at "+docName+":$1")
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		if len(lines) == 0 || l != lines[len(lines)-1] {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "\n")
}
