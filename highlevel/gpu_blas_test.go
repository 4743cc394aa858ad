package highlevel

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/gocuda/cuda/cublas"
	"github.com/gocuda/cuda/cudart"
	"github.com/gocuda/cuda/cusolver"
)

// libs skips the test unless cuBLAS and cuSOLVER load.
func libs(t *testing.T) Device {
	t.Helper()
	d := gpu(t)
	if err := cublas.Load(); err != nil {
		t.Skipf("no cuBLAS: %v", err)
	}
	if err := cusolver.Load(); err != nil {
		t.Skipf("no cuSOLVER: %v", err)
	}
	return d
}

// matMulCPU is the row-major product of a (m×k) and b (k×n).
func matMulCPU[T float32 | float64](a, b []T, m, k, n int) []T {
	c := make([]T, m*n)
	for i := range m {
		for j := range n {
			var s float64
			for l := range k {
				s += float64(a[i*k+l]) * float64(b[l*n+j])
			}
			c[i*n+j] = T(s)
		}
	}
	return c
}

func testMatMul[T float32 | float64](t *testing.T, s *Stream, m, k, n int, tol float64) {
	t.Helper()
	a, b := make([]T, m*k), make([]T, k*n)
	for i := range a {
		a[i] = T(rand.Float64()*2 - 1)
	}
	for i := range b {
		b[i] = T(rand.Float64()*2 - 1)
	}
	da, db := arrayFrom(t, a), arrayFrom(t, b)
	dc, err := NewArray[T](m * n)
	if err != nil {
		t.Fatal(err)
	}
	defer dc.Free()
	if err := MatMul(s, da, db, dc, m, k, n); err != nil {
		t.Fatalf("MatMul %d×%d·%d×%d: %v", m, k, k, n, err)
	}
	if s != nil {
		if err := s.Synchronize(); err != nil {
			t.Fatal(err)
		}
	}
	got, err := dc.ToHost()
	if err != nil {
		t.Fatal(err)
	}
	want := matMulCPU(a, b, m, k, n)
	for i := range want {
		if d := math.Abs(float64(got[i] - want[i])); d > tol*math.Sqrt(float64(k)) {
			t.Fatalf("%T c[%d][%d] = %v, CPU %v", got[i], i/n, i%n, got[i], want[i])
		}
	}
}

func arrayFrom[T any](t *testing.T, s []T) *Array[T] {
	t.Helper()
	a, err := ArrayFrom(s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Free() })
	return a
}

// TestGPUMatMul multiplies row-major matrices of odd sizes through cuBLAS,
// on the default stream and on a stream of its own, against the CPU.
func TestGPUMatMul(t *testing.T) {
	d := libs(t)
	s, err := NewStream(d, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, sz := range [][3]int{{1, 1, 1}, {67, 45, 33}, {128, 256, 64}, {3, 500, 2}} {
		testMatMul[float32](t, nil, sz[0], sz[1], sz[2], 1e-5)
		testMatMul[float64](t, s, sz[0], sz[1], sz[2], 1e-12)
	}
}

// TestGPULibraryHandles checks the per-device handles: the same for the same
// device, set to the stream of the call, destroyed by ClearCaches (then an
// ErrClosed, never a crash), and the libraries' own errors for bad input.
func TestGPULibraryHandles(t *testing.T) {
	d := libs(t)
	b1, err := BLASOf(d)
	if err != nil {
		t.Fatal(err)
	}
	if b2, err := BLASOf(d); b2 != b1 || err != nil {
		t.Errorf("BLASOf twice gave %p and %p (%v)", b1, b2, err)
	}
	s, err := NewStream(d, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	err = b1.Do(s, func(h cublas.Handle) error {
		var got cudart.Stream
		if err := cublas.GetStream(h, &got); err != nil {
			return err
		}
		if got != s.Handle() {
			t.Errorf("handle's stream = %#x, want %#x", got, s.Handle())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	// A leading dimension smaller than the rows: cuBLAS refuses it.
	x := arrayFrom(t, make([]float32, 64))
	one := float32(1)
	err = b1.Do(nil, func(h cublas.Handle) error {
		p := (*float32)(x.Ptr())
		return cublas.Sgemm(h, cublas.OP_N, cublas.OP_N, 8, 8, 8, &one, p, 4, p, 8, &one, p, 8)
	})
	if !errors.Is(err, cublas.STATUS_INVALID_VALUE) {
		t.Errorf("Sgemm with lda 4 < m 8: %v, want CUBLAS_STATUS_INVALID_VALUE", err)
	}
	// A null handle.
	if err := cublas.Sgemm(0, cublas.OP_N, cublas.OP_N, 8, 8, 8, &one, nil, 8, nil, 8, &one, nil, 8); !errors.Is(err, cublas.STATUS_NOT_INITIALIZED) {
		t.Errorf("Sgemm on a null handle: %v, want CUBLAS_STATUS_NOT_INITIALIZED", err)
	}
	// The same for cuSOLVER: Dgetrs with ldb 4 < n 8.
	sv, err := SolverOf(d)
	if err != nil {
		t.Fatal(err)
	}
	f64 := arrayFrom(t, make([]float64, 64))
	i32 := arrayFrom(t, make([]int32, 9))
	err = sv.Do(nil, func(h cusolver.Handle) error {
		a, piv := (*float64)(f64.Ptr()), (*int32)(i32.Ptr())
		return cusolver.Dgetrs(h, cublas.OP_N, 8, 1, a, 8, piv, a, 4, (*int32)(unsafe.Add(i32.Ptr(), 32)))
	})
	if !errors.Is(err, cusolver.STATUS_INVALID_VALUE) {
		t.Errorf("Dgetrs with ldb 4 < n 8: %v, want CUSOLVER_STATUS_INVALID_VALUE", err)
	}

	// ClearCaches destroys both handles; what was taken before is closed.
	ClearCaches()
	if err := b1.Do(nil, func(cublas.Handle) error { return nil }); !errors.Is(err, ErrClosed) {
		t.Errorf("BLAS after ClearCaches: %v, want ErrClosed", err)
	}
	if err := sv.Do(nil, func(cusolver.Handle) error { return nil }); !errors.Is(err, ErrClosed) {
		t.Errorf("Solver after ClearCaches: %v, want ErrClosed", err)
	}
	b3, err := BLASOf(d)
	if err != nil || b3 == b1 {
		t.Fatalf("BLASOf after ClearCaches = %p (%v), want a new handle", b3, err)
	}
	testMatMul[float32](t, nil, 16, 16, 16, 1e-5)

	// Bad sizes are refused before cuBLAS is called.
	small := arrayFrom(t, make([]float32, 10))
	if err := MatMul(nil, small, small, small, 4, 4, 4); err == nil {
		t.Error("MatMul of 4×4 matrices in 10-element arrays succeeded")
	}
	if err := MatMul(nil, small, small, small, 0, 1, 1); err == nil {
		t.Error("MatMul with m = 0 succeeded")
	}
	closed, _ := NewStream(d, nil)
	closed.Close()
	if err := MatMul(closed, small, small, small, 1, 1, 1); !errors.Is(err, ErrClosed) {
		t.Errorf("MatMul on a closed stream: %v, want ErrClosed", err)
	}
}
