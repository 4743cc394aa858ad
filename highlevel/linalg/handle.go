package linalg

import (
	"fmt"
	"sync"

	"github.com/gocuda/cuda/cublas"
	"github.com/gocuda/cuda/cudart"
	"github.com/gocuda/cuda/cusolver"
	"github.com/gocuda/cuda/cusparse"
	"github.com/gocuda/cuda/highlevel"
	"github.com/gocuda/cuda/highlevel/internal/caches"
	"github.com/gocuda/cuda/highlevel/internal/life"
	"github.com/gocuda/cuda/highlevel/internal/refusal"
)

// A BLAS is a device's cuBLAS handle, CuPy's
// cupy.cuda.device.get_cublas_handle: BLASOf returns the same BLAS for the
// same device, created on first use, and highlevel.ClearCaches destroys it.
// cuBLAS handles are not safe for concurrent use; a BLAS is, because Do
// runs one call at a time.
type BLAS struct {
	l lib[cublas.Handle]
	// dirty is set once a Do may have changed the pointer mode, which the
	// package's functions need to be CUBLAS_POINTER_MODE_HOST. Under l.mu.
	dirty bool
}

// A Solver is a device's cuSOLVER dense handle, CuPy's
// cupy.cuda.device.get_cusolver_handle, shared and cleared as a BLAS is.
type Solver struct {
	l lib[cusolver.Handle]
}

// A Sparse is a device's cuSPARSE handle, CuPy's
// cupy.cuda.device.get_cusparse_handle, shared and cleared as a BLAS is.
type Sparse struct {
	l lib[cusparse.Handle]
}

// lib is a library handle of one device, used one call at a time.
type lib[H ~uintptr] struct {
	dev       highlevel.Device
	setStream func(H, cudart.Stream) error
	destroy   func(H) error

	mu     sync.Mutex
	h      H
	closed bool
}

// handles holds each device's handle of one library, until
// highlevel.ClearCaches closes and forgets them.
type handles[T any] struct {
	create func(highlevel.Device) (*T, error)
	close  func(*T)

	once sync.Once
	mu   sync.Mutex // held while creating, so that each device gets one
	m    map[highlevel.Device]*T
}

func (c *handles[T]) get(d highlevel.Device) (*T, error) {
	c.once.Do(func() { caches.Add(func() bool { c.clear(); return true }) })
	c.mu.Lock()
	defer c.mu.Unlock()
	if h := c.m[d]; h != nil {
		return h, nil
	}
	h, err := c.create(d)
	if err != nil {
		return nil, err
	}
	if c.m == nil {
		c.m = map[highlevel.Device]*T{}
	}
	c.m[d] = h
	return h, nil
}

func (c *handles[T]) clear() {
	c.mu.Lock()
	old := c.m
	c.m = nil
	c.mu.Unlock()
	for _, h := range old {
		c.close(h)
	}
}

var (
	blasHandles = handles[BLAS]{
		create: func(d highlevel.Device) (*BLAS, error) {
			b := &BLAS{l: lib[cublas.Handle]{dev: d, setStream: cublas.SetStream, destroy: cublas.Destroy}}
			return b, b.l.create("cublasCreate", cublas.Create)
		},
		close: func(b *BLAS) { b.l.close() },
	}
	solverHandles = handles[Solver]{
		create: func(d highlevel.Device) (*Solver, error) {
			v := &Solver{l: lib[cusolver.Handle]{dev: d, setStream: cusolver.SetStream, destroy: cusolver.Destroy}}
			return v, v.l.create("cusolverDnCreate", cusolver.Create)
		},
		close: func(v *Solver) { v.l.close() },
	}
	sparseHandles = handles[Sparse]{
		create: func(d highlevel.Device) (*Sparse, error) {
			p := &Sparse{l: lib[cusparse.Handle]{dev: d, setStream: cusparse.SetStream, destroy: cusparse.Destroy}}
			return p, p.l.create("cusparseCreate", cusparse.Create)
		},
		close: func(p *Sparse) { p.l.close() },
	}
)

// BLASOf returns d's cuBLAS handle, creating it on first use.
func BLASOf(d highlevel.Device) (*BLAS, error) {
	b, err := blasHandles.get(d)
	if err != nil {
		return nil, opError("cuBLAS handle of "+d.String(), err)
	}
	return b, nil
}

// SolverOf returns d's cuSOLVER dense handle, creating it on first use.
func SolverOf(d highlevel.Device) (*Solver, error) {
	v, err := solverHandles.get(d)
	if err != nil {
		return nil, opError("cuSOLVER handle of "+d.String(), err)
	}
	return v, nil
}

