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
	majorTest.Run(t, append(majortest.CUDAReleases, majortest.Case{Version: "14.0", CUDA: 14})) // and a later major's
}

// TestMajorChild is TestMajor's child; it skips unless run by it.
func TestMajorChild(t *testing.T) {
	var n int32
	call := func() error { return GetNumSupportedArchs(&n) }
	majorTest.Check(t, "TestMajor", call, Load, func() error { var major, minor int32; return Version(&major, &minor) })
}
