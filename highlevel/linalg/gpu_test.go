package linalg

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"unsafe"

	"github.com/gocuda/cuda/cublas"
	"github.com/gocuda/cuda/cudart"
	"github.com/gocuda/cuda/cusolver"
	"github.com/gocuda/cuda/cusparse"
	"github.com/gocuda/cuda/highlevel"
	"github.com/gocuda/cuda/internal/gputest"
)

// gpu skips the test without a GPU or without cuBLAS, and returns device 0.
func gpu(t *testing.T) highlevel.Device {
	t.Helper()
	gputest.Require(t, "cuBLAS", cublas.Load)
	return 0
}

// tolerance is the largest difference from the CPU accepted for an
// element that sums k products of numbers in [-2, 2).
func tolerance[T Float](k int) float64 {
	if _, ok := any(T(0)).(float32); ok {
		return 1e-5 * 4 * float64(k+1)
	}
	return 1e-13 * 4 * float64(k+1)
}

func random[T Float](rng *rand.Rand, n int) []T {
	s := make([]T, n)
	for i := range s {
		s[i] = T(rng.Float64()*2 - 1)
	}
	return s
}

func arrayFrom[T any](t *testing.T, s []T) *highlevel.Array[T] {
	t.Helper()
	a, err := highlevel.ArrayFrom(nil, s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Free() })
	return a
}

func newStream(t *testing.T, d highlevel.Device) *highlevel.Stream {
	t.Helper()
	s, err := highlevel.NewStream(d, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// toHost waits for s, then copies a back.
func toHost[T any](t *testing.T, s *highlevel.Stream, a *highlevel.Array[T]) []T {
	t.Helper()
	if s != nil {
		if err := s.Synchronize(); err != nil {
			t.Fatal(err)
		}
	}
	v, err := a.ToHost()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// gemmCPU returns alpha·op(a)·op(b) + beta·c, row-major, in float64.
func gemmCPU[T Float](ta, tb Op, m, n, k int, alpha T, a, b []T, beta T, c []T) []float64 {
	out := make([]float64, m*n)
	for i := range m {
		for j := range n {
			var s float64
			for l := range k {
				x, y := a[i*k+l], b[l*n+j]
				if ta == Trans {
					x = a[l*m+i]
				}
				if tb == Trans {
					y = b[j*k+l]
				}
				s += float64(x) * float64(y)
			}
			out[i*n+j] = float64(alpha)*s + float64(beta)*float64(c[i*n+j])
		}
	}
	return out
}

// near fails the test at the first element of got more than tol from want.
func near[T Float](t *testing.T, what string, got []T, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d elements, want %d", what, len(got), len(want))
	}
	for i := range want {
		if d := math.Abs(float64(got[i]) - want[i]); !(d <= tol) {
			t.Fatalf("%s: element %d = %v, CPU %v (tolerance %g)", what, i, got[i], want[i], tol)
		}
	}
}

func testMatMul[T Float](t *testing.T, s *highlevel.Stream, m, k, n int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(uint64(m), uint64(n)))
	a, b := random[T](rng, m*k), random[T](rng, k*n)
	c := arrayFrom(t, make([]T, m*n))
	if err := MatMul(s, arrayFrom(t, a), arrayFrom(t, b), c, m, n, k); err != nil {
		t.Fatalf("MatMul %d×%d·%d×%d: %v", m, k, k, n, err)
	}
	want := gemmCPU(NoTrans, NoTrans, m, n, k, 1, a, b, 0, make([]T, m*n))
	near(t, fmt.Sprintf("%T MatMul %d×%d·%d×%d", T(0), m, k, k, n), toHost(t, s, c), want, tolerance[T](k))
}

// TestGPUMatMul multiplies row-major matrices of odd sizes through cuBLAS,
// on the default stream and on a stream of its own, against the CPU.
func TestGPUMatMul(t *testing.T) {
	s := newStream(t, gpu(t))
	for _, sz := range [][3]int{{1, 1, 1}, {67, 45, 33}, {128, 256, 64}, {3, 500, 2}} {
		testMatMul[float32](t, nil, sz[0], sz[1], sz[2])
		testMatMul[float64](t, s, sz[0], sz[1], sz[2])
	}
}

func testGemm[T Float](t *testing.T, s *highlevel.Stream, ta, tb Op, m, n, k int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(uint64(ta), uint64(tb)))
	a, b, c := random[T](rng, m*k), random[T](rng, k*n), random[T](rng, m*n)
	alpha, beta := T(1.5), T(-0.75)
	dc := arrayFrom(t, c)
	if err := Gemm(s, ta, tb, m, n, k, alpha, arrayFrom(t, a), arrayFrom(t, b), beta, dc); err != nil {
		t.Fatalf("Gemm %v %v: %v", ta, tb, err)
	}
	want := gemmCPU(ta, tb, m, n, k, alpha, a, b, beta, c)
	near(t, fmt.Sprintf("%T Gemm %v %v %d×%d×%d", T(0), ta, tb, m, n, k), toHost(t, s, dc), want, tolerance[T](k))
}

