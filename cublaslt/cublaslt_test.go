package cublaslt

import (
	"regexp"
	"testing"

	"github.com/gocuda/cuda/cublas"
	"github.com/gocuda/cuda/internal/ccheck"
)

func TestErrorIs(t *testing.T) {
	ccheck.StatusError(t, cublas.STATUS_INVALID_VALUE, cublas.STATUS_NOT_INITIALIZED, "CUBLAS_STATUS_INVALID_VALUE")
}

func TestNoLibrary(t *testing.T) {
	ccheck.NoLibrary(t, Load, LibraryPath, testLibrary, "Create", func() error {
		var h Handle
		return Create(&h)
	})
}

// TestCoverage checks, independently of the generator, that every function
// cublasLt.h declares for C callers is bound, under the name C code calls.
func TestCoverage(t *testing.T) {
	text := ccheck.Header(t, testHeaders+"/cublasLt.h")
	ccheck.Coverage(t, goSymbols, text, regexp.MustCompile(`\bCUBLASWINAPI\s+(cublasLt\w+)\s*\(`), testFuncs, map[string]string{
		"cublasLtLoggerSetFile": "its parameter is a C FILE *, which Go cannot make",
	})
}
