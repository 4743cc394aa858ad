package cusolver

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gocuda/cuda/cublas"
	"github.com/gocuda/cuda/cudart"
	"github.com/gocuda/cuda/internal/gputest"
)

// requireGPU skips the test without cuSOLVER or a GPU, and returns a dense
// handle destroyed at cleanup.
func requireGPU(t *testing.T) Handle {
	t.Helper()
	gputest.Require(t, "cuSOLVER", Load)
	var h Handle
	if err := Create(&h); err != nil {
		t.Fatalf("Create: %v", err)
	}
	t.Cleanup(func() { Destroy(h) })
	return h
}

// TestGPUGetrfGetrs factors a random, diagonally dominant 64×64 float64
// system with Dgetrf (workspace from Dgetrf_bufferSize, partial pivoting)
// and solves it with Dgetrs: devInfo must be 0 after both, the pivots in
// 1..n, and the residual ||Ax-b||/||b||, computed on the CPU with the
// original A, below 1e-10.
func TestGPUGetrfGetrs(t *testing.T) {
	h := requireGPU(t)
	const n, lda = 64, 64
	rng := rand.New(rand.NewPCG(3, 4))
	a := make([]float64, lda*n)
	for i := range a {
		a[i] = 2*rng.Float64() - 1
	}
	for i := range n {
		a[i+i*lda] += n
	}
	b := make([]float64, n)
	for i := range b {
		b[i] = 2*rng.Float64() - 1
	}

	da, db := gputest.Device(t, a), gputest.Device(t, b)
	var lwork int32
	if err := Dgetrf_bufferSize(h, n, n, da, lda, &lwork); err != nil {
		t.Fatalf("Dgetrf_bufferSize: %v", err)
	}
	if lwork < 1 {
		lwork = 1
	}
	work, ipiv, info := gputest.Alloc[float64](t, int(lwork)), gputest.Alloc[int32](t, n), gputest.Alloc[int32](t, 1)
	checkInfo := func(what string) {
		t.Helper()
		if err := cudart.DeviceSynchronize(); err != nil {
			t.Fatalf("DeviceSynchronize after %s: %v", what, err)
		}
		got := make([]int32, 1)
		gputest.ToHost(t, got, info)
		if got[0] != 0 {
			t.Fatalf("%s: devInfo = %d, want 0", what, got[0])
		}
	}
	if err := Dgetrf(h, n, n, da, lda, work, ipiv, info); err != nil {
		t.Fatalf("Dgetrf: %v", err)
	}
	checkInfo("Dgetrf")
	piv := make([]int32, n)
	gputest.ToHost(t, piv, ipiv)
	for i, p := range piv {
		if p < 1 || p > n {
			t.Fatalf("pivot %d = %d, want 1..%d", i, p, n)
		}
	}
	if err := Dgetrs(h, cublas.OP_N, n, 1, da, lda, ipiv, db, n, info); err != nil {
		t.Fatalf("Dgetrs: %v", err)
	}
	checkInfo("Dgetrs")

	x := make([]float64, n)
	gputest.ToHost(t, x, db)
	var rr, bb float64
	for i := range n {
		r := -b[i]
		for j := range n {
			r += a[i+j*lda] * x[j]
		}
		rr += r * r
		bb += b[i] * b[i]
	}
	if res := math.Sqrt(rr / bb); !(res < 1e-10) {
		t.Errorf("||Ax-b||/||b|| = %g, want < 1e-10", res)
	} else {
		t.Logf("||Ax-b||/||b|| = %g", res)
	}
}

// TestGPUBadInput: a leading dimension smaller than the order is
// CUSOLVER_STATUS_INVALID_VALUE from Dgetrs. (cuSOLVER 13.0's Dgetrf and
// Dgetrf_bufferSize do not check lda or the sizes: on an H200 they returned
// success, and Dgetrf with n = -1 faulted on the device, so they are not
// called with bad input here.)
func TestGPUBadInput(t *testing.T) {
	h := requireGPU(t)
	const m = 8
	a := gputest.Alloc[float64](t, m*m)
	ipiv, info, b := gputest.Alloc[int32](t, m), gputest.Alloc[int32](t, 1), gputest.Alloc[float64](t, m)
	for _, c := range []struct {
		name string
		call func() error
	}{
		{"Dgetrs lda 4 < n 8", func() error { return Dgetrs(h, cublas.OP_N, m, 1, a, 4, ipiv, b, m, info) }},
		{"Dgetrs ldb 4 < n 8", func() error { return Dgetrs(h, cublas.OP_N, m, 1, a, m, ipiv, b, 4, info) }},
		{"Dgetrs n -1", func() error { return Dgetrs(h, cublas.OP_N, -1, 1, a, m, ipiv, b, m, info) }},
	} {
		err := c.call()
		var st Status
		if !errors.As(err, &st) || !errors.Is(err, STATUS_INVALID_VALUE) {
			t.Errorf("%s: %v, want CUSOLVER_STATUS_INVALID_VALUE", c.name, err)
		}
	}
	if err := cudart.DeviceSynchronize(); err != nil {
		t.Errorf("DeviceSynchronize: %v", err)
	}
}
