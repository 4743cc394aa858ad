package cusparse

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/gocuda/cuda/cudart"
	"github.com/gocuda/cuda/internal/gputest"
)

// requireGPU skips the test without cuSPARSE or a GPU, and returns a handle
// destroyed at cleanup.
func requireGPU(t *testing.T) Handle {
	t.Helper()
	gputest.Require(t, "cuSPARSE", Load)
	var h Handle
	if err := Create(&h); err != nil {
		t.Fatalf("Create: %v", err)
	}
	t.Cleanup(func() { Destroy(h) })
	return h
}

// device copies s to device memory, freed at cleanup, for cuSPARSE's
// untyped pointers.
func device[T any](t *testing.T, s []T) unsafe.Pointer {
	t.Helper()
	return unsafe.Pointer(gputest.Device(t, s))
}

// csr is a float32 CSR matrix in host memory.
type csr struct {
	rows, cols int
	offsets    []int32
	columns    []int32
	values     []float32
}

// randomCSR returns a rows×cols matrix with about density·rows·cols
// nonzeros in [-1, 1).
func randomCSR(rng *rand.Rand, rows, cols int, density float64) csr {
	a := csr{rows: rows, cols: cols, offsets: make([]int32, 1, rows+1)}
	for range rows {
		for j := range cols {
			if rng.Float64() < density {
				a.columns = append(a.columns, int32(j))
				a.values = append(a.values, 2*rng.Float32()-1)
			}
		}
		a.offsets = append(a.offsets, int32(len(a.values)))
	}
	return a
}

// descriptors puts a, x and y on the device and returns their cuSPARSE
// descriptors, destroyed (and the memory freed) at cleanup.
func descriptors(t *testing.T, a csr, x, y []float32) (SpMatDescr, DnVecDescr, DnVecDescr, unsafe.Pointer) {
	t.Helper()
	var mat SpMatDescr
	if err := CreateCsr(&mat, int64(a.rows), int64(a.cols), int64(len(a.values)),
		device(t, a.offsets), device(t, a.columns), device(t, a.values),
		INDEX_32I, INDEX_32I, INDEX_BASE_ZERO, cudart.R_32F); err != nil {
		t.Fatalf("CreateCsr: %v", err)
	}
	t.Cleanup(func() { DestroySpMat(ConstSpMatDescr(mat)) })
	vec := func(s []float32) (DnVecDescr, unsafe.Pointer) {
		var v DnVecDescr
		p := device(t, s)
		if err := CreateDnVec(&v, int64(len(s)), p, cudart.R_32F); err != nil {
			t.Fatalf("CreateDnVec: %v", err)
		}
		t.Cleanup(func() { DestroyDnVec(ConstDnVecDescr(v)) })
		return v, p
	}
	vx, _ := vec(x)
	vy, py := vec(y)
	return mat, vx, vy, py
}

