package cudart

import (
	"regexp"
	"testing"

	"github.com/gocuda/cuda/internal/ccheck"
)

// TestCoverage checks, independently of the generator's C parser, that every
// function cuda_runtime_api.h and cuda_profiler_api.h declare for C callers
// is bound, and calls the symbol a C caller's name does.
func TestCoverage(t *testing.T) {
	text := ccheck.Header(t, "../headers/cuda-13.0/cuda_runtime_api.h", "../headers/cuda-13.0/cuda_profiler_api.h")
	ccheck.Coverage(t, goSymbols, text, regexp.MustCompile(`\bCUDARTAPI\s+(cuda\w+)\s*\(`), 312, nil)
}
