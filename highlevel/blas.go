package highlevel

import (
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/gocuda/cuda/cublas"
	"github.com/gocuda/cuda/cudart"
	"github.com/gocuda/cuda/cusolver"
)

// A BLAS is a device's cuBLAS handle, CuPy's Device.cublas_handle: BLASOf
// returns the same BLAS for the same device, created on first use, and
// ClearCaches destroys it. It is safe for use by several goroutines: Do
// runs one call at a time.
type BLAS struct {
	lib[cublas.Handle]
}

// A Solver is a device's cuSOLVER dense handle, CuPy's
// Device.cusolver_handle, shared and cleared like a BLAS.
type Solver struct {
	lib[cusolver.Handle]
}

// lib is a library handle of one device, used one call at a time.
type lib[H ~uintptr] struct {
	dev       Device
	setStream func(H, cudart.Stream) error
	destroy   func(H) error

	mu     sync.Mutex
	h      H
	closed bool
}

var (
	blasHandles = newMemo(func(d Device, _ struct{}) (*BLAS, error) {
		b := &BLAS{lib[cublas.Handle]{dev: d, setStream: cublas.SetStream, destroy: cublas.Destroy}}
		return b, b.create("cublasCreate", cublas.Create)
	}, func(b *BLAS) { b.close() })
	solverHandles = newMemo(func(d Device, _ struct{}) (*Solver, error) {
		s := &Solver{lib[cusolver.Handle]{dev: d, setStream: cusolver.SetStream, destroy: cusolver.Destroy}}
		return s, s.create("cusolverDnCreate", cusolver.Create)
	}, func(s *Solver) { s.close() })
)

// BLASOf returns d's cuBLAS handle, creating it on first use.
func BLASOf(d Device) (*BLAS, error) { return blasHandles.Get(d, struct{}{}) }

// SolverOf returns d's cuSOLVER dense handle, creating it on first use.
func SolverOf(d Device) (*Solver, error) { return solverHandles.Get(d, struct{}{}) }

// create makes the handle with the device current, as the libraries require.
func (l *lib[H]) create(op string, create func(*H) error) error {
	return l.dev.Do(func() error {
		if err := create(&l.h); err != nil {
			return opError(fmt.Sprintf("%v: %s", l.dev, op), err)
		}
		return nil
	})
}

// close destroys the handle; later calls of Do return ErrClosed.
func (l *lib[H]) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	l.closed = true
	l.dev.Do(func() error { return l.destroy(l.h) })
}

// Device returns the handle's device; 0 for a nil BLAS.
func (b *BLAS) Device() Device {
	if b == nil {
		return 0
	}
	return b.dev
}

// Do calls fn with the cuBLAS handle, its device current on the calling OS
// thread and its stream set to s (the legacy default stream when s is nil),
// while no other goroutine uses the handle. Do returns fn's error,
// ErrClosed after ClearCaches destroyed the handle, or an error for a
// closed stream or one of another device.
func (b *BLAS) Do(s *Stream, fn func(h cublas.Handle) error) error {
	if b == nil {
		return nilError("BLAS")
	}
	return b.do(s, fn)
}

// Device returns the handle's device; 0 for a nil Solver.
func (v *Solver) Device() Device {
	if v == nil {
		return 0
	}
	return v.dev
}

// Do calls fn with the cuSOLVER handle, as BLAS.Do does.
func (v *Solver) Do(s *Stream, fn func(h cusolver.Handle) error) error {
	if v == nil {
		return nilError("Solver")
	}
	return v.do(s, fn)
}

func (l *lib[H]) do(s *Stream, fn func(h H) error) error {
	if fn == nil {
		return errors.New("highlevel: Do: nil function")
	}
	hs, err := s.enter(l.dev)
	if err != nil {
		return err
	}
	defer s.leave()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	return l.dev.Do(func() error {
		if err := l.setStream(l.h, cudart.Stream(hs)); err != nil {
			return opError("setting the stream", err)
		}
		return fn(l.h)
	})
}

// MatMul computes c = a·b on stream s (the legacy default stream when nil)
// with cuBLAS (SGEMM or DGEMM), the Go way round: a, b and c hold row-major
// matrices, a m×k, b k×n and c m×n, as a Go [][]T flattened row by row.
// cuBLAS is column-major; MatMul passes the product as cᵀ = bᵀ·aᵀ, which
// needs no copy. The arrays must be on one device, the stream's.
func MatMul[T float32 | float64](s *Stream, a, b, c *Array[T], m, k, n int) error {
	if a == nil || b == nil || c == nil {
		return fmt.Errorf("highlevel: MatMul: nil Array")
	}
	for _, d := range [...]struct {
		name string
		arr  *Array[T]
		rows int
		cols int
	}{{"a", a, m, k}, {"b", b, k, n}, {"c", c, m, n}} {
		if d.rows <= 0 || d.cols <= 0 || d.rows > math.MaxInt32 || d.cols > math.MaxInt32 {
			return fmt.Errorf("highlevel: MatMul: %s is %d×%d: sizes must be in 1..%d", d.name, d.rows, d.cols, math.MaxInt32)
		}
		if d.arr.Len()/d.cols < d.rows {
			return fmt.Errorf("highlevel: MatMul: %s is %d×%d but holds %d elements", d.name, d.rows, d.cols, d.arr.Len())
		}
	}
	dev := c.MemoryPointer().Device()
	if a.MemoryPointer().Device() != dev || b.MemoryPointer().Device() != dev {
		return fmt.Errorf("highlevel: MatMul: arrays on %v, %v and %v", a.MemoryPointer().Device(), b.MemoryPointer().Device(), dev)
	}
	for _, arr := range []*Array[T]{a, b, c} {
		if err := arr.MemoryPointer().mem.live(); err != nil {
			return fmt.Errorf("highlevel: MatMul: %w", err)
		}
	}
	pa, pb, pc := a.Ptr(), b.Ptr(), c.Ptr()
	h, err := BLASOf(dev)
	if err != nil {
		return err
	}
	m32, k32, n32 := int32(m), int32(k), int32(n)
	return h.Do(s, func(h cublas.Handle) error {
		var err error
		switch any(*new(T)).(type) {
		case float32:
			alpha, beta := float32(1), float32(0)
			err = cublas.Sgemm(h, cublas.OP_N, cublas.OP_N, n32, m32, k32, &alpha, (*float32)(pb), n32, (*float32)(pa), k32, &beta, (*float32)(pc), n32)
		case float64:
			alpha, beta := float64(1), float64(0)
			err = cublas.Dgemm(h, cublas.OP_N, cublas.OP_N, n32, m32, k32, &alpha, (*float64)(pb), n32, (*float64)(pa), k32, &beta, (*float64)(pc), n32)
		}
		if err != nil {
			return opError("MatMul", err)
		}
		return nil
	})
}
