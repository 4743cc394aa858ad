package highlevel

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync/atomic"
	"unsafe"
	"weak"

	"github.com/gocuda/cuda/cudadrv"
	"github.com/gocuda/cuda/highlevel/internal/driver"
)

// A MemoryPool is a caching allocator of device memory (CuPy's MemoryPool,
// PyCUDA's DeviceMemoryPool): Free returns a block to the pool, and the next
// Alloc that fits takes it back without calling CUDA. It is safe for use by
// several goroutines.
//
// Sizes are rounded up to 512 bytes. A request takes the smallest free
// block that fits, splitting off the rest; a freed block merges with its
// free neighbours. When nothing fits, the pool allocates from its upstream
// allocator; if that is out of memory, it gives back the blocks it holds
// free and tries once more, then returns an error that matches
// cudart.ErrorMemoryAllocation.
//
// # Streams
//
// A block is reused only by allocations for the stream it was allocated
// for (Alloc: the legacy default stream; AllocAsync: the stream given),
// because work on that stream runs in order: the new owner's work cannot
// start before the old owner's work on the same stream is done. Memory used
// on other streams too must be synchronized with its stream (Stream.WaitEvent,
// Synchronize) before it is freed. Blocks are kept by Stream object, not by
// CUDA handle, which CUDA may hand out again: a stream of another device, a
// closed stream and the per-thread default stream (a different stream on
// every OS thread) are refused. Closing a stream the pool allocated for waits for the stream's
// work; its blocks then serve the legacy default stream.
//
// # Memory dropped without Free
//
// The pool's Memory values come in slabs of 64, watched by one cleanup: a
// block whose Memory is dropped without Free is lost once all the Memory
// values of its slab are unreachable and the pool has moved on to a new
// slab. The next Alloc that finds lost blocks waits until every device the
// program used has finished the work queued so far, on every stream, then
// takes them back: memory is never handed out while a kernel may still use
// it.
//
// # Statistics
//
// The statistics of every pool (UsedBytes, FreeBytes, TotalBytes,
// NFreeBlocks, ActiveBlocks, Limit, and MemoryAsyncPool's
// ReleaseThreshold) never fail: they return an int, 0 for a nil pool. A
// MemoryPool's are its own counts, and stay readable after Close. What sets
// something (SetLimit, SetLimitFraction, SetReleaseThreshold) returns an
// error, ErrClosed after Close.
//
// # The zero value
//
// The zero value is not usable: make one with NewMemoryPool (or use
// DefaultMemoryPool); its methods return an error wrapping ErrNil, and its
// statistics 0.
type MemoryPool struct {
	*arena
	life  life
	slab  atomic.Pointer[memSlab]
	dev   Device // the upstream allocator's device, when devOK
	devOK bool
	// overPool is set where the upstream allocator is another pool of
	// the package's, whose blocks this one's chunks are: an
	// *OutOfMemoryError's summary counts that memory once.
	overPool bool
}

// isPool reports whether a is one of the package's pools, labeled or not.
func isPool(a Allocator) bool {
	switch a := a.(type) {
	case *MemoryPool, *MemoryAsyncPool:
		return true
	case labeledAllocator:
		return isPool(a.a)
	}
	return false
}

// slabSize is how many Memory values a memSlab holds.
const slabSize = 64

// A memSlab holds the Memory values a pool hands out, slabSize at a time,
// so that one cleanup (runtime.AddCleanup costs more than the rest of a
// pool hit) watches many allocations. When all of a slab's Memory values are
// unreachable, its cleanup returns the blocks of those never freed to the
// pool: a block dropped without Free comes back once the other allocations
// of its slab are gone too.
type memSlab struct {
	mem    [slabSize]Memory
	next   atomic.Int32 // slots handed out
	ledger *slabLedger
}

// slabLedger is what a slab's cleanup reads: it must not reach the slab.
type slabLedger struct {
	blocks [slabSize]atomic.Pointer[block]
	freed  [slabSize]atomic.Bool
	async  *asyncLedger // for a MemoryAsyncPool's slab
}

// asyncLedger is what the cleanup of a MemoryAsyncPool's slab needs to
// free a slot's memory: the pool, and each slot's address and size, the
// address stored last.
type asyncLedger struct {
	pool *MemoryAsyncPool
	ptr  [slabSize]atomic.Pointer[byte]
	size [slabSize]int
}

