package highlevel

// #include "shim.h"
import "C"

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/gocuda/cuda/cudart"
)

// Memory is one allocation of device memory: from cudaMalloc, a pool, a
// stream-ordered pool, or memory owned by someone else (UnownedMemory).
// Free gives it back; Memory that becomes unreachable without Free is given
// back by a cleanup (runtime.AddCleanup) as a safety net, so forgetting
// Free leaks nothing for long, but Free is what makes the memory reusable
// right away. A MemoryPointer, and so an Array, keeps its Memory reachable;
// the address Ptr returns does not.
type Memory struct {
	ptr     unsafe.Pointer
	size    int
	dev     Device
	owner   owner
	life    life            // Free waits for the copies in progress
	clean   runtime.Cleanup // the safety net, or, for a pool's Memory:
	ledger  *slabLedger     // its slab's ledger
	slot    int32
	managed bool // beside slot, so that a Memory takes 80 bytes (a pool slab holds 64)
}

// owner gives back the memory it handed out.
type owner interface {
	// free gives m back. It is called at most once.
	free(m *Memory) error
}

// Ptr returns the device address of the allocation; nil for a nil Memory.
func (m *Memory) Ptr() unsafe.Pointer {
	if m == nil {
		return nil
	}
	return m.ptr
}

// Size returns the size of the allocation in bytes; 0 for a nil Memory.
func (m *Memory) Size() int {
	if m == nil {
		return 0
	}
	return m.size
}

// Device returns the device the memory belongs to; 0 for a nil Memory.
func (m *Memory) Device() Device {
	if m == nil {
		return 0
	}
	return m.dev
}

// Free gives the memory back to where it came from, once the package's
// operations in progress on it (a copy in another goroutine) have
// finished. A second Free returns ErrFreed; so does every later operation
// on the memory.
func (m *Memory) Free() error {
	if m == nil {
		return nilError("Memory")
	}
	if !m.life.close() {
		return ErrFreed
	}
	m.clean.Stop()
	if m.ledger != nil {
		m.ledger.freed[m.slot].Store(true)
	}
	if m.owner == nil {
		return nil
	}
	return m.owner.free(m)
}

// live reports whether m can be used.
func (m *Memory) live() error {
	if m == nil || m.life.closed() {
		return ErrFreed
	}
	return nil
}

// A MemoryPointer is a position in a Memory: CuPy's MemoryPointer. The zero
// value points nowhere; every operation on it returns ErrFreed.
type MemoryPointer struct {
	Mem    *Memory
	Offset int
}

// Ptr returns the device address Offset bytes into the memory.
func (p MemoryPointer) Ptr() unsafe.Pointer {
	if p.Mem == nil {
		return nil
	}
	return unsafe.Add(p.Mem.ptr, p.Offset)
}

// Size returns the number of bytes from the pointer to the end of the memory.
func (p MemoryPointer) Size() int {
	if p.Mem == nil {
		return 0
	}
	return p.Mem.size - p.Offset
}

// Device returns the device of the memory.
func (p MemoryPointer) Device() Device {
	if p.Mem == nil {
		return 0
	}
	return p.Mem.dev
}

// Add returns the pointer moved n bytes further; n may be negative. The
// result must stay within the memory, its end included.
func (p MemoryPointer) Add(n int) (MemoryPointer, error) {
	if err := p.Mem.live(); err != nil {
		return MemoryPointer{}, err
	}
	if p.Offset < 0 || p.Offset > p.Mem.size || n < -p.Offset || n > p.Mem.size-p.Offset {
		return MemoryPointer{}, fmt.Errorf("highlevel: offset %d + %d is outside the %d bytes of the memory", p.Offset, n, p.Mem.size)
	}
	return MemoryPointer{p.Mem, p.Offset + n}, nil
}

