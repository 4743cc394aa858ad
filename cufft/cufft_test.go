package cufft

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/gocuda/cuda/internal/ccheck"
)

func TestErrorIs(t *testing.T) {
	err := fmt.Errorf("calling: %w", INVALID_SIZE)
	if !errors.Is(err, INVALID_SIZE) || errors.Is(err, INVALID_PLAN) {
		t.Errorf("errors.Is does not tell %v apart", err)
	}
	if !strings.HasPrefix(err.Error(), "calling: CUFFT_INVALID_SIZE") {
		t.Errorf("error text %q does not name the status", err)
	}
}

func TestNoLibrary(t *testing.T) {
	if Load() == nil {
		t.Skip("libcufft.so.12 is installed here: " + LibraryPath())
	}
	var plan Handle
	err := Create(&plan)
	var le *LibraryError
	if !errors.As(err, &le) || !strings.Contains(err.Error(), "/usr/local/cuda/lib64/libcufft.so.12") {
		t.Errorf("Create error = %v, want a *LibraryError listing the paths tried", err)
	}
}

// TestCoverage checks, independently of the generator, that every function
// cufft.h declares for C callers is bound, under the name C code calls.
func TestCoverage(t *testing.T) {
	text := ccheck.Header(t, "../headers/cuda-13.0/cufft.h")
	ccheck.Coverage(t, goSymbols, text, regexp.MustCompile(`\bCUFFTAPI\s+(cufft\w+)\s*\(`), 35, nil)
}