func (l *slabLedger) lose() {
	for i := range l.blocks {
		if l.freed[i].Load() {
			continue
		}
		if b := l.blocks[i].Load(); b != nil {
			b.lose()
		} else if a := l.async; a != nil {
			if p := a.ptr[i].Load(); p != nil {
				a.pool.lose(unsafe.Pointer(p), a.size[i])
			}
		}
	}
}

// slot returns a Memory of the slab in cur, its ledger and its index,
// taking a new slab where that one is full; a new slab's ledger is for the
// memory of async, when it is not nil.
func slot(cur *atomic.Pointer[memSlab], async *MemoryAsyncPool) (*Memory, *slabLedger, int32) {
	for {
		s := cur.Load()
		if s != nil {
			if i := s.next.Add(1) - 1; i < slabSize {
				return &s.mem[i], s.ledger, i
			}
		}
		ns := &memSlab{ledger: new(slabLedger)}
		if async != nil {
			ns.ledger.async = &asyncLedger{pool: async}
		}
		runtime.AddCleanup(ns, (*slabLedger).lose, ns.ledger)
		cur.CompareAndSwap(s, ns)
	}
}

// newPooled returns a Memory of p for block b, from the current slab.
func (p *MemoryPool) newPooled(b *block, size int) *Memory {
	m, l, i := slot(&p.slab, nil)
	*m = Memory{ptr: b.ptr, size: size, dev: b.chunk.dev, managed: b.chunk.managed, owner: b, ledger: l, slot: i}
	l.blocks[i].Store(b)
	return m
}

// NewMemoryPool returns a pool that takes its memory from upstream; nil
// upstream is DefaultDevice's cuMemAlloc. A Device upstream (cuMemAlloc on
// that device) makes a pool per device:
//
//	pool, err := highlevel.NewMemoryPool(highlevel.Device(1))
//	x, err := highlevel.AllocArray[float32](pool, n)
func NewMemoryPool(upstream Allocator) (*MemoryPool, error) {
	if upstream == nil {
		d, err := DefaultDevice()
		if err != nil {
			return nil, opErr("new memory pool", err)
		}
		upstream = d
	}
	p := &MemoryPool{overPool: isPool(upstream)}
	switch u := upstream.(type) {
	case Device:
		p.dev, p.devOK = u, true
	case interface{ Device() Device }:
		p.dev, p.devOK = u.Device(), true
	}
	p.arena = newArena(func(n int) (chunk, error) {
		// Unreported: the pool may recover from running out of memory.
		m, err := allocUpstream(upstream, n)
		if err != nil {
			return chunk{}, inner(err)
		}
		if err := fitsAllocation(m, n, 1); err != nil {
			return chunk{}, err
		}
		if memRecording.Load() {
			recordSegment(m)
		}
		return chunk{ptr: m.Ptr(), size: n, dev: m.Device(), managed: m.mem.managed, release: m.mem.free}, nil
	}, settleDevices)
	p.arena.dev = p.dev
	registerPool(registeredPool{mem: weak.Make(p)})
	return p, nil
}

// settleDevices waits until the devices the program used have finished
// their work, before a pool reuses lost blocks. Without CUDA there is no
// such work (the pool's tests).
func settleDevices() error {
	if initDevices() != nil {
		return nil
	}
	return synchronizeAll()
}

// DefaultMemoryPool returns the pool of DefaultDevice, which Alloc uses
// unless SetAllocator chose another allocator.
func DefaultMemoryPool() (*MemoryPool, error) {
	defaultPool.once.Do(func() { defaultPool.p, defaultPool.err = NewMemoryPool(nil) })
	return defaultPool.p, defaultPool.err
}

// errPerThreadPool refuses the per-thread default stream, a different
// stream on every OS thread, to a MemoryPool.
var errPerThreadPool = errors.New("the per-thread default stream is another stream on every OS thread; use a Stream")

// Alloc allocates size bytes for the legacy default stream. If the
// pool's upstream Allocator panics, the panic goes on to the caller of
// Alloc, as a panic of the Allocator's own Alloc would, and the pool's
// counts are as they were before the call.
func (p *MemoryPool) Alloc(size int) (MemoryPointer, error) {
	return p.AllocAsync(nil, size)
}

