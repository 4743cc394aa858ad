package cudart

import (
	"regexp"
	"testing"

	"github.com/gocuda/cuda/internal/ccheck"
)

// TestCoverage checks, independently of the generator's C parser, that every
// function cuda_runtime_api.h and cuda_profiler_api.h declare for C callers
// is bound, and calls the symbol a C caller's name does. (CUDA 12.6's header
// declares cudaGetFuncBySymbol without CUDARTAPI.)
func TestCoverage(t *testing.T) {
	text := ccheck.Header(t, testHeaders+"/cuda_runtime_api.h", testHeaders+"/cuda_profiler_api.h")
	ccheck.Coverage(t, goSymbols, text, regexp.MustCompile(`\b(?:CUDARTAPI|extern\s+__host__\s+cudaError_t)\s+(cuda\w+)\s*\(`), testFuncs, nil)
}
