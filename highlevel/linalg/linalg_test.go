package linalg

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/gocuda/cuda/cublas"
	"github.com/gocuda/cuda/cusolver"
	"github.com/gocuda/cuda/cusparse"
	"github.com/gocuda/cuda/highlevel"
)

// empty returns an array of no elements, which needs no GPU.
func empty[T any](t *testing.T) *highlevel.Array[T] {
	t.Helper()
	a, err := highlevel.AllocArray[T](nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestShapes checks that every function refuses bad sizes, strides,
// operations and nil arrays with an error naming the operation and what is
// wrong, before any CUDA call (none is loaded here), and that empty
// products do nothing.
func TestShapes(t *testing.T) {
	e := empty[float32](t)
	var null *highlevel.Array[float32]
	const big = math.MaxInt32 + 1
	for _, tc := range []struct {
		name string
		call func() error
		want string // in the error; "" for none
	}{
		{"MatMul nil a", func() error { return MatMul(nil, null, e, e, 1, 1, 1) }, "MatMul: nil object: nil *Array"},
		{"MatMul nil c", func() error { return MatMul(nil, e, e, null, 1, 1, 1) }, "MatMul: nil object: nil *Array"},
		{"MatMul m < 0", func() error { return MatMul(nil, e, e, e, -1, 1, 1) }, "MatMul: m is -1"},
		{"MatMul k < 0", func() error { return MatMul(nil, e, e, e, 1, 1, -1) }, "k is -1"},
		{"MatMul n too big", func() error { return MatMul(nil, e, e, e, 1, big, 1) }, "n is 2147483648"},
		{"MatMul k = 0", func() error { return MatMul(nil, e, e, e, 1, 1, 0) }, "inner dimension"},
		{"MatMul a short", func() error { return MatMul(nil, e, e, e, 2, 4, 3) }, "a is 2×3 but holds 0 elements"},
		{"MatMul empty m", func() error { return MatMul(nil, e, e, e, 0, 4, 3) }, ""},
		{"MatMul empty n", func() error { return MatMul(nil, e, e, e, 3, 0, 3) }, ""},
		{"Gemm bad op", func() error { return Gemm(nil, Op(2), NoTrans, 1, 1, 1, 1, e, e, 0, e) }, "Op(2) is neither"},
		{"Gemm bad op b", func() error { return Gemm(nil, NoTrans, Op(-1), 1, 1, 1, 1, e, e, 0, e) }, "Op(-1)"},
		{"Gemm Trans a short", func() error { return Gemm(nil, Trans, NoTrans, 2, 4, 3, 1, e, e, 0, e) }, "a is 3×2 but"},
		{"Gemm empty m", func() error { return Gemm(nil, NoTrans, Trans, 0, 4, 3, 1, e, e, 0, e) }, ""},
		{"Batched negative stride", func() error { return GemmStridedBatched(nil, NoTrans, NoTrans, 1, 1, 1, 1, e, -1, e, 0, 0, e, 1, 2) }, "must not be negative"},
		{"Batched batch < 0", func() error { return GemmStridedBatched(nil, NoTrans, NoTrans, 1, 1, 1, 1, e, 1, e, 1, 0, e, 1, -2) }, "batch is -2"},
		{"Batched batch too big", func() error { return GemmStridedBatched(nil, NoTrans, NoTrans, 1, 1, 1, 1, e, 1, e, 1, 0, e, 1, big) }, "batch is"},
		{"Batched overlap", func() error { return GemmStridedBatched(nil, NoTrans, NoTrans, 2, 2, 2, 1, e, 4, e, 4, 0, e, 3, 2) }, "strideC 3 is less than m·n = 4"},
		{"Batched overflow", func() error {
			return GemmStridedBatched(nil, NoTrans, NoTrans, 1, 1, 1, 1, e, math.MaxInt/2+1, e, 1, 0, e, 1, 3)
		}, "overflow"},
		{"Batched short", func() error { return GemmStridedBatched(nil, NoTrans, NoTrans, 2, 2, 2, 1, e, 0, e, 0, 0, e, 4, 3) }, "a holds 0 elements; 3 matrices of 2×2, 0 elements apart, need 4"},
		{"Batched empty", func() error { return GemmStridedBatched(nil, NoTrans, NoTrans, 2, 2, 2, 1, e, 4, e, 4, 0, e, 4, 0) }, ""},
		{"Gemv nil", func() error { return Gemv(nil, NoTrans, 1, 1, 1, e, null, 0, e) }, "Gemv: nil object: nil *Array"},
		{"Gemv bad op", func() error { return Gemv(nil, Op(5), 1, 1, 1, e, e, 0, e) }, "Op(5)"},
		{"Gemv m < 0", func() error { return Gemv(nil, NoTrans, -3, 1, 1, e, e, 0, e) }, "m is -3"},
		{"Gemv x empty", func() error { return Gemv(nil, NoTrans, 2, 0, 1, e, e, 0, e) }, "x is empty"},
		{"Gemv Trans x empty", func() error { return Gemv(nil, Trans, 0, 2, 1, e, e, 0, e) }, "x is empty"},
		{"Gemv a short", func() error { return Gemv(nil, NoTrans, 2, 3, 1, e, e, 0, e) }, "a is 2×3 but holds 0"},
		{"Gemv empty y", func() error { return Gemv(nil, Trans, 2, 0, 1, e, e, 0, e) }, ""},
		{"Axpy nil", func() error { return Axpy(nil, 1, null, e) }, "Axpy: nil object: nil *Array"},
		{"Axpy empty", func() error { return Axpy(nil, 2, e, e) }, ""},
		{"Dot nil result", func() error { return Dot(nil, e, e, null) }, "Dot: nil object: nil *Array"},
		{"Dot empty result", func() error { return Dot(nil, e, e, e) }, "result is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("error %v, want none", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want one with %q", err, tc.want)
			case err != nil && strings.Count(err.Error(), "linalg:") != 1:
				t.Errorf("error %q names the package more than once", err)
			}
		})
	}
}

