package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestShimGolden checks that gen writes highlevel/internal/driver's
// zshim.go, as committed, from its shim.h with each CUDA major's headers.
func TestShimGolden(t *testing.T) {
	cfg := repoPackages(t)["driver"]
	if cfg == nil || !cfg.shim {
		t.Fatalf("driver: %+v, want a hand-written package with handwritten shim", cfg)
	}
	want, err := os.ReadFile(filepath.Join(cfg.dest, shimFile))
	if err != nil {
		t.Fatal(err)
	}
	majors, err := majorsOf(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range majors {
		mcfg, err := cfg.forMajor(m)
		if err != nil {
			t.Fatal(err)
		}
		s, err := readShim(mcfg.dest, mcfg.headerDir)
		if err != nil {
			t.Fatal(err)
		}
		got, err := shimSource(s, mcfg.pkg)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: with %s's headers, gen writes\n%s\nwant the committed\n%s", shimFile, m.suffix, got, want)
		}
	}
}

// TestShimMapping checks the Go that gen writes for the C declarations of
// a shim.h, and that it refuses what it cannot write, naming where.
func TestShimMapping(t *testing.T) {
	for _, tt := range []struct {
		name, decls string
		want        []string // in zshim.go
		err         string   // or the error
	}{
		{"int", "int hl_f(int a);",
			[]string{"func F(a int32) int32 {\n\treturn int32(C.hl_f(C.int(a)))\n}"}, ""},
		{"unsigned", "void hl_u(unsigned a, unsigned int b);",
			[]string{"func U(a uint32, b uint32) {\n\tC.hl_u(C.uint(a), C.uint(b))\n}"}, ""},
		{"scalars", "void hl_s(size_t a, uintptr_t b, uint32_t c, uint64_t d, uint8_t e, long f, unsigned long long g, float h, char i);",
			[]string{"func S(a uintptr, b uintptr, c uint32, d uint64, e uint8, f int64, g uint64, h float32, i byte) {\n" +
				"\tC.hl_s(C.size_t(a), C.uintptr_t(b), C.uint32_t(c), C.uint64_t(d), C.uint8_t(e), C.long(f), C.ulonglong(g), C.float(h), C.char(i))\n}"}, ""},
		{"void pointers", "void *hl_p(void *a, const void *b, void **c);",
			[]string{"func P(a unsafe.Pointer, b unsafe.Pointer, c *unsafe.Pointer) unsafe.Pointer {\n\treturn C.hl_p(a, b, c)\n}"}, ""},
		{"pointers", "int *hl_q(const int *a, size_t *b, char **c);",
			[]string{"func Q(a *int32, b *uintptr, c **byte) *int32 {\n" +
				"\treturn (*int32)(unsafe.Pointer(C.hl_q((*C.int)(unsafe.Pointer(a)), (*C.size_t)(unsafe.Pointer(b)), (**C.char)(unsafe.Pointer(c)))))\n}"}, ""},
		{"string", "const char *hl_name(int i);",
			[]string{"func Name(i int32) string {\n\treturn C.GoString(C.hl_name(C.int(i)))\n}"}, ""},
		{"keyword", "int hl_pointer_device(void *ptr, int *type, int range);",
			[]string{"func PointerDevice(ptr unsafe.Pointer, type_ *int32, range_ int32) int32 {"}, ""},
		{"typedef struct",
			"typedef struct {\n\tint r;\n\tvoid *p;\n\tuint8_t class_;\n} hl_mem_alloc;\nhl_mem_alloc hl_alloc(hl_mem_alloc a, const hl_mem_alloc *b);",
			[]string{
				"// MemAlloc is hl_mem_alloc.\ntype MemAlloc struct {\n\tR     int32\n\tP     unsafe.Pointer\n\tClass uint8\n}",
				"\t_ = [1]struct{}{}[unsafe.Sizeof(MemAlloc{})-unsafe.Sizeof(C.hl_mem_alloc{})]\n\t_ = [1]struct{}{}[unsafe.Sizeof(C.hl_mem_alloc{})-unsafe.Sizeof(MemAlloc{})]",
				"func Alloc(a MemAlloc, b *MemAlloc) MemAlloc {\n" +
					"\tr := C.hl_alloc(*(*C.hl_mem_alloc)(unsafe.Pointer(&a)), (*C.hl_mem_alloc)(unsafe.Pointer(b)))\n" +
					"\treturn *(*MemAlloc)(unsafe.Pointer(&r))\n}",
			}, ""},
		{"tagged struct", "struct hl_next {\n\tvoid *job;\n\tint status, keep;\n};\nstruct hl_next hl_next_job(void);\nvoid hl_done(struct hl_next *n);",
			[]string{
				"// Next is struct hl_next.\ntype Next struct {\n\tJob    unsafe.Pointer\n\tStatus int32\n\tKeep   int32\n}",
				"unsafe.Sizeof(C.struct_hl_next{})",
				"func NextJob() Next {\n\tr := C.hl_next_job()\n\treturn *(*Next)(unsafe.Pointer(&r))\n}",
				"func Done(n *Next) {\n\tC.hl_done((*C.struct_hl_next)(unsafe.Pointer(n)))\n}",
			}, ""},
		{"typedef structs first", "struct hl_b { int x; };\ntypedef struct { int y; } hl_a;",
			[]string{"type A struct {\n\tY int32\n}\n\n// B is struct hl_b.\ntype B struct {"}, ""},
		{"arrays", "enum { HL_ARGS_SIZE = 64 };\ntypedef struct {\n\tuint32_t grid[3], block[3];\n\tuint64_t w[HL_ARGS_SIZE / 8];\n\tint m[2][(HL_ARGS_SIZE - 60) * 2];\n} hl_dims;",
			[]string{"type Dims struct {\n\tGrid  [3]uint32\n\tBlock [3]uint32\n\tW     [ArgsSize / 8]uint64\n\tM     [2][(ArgsSize - 60) * 2]int32\n}"}, ""},
		{"constants", "enum {\n\tHL_IN_CALLBACK = -1, // a comment\n\tHL_MISSING_BASE = -1000,\n};\nenum hl_mode { HL_MODE_A };",
			[]string{"const (\n\tInCallback  = C.HL_IN_CALLBACK\n\tMissingBase = C.HL_MISSING_BASE\n\tModeA       = C.HL_MODE_A\n)"}, ""},
		{"cgo first", "void hl_v(void);",
			[]string{"package p\n\n/*\n#include \"shim.h\"\n*/\nimport \"C\"\n\n// V calls hl_v.\nfunc V() {"}, ""},

		{"unknown parameter type", "int hl_f(int a, double x);", nil, "shim.h:4: hl_f: parameter x: gen has no Go type for C type double"},
		{"unknown pointer type", "int hl_f(const short *x);", nil, "hl_f: parameter x: gen has no Go type for C type short *"},
		{"unknown result type", "double hl_f(void);", nil, "hl_f: result: gen has no Go type for C type double"},
		{"unknown typedef", "typedef int hl_status;", nil, "typedef hl_status: gen binds the typedefs that name the struct they define"},
		{"typedef of the C library", "int hl_f(int32_t x);", nil, "hl_f: parameter x: gen has no Go type for C type int32_t"},
		{"unknown field type", "typedef struct { int a; short s; } hl_s;", nil, "hl_s: field s: gen has no Go type for C type short"},
		{"struct of another header", "#include <stdio.h>\nint hl_f(FILE *f);", nil, "hl_f: parameter f: gen has no Go type for C type FILE *"},
		{"function pointer", "int hl_f(void (*cb)(void));", nil, "hl_f: parameter cb: gen has no Go type for C type pointer to function(void)"},
		{"array length", "typedef struct { int a[sizeof(int)]; } hl_s;", nil, "hl_s: field a: array length sizeof(int): gen writes in Go"},
		{"unnamed parameter", "int hl_f(int);", nil, "hl_f: parameter 1 has no name"},
		{"no prefix", "int f(int a);", nil, "f: not named hl_..."},
		{"enumerator without prefix", "enum { A = 1 };", nil, "enumerator A: not named HL_..."},
		{"variable", "extern int hl_x;", nil, "hl_x: gen binds functions, structs and enumerators, not variables"},
		{"union", "union hl_u { int a; float b; };", nil, "union hl_u: gen binds structs, not unions"},
		{"bit field", "typedef struct { int a : 3; } hl_s;", nil, "hl_s: field 0: gen binds named fields of fixed size"},
		{"definition", "static inline int hl_f(int a) { return a; }", nil, "hl_f: gen binds declarations, not definitions"},
		{"function pointer field", "typedef struct { int (*fp)(void); } hl_s;", nil, "hl_s: field fp: gen has no Go type for C type pointer to function(void) returning int"},
		{"one Go name for two", "int hl_a_b(void);\nint hl_aB(void);", nil, "hl_a_b and hl_aB would both be Go's AB"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			shimCase(t, t.TempDir(), tt.decls, tt.want, tt.err)
		})
	}
}

