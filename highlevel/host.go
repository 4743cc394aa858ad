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

// PinnedMemory is page-locked host memory (cudaMallocHost): the GPU copies
// to and from it at the link's full speed, and asynchronous copies with it
// are truly asynchronous. It is C memory, not Go memory: Bytes is a view of
// it that is valid until Free.
type PinnedMemory struct {
	ptr   unsafe.Pointer
	size  int
	block *block // nil: from AllocPinnedMemory
	freed atomic.Bool
	clean runtime.Cleanup
}

// AllocPinnedMemory allocates size bytes of pinned host memory, unpooled.
func AllocPinnedMemory(size int) (*PinnedMemory, error) {
	if size <= 0 {
		return nil, fmt.Errorf("highlevel: pinned allocation of %d bytes: size must be positive", size)
	}
	if err := load(); err != nil {
		return nil, err
	}
	freeLost()
	var p unsafe.Pointer
	if err := check("cudaMallocHost", C.hl_malloc_host(&p, C.size_t(size))); err != nil {
		return nil, fmt.Errorf("%w (%d bytes)", err, size)
	}
	m := &PinnedMemory{ptr: p, size: size}
	m.clean = runtime.AddCleanup(m, lostMemory.lose, lostMemory{ptr: p, host: true})
	return m, nil
}

// Ptr returns the memory's address.
func (m *PinnedMemory) Ptr() unsafe.Pointer { return m.ptr }

// Size returns the memory's size in bytes.
func (m *PinnedMemory) Size() int { return m.size }

// Bytes returns the memory as a byte slice, valid until Free.
func (m *PinnedMemory) Bytes() []byte { return unsafe.Slice((*byte)(m.ptr), m.size) }

// Free gives the memory back (to its pool, if it came from one). A second
// Free returns ErrFreed.
func (m *PinnedMemory) Free() error {
	if m == nil || !m.freed.CompareAndSwap(false, true) {
		return ErrFreed
	}
	m.clean.Stop()
	if m.block != nil {
		return m.block.arena.release(m.block)
	}
	return check("cudaFreeHost", C.hl_free_host(m.ptr))
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
	})}
}

var defaultPinnedPool = sync.OnceValue(NewPinnedMemoryPool)

// DefaultPinnedMemoryPool returns the process's pinned memory pool.
func DefaultPinnedMemoryPool() *PinnedMemoryPool { return defaultPinnedPool() }

// Malloc allocates size bytes of pinned memory from the pool.
func (p *PinnedMemoryPool) Malloc(size int) (*PinnedMemory, error) {
	b, err := p.alloc(size, 0)
	if err != nil {
		return nil, err
	}
	m := &PinnedMemory{ptr: b.ptr, size: size, block: b}
	m.clean = runtime.AddCleanup(m, (*block).lose, b)
	return m, nil
}

// A HostRegistration is Go memory registered with CUDA (cudaHostRegister),
// so that copies with it run as with pinned memory.
//
// The rules: the memory is a Go slice whose elements hold no Go pointers.
// Registering pins its backing array (runtime.Pinner), so it neither moves
// nor is collected, until Unregister, which must be called: a registration
// dropped without it leaks, and the Go runtime reports the pinned memory.
// Appending past the slice's capacity makes a new array, which is not
// registered. While an asynchronous copy with the memory runs, the program
// must not touch it, and must not Unregister before the copy is done.
type HostRegistration struct {
	mu   sync.Mutex
	pin  runtime.Pinner
	ptr  unsafe.Pointer
	size int
}

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
	r := &HostRegistration{ptr: unsafe.Pointer(unsafe.SliceData(s)), size: len(s) * int(unsafe.Sizeof(s[0]))}
	r.pin.Pin(r.ptr)
	if err := check("cudaHostRegister", C.hl_host_register(r.ptr, C.size_t(r.size), C.cudaHostRegisterDefault)); err != nil {
		r.pin.Unpin()
		return nil, err
	}
	return r, nil
}

// Unregister unregisters and unpins the memory. A second Unregister does
// nothing and returns nil.
func (r *HostRegistration) Unregister() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ptr == nil {
		return nil
	}
	err := check("cudaHostUnregister", C.hl_host_unregister(r.ptr))
	r.pin.Unpin()
	r.ptr = nil
	return err
}
