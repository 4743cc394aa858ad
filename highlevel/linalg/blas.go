package linalg

import (
	"strings"
	"unsafe"

	"github.com/gocuda/cuda/cublas"
	"github.com/gocuda/cuda/cudadrv"
	"github.com/gocuda/cuda/highlevel"
	"github.com/gocuda/cuda/highlevel/internal/buffer"
	"github.com/gocuda/cuda/highlevel/internal/refusal"
)

// Float is the element type of the BLAS functions: float32 calls cuBLAS's
// S functions (Sgemm), float64 its D functions (Dgemm).
type Float interface {
	float32 | float64
}

// An Op says how a matrix enters a product: as stored, or transposed.
type Op int

//go:generate go run golang.org/x/tools/cmd/stringer -type=Op -output=zstring.go

const (
	NoTrans Op = iota // the matrix as stored (CUBLAS_OP_N)
	Trans             // its transpose (CUBLAS_OP_T)
)

// An opErr is the error of an operation of the package: "linalg: op: what
// went wrong", where an error of highlevel's, or an inner operation's,
// follows without its prefix, so that each prefix is said once.
type opErr struct {
	op  string
	err error
}

// opError is the error of operation op.
func opError(op string, err error) error { return &opErr{op: op, err: err} }

func (e *opErr) Error() string { return "linalg: " + e.op + ": " + bare(e.err) }

func (e *opErr) Unwrap() error { return e.err }

// bare is err's message without a package's prefix.
func bare(err error) string {
	if e, ok := err.(*opErr); ok {
		return e.op + ": " + bare(e.err)
	}
	return strings.TrimPrefix(err.Error(), "highlevel: ")
}

// MatMul computes c = a·b on stream s (the legacy default stream of the
// arrays' device when nil) with cuBLAS (SGEMM or DGEMM), the Go way round:
// a, b and c hold row-major matrices, a m×k, b k×n and c m×n, as a Go
// [][]T flattened row by row; the sizes come in BLAS's order, m, n, k, as
// in every function of the package. cuBLAS is column-major; MatMul passes the
// product as cᵀ = bᵀ·aᵀ, which needs no copy. The arrays must be on one
// device, the stream's, and hold at least as many elements as their
// matrices. An empty product (m or n 0) does nothing; otherwise k must be
// at least 1.
func MatMul[T Float](s *highlevel.Stream, a, b, c *highlevel.Array[T], m, n, k int) error {
	return gemm("MatMul", s, NoTrans, NoTrans, m, n, k, 1, a, 0, b, 0, 0, c, 0, 1, false)
}

// Gemm computes c = alpha·op(a)·op(b) + beta·c on stream s, with row-major
// matrices as MatMul: op(a) is m×k, op(b) k×n and c m×n, where op(x) is x
// for NoTrans and xᵀ for Trans (a is k×m when transA is Trans). It is
// CuPy's cupy.cublas.gemm.
func Gemm[T Float](s *highlevel.Stream, transA, transB Op, m, n, k int, alpha T, a, b *highlevel.Array[T], beta T, c *highlevel.Array[T]) error {
	return gemm("Gemm", s, transA, transB, m, n, k, alpha, a, 0, b, 0, beta, c, 0, 1, false)
}

// GemmStridedBatched computes batch products as Gemm does, on matrices
// that lie strideA, strideB and strideC elements apart in a, b and c:
// c[i] = alpha·op(a[i])·op(b[i]) + beta·c[i] for i in 0..batch-1, where x[i]
// is the matrix i·strideX elements into x (cublasSgemmStridedBatched).
// A stride of 0 uses one matrix of a or b in every product; c's stride
// must be at least m·n, so that the products do not overlap.
func GemmStridedBatched[T Float](s *highlevel.Stream, transA, transB Op, m, n, k int, alpha T, a *highlevel.Array[T], strideA int, b *highlevel.Array[T], strideB int, beta T, c *highlevel.Array[T], strideC int, batch int) error {
	return gemm("GemmStridedBatched", s, transA, transB, m, n, k, alpha, a, strideA, b, strideB, beta, c, strideC, batch, true)
}

