package curand

import (
	"regexp"
	"testing"

	"github.com/gocuda/cuda/internal/ccheck"
)

func TestErrorIs(t *testing.T) {
	ccheck.StatusError(t, STATUS_LENGTH_NOT_MULTIPLE, STATUS_NOT_INITIALIZED, "CURAND_STATUS_LENGTH_NOT_MULTIPLE")
}

func TestNoLibrary(t *testing.T) {
	ccheck.NoLibrary(t, Load, LibraryPath, testLibrary, "CreateGenerator", func() error {
		var g Generator
		return CreateGenerator(&g, RNG_PSEUDO_DEFAULT)
	})
}

// TestCoverage checks, independently of the generator, that every function
// curand.h declares for C callers is bound, under the name C code calls.
func TestCoverage(t *testing.T) {
	text := ccheck.Header(t, testHeaders+"/curand.h")
	ccheck.Coverage(t, goSymbols, text, regexp.MustCompile(`\bCURANDAPI\s+(curand\w+)\s*\(`), testFuncs, nil)
}
