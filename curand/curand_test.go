package curand

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/gocuda/cuda/internal/ccheck"
)

func TestErrorIs(t *testing.T) {
	err := fmt.Errorf("calling: %w", STATUS_LENGTH_NOT_MULTIPLE)
	if !errors.Is(err, STATUS_LENGTH_NOT_MULTIPLE) || errors.Is(err, STATUS_NOT_INITIALIZED) {
		t.Errorf("errors.Is does not tell %v apart", err)
	}
	if !strings.HasPrefix(err.Error(), "calling: CURAND_STATUS_LENGTH_NOT_MULTIPLE") {
		t.Errorf("error text %q does not name the status", err)
	}
}

func TestNoLibrary(t *testing.T) {
	if Load() == nil {
		t.Skip("libcurand.so.10 is installed here: " + LibraryPath())
	}
	var g Generator
	err := CreateGenerator(&g, RNG_PSEUDO_DEFAULT)
	var le *LibraryError
	if !errors.As(err, &le) || !strings.Contains(err.Error(), "/usr/local/cuda/lib64/libcurand.so.10") {
		t.Errorf("CreateGenerator error = %v, want a *LibraryError listing the paths tried", err)
	}
}

// TestCoverage checks, independently of the generator, that every function
// curand.h declares for C callers is bound, under the name C code calls.
func TestCoverage(t *testing.T) {
	text := ccheck.Header(t, "../headers/cuda-13.0/curand.h")
	ccheck.Coverage(t, goSymbols, text, regexp.MustCompile(`\bCURANDAPI\s+(curand\w+)\s*\(`), 29, nil)
}
