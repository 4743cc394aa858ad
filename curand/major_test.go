package curand

import (
	"testing"

	"github.com/gocuda/cuda/cudart"
	"github.com/gocuda/cuda/internal/majortest"
)

// majorTest checks the package's refusal of a library of another CUDA
// major (major.go) against stand-ins that report the version of each case.
var majorTest = majortest.Test{
	Env:  "GOCUDA_CURAND",
	File: testLibrary,
	Source: majortest.PropertySource("curandGetProperty") + `int curandCreateGenerator(void **g, int type) { *g = 0; return 0; }
`,
	CUDA:     testCUDA,
	Versions: map[int]string{12: "10.3.1 or newer, older than 10.4.0", 13: "10.4.0 or newer"},
	Child:    "TestMajorChild",
}

// TestMajor runs TestMajorChild against a stand-in of each version: those
// of the build's CUDA major load, the others are refused.
func TestMajor(t *testing.T) {
	cases := []majortest.Case{
		{Version: "10.3.0", CUDA: 11},  // CUDA 11.8's, also libcurand.so.10
		{Version: "10.3.1", CUDA: 12},  // CUDA 12.0's
		{Version: "10.3.7", CUDA: 12},  // CUDA 12.6's (headers/cuda-12.6)
		{Version: "10.3.10", CUDA: 12}, // CUDA 12.9's
		{Version: "10.4.0", CUDA: 13},  // CUDA 13.0's (headers/cuda-13.0)
	}
	// The headers' own version is of the build's major.
	cases = append(cases, majortest.Own(VER_MAJOR, VER_MINOR, VER_PATCH, testCUDA))
	majorTest.Run(t, cases)
}

// TestMajorChild is TestMajor's child; it skips unless run by it.
func TestMajorChild(t *testing.T) {
	var g Generator
	call := func() error { return CreateGenerator(&g, RNG_PSEUDO_DEFAULT) }
	majorTest.Check(t, "TestMajor", call, Load, func() error { var v int32; return GetProperty(cudart.MAJOR_VERSION, &v) })
}
