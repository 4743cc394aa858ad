package highlevel

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	"github.com/gocuda/cuda/cudadrv"
	"github.com/gocuda/cuda/highlevel/internal/driver"
)

// Interprocess sharing: an event or device memory of one process is
// exported as a handle of plain bytes (Event.IPCHandle,
// MemoryPointer.IPCHandle), sent to another process over any channel
// (MarshalBinary, UnmarshalBinary), and opened there (OpenIPCEvent,
// OpenIPCMemory), as CuPy's ipcGetEventHandle, ipcOpenMemHandle and the
// rest do. The processes must run on the same machine, on Linux.

// ErrNotShareable is wrapped by the errors of IPCHandle for what CUDA
// cannot share between processes: an event created without
// EventOptions.Interprocess, managed memory, and memory of a CUDA memory
// pool (AllocAsync, MemoryAsyncPool).
var ErrNotShareable = errors.New("highlevel: not shareable between processes")

// ipcHandleSize is the size of CUDA's interprocess handles.
const ipcHandleSize = cudadrv.IPC_HANDLE_SIZE

// An IPCEventHandle names an interprocess event (CUipcEventHandle) for
// OpenIPCEvent in another process. Its zero value names no event.
type IPCEventHandle struct {
	b [ipcHandleSize]byte
}

// MarshalBinary returns the handle's 64 bytes.
func (h IPCEventHandle) MarshalBinary() ([]byte, error) {
	return append([]byte(nil), h.b[:]...), nil
}

// UnmarshalBinary sets the handle from the bytes MarshalBinary returned.
func (h *IPCEventHandle) UnmarshalBinary(b []byte) error {
	if h == nil {
		return nilError("IPCEventHandle")
	}
	if len(b) != len(h.b) {
		return invalid("highlevel: event handle of %d bytes, want %d", len(b), len(h.b))
	}
	copy(h.b[:], b)
	return nil
}

// An IPCMemHandle names device memory for OpenIPCMemory in another process:
// CUDA's handle of the allocation that holds it (CUipcMemHandle), and
// where in that allocation the memory lies. Its zero value names no
// memory.
type IPCMemHandle struct {
	b      [ipcHandleSize]byte
	offset int // of the memory in the allocation
	size   int // of the memory
}

// ipcMemHandleSize is the size of an IPCMemHandle's binary form: CUDA's
// handle, then the offset and the size as little-endian uint64s.
const ipcMemHandleSize = ipcHandleSize + 16

// Size returns the size of the memory the handle names, in bytes.
func (h IPCMemHandle) Size() int { return h.size }

// MarshalBinary returns the handle as 80 bytes: CUDA's 64, then the
// memory's offset in its allocation and its size.
func (h IPCMemHandle) MarshalBinary() ([]byte, error) {
	b := make([]byte, ipcMemHandleSize)
	copy(b, h.b[:])
	binary.LittleEndian.PutUint64(b[ipcHandleSize:], uint64(h.offset))
	binary.LittleEndian.PutUint64(b[ipcHandleSize+8:], uint64(h.size))
	return b, nil
}

// UnmarshalBinary sets the handle from the bytes MarshalBinary returned.
func (h *IPCMemHandle) UnmarshalBinary(b []byte) error {
	if h == nil {
		return nilError("IPCMemHandle")
	}
	if len(b) != ipcMemHandleSize {
		return invalid("highlevel: memory handle of %d bytes, want %d", len(b), ipcMemHandleSize)
	}
	var v IPCMemHandle
	copy(v.b[:], b)
	off := binary.LittleEndian.Uint64(b[ipcHandleSize:])
	size := binary.LittleEndian.Uint64(b[ipcHandleSize+8:])
	if off > maxSize || size == 0 || size > maxSize {
		return invalid("highlevel: memory handle of %d bytes at offset %d: malformed", size, off)
	}
	v.offset, v.size = int(off), int(size)
	*h = v
	return nil
}

// IPCHandle exports the event to other processes, which open it with
// OpenIPCEvent (cuIpcGetEventHandle). The event must have been created
// with EventOptions.Interprocess (and so DisableTiming). It must stay open
// while other processes use it.
func (e *Event) IPCHandle() (_ IPCEventHandle, err error) {
	defer func() {
		if err != nil {
			wrap(&err, "export event of", e.Device())
		}
	}()
	var h IPCEventHandle
	if err := e.use(); err != nil {
		return h, err
	}
	defer e.life.Release()
	if !e.interprocess {
		return h, fmt.Errorf("%w: event created without EventOptions.Interprocess", ErrNotShareable)
	}
	err = check("cuIpcGetEventHandle", driver.IpcEventHandle(e.ctx, uintptr(e.h), unsafe.Pointer(&h.b[0])))
	return h, err
}

// OpenIPCEvent opens on device d an event another process exported with
// Event.IPCHandle (cuIpcOpenEventHandle). The event has no timing; it may
// be recorded, waited for (Stream.WaitEvent, Wait, Synchronize) and queried
// in either process, and Wait and Done wait for its latest Record in any of
// them. Close it before the exporting process closes its own: CUDA leaves
// the use of an event whose exporter destroyed it undefined.
func OpenIPCEvent(d Device, h IPCEventHandle) (_ *Event, err error) {
	defer func() {
		if err != nil {
			wrap(&err, "open event handle on", d)
		}
	}()
	if h == (IPCEventHandle{}) {
		return nil, invalid("empty handle")
	}
	ctx, err := d.context()
	if err != nil {
		return nil, err
	}
	var e uintptr
	if err := check("cuIpcOpenEventHandle", driver.IpcOpenEvent(ctx, &e, unsafe.Pointer(&h.b[0]))); err != nil {
		return nil, err
	}
	return newEvent(e, d, ctx, true), nil
}

