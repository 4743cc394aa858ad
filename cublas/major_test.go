package cublas

import (
	"testing"

	"github.com/gocuda/cuda/internal/majortest"
)

// majorTest checks the package's refusal of a library of another CUDA
// major (major.go) against stand-ins that report the version of each case.
var majorTest = majortest.Test{
	Env:  "GOCUDA_CUBLAS",
	File: testLibrary,
	Source: `#include <stddef.h>
size_t cublasGetCudartVersion(void) { return CUDAVERSION; }
int cublasCreate_v2(void **h) { *h = 0; return 0; }
`,
	CUDA:  testCUDA,
	Child: "TestMajorChild",
}

// TestMajor runs TestMajorChild against a stand-in of each version: those
// of the build's CUDA major load, the others are refused.
func TestMajor(t *testing.T) {
	cases := []majortest.Case{
		{Version: "11.8", CUDA: 11}, // CUDA 11.8's
		{Version: "12.0", CUDA: 12}, // CUDA 12.0's
		{Version: "12.6", CUDA: 12}, // CUDA 12.6's (headers/cuda-12.6)
		{Version: "12.9", CUDA: 12}, // CUDA 12.9's
		{Version: "13.0", CUDA: 13}, // CUDA 13.0's (headers/cuda-13.0)
	}
	majorTest.Run(t, cases)
}

// TestMajorChild is TestMajor's child; it skips unless run by it.
func TestMajorChild(t *testing.T) {
	var h Handle
	call := func() error { return Create(&h) }
	majorTest.Check(t, "TestMajor", call, Load, func() error { _, err := GetCudartVersion(); return err })
}