// AllocAsync allocates size bytes for use on stream s: see the type's
// documentation. A panic of the upstream Allocator goes on to the caller,
// as for Alloc.
func (p *MemoryPool) AllocAsync(s *Stream, size int) (MemoryPointer, error) {
	m, err := p.mallocStream(size, s)
	if err != nil {
		noteOutOfMemory(err)
		if p != nil && p.devOK {
			wrap(&err, "alloc", size, "bytes from a memory pool of", p.dev)
		} else {
			wrap(&err, "alloc", size, "bytes from a memory pool")
		}
	}
	return m, err
}

// mallocStream is AllocAsync without the operation in its errors: a
// third defer would make the pool hit's defers slower ones (the compiler
// open-codes only a few defers times returns).
func (p *MemoryPool) mallocStream(size int, s *Stream) (MemoryPointer, error) {
	if p == nil || p.arena == nil {
		return MemoryPointer{}, p.usable()
	}
	if err := checkSize(size, p.dev); err != nil { // before the pool's and the stream's states
		return MemoryPointer{}, err
	}
	if !p.life.Acquire() {
		return MemoryPointer{}, ErrClosed
	}
	defer p.life.Release()
	if s != nil {
		if s.perThread() {
			return MemoryPointer{}, errPerThreadPool
		}
		if s.state == nil || !s.life.Acquire() {
			return MemoryPointer{}, cmp.Or(s.usable(), ErrClosed) // a zero or closed stream
		}
		defer s.life.Release()
		if s.h == 0 {
			s = nil // the legacy default stream, however it is named
		} else {
			s.pooled.Store(true)
		}
	}
	b, err := p.alloc(size, s)
	if err != nil {
		return MemoryPointer{}, err
	}
	if s != nil && b.chunk.dev != s.dev {
		p.release(b)
		return MemoryPointer{}, invalid("memory of %v for a stream of %v", b.chunk.dev, s.dev)
	}
	return MemoryPointer{mem: p.newPooled(b, size)}, nil
}

// allocUnreported is Alloc without the out-of-memory report, for a pool
// upstream of which p is.
func (p *MemoryPool) allocUnreported(size int) (MemoryPointer, error) {
	return p.mallocStream(size, nil)
}

// usable returns the error of a method called on a nil or zero MemoryPool;
// nil for a pool NewMemoryPool made.
func (p *MemoryPool) usable() error {
	if p == nil {
		return nilError("MemoryPool")
	}
	if p.arena == nil {
		return zeroError("MemoryPool", "NewMemoryPool")
	}
	return nil
}

// Device returns the device of the pool's upstream allocator: the Device
// given to NewMemoryPool, or the device of the pool given; 0 for a nil pool
// or an upstream allocator of no known device.
func (p *MemoryPool) Device() Device {
	if p == nil {
		return 0
	}
	return p.dev
}

// Close gives back the memory the pool holds free and makes later
// allocations return ErrClosed; a second Close returns ErrClosed too.
// Memory allocated before stays valid, and Free gives it back to the
// upstream allocator.
func (p *MemoryPool) Close() (err error) {
	defer wrap(&err, "close memory pool")
	if err := p.usable(); err != nil {
		return err
	}
	if err := closing(&p.life); err != nil {
		return err
	}
	return p.arena.StopHolding()
}

// The pool's statistics never fail: they are the pool's own counts, 0 for
// a nil pool, and stay readable after Close. What changes the pool
// (SetLimit, FreeAllBlocks, StopHolding) returns ErrClosed after Close.

// UsedBytes returns the bytes in use, counted in rounded sizes; 0 for a nil
// pool. Memory dropped without Free counts until the pool takes it back.
func (p *MemoryPool) UsedBytes() int { return p.pool().UsedBytes() }

// RequestedBytes returns the bytes in use as they were asked for.
func (p *MemoryPool) RequestedBytes() int { return p.pool().RequestedBytes() }

// FreeBytes returns the bytes held free for reuse.
func (p *MemoryPool) FreeBytes() int { return p.pool().FreeBytes() }

// TotalBytes returns the bytes held: UsedBytes plus FreeBytes.
func (p *MemoryPool) TotalBytes() int { return p.pool().TotalBytes() }

// NFreeBlocks returns the number of free blocks held.
func (p *MemoryPool) NFreeBlocks() int { return p.pool().NFreeBlocks() }

// ActiveBlocks returns the number of blocks in use.
func (p *MemoryPool) ActiveBlocks() int { return p.pool().ActiveBlocks() }

