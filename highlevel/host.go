package highlevel

// #include "shim.h"
import "C"

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"
)

// PinnedMemory is page-locked host memory (cudaHostAlloc, portable to
// every device): the GPU copies to and from it at the link's full speed,
// and asynchronous copies with it are truly asynchronous. It is C memory,
// not Go memory, so its lifetime is explicit, as syscall.Mmap's is: Bytes
// and Ptr are views valid until Free. A PinnedMemory dropped without Free
// is never freed nor handed out again, since a view of it may still be in
// use (the garbage collector cannot see views of C memory): forgetting Free
// leaks it, and its pool counts it in ActiveBlocks.
type PinnedMemory struct {
	ptr   unsafe.Pointer
	size  int
	ctx   unsafe.Pointer // the context it was allocated in
	block *block         // nil: from AllocPinnedMemory
	freed atomic.Bool
}

// AllocPinnedMemory allocates size bytes of pinned host memory, unpooled.
func AllocPinnedMemory(size int) (*PinnedMemory, error) {
	if err := checkSize("pinned allocation", size); err != nil {
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
	if err := check("cudaHostAlloc", C.hl_malloc_host(ctx, &p, C.size_t(size))); err != nil {
		return nil, fmt.Errorf("%w (%d bytes)", err, size)
	}
	return &PinnedMemory{ptr: p, size: size, ctx: ctx}, nil
}

// Ptr returns the memory's address; nil for a nil PinnedMemory.
func (m *PinnedMemory) Ptr() unsafe.Pointer {
	if m == nil {
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

// Bytes returns the memory as a byte slice, valid until Free.
func (m *PinnedMemory) Bytes() []byte {
	if m == nil {
		return nil
	}
	return unsafe.Slice((*byte)(m.ptr), m.size)
}

// Free gives the memory back (to its pool, if it came from one). A second
// Free returns ErrFreed. The memory must not be in use by an asynchronous
// copy still queued.
func (m *PinnedMemory) Free() error {
	if m == nil {
		return nilError("PinnedMemory")
	}
	if !m.freed.CompareAndSwap(false, true) {
		return ErrFreed
	}
	if m.block != nil {
		return m.block.arena.release(m.block)
	}
	return check("cudaFreeHost", C.hl_free_host(m.ctx, m.ptr))
}

// A PinnedMemoryPool is a caching allocator of pinned host memory (CuPy's
// PinnedMemoryPool, PyCUDA's PageLockedMemoryPool), with MemoryPool's
// rounding, best fit, splitting and merging, and no streams: memory handed
// to an asynchronous copy must not be freed before the copy is done. It is
// safe for use by several goroutines.
type PinnedMemoryPool struct {
	*arena
}

// NewPinnedMemoryPool returns an empty pool.
func NewPinnedMemoryPool() *PinnedMemoryPool {
	return &PinnedMemoryPool{newArena(func(n int) (chunk, error) {
		m, err := AllocPinnedMemory(n)
		if err != nil {
			return chunk{}, err
		}
		return chunk{ptr: m.ptr, size: n, release: m.Free}, nil
	}, nil)}
}

var defaultPinnedPool = sync.OnceValue(NewPinnedMemoryPool)

// DefaultPinnedMemoryPool returns the process's pinned memory pool.
func DefaultPinnedMemoryPool() *PinnedMemoryPool { return defaultPinnedPool() }

// Malloc allocates size bytes of pinned memory from the pool.
func (p *PinnedMemoryPool) Malloc(size int) (*PinnedMemory, error) {
	if p == nil {
		return nil, nilError("PinnedMemoryPool")
	}
	b, err := p.alloc(size, nil)
	if err != nil {
		return nil, err
	}
	return &PinnedMemory{ptr: b.ptr, size: size, block: b}, nil
}

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
func (p *PinnedMemoryPool) SetLimit(n int) error { return p.pool().SetLimit(n) }

// FreeAllBlocks gives the memory held free back to CUDA.
func (p *PinnedMemoryPool) FreeAllBlocks() error { return p.pool().FreeAllBlocks() }

// StopHolding gives back the memory held free, and from now on gives back
// each allocation from CUDA as soon as it is wholly free.
func (p *PinnedMemoryPool) StopHolding() error { return p.pool().StopHolding() }

func (p *PinnedMemoryPool) pool() *arena {
	if p == nil {
		return nil
	}
	return p.arena
}

// A HostRegistration is Go memory registered with CUDA (cudaHostRegister,
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
type HostRegistration struct {
	mu    sync.Mutex
	reg   *registration // nil after Unregister
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

var registrations sync.Map // *registration -> struct{}

// RegisterHost registers s's backing array with CUDA.
func RegisterHost[T any](s []T) (*HostRegistration, error) {
	if err := checkElem[T](); err != nil {
		return nil, err
	}
	if len(s) == 0 {
		return nil, fmt.Errorf("highlevel: RegisterHost of an empty slice")
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
	if err := check("cudaHostRegister", C.hl_host_register(ctx, reg.ptr, C.size_t(size))); err != nil {
		reg.pin.Unpin()
		return nil, err
	}
	registrations.Store(reg, struct{}{})
	r := &HostRegistration{reg: reg}
	r.clean = runtime.AddCleanup(r, lostMemory.lose, lostMemory{reg: reg})
	return r, nil
}

// Unregister unregisters and unpins the memory. A second Unregister does
// nothing and returns nil.
func (r *HostRegistration) Unregister() error {
	if r == nil {
		return nilError("HostRegistration")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.reg == nil {
		return nil
	}
	r.clean.Stop()
	err := r.reg.unregister()
	r.reg = nil
	return err
}

func (reg *registration) unregister() error {
	err := check("cudaHostUnregister", C.hl_host_unregister(reg.ctx, reg.ptr))
	reg.pin.Unpin()
	registrations.Delete(reg)
	return err
}
