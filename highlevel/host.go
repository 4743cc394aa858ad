package highlevel

import (
	"fmt"
	"reflect"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"
	"weak"

	"github.com/gocuda/cuda/highlevel/internal/driver"
)

// PinnedMemory is page-locked host memory (cuMemHostAlloc, portable to
// every device): the GPU copies to and from it at the link's full speed,
// and asynchronous copies with it are truly asynchronous. It is C memory,
// not Go memory, so its lifetime is explicit, as syscall.Mmap's is: the
// views Bytes, PinnedSlice and Ptr return are valid until Free, and must
// not be used after it. A PinnedMemory dropped without Free is never freed
// nor handed out again, since a view of it may still be in use (the
// garbage collector cannot see views of C memory): forgetting Free leaks
// it, and its pool counts it in ActiveBlocks.
//
// The zero value is not usable: make one with AllocPinned (or
// AllocPinnedUnpooled, PinnedMemoryPool.Alloc); Free on it returns an error wrapping
// ErrNil, and its views are empty.
type PinnedMemory struct {
	ptr   unsafe.Pointer // nil in a zero PinnedMemory
	size  int
	ctx   unsafe.Pointer // the context it was allocated in
	block *block         // nil: from AllocPinnedUnpooled
	freed atomic.Bool
}

// SetPinnedMemoryAllocator makes alloc the process's pinned memory
// allocator (CuPy's set_pinned_memory_allocator): the one AllocPinned
// and the staging buffers of copies from and to pageable memory use; nil
// restores DefaultPinnedMemoryPool().Alloc. alloc may be another pool's
// Alloc, or AllocPinnedUnpooled for no pooling. As with SetAllocator, the allocator
// is fixed at its first use: after the first AllocPinned or staged
// copy, SetPinnedMemoryAllocator changes nothing and returns
// ErrAllocatorInUse.
func SetPinnedMemoryAllocator(alloc func(size int) (*PinnedMemory, error)) error {
	pinnedAllocator.mu.Lock()
	defer pinnedAllocator.mu.Unlock()
	if pinnedAllocator.fixed.Load() != nil {
		return ErrAllocatorInUse
	}
	pinnedAllocator.set = alloc
	return nil
}

// pinnedAlloc returns the pinned memory allocator, fixing it.
func pinnedAlloc() func(int) (*PinnedMemory, error) {
	if f := pinnedAllocator.fixed.Load(); f != nil {
		return *f
	}
	pinnedAllocator.mu.Lock()
	defer pinnedAllocator.mu.Unlock()
	if f := pinnedAllocator.fixed.Load(); f != nil {
		return *f
	}
	f := pinnedAllocator.set
	if f == nil {
		f = DefaultPinnedMemoryPool().Alloc
	}
	pinnedAllocator.fixed.Store(&f)
	return f
}

// AllocPinned allocates size bytes of pinned host memory from the
// process's pinned memory allocator (CuPy's alloc_pinned_memory): by
// default DefaultPinnedMemoryPool; see SetPinnedMemoryAllocator.
func AllocPinned(size int) (*PinnedMemory, error) {
	if err := checkSize(size, CPUDevice); err != nil {
		err = opErr(fmt.Sprintf("alloc %d bytes of pinned memory", size), err)
		noteOutOfMemory(err)
		return nil, err
	}
	m, err := pinnedAlloc()(size)
	if err != nil {
		if _, ok := err.(*opError); !ok { // an allocator of the program's
			err = opErr(fmt.Sprintf("alloc %d bytes of pinned memory", size), err)
		}
		noteOutOfMemory(err)
	}
	return m, err
}

// AllocPinnedUnpooled allocates size bytes of pinned host memory with cuMemHostAlloc,
// unpooled: Free gives it back to CUDA.
func AllocPinnedUnpooled(size int) (*PinnedMemory, error) {
	m, err := allocPinnedUnpooled(size)
	if err != nil {
		noteOutOfMemory(err)
	}
	return m, err
}