// span begins an operation on n bytes from p, which must lie within its
// memory: it returns the device address and the primary context of its
// device, and p.Mem.life.release ends it. n == 0 is an error here: the
// operations return early for it.
func (p MemoryPointer) span(n int) (unsafe.Pointer, unsafe.Pointer, error) {
	if p.Mem == nil {
		return nil, nil, ErrFreed
	}
	if n <= 0 {
		return nil, nil, fmt.Errorf("highlevel: size %d: must not be negative", n)
	}
	if p.Offset < 0 || p.Offset > p.Mem.size || n > p.Mem.size-p.Offset {
		return nil, nil, fmt.Errorf("highlevel: %d bytes at offset %d are past the end of the %d bytes of the memory", n, p.Offset, p.Mem.size)
	}
	if !p.Mem.life.acquire() {
		return nil, nil, ErrFreed
	}
	ctx, err := p.Mem.dev.context()
	if err != nil {
		p.Mem.life.release()
		return nil, nil, err
	}
	return p.Ptr(), ctx, nil
}

// empty reports whether an operation on n bytes from p has nothing to do:
// n is 0 (then err says whether p is usable at all).
func (p MemoryPointer) empty(n int) (bool, error) {
	if n != 0 {
		return false, nil
	}
	return true, p.Mem.live()
}

// CopyFromHost copies n bytes from src, host memory, to p.
//
// src may be Go memory or pinned memory. Go memory must hold no Go pointers;
// for Go slices, Array and the helpers that take []byte are easier.
//
// Copies of 2 MiB or more between device memory and ordinary (pageable) Go
// memory are staged, in both directions: goroutines copy the Go memory chunk
// by chunk into two pinned buffers from DefaultPinnedMemoryPool while the
// GPU copies the other buffer. On an H200's host that runs 1.8 to 3 times
// as fast as CUDA's own copy from pageable memory, at 55-60% of the speed of
// a copy from pinned memory.
func (p MemoryPointer) CopyFromHost(src unsafe.Pointer, n int) error {
	return p.copyHost(src, n, nil, false, true)
}

// CopyFromHostAsync is CopyFromHost ordered on stream s. From pageable
// (ordinary Go) memory CUDA has read src when the call returns; a staged copy
// (see CopyFromHost) returns when s has done it. From pinned memory src must
// stay untouched until s has done the copy.
func (p MemoryPointer) CopyFromHostAsync(src unsafe.Pointer, n int, s *Stream) error {
	return p.copyHost(src, n, s, true, true)
}

// CopyToHost copies n bytes from p to dst, host memory.
func (p MemoryPointer) CopyToHost(dst unsafe.Pointer, n int) error {
	return p.copyHost(dst, n, nil, false, false)
}

// CopyToHostAsync is CopyToHost ordered on stream s. To pageable (ordinary
// Go) memory CUDA has written dst when the call returns, also when the copy
// is staged (see CopyFromHost); to pinned memory dst is written when s
// reaches the copy.
func (p MemoryPointer) CopyToHostAsync(dst unsafe.Pointer, n int, s *Stream) error {
	return p.copyHost(dst, n, s, true, false)
}

// copyHost copies n bytes between p and host memory h.
func (p MemoryPointer) copyHost(h unsafe.Pointer, n int, s *Stream, async, toDevice bool) error {
	if empty, err := p.empty(n); empty {
		return err
	}
	if h == nil {
		return fmt.Errorf("highlevel: nil host pointer")
	}
	d, ctx, err := p.span(n)
	if err != nil {
		return err
	}
	defer p.Mem.life.release()
	sh, err := s.enter(p.Mem.dev)
	if err != nil {
		return err
	}
	defer s.leave()
	if n >= stagingThreshold {
		pg, err := pageable(h)
		if err != nil {
			return err
		}
		if pg {
			return stagedCopy(ctx, d, h, n, sh, toDevice)
		}
	}
	dst, src := h, d
	if toDevice {
		dst, src = d, h
	}
	return check("cudaMemcpy", C.hl_memcpy(ctx, dst, src, C.size_t(n), C.cudaMemcpyDefault, sh, cbool(async)))
}