// TestGPUGemm checks c = alpha·op(a)·op(b) + beta·c for the four
// combinations of transposes, on non-square matrices, against the CPU.
func TestGPUGemm(t *testing.T) {
	s := newStream(t, gpu(t))
	for _, ta := range []Op{NoTrans, Trans} {
		for _, tb := range []Op{NoTrans, Trans} {
			testGemm[float32](t, s, ta, tb, 7, 5, 3)
			testGemm[float64](t, nil, ta, tb, 33, 17, 65)
		}
	}
}

func testBatched[T Float](t *testing.T, s *highlevel.Stream, ta, tb Op, m, n, k, batch, strideB int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(uint64(batch), uint64(strideB)))
	strideA, strideC := m*k+1, m*n+3 // gaps, which must stay as they are
	a := random[T](rng, (batch-1)*strideA+m*k)
	b := random[T](rng, (batch-1)*strideB+k*n)
	c := random[T](rng, (batch-1)*strideC+m*n)
	alpha, beta := T(0.5), T(2)
	dc := arrayFrom(t, c)
	if err := GemmStridedBatched(s, ta, tb, m, n, k, alpha, arrayFrom(t, a), strideA, arrayFrom(t, b), strideB, beta, dc, strideC, batch); err != nil {
		t.Fatalf("GemmStridedBatched: %v", err)
	}
	want := make([]float64, len(c))
	for i, v := range c {
		want[i] = float64(v) // the gaps
	}
	for i := range batch {
		w := gemmCPU(ta, tb, m, n, k, alpha, a[i*strideA:], b[i*strideB:], beta, c[i*strideC:])
		copy(want[i*strideC:], w)
	}
	near(t, fmt.Sprintf("%T GemmStridedBatched %v %v batch %d, strideB %d", T(0), ta, tb, batch, strideB), toHost(t, s, dc), want, tolerance[T](k))
}

// TestGPUGemmStridedBatched checks batches of products against the CPU,
// with gaps between the matrices (left as they were), transposes, and a
// stride of 0 that uses one b for every product.
func TestGPUGemmStridedBatched(t *testing.T) {
	s := newStream(t, gpu(t))
	testBatched[float32](t, s, NoTrans, NoTrans, 5, 4, 3, 4, 3*4+2)
	testBatched[float64](t, nil, Trans, NoTrans, 9, 6, 11, 3, 0)
	testBatched[float32](t, nil, NoTrans, Trans, 2, 3, 4, 5, 0)
	testBatched[float64](t, s, Trans, Trans, 8, 8, 8, 2, 64)
}

func testGemv[T Float](t *testing.T, s *highlevel.Stream, trans Op, m, n int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(uint64(m), uint64(trans)))
	in, out := n, m
	if trans == Trans {
		in, out = m, n
	}
	a, x, y := random[T](rng, m*n), random[T](rng, in), random[T](rng, out)
	alpha, beta := T(-1.25), T(0.5)
	dy := arrayFrom(t, y)
	if err := Gemv(s, trans, m, n, alpha, arrayFrom(t, a), arrayFrom(t, x), beta, dy); err != nil {
		t.Fatalf("Gemv: %v", err)
	}
	// A matrix-vector product is a product with a one-column matrix.
	want := gemmCPU(trans, NoTrans, out, 1, in, alpha, a, x, beta, y)
	near(t, fmt.Sprintf("%T Gemv %v %d×%d", T(0), trans, m, n), toHost(t, s, dy), want, tolerance[T](in))
}

