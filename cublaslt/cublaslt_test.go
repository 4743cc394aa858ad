package cublaslt

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/gocuda/cuda/cublas"
	"github.com/gocuda/cuda/internal/ccheck"
)

func TestErrorIs(t *testing.T) {
	err := fmt.Errorf("calling: %w", cublas.STATUS_INVALID_VALUE)
	if !errors.Is(err, cublas.STATUS_INVALID_VALUE) || errors.Is(err, cublas.STATUS_NOT_INITIALIZED) {
		t.Errorf("errors.Is does not tell %v apart", err)
	}
	if !strings.HasPrefix(err.Error(), "calling: CUBLAS_STATUS_INVALID_VALUE") {
		t.Errorf("error text %q does not name the status", err)
	}
}

func TestNoLibrary(t *testing.T) {
	if Load() == nil {
		t.Skip("libcublasLt.so.13 is installed here: " + LibraryPath())
	}
	var h Handle
	err := Create(&h)
	var le *LibraryError
	if !errors.As(err, &le) || !strings.Contains(err.Error(), "/usr/local/cuda/lib64/libcublasLt.so.13") {
		t.Errorf("Create error = %v, want a *LibraryError listing the paths tried", err)
	}
}

// TestCoverage checks, independently of the generator, that every function
// cublasLt.h declares for C callers is bound, under the name C code calls.
func TestCoverage(t *testing.T) {
	text := ccheck.Header(t, "../headers/cuda-13.0/cublasLt.h")
	ccheck.Coverage(t, goSymbols, text, regexp.MustCompile(`\bCUBLASWINAPI\s+(cublasLt\w+)\s*\(`), 50, map[string]string{
		"cublasLtLoggerSetFile": "its parameter is a C FILE *, which Go cannot make",
	})
}