// TestGPUSpMV computes y = 2·A·x + 0.5·y with the generic SpMV
// (CSR, 32-bit indices, float32, CUSPARSE_SPMV_ALG_DEFAULT, buffer from
// SpMV_bufferSize) on a random 100×80 matrix with about 10% nonzeros, and
// checks every element against the CPU within 1e-4.
func TestGPUSpMV(t *testing.T) {
	h := requireGPU(t)
	const rows, cols = 100, 80
	rng := rand.New(rand.NewPCG(5, 6))
	a := randomCSR(rng, rows, cols, 0.1)
	x, y := make([]float32, cols), make([]float32, rows)
	for i := range x {
		x[i] = 2*rng.Float32() - 1
	}
	for i := range y {
		y[i] = 2*rng.Float32() - 1
	}
	alpha, beta := float32(2), float32(0.5)
	want := make([]float64, rows)
	for i := range rows {
		var s float64
		for p := a.offsets[i]; p < a.offsets[i+1]; p++ {
			s += float64(a.values[p]) * float64(x[a.columns[p]])
		}
		want[i] = float64(alpha)*s + float64(beta)*float64(y[i])
	}
	t.Logf("%d×%d, %d nonzeros", rows, cols, len(a.values))

	mat, vx, vy, py := descriptors(t, a, x, y)
	var size uint64
	if err := SpMV_bufferSize(h, OPERATION_NON_TRANSPOSE, unsafe.Pointer(&alpha), ConstSpMatDescr(mat), ConstDnVecDescr(vx), unsafe.Pointer(&beta), vy, cudart.R_32F, SPMV_ALG_DEFAULT, &size); err != nil {
		t.Fatalf("SpMV_bufferSize: %v", err)
	}
	var buf unsafe.Pointer
	if size > 0 {
		if err := cudart.Malloc(&buf, size); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cudart.Free(buf) })
	}
	if err := SpMV(h, OPERATION_NON_TRANSPOSE, unsafe.Pointer(&alpha), ConstSpMatDescr(mat), ConstDnVecDescr(vx), unsafe.Pointer(&beta), vy, cudart.R_32F, SPMV_ALG_DEFAULT, buf); err != nil {
		t.Fatalf("SpMV: %v", err)
	}
	if err := cudart.DeviceSynchronize(); err != nil {
		t.Fatalf("DeviceSynchronize: %v", err)
	}
	got := make([]float32, rows)
	if err := cudart.Memcpy(unsafe.Pointer(&got[0]), py, rows*4, cudart.MemcpyDeviceToHost); err != nil {
		t.Fatal(err)
	}
	for i := range got {
		if math.Abs(float64(got[i])-want[i]) > 1e-4 {
			t.Fatalf("y[%d] = %v, CPU %v", i, got[i], want[i])
		}
	}
}

// TestGPUBadInput: a negative size (rows of CreateCsr, size of
// CreateDnVec) is CUSPARSE_STATUS_INVALID_VALUE, which cusparseStatus_t's
// documentation gives as its example; a null handle to SpMV_bufferSize is
// a cusparse.Status (logged; the documentation does not say which).
func TestGPUBadInput(t *testing.T) {
	h := requireGPU(t)
	rng := rand.New(rand.NewPCG(7, 8))
	a := randomCSR(rng, 10, 8, 0.3)
	x, y := make([]float32, 8), make([]float32, 10)
	mat, vx, vy, _ := descriptors(t, a, x, y)
	offsets, columns, values := device(t, a.offsets), device(t, a.columns), device(t, a.values)
	vals := device(t, x)

	var m SpMatDescr
	err := CreateCsr(&m, -1, 8, int64(len(a.values)), offsets, columns, values, INDEX_32I, INDEX_32I, INDEX_BASE_ZERO, cudart.R_32F)
	if err == nil {
		DestroySpMat(ConstSpMatDescr(m))
	}
	if !errors.Is(err, STATUS_INVALID_VALUE) {
		t.Errorf("CreateCsr rows -1: %v, want CUSPARSE_STATUS_INVALID_VALUE", err)
	}
	var v DnVecDescr
	err = CreateDnVec(&v, -1, vals, cudart.R_32F)
	if err == nil {
		DestroyDnVec(ConstDnVecDescr(v))
	}
	if !errors.Is(err, STATUS_INVALID_VALUE) {
		t.Errorf("CreateDnVec size -1: %v, want CUSPARSE_STATUS_INVALID_VALUE", err)
	}

	alpha, beta := float32(1), float32(0)
	var size uint64
	err = SpMV_bufferSize(0, OPERATION_NON_TRANSPOSE, unsafe.Pointer(&alpha), ConstSpMatDescr(mat), ConstDnVecDescr(vx), unsafe.Pointer(&beta), vy, cudart.R_32F, SPMV_ALG_DEFAULT, &size)
	var st Status
	if !errors.As(err, &st) {
		t.Errorf("SpMV_bufferSize, null handle: %v (%T), want a cusparse.Status", err, err)
	} else {
		t.Logf("SpMV_bufferSize, null handle: %v", st)
	}
	// The handle is still good.
	if err := SpMV_bufferSize(h, OPERATION_NON_TRANSPOSE, unsafe.Pointer(&alpha), ConstSpMatDescr(mat), ConstDnVecDescr(vx), unsafe.Pointer(&beta), vy, cudart.R_32F, SPMV_ALG_DEFAULT, &size); err != nil {
		t.Errorf("SpMV_bufferSize: %v", err)
	}
}
