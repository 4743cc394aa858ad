package nccl

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/gocuda/cuda/internal/ccheck"
)

func TestErrorIs(t *testing.T) {
	err := fmt.Errorf("calling: %w", InvalidArgument)
	if !errors.Is(err, InvalidArgument) || errors.Is(err, InternalError) {
		t.Errorf("errors.Is does not tell %v apart", err)
	}
	if !strings.HasPrefix(err.Error(), "calling: ncclInvalidArgument") {
		t.Errorf("error text %q does not name the status", err)
	}
}

func TestNoLibrary(t *testing.T) {
	if Load() == nil {
		t.Skip("libnccl.so.2 is installed here: " + LibraryPath())
	}
	var id UniqueId
	err := GetUniqueId(&id)
	var le *LibraryError
	if !errors.As(err, &le) || !strings.Contains(err.Error(), "/usr/local/cuda/lib64/libnccl.so.2") {
		t.Errorf("GetUniqueId error = %v, want a *LibraryError listing the paths tried", err)
	}
}

// TestCoverage checks, independently of the generator, that every function
// nccl.h declares for C callers is bound, under the name C code calls.
func TestCoverage(t *testing.T) {
	text := ccheck.Header(t, "../headers/nccl-2.28.3/nccl.h")
	ccheck.Coverage(t, goSymbols, text, regexp.MustCompile(`(?m)^\s*(?:const\s+)?\w+\s*\*?\s+(nccl\w+)\s*\(`), 40, nil)
}
