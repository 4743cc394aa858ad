package nvrtc

import (
	"testing"

	"github.com/gocuda/cuda/internal/majortest"
)

// majorTest checks the package's refusal of a library of another CUDA
// major (major.go) against stand-ins that report the version of each case.
var majorTest = majortest.Test{
	Env:  "GOCUDA_NVRTC",
	File: testLibrary,
	Source: `int nvrtcVersion(int *major, int *minor) { *major = MAJOR; *minor = MINOR; return 0; }
int nvrtcGetNumSupportedArchs(int *n) { *n = 1; return 0; }
`,
	CUDA:  testCUDA,
	Child: "TestMajorChild",
	Newer: true,
}

// TestMajor runs TestMajorChild against a stand-in of each version: those
// of the build's CUDA major and later ones load, older ones are refused.
func TestMajor(t *testing.T) {
	cases := []majortest.Case{
		{Version: "11.8", CUDA: 11}, // CUDA 11.8's
		{Version: "12.0", CUDA: 12}, // CUDA 12.0's
		{Version: "12.6", CUDA: 12}, // CUDA 12.6's (headers/cuda-12.6)
		{Version: "12.9", CUDA: 12}, // CUDA 12.9's
		{Version: "13.0", CUDA: 13}, // CUDA 13.0's (headers/cuda-13.0)
		{Version: "14.0", CUDA: 14}, // a later major's
	}
	majorTest.Run(t, cases)
}

// TestMajorChild is TestMajor's child; it skips unless run by it.
func TestMajorChild(t *testing.T) {
	var n int32
	call := func() error { return GetNumSupportedArchs(&n) }
	majorTest.Check(t, "TestMajor", call, Load, func() error { var major, minor int32; return Version(&major, &minor) })
}
