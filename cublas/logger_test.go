package cublas

import (
	"slices"
	"testing"

	"github.com/gocuda/cuda/internal/stubtest"
)

// stubLogging is a libcublas whose cublasSgemm_v2 calls the logger
// registered with cublasSetLoggerCallback before it returns, as cuBLAS does
// once a logger is set (CUBLAS_LOGINFO_DBG, or cublasLoggerConfigure).
const stubLogging = `
typedef void (*logger)(const char *msg);
static logger registered;
int cublasSetLoggerCallback(logger l) { registered = l; return 0; }
int cublasSgemm_v2(void *h, int ta, int tb, int m, int n, int k, const float *alpha,
	const float *A, int lda, const float *B, int ldb, const float *beta, float *C, int ldc) {
	if (registered) registered("cublasSgemm_v2 called");
	*C = *alpha * *A * *B + *beta * *C;
	return 0;
}
`

// TestStubLogger runs TestStubLoggerChild against stubLogging: a Go logger
// called back from inside another call of the library must be allowed to
// run (the call must not be marked #cgo nocallback).
func TestStubLogger(t *testing.T) {
	lib := stubtest.Library(t, "libcublas.so.13", stubLogging)
	stubtest.Child(t, "TestStubLoggerChild", "GOCUDA_CUBLAS="+lib)
}

// TestStubLoggerChild is TestStubLogger's child; it skips unless run by it.
func TestStubLoggerChild(t *testing.T) {
	stubtest.SkipUnlessChild(t, "TestStubLogger")
	if err := SetLoggerCallback(LogCallback(stubtest.BLASLogger())); err != nil {
		t.Fatalf("SetLoggerCallback: %v", err)
	}
	alpha, a, b, beta, c := float32(2), float32(3), float32(5), float32(1), float32(7)
	if err := Sgemm(0, OP_N, OP_N, 1, 1, 1, &alpha, &a, 1, &b, 1, &beta, &c, 1); err != nil {
		t.Fatalf("Sgemm: %v", err)
	}
	if c != 37 {
		t.Errorf("Sgemm wrote %v, want 2*3*5+7 = 37", c)
	}
	if got, want := stubtest.Messages(), []string{"cublasSgemm_v2 called"}; !slices.Equal(got, want) {
		t.Errorf("the logger got %q, want %q", got, want)
	}
}