// Limit returns the limit SetLimit set, 0 for none.
func (p *MemoryPool) Limit() int { return p.pool().Limit() }

// SetLimit limits the bytes the pool holds (TotalBytes) to n; 0 removes
// the limit. An allocation that would pass it returns an error matching
// cudart.ErrorMemoryAllocation. The limit does not free what is held.
func (p *MemoryPool) SetLimit(n int) error {
	return p.change("set the limit of a memory pool", func(a *arena) error { return a.SetLimit(n) })
}

// SetLimitFraction sets the limit (SetLimit) to the fraction f, in [0, 1],
// of the total memory of the pool's device (CuPy's set_limit(fraction=));
// 0 removes the limit. The pool's device is that of its upstream allocator
// (see Device); a pool over an allocator of no known device returns an
// error.
func (p *MemoryPool) SetLimitFraction(f float64) error {
	const op = "set the limit of a memory pool"
	if err := p.usable(); err != nil {
		return opErr(op, err)
	}
	if !p.devOK {
		return opErr(op, invalid("by fraction: the pool's upstream allocator has no device"))
	}
	n, err := limitFraction(p.dev, f)
	if err != nil {
		return opErr(op, err)
	}
	return p.SetLimit(n)
}

// limitFraction returns the fraction f of d's total memory.
func limitFraction(d Device, f float64) (int, error) {
	if !(f >= 0 && f <= 1) { // NaN too
		return 0, invalid("fraction %v: it must be in [0, 1]", f)
	}
	if f == 0 {
		return 0, nil
	}
	_, total, err := d.MemInfo()
	if err != nil {
		return 0, fmt.Errorf("fraction %v of %v: %s", f, d, bare(inner(err)))
	}
	return max(int(f*float64(total)), 1), nil
}

// FreeAllBlocks gives the memory held free back to the upstream allocator.
func (p *MemoryPool) FreeAllBlocks() error {
	return p.change("free the blocks of a memory pool", (*arena).FreeAllBlocks)
}

// FreeAllBlocksStream gives back the memory held free for stream s (nil:
// the legacy default stream) only, where FreeAllBlocks gives back the
// blocks of every stream (CuPy's free_all_blocks(stream=)). It refuses the
// per-thread default stream, as AllocAsync does, and closed streams,
// whose blocks serve the legacy default stream.
func (p *MemoryPool) FreeAllBlocksStream(s *Stream) error {
	const op = "free the blocks of a memory pool for a stream"
	if s != nil {
		switch {
		case s.perThread():
			return opErr(op, errPerThreadPool)
		case s.state == nil:
			return opErr(op, s.usable())
		case s.life.Closed():
			return opErr(op, ErrClosed)
		case s.h == 0:
			s = nil
		}
	}
	return p.change(op, func(a *arena) error { return a.freeBlocks(s, false) })
}

// StopHolding gives back the memory held free, and from now on gives back
// each upstream allocation as soon as it is wholly free.
func (p *MemoryPool) StopHolding() error {
	return p.change("stop holding memory in a memory pool", (*arena).StopHolding)
}

// change runs f, operation op that changes the pool: a nil or closed pool
// refuses it.
func (p *MemoryPool) change(op string, f func(*arena) error) error {
	if err := p.usable(); err != nil {
		return opErr(op, err)
	}
	if !p.life.Acquire() {
		return opErr(op, ErrClosed)
	}
	defer p.life.Release()
	return opErr(op, f(p.arena))
}

func (p *MemoryPool) pool() *arena {
	if p == nil {
		return nil
	}
	return p.arena
}

// free gives the memory back to the pool; a block is the owner of the
// Memory made of it.
func (b *block) free(*Memory) error { return b.arena.release(b) }

