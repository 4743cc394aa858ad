package nvrtc

import (
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"github.com/gocuda/cuda/internal/ccheck"
)

func TestErrorIs(t *testing.T) {
	err := fmt.Errorf("compiling saxpy.cu: %w", ERROR_COMPILATION)
	if !errors.Is(err, ERROR_COMPILATION) || errors.Is(err, ERROR_INVALID_OPTION) {
		t.Errorf("errors.Is does not tell %v apart", err)
	}
	if got, want := ERROR_COMPILATION.Error(), "NVRTC_ERROR_COMPILATION"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

// TestNoLibrary checks what a machine without CUDA sees: every call returns
// an error naming where libnvrtc was looked for.
func TestNoLibrary(t *testing.T) {
	ccheck.NoLibrary(t, Load, LibraryPath, testLibrary, "Version", func() error {
		var major, minor int32
		return Version(&major, &minor)
	})
}

// TestCoverage checks, independently of the generator's C parser, that every
// C function of nvrtc.h is bound: the header's declarations (testFuncs)
// less nvrtcGetTypeName, a C++ helper.
func TestCoverage(t *testing.T) {
	text := ccheck.Header(t, filepath.Join(testHeaders, "nvrtc.h"))
	ccheck.Coverage(t, goSymbols, text, regexp.MustCompile(`(?m)^(?:nvrtcResult|const char \*)\s*(nvrtc\w+)\(`), testFuncs,
		map[string]string{"nvrtcGetTypeName": "a C++ template over std::type_info, not a C function"})
}

const saxpy = `
extern "C" __global__ void saxpy(float a, const float *x, float *y, int n) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) y[i] = a * x[i] + y[i];
}
template <typename T> __global__ void fill(T *p, T v) { p[threadIdx.x] = v; }
`

// compile compiles src with options, returning the program (destroyed at
// cleanup), the compiler's log and its status.
func compile(t *testing.T, src string, names []string, options ...string) (Program, string, error) {
	t.Helper()
	var prog Program
	if err := CreateProgram(&prog, src, "test.cu", 0, nil, nil); err != nil {
		t.Fatalf("CreateProgram: %v", err)
	}
	t.Cleanup(func() { DestroyProgram(&prog) })
	for _, n := range names {
		if err := AddNameExpression(prog, n); err != nil {
			t.Fatalf("AddNameExpression(%q): %v", n, err)
		}
	}
	opts := cStrings(t, options)
	var first **byte
	if len(opts) > 0 {
		first = &opts[0]
	}
	cerr := CompileProgram(prog, int32(len(opts)), first)
	var n uint64
	if err := GetProgramLogSize(prog, &n); err != nil {
		t.Fatalf("GetProgramLogSize: %v", err)
	}
	log := make([]byte, n+1)
	if err := GetProgramLog(prog, &log[0]); err != nil {
		t.Fatalf("GetProgramLog: %v", err)
	}
	return prog, strings.TrimRight(string(log), "\x00"), cerr
}

// TestGPUCompile compiles a kernel to PTX and CUBIN, lowers a template's
// name, and checks that a syntax error is ERROR_COMPILATION with the line in
// the log. NVRTC needs no GPU, only the library.
func TestGPUCompile(t *testing.T) {
	if err := Load(); err != nil {
		t.Skipf("no NVRTC: %v", err)
	}
	var major, minor int32
	if err := Version(&major, &minor); err != nil || major < 13 {
		t.Fatalf("Version = %d.%d, %v; want 13.x", major, minor, err)
	}
	var nArchs int32
	if err := GetNumSupportedArchs(&nArchs); err != nil || nArchs == 0 {
		t.Fatalf("GetNumSupportedArchs = %d, %v", nArchs, err)
	}
	archs := make([]int32, nArchs)
	if err := GetSupportedArchs(&archs[0]); err != nil {
		t.Fatal(err)
	}
	if !containsInt(archs, 90) {
		t.Errorf("supported archs %v lack 90", archs)
	}

	prog, log, err := compile(t, saxpy, []string{"fill<int>"}, "--gpu-architecture=sm_90")
	if err != nil {
		t.Fatalf("CompileProgram: %v\n%s", err, log)
	}
	got, err := GetLoweredName(prog, "fill<int>")
	if err != nil {
		t.Fatal(err)
	}
	if got != "_Z4fillIiEvPT_S0_" {
		t.Errorf("lowered name of fill<int> = %q", got)
	}
	var size uint64
	if err := GetCUBINSize(prog, &size); err != nil || size == 0 {
		t.Fatalf("GetCUBINSize = %d, %v", size, err)
	}
	cubin := make([]byte, size)
	if err := GetCUBIN(prog, &cubin[0]); err != nil {
		t.Fatal(err)
	}
	if string(cubin[:4]) != "\x7fELF" {
		t.Errorf("CUBIN starts with %q, want an ELF header", cubin[:4])
	}

	prog, _, err = compile(t, saxpy, nil, "--gpu-architecture=compute_90")
	if err != nil {
		t.Fatal(err)
	}
	if err := GetPTXSize(prog, &size); err != nil {
		t.Fatal(err)
	}
	ptx := make([]byte, size)
	if err := GetPTX(prog, &ptx[0]); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(ptx), ".entry saxpy") {
		t.Errorf("PTX has no .entry saxpy:\n%.400s", ptx)
	}

	_, log, err = compile(t, "__global__ void k() {\n\tint x = ;\n}\n", nil)
	if !errors.Is(err, ERROR_COMPILATION) || !strings.Contains(log, "test.cu(2)") {
		t.Errorf("a syntax error on line 2 gave %v and log %q", err, log)
	}
	_, _, err = compile(t, saxpy, nil, "--no-such-option")
	if !errors.Is(err, ERROR_INVALID_OPTION) {
		t.Errorf("an unknown option gave %v, want ERROR_INVALID_OPTION", err)
	}
}

func containsInt(s []int32, v int32) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// cString reads a C string that NVRTC owns.
func cString(p *byte) string {
	if p == nil {
		return ""
	}
	n := 0
	for *(*byte)(unsafe.Add(unsafe.Pointer(p), n)) != 0 {
		n++
	}
	return string(unsafe.Slice(p, n))
}

// cStrings returns options as C strings, pinned until the test ends, since
// C receives an array of pointers to them.
func cStrings(t *testing.T, options []string) []*byte {
	var pin runtime.Pinner
	t.Cleanup(pin.Unpin)
	opts := make([]*byte, len(options))
	for i, o := range options {
		opts[i] = &append([]byte(o), 0)[0]
		pin.Pin(opts[i])
	}
	return opts
}
