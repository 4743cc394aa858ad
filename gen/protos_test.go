package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// protoHeader declares functions whose prototypes exercise each part of the
// C spelling: scalars, typedefs, enums, structs by value, const pointees,
// const pointers, array parameters, pointers to arrays and results.
const protoHeader = `#include <stddef.h>
typedef enum cudaError { cudaSuccess = 0 } cudaError_t;
typedef struct CUstream_st *cudaStream_t;
enum cudaKind { cudaKindA = 1 };
struct cudaExtent { size_t width; };
extern cudaError_t cudaMalloc(void **devPtr, size_t size);
extern cudaError_t cudaLaunch(cudaStream_t s, const char *const *names, const float *const batch[], enum cudaKind kind);
extern struct cudaExtent cudaMakeExtent(struct cudaExtent e, unsigned int scale);
extern const char *cudaName(int n);
typedef unsigned int cudaVectors[4];
extern cudaError_t cudaVectorsOf(cudaVectors *v[]);
`

// TestPrototypes compiles, with the C compiler cgo uses, the assertions
// prototypes emits for protoHeader: they hold for the model as parsed, and
// each edit of the model that makes a prototype wrong fails them.
func TestPrototypes(t *testing.T) {
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "gcc"
	}
	if _, err := exec.LookPath(cc); err != nil {
		t.Skipf("no C compiler: %v", err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "input.h"), []byte(protoHeader), 0o644); err != nil {
		t.Fatal(err)
	}
	// check parses the header, edits the model and compiles the assertions.
	check := func(edit func(fn map[string]*Func)) (string, error) {
		pkg, err := parse(config{headerDir: dir, headers: []string{"input.h"}, pkg: "proto", prefixes: []string{"cuda"}, errType: "cudaError_t"}, new(cache))
		if err != nil {
			t.Fatal(err)
		}
		fn := map[string]*Func{}
		for _, f := range pkg.Funcs {
			fn[f.CName] = f
		}
		edit(fn)
		src := "#include \"input.h\"\n" + newEmitter(pkg).prototypes()
		if err := os.WriteFile(filepath.Join(dir, "check.c"), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(cc, "-fsyntax-only", "-std=gnu11", "-I", dir, filepath.Join(dir, "check.c")).CombinedOutput()
		return string(out), err
	}
	if out, err := check(func(map[string]*Func) {}); err != nil {
		t.Fatalf("the assertions fail for the model as parsed: %v\n%s", err, out)
	}
	for _, tt := range []struct {
		name, fn string
		edit     func(f *Func)
	}{
		{"size_t as int", "cudaMalloc", func(f *Func) { f.Params[1].Type = &Type{Kind: Scalar, Go: "int32", C: "int"} }},
		{"void ** as void *", "cudaMalloc", func(f *Func) { f.Params[0].Type = &Type{Kind: Pointer} }},
		{"a parameter less", "cudaMalloc", func(f *Func) { f.Params = f.Params[:1] }},
		{"const pointer as pointer", "cudaLaunch", func(f *Func) { f.Params[1].Type.Const = false }},
		{"const pointee as mutable", "cudaLaunch", func(f *Func) { f.Params[2].Type.Elem.Const = false }},
		{"enum as int", "cudaLaunch", func(f *Func) { f.Params[3].Type = &Type{Kind: Scalar, Go: "int32", C: "int"} }},
		{"handle as void *", "cudaLaunch", func(f *Func) { f.Params[0].Type = &Type{Kind: Pointer} }},
		{"struct result as status", "cudaMakeExtent", func(f *Func) { f.Result = &Type{Kind: Named, Go: "Error", C: "cudaError_t"} }},
		{"unsigned as int", "cudaMakeExtent", func(f *Func) { f.Params[1].Type = &Type{Kind: Scalar, Go: "int32", C: "int"} }},
		{"string result as void *", "cudaName", func(f *Func) { f.Result = &Type{Kind: Pointer} }},
		{"array length", "cudaVectorsOf", func(f *Func) { f.Params[0].Type.Elem.Elem.Len = 5 }},
	} {
		out, err := check(func(fn map[string]*Func) { tt.edit(fn[tt.fn]) })
		if err == nil {
			t.Errorf("%s: %s's assertion holds for a wrong model", tt.name, tt.fn)
		} else if !strings.Contains(out, tt.fn+": the model's prototype differs") {
			t.Errorf("%s: the compiler failed otherwise:\n%s", tt.name, out)
		}
	}
}
