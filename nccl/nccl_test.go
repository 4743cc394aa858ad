package nccl

import (
	"regexp"
	"testing"

	"github.com/gocuda/cuda/internal/ccheck"
)

func TestErrorIs(t *testing.T) {
	ccheck.StatusError(t, InvalidArgument, InternalError, "ncclInvalidArgument")
}

func TestNoLibrary(t *testing.T) {
	ccheck.NoLibrary(t, Load, LibraryPath, testLibrary, "GetUniqueId", func() error {
		var id UniqueId
		return GetUniqueId(&id)
	})
}

// TestCoverage checks, independently of the generator, that every function
// nccl.h declares for C callers is bound, under the name C code calls.
func TestCoverage(t *testing.T) {
	text := ccheck.Header(t, testHeaders+"/nccl.h")
	ccheck.Coverage(t, goSymbols, text, regexp.MustCompile(`(?m)^\s*(?:const\s+)?\w+\s*\*?\s+(nccl\w+)\s*\(`), testFuncs, nil)
}
