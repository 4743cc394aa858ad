package cublaslt

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/gocuda/cuda/cublas"
	"github.com/gocuda/cuda/cudart"
	"github.com/gocuda/cuda/internal/gputest"
)

// requireGPU skips the test without cuBLASLt or a GPU, and returns a handle
// destroyed at cleanup.
func requireGPU(t *testing.T) Handle {
	t.Helper()
	gputest.Require(t, "cuBLASLt", Load)
	var h Handle
	if err := Create(&h); err != nil {
		t.Fatalf("Create: %v", err)
	}
	t.Cleanup(func() { Destroy(h) })
	return h
}

// layout creates a float32 matrix layout, destroyed at cleanup.
func layout(t *testing.T, rows, cols uint64, ld int64) (MatrixLayout, error) {
	t.Helper()
	var l MatrixLayout
	err := MatrixLayoutCreate(&l, cudart.R_32F, rows, cols, ld)
	if err == nil {
		t.Cleanup(func() { MatrixLayoutDestroy(l) })
	}
	return l, err
}

// matmulDesc creates a COMPUTE_32F descriptor with op(A) = A or Aᵀ,
// destroyed at cleanup.
func matmulDesc(t *testing.T, transA bool) MatmulDesc {
	t.Helper()
	var d MatmulDesc
	if err := MatmulDescCreate(&d, cublas.COMPUTE_32F, cudart.R_32F); err != nil {
		t.Fatalf("MatmulDescCreate: %v", err)
	}
	t.Cleanup(func() { MatmulDescDestroy(d) })
	op := cublas.OP_N
	if transA {
		op = cublas.OP_T
	}
	if err := MatmulDescSetAttribute(d, MATMUL_DESC_TRANSA, unsafe.Pointer(&op), uint64(unsafe.Sizeof(op))); err != nil {
		t.Fatalf("MatmulDescSetAttribute(TRANSA): %v", err)
	}
	return d
}

const workspaceSize = 4 << 20

// preference creates a matmul preference allowing workspaceSize bytes of
// workspace, destroyed at cleanup.
func preference(t *testing.T) MatmulPreference {
	t.Helper()
	var p MatmulPreference
	if err := MatmulPreferenceCreate(&p); err != nil {
		t.Fatalf("MatmulPreferenceCreate: %v", err)
	}
	t.Cleanup(func() { MatmulPreferenceDestroy(p) })
	ws := uint64(workspaceSize)
	if err := MatmulPreferenceSetAttribute(p, MATMUL_PREF_MAX_WORKSPACE_BYTES, unsafe.Pointer(&ws), 8); err != nil {
		t.Fatalf("MatmulPreferenceSetAttribute(MAX_WORKSPACE_BYTES): %v", err)
	}
	return p
}

// TestGPUMatmul runs one cublasLtMatmul, D = C = 1.5·op(A)·B + 0.5·C in
// float32, column-major, with A plain and transposed: the algorithm comes
// from MatmulAlgoGetHeuristic under a workspace preference, and every
// element of D must match a float64 CPU product within 1e-4.
func TestGPUMatmul(t *testing.T) {
	h := requireGPU(t)
	const m, n, k = 64, 48, 32
	rng := rand.New(rand.NewPCG(1, 2))
	fill := func(size int) []float32 {
		s := make([]float32, size)
		for i := range s {
			s[i] = rng.Float32() - 0.5
		}
		return s
	}
	pref := preference(t)
	work := unsafe.Pointer(gputest.Alloc[byte](t, int(workspaceSize)))
	for _, transA := range []bool{false, true} {
		a, b, c := fill(m*k), fill(k*n), fill(m*n)
		// A is m×k (lda m), or k×m (lda k) when transposed.
		arows, acols := m, k
		if transA {
			arows, acols = k, m
		}
		at := func(i, l int) float64 { // op(A)[i, l]
			if transA {
				return float64(a[l+i*k])
			}
			return float64(a[i+l*m])
		}
		alpha, beta := float32(1.5), float32(0.5)
		want := make([]float64, m*n)
		for j := range n {
			for i := range m {
				var s float64
				for l := range k {
					s += at(i, l) * float64(b[l+j*k])
				}
				want[i+j*m] = float64(alpha)*s + float64(beta)*float64(c[i+j*m])
			}
		}

		desc := matmulDesc(t, transA)
		al, err := layout(t, uint64(arows), uint64(acols), int64(arows))
		if err != nil {
			t.Fatalf("MatrixLayoutCreate(A): %v", err)
		}
		bl, err := layout(t, k, n, k)
		if err != nil {
			t.Fatalf("MatrixLayoutCreate(B): %v", err)
		}
		cl, err := layout(t, m, n, m)
		if err != nil {
			t.Fatalf("MatrixLayoutCreate(C): %v", err)
		}
		var results [4]MatmulHeuristicResult
		var count int32
		if err := MatmulAlgoGetHeuristic(h, desc, al, bl, cl, cl, pref, int32(len(results)), &results[0], &count); err != nil {
			t.Fatalf("MatmulAlgoGetHeuristic: %v", err)
		}
		if count < 1 || results[0].State != cublas.STATUS_SUCCESS || results[0].WorkspaceSize > workspaceSize {
			t.Fatalf("MatmulAlgoGetHeuristic: %d results, first state %v, workspace %d", count, results[0].State, results[0].WorkspaceSize)
		}
		da, db, dc := unsafe.Pointer(gputest.Device(t, a)), unsafe.Pointer(gputest.Device(t, b)), unsafe.Pointer(gputest.Device(t, c))
		if err := Matmul(h, desc, unsafe.Pointer(&alpha), da, al, db, bl, unsafe.Pointer(&beta), dc, cl, dc, cl, &results[0].Algo, work, workspaceSize, 0); err != nil {
			t.Fatalf("Matmul (A transposed %v): %v", transA, err)
		}
		if err := cudart.DeviceSynchronize(); err != nil {
			t.Fatalf("DeviceSynchronize: %v", err)
		}
		got := make([]float32, m*n)
		if err := cudart.Memcpy(unsafe.Pointer(&got[0]), dc, m*n*4, cudart.MemcpyDeviceToHost); err != nil {
			t.Fatal(err)
		}
		for i := range got {
			if math.Abs(float64(got[i])-want[i]) > 1e-4 {
				t.Fatalf("Matmul (A transposed %v): D[%d] = %v, CPU %v", transA, i, got[i], want[i])
			}
		}
	}
}

