// Package buffer is how highlevel's subpackages (highlevel/linalg,
// highlevel/collective) hold the arrays a call into another CUDA library
// names, whatever their element type, for a highlevel.Borrow.
package buffer

import (
	"unsafe"

	"github.com/gocuda/cuda/highlevel"
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

// Check returns the address of b's first element and its device: -1
// where every device may use it (managed memory, or an empty array, which
// holds nothing and whose address is nil). It holds nothing: a
// highlevel.Borrow of Memory does, and refuses memory freed meanwhile.
func (b Buffer) Check() (p unsafe.Pointer, dev int, err error) {
	switch {
	case b.p.Memory() == nil && b.n != 0:
		return nil, -1, highlevel.ErrFreed // an allocator gave no memory
	case b.p.Memory() == nil:
		return nil, -1, nil // empty
	case b.p.Managed():
		return b.p.Ptr(), -1, nil
	}
	return b.p.Ptr(), int(b.p.Device()), nil
}

// Memory returns b's memory, for a highlevel.Borrow; the zero
// MemoryPointer for an empty array, which a Borrow must not name.
func (b Buffer) Memory() highlevel.MemoryPointer { return b.p }
