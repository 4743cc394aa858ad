package cusparse

import (
	"regexp"
	"testing"

	"github.com/gocuda/cuda/internal/ccheck"
)

func TestErrorIs(t *testing.T) {
	ccheck.StatusError(t, STATUS_INVALID_VALUE, STATUS_NOT_INITIALIZED, "CUSPARSE_STATUS_INVALID_VALUE")
}

func TestNoLibrary(t *testing.T) {
	ccheck.NoLibrary(t, Load, LibraryPath, testLibrary, "Create", func() error {
		var h Handle
		return Create(&h)
	})
}

// TestCoverage checks, independently of the generator, that every function
// cusparse.h declares for C callers is bound, under the name C code calls.
func TestCoverage(t *testing.T) {
	text := ccheck.Header(t, testHeaders+"/cusparse.h")
	ccheck.Coverage(t, goSymbols, text, regexp.MustCompile(`\bCUSPARSEAPI\s+(cusparse\w+)\s*\(`), testFuncs, map[string]string{
		"cusparseLoggerSetFile": "its parameter is a C FILE *, which Go cannot make",
	})
}