// CopyFromDevice copies n bytes from src, on any device, to p. Between two
// devices it is a peer copy.
func (p MemoryPointer) CopyFromDevice(src MemoryPointer, n int) error {
	return p.copyDevice(src, n, nil, false)
}

// CopyFromDeviceAsync is CopyFromDevice ordered on s, a stream of p's
// device.
func (p MemoryPointer) CopyFromDeviceAsync(src MemoryPointer, n int, s *Stream) error {
	return p.copyDevice(src, n, s, true)
}

func (p MemoryPointer) copyDevice(src MemoryPointer, n int, s *Stream, async bool) error {
	if empty, err := p.empty(n); empty {
		if err == nil {
			err = src.Mem.live()
		}
		return err
	}
	dst, ctx, err := p.span(n)
	if err != nil {
		return err
	}
	defer p.Mem.life.release()
	sp, _, err := src.span(n)
	if err != nil {
		return err
	}
	defer src.Mem.life.release()
	sh, err := s.enter(p.Mem.dev)
	if err != nil {
		return err
	}
	defer s.leave()
	if sd := src.Mem.dev; sd != p.Mem.dev {
		if _, err := sd.state(); err != nil {
			return err
		}
		return check("cudaMemcpyPeer", C.hl_memcpy_peer(ctx, dst, C.int(p.Mem.dev), sp, C.int(sd), C.size_t(n), sh, cbool(async)))
	}
	// Both are device (or managed) memory of one device.
	return check("cudaMemcpy", C.hl_memcpy(ctx, dst, sp, C.size_t(n), C.cudaMemcpyDeviceToDevice, sh, cbool(async)))
}

// CopyFrom copies n bytes from src to p: CopyFromDevice, named as CuPy names
// it.
func (p MemoryPointer) CopyFrom(src MemoryPointer, n int) error { return p.CopyFromDevice(src, n) }

// CopyFromAsync is CopyFromDeviceAsync, named as CuPy names it.
func (p MemoryPointer) CopyFromAsync(src MemoryPointer, n int, s *Stream) error {
	return p.CopyFromDeviceAsync(src, n, s)
}

// Memset sets n bytes from p to the byte value.
func (p MemoryPointer) Memset(value byte, n int) error {
	return p.memset(value, n, nil, false)
}

// MemsetAsync is Memset ordered on stream s.
func (p MemoryPointer) MemsetAsync(value byte, n int, s *Stream) error {
	return p.memset(value, n, s, true)
}

func (p MemoryPointer) memset(value byte, n int, s *Stream, async bool) error {
	if empty, err := p.empty(n); empty {
		return err
	}
	d, ctx, err := p.span(n)
	if err != nil {
		return err
	}
	defer p.Mem.life.release()
	sh, err := s.enter(p.Mem.dev)
	if err != nil {
		return err
	}
	defer s.leave()
	return check("cudaMemset", C.hl_memset(ctx, d, C.int(value), C.size_t(n), sh, cbool(async)))
}

func cbool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

// An Allocator allocates device memory. Device (cudaMalloc), MemoryPool and
// MemoryAsyncPool are Allocators; SetAllocator chooses the one Alloc uses.
type Allocator interface {
	Malloc(size int) (MemoryPointer, error)
}

// allocators holds the allocator Alloc uses: the one set last by
// SetAllocator, or, while UsingAllocator calls run, the one of the most
// recent still running.
var allocators struct {
	mu      sync.Mutex
	base    Allocator // SetAllocator's; nil means DefaultMemoryPool
	scopes  []*scope  // UsingAllocator's, in the order they began
	current atomic.Pointer[Allocator]
}

type scope struct{ a Allocator }

