package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// TestParseLimits runs gen on headers that include themselves without a
// guard, or nest brackets or prefix operators deeper than it parses: it
// stops with an error naming where, and parses what is within its limits.
// (A header that included itself grew gen's memory without bound; 100,000
// nested parentheses overflowed its stack.) gen runs in a child process,
// under limits (runGen).
func TestParseLimits(t *testing.T) {
	chain := map[string]string{"input.h": "#include \"h0.h\"\n"}
	for i := range 150 {
		chain[fmt.Sprintf("h%d.h", i)] = fmt.Sprintf("#include \"h%d.h\"\nint v%d;\n", i+1, i)
	}
	chain["h150.h"] = "int last;\n"
	nest := func(open, inner, close string, n int) string {
		return strings.Repeat(open, n) + inner + strings.Repeat(close, n)
	}
	for _, tt := range []struct {
		name    string
		headers map[string]string
		// gen's error has one of these, @ standing for the package's
		// directory; with none, gen succeeds.
		err []string
	}{
		{"self include", map[string]string{"input.h": "int a;\n#include \"input.h\"\nint b;\n"},
			[]string{"@input.h:2: #include nested more than 200 levels deep (GCC's limit): the headers include one another in a cycle, @input.h:2 -> @input.h:2"}},
		{"include cycle", map[string]string{
			"input.h": "#include \"a.h\"\n",
			"a.h":     "int a;\n#include \"b.h\"\n",
			"b.h":     "#include \"a.h\"\nint b;\n",
		}, []string{
			"@a.h:2: #include nested more than 200 levels deep (GCC's limit): the headers include one another in a cycle, @a.h:2 -> @b.h:1 -> @a.h:2",
			"@b.h:1: #include nested more than 200 levels deep (GCC's limit): the headers include one another in a cycle, @b.h:1 -> @a.h:2 -> @b.h:1",
		}},
		{"150 headers deep", chain, nil},
		{"guarded self include", map[string]string{"input.h": "#ifndef INPUT_H\n#define INPUT_H\n#include \"input.h\"\nint a;\n#endif\n"}, nil},
		{"100,000 parentheses", map[string]string{"input.h": "int a;\nint x = " + nest("(", "1", ")", 100000) + ";\n"},
			[]string{"@input.h:2: brackets and prefix operators nested more than 256 deep"}},
		{"100,000 parentheses in a macro", map[string]string{"input.h": "int a;\n\n#define X " + nest("(", "1", ")", 100000) + "\n"},
			[]string{"@input.h:3: brackets and prefix operators nested more than 256 deep"}},
		{"100,000 parentheses in #if", map[string]string{"input.h": "#if " + nest("(", "1", ")", 100000) + "\nint a;\n#endif\n"},
			[]string{"@input.h:1: brackets and prefix operators nested more than 256 deep"}},
		{"100,000 braces", map[string]string{"input.h": "struct s { int a; };\nstruct s x =\n" + nest("{", "1", "}", 100000) + ";\n"},
			[]string{"@input.h:3: brackets and prefix operators nested more than 256 deep"}},
		{"1,000,000 minus signs", map[string]string{"input.h": "int x = " + strings.Repeat("- ", 1000000) + "1;\n"},
			[]string{"@input.h:1: brackets and prefix operators nested more than 256 deep"}},
		{"1,000,000 sizeofs", map[string]string{"input.h": "int x =\n" + strings.Repeat("sizeof ", 1000000) + "1;\n"},
			[]string{"@input.h:2: brackets and prefix operators nested more than 256 deep"}},
		{"included", map[string]string{"input.h": "int a;\n#include \"deep.h\"\n", "deep.h": "\n\nint x = " + nest("[", "1", "]", 1000) + ";\n"},
			[]string{"@deep.h:3: brackets and prefix operators nested more than 256 deep"}},
		{"256 parentheses", map[string]string{"input.h": "int x = " + nest("(", "1", ")", 256) + ";\n#define Y " + nest("(", "2", ")", 256) + "\n"}, nil},
		{"not C", map[string]string{"input.h": "#pragma " + strings.Repeat("*", 1000) + "\n#if 0\n#warning " + strings.Repeat("(", 1000) + "\n#endif\nint a;\n"}, nil},
		{"in comments and strings", map[string]string{"input.h": "/* " + strings.Repeat("(", 1000) + " */\n// " + strings.Repeat("{", 1000) +
			"\nstatic const char s[] = \"" + strings.Repeat("[", 1000) + "\";\nstatic const char c = '(';\n"}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			root := genModule(t, tt.headers)
			r := runGen(t, filepath.Join(root, "pkg"), "", nil, "-config", "packages.txt", "-pkg", "p", "-out", t.TempDir())
			if tt.err == nil {
				if r.err != nil {
					t.Errorf("gen: %v\n%s", r.err, r.stderr)
				}
				return
			}
			if r.err == nil {
				t.Fatalf("gen succeeded:\n%s", r.stderr)
			}
			var want []string
			for _, e := range tt.err {
				w := strings.ReplaceAll(e, "@", filepath.Join(root, "pkg")+string(filepath.Separator))
				if strings.Contains(r.stderr, w) {
					return
				}
				want = append(want, w)
			}
			t.Errorf("gen: %v; its error does not say %q:\n%.2000s", r.err, want, r.stderr)
		})
	}
}

// TestCutHeader runs gen on headers cut short inside a declaration: the
// first line of its error names the file and line where the input ends.
// (It was "-: unexpected EOF", which names no position.)
func TestCutHeader(t *testing.T) {
	for _, tt := range []struct {
		name    string
		headers map[string]string
		want    string // the first line of gen's error has it, after the package's directory
	}{
		{"in a parameter list", map[string]string{"input.h": "int a;\nint f(int x,\n"},
			"input.h:2: unexpected end of input: the ( of line 2 is not closed"},
		{"in a struct", map[string]string{"input.h": "int a;\nstruct s {\n\tint a;\n\tint b;\n"},
			"input.h:4: unexpected end of input: the { of line 2 is not closed"},
		{"without a newline", map[string]string{"input.h": "int a;\nint f(int x,\n\tint y"},
			"input.h:3: unexpected end of input: the ( of line 2 is not closed"},
		{"in an included header", map[string]string{
			"input.h": "int a;\n#include \"cut.h\"\n",
			"cut.h":   "int b;\n\nint f(int x,\n\tint y,\n",
		}, "cut.h:4: unexpected end of input: the ( of line 3 is not closed"},
		{"before a semicolon", map[string]string{"input.h": "int a;\n#include \"cut.h\"\n", "cut.h": "int b\n"},
			"input.h:2: unexpected end of input inside a declaration"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			root := genModule(t, tt.headers)
			dir := filepath.Join(root, "pkg")
			r := runGen(t, dir, "", nil, "-config", "packages.txt", "-pkg", "p", "-out", t.TempDir())
			if r.err == nil {
				t.Fatalf("gen succeeded:\n%s", r.stderr)
			}
			first, _, _ := strings.Cut(r.stderr, "\n")
			if want := filepath.Join(dir, tt.want); !strings.Contains(first, want) {
				t.Errorf("gen: %v; the first line of its error does not say %q:\n%s", r.err, want, r.stderr)
			}
		})
	}
}