func gemm[T Float](op string, s *highlevel.Stream, transA, transB Op, m, n, k int, alpha T, a *highlevel.Array[T], strideA int, b *highlevel.Array[T], strideB int, beta T, c *highlevel.Array[T], strideC int, batch int, batched bool) error {
	if a == nil || b == nil || c == nil {
		return opError(op, errNilArray)
	}
	opA, err := transA.cublas()
	if err != nil {
		return opError(op, err)
	}
	opB, err := transB.cublas()
	if err != nil {
		return opError(op, err)
	}
	for _, d := range [...]struct {
		name string
		v    int
	}{{"m", m}, {"n", n}, {"k", k}, {"batch", batch}} {
		if err := checkDim(d.name, d.v); err != nil {
			return opError(op, err)
		}
	}
	if m == 0 || n == 0 || batch == 0 {
		return nil
	}
	if k == 0 {
		return opError(op, refusal.Errorf("k is 0: the inner dimension must be at least 1"))
	}
	if strideA < 0 || strideB < 0 || strideC < 0 {
		return opError(op, refusal.Errorf("strides %d, %d, %d: they must not be negative", strideA, strideB, strideC))
	}
	if batch > 1 && strideC < m*n {
		return opError(op, refusal.Errorf("strideC %d is less than m·n = %d: the products would overlap", strideC, m*n))
	}
	rowsA, colsA, rowsB, colsB := m, k, k, n
	if transA == Trans {
		rowsA, colsA = k, m
	}
	if transB == Trans {
		rowsB, colsB = n, k
	}
	if err := fits("a", a.Len(), rowsA, colsA, strideA, batch); err != nil {
		return opError(op, err)
	}
	if err := fits("b", b.Len(), rowsB, colsB, strideB, batch); err != nil {
		return opError(op, err)
	}
	if err := fits("c", c.Len(), m, n, strideC, batch); err != nil {
		return opError(op, err)
	}
	lda, ldb := colsA, colsB
	var o operands
	if err := o.check(op, s, buffer.Of(c), buffer.Of(a), buffer.Of(b)); err != nil {
		return err
	}
	blas, err := BLASOf(o.dev)
	if err != nil {
		return opError(op, inner(err))
	}
	m32, n32, k32, lda32, ldb32, batch32 := int32(m), int32(n), int32(k), int32(lda), int32(ldb), int32(batch)
	sa, sb, sc := int64(strideA), int64(strideB), int64(strideC)
	pc, pa, pb := o.ptr[0], o.ptr[1], o.ptr[2]
	return blas.call(op, s, &o, func(h cublas.Handle) error {
		// Row-major c = op(a)·op(b) is column-major cᵀ = op(b)ᵀ·op(a)ᵀ,
		// and a row-major matrix is its transpose in column-major order.
		var err error
		switch alpha := any(alpha).(type) {
		case float32:
			beta := any(beta).(float32)
			a, b, c := (*float32)(pa), (*float32)(pb), (*float32)(pc)
			if batched {
				err = cublas.SgemmStridedBatched(h, opB, opA, n32, m32, k32, &alpha, b, ldb32, sb, a, lda32, sa, &beta, c, n32, sc, batch32)
			} else {
				err = cublas.Sgemm(h, opB, opA, n32, m32, k32, &alpha, b, ldb32, a, lda32, &beta, c, n32)
			}
		case float64:
			beta := any(beta).(float64)
			a, b, c := (*float64)(pa), (*float64)(pb), (*float64)(pc)
			if batched {
				err = cublas.DgemmStridedBatched(h, opB, opA, n32, m32, k32, &alpha, b, ldb32, sb, a, lda32, sa, &beta, c, n32, sc, batch32)
			} else {
				err = cublas.Dgemm(h, opB, opA, n32, m32, k32, &alpha, b, ldb32, a, lda32, &beta, c, n32)
			}
		}
		if err != nil {
			return opError(op, err)
		}
		return nil
	})
}

