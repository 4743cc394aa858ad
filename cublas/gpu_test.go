package cublas

import (
	"errors"
	"math"
	"testing"

	"github.com/gocuda/cuda/internal/gputest"
)

// requireGPU skips the test without cuBLAS or a GPU, and returns a handle
// destroyed at cleanup.
func requireGPU(t *testing.T) Handle {
	t.Helper()
	gputest.Require(t, "cuBLAS", Load)
	var h Handle
	if err := Create(&h); err != nil {
		t.Fatalf("Create: %v", err)
	}
	t.Cleanup(func() { Destroy(h) })
	return h
}

// gemmCPU is C = alpha·op(A)·B + beta·C in column-major order, op(A) = Aᵀ
// when transA.
func gemmCPU(transA bool, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) {
	for j := range n {
		for i := range m {
			var s float64
			for l := range k {
				x := a[i+l*lda]
				if transA {
					x = a[l+i*lda]
				}
				s += x * b[l+j*ldb]
			}
			c[i+j*ldc] = alpha*s + beta*c[i+j*ldc]
		}
	}
}

// TestGPUGemm runs SGEMM, SGEMM_64 and DGEMM, with A transposed or not and
// leading dimensions larger than the rows, against the CPU.
func TestGPUGemm(t *testing.T) {
	h := requireGPU(t)
	const m, n, k, ld = 37, 29, 41, 48
	fill := func(size int, seed int) []float64 {
		s := make([]float64, size)
		for i := range s {
			s[i] = float64((i*seed)%23)/23 - 0.5
		}
		return s
	}
	for _, transA := range []bool{false, true} {
		a, b, c := fill(ld*ld, 7), fill(ld*n, 11), fill(ld*n, 13)
		want := append([]float64(nil), c...)
		gemmCPU(transA, m, n, k, 1.5, a, ld, b, ld, 0.25, want, ld)
		op := OP_N
		if transA {
			op = OP_T
		}

		dc := gputest.Device(t, c)
		alpha, beta := 1.5, 0.25
		if err := Dgemm(h, op, OP_N, m, n, k, &alpha, gputest.Device(t, a), ld, gputest.Device(t, b), ld, &beta, dc, ld); err != nil {
			t.Fatalf("Dgemm: %v", err)
		}
		got := make([]float64, len(c))
		gputest.ToHost(t, got, dc)
		for i := range got {
			if math.Abs(got[i]-want[i]) > 1e-12 {
				t.Fatalf("Dgemm (A transposed %v): C[%d] = %v, CPU %v", transA, i, got[i], want[i])
			}
		}

		f32 := func(s []float64) []float32 {
			r := make([]float32, len(s))
			for i, x := range s {
				r[i] = float32(x)
			}
			return r
		}
		for _, wide := range []bool{false, true} {
			dc := gputest.Device(t, f32(c))
			fa, fb := gputest.Device(t, f32(a)), gputest.Device(t, f32(b))
			alpha, beta := float32(1.5), float32(0.25)
			var err error
			if wide {
				err = Sgemm_64(h, op, OP_N, m, n, k, &alpha, fa, ld, fb, ld, &beta, (*float32)(dc), ld)
			} else {
				err = Sgemm(h, op, OP_N, m, n, k, &alpha, fa, ld, fb, ld, &beta, (*float32)(dc), ld)
			}
			if err != nil {
				t.Fatalf("Sgemm (64-bit %v): %v", wide, err)
			}
			got := make([]float32, len(c))
			gputest.ToHost(t, got, dc)
			for i := range got {
				if math.Abs(float64(got[i])-want[i]) > 1e-4 {
					t.Fatalf("Sgemm (A transposed %v, 64-bit %v): C[%d] = %v, CPU %v", transA, wide, i, got[i], want[i])
				}
			}
		}
	}
}

// TestGPUBadInput: a leading dimension smaller than the rows and a null
// handle are errors from cuBLAS, named.
func TestGPUBadInput(t *testing.T) {
	h := requireGPU(t)
	p := gputest.Device(t, make([]float32, 64))
	one := float32(1)
	err := Sgemm(h, OP_N, OP_N, 8, 8, 8, &one, p, 4, p, 8, &one, p, 8)
	if !errors.Is(err, STATUS_INVALID_VALUE) || err.Error() == "" {
		t.Errorf("lda 4 < m 8: %v, want CUBLAS_STATUS_INVALID_VALUE", err)
	}
	if err := Sgemm(0, OP_N, OP_N, 8, 8, 8, &one, p, 8, p, 8, &one, p, 8); !errors.Is(err, STATUS_NOT_INITIALIZED) {
		t.Errorf("null handle: %v, want CUBLAS_STATUS_NOT_INITIALIZED", err)
	}
	var v int32
	if err := GetVersion(h, &v); err != nil || v < 130000 {
		t.Errorf("GetVersion = %d, %v; want 13.x", v, err)
	}
}