// TestGPUGemv checks y = alpha·op(a)·x + beta·y on a row-major matrix, as
// stored and transposed, against the CPU.
func TestGPUGemv(t *testing.T) {
	s := newStream(t, gpu(t))
	for _, trans := range []Op{NoTrans, Trans} {
		testGemv[float32](t, s, trans, 37, 19)
		testGemv[float64](t, nil, trans, 5, 130)
	}
}

func testLevel1[T Float](t *testing.T, s *highlevel.Stream, n int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(uint64(n), 1))
	x, y := random[T](rng, n), random[T](rng, n)
	dx, dy := arrayFrom(t, x), arrayFrom(t, y)
	r := arrayFrom(t, []T{7, 7})
	if err := Dot(s, dx, dy, r); err != nil {
		t.Fatalf("Dot: %v", err)
	}
	var dot float64
	for i := range n {
		dot += float64(x[i]) * float64(y[i])
	}
	near(t, fmt.Sprintf("%T Dot of %d", T(0), n), toHost(t, s, r), []float64{dot, 7}, tolerance[T](n))

	alpha := T(3)
	if err := Axpy(s, alpha, dx, dy); err != nil {
		t.Fatalf("Axpy: %v", err)
	}
	want := make([]float64, n)
	for i := range want {
		want[i] = float64(alpha)*float64(x[i]) + float64(y[i])
	}
	near(t, fmt.Sprintf("%T Axpy of %d", T(0), n), toHost(t, s, dy), want, tolerance[T](1))
}

// TestGPULevel1 checks Dot (into device memory, the element after the
// result untouched) and Axpy against the CPU, and that the dot product of
// empty arrays is 0.
func TestGPULevel1(t *testing.T) {
	d := gpu(t)
	s := newStream(t, d)
	for _, n := range []int{1, 1000, 4097} {
		testLevel1[float32](t, s, n)
		testLevel1[float64](t, nil, n)
	}
	r := arrayFrom(t, []float64{7})
	e, _ := highlevel.AllocArray[float64](nil, 0)
	if err := Dot(s, e, e, r); err != nil {
		t.Fatalf("Dot of empty arrays: %v", err)
	}
	if v := toHost(t, s, r); v[0] != 0 {
		t.Errorf("Dot of empty arrays = %v, want 0", v[0])
	}
}