func updateAllocator() {
	a := allocators.base
	if n := len(allocators.scopes); n > 0 {
		a = allocators.scopes[n-1].a
	}
	allocators.current.Store(&a)
}

// Alloc allocates size bytes through the current allocator (GetAllocator).
func Alloc(size int) (MemoryPointer, error) {
	a, err := GetAllocator()
	if err != nil {
		return MemoryPointer{}, err
	}
	return a.Malloc(size)
}

// SetAllocator makes a the allocator of Alloc, for every goroutine, and
// returns the previous one; nil restores the default, DefaultMemoryPool.
//
// CuPy's allocator is per thread; Go has no goroutine-local state, so here
// it is per process: a program, or a library's caller, picks it once. Code
// that needs another allocator for some allocations calls that allocator's
// Malloc directly.
func SetAllocator(a Allocator) Allocator {
	allocators.mu.Lock()
	defer allocators.mu.Unlock()
	prev := allocators.base
	allocators.base = a
	updateAllocator()
	return prev
}

// GetAllocator returns the allocator Alloc uses: the one set by
// SetAllocator or UsingAllocator, else DefaultMemoryPool.
func GetAllocator() (Allocator, error) {
	if a := allocators.current.Load(); a != nil && *a != nil {
		return *a, nil
	}
	p, err := DefaultMemoryPool()
	if err != nil {
		return nil, err
	}
	return p, nil
}

// UsingAllocator runs fn with a as the allocator of Alloc, then restores
// the previous one, also when fn panics.
//
// Like SetAllocator it acts on the whole process: while fn runs, Alloc in
// every goroutine uses a. Calls may nest and may overlap in several
// goroutines: Alloc uses the allocator of the most recent call still
// running, and when all have returned, SetAllocator's again.
func UsingAllocator(a Allocator, fn func() error) error {
	s := &scope{a}
	allocators.mu.Lock()
	allocators.scopes = append(allocators.scopes, s)
	updateAllocator()
	allocators.mu.Unlock()
	defer func() {
		allocators.mu.Lock()
		defer allocators.mu.Unlock()
		for i, t := range allocators.scopes {
			if t == s {
				allocators.scopes = append(allocators.scopes[:i], allocators.scopes[i+1:]...)
				break
			}
		}
		updateAllocator()
	}()
	return fn()
}

// Malloc allocates size bytes on d with cudaMalloc, unpooled. Device is an
// Allocator: SetAllocator(dev) turns pooling off.
func (d Device) Malloc(size int) (MemoryPointer, error) {
	return d.malloc(size, false)
}

// MallocManaged allocates size bytes of managed (unified) memory, attached
// globally, with d as its device.
func (d Device) MallocManaged(size int) (MemoryPointer, error) {
	return d.malloc(size, true)
}

func (d Device) malloc(size int, managed bool) (MemoryPointer, error) {
	if err := checkSize("allocation", size); err != nil {
		return MemoryPointer{}, err
	}
	ctx, err := d.context()
	if err != nil {
		return MemoryPointer{}, err
	}
	freeLost()
	var p unsafe.Pointer
	if managed {
		err = check("cudaMallocManaged", C.hl_malloc_managed(ctx, &p, C.size_t(size)))
	} else {
		err = check("cudaMalloc", C.hl_malloc(ctx, &p, C.size_t(size)))
	}
	if err != nil {
		return MemoryPointer{}, fmt.Errorf("%w (%d bytes on %v)", err, size, d)
	}
	m := newMemory(p, size, d, deviceOwner{}, lostMemory{ptr: p, ctx: ctx})
	m.Mem.managed = managed
	return m, nil
}

// maxSize bounds every size the package allocates: 2^56 bytes (64 PiB) is
// far beyond any device's memory, and leaves room to round and add sizes
// without overflow.
const maxSize = 1 << 56