// SparseOf returns d's cuSPARSE handle, creating it on first use.
func SparseOf(d highlevel.Device) (*Sparse, error) {
	p, err := sparseHandles.get(d)
	if err != nil {
		return nil, opError("cuSPARSE handle of "+d.String(), err)
	}
	return p, nil
}

// inner is err without its operation, for a function that names the
// operation of another of the package's that it called.
func inner(err error) error {
	if e, ok := err.(*opErr); ok {
		return e.err
	}
	return err
}

// create makes the handle with the device current, as the libraries
// require.
func (l *lib[H]) create(op string, create func(*H) error) error {
	return l.dev.Do(func() error {
		if err := create(&l.h); err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
		return nil
	})
}

// close destroys the handle once the call in progress, if any, has
// returned; later calls of do return highlevel.ErrClosed.
func (l *lib[H]) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	l.closed = true
	l.dev.Do(func() error { return l.destroy(l.h) })
}

// do calls fn with the handle, its device current on the calling OS
// thread, its stream set to s, while the stream stays open and no other
// goroutine uses the handle.
// Its own errors are those of operation op; fn's it returns as they are.
func (l *lib[H]) do(op string, s *highlevel.Stream, fn func(h H) error) error {
	if fn == nil {
		return opError(op, refusal.Errorf("nil function"))
	}
	hs, err := s.Enter(life.Sub, l.dev)
	if err != nil {
		return opError(op, err)
	}
	defer s.Leave(life.Sub)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return opError(op, highlevel.ErrClosed)
	}
	var fnErr bool
	err = l.dev.Do(func() error {
		if err := l.setStream(l.h, cudart.Stream(hs)); err != nil {
			return fmt.Errorf("setting the stream of the handle: %w", err)
		}
		fnErr = true
		return fn(l.h)
	})
	if err != nil && !fnErr {
		return opError(op, err)
	}
	return err
}

func nilError(typ string) error { return opError("nil *"+typ, highlevel.ErrNil) }

// Device returns the handle's device; 0 for a nil BLAS.
func (b *BLAS) Device() highlevel.Device {
	if b == nil {
		return 0
	}
	return b.l.dev
}

// Do calls fn with the cuBLAS handle, its device current on the calling OS
// thread and its stream set to s (the legacy default stream of the device
// when s is nil), while no other goroutine uses the handle and s stays
// open (its Close waits for fn). fn must not keep the handle, close s, or
// call Do again. It may change the pointer mode; other settings (math
// mode, workspace) it must put back as it found them, since the package's
// functions share the handle. Do returns fn's error, highlevel.ErrClosed
// once highlevel.ClearCaches destroyed the handle or for a closed stream,
// or an error for a stream of another device.
func (b *BLAS) Do(s *highlevel.Stream, fn func(h cublas.Handle) error) error {
	if b == nil {
		return nilError("BLAS")
	}
	if fn == nil {
		return opError("BLAS.Do", refusal.Errorf("nil function"))
	}
	return b.l.do("BLAS.Do", s, func(h cublas.Handle) error {
		b.dirty = true
		return fn(h)
	})
}

// call is Do for the package's functions, on operands o: the pointer mode
// is host, as it is for a new handle.
func (b *BLAS) call(op string, s *highlevel.Stream, o *operands, fn func(h cublas.Handle) error) error {
	return b.l.do(op, s, func(h cublas.Handle) error {
		o.keep(s)
		if b.dirty {
			if err := cublas.SetPointerMode(h, cublas.POINTER_MODE_HOST); err != nil {
				return opError(op, fmt.Errorf("setting the pointer mode: %w", err))
			}
			b.dirty = false
		}
		return fn(h)
	})
}

// Device returns the handle's device; 0 for a nil Solver.
func (v *Solver) Device() highlevel.Device {
	if v == nil {
		return 0
	}
	return v.l.dev
}

// Do calls fn with the cuSOLVER handle, as BLAS.Do does.
func (v *Solver) Do(s *highlevel.Stream, fn func(h cusolver.Handle) error) error {
	if v == nil {
		return nilError("Solver")
	}
	return v.l.do("Solver.Do", s, fn)
}

// Device returns the handle's device; 0 for a nil Sparse.
func (p *Sparse) Device() highlevel.Device {
	if p == nil {
		return 0
	}
	return p.l.dev
}

// Do calls fn with the cuSPARSE handle, as BLAS.Do does.
func (p *Sparse) Do(s *highlevel.Stream, fn func(h cusparse.Handle) error) error {
	if p == nil {
		return nilError("Sparse")
	}
	return p.l.do("Sparse.Do", s, fn)
}
