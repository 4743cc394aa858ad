package cufft

import (
	"regexp"
	"testing"

	"github.com/gocuda/cuda/internal/ccheck"
)

func TestErrorIs(t *testing.T) {
	ccheck.StatusError(t, INVALID_SIZE, INVALID_PLAN, "CUFFT_INVALID_SIZE")
}

func TestNoLibrary(t *testing.T) {
	ccheck.NoLibrary(t, Load, LibraryPath, testLibrary, "Create", func() error {
		var plan Handle
		return Create(&plan)
	})
}

// TestCoverage checks, independently of the generator, that every function
// cufft.h declares for C callers is bound, under the name C code calls.
func TestCoverage(t *testing.T) {
	text := ccheck.Header(t, testHeaders+"/cufft.h")
	ccheck.Coverage(t, goSymbols, text, regexp.MustCompile(`\bCUFFTAPI\s+(cufft\w+)\s*\(`), testFuncs, nil)
}