// TestGPUBadInput: asking MatmulAlgoGetHeuristic for no algorithms is
// CUBLAS_STATUS_INVALID_VALUE (documented), and a layout for A whose
// leading dimension (32) is smaller than its rows (64) is refused by the
// library with a cublas.Status: by MatrixLayoutCreate, by the heuristic or
// by Matmul, whichever checks it first (the test logs which and what).
// A's memory holds rows·cols elements, so a library that did not check
// would still read inside it.
func TestGPUBadInput(t *testing.T) {
	h := requireGPU(t)
	const m, n, k = 64, 48, 32
	desc := matmulDesc(t, false)
	pref := preference(t)
	bl, err := layout(t, k, n, k)
	if err != nil {
		t.Fatalf("MatrixLayoutCreate(B): %v", err)
	}
	cl, err := layout(t, m, n, m)
	if err != nil {
		t.Fatalf("MatrixLayoutCreate(C): %v", err)
	}
	good, err := layout(t, m, k, m)
	if err != nil {
		t.Fatalf("MatrixLayoutCreate(A): %v", err)
	}
	var result MatmulHeuristicResult
	var count int32
	if err := MatmulAlgoGetHeuristic(h, desc, good, bl, cl, cl, pref, 0, &result, &count); !errors.Is(err, cublas.STATUS_INVALID_VALUE) {
		t.Errorf("MatmulAlgoGetHeuristic, requestedAlgoCount 0: %v, want CUBLAS_STATUS_INVALID_VALUE", err)
	}

	// check fails the test unless err is a cublas.Status, and logs it.
	check := func(what string, err error) {
		t.Helper()
		var st cublas.Status
		if !errors.As(err, &st) {
			t.Fatalf("%s, lda %d < rows %d: %v (%T), want a cublas.Status", what, k, m, err, err)
		}
		t.Logf("%s, lda %d < rows %d: %v", what, k, m, st)
		if !errors.Is(err, cublas.STATUS_INVALID_VALUE) {
			t.Logf("note: not CUBLAS_STATUS_INVALID_VALUE")
		}
	}
	bad, err := layout(t, m, k, k) // rows m = 64, ld k = 32
	if err != nil {
		check("MatrixLayoutCreate", err)
		return
	}
	err = MatmulAlgoGetHeuristic(h, desc, bad, bl, cl, cl, pref, 1, &result, &count)
	if err != nil {
		check("MatmulAlgoGetHeuristic", err)
		return
	}
	algo := &result.Algo
	if count < 1 {
		t.Logf("MatmulAlgoGetHeuristic: no algorithm and no error; Matmul with a null algo")
		algo = nil
	} else if result.State != cublas.STATUS_SUCCESS {
		t.Logf("MatmulAlgoGetHeuristic: first result's state %v; Matmul with a null algo", result.State)
		algo = nil
	}
	da, db, dc := unsafe.Pointer(gputest.Alloc[float32](t, int(m*k))), unsafe.Pointer(gputest.Alloc[float32](t, int(k*n))), unsafe.Pointer(gputest.Alloc[float32](t, int(m*n)))
	work := unsafe.Pointer(gputest.Alloc[byte](t, int(workspaceSize)))
	one := float32(1)
	err = Matmul(h, desc, unsafe.Pointer(&one), da, bad, db, bl, unsafe.Pointer(&one), dc, cl, dc, cl, algo, work, workspaceSize, 0)
	if serr := cudart.DeviceSynchronize(); serr != nil {
		t.Errorf("DeviceSynchronize after Matmul: %v", serr)
	}
	if err == nil {
		t.Fatalf("MatrixLayoutCreate, MatmulAlgoGetHeuristic and Matmul all accepted lda %d < rows %d", k, m)
	}
	check("Matmul", err)
}