// checkSize checks the size of an allocation before anything else.
func checkSize(what string, n int) error {
	if n <= 0 {
		return fmt.Errorf("highlevel: %s of %d bytes: size must be positive", what, n)
	}
	if n > maxSize {
		return fmt.Errorf("highlevel: %s of %d bytes: %w", what, n, cudart.ErrorMemoryAllocation)
	}
	return nil
}

// newMemory returns a pointer to a new Memory, with a cleanup that queues
// lost for freeing if the Memory is dropped without Free.
func newMemory(p unsafe.Pointer, size int, d Device, o owner, lost lostMemory) MemoryPointer {
	m := &Memory{ptr: p, size: size, dev: d, owner: o}
	m.clean = runtime.AddCleanup(m, lostMemory.lose, lost)
	return MemoryPointer{Mem: m}
}

// deviceOwner frees with cudaFree.
type deviceOwner struct{}

func (deviceOwner) free(m *Memory) error {
	ctx, err := m.dev.context()
	if err != nil {
		return err
	}
	return check("cudaFree", C.hl_free(ctx, m.ptr))
}

// lostMemory is memory from cudaMalloc or cudaMallocAsync, or a host
// registration, whose owner was dropped without Free. A cleanup must not
// call CUDA, so it is queued, and freed by the next allocation of the
// package, once the work queued before has finished: cudaFree and
// cudaHostUnregister of memory a kernel or a copy still uses would be
// undefined.
type lostMemory struct {
	ptr, ctx unsafe.Pointer
	reg      *registration    // a HostRegistration's, when not nil
	pool     *MemoryAsyncPool // the pool it came from, when not nil
}

var lost struct {
	mu  sync.Mutex
	mem []lostMemory
}

func (l lostMemory) lose() {
	lost.mu.Lock()
	lost.mem = append(lost.mem, l)
	lost.mu.Unlock()
}

// freeLost frees the memory cleanups have queued.
func freeLost() {
	lost.mu.Lock()
	mem := lost.mem
	lost.mem = nil
	lost.mu.Unlock()
	if len(mem) == 0 {
		return
	}
	if err := synchronizeAll(); err != nil {
		for _, l := range mem { // a capture in progress, or a broken context: later
			l.lose()
		}
		return
	}
	for _, l := range mem {
		switch {
		case l.reg != nil:
			l.reg.unregister()
		default:
			C.hl_free(l.ctx, l.ptr)
			if l.pool != nil {
				l.pool.unref()
			}
		}
	}
}

// UnownedMemory wraps device memory that something else allocated and will
// free (CuPy's UnownedMemory): Free only marks it unusable. owner is kept
// reachable as long as the Memory is, so that, for example, the object that
// frees the memory in its own cleanup is not collected first.
func UnownedMemory(ptr unsafe.Pointer, size int, owner any) (MemoryPointer, error) {
	if size <= 0 {
		return MemoryPointer{}, fmt.Errorf("highlevel: unowned memory of %d bytes: size must be positive", size)
	}
	if size > maxSize {
		return MemoryPointer{}, fmt.Errorf("highlevel: unowned memory of %d bytes: too large", size)
	}
	if err := load(); err != nil {
		return MemoryPointer{}, err
	}
	var dev, typ, managed C.int
	if err := check("cuPointerGetAttributes", C.hl_pointer_device(ptr, &dev, &typ, &managed)); err != nil {
		return MemoryPointer{}, err
	}
	if typ != C.CU_MEMORYTYPE_DEVICE && managed == 0 {
		return MemoryPointer{}, fmt.Errorf("highlevel: unowned memory at %p is not device memory", ptr)
	}
	return MemoryPointer{Mem: &Memory{ptr: ptr, size: size, dev: Device(dev), managed: managed != 0, owner: keepOwner{owner}}}, nil
}

// keepOwner keeps UnownedMemory's owner reachable and frees nothing.
type keepOwner struct{ v any }

func (keepOwner) free(*Memory) error { return nil }
