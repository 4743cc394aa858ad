package cusolver

import (
	"testing"

	"github.com/gocuda/cuda/cudart"
	"github.com/gocuda/cuda/internal/majortest"
)

// majorTest checks the package's refusal of a library of another CUDA
// major (major.go) against stand-ins that report the version of each case.
var majorTest = majortest.Test{
	Env:  "GOCUDA_CUSOLVER",
	File: testLibrary,
	Source: majortest.PropertySource("cusolverGetProperty") + `int cusolverDnCreate(void **h) { *h = 0; return 0; }
`,
	CUDA:     testCUDA,
	Versions: map[int]string{12: "11.4.2 or newer, older than 12.0.0", 13: "12.0.0 or newer"},
	Child:    "TestMajorChild",
}

// TestMajor runs TestMajorChild against a stand-in of each version: those
// of the build's CUDA major load, the others are refused.
func TestMajor(t *testing.T) {
	cases := []majortest.Case{
		{Version: "11.4.1", CUDA: 11}, // CUDA 11.8's, also libcusolver.so.11
		{Version: "11.4.2", CUDA: 12}, // CUDA 12.0's
		{Version: "11.7.1", CUDA: 12}, // CUDA 12.6's (headers/cuda-12.6)
		{Version: "11.7.5", CUDA: 12}, // CUDA 12.9's
		{Version: "12.0.4", CUDA: 13}, // CUDA 13.0's (headers/cuda-13.0)
	}
	// The headers' own version is of the build's major.
	cases = append(cases, majortest.Own(VER_MAJOR, VER_MINOR, VER_PATCH, testCUDA))
	majorTest.Run(t, cases)
}

// TestMajorChild is TestMajor's child; it skips unless run by it.
func TestMajorChild(t *testing.T) {
	var h Handle
	call := func() error { return Create(&h) }
	majorTest.Check(t, "TestMajor", call, Load, func() error { var v int32; return GetProperty(cudart.MAJOR_VERSION, &v) })
}