// Gemv computes y = alpha·op(a)·x + beta·y on stream s, where a is a
// row-major m×n matrix as in MatMul and op(a) is a (x of n elements, y of
// m) for NoTrans or aᵀ (x of m, y of n) for Trans (cublasSgemv). The
// arrays must hold at least as many elements. An empty y does nothing;
// otherwise x must not be empty.
func Gemv[T Float](s *highlevel.Stream, trans Op, m, n int, alpha T, a, x *highlevel.Array[T], beta T, y *highlevel.Array[T]) error {
	const op = "Gemv"
	if a == nil || x == nil || y == nil {
		return opError(op, errNilArray)
	}
	opA, err := trans.cublas()
	if err != nil {
		return opError(op, err)
	}
	if err := checkDim("m", m); err != nil {
		return opError(op, err)
	}
	if err := checkDim("n", n); err != nil {
		return opError(op, err)
	}
	in, out := n, m
	if trans == Trans {
		in, out = m, n
	}
	if out == 0 {
		return nil
	}
	if in == 0 {
		return opError(op, refusal.Errorf("x is empty: op(a) is %d×0", out))
	}
	if err := fits("a", a.Len(), m, n, 0, 1); err != nil {
		return opError(op, err)
	}
	if err := fits("x", x.Len(), in, 1, 0, 1); err != nil {
		return opError(op, err)
	}
	if err := fits("y", y.Len(), out, 1, 0, 1); err != nil {
		return opError(op, err)
	}
	// The row-major m×n matrix is a column-major n×m one: cuBLAS
	// transposes where the caller does not.
	opC := cublas.OP_T
	if opA == cublas.OP_T {
		opC = cublas.OP_N
	}
	var o operands
	if err := o.check(op, s, buffer.Of(y), buffer.Of(a), buffer.Of(x)); err != nil {
		return err
	}
	blas, err := BLASOf(o.dev)
	if err != nil {
		return opError(op, inner(err))
	}
	m32, n32 := int32(m), int32(n)
	py, pa, px := o.ptr[0], o.ptr[1], o.ptr[2]
	return blas.call(op, s, &o, func(h cublas.Handle) error {
		var err error
		switch alpha := any(alpha).(type) {
		case float32:
			beta := any(beta).(float32)
			err = cublas.Sgemv(h, opC, n32, m32, &alpha, (*float32)(pa), n32, (*float32)(px), 1, &beta, (*float32)(py), 1)
		case float64:
			beta := any(beta).(float64)
			err = cublas.Dgemv(h, opC, n32, m32, &alpha, (*float64)(pa), n32, (*float64)(px), 1, &beta, (*float64)(py), 1)
		}
		if err != nil {
			return opError(op, err)
		}
		return nil
	})
}

// Axpy computes y = alpha·x + y on stream s (cublasSaxpy); x and y must be
// as long. Empty arrays do nothing.
func Axpy[T Float](s *highlevel.Stream, alpha T, x, y *highlevel.Array[T]) error {
	const op = "Axpy"
	n, err := vectors(op, x, y)
	if err != nil || n == 0 {
		return err
	}
	var o operands
	if err := o.check(op, s, buffer.Of(y), buffer.Of(x)); err != nil {
		return err
	}
	blas, err := BLASOf(o.dev)
	if err != nil {
		return opError(op, inner(err))
	}
	py, px := o.ptr[0], o.ptr[1]
	return blas.call(op, s, &o, func(h cublas.Handle) error {
		var err error
		switch alpha := any(alpha).(type) {
		case float32:
			err = cublas.Saxpy(h, n, &alpha, (*float32)(px), 1, (*float32)(py), 1)
		case float64:
			err = cublas.Daxpy(h, n, &alpha, (*float64)(px), 1, (*float64)(py), 1)
		}
		if err != nil {
			return opError(op, err)
		}
		return nil
	})
}

// Dot computes the dot product of x and y, which must be as long, into the
// first element of result, in device memory, on stream s (cublasSdot with
// CUBLAS_POINTER_MODE_DEVICE): it waits for nothing, and result holds the
// sum once the stream's work up to the call has run. The dot product of
// empty arrays is 0. CuPy's cupy.cublas.dot.
func Dot[T Float](s *highlevel.Stream, x, y, result *highlevel.Array[T]) error {
	const op = "Dot"
	if result == nil {
		return opError(op, errNilArray)
	}
	n, err := vectors(op, x, y)
	if err != nil {
		return err
	}
	if result.Len() < 1 {
		return opError(op, refusal.Errorf("result is empty"))
	}
	var o operands
	if err := o.check(op, s, buffer.Of(result), buffer.Of(x), buffer.Of(y)); err != nil {
		return err
	}
	blas, err := BLASOf(o.dev)
	if err != nil {
		return opError(op, inner(err))
	}
	pr, px, py := o.ptr[0], o.ptr[1], o.ptr[2]
	return blas.call(op, s, &o, func(h cublas.Handle) error {
		if n == 0 {
			var zero T
			if err := cudadrv.MemsetD8Async(cudadrv.DeviceptrOf(pr), 0, uint64(unsafe.Sizeof(zero)), cudadrv.Stream(s.Handle())); err != nil {
				return opError(op, err)
			}
			return nil
		}
		if err := cublas.SetPointerMode(h, cublas.POINTER_MODE_DEVICE); err != nil {
			return opError(op, err)
		}
		var err error
		switch any(*new(T)).(type) {
		case float32:
			err = cublas.Sdot(h, n, (*float32)(px), 1, (*float32)(py), 1, (*float32)(pr))
		case float64:
			err = cublas.Ddot(h, n, (*float64)(px), 1, (*float64)(py), 1, (*float64)(pr))
		}
		if cublas.SetPointerMode(h, cublas.POINTER_MODE_HOST) != nil {
			blas.l.dirty = true // the next call tries again
		}
		if err != nil {
			return opError(op, err)
		}
		return nil
	})
}
