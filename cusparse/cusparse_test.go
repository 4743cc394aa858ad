package cusparse

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/gocuda/cuda/internal/ccheck"
)

func TestErrorIs(t *testing.T) {
	err := fmt.Errorf("calling: %w", STATUS_INVALID_VALUE)
	if !errors.Is(err, STATUS_INVALID_VALUE) || errors.Is(err, STATUS_NOT_INITIALIZED) {
		t.Errorf("errors.Is does not tell %v apart", err)
	}
	if !strings.HasPrefix(err.Error(), "calling: CUSPARSE_STATUS_INVALID_VALUE") {
		t.Errorf("error text %q does not name the status", err)
	}
}

func TestNoLibrary(t *testing.T) {
	if Load() == nil {
		t.Skip("libcusparse.so.12 is installed here: " + LibraryPath())
	}
	var h Handle
	err := Create(&h)
	var le *LibraryError
	if !errors.As(err, &le) || !strings.Contains(err.Error(), "/usr/local/cuda/lib64/libcusparse.so.12") {
		t.Errorf("Create error = %v, want a *LibraryError listing the paths tried", err)
	}
}

// TestCoverage checks, independently of the generator, that every function
// cusparse.h declares for C callers is bound, under the name C code calls.
func TestCoverage(t *testing.T) {
	text := ccheck.Header(t, "../headers/cuda-13.0/cusparse.h")
	ccheck.Coverage(t, goSymbols, text, regexp.MustCompile(`\bCUSPARSEAPI\s+(cusparse\w+)\s*\(`), 448, map[string]string{
		"cusparseLoggerSetFile": "its parameter is a C FILE *, which Go cannot make",
	})
}