// TestGPUHandles checks the per-device handles: the same for the same
// device, set to the stream of the call, destroyed by ClearCaches (then
// the next call makes another: a BLAS taken before goes on working), and
// the libraries' own errors for bad input.
func TestGPUHandles(t *testing.T) {
	d := gpu(t)
	gputest.Require(t, "cuSOLVER", cusolver.Load)
	b1, err := BLASOf(d)
	if err != nil {
		t.Fatal(err)
	}
	if b2, err := BLASOf(d); b2 != b1 || err != nil {
		t.Errorf("BLASOf twice gave %p and %p (%v)", b1, b2, err)
	}
	if b1.Device() != d {
		t.Errorf("Device = %v, want %v", b1.Device(), d)
	}
	s := newStream(t, d)
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

	// ClearCaches destroys the handles; what was taken before makes
	// another at its next call.
	var before, after cublas.Handle
	b1.Do(nil, func(h cublas.Handle) error { before = h; return nil })
	highlevel.ClearCaches()
	if err := b1.Do(nil, func(h cublas.Handle) error { after = h; return nil }); err != nil {
		t.Errorf("BLAS after ClearCaches: %v", err)
	}
	if err := sv.Do(nil, func(cusolver.Handle) error { return nil }); err != nil {
		t.Errorf("Solver after ClearCaches: %v", err)
	}
	if b3, err := BLASOf(d); err != nil || b3 != b1 {
		t.Fatalf("BLASOf after ClearCaches = %p (%v), want %p", b3, err, b1)
	}
	t.Logf("cuBLAS handle %#x before ClearCaches, %#x after", before, after)
	testMatMul[float32](t, nil, 16, 16, 16)

	// Bad sizes are refused before cuBLAS is called.
	small := arrayFrom(t, make([]float32, 10))
	if err := MatMul(nil, small, small, small, 4, 4, 4); err == nil {
		t.Error("MatMul of 4×4 matrices in 10-element arrays succeeded")
	}
	closed, err := highlevel.NewStream(d, nil)
	if err != nil {
		t.Fatal(err)
	}
	closed.Close()
	if err := MatMul(closed, small, small, small, 1, 1, 1); !errors.Is(err, highlevel.ErrClosed) {
		t.Errorf("MatMul on a closed stream: %v, want ErrClosed", err)
	}
	freed, err := highlevel.ArrayFrom(nil, make([]float32, 4))
	if err != nil {
		t.Fatal(err)
	}
	freed.Free()
	part, err := small.Slice(0, 4)
	if err != nil {
		t.Fatal(err)
	}
	if err := Axpy(nil, 1, part, freed); !errors.Is(err, highlevel.ErrFreed) {
		t.Errorf("Axpy into freed memory: %v, want ErrFreed", err)
	}
}

// TestGPUPointerMode checks that a Do that leaves the handle in device
// pointer mode does not break the package's functions, which pass alpha
// and beta from the host.
func TestGPUPointerMode(t *testing.T) {
	d := gpu(t)
	b, err := BLASOf(d)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Do(nil, func(h cublas.Handle) error { return cublas.SetPointerMode(h, cublas.POINTER_MODE_DEVICE) }); err != nil {
		t.Fatal(err)
	}
	testMatMul[float64](t, nil, 9, 8, 7)
	var mode cublas.PointerMode
	if err := b.Do(nil, func(h cublas.Handle) error { return cublas.GetPointerMode(h, &mode) }); err != nil {
		t.Fatal(err)
	}
	if mode != cublas.POINTER_MODE_HOST {
		t.Errorf("pointer mode after MatMul = %v, want CUBLAS_POINTER_MODE_HOST", mode)
	}
}

