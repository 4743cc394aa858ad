// Package buffer is how highlevel's subpackages (highlevel/linalg,
// highlevel/collective) hold the arrays a call into another CUDA library
// names, whatever their element type, through highlevel's MemoryPointer
// Acquire and Release.
package buffer

import (
	"unsafe"

	"github.com/gocuda/cuda/highlevel"
	"github.com/gocuda/cuda/highlevel/internal/life"
)

// A Buffer is an array's memory, length and size in bytes. The zero
// Buffer is an empty array.
type Buffer struct {
	p     highlevel.MemoryPointer
	n     int
	bytes int
}

// Of returns the Buffer of a; that of an empty array for a nil a.
func Of[T any](a *highlevel.Array[T]) Buffer {
	return Buffer{a.MemoryPointer(), a.Len(), a.Len() * int(unsafe.Sizeof(*new(T)))}
}

// Bytes returns the size of b's memory in bytes.
func (b Buffer) Bytes() int { return b.bytes }

// Acquire begins a call on b's memory: it returns the address of its first
// element and its device, -1 where every device may use it (managed
// memory, or an empty array, which holds nothing and whose address is
// nil), or highlevel.ErrFreed. Release must follow a nil error; until then,
// Free of the memory waits.
func (b Buffer) Acquire() (p unsafe.Pointer, dev int, err error) {
	if b.p.Memory() == nil {
		if b.n != 0 {
			return nil, -1, highlevel.ErrFreed // an allocator gave no memory
		}
		return nil, -1, nil // empty
	}
	p, err = b.p.Acquire(life.Sub)
	switch {
	case err != nil:
		return nil, -1, err
	case b.p.Managed():
		return p, -1, nil
	}
	return p, int(b.p.Device()), nil
}

// Release ends the call Acquire began.
func (b Buffer) Release() { b.p.Release(life.Sub) }

// Keep makes the capture that stream s takes part in, if any, hold b's
// memory for its graph; s is entered (highlevel.Stream.Enter).
func (b Buffer) Keep(s *highlevel.Stream) { s.Keep(life.Sub, b.p) }
