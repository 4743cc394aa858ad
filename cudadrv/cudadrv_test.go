package cudadrv

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unsafe"

	"github.com/gocuda/cuda/internal/ccheck"
	"github.com/gocuda/cuda/internal/stubtest"
)

func TestResultIs(t *testing.T) {
	wrapped := fmt.Errorf("allocating: %w", error(ERROR_OUT_OF_MEMORY))
	if !errors.Is(wrapped, ERROR_OUT_OF_MEMORY) {
		t.Errorf("errors.Is(%v, ERROR_OUT_OF_MEMORY) = false", wrapped)
	}
	if errors.Is(wrapped, ERROR_INVALID_VALUE) {
		t.Errorf("errors.Is(%v, ERROR_INVALID_VALUE) = true", wrapped)
	}
	var r Result
	if !errors.As(wrapped, &r) || r != ERROR_OUT_OF_MEMORY {
		t.Errorf("errors.As gave %v", r)
	}
}

func TestResultText(t *testing.T) {
	for _, tt := range []struct {
		r    Result
		want string
	}{
		{ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY: the API call failed because it was unable to allocate enough memory or other resources to perform the requested operation"},
		{ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED: this indicates that the CUDA driver has not been initialized with Init or that initialization has failed"},
		{Result(123456), "Result(123456)"},
	} {
		if got := tt.r.Error(); got != tt.want {
			t.Errorf("%d.Error() = %q, want %q", int(tt.r), got, tt.want)
		}
	}
}

func TestEnumString(t *testing.T) {
	for _, tt := range []struct {
		v    fmt.Stringer
		want string
	}{
		{DEVICE_ATTRIBUTE_WARP_SIZE, "CU_DEVICE_ATTRIBUTE_WARP_SIZE"},
		{MEMPOOL_ATTR_USED_MEM_CURRENT, "CU_MEMPOOL_ATTR_USED_MEM_CURRENT"},
		{SUCCESS, "CUDA_SUCCESS"},
		{Device_attribute(-3), "Device_attribute(-3)"},
	} {
		if got := tt.v.String(); got != tt.want {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
	}
}

// TestNoLibrary checks what a machine without CUDA sees: every call returns
// an error naming where libcuda was looked for.
func TestNoLibrary(t *testing.T) {
	if Load() == nil {
		t.Skip("libcuda is installed here: " + LibraryPath())
	}
	err := Init(0)
	var le *LibraryError
	if !errors.As(err, &le) {
		t.Fatalf("Init error = %v, want *LibraryError", err)
	}
	if !strings.Contains(err.Error(), "libcuda.so.1") || !strings.Contains(err.Error(), "/usr/lib/wsl/lib/libcuda.so.1") {
		t.Errorf("error %q does not list the paths tried", err)
	}
}

// stubDriver is a libcuda of five functions, standing for a driver older than
// the headers. Each function reports which symbol was called.
const stubDriver = `
#include <stddef.h>
int cuInit(unsigned int flags) { return flags == 0 ? 0 : 1; }
int cuDriverGetVersion(int *v) { *v = 12000; return 0; }
int cuMemAlloc_v2(unsigned long long *p, size_t n) { *p = 0x1000 + n; return 0; }
int cuMemcpyHtoD_v2(unsigned long long dst, const void *src, size_t n) { return 0; }
int cuMemcpyHtoD_v2_ptds(unsigned long long dst, const void *src, size_t n) { return 700; }
int cuGetErrorString(int e, const char **s) { if (e != 2) { *s = 0; return 1; } *s = "out of memory"; return 0; }
int cuKernelGetName(const char **name, void *k) { *name = k ? "stub_kernel" : 0; return k ? 0 : 400; }
`

// TestStubDriver runs TestStubChild against a stub libcuda (built here with
// the C compiler cgo uses), once as is and once for the per-thread default
// stream. The library is opened once per process, hence the child processes.
func TestStubDriver(t *testing.T) {
	lib := stubtest.Library(t, "libcuda.so.1", stubDriver)
	for _, mode := range []string{"default", "per-thread"} {
		t.Run(mode, func(t *testing.T) {
			stubtest.Child(t, "TestStubChild", "GOCUDA_CUDA="+lib, "GOCUDA_STUB_MODE="+mode)
		})
	}
}

// TestStubChild is TestStubDriver's child; it skips unless run by it.
func TestStubChild(t *testing.T) {
	stubtest.SkipUnlessChild(t, "TestStubDriver")
	mode := os.Getenv("GOCUDA_STUB_MODE")
	if mode == "per-thread" {
		if err := UsePerThreadDefaultStream(); err != nil {
			t.Fatalf("UsePerThreadDefaultStream before loading: %v", err)
		}
	}
	if err := Init(0); err != nil {
		t.Fatalf("Init: %v", err)
	}
	if got, want := LibraryPath(), os.Getenv("GOCUDA_CUDA"); got != want {
		t.Errorf("LibraryPath = %q, want $GOCUDA_CUDA %q", got, want)
	}
	if err := UsePerThreadDefaultStream(); err == nil {
		t.Error("UsePerThreadDefaultStream after loading succeeded")
	}
	var v int32
	if err := DriverGetVersion(&v); err != nil || v != 12000 {
		t.Errorf("DriverGetVersion = %d, %v; want 12000, nil", v, err)
	}
	// MemAlloc calls the versioned symbol; the stub has no plain cuMemAlloc.
	var p Deviceptr
	if err := MemAlloc(&p, 24); err != nil || p != 0x1018 {
		t.Errorf("MemAlloc = %#x, %v; want 0x1018, nil", p, err)
	}
	// MemcpyHtoD calls cuMemcpyHtoD_v2, or its _ptds variant (which answers 700).
	var want error
	if mode == "per-thread" {
		want = Result(700)
	}
	var b [4]byte
	if err := MemcpyHtoD(p, unsafe.Pointer(&b[0]), 4); err != want {
		t.Errorf("MemcpyHtoD = %v, want %v", err, want)
	}
	// A const char ** the call sets is returned as a string, and as "" with
	// the error where the call fails.
	if s, err := GetErrorString(ERROR_OUT_OF_MEMORY); err != nil || s != "out of memory" {
		t.Errorf("GetErrorString(ERROR_OUT_OF_MEMORY) = %q, %v; want \"out of memory\", nil", s, err)
	}
	if s, err := GetErrorString(Result(12345)); err != ERROR_INVALID_VALUE || s != "" {
		t.Errorf("GetErrorString(12345) = %q, %v; want \"\", ERROR_INVALID_VALUE", s, err)
	}
	if s, err := KernelGetName(Kernel(1)); err != nil || s != "stub_kernel" {
		t.Errorf("KernelGetName = %q, %v; want \"stub_kernel\", nil", s, err)
	}
	if s, err := KernelGetName(0); err != ERROR_INVALID_HANDLE || s != "" {
		t.Errorf("KernelGetName(0) = %q, %v; want \"\", ERROR_INVALID_HANDLE", s, err)
	}
	// A function the old driver lacks is an error naming its symbol; the
	// rest keep working.
	err := MemFree(p)
	var se *SymbolError
	if !errors.As(err, &se) || se.Symbol != "cuMemFree_v2" || se.Library != os.Getenv("GOCUDA_CUDA") {
		t.Errorf("MemFree error = %#v, want a *SymbolError for cuMemFree_v2", err)
	}
	if err := Init(0); err != nil {
		t.Errorf("Init after a missing symbol: %v", err)
	}
}

// TestCoverage checks, independently of the generator's C parser, that every
// function the headers declare for callers is bound: the testFuncs of cuda.h
// and the profiler's.
func TestCoverage(t *testing.T) {
	declared := regexp.MustCompile(`\bCUDAAPI\s+(cu\w+)\s*\(`)
	want := map[string]bool{}
	for _, name := range []string{"cuda.h", "cudaProfiler.h"} {
		found := declared.FindAllStringSubmatch(ccheck.Header(t, filepath.Join(testHeaders, name)), -1)
		if name == "cuda.h" && len(found) != testFuncs {
			t.Errorf("cuda.h declares %d functions, want CUDA %s's %d", len(found), testCUDA, testFuncs)
		}
		for _, m := range found {
			want[m[1]] = true
		}
	}
	got := map[string]bool{}
	for _, s := range goSymbols {
		got[s.Name] = true
		if !want[s.Name] {
			t.Errorf("%s is bound but not declared", s.Name)
		}
	}
	for name := range want {
		if !got[name] {
			t.Errorf("%s is declared but not bound", name)
		}
	}
	t.Logf("%d functions declared, %d bound", len(want), len(got))
}

// TestTypedefs cross-checks the generated symbol table with cudaTypedefs.h
// and cudaProfilerTypedefs.h, which declare a PFN_<name>_v<version> pointer
// type for each entry point and a PFN_<name>_v<version>_ptds or _ptsz one for
// each per-thread variant: every function has one (under its C name or its
// symbol), and the functions with a per-thread variant are exactly those the
// typedefs give one, except cuGetProcAddress, whose per-thread form is an
// inline wrapper in cuda.h (see the package doc).
func TestTypedefs(t *testing.T) {
	const inlineWrapper = "cuGetProcAddress"
	pfn := regexp.MustCompile(`\bPFN_(cu\w+?)_v\d+(_ptds|_ptsz)?\b`)
	versioned := regexp.MustCompile(`_v\d+$`)
	entry, perThread := map[string]bool{}, map[string]bool{}
	for _, name := range []string{"cudaTypedefs.h", "cudaProfilerTypedefs.h"} {
		for _, m := range pfn.FindAllStringSubmatch(ccheck.Header(t, filepath.Join(testHeaders, name)), -1) {
			entry[m[1]] = true
			if m[2] != "" {
				perThread[m[1]] = true
			}
		}
	}
	seen := map[string]bool{}
	for _, s := range goSymbols {
		name := versioned.ReplaceAllString(s.Name, "")
		if !entry[name] && !entry[versioned.ReplaceAllString(s.Proc.Name(), "")] {
			t.Errorf("%s (symbol %s) has no PFN typedef", s.Name, s.Proc.Name())
		}
		if got := s.Proc.PerThreadName() != ""; got != perThread[name] && name != inlineWrapper {
			t.Errorf("%s: per-thread variant %v, typedefs say %v", s.Name, got, perThread[name])
		}
		seen[name] = true
	}
	for name := range perThread {
		if !seen[name] {
			t.Errorf("typedefs give %s a per-thread variant; no such function here", name)
		}
	}
}

// TestEnumValues checks an enum's list of values: in header order, each
// value once, each with its C name.
func TestEnumValues(t *testing.T) {
	got := MemPool_attributeValues()
	if len(got) != 8 || got[0] != MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES || got[7] != MEMPOOL_ATTR_USED_MEM_HIGH {
		t.Errorf("MemPool_attributeValues() = %v", got)
	}
	seen := map[Result]bool{}
	for _, r := range ResultValues() {
		if seen[r] {
			t.Errorf("ResultValues lists %v twice", r)
		}
		seen[r] = true
		if strings.HasPrefix(r.String(), "Result(") {
			t.Errorf("ResultValues lists %d, which has no C name", int(r))
		}
	}
	if !seen[SUCCESS] || !seen[ERROR_UNKNOWN] || !seen[ERROR_OUT_OF_MEMORY] {
		t.Errorf("ResultValues lacks SUCCESS, ERROR_UNKNOWN or ERROR_OUT_OF_MEMORY: %d values", len(seen))
	}
	// A fresh slice each time: changing one changes no other.
	a := ResultValues()
	a[0] = ERROR_UNKNOWN
	if ResultValues()[0] != SUCCESS {
		t.Error("ResultValues returned a shared slice")
	}
}