// TestGPUConcurrent runs products from 8 goroutines, each on a stream of
// its own, through the device's one cuBLAS handle: each result must be its
// own, which needs the stream set and the call made under one lock.
func TestGPUConcurrent(t *testing.T) {
	d := gpu(t)
	const m, k, n = 64, 32, 48
	var wg sync.WaitGroup
	for g := range 8 {
		rng := rand.New(rand.NewPCG(uint64(g), 9))
		a, b := random[float32](rng, m*k), random[float32](rng, k*n)
		da, db, dc := arrayFrom(t, a), arrayFrom(t, b), arrayFrom(t, make([]float32, m*n))
		s := newStream(t, d)
		want := gemmCPU(NoTrans, NoTrans, m, n, k, 1, a, b, 0, make([]float32, m*n))
		wg.Go(func() {
			for i := range 50 {
				if err := MatMul(s, da, db, dc, m, n, k); err != nil {
					t.Errorf("goroutine %d, product %d: %v", g, i, err)
					return
				}
			}
			if err := s.Synchronize(); err != nil {
				t.Error(err)
				return
			}
			got, err := dc.ToHost()
			if err != nil {
				t.Error(err)
				return
			}
			for i := range want {
				if math.Abs(float64(got[i])-want[i]) > tolerance[float32](k) {
					t.Errorf("goroutine %d: c[%d] = %v, CPU %v", g, i, got[i], want[i])
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestGPUSparse computes y = A·x + y with cusparseSpMV through the device's
// cuSPARSE handle on a stream, for a 3×4 CSR matrix in highlevel arrays, and
// reads y back.
func TestGPUSparse(t *testing.T) {
	d := gpu(t)
	gputest.Require(t, "cuSPARSE", cusparse.Load)
	// A = [1 0 2 0; 0 0 3 0; 4 5 0 6]
	offsets := arrayFrom(t, []int32{0, 2, 3, 6})
	columns := arrayFrom(t, []int32{0, 2, 2, 0, 1, 3})
	values := arrayFrom(t, []float32{1, 2, 3, 4, 5, 6})
	x := arrayFrom(t, []float32{1, 2, 3, 4})
	y := arrayFrom(t, []float32{10, 20, 30})
	want := []float64{1*1 + 2*3 + 10, 3*3 + 20, 4*1 + 5*2 + 6*4 + 30}
	sp, err := SparseOf(d)
	if err != nil {
		t.Fatal(err)
	}
	if sp2, _ := SparseOf(d); sp2 != sp {
		t.Errorf("SparseOf twice gave %p and %p", sp, sp2)
	}
	s := newStream(t, d)
	var buf *highlevel.Array[byte]
	err = sp.Do(s, func(h cusparse.Handle) error {
		var got cudart.Stream
		if err := cusparse.GetStream(h, &got); err != nil || got != s.Handle() {
			return fmt.Errorf("handle's stream = %#x (%v), want %#x", got, err, s.Handle())
		}
		var mat cusparse.SpMatDescr
		if err := cusparse.CreateCsr(&mat, 3, 4, 6, offsets.Ptr(), columns.Ptr(), values.Ptr(),
			cusparse.INDEX_32I, cusparse.INDEX_32I, cusparse.INDEX_BASE_ZERO, cudart.R_32F); err != nil {
			return err
		}
		defer cusparse.DestroySpMat(cusparse.ConstSpMatDescr(mat))
		var vx, vy cusparse.DnVecDescr
		if err := cusparse.CreateDnVec(&vx, 4, x.Ptr(), cudart.R_32F); err != nil {
			return err
		}
		defer cusparse.DestroyDnVec(cusparse.ConstDnVecDescr(vx))
		if err := cusparse.CreateDnVec(&vy, 3, y.Ptr(), cudart.R_32F); err != nil {
			return err
		}
		defer cusparse.DestroyDnVec(cusparse.ConstDnVecDescr(vy))
		alpha, beta := float32(1), float32(1)
		var size uint64
		if err := cusparse.SpMV_bufferSize(h, cusparse.OPERATION_NON_TRANSPOSE, unsafe.Pointer(&alpha), cusparse.ConstSpMatDescr(mat),
			cusparse.ConstDnVecDescr(vx), unsafe.Pointer(&beta), vy, cudart.R_32F, cusparse.SPMV_ALG_DEFAULT, &size); err != nil {
			return err
		}
		var err error
		if buf, err = highlevel.AllocArray[byte](nil, int(size)); err != nil {
			return err
		}
		return cusparse.SpMV(h, cusparse.OPERATION_NON_TRANSPOSE, unsafe.Pointer(&alpha), cusparse.ConstSpMatDescr(mat),
			cusparse.ConstDnVecDescr(vx), unsafe.Pointer(&beta), vy, cudart.R_32F, cusparse.SPMV_ALG_DEFAULT, buf.Ptr())
	})
	if err != nil {
		t.Fatal(err)
	}
	near(t, "SpMV", toHost(t, s, y), want, 1e-6)
	buf.Free()

	highlevel.ClearCaches()
	if err := sp.Do(nil, func(cusparse.Handle) error { return nil }); err != nil {
		t.Errorf("Sparse after ClearCaches: %v", err)
	}
}

// TestGPUFreeDuringCalls frees an array while another goroutine keeps
// queuing Axpy on it: each call either queues its work before the Free
// (which waits for it) or returns ErrFreed, never anything else.
func TestGPUFreeDuringCalls(t *testing.T) {
	gpu(t)
	x := arrayFrom(t, make([]float32, 1<<10))
	for range 50 {
		y, err := highlevel.ArrayFrom(nil, make([]float32, 1<<10))
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error)
		go func() {
			for {
				if err := Axpy(nil, 1, x, y); err != nil {
					done <- err
					return
				}
			}
		}()
		if err := y.Free(); err != nil {
			t.Fatal(err)
		}
		if err := <-done; !errors.Is(err, highlevel.ErrFreed) {
			t.Fatalf("Axpy on an array freed meanwhile: %v, want ErrFreed", err)
		}
	}
}

// TestGPUClearCachesDuringCalls calls Axpy, Dot, Gemv and MatMul from
// goroutines, each on a stream of its own, and on streams that capture
// them into graphs, while another calls highlevel.ClearCaches over and
// over: no call fails, and each result is right. Destroying a handle
// while another goroutine called cuBLAS on the device crashed in
// cublasDestroy or cublasSgemv before (issue 45).
func TestGPUClearCachesDuringCalls(t *testing.T) {
	d := gpu(t)
	const workers, n = 6, 256
	rounds := 400
	if testing.Short() {
		rounds = 100
	}
	ones := make([]float32, n*n)
	for i := range ones {
		ones[i] = 1
	}
	// Everything is made before the goroutines start: a capture refuses
	// copies from Go memory on the legacy default stream.
	var work []func()
	var checksMu sync.Mutex
	var checks []func()
	for w := range workers {
		s, err := highlevel.NewStream(d, &highlevel.StreamOptions{NonBlocking: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		x, y, r := arrayFrom(t, ones[:n]), arrayFrom(t, make([]float32, n)), arrayFrom(t, make([]float32, 1))
		a, yv, c := arrayFrom(t, ones), arrayFrom(t, make([]float32, n)), arrayFrom(t, make([]float32, 16))
		capture := w%3 == 2 // its calls go into a graph, launched at once
		work = append(work, func() {
			axpys := 0
			for i := range rounds {
				var g *highlevel.Graph
				if capture {
					if err := s.BeginCapture(highlevel.CaptureRelaxed); err != nil {
						t.Errorf("goroutine %d: BeginCapture: %v", w, err)
						return
					}
				}
				var err error
				switch i % 4 {
				case 0:
					err = Axpy(s, 1, x, y)
					axpys++
				case 1:
					err = Dot(s, x, x, r)
				case 2:
					err = Gemv(s, NoTrans, n, n, 2, a, x, 0, yv)
				case 3:
					err = MatMul(s, x, x, c, 4, 4, 1)
				}
				if capture {
					var endErr error
					if g, endErr = s.EndCapture(); endErr == nil {
						var ge *highlevel.GraphExec
						if ge, endErr = g.Instantiate(nil); endErr == nil {
							endErr = ge.Launch(s)
							ge.Close()
						}
						g.Close()
					}
					if err == nil {
						err = endErr
					}
				}
				if err != nil {
					t.Errorf("goroutine %d, call %d: %v", w, i, err)
					return
				}
			}
			if err := s.Synchronize(); err != nil {
				t.Errorf("goroutine %d: %v", w, err)
				return
			}
			// Read once no goroutine captures: a copy to Go memory
			// waits for the legacy default stream, which a capture holds
			// off.
			checksMu.Lock()
			defer checksMu.Unlock()
			checks = append(checks, func() {
				for _, check := range []struct {
					name string
					a    *highlevel.Array[float32]
					want float32
				}{{"Axpy", y, float32(axpys)}, {"Dot", r, n}, {"Gemv", yv, 2 * n}, {"MatMul", c, 1}} {
					v, err := check.a.ToHost()
					if err != nil {
						t.Error(err)
					} else if v[0] != check.want {
						t.Errorf("goroutine %d: %s gave %v, want %v", w, check.name, v[0], check.want)
					}
				}
			})
		})
	}
	var wg sync.WaitGroup
	for _, f := range work {
		wg.Go(f)
	}
	done := make(chan struct{})
	cleared := make(chan int)
	go func() {
		clears := 0
		for {
			select {
			case <-done:
				cleared <- clears
				return
			default:
			}
			highlevel.ClearCaches()
			clears++
		}
	}()
	wg.Wait()
	close(done)
	t.Logf("%d ClearCaches", <-cleared)
	for _, check := range checks {
		check()
	}
}