// A MemoryAsyncPool allocates stream-ordered memory from a CUDA memory
// pool (cuMemAllocFromPoolAsync; CuPy's MemoryAsyncPool): memory freed on a
// stream is reused by later allocations on that stream, in the order of
// the stream's work. Its Memory values come in slabs of 64, as a
// MemoryPool's do: memory dropped without Free is freed once the other
// Memory values of its slab are unreachable too and the pool has moved on
// to a new slab or was closed, after a device-wide wait. Its statistics
// never fail, as MemoryPool's; UsedBytes, FreeBytes, TotalBytes and
// ReleaseThreshold are CUDA's, for the whole CUDA pool (allocations made
// around the MemoryAsyncPool included), and 0 for a closed pool.
//
// The zero value is not usable: make one with NewMemoryAsyncPool (or
// DeviceMemoryAsyncPool); its methods return an error wrapping ErrNil, and
// its statistics 0.
type MemoryAsyncPool struct {
	h     uintptr
	dev   Device
	ctx   unsafe.Pointer // nil in a zero MemoryAsyncPool
	owned bool
	life  life
	// allocs counts the allocations not yet freed, plus one until Close,
	// of a pool NewMemoryAsyncPool created: the pool is destroyed when it
	// drops to 0, since frees still queued into a destroyed pool crash the
	// driver.
	allocs atomic.Int64
	// inUse counts the bytes allocated through p and not yet freed, for
	// limit (0: none).
	inUse, limit atomic.Int64
	// slab holds the Memory values the pool hands out, as a MemoryPool's
	// does: memory dropped without Free is freed once the other Memory
	// values of its slab are unreachable too and the pool has moved on
	// to a new slab, or was closed.
	slab atomic.Pointer[memSlab]
	// legacy owns the memory allocated on the legacy default stream.
	legacy asyncOwner
}

// NewMemoryAsyncPool creates a CUDA memory pool on d.
func NewMemoryAsyncPool(d Device) (_ *MemoryAsyncPool, err error) {
	defer func() {
		if err != nil {
			wrap(&err, "new memory async pool on", d)
		}
	}()
	ctx, err := d.context()
	if err != nil {
		return nil, err
	}
	var h uintptr
	if err := check("cuMemPoolCreate", driver.MemPoolCreate(ctx, &h, int32(d))); err != nil {
		return nil, err
	}
	p := &MemoryAsyncPool{h: h, dev: d, ctx: ctx, owned: true}
	p.legacy.p = p
	p.allocs.Store(1)
	registerPool(registeredPool{async: weak.Make(p)})
	return p, nil
}

// unref drops one of the pool's references (an allocation's, or Close's)
// and destroys the pool with the last.
func (p *MemoryAsyncPool) unref() error {
	if !p.owned || p.allocs.Add(-1) != 0 {
		return nil
	}
	return p.destroy()
}

// destroy destroys the pool once every device the program used has done
// the work queued so far: the frees queued into the pool, on whichever
// streams, and the kernels queued before them. CUDA releases a destroyed
// pool's memory at once, and a free still queued into it crashes the
// driver. While a stream captures (or from a callback) that wait cannot be
// made: the pool is left to the next allocation's freeLost, as lost memory
// is.
func (p *MemoryAsyncPool) destroy() error {
	if err := synchronizeAll(); errors.Is(err, ErrCapturing) || errors.Is(err, ErrInCallback) {
		lostMemory{ctx: p.ctx, pool: p, destroy: true}.lose()
		return nil
	} else if err != nil {
		// A device failed; its work is over.
		return errors.Join(err, p.destroyNow())
	}
	return p.destroyNow()
}

// destroyNow destroys the pool, whose work is done, or, while a capture in
// CaptureGlobal mode refuses that, once such captures have ended.
func (p *MemoryAsyncPool) destroyNow() error {
	return check("cuMemPoolDestroy", afterGlobalCaptures(func() int32 { return driver.MemPoolDestroy(p.ctx, p.h) }))
}

// DeviceMemoryAsyncPool returns d's default CUDA memory pool, the one
// cudaMallocAsync and cuMemAllocAsync use. Close does nothing to it.
func DeviceMemoryAsyncPool(d Device) (_ *MemoryAsyncPool, err error) {
	defer func() {
		if err != nil {
			wrap(&err, "memory async pool of", d)
		}
	}()
	ctx, err := d.context()
	if err != nil {
		return nil, err
	}
	var h uintptr
	if err := check("cuDeviceGetDefaultMemPool", driver.DefaultMemPool(ctx, &h, int32(d))); err != nil {
		return nil, err
	}
	p := &MemoryAsyncPool{h: h, dev: d, ctx: ctx}
	p.legacy.p = p
	registerPool(registeredPool{async: weak.Make(p)})
	return p, nil
}

