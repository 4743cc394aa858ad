package cublaslt

import (
	"testing"

	"github.com/gocuda/cuda/internal/majortest"
)

// majorTest checks the package's refusal of a library of another CUDA
// major (major.go) against stand-ins that report the version of each case.
var majorTest = majortest.Test{
	Env:  "GOCUDA_CUBLASLT",
	File: testLibrary,
	Source: `#include <stddef.h>
size_t cublasLtGetCudartVersion(void) { return CUDAVERSION; }
int cublasLtCreate(void **h) { *h = 0; return 0; }
`,
	CUDA:  testCUDA,
	Child: "TestMajorChild",
}

// TestMajor runs TestMajorChild against a stand-in of each version: those
// of the build's CUDA major load, the others are refused.
func TestMajor(t *testing.T) {
	majorTest.Run(t, majortest.CUDAReleases)
}

// TestMajorChild is TestMajor's child; it skips unless run by it.
func TestMajorChild(t *testing.T) {
	var h Handle
	call := func() error { return Create(&h) }
	majorTest.Check(t, "TestMajor", call, Load, func() error { _, err := GetCudartVersion(); return err })
}