// allocPinnedUnpooled is AllocPinnedUnpooled without the out-of-memory
// report, for a PinnedMemoryPool, which may recover from it.
func allocPinnedUnpooled(size int) (_ *PinnedMemory, err error) {
	defer func() {
		if err != nil {
			wrap(&err, "alloc", size, "bytes of pinned memory")
		}
	}()
	if err := checkSize(size, CPUDevice); err != nil {
		return nil, err
	}
	if err := load(); err != nil {
		return nil, err
	}
	ctx, err := hostContext()
	if err != nil {
		return nil, err
	}
	freeLost()
	var p unsafe.Pointer
	if err := check("cuMemHostAlloc", driver.MallocHost(ctx, &p, uintptr(size))); err != nil {
		return nil, outOfMemory(size, CPUDevice, err)
	}
	if memRecording.Load() {
		recordAddr(p, size, CPUDevice, nil, memPinned)
	}
	return &PinnedMemory{ptr: p, size: size, ctx: ctx}, nil
}

// Ptr returns the memory's address, valid until Free; nil for a nil or
// freed PinnedMemory.
func (m *PinnedMemory) Ptr() unsafe.Pointer {
	if m == nil || m.freed.Load() {
		return nil
	}
	return m.ptr
}

// Size returns the memory's size in bytes; 0 for a nil PinnedMemory.
func (m *PinnedMemory) Size() int {
	if m == nil {
		return 0
	}
	return m.size
}

// Bytes returns the memory as a byte slice, valid until Free; nil for a
// nil or freed PinnedMemory.
func (m *PinnedMemory) Bytes() []byte {
	if m == nil || m.freed.Load() {
		return nil
	}
	return unsafe.Slice((*byte)(m.ptr), m.size)
}

// PinnedSlice returns the memory as a slice of T, valid until Free, as
// syscall.Mmap's memory is until Munmap: the slice must not be used after
// m.Free, which the collector cannot see. T must hold no Go pointers; the
// memory's address must be aligned for T, and its size a multiple of T's.
func PinnedSlice[T any](m *PinnedMemory) ([]T, error) {
	if err := m.usable(); err != nil {
		return nil, err
	}
	if err := checkElem[T](); err != nil {
		return nil, err
	}
	if m.freed.Load() {
		return nil, ErrFreed
	}
	size, align := int(unsafe.Sizeof(*new(T))), unsafe.Alignof(*new(T))
	if m.size%size != 0 {
		return nil, invalid("highlevel: %d bytes of pinned memory as %v: not a multiple of its size, %d", m.size, reflect.TypeFor[T](), size)
	}
	if uintptr(m.ptr)%align != 0 {
		return nil, invalid("highlevel: pinned memory at %p as %v: address not aligned to %d bytes", m.ptr, reflect.TypeFor[T](), align)
	}
	return unsafe.Slice((*T)(m.ptr), m.size/size), nil
}

// usable returns the error of an operation on a nil or zero PinnedMemory;
// nil for one the package made.
func (m *PinnedMemory) usable() error {
	if m == nil {
		return nilError("PinnedMemory")
	}
	if m.ptr == nil {
		return zeroError("PinnedMemory", "AllocPinned")
	}
	return nil
}

// Free gives the memory back (to its pool, if it came from one). A second
// Free returns ErrFreed. The memory must not be in use by an asynchronous
// copy still queued. In a stream callback or host function, Free returns
// ErrInCallback and changes nothing: a later Free frees it.
func (m *PinnedMemory) Free() (err error) {
	defer wrap(&err, "free pinned memory")
	if err := m.usable(); err != nil {
		return err
	}
	if inCallback() {
		return ErrInCallback
	}
	if !m.freed.CompareAndSwap(false, true) {
		return ErrFreed
	}
	if m.block != nil {
		return m.block.arena.release(m.block)
	}
	if memRecording.Load() {
		forgetAddr(m.ptr) // before the driver may hand the address out again
	}
	return check("cuMemFreeHost", driver.FreeHost(m.ctx, m.ptr))
}

// A PinnedMemoryPool is a caching allocator of pinned host memory (CuPy's
// PinnedMemoryPool, PyCUDA's PageLockedMemoryPool), with MemoryPool's
// rounding, best fit, splitting and merging, and no streams: memory handed
// to an asynchronous copy must not be freed before the copy is done. It is
// safe for use by several goroutines.
//
// The zero value is not usable: make one with NewPinnedMemoryPool (or use
// DefaultPinnedMemoryPool); its methods return an error wrapping ErrNil,
// and its statistics 0.
type PinnedMemoryPool struct {
	*arena
	life life
}