// AllocAsync allocates size bytes from the default CUDA memory pool of s's
// device (nil: DefaultDevice's, on the legacy default stream), ordered on
// s. Free frees it on the same stream. It is a convenience over
// DeviceMemoryAsyncPool(d).AllocAsync(s, size).
func AllocAsync(s *Stream, size int) (MemoryPointer, error) {
	if err := positive(size); err != nil { // before the driver
		return MemoryPointer{}, opErr(fmt.Sprintf("alloc %d bytes async", size), err)
	}
	var d Device
	if s != nil {
		d = s.dev
	} else {
		var err error
		if d, err = DefaultDevice(); err != nil {
			return MemoryPointer{}, opErr(fmt.Sprintf("alloc %d bytes async", size), err)
		}
	}
	st, err := d.state()
	if err == nil {
		st.asyncOnce.Do(func() { st.async, st.asyncErr = DeviceMemoryAsyncPool(d) })
		err = inner(st.asyncErr)
	}
	if err != nil {
		return MemoryPointer{}, opErr(fmt.Sprintf("alloc %d bytes async on %v", size, d), err)
	}
	return st.async.AllocAsync(s, size)
}

// Device returns the pool's device; 0 for a nil pool.
func (p *MemoryAsyncPool) Device() Device {
	if p == nil {
		return 0
	}
	return p.dev
}

// usable returns the error of a method called on a nil or zero
// MemoryAsyncPool; nil for a pool the package made.
func (p *MemoryAsyncPool) usable() error {
	if p == nil {
		return nilError("MemoryAsyncPool")
	}
	if p.ctx == nil {
		return zeroError("MemoryAsyncPool", "NewMemoryAsyncPool")
	}
	return nil
}

// use begins an operation on the pool; p.life.Release ends it.
func (p *MemoryAsyncPool) use() error {
	if p == nil || p.ctx == nil {
		return p.usable()
	}
	if !p.life.Acquire() {
		return ErrClosed
	}
	return nil
}

// Alloc allocates size bytes on the legacy default stream.
func (p *MemoryAsyncPool) Alloc(size int) (MemoryPointer, error) {
	return p.AllocAsync(nil, size)
}

// AllocAsync allocates size bytes ordered on s, a stream of the pool's
// device (nil: the legacy default stream). Free frees it on the same
// stream, or, once s is closed (which waited for s's work), at once.
func (p *MemoryAsyncPool) AllocAsync(s *Stream, size int) (MemoryPointer, error) {
	m, err := p.mallocAsync(size, s)
	if err != nil {
		noteOutOfMemory(err)
		wrap(&err, "alloc", size, "bytes async from a memory async pool of", p.Device())
	}
	return m, err
}

// allocUnreported is Alloc without the out-of-memory report, for a pool
// upstream of which p is.
func (p *MemoryAsyncPool) allocUnreported(size int) (MemoryPointer, error) {
	return p.mallocAsync(size, nil)
}

// mallocAsync is AllocAsync without the operation in its errors, so that
// its defers stay open-coded.
func (p *MemoryAsyncPool) mallocAsync(size int, s *Stream) (MemoryPointer, error) {
	if err := p.usable(); err != nil {
		return MemoryPointer{}, err
	}
	if err := checkSize(size, p.dev); err != nil { // before the pool's and the stream's states
		return MemoryPointer{}, err
	}
	if !p.life.Acquire() {
		return MemoryPointer{}, ErrClosed
	}
	defer p.life.Release()
	freeLost() // before enter: it may free memory of s (asyncOwner)
	sh, err := s.enter(p.dev)
	if err != nil {
		return MemoryPointer{}, err
	}
	defer s.leave()
	o := p.owner(s)
	if err := p.reserve(size); err != nil {
		return MemoryPointer{}, err
	}
	a := driver.MallocAsync(uintptr(p.ctx), uintptr(size), p.h, sh)
	if err := check("cuMemAllocFromPoolAsync", a.R); err != nil {
		p.inUse.Add(-int64(size))
		return MemoryPointer{}, outOfMemory(size, p.dev, err)
	}
	if p.owned {
		p.allocs.Add(1)
	}
	m, l, i := slot(&p.slab, p)
	*m = Memory{ptr: a.P, size: size, dev: p.dev, owner: o, ledger: l, slot: i}
	l.async.size[i] = size
	l.async.ptr[i].Store((*byte)(a.P))
	if memRecording.Load() {
		recordAddr(a.P, size, p.dev, s, memAsyncPool)
	}
	return MemoryPointer{mem: m}, nil
}

