package highlevel

import (
	"cmp"
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	"github.com/gocuda/cuda/cudadrv"
	"github.com/gocuda/cuda/highlevel/internal/driver"
)

// Memory is one allocation of device memory: from cuMemAlloc, a pool, a
// stream-ordered pool, or memory owned by someone else (UnownedMemory).
// Free gives it back; Memory that becomes unreachable without Free is given
// back by a cleanup (runtime.AddCleanup) as a safety net, so forgetting
// Free leaks nothing for long, but Free is what makes the memory reusable
// right away. A MemoryPointer, and so an Array, keeps its Memory reachable;
// the address Ptr returns does not.
//
// Memory dropped without Free is taken back by a later allocation of its
// kind (a pool's block by the pool's next Malloc; memory from cuMemAlloc
// or a MemoryAsyncPool by the next allocation that asks CUDA for memory,
// such as Device.Alloc or AllocAsync), and only after every device the
// program used has finished the work queued so far, on every stream: memory
// is never handed out again while a kernel or a copy queued before the drop
// may still use it. While a stream captures, that device-wide wait would
// spoil the capture, so the memory waits for a later allocation.
//
// The zero value is not usable: a Memory comes from an allocation
// (MemoryPointer.Memory); Free on it returns an error wrapping ErrNil.
type Memory struct {
	ptr     unsafe.Pointer
	size    int // 0 in a zero Memory
	dev     Device
	owner   owner
	life    life            // Free waits for the copies in progress
	clean   runtime.Cleanup // the safety net, or, for a pool's Memory:
	ledger  *slabLedger     // its slab's ledger
	slot    int32
	holds   holdCount // the graphs that use the memory, and whether Free came
	managed bool      // beside slot and holds, so that a Memory takes 96 bytes (a pool slab holds 64)
	// graph is, for an allocation node's memory (AddAlloc), the node's:
	// only nodes of its graph use the memory.
	graph *graphAlloc
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

// free gives the memory back to where it came from, once the package's
// operations in progress on it in other goroutines (copies, memsets,
// kernel launches and linalg's calls that name it, until they have queued
// their work) have finished. A second free returns ErrFreed; so does every
// later operation on the memory. Memory that a Graph or GraphExec uses
// (captured work named it) is given back once the last of them is closed
// and the work queued until then has run. In a stream callback or host
// function, free returns ErrInCallback and changes nothing: a later free
// frees it.
func (m *Memory) free() error {
	if m == nil {
		return opErr("free memory", nilError("Memory"))
	}
	if m.size == 0 {
		return opErr("free memory", zeroError("Memory", "Alloc or an Allocator"))
	}
	if m.graph != nil { // its graph's free node frees it
		return opErr("free memory of "+m.dev.String(), errGraphMemory)
	}
	// In a callback, Free would wait for the operations in progress on the
	// memory, which may wait for the callback.
	if inCallback() {
		return opErr("free memory of "+m.dev.String(), ErrInCallback)
	}
	if !m.life.Close() {
		return opErr("free memory of "+m.dev.String(), ErrFreed)
	}
	m.clean.Stop()
	if m.ledger != nil {
		m.ledger.freed[m.slot].Store(true)
	}
	if m.owner == nil {
		return nil
	}
	if m.holds.release() { // graphs use it: the last to let go gives it back
		return nil
	}
	return m.owner.free(m)
}

// hold records that a graph uses m: captured work named it. A Free then
// leaves the memory to the last unhold. It is called during an operation
// on m, which Free waits for, so never after Free.
func (m *Memory) hold() { m.holds.add() }

// unhold ends a hold. The last one after Free gives the memory back, as
// memory dropped without Free is, once the work queued so far has run:
// launches of the graph may still be in flight.
func (m *Memory) unhold() {
	if !m.holds.done() {
		return
	}
	switch o := m.owner.(type) {
	case *block: // as a pool's block dropped without Free: its next Alloc takes it back
		o.lose()
	case *asyncOwner:
		// As lost stream-ordered memory is: freeLost may run where the
		// stream is entered, so it enters none.
		o.p.lose(m.ptr, m.size)
	default:
		lostMemory{mem: m}.lose()
	}
}

// where names the memory at p in errors: "device memory of device 1".
func (p MemoryPointer) where() string {
	switch {
	case p.mem == nil:
		return "device memory"
	case p.mem.managed:
		return "managed memory of " + p.mem.dev.String()
	}
	return "memory of " + p.mem.dev.String()
}

// errNoMemory is the error of operations on the zero MemoryPointer, and on
// a nil or zero Memory.
var errNoMemory = zeroError("MemoryPointer", "Alloc or an Allocator")

// live reports whether m can be used.
func (m *Memory) live() error {
	if m == nil || m.size == 0 {
		return errNoMemory
	}
	if m.life.Closed() {
		return ErrFreed
	}
	return nil
}

// A MemoryPointer is a position in a Memory: CuPy's MemoryPointer. It is a
// value, like a slice header: copies of it point at the same memory, and
// Add returns a new one rather than moving it. Only the package makes
// MemoryPointers (allocations, Add, Array.MemoryPointer), so one always
// lies within its memory. The zero value points nowhere; every operation
// on it returns an error wrapping ErrNil.
type MemoryPointer struct {
	mem *Memory
	off int
}

// Memory returns the allocation the pointer points into; nil for the zero
// MemoryPointer.
func (p MemoryPointer) Memory() *Memory { return p.mem }

// Free frees the memory p points to the start of, as p.Memory().Free()
// does: the allocations return a MemoryPointer, and Free gives it back. A
// pointer into the memory (Add) is refused with ErrInvalid, as C's free
// refuses an address the allocation did not return.
func (p MemoryPointer) Free() error {
	if p.mem == nil {
		return opErr("free memory", errNoMemory)
	}
	if p.off != 0 {
		return opErr("free memory of "+p.mem.dev.String(),
			invalid("pointer %d bytes into its memory: free the pointer the allocation returned", p.off))
	}
	return p.mem.free()
}

// Offset returns the pointer's offset in bytes from the start of its
// memory.
func (p MemoryPointer) Offset() int { return p.off }

// Ptr returns the device address Offset bytes into the memory.
func (p MemoryPointer) Ptr() unsafe.Pointer {
	if p.mem == nil {
		return nil
	}
	return unsafe.Add(p.mem.ptr, p.off)
}

// Size returns the number of bytes from the pointer to the end of the memory.
func (p MemoryPointer) Size() int {
	if p.mem == nil {
		return 0
	}
	return p.mem.size - p.off
}

// Device returns the device of the memory.
func (p MemoryPointer) Device() Device {
	if p.mem == nil {
		return 0
	}
	return p.mem.dev
}

// Add returns the pointer moved n bytes further; n may be negative. The
// result must stay within the memory, its end included.
func (p MemoryPointer) Add(n int) (MemoryPointer, error) {
	if err := p.mem.live(); err != nil {
		return MemoryPointer{}, err
	}
	if p.off < 0 || p.off > p.mem.size || n < -p.off || n > p.mem.size-p.off {
		return MemoryPointer{}, invalid("highlevel: offset %d + %d is outside the %d bytes of the memory", p.off, n, p.mem.size)
	}
	return MemoryPointer{p.mem, p.off + n}, nil
}

// fits checks that n bytes from p, n > 0, lie within its memory.
func (p MemoryPointer) fits(n int) error {
	switch {
	case p.mem == nil:
		return errNoMemory
	case n <= 0:
		return invalid("size %d: it must not be negative", n)
	case p.off < 0 || p.off > p.mem.size || n > p.mem.size-p.off:
		return invalid("%d bytes at offset %d are past the end of the %d bytes of the memory", n, p.off, p.mem.size)
	}
	return nil
}

// span begins an operation on n bytes from p, which must lie within its
// memory: it returns the device address and the primary context of its
// device, and p.mem.life.Release ends it. n == 0 is an error here: the
// operations return early for it. The memory of an allocation node is
// refused (errGraphMemory).
func (p MemoryPointer) span(n int) (unsafe.Pointer, unsafe.Pointer, error) {
	return p.spanOf(n, false)
}

// nodeSpan is span for a node of a graph, which may use the memory of an
// allocation node (Memory.useIn checks that it may).
func (p MemoryPointer) nodeSpan(n int) (unsafe.Pointer, unsafe.Pointer, error) {
	return p.spanOf(n, true)
}

// spanOf is span, or nodeSpan for a node.
func (p MemoryPointer) spanOf(n int, node bool) (unsafe.Pointer, unsafe.Pointer, error) {
	if err := p.fits(n); err != nil {
		return nil, nil, err
	}
	if !p.mem.life.Acquire() {
		return nil, nil, ErrFreed
	}
	if p.mem.graph != nil && !node {
		p.mem.life.Release()
		return nil, nil, errGraphMemory
	}
	ctx, err := p.mem.dev.context()
	if err != nil {
		p.mem.life.Release()
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
	return true, p.mem.live()
}

// CopyFromHostPointer copies n bytes from src, host memory, to p, and
// returns once the copy is done (see Memset). It is for C interop: memory
// from C, or an address from another library. A Go slice goes through the
// function CopyFromHost (or Array.CopyFromHost), which checks its length
// and element type, and pinned memory through PinnedSlice.
//
// src may be Go memory or pinned memory. Go memory must hold no Go pointers.
//
// Copies of 2 MiB or more between device memory and ordinary (pageable) Go
// memory are staged, in both directions: goroutines copy the Go memory chunk
// by chunk into two pinned buffers from the pinned memory allocator
// (SetPinnedMemoryAllocator) while the GPU copies the other buffer. On an
// H200's host that runs 1.8 to 3 times as fast as CUDA's own copy from
// pageable memory, at 55-60% of the speed of a copy from pinned memory.
func (p MemoryPointer) CopyFromHostPointer(src unsafe.Pointer, n int) error {
	return p.copyHost(src, n, nil, false, true)
}

// CopyFromHostPointerAsync is CopyFromHostPointer ordered on stream s,
// for C interop (see the function CopyFromHostAsync for Go slices). From
// pageable (ordinary Go) memory CUDA has read src when the call returns; a
// staged copy (see CopyFromHostPointer) returns when s has done it. From pinned memory src must
// stay untouched until s has done the copy.
func (p MemoryPointer) CopyFromHostPointerAsync(s *Stream, src unsafe.Pointer, n int) error {
	return p.copyHost(src, n, s, true, true)
}

// CopyToHostPointer copies n bytes from p to dst, host memory, for C
// interop (see the function CopyToHost for Go slices). It returns once the
// copy is done (see Memset).
func (p MemoryPointer) CopyToHostPointer(dst unsafe.Pointer, n int) error {
	return p.copyHost(dst, n, nil, false, false)
}

// CopyToHostPointerAsync is CopyToHostPointer ordered on stream s, for C
// interop (see the function CopyToHostAsync for Go slices). To pageable
// (ordinary Go) memory CUDA has written dst when the call returns, also
// when the copy is staged (see CopyFromHostPointer); to pinned memory dst
// is written when s reaches the copy.
func (p MemoryPointer) CopyToHostPointerAsync(s *Stream, dst unsafe.Pointer, n int) error {
	return p.copyHost(dst, n, s, true, false)
}

// CopyFromHost copies the elements of src to device memory at dst, which
// must hold them (dst.Size() >= len(src) * the size of T). T must hold no
// Go pointers, as for Array. It is the typed form of
// MemoryPointer.CopyFromHostPointer, staged in the same way.
func CopyFromHost[T any](dst MemoryPointer, src []T) error {
	h, n, err := hostSlice(src)
	if err != nil {
		return err
	}
	return dst.copyHost(h, n, nil, false, true)
}

// CopyFromHostAsync is CopyFromHost ordered on stream s; src may be reused
// as MemoryPointer.CopyFromHostPointerAsync says.
func CopyFromHostAsync[T any](s *Stream, dst MemoryPointer, src []T) error {
	h, n, err := hostSlice(src)
	if err != nil {
		return err
	}
	return dst.copyHost(h, n, s, true, true)
}

// CopyToHost copies len(dst) elements from device memory at src to dst.
// T must hold no Go pointers. It is the typed form of
// MemoryPointer.CopyToHostPointer.
func CopyToHost[T any](dst []T, src MemoryPointer) error {
	h, n, err := hostSlice(dst)
	if err != nil {
		return err
	}
	return src.copyHost(h, n, nil, false, false)
}

// CopyToHostAsync is CopyToHost ordered on stream s; dst holds the data as
// MemoryPointer.CopyToHostAsync says.
func CopyToHostAsync[T any](s *Stream, dst []T, src MemoryPointer) error {
	h, n, err := hostSlice(dst)
	if err != nil {
		return err
	}
	return src.copyHost(h, n, s, true, false)
}

// hostSlice returns the data and byte length of s, whose element type must
// suit device memory; nil data for an empty s.
func hostSlice[T any](s []T) (unsafe.Pointer, int, error) {
	if err := checkElem[T](); err != nil {
		return nil, 0, err
	}
	if len(s) == 0 {
		return nil, 0, nil
	}
	return unsafe.Pointer(unsafe.SliceData(s)), len(s) * int(unsafe.Sizeof(s[0])), nil
}

// copyHost copies n bytes between p and host memory h.
func (p MemoryPointer) copyHost(h unsafe.Pointer, n int, s *Stream, async, toDevice bool) error {
	err := p.copyHostOp(h, n, s, async, toDevice)
	if err != nil {
		dir := "from"
		if toDevice {
			dir = "to"
		}
		wrap(&err, "copy", n, "bytes", dir, p.where())
	}
	return err
}

// copyHostOp does the work of the function above, which names the operation
// in its errors: a deferred closure would make its defers slower ones.
func (p MemoryPointer) copyHostOp(h unsafe.Pointer, n int, s *Stream, async, toDevice bool) error {
	if empty, err := p.empty(n); empty {
		return err
	}
	if h == nil {
		return invalid("nil host pointer")
	}
	d, ctx, err := p.span(n)
	if err != nil {
		return err
	}
	defer p.mem.life.Release()
	sh, err := s.enter(p.mem.dev)
	if err != nil {
		return err
	}
	defer s.leave()
	if s != nil && s.inCapture() {
		// A graph would copy at each launch, long after the call.
		if pg, err := pageable(h); err != nil || pg {
			return cmp.Or(err, errCapturedPageable)
		}
		s.keep(p.mem)
	}
	if n >= stagingThreshold {
		pg, err := pageable(h)
		if err != nil {
			return err
		}
		if pg {
			// The pipeline waits for its records on s, querying them: no
			// capture takes s meanwhile (enter holds Stream.joins), s
			// takes part in none, none in CaptureGlobal mode, which
			// refuses queries, runs, and on the legacy default stream,
			// which every capture refuses, none at all (staging): so no
			// capture refuses the pipeline's later chunks.
			staging.RLock()
			staged, err := false, error(nil)
			if staging.global == 0 && (sh != 0 || captures.Load() == 0) && (s == nil || !s.inCapture()) {
				staged, err = stagedCopy(ctx, d, h, n, sh, toDevice)
			}
			staging.RUnlock()
			if staged {
				return err
			}
		}
	}
	dst, src := h, d
	if toDevice {
		dst, src = d, h
	}
	return check("cuMemcpy", driver.Memcpy(uintptr(ctx), dst, src, uintptr(n), sh, cbool(async)))
}

// CopyFromDevice copies n bytes from src, on any device, to p. Between two
// devices it is a peer copy. It returns once the copy is done (see Memset).
func (p MemoryPointer) CopyFromDevice(src MemoryPointer, n int) error {
	return p.copyDevice(src, n, nil, false)
}

// CopyFromDeviceAsync is CopyFromDevice ordered on s, a stream of p's
// device.
func (p MemoryPointer) CopyFromDeviceAsync(s *Stream, src MemoryPointer, n int) error {
	return p.copyDevice(src, n, s, true)
}

func (p MemoryPointer) copyDevice(src MemoryPointer, n int, s *Stream, async bool) error {
	err := p.copyDeviceOp(src, n, s, async)
	if err != nil {
		wrap(&err, "copy", n, "bytes from", src.where(), "to", p.where())
	}
	return err
}

// copyDeviceOp does the work of the function above, which names the operation
// in its errors: a deferred closure would make its defers slower ones.
func (p MemoryPointer) copyDeviceOp(src MemoryPointer, n int, s *Stream, async bool) error {
	if empty, err := p.empty(n); empty {
		if err == nil {
			err = src.mem.live()
		}
		return err
	}
	// The source's range before the destination's context (span checks
	// the destination's range first).
	if err := src.fits(n); err != nil {
		return err
	}
	dst, ctx, err := p.span(n)
	if err != nil {
		return err
	}
	defer p.mem.life.Release()
	sp, _, err := src.span(n)
	if err != nil {
		return err
	}
	defer src.mem.life.Release()
	sh, err := s.enter(p.mem.dev)
	if err != nil {
		return err
	}
	defer s.leave()
	s.keep(p.mem, src.mem)
	return queueCopy(ctx, dst, p.mem.dev, sp, src.mem.dev, n, sh, async)
}

// queueCopy copies n bytes from sp on device sd to dst on device dd, a peer
// copy between two devices. It is copyDeviceOp's last step, apart so that
// copyDeviceOp has few enough returns for its defers to stay open-coded.
func queueCopy(ctx, dst unsafe.Pointer, dd Device, sp unsafe.Pointer, sd Device, n int, sh uintptr, async bool) error {
	if sd != dd {
		sctx, err := sd.context()
		if err != nil {
			return err
		}
		return check("cuMemcpyPeer", driver.MemcpyPeer(ctx, dst, sp, sctx, uintptr(n), sh, cbool(async)))
	}
	// Both are device (or managed) memory of one device: no Go memory, so
	// integers, as in memsetOp.
	return check("cuMemcpy", driver.MemcpyDevice(uintptr(ctx), uintptr(dst), uintptr(sp), uintptr(n), sh, cbool(async)))
}

// Memset sets n bytes from p to the byte value. Like every copy and
// memset without Async, it is ordered on the legacy default stream (after
// the work queued on it and on blocking streams) and returns once the
// device has done it, so that work queued afterwards on any stream sees
// it.
func (p MemoryPointer) Memset(value byte, n int) error {
	return p.memset(value, n, nil, false)
}

// MemsetAsync is Memset ordered on stream s.
func (p MemoryPointer) MemsetAsync(s *Stream, value byte, n int) error {
	return p.memset(value, n, s, true)
}

func (p MemoryPointer) memset(value byte, n int, s *Stream, async bool) error {
	return p.set(memsetRows{v: uint32(value), size: 1, width: n, height: 1}, s, async)
}

// memsetRows is a memset of the driver's: height rows of width elements of
// size bytes (1, 2 or 4; several rows only of 4 bytes), pitch bytes apart,
// each set to v.
type memsetRows struct {
	v                          uint32
	size, width, height, pitch int
}

// bytes is how far from its start the memset writes.
func (r memsetRows) bytes() int { return (r.height-1)*r.pitch + r.width*r.size }

// function names the driver function that does r, of 2 or 4 bytes.
func (r memsetRows) function() string {
	if r.height > 1 {
		return "cuMemsetD2D32"
	}
	return [...]string{2: "cuMemsetD16", 4: "cuMemsetD32"}[r.size]
}

// set does r from p, on s.
func (p MemoryPointer) set(r memsetRows, s *Stream, async bool) error {
	err := p.setOp(r, s, async)
	if err != nil {
		wrap(&err, "memset", r.bytes(), "bytes of", p.where())
	}
	return err
}

// setOp does the work of the function above, which names the operation
// in its errors: a deferred closure would make its defers slower ones.
func (p MemoryPointer) setOp(r memsetRows, s *Stream, async bool) error {
	n := r.bytes()
	if empty, err := p.empty(n); empty {
		return err
	}
	d, ctx, err := p.span(n)
	if err != nil {
		return err
	}
	defer p.mem.life.Release()
	sh, err := s.enter(p.mem.dev)
	if err != nil {
		return err
	}
	defer s.leave()
	s.keep(p.mem)
	// Integers, not void *, spare cgo's check for Go pointers: neither the
	// context nor device memory is Go memory.
	if r.size == 1 {
		return check("cuMemsetD8", driver.Memset(uintptr(ctx), uintptr(d), int32(r.v), uintptr(r.width), sh, cbool(async)))
	}
	return check(r.function(), driver.MemsetRows(uintptr(ctx), uintptr(d), uintptr(r.pitch), r.v, int32(r.size),
		uintptr(r.width), uintptr(r.height), sh, cbool(async)))
}

func cbool(b bool) int32 {
	if b {
		return 1
	}
	return 0
}

// An Allocator allocates device memory. Device (cuMemAlloc, unpooled),
// *MemoryPool and *MemoryAsyncPool are Allocators. Allocation is explicit
// where it matters: an Allocator's Alloc, AllocArray and ArrayFrom
// allocate from the allocator named; Alloc, AllocArray and ArrayFrom use the
// process's default allocator (SetAllocator).
type Allocator interface {
	Alloc(size int) (MemoryPointer, error)
}

// Alloc allocates size bytes from the process's default allocator
// (GetAllocator).
func Alloc(size int) (MemoryPointer, error) {
	err := positive(size) // before the allocator, which may load the driver
	var a Allocator
	if err == nil {
		a, err = GetAllocator()
	}
	if err != nil {
		return MemoryPointer{}, opErr(fmt.Sprintf("alloc %d bytes", size), err)
	}
	p, err := a.Alloc(size)
	if err != nil {
		if _, ok := err.(*opError); !ok { // an Allocator of the program's
			err = opErr(fmt.Sprintf("alloc %d bytes", size), err)
		}
		noteOutOfMemory(err)
	}
	return p, err
}

// ErrAllocatorInUse is returned by SetAllocator and
// SetPinnedMemoryAllocator once the allocator they would replace has been
// used.
var ErrAllocatorInUse = errors.New("highlevel: allocator already in use: it is set before its first use")

// SetAllocator makes a the process's default allocator, the one Alloc,
// AllocArray and ArrayFrom use; nil restores DefaultMemoryPool.
//
// CuPy's allocator is per thread. Go has no goroutine-local state, and a
// process-wide allocator that changes while goroutines allocate would send
// some of their allocations, unpredictably, to the wrong pool or device. So
// the default is fixed at its first use: SetAllocator may be called, any
// number of times, until the first Alloc, AllocArray, ArrayFrom or
// GetAllocator, as flags are defined before flag.Parse; after that it
// changes nothing and returns ErrAllocatorInUse. Code that wants another
// allocator for some of its allocations names it: a.Alloc, AllocArray(a,
// n), ArrayFrom(a, s). There is no UsingAllocator (CuPy's
// using_allocator): swapping the allocator of every goroutine at once is
// the bug it would invite.
func SetAllocator(a Allocator) error {
	allocator.mu.Lock()
	defer allocator.mu.Unlock()
	if allocator.fixed.Load() != nil {
		return ErrAllocatorInUse
	}
	allocator.set = a
	return nil
}

// GetAllocator returns the process's default allocator: the one
// SetAllocator set, else DefaultMemoryPool. From its first call the default
// is fixed (see SetAllocator).
func GetAllocator() (_ Allocator, err error) {
	defer wrap(&err, "default allocator")
	if a := allocator.fixed.Load(); a != nil {
		return *a, nil
	}
	allocator.mu.Lock()
	defer allocator.mu.Unlock()
	if a := allocator.fixed.Load(); a != nil {
		return *a, nil
	}
	a := allocator.set
	if a == nil {
		p, err := DefaultMemoryPool()
		if err != nil {
			return nil, err
		}
		a = p
	}
	allocator.fixed.Store(&a)
	return a, nil
}

// Alloc allocates size bytes on d with cuMemAlloc, unpooled. Device is an
// Allocator: AllocArray(dev, n) allocates an unpooled Array on dev.
func (d Device) Alloc(size int) (MemoryPointer, error) {
	p, err := d.malloc(size, false)
	if err != nil {
		noteOutOfMemory(err)
	}
	return p, err
}

// allocUnreported is Alloc without the out-of-memory report, for a pool
// upstream of which d is.
func (d Device) allocUnreported(size int) (MemoryPointer, error) { return d.malloc(size, false) }

// Managed returns the Allocator of managed (unified) memory with d as its
// device, attached globally, which every device and the host may use:
// Managed(d).Alloc(n) for bytes, AllocArray[T](Managed(d), n) for an array.
func Managed(d Device) Allocator { return managed(d) }

// managed allocates managed memory on its device.
type managed Device

// Alloc allocates size bytes of managed memory with cuMemAllocManaged.
func (m managed) Alloc(size int) (MemoryPointer, error) {
	p, err := Device(m).malloc(size, true)
	if err != nil {
		noteOutOfMemory(err)
	}
	return p, err
}

// allocUnreported is Alloc without the out-of-memory report, for a pool
// upstream of which m is.
func (m managed) allocUnreported(size int) (MemoryPointer, error) {
	return Device(m).malloc(size, true)
}

// Device returns the device of the memory m allocates.
func (m managed) Device() Device { return Device(m) }

func (d Device) malloc(size int, managed bool) (_ MemoryPointer, err error) {
	if managed {
		defer func() {
			if err != nil {
				wrap(&err, "alloc", size, "bytes of managed memory on", d)
			}
		}()
	} else {
		defer func() {
			if err != nil {
				wrap(&err, "alloc", size, "bytes on", d)
			}
		}()
	}
	if err := checkSize(size, d); err != nil {
		return MemoryPointer{}, err
	}
	ctx, err := d.context()
	if err != nil {
		return MemoryPointer{}, err
	}
	freeLost()
	var p unsafe.Pointer
	if managed {
		err = check("cuMemAllocManaged", driver.MallocManaged(ctx, &p, uintptr(size)))
	} else {
		err = check("cuMemAlloc", driver.Malloc(ctx, &p, uintptr(size)))
	}
	if err != nil {
		return MemoryPointer{}, outOfMemory(size, d, err)
	}
	m := newMemory(p, size, d, deviceOwner{}, lostMemory{ptr: p, ctx: ctx})
	m.mem.managed = managed
	if memRecording.Load() {
		kind := memDevice
		if managed {
			kind = memManaged
		}
		recordAddr(p, size, d, nil, kind)
	}
	return m, nil
}

// positive refuses a size that is not positive.
func positive(n int) error {
	if n <= 0 {
		return invalid("size %d: it must be positive", n)
	}
	return nil
}

// maxSize bounds every size the package allocates: 2^56 bytes (64 PiB) is
// far beyond any device's memory, and leaves room to round and add sizes
// without overflow.
const maxSize = 1 << 56

// checkSize checks the size of an allocation on d (CPUDevice: pinned host
// memory) before anything else: a size beyond maxSize is out of memory.
func checkSize(n int, d Device) error {
	if err := positive(n); err != nil {
		return err
	}
	if n > maxSize {
		return &OutOfMemoryError{Size: n, Device: d}
	}
	return nil
}

// newMemory returns a pointer to a new Memory, with a cleanup that queues
// lost for freeing if the Memory is dropped without Free.
func newMemory(p unsafe.Pointer, size int, d Device, o owner, lost lostMemory) MemoryPointer {
	m := &Memory{ptr: p, size: size, dev: d, owner: o}
	m.clean = runtime.AddCleanup(m, lostMemory.lose, lost)
	return MemoryPointer{mem: m}
}

// deviceOwner frees with cuMemFree.
type deviceOwner struct{}

func (deviceOwner) free(m *Memory) error {
	ctx, err := m.dev.context()
	if err != nil {
		return err
	}
	// A global capture refuses cuMemFree: the memory is freed when it ends,
	// as graphs are destroyed, rather than lost with its Free done.
	ptr := m.ptr
	if memRecording.Load() {
		forgetAddr(ptr) // before the driver may hand the address out again
	}
	return check("cuMemFree", afterGlobalCaptures(func() int32 { return driver.Free(ctx, ptr) }))
}

// lostMemory is memory from cuMemAlloc or cuMemAllocFromPoolAsync, a host
// registration or an IPC mapping, whose owner was dropped without Free, or
// a Memory freed (a Module or Event closed) while graphs used it, which
// the last of them let go. A cleanup must not call CUDA, so it is queued,
// and freed by the next allocation of the package, once the work queued
// before has finished: cuMemFree, cuMemHostUnregister or
// cuIpcCloseMemHandle of memory a kernel or a copy still uses would be
// undefined.
type lostMemory struct {
	ptr, ctx unsafe.Pointer
	reg      *registration    // a HostRegistration's, when not nil
	pool     *MemoryAsyncPool // the pool it came from, when not nil
	size     int              // its size, for pool's count
	mapped   bool             // an OpenIPCMemory mapping, to unmap
	destroy  bool             // no memory: pool is to be destroyed
	mem      *Memory          // a Memory to give back to its owner (not a stream's), when not nil
	module   *Module          // a Module to unload, when not nil
	event    *Event           // an Event to destroy, when not nil
}

func (l lostMemory) lose() {
	lost.mu.Lock()
	lost.mem = append(lost.mem, l)
	lost.any.Store(true)
	lost.mu.Unlock()
}

// freeLost frees the memory cleanups have queued.
func freeLost() {
	if !lost.any.Load() {
		return
	}
	lost.mu.Lock()
	mem := lost.mem
	lost.mem = nil
	lost.any.Store(false)
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
	var pools []*MemoryAsyncPool
	for _, l := range mem {
		switch {
		case l.mem != nil:
			l.mem.owner.free(l.mem)
		case l.module != nil:
			l.module.unload()
		case l.event != nil:
			l.event.destroy()
		case l.reg != nil:
			l.reg.unregister()
		case l.mapped:
			driver.IpcCloseMem(l.ctx, l.ptr)
		case l.destroy:
			pools = append(pools, l.pool)
		default:
			if memRecording.Load() {
				forgetAddr(l.ptr)
			}
			afterGlobalCaptures(func() int32 { return driver.Free(l.ctx, l.ptr) })
			if l.pool != nil {
				l.pool.inUse.Add(-int64(l.size))
				l.pool.unref()
			}
		}
	}
	// The frees queued into these pools have run, and no more can be
	// queued: they have no allocations left.
	for _, p := range pools {
		afterGlobalCaptures(func() int32 { return driver.MemPoolDestroy(p.ctx, p.h) })
	}
}

// UnownedMemory wraps device memory that something else allocated and will
// free (CuPy's UnownedMemory): Free only marks it unusable. owner is kept
// reachable as long as the Memory is, so that, for example, the object that
// frees the memory in its own cleanup is not collected first.
func UnownedMemory(ptr unsafe.Pointer, size int, owner any) (_ MemoryPointer, err error) {
	defer func() {
		if err != nil {
			wrap(&err, "unowned memory of", size, "bytes at", ptr)
		}
	}()
	if err := positive(size); err != nil {
		return MemoryPointer{}, err
	}
	if size > maxSize {
		return MemoryPointer{}, invalid("larger than any device")
	}
	if err := initDevices(); err != nil { // which initializes the driver
		return MemoryPointer{}, err
	}
	var dev, typ, managed int32
	if err := check("cuPointerGetAttributes", driver.PointerDevice(ptr, &dev, &typ, &managed)); err != nil {
		return MemoryPointer{}, err
	}
	if cudadrv.Memorytype(typ) != cudadrv.MEMORYTYPE_DEVICE && managed == 0 {
		return MemoryPointer{}, invalid("not device memory")
	}
	return MemoryPointer{mem: &Memory{ptr: ptr, size: size, dev: Device(dev), managed: managed != 0, owner: keepOwner{owner}}}, nil
}

// keepOwner keeps UnownedMemory's owner reachable and frees nothing.
type keepOwner struct{ v any }

func (keepOwner) free(*Memory) error { return nil }
