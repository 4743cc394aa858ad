package gpuprobe

import (
	"os"
	"testing"
)

// RequireLibrary ends t where err, what a GPU test's library (what: "NCCL",
// "cuBLAS", "the CUDA runtime") returned when loaded, is not nil. Call it
// after Require, which has found a GPU. Where $GOCUDA_TEST_GPU is 1 it
// fails t with err, the loader's error, which says what was looked for and
// where (a *dl.LibraryError, *dl.MajorError or *dl.SymbolError): the
// machine that sets it, the GPU suite's (scripts/gpu.sh), has every
// library the suite's tests load, and a skip there would report a
// regression in loading as a green run. Elsewhere, a machine with a GPU
// but without the library, it skips t, naming the library.
//
// The GPU suite runs the tests built for a CUDA major other than the
// machine's only for the packages that need no library beyond the driver
// (the Makefile's GPU_MAJOR_PKGS), which do not call it: a test built for
// CUDA 12 that calls it fails on a CUDA 13 machine that sets the variable.
func RequireLibrary(t testing.TB, what string, err error) {
	t.Helper()
	switch {
	case err == nil:
	case os.Getenv(Env) == "1":
		t.Fatalf("$%s=1 says this machine has a GPU and its libraries, and %s does not load: %v", Env, what, err)
	default:
		t.Skipf("no %s: %v", what, err)
	}
}