// NewPinnedMemoryPool returns an empty pool.
func NewPinnedMemoryPool() *PinnedMemoryPool {
	a := newArena(func(n int) (chunk, error) {
		m, err := allocPinnedUnpooled(n) // unreported: the pool may recover
		if err != nil {
			return chunk{}, inner(err)
		}
		if memRecording.Load() {
			recordPinnedSegment(m)
		}
		return chunk{ptr: m.ptr, size: n, release: m.Free}, nil
	}, nil)
	a.dev = CPUDevice
	p := &PinnedMemoryPool{arena: a}
	registerPool(registeredPool{pinned: weak.Make(p)})
	return p
}

// DefaultPinnedMemoryPool returns the process's pinned memory pool, the
// default pinned memory allocator (SetPinnedMemoryAllocator).
func DefaultPinnedMemoryPool() *PinnedMemoryPool { return defaultPinnedPool() }

// Alloc allocates size bytes of pinned memory from the pool.
func (p *PinnedMemoryPool) Alloc(size int) (_ *PinnedMemory, err error) {
	defer func() {
		if err != nil {
			noteOutOfMemory(err) // after p.life.Release: the hook may close p
			wrap(&err, "alloc", size, "bytes from a pinned memory pool")
		}
	}()
	if err := p.usable(); err != nil {
		return nil, err
	}
	if !p.life.Acquire() {
		return nil, ErrClosed
	}
	defer p.life.Release()
	b, err := p.alloc(size, nil)
	if err != nil {
		return nil, err
	}
	return &PinnedMemory{ptr: b.ptr, size: size, block: b}, nil
}

// Close gives back the memory the pool holds free and makes later
// allocations return ErrClosed, as MemoryPool.Close does; a second Close
// returns ErrClosed too. Memory allocated before stays valid until its
// Free. Copies from and to pageable memory that would stage through a
// closed pool (SetPinnedMemoryAllocator) run unstaged.
func (p *PinnedMemoryPool) Close() (err error) {
	defer wrap(&err, "close pinned memory pool")
	if err := p.usable(); err != nil {
		return err
	}
	if err := closing(&p.life); err != nil {
		return err
	}
	return p.arena.StopHolding()
}

// The pool's statistics never fail, as MemoryPool's.

// UsedBytes returns the bytes in use, counted in rounded sizes; 0 for a nil
// pool.
func (p *PinnedMemoryPool) UsedBytes() int { return p.pool().UsedBytes() }

// RequestedBytes returns the bytes in use as they were asked for.
func (p *PinnedMemoryPool) RequestedBytes() int { return p.pool().RequestedBytes() }

// FreeBytes returns the bytes held free for reuse.
func (p *PinnedMemoryPool) FreeBytes() int { return p.pool().FreeBytes() }

// TotalBytes returns the bytes held: UsedBytes plus FreeBytes.
func (p *PinnedMemoryPool) TotalBytes() int { return p.pool().TotalBytes() }

// NFreeBlocks returns the number of free blocks held.
func (p *PinnedMemoryPool) NFreeBlocks() int { return p.pool().NFreeBlocks() }

// ActiveBlocks returns the number of blocks in use, those dropped without
// Free included.
func (p *PinnedMemoryPool) ActiveBlocks() int { return p.pool().ActiveBlocks() }

// Limit returns the limit SetLimit set, 0 for none.
func (p *PinnedMemoryPool) Limit() int { return p.pool().Limit() }

// SetLimit limits the bytes the pool holds (TotalBytes) to n; 0 removes
// the limit.
func (p *PinnedMemoryPool) SetLimit(n int) error {
	return p.change("set the limit of a pinned memory pool", func(a *arena) error { return a.SetLimit(n) })
}

// FreeAllBlocks gives the memory held free back to CUDA.
func (p *PinnedMemoryPool) FreeAllBlocks() error {
	return p.change("free the blocks of a pinned memory pool", (*arena).FreeAllBlocks)
}

