package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestProcVersions(t *testing.T) {
	dir := t.TempDir()
	typedefs := map[string]string{
		"cudaTypedefs.h": `
typedef CUresult (CUDAAPI *PFN_cuMemAlloc_v2000)(CUdeviceptr_v1 *dptr, unsigned int bytesize);
typedef CUresult (CUDAAPI *PFN_cuMemAlloc_v3020)(CUdeviceptr_v2 *dptr, size_t bytesize);
typedef CUresult (CUDAAPI *PFN_cuMemcpyAsync_v4000)(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s);
typedef CUresult (CUDAAPI *PFN_cuMemcpyAsync_v7000_ptsz)(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s);
typedef CUresult (CUDAAPI *PFN_cuGraphExecUpdate_v10020)(void);
typedef CUresult (CUDAAPI *PFN_cuGraphExecUpdate_v12000)(void);
typedef CUresult (CUDAAPI *PFN_cuGetProcAddress_v12000)(void);
typedef CUresult (CUDAAPI *PFN_cuGetProcAddress_v12050)(void);
typedef CUresult (CUDAAPI *PFN_cuKernelGetParamInfo_v12040)(void);
typedef CUresult (CUDAAPI *PFN_cuKernelGetParamInfo_v13000)(void);
`,
		"cudaProfilerTypedefs.h": "typedef CUresult (CUDAAPI *PFN_cuProfilerStart_v4000)(void);\n",
	}
	for name, src := range typedefs {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		proc string
		want int
	}{
		{"cuMemAlloc", 3020},            // the latest of several before the base
		{"cuMemcpyAsync", 4000},         // not the per-thread stream twin
		{"cuGraphExecUpdate", 12000},    // one at the base itself
		{"cuGetProcAddress", 12000},     // not the later one
		{"cuKernelGetParamInfo", 12040}, // after the base: its first
		{"cuProfilerStart", 4000},       // from the profiler's typedefs
	}
	var procs []string
	for _, tt := range tests {
		procs = append(procs, tt.proc)
	}
	got, err := procVersions(dir, procs, 12000)
	if err != nil {
		t.Fatal(err)
	}
	for i, tt := range tests {
		if got[i] != tt.want {
			t.Errorf("%s at %d, want %d", tt.proc, got[i], tt.want)
		}
	}
	if _, err := procVersions(dir, []string{"cuNoSuch"}, 12000); err == nil || !strings.Contains(err.Error(), "proc cuNoSuch is no driver function") {
		t.Errorf("procVersions of no function: %v", err)
	}
	h := string(symbolsHeader(procs[:2], got[:2], 12000))
	for _, want := range []string{"enum { HL_BASE_VERSION = 12000 };", "#define HL_SYMBOLS(X) \\\n\tX(cuMemAlloc, 3020) \\\n\tX(cuMemcpyAsync, 4000)\n"} {
		if !strings.Contains(h, want) {
			t.Errorf("zsymbols.h has no %q:\n%s", want, h)
		}
	}
}

func TestStagedDiffer(t *testing.T) {
	dir := t.TempDir()
	var same, differ staged
	same.add(dir, map[string][]byte{"zsymbols.h": []byte("a")})
	same.add(dir, map[string][]byte{"zsymbols.h": []byte("a")})
	if err := same.write(); err != nil {
		t.Errorf("the same file staged twice: %v", err)
	}
	differ.add(dir, map[string][]byte{"zsymbols.h": []byte("a")})
	differ.add(dir, map[string][]byte{"zsymbols.h": []byte("b")})
	if err := differ.write(); err == nil || !strings.Contains(err.Error(), "different contents to "+filepath.Join(dir, "zsymbols.h")) {
		t.Errorf("a file staged twice with different contents: %v", err)
	}
}
