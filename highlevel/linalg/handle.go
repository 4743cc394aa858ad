package linalg

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/gocuda/cuda/cublas"
	"github.com/gocuda/cuda/cudart"
	"github.com/gocuda/cuda/cusolver"
	"github.com/gocuda/cuda/cusparse"
	"github.com/gocuda/cuda/highlevel"
	"github.com/gocuda/cuda/highlevel/internal/caches"
	"github.com/gocuda/cuda/highlevel/internal/refusal"
)

// A BLAS is a device's cuBLAS handle, CuPy's
// cupy.cuda.device.get_cublas_handle: BLASOf returns the same BLAS for the
// same device, for the life of the process. highlevel.ClearCaches destroys
// the cuBLAS handle it holds, once no call uses it and no graph captured
// with it is left, and the next call creates another: a BLAS taken before
// a ClearCaches goes on working, and only the cost of a new handle shows.
// A call captured into a graph uses the handle's workspace when the graph
// runs, so a Graph and its GraphExecs hold the handle their captured calls
// used: a ClearCaches meanwhile sets it aside, and it is destroyed once
// the last of them is closed. cuBLAS handles are not safe for concurrent
// use; a BLAS is, because Do runs one call at a time.
//
// The zero BLAS is not usable: get one from BLASOf; its Do returns an
// error wrapping highlevel.ErrNil.
type BLAS struct {
	l lib[cublas.Handle]
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

// lib is the handle of one library on one device, used one call at a
// time. It lives as long as the process; the library's handle in it comes
// and goes: highlevel.ClearCaches destroys it (clear), and the next call
// creates another.
//
// The closing protocol of the package's caches: a handle is destroyed only
// while mu is held, so while no call of the library on the device is in
// progress, on that handle or any other; and only through highlevel's
// DestroyOutsideCaptures, so while no stream capture of highlevel's is in
// progress (the destroy synchronizes the device, which would invalidate
// it), else once they have ended. A call never meets a destroyed handle,
// nor an error because of a ClearCaches: it takes the current handle, and
// creates one where there is none.
//
// Graphs hold handles too: a call captured into a graph uses the handle's
// internal workspace each time the graph runs. So a call on a capturing
// stream makes the capture hold the current handle (Borrow.Keep,
// once per capture), and the graph and each of its instantiations hold it
// until closed (handle.Hold, Unhold). A stale handle that graphs hold is
// not destroyed but parked: it is no longer current, so the calls after
// the ClearCaches create another, and it is destroyed, as above, once the
// last hold ends (Unhold leaves that to a goroutine of its own, since it
// may run holding highlevel's locks). Launches of the graphs may still be
// in flight then: cublasDestroy synchronizes the device first, and
// cuSOLVER's and cuSPARSE's destroys free CPU-side resources, by their
// documentation (cuSPARSE may keep its GPU-side ones until the process
// ends). Every handle created is current, parked or destroyed.
//
// Locks, in order: dmu, mu, then highlevel's (DestroyOutsideCaptures, and
// those of highlevel's functions that a Do's fn may call). Where
// highlevel's are held already (in DestroyOutsideCaptures's destroy) mu is
// only tried, never waited for; and clear, which a stream callback may
// run, waits for no lock there.
type lib[H ~uintptr] struct {
	dev       highlevel.Device
	name      string // of the handle, for errors: "cuBLAS"
	createOp  string // "cublasCreate"
	create    func(*H) error
	setStream func(H, cudart.Stream) error
	destroy   func(H) error

	// clears counts the ClearCaches: a handle created before the last one
	// is stale, to destroy.
	clears atomic.Uint64

	// unheld counts the last Unholds of parked handles: each asks for a
	// destroy, as a clear does.
	unheld atomic.Uint64

	mu   sync.Mutex // held by each call, and while a handle is made or destroyed
	h    H
	live bool       // h is a handle of the library, the current one
	cur  *handle[H] // h's holds, where live
	gen  uint64     // clears when h was created
	// parked are the stale handles that graphs still hold, destroyed once
	// the last hold ends (handle.Unhold).
	parked []*handle[H]
	// dirty is set once a BLAS.Do may have changed the pointer mode, which
	// the package's BLAS functions need to be CUBLAS_POINTER_MODE_HOST;
	// false for a new handle.
	dirty bool

	// dmu is held by the goroutine that destroys a stale handle
	// (destroyStale): another finds it held and leaves its clear to it.
	dmu sync.Mutex
	// deferred is set while a later call of destroyStale waits in
	// highlevel for the captures to end, so that clears meanwhile add no
	// other. Under dmu.
	deferred bool
}

// A handle is a handle of the library that graphs may hold, a holder of
// highlevel's captures (Borrow.Keep): a call captured with it uses
// its workspace each time the graph runs.
type handle[H ~uintptr] struct {
	l *lib[H]
	h H
	// n is twice the holds, plus 1 once the handle is parked: the Unhold
	// that leaves 1 is the last of a parked handle, to destroy (as
	// highlevel's holdCount).
	n atomic.Int32
}

// Hold begins a hold of a graph's (or of a capture's, for its graph) on
// the handle; the handle is current, or held already.
func (p *handle[H]) Hold() { p.n.Add(2) }

// Unhold ends a hold. The last one of a parked handle has it destroyed,
// on a goroutine of its own: Unhold runs wherever highlevel lets a graph
// go, maybe holding its locks, which a call holding mu may wait for.
func (p *handle[H]) Unhold() {
	if p.n.Add(-2) == 1 {
		p.l.unheld.Add(1)
		go p.l.destroyStale()
	}
}

// park marks the handle parked and reports whether graphs hold it; if
// not, the caller destroys it.
func (p *handle[H]) park() bool { return p.n.Or(1) != 0 }

// unused reports whether no graph holds the parked handle any longer.
func (p *handle[H]) unused() bool { return p.n.Load() == 1 }

// cached is what handles needs of the objects it holds.
type cached interface {
	ensure() error
	clear()
}

// handles holds each device's object of one library, for the life of the
// process: highlevel.ClearCaches clears the handle in each.
type handles[T any] struct {
	make func(highlevel.Device) *T
	lib  func(*T) cached

	once sync.Once
	mu   sync.Mutex // held while making one, so that each device gets one
	m    sync.Map   // highlevel.Device -> *T; read without a lock by each call
}

// get returns d's object, making it, with its handle, on first use.
func (c *handles[T]) get(d highlevel.Device) (*T, error) {
	if v, ok := c.m.Load(d); ok {
		return v.(*T), nil
	}
	c.once.Do(func() { caches.Add(func() bool { c.clear(); return true }) })
	c.mu.Lock()
	defer c.mu.Unlock()
	if v, ok := c.m.Load(d); ok {
		return v.(*T), nil
	}
	v := c.make(d)
	if err := c.lib(v).ensure(); err != nil {
		return nil, err // d may be no device: nothing is kept for it
	}
	c.m.Store(d, v)
	return v, nil
}

// clear clears the handle of each device.
func (c *handles[T]) clear() {
	c.m.Range(func(_, v any) bool {
		c.lib(v.(*T)).clear()
		return true
	})
}

var (
	blasHandles = handles[BLAS]{
		make: func(d highlevel.Device) *BLAS {
			return &BLAS{l: lib[cublas.Handle]{dev: d, name: "cuBLAS", createOp: "cublasCreate",
				create: cublas.Create, setStream: cublas.SetStream, destroy: cublas.Destroy}}
		},
		lib: func(b *BLAS) cached { return &b.l },
	}
	solverHandles = handles[Solver]{
		make: func(d highlevel.Device) *Solver {
			return &Solver{l: lib[cusolver.Handle]{dev: d, name: "cuSOLVER", createOp: "cusolverDnCreate",
				create: cusolver.Create, setStream: cusolver.SetStream, destroy: cusolver.Destroy}}
		},
		lib: func(v *Solver) cached { return &v.l },
	}
	sparseHandles = handles[Sparse]{
		make: func(d highlevel.Device) *Sparse {
			return &Sparse{l: lib[cusparse.Handle]{dev: d, name: "cuSPARSE", createOp: "cusparseCreate",
				create: cusparse.Create, setStream: cusparse.SetStream, destroy: cusparse.Destroy}}
		},
		lib: func(p *Sparse) cached { return &p.l },
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

// make creates the handle, with the device current, as the libraries
// require; mu is held.
func (l *lib[H]) make() error {
	var h H // not &l.h: cgo refuses a pointer into memory that holds Go pointers
	if err := l.create(&h); err != nil {
		return fmt.Errorf("%s: %w", l.createOp, err)
	}
	l.h, l.live, l.gen, l.dirty = h, true, l.clears.Load(), false
	l.cur = &handle[H]{l: l, h: h}
	return nil
}

// ensure creates the handle unless there is one.
func (l *lib[H]) ensure() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.live {
		return nil
	}
	return l.dev.Do(l.make)
}

// clear marks the handle stale and destroys it once no call uses it and
// no capture is in progress: before it returns where it can, else later
// (see destroyStale); or parks it while graphs hold it. The calls
// meanwhile go on using it; the first call after its destruction, or its
// parking, creates another.
func (l *lib[H]) clear() {
	l.clears.Add(1)
	l.destroyStale()
}

// asks counts the clears and last Unholds: each asks for a destroy.
func (l *lib[H]) asks() uint64 { return l.clears.Load() + l.unheld.Load() }

// destroyStale destroys the handle if it is stale, and the parked handles
// no graph holds any longer, unless another goroutine is doing so: that
// one sees this one's clear or Unhold, since it tries again until none
// came while it tried.
func (l *lib[H]) destroyStale() {
	for {
		if !l.dmu.TryLock() {
			return
		}
		seen := l.asks()
		l.tryDestroy()
		l.dmu.Unlock()
		if l.asks() == seen {
			return
		}
	}
}

// later is destroyStale called back by highlevel, on a goroutine of its
// own, once the captures that put a destroy off have ended.
func (l *lib[H]) later() {
	l.dmu.Lock()
	l.deferred = false
	seen := l.asks()
	l.tryDestroy()
	l.dmu.Unlock()
	if l.asks() != seen {
		l.destroyStale()
	}
}

// tryDestroy destroys a stale handle (or parks it) and the parked ones no
// graph holds now, or leaves them to later while a capture is in progress
// or from a stream callback; dmu is held. Where a call is in progress it
// waits for it: not in a stream callback, since highlevel ran the
// function, and outside highlevel's locks, which the call may wait for.
func (l *lib[H]) tryDestroy() {
	var later func()
	if !l.deferred {
		later = l.later
	}
	busy := false
	ran, _ := l.dev.DestroyOutsideCaptures(func() error {
		if !l.mu.TryLock() {
			busy = true
			return nil
		}
		defer l.mu.Unlock()
		return l.destroyLocked()
	}, later)
	if ran && busy {
		l.mu.Lock()
		ran, _ = l.dev.DestroyOutsideCaptures(l.destroyLocked, later)
		l.mu.Unlock()
	}
	if !ran && later != nil {
		l.deferred = true
	}
}

// destroyLocked destroys the handle if it is stale, or parks it where
// graphs hold it, and destroys the parked handles that no graph holds any
// longer; mu and dmu are held, the device is current, and no capture is
// in progress. A handle whose destroy failed is forgotten all the same: it
// cannot be told whether it still is one.
func (l *lib[H]) destroyLocked() error {
	var errs []error
	if l.live && l.gen != l.clears.Load() {
		p := l.cur
		l.live, l.cur = false, nil
		if p.park() {
			l.parked = append(l.parked, p)
		} else {
			errs = append(errs, l.destroy(p.h))
		}
	}
	kept := l.parked[:0]
	for _, p := range l.parked {
		if p.unused() { // no hold comes any more: see Hold
			errs = append(errs, l.destroy(p.h))
		} else {
			kept = append(kept, p)
		}
	}
	clear(l.parked[len(kept):])
	l.parked = kept
	return errors.Join(errs...)
}

// do calls fn with the handle, its device current on the calling OS
// thread, its stream set to s, while the stream stays open and no other
// goroutine uses the handle; it creates the handle where there is none
// (before the first call, or after a ClearCaches).
// Its own errors are those of operation op; fn's it returns as they are.
func (l *lib[H]) do(op, typ string, s *highlevel.Stream, mems []highlevel.MemoryPointer, fn func(h H) error) error {
	if fn == nil {
		return opError(op, refusal.Errorf("nil function"))
	}
	if l.create == nil {
		return opError(op, fmt.Errorf("%w: zero %s (get one with %sOf)", highlevel.ErrNil, typ, typ))
	}
	b, err := s.Borrow(l.dev, mems...)
	if err != nil {
		return opError(op, err)
	}
	defer b.Return()
	l.mu.Lock()
	defer l.mu.Unlock()
	var fnErr bool
	err = l.dev.Do(func() error {
		if !l.live {
			if err := l.make(); err != nil {
				return opError(l.name+" handle of "+l.dev.String(), err)
			}
		}
		if err := l.setStream(l.h, s.Handle()); err != nil {
			return fmt.Errorf("setting the stream of the handle: %w", err)
		}
		// A capture's graph holds the handle, whose workspace its
		// work uses; nothing without a capture.
		b.Keep(l.cur)
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
// open (its Close waits for fn). fn must not keep the handle, close s,
// call Do again, or call highlevel.ClearCaches (which waits for fn). It may change the pointer mode; other settings (math
// mode, workspace) it must put back as it found them, since the package's
// functions share the handle. The handle may differ from one Do to the
// next: highlevel.ClearCaches destroys it between calls (never during
// one), and the next Do creates another, as the next BLASOf would. Do
// returns fn's error, highlevel.ErrClosed for a closed stream, an error
// for a stream of another device, or the error of creating the handle.
func (b *BLAS) Do(s *highlevel.Stream, fn func(h cublas.Handle) error) error {
	if b == nil {
		return nilError("BLAS")
	}
	if fn == nil {
		return opError("BLAS.Do", refusal.Errorf("nil function"))
	}
	return b.l.do("BLAS.Do", "BLAS", s, nil, func(h cublas.Handle) error {
		b.l.dirty = true
		return fn(h)
	})
}

// call is Do for the package's functions, on operands o: the pointer mode
// is host, as it is for a new handle.
func (b *BLAS) call(op string, s *highlevel.Stream, o *operands, fn func(h cublas.Handle) error) error {
	return b.l.do(op, "BLAS", s, o.memory(), func(h cublas.Handle) error {
		if b.l.dirty {
			if err := cublas.SetPointerMode(h, cublas.POINTER_MODE_HOST); err != nil {
				return opError(op, fmt.Errorf("setting the pointer mode: %w", err))
			}
			b.l.dirty = false
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
	return v.l.do("Solver.Do", "Solver", s, nil, fn)
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
	return p.l.do("Sparse.Do", "Sparse", s, nil, fn)
}