// StopHolding gives back the memory held free, and from now on gives back
// each allocation from CUDA as soon as it is wholly free.
func (p *PinnedMemoryPool) StopHolding() error {
	return p.change("stop holding memory in a pinned memory pool", (*arena).StopHolding)
}

// change runs f, operation op that changes the pool: a nil or closed pool
// refuses it.
func (p *PinnedMemoryPool) change(op string, f func(*arena) error) error {
	if err := p.usable(); err != nil {
		return opErr(op, err)
	}
	if !p.life.Acquire() {
		return opErr(op, ErrClosed)
	}
	defer p.life.Release()
	return opErr(op, f(p.arena))
}

// usable returns the error of a method called on a nil or zero
// PinnedMemoryPool; nil for a pool NewPinnedMemoryPool made.
func (p *PinnedMemoryPool) usable() error {
	if p == nil {
		return nilError("PinnedMemoryPool")
	}
	if p.arena == nil {
		return zeroError("PinnedMemoryPool", "NewPinnedMemoryPool")
	}
	return nil
}

func (p *PinnedMemoryPool) pool() *arena {
	if p == nil {
		return nil
	}
	return p.arena
}

// A HostRegistration is Go memory registered with CUDA (cuMemHostRegister,
// portable to every device), so that copies with it run as with pinned
// memory.
//
// The rules: the memory is a Go slice whose elements hold no Go pointers.
// Registering pins its backing array (runtime.Pinner), so it neither moves
// nor is collected, until Unregister. A registration dropped without
// Unregister is unregistered later, once every device the program used has
// finished its work. Appending past the slice's capacity makes a new array,
// which is not registered. While an asynchronous copy with the memory runs,
// the program must not touch it, and must not Unregister before the copy
// is done.
//
// The zero value is not usable: make one with RegisterHost; Unregister on
// it returns an error wrapping ErrNil.
type HostRegistration struct {
	mu    sync.Mutex
	reg   *registration // nil after Unregister, and in a zero HostRegistration
	done  bool          // Unregister ran
	clean runtime.Cleanup
}

// A registration is what a HostRegistration's cleanup needs: it must not
// reach the HostRegistration. registrations keeps it, and its Pinner,
// reachable until it is unregistered, so that the Pinner never finds
// itself dropped while pinning.
type registration struct {
	pin runtime.Pinner
	ptr unsafe.Pointer
	ctx unsafe.Pointer
}

// RegisterHost registers s's backing array with CUDA.
func RegisterHost[T any](s []T) (*HostRegistration, error) {
	if err := checkElem[T](); err != nil {
		return nil, err
	}
	if len(s) == 0 {
		return nil, invalid("highlevel: RegisterHost of an empty slice")
	}
	if err := load(); err != nil {
		return nil, err
	}
	ctx, err := hostContext()
	if err != nil {
		return nil, err
	}
	freeLost()
	reg := &registration{ptr: unsafe.Pointer(unsafe.SliceData(s)), ctx: ctx}
	reg.pin.Pin(reg.ptr)
	size := len(s) * int(unsafe.Sizeof(s[0]))
	if err := check("cuMemHostRegister", driver.HostRegister(ctx, reg.ptr, uintptr(size))); err != nil {
		reg.pin.Unpin()
		return nil, err
	}
	registrations.Store(reg, struct{}{})
	r := &HostRegistration{reg: reg}
	r.clean = runtime.AddCleanup(r, lostMemory.lose, lostMemory{reg: reg})
	return r, nil
}

// Unregister unregisters and unpins the memory. A second Unregister
// returns ErrClosed. In a stream callback or host function, where CUDA
// must not be called, it returns ErrInCallback and changes nothing.
func (r *HostRegistration) Unregister() error {
	if r == nil {
		return nilError("HostRegistration")
	}
	if inCallback() {
		return ErrInCallback
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.done:
		return ErrClosed
	case r.reg == nil:
		return zeroError("HostRegistration", "RegisterHost")
	}
	r.clean.Stop()
	err := r.reg.unregister()
	r.reg, r.done = nil, true
	return err
}

func (reg *registration) unregister() error {
	err := check("cuMemHostUnregister", driver.HostUnregister(reg.ctx, reg.ptr))
	reg.pin.Unpin()
	registrations.Delete(reg)
	return err
}