// owner returns the owner of memory allocated from p on s, which a stream
// keeps for the pool it last allocated from, so that an allocation makes
// none.
func (p *MemoryAsyncPool) owner(s *Stream) *asyncOwner {
	if s == nil {
		return &p.legacy
	}
	if o := s.asyncOwner.Load(); o != nil && o.p == p {
		return o
	}
	o := &asyncOwner{s, p}
	s.asyncOwner.Store(o)
	if !s.pooled.Load() {
		s.pooled.Store(true) // Close waits for its work: see asyncOwner
	}
	return o
}

// reserve counts size more bytes in use, unless that passes the limit.
func (p *MemoryAsyncPool) reserve(size int) error {
	for {
		used, limit := p.inUse.Load(), p.limit.Load()
		if limit > 0 && used+int64(size) > limit {
			return &OutOfMemoryError{Size: size, Device: p.dev, Limit: int(limit), Held: int(used)}
		}
		if p.inUse.CompareAndSwap(used, used+int64(size)) {
			return nil
		}
	}
}

// lose queues size bytes at ptr, allocated from p, as lost memory: freed,
// and counted out of p, after the device-wide wait of a later allocation.
func (p *MemoryAsyncPool) lose(ptr unsafe.Pointer, size int) {
	lostMemory{ptr: ptr, ctx: p.ctx, pool: p, size: size}.lose()
}

// asyncOwner frees with cuMemFreeAsync on the stream of the allocation.
type asyncOwner struct {
	s *Stream
	p *MemoryAsyncPool
}

func (o *asyncOwner) free(m *Memory) error {
	ctx, err := m.dev.context()
	if err != nil {
		return err
	}
	sh, err := o.s.enter(m.dev)
	if errors.Is(err, ErrClosed) {
		return o.freeClosed(m, ctx)
	}
	if err != nil {
		return err
	}
	defer o.s.leave()
	if memRecording.Load() {
		// Before the pool may hand the address out again. Where the
		// stream captures, the memory is freed later; the program's Free
		// is what the recorder sees.
		forgetAddr(m.ptr)
	}
	r := driver.FreeAsync(uintptr(ctx), uintptr(m.ptr), sh)
	if r == driver.Capturing {
		// The stream captures: the memory is lost memory, freed after
		// the device-wide wait of an allocation once no capture runs.
		o.p.lose(m.ptr, m.size)
		return nil
	}
	err = check("cuMemFreeAsync", r)
	if err == nil {
		o.p.inUse.Add(-int64(m.size))
		err = o.p.unref()
	}
	return err
}

// freeClosed frees m, memory of o's stream, which is closed. Once Close is
// done (closeMu), the stream's work is too: Close waits for it on a stream
// that allocated from a MemoryAsyncPool. So the free, with cuMemFree, is
// ordered after it. A stream that Close left to a capture still has work
// queued: its memory is lost memory, freed after the device-wide wait of
// the next allocation, as is memory cuMemFree fails to free while a
// capture refuses it.
func (o *asyncOwner) freeClosed(m *Memory, ctx unsafe.Pointer) error {
	o.s.closeMu.Lock()
	captured := o.s.capturedClose
	o.s.closeMu.Unlock()
	if memRecording.Load() {
		forgetAddr(m.ptr)
	}
	if captured || driver.Free(ctx, m.ptr) != 0 {
		o.p.lose(m.ptr, m.size)
		return nil
	}
	o.p.inUse.Add(-int64(m.size))
	return o.p.unref()
}

// attr returns the pool's attribute a; 0 for a nil or closed pool, or when
// CUDA fails (the statistics never fail: see UsedBytes).
func (p *MemoryAsyncPool) attr(a cudadrv.MemPool_attribute) int {
	if p.use() != nil {
		return 0
	}
	defer p.life.Release()
	var v uint64
	if driver.MemPoolGetAttribute(p.ctx, p.h, int32(a), &v) != 0 {
		return 0
	}
	return int(min(v, uint64(math.MaxInt)))
}

// The pool's statistics never fail, as MemoryPool's: they are 0 for a nil
// or closed pool, and for a pool whose device has failed (a sticky error
// its next allocation returns). UsedBytes, FreeBytes and TotalBytes are
// CUDA's counts for the whole pool, allocations made around the
// MemoryAsyncPool (cudaMallocAsync on a device's default pool) included.