// TestFits checks the arithmetic of the length check at its edges.
func TestFits(t *testing.T) {
	for _, tc := range []struct {
		length, rows, cols, stride, batch int
		ok                                bool
	}{
		{6, 2, 3, 0, 1, true},
		{5, 2, 3, 0, 1, false},
		{6, 2, 3, 0, 7, true},         // stride 0: one matrix for every product
		{6 + 2*10, 2, 3, 10, 3, true}, // the last matrix ends at the end
		{6 + 2*10 - 1, 2, 3, 10, 3, false},
		{math.MaxInt, 1, 1, math.MaxInt/2 + 1, 3, false}, // (batch-1)·stride overflows
		// The largest sizes cuBLAS takes do not overflow an int.
		{math.MaxInt, math.MaxInt32, math.MaxInt32, math.MaxInt32, math.MaxInt32, true},
		{math.MaxInt - 1, math.MaxInt32, math.MaxInt32, math.MaxInt32 * 2, math.MaxInt32, false},
	} {
		err := fits("a", tc.length, tc.rows, tc.cols, tc.stride, tc.batch)
		if (err == nil) != tc.ok {
			t.Errorf("fits(%d, %d×%d, stride %d, batch %d) = %v, want ok %v", tc.length, tc.rows, tc.cols, tc.stride, tc.batch, err, tc.ok)
		}
	}
}

// TestNilHandles calls every exported method of the handle types on a nil
// receiver: none panics, each error wraps highlevel.ErrNil.
func TestNilHandles(t *testing.T) {
	for _, v := range []any{(*BLAS)(nil), (*Solver)(nil), (*Sparse)(nil)} {
		rv := reflect.ValueOf(v)
		for i := range rv.NumMethod() {
			m := rv.Method(i)
			args := make([]reflect.Value, m.Type().NumIn())
			for j := range args {
				args[j] = reflect.Zero(m.Type().In(j))
			}
			out := m.Call(args)
			last := out[len(out)-1]
			if err, ok := last.Interface().(error); ok || last.Type() == reflect.TypeFor[error]() {
				if !errors.Is(err, highlevel.ErrNil) {
					t.Errorf("%T.%s on nil: %v, want ErrNil", v, rv.Type().Method(i).Name, err)
				}
			} else if !last.IsZero() {
				t.Errorf("%T.%s on nil = %v, want the zero value", v, rv.Type().Method(i).Name, last)
			}
		}
	}
}

// TestZeroHandles checks that Do on the zero BLAS, Solver and Sparse
// returns an error wrapping ErrNil that says where to get one, without
// calling fn; a nil function and a zero Stream are errors too. No CUDA
// call is made: none is loaded here.
func TestZeroHandles(t *testing.T) {
	called := false
	for _, tc := range []struct {
		name, want string
		do         func() error
	}{
		{"BLAS", "zero BLAS (get one with BLASOf)", func() error {
			return new(BLAS).Do(nil, func(cublas.Handle) error { called = true; return nil })
		}},
		{"Solver", "zero Solver (get one with SolverOf)", func() error {
			return new(Solver).Do(nil, func(cusolver.Handle) error { called = true; return nil })
		}},
		{"Sparse", "zero Sparse (get one with SparseOf)", func() error {
			return new(Sparse).Do(nil, func(cusparse.Handle) error { called = true; return nil })
		}},
	} {
		if err := tc.do(); !errors.Is(err, highlevel.ErrNil) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Do on a zero %s: %v, want ErrNil saying %q", tc.name, err, tc.want)
		}
	}
	b := blasHandles.make(1)
	if err := b.Do(nil, nil); err == nil {
		t.Error("Do with a nil function succeeded")
	}
	// Without CUDA there is no Stream to make, and the zero one is refused.
	if err := b.Do(new(highlevel.Stream), func(cublas.Handle) error { called = true; return nil }); !errors.Is(err, highlevel.ErrNil) {
		t.Errorf("Do with a zero Stream: %v, want ErrNil", err)
	}
	if called {
		t.Error("fn was called")
	}
}

// TestClearCachesUnused checks that highlevel.ClearCaches before any
// handle was made, and after BLASOf failed (no CUDA here), keeps nothing
// and makes no call.
func TestClearCachesUnused(t *testing.T) {
	if highlevel.IsAvailable() {
		t.Skip("CUDA works here: BLASOf would succeed")
	}
	highlevel.ClearCaches()
	if _, err := BLASOf(0); err == nil {
		t.Fatal("BLASOf succeeded without CUDA")
	}
	highlevel.ClearCaches()
	n := 0
	blasHandles.m.Range(func(any, any) bool { n++; return true })
	if n != 0 {
		t.Errorf("%d handles kept after BLASOf failed", n)
	}
}