// IPCHandle exports the memory from p to the end of its Memory to other
// processes, which open it with OpenIPCMemory (cuIpcGetMemHandle).
//
// CUDA shares whole allocations made by cuMemAlloc: memory from
// Device.Alloc, and blocks of a MemoryPool over one. The handle names the
// allocation that holds p and p's offset in it, so a pointer into the
// middle of a Memory, or a pool's block inside one of its chunks, can be
// shared; the other process's MemoryPointer covers only the memory from p
// to the end of p's Memory. Managed memory and memory of a CUDA memory pool
// (AllocAsync, MemoryAsyncPool) cannot be shared this way: the error wraps
// ErrNotShareable.
//
// The package cannot see other processes: the memory must not be freed
// (nor, for a pool's block, given back to the pool, which would hand it out
// again) until every process that opened it has freed its MemoryPointer,
// and the processes order their work on it with events (OpenIPCEvent).
func (p MemoryPointer) IPCHandle() (_ IPCMemHandle, err error) {
	defer func() {
		if err != nil {
			wrap(&err, "export", p.where())
		}
	}()
	var h IPCMemHandle
	if err := p.mem.live(); err != nil {
		return h, err
	}
	n := p.Size()
	if n <= 0 {
		return h, invalid("the pointer is at the end of its %d bytes", p.mem.Size())
	}
	if p.mem.managed {
		return h, fmt.Errorf("%w: managed memory", ErrNotShareable)
	}
	ptr, ctx, err := p.span(n)
	if err != nil {
		return h, err
	}
	defer p.mem.life.Release()
	var off uintptr
	var capable int32
	if err := check("cuIpcGetMemHandle", driver.IpcMemHandle(ctx, ptr, unsafe.Pointer(&h.b[0]), &off, &capable)); err != nil {
		return IPCMemHandle{}, err
	}
	if capable == 0 {
		return IPCMemHandle{}, fmt.Errorf("%w: memory at %p is not from cuMemAlloc", ErrNotShareable, ptr)
	}
	h.offset, h.size = int(off), n
	return h, nil
}

// OpenIPCMemory maps on device d the memory another process exported with
// MemoryPointer.IPCHandle (cuIpcOpenMemHandle), and returns a pointer to
// it, of h.Size() bytes. The memory may belong to another device of the
// machine: CUDA enables peer access from d as needed. A process cannot open
// memory it exported itself.
//
// Free unmaps it (cuIpcCloseMemHandle) once every device the program used
// has finished the work queued so far, so that no kernel or copy of this
// process still uses it; while a stream captures, that wait would spoil the
// capture, and the next allocation or OpenIPCMemory unmaps it instead, as
// it does one dropped without Free.
func OpenIPCMemory(d Device, h IPCMemHandle) (_ MemoryPointer, err error) {
	defer func() {
		if err != nil {
			wrap(&err, "open memory handle on", d)
		}
	}()
	if h.size <= 0 {
		return MemoryPointer{}, invalid("empty handle")
	}
	if h.offset < 0 || h.offset > maxSize || h.size > maxSize {
		return MemoryPointer{}, invalid("%d bytes at offset %d: malformed", h.size, h.offset)
	}
	ctx, err := d.context()
	if err != nil {
		return MemoryPointer{}, err
	}
	freeLost()
	var base unsafe.Pointer
	var mapped uintptr
	if err := check("cuIpcOpenMemHandle", driver.IpcOpenMem(ctx, &base, unsafe.Pointer(&h.b[0]), &mapped)); err != nil {
		return MemoryPointer{}, err
	}
	if h.offset+h.size > int(mapped) {
		driver.IpcCloseMem(ctx, base)
		return MemoryPointer{}, invalid("%d bytes at offset %d are past the end of the %d bytes mapped", h.size, h.offset, int(mapped))
	}
	return newMapped(mapping{base: base, ctx: ctx}, h.offset, h.size, d), nil
}

// newMapped returns a MemoryPointer to size bytes at offset off of mapping
// mp, which its Free unmaps.
func newMapped(mp mapping, off, size int, d Device) MemoryPointer {
	m := &Memory{ptr: unsafe.Add(mp.base, off), size: size, dev: d, owner: mp}
	m.clean = runtime.AddCleanup(m, mapping.lose, mp)
	return MemoryPointer{mem: m}
}

// A mapping is memory of another process mapped by OpenIPCMemory: the
// owner of its Memory.
type mapping struct {
	base, ctx unsafe.Pointer
}

func (mp mapping) free(*Memory) error {
	if err := synchronizeAll(); err != nil {
		mp.lose()
		if errors.Is(err, ErrCapturing) {
			return nil
		}
		return err
	}
	return check("cuIpcCloseMemHandle", driver.IpcCloseMem(mp.ctx, mp.base))
}

// lose queues the mapping with the lost memory (freeLost), to be unmapped
// once the devices are idle: its Memory was dropped without Free (a cleanup
// must not call CUDA), or freed while a capture was in progress.
func (mp mapping) lose() { lostMemory{ptr: mp.base, ctx: mp.ctx, mapped: true}.lose() }
