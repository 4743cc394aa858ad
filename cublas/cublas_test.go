package cublas

import (
	"regexp"
	"testing"

	"github.com/gocuda/cuda/internal/ccheck"
)

func TestErrorIs(t *testing.T) {
	ccheck.StatusError(t, STATUS_INVALID_VALUE, STATUS_NOT_INITIALIZED, "CUBLAS_STATUS_INVALID_VALUE")
}

func TestNoLibrary(t *testing.T) {
	ccheck.NoLibrary(t, Load, LibraryPath, testLibrary, "Create", func() error {
		var h Handle
		return Create(&h)
	})
}

// TestCoverage checks, independently of the generator, that every function
// cublas_api.h and cublas_v2.h declare for C callers is bound, under the name C code calls.
func TestCoverage(t *testing.T) {
	text := ccheck.Header(t, testHeaders+"/cublas_api.h", testHeaders+"/cublas_v2.h")
	ccheck.Coverage(t, goSymbols, text, regexp.MustCompile(`\bCUBLASWINAPI\s+(cublas\w+)\s*\(`), testFuncs, nil)
}