// TestShimNames generates zshim.go from shim.h files whose names collide
// with the names of the Go gen writes or with one another, and compiles
// each with go vet: gen renames a parameter that collides with a name of
// the function's body as the bindings do (r is r_, a struct's Go name gets
// an underscore), and refuses, naming shim.h's line, what it cannot name
// apart. (It wrote zshim.go files that did not compile, and refused hl_
// with no line.)
func TestShimNames(t *testing.T) {
	mod := t.TempDir()
	if err := os.WriteFile(filepath.Join(mod, "go.mod"), []byte("module example.com/shim\n\ngo 1.26\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	compiled := 0
	for i, tt := range []struct {
		name, decls string
		want        []string // in zshim.go
		err         string   // or the error, after shim.h:
	}{
		{"r and a struct result", "typedef struct { int a; } hl_res;\nhl_res hl_get(int r, const hl_res *p);",
			[]string{"func Get(r_ int32, p *Res) Res {\n\tr := C.hl_get(C.int(r_), (*C.hl_res)(unsafe.Pointer(p)))"}, ""},
		{"C and unsafe", "void *hl_p(void *unsafe, int C);",
			[]string{"func P(unsafe_ unsafe.Pointer, C_ int32) unsafe.Pointer {"}, ""},
		{"a struct's name", "typedef struct { int a; } hl_dims;\nhl_dims *hl_d(int Dims, hl_dims Res);",
			[]string{"func D(Dims_ int32, Res Dims) *Dims {"}, ""},
		{"Go's types", "int hl_f(int int32, unsigned int uint32, float float32, size_t uintptr, const char *string);",
			[]string{"func F(int32_ int32, uint32_ uint32, float32_ float32, uintptr_ uintptr, string *byte) int32 {"}, ""},
		{"Go's other names", "int hl_f(int max, int len, int nil, int error);",
			[]string{"func F(max int32, len int32, nil int32, error int32) int32 {"}, ""},
		{"blank", "int hl_f(int _, int b);",
			[]string{"func F(__ int32, b int32) int32 {\n\treturn int32(C.hl_f(C.int(__), C.int(b)))"}, ""},
		{"_ and __", "int hl_f(int _, int __);", nil, "4: hl_f: parameters _ and __ would both be Go's __"},
		{"keywords", "int hl_f(int type, int func, int go, int chan, int map, int var);",
			[]string{"func F(type_ int32, func_ int32, go_ int32, chan_ int32, map_ int32, var_ int32) int32 {"}, ""},
		{"type and type_", "int hl_f(int type, int type_);", nil, "4: hl_f: parameters type and type_ would both be Go's type_"},
		{"r and r_", "typedef struct { int a; } hl_res;\nhl_res hl_g(int r_, int r);", nil, "5: hl_g: parameters r_ and r would both be Go's r_"},
		{"fields r and R", "typedef struct {\n\tint r;\n\tint R;\n} hl_s;", nil, "4: hl_s: fields r and R would both be Go's R"},
		{"fields a_b and aB", "struct hl_t { int a_b; int aB; };", nil, "4: struct hl_t: fields a_b and aB would both be Go's AB"},
		{"field _", "typedef struct { int _; } hl_s;", nil, "4: hl_s: field _: nothing in its name is Go's"},
		{"function hl_", "int hl_(int a);", nil, "4: hl_: nothing after hl_ names it in Go"},
		{"function hl__", "int hl__(int a);", nil, "4: hl__: nothing after hl_ names it in Go"},
		{"struct hl_", "typedef struct { int a; } hl_;", nil, "4: hl_: nothing after hl_ names it in Go"},
		{"enumerator HL_", "enum { HL_ = 1 };", nil, "4: HL_: nothing after HL_ names it in Go"},
		{"function hl_c", "int hl_c(void);", nil, "4: hl_c: its Go name, C, is cgo's"},
		{"enumerator HL_C", "enum { HL_C = 1 };", nil, "4: HL_C: its Go name, C, is cgo's"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(mod, fmt.Sprintf("case%d", i))
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			wantErr := ""
			if tt.want == nil {
				wantErr = shimHeader + ":" + tt.err
			}
			got := shimCase(t, dir, tt.decls, tt.want, wantErr)
			if got == nil {
				return
			}
			if err := os.WriteFile(filepath.Join(dir, shimFile), got, 0o644); err != nil {
				t.Fatal(err)
			}
			compiled++
			t.Logf("%s, compiled below: %s", tt.decls, filepath.Join(dir, shimFile))
		})
	}
	if compiled == 0 {
		return
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to compile the zshim.go files with:", err)
	}
	cmd := exec.Command(goTool, "vet", "./...")
	cmd.Dir = mod
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=", "GOTOOLCHAIN=local", "CGO_ENABLED=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("go vet of the %d zshim.go files: %v\n%s", compiled, err, out)
	}
}

// shimCase writes a shim.h of decls in dir and generates from it: where
// wantErr is set, readShim must fail with an error that contains it (the
// result is nil); otherwise the zshim.go it returns must contain each of
// want.
func shimCase(t *testing.T, dir, decls string, want []string, wantErr string) []byte {
	t.Helper()
	src := "#include <stddef.h>\n#include <stdint.h>\n\n" + decls + "\n"
	if err := os.WriteFile(filepath.Join(dir, shimHeader), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := readShim(dir, dir)
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("readShim = %v, want an error containing %q", err, wantErr)
		}
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	got, err := shimSource(s, "p")
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range want {
		if !strings.Contains(string(got), w) {
			t.Errorf("%s has no\n%s\nin\n%s", shimFile, w, got)
		}
	}
	return got
}