// UsedBytes returns the bytes allocated from the pool and not yet freed
// (CU_MEMPOOL_ATTR_USED_MEM_CURRENT).
func (p *MemoryAsyncPool) UsedBytes() int { return p.attr(cudadrv.MEMPOOL_ATTR_USED_MEM_CURRENT) }

// FreeBytes returns the bytes the pool holds unused: TotalBytes less
// UsedBytes.
func (p *MemoryAsyncPool) FreeBytes() int {
	return max(p.TotalBytes()-p.UsedBytes(), 0)
}

// TotalBytes returns the bytes the pool holds from the device
// (CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT).
func (p *MemoryAsyncPool) TotalBytes() int {
	return p.attr(cudadrv.MEMPOOL_ATTR_RESERVED_MEM_CURRENT)
}

// ReleaseThreshold returns the bytes the pool keeps when a stream
// synchronizes (CU_MEMPOOL_ATTR_RELEASE_THRESHOLD); memory beyond it is
// given back to the device.
func (p *MemoryAsyncPool) ReleaseThreshold() int {
	return p.attr(cudadrv.MEMPOOL_ATTR_RELEASE_THRESHOLD)
}

// SetReleaseThreshold sets ReleaseThreshold; math.MaxInt keeps everything.
func (p *MemoryAsyncPool) SetReleaseThreshold(n int) (err error) {
	defer wrap(&err, "set the release threshold of a memory async pool")
	if n < 0 {
		return invalid("threshold %d: it must not be negative", n)
	}
	if err := p.use(); err != nil {
		return err
	}
	defer p.life.Release()
	return check("cuMemPoolSetAttribute", driver.MemPoolSetAttribute(p.ctx, p.h, int32(cudadrv.MEMPOOL_ATTR_RELEASE_THRESHOLD), uint64(n)))
}

// Limit returns the limit SetLimit set, 0 for none.
func (p *MemoryAsyncPool) Limit() int {
	if p == nil {
		return 0
	}
	return int(p.limit.Load())
}

// SetLimit limits the bytes allocated through this MemoryAsyncPool and not
// yet freed to n; 0 removes the limit. CUDA's pools have no such limit, so
// the MemoryAsyncPool counts its own allocations (those of others on a
// device's default pool do not count): one that would pass the limit
// returns an error matching cudart.ErrorMemoryAllocation.
func (p *MemoryAsyncPool) SetLimit(n int) (err error) {
	defer wrap(&err, "set the limit of a memory async pool")
	if n < 0 {
		return invalid("limit %d: it must not be negative", n)
	}
	if err := p.use(); err != nil {
		return err
	}
	defer p.life.Release()
	p.limit.Store(int64(n))
	return nil
}

// SetLimitFraction sets the limit (SetLimit) to the fraction f, in [0, 1],
// of the total memory of the pool's device; 0 removes the limit.
func (p *MemoryAsyncPool) SetLimitFraction(f float64) error {
	const op = "set the limit of a memory async pool"
	if err := p.use(); err != nil {
		return opErr(op, err)
	}
	p.life.Release()
	n, err := limitFraction(p.dev, f)
	if err != nil {
		return opErr(op, err)
	}
	return p.SetLimit(n)
}

// FreeAllBlocks gives the memory the pool holds unused back to the device
// (cuMemPoolTrimTo with nothing kept).
func (p *MemoryAsyncPool) FreeAllBlocks() (err error) {
	defer wrap(&err, "free the blocks of a memory async pool")
	if err := p.use(); err != nil {
		return err
	}
	defer p.life.Release()
	return check("cuMemPoolTrimTo", driver.MemPoolTrim(p.ctx, p.h, 0))
}

// Close destroys a pool NewMemoryAsyncPool created, once the memory still
// allocated from it has been freed (memory stays valid until then) and
// the frees have run: the Close or Free that drops the last allocation
// waits until every device the program used has done the work queued so
// far, or, while a stream captures, leaves the pool to the next
// allocation to destroy. Operations in progress finish first; later ones
// return ErrClosed, and so does a second Close. Closing a device's default
// pool only makes the MemoryAsyncPool unusable.
func (p *MemoryAsyncPool) Close() (err error) {
	defer wrap(&err, "close memory async pool")
	if err := p.usable(); err != nil {
		return err
	}
	if err := closing(&p.life); err != nil {
		return err
	}
	// The last slab may go, and with it the memory dropped without Free.
	p.slab.Store(nil)
	return p.unref()
}
