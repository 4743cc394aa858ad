package linalg

import (
	"errors"
	"strings"
	"testing"

	"github.com/gocuda/cuda/cublas"
	"github.com/gocuda/cuda/highlevel"
	"github.com/gocuda/cuda/internal/dl"
)

// TestErrorMessages checks the shape of the package's errors: "linalg: "
// once, at the start, then the operation; highlevel's errors inside lose
// their prefix; sentinels stay errors.Is-able.
func TestErrorMessages(t *testing.T) {
	empty, err := highlevel.AllocArray[float32](nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var nilBLAS *BLAS
	cases := []struct {
		name string
		err  error
		op   string
		is   error
	}{
		{"MatMul of nil", MatMul[float32](nil, nil, nil, nil, 1, 1, 1), "linalg: MatMul: nil object: nil *Array", highlevel.ErrNil},
		{"MatMul too short", MatMul(nil, empty, empty, empty, 2, 4, 3), "linalg: MatMul: a is 2×3 but holds 0 elements", highlevel.ErrInvalid},
		{"Gemm of a bad Op", Gemm(nil, Op(7), NoTrans, 1, 1, 1, 1, empty, empty, 0, empty), "linalg: Gemm: Op(7) is neither", highlevel.ErrInvalid},
		{"Gemv with m < 0", Gemv(nil, NoTrans, -1, 1, 1, empty, empty, 0, empty), "linalg: Gemv: m is -1", highlevel.ErrInvalid},
		{"Dot into nothing", Dot(nil, empty, empty, empty), "linalg: Dot: result is empty", highlevel.ErrInvalid},
		{"Axpy of unequal vectors", Axpy(nil, 1, empty, nil), "linalg: Axpy: nil object", highlevel.ErrNil},
		{"nil BLAS", nilBLAS.Do(nil, func(cublas.Handle) error { return nil }), "linalg: nil *BLAS", highlevel.ErrNil},
	}
	var le *dl.LibraryError
	if _, err := highlevel.DeviceCount(); errors.As(err, &le) {
		_, err := BLASOf(0)
		cases = append(cases, struct {
			name string
			err  error
			op   string
			is   error
		}{"BLASOf without CUDA", err, "linalg: cuBLAS handle of device 0: ", le})
	}
	for _, tc := range cases {
		if tc.err == nil {
			t.Errorf("%s: no error", tc.name)
			continue
		}
		msg := tc.err.Error()
		if !strings.HasPrefix(msg, tc.op) || strings.Count(msg, "linalg:") != 1 || strings.Contains(msg, "highlevel:") {
			t.Errorf("%s: %q: want it to start with %q and say one package's prefix once", tc.name, msg, tc.op)
		}
		if tc.is != nil && !errors.Is(tc.err, tc.is) {
			t.Errorf("%s: %v does not match %v", tc.name, tc.err, tc.is)
		}
	}
}
