package highlevel

import (
	"fmt"
	"reflect"
	"unsafe"

	"github.com/gocuda/cuda/cudart"
)

// An Array is a typed slice of device memory, the Go form of CuPy's
// asarray and asnumpy: ArrayFrom copies a Go slice to the device, ToHost
// copies it back. T must hold no Go pointers (no pointers, slices, maps,
// strings, interfaces, channels or funcs, also inside structs and arrays),
// since the device cannot hold them.
type Array[T any] struct {
	p     MemoryPointer
	n     int
	owned bool // Free frees the memory; false for a Slice
}

// checkElem refuses element types that hold Go pointers or have no size.
func checkElem[T any]() error {
	t := reflect.TypeFor[T]()
	if t.Size() == 0 {
		return fmt.Errorf("highlevel: element type %v has size 0", t)
	}
	if hasPointers(t) {
		return fmt.Errorf("highlevel: element type %v holds Go pointers, which device memory cannot hold", t)
	}
	return nil
}

func hasPointers(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Array:
		return t.Len() > 0 && hasPointers(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if hasPointers(t.Field(i).Type) {
				return true
			}
		}
		return false
	case reflect.Pointer, reflect.UnsafePointer, reflect.Slice, reflect.Map, reflect.String,
		reflect.Interface, reflect.Chan, reflect.Func:
		return true
	}
	return false
}

// NewArray allocates an array of n elements through Alloc; its contents are
// undefined. An array of 0 elements allocates nothing, and its copies do
// nothing.
func NewArray[T any](n int) (*Array[T], error) {
	if err := checkElem[T](); err != nil {
		return nil, err
	}
	if n < 0 {
		return nil, fmt.Errorf("highlevel: array of %d elements: length must not be negative", n)
	}
	if n == 0 {
		return &Array[T]{owned: true}, nil
	}
	size := int(unsafe.Sizeof(*new(T)))
	if n > maxSize/size {
		return nil, fmt.Errorf("highlevel: array of %d elements of %d bytes: %w", n, size, cudart.ErrorMemoryAllocation)
	}
	p, err := Alloc(n * size)
	if err != nil {
		return nil, err
	}
	return &Array[T]{p: p, n: n, owned: true}, nil
}

// ArrayFrom allocates an array as long as s and copies s to it.
func ArrayFrom[T any](s []T) (*Array[T], error) {
	a, err := NewArray[T](len(s))
	if err != nil {
		return nil, err
	}
	if err := a.CopyFromHost(s); err != nil {
		a.Free()
		return nil, err
	}
	return a, nil
}

// Len returns the number of elements; 0 for a nil Array.
func (a *Array[T]) Len() int {
	if a == nil {
		return 0
	}
	return a.n
}

// Ptr returns the device address of the first element; nil for an empty
// or nil Array.
func (a *Array[T]) Ptr() unsafe.Pointer {
	if a == nil {
		return nil
	}
	return a.p.Ptr()
}

// MemoryPointer returns the array's memory and offset; the zero
// MemoryPointer for an empty or nil Array.
func (a *Array[T]) MemoryPointer() MemoryPointer {
	if a == nil {
		return MemoryPointer{}
	}
	return a.p
}

func (a *Array[T]) bytes() int { return a.n * int(unsafe.Sizeof(*new(T))) }

// host checks that s is as long as the array and returns its data, or nil
// when there is nothing to copy.
func (a *Array[T]) host(s []T) (unsafe.Pointer, error) {
	if a == nil {
		return nil, nilError("Array")
	}
	if len(s) != a.n {
		return nil, fmt.Errorf("highlevel: host slice of %d elements for an array of %d", len(s), a.n)
	}
	return unsafe.Pointer(unsafe.SliceData(s)), nil
}

// CopyFromHost copies src, which must be as long as the array, to it.
func (a *Array[T]) CopyFromHost(src []T) error {
	h, err := a.host(src)
	if err != nil || a.n == 0 {
		return err
	}
	return a.p.CopyFromHost(h, a.bytes())
}

// CopyFromHostAsync is CopyFromHost ordered on stream s; see
// MemoryPointer.CopyFromHostAsync for when src may be reused.
func (a *Array[T]) CopyFromHostAsync(src []T, s *Stream) error {
	h, err := a.host(src)
	if err != nil || a.n == 0 {
		return err
	}
	return a.p.CopyFromHostAsync(h, a.bytes(), s)
}

// CopyToHost copies the array to dst, which must be as long as the array.
func (a *Array[T]) CopyToHost(dst []T) error {
	h, err := a.host(dst)
	if err != nil || a.n == 0 {
		return err
	}
	return a.p.CopyToHost(h, a.bytes())
}

// CopyToHostAsync is CopyToHost ordered on stream s; see
// MemoryPointer.CopyToHostAsync for when dst holds the data.
func (a *Array[T]) CopyToHostAsync(dst []T, s *Stream) error {
	h, err := a.host(dst)
	if err != nil || a.n == 0 {
		return err
	}
	return a.p.CopyToHostAsync(h, a.bytes(), s)
}

// ToHost returns a new Go slice holding the array's elements.
func (a *Array[T]) ToHost() ([]T, error) {
	if a == nil {
		return nil, nilError("Array")
	}
	s := make([]T, a.n)
	if err := a.CopyToHost(s); err != nil {
		return nil, err
	}
	return s, nil
}

// Slice returns the elements i to j-1 as an array that shares the memory,
// as s[i:j] does for a Go slice; it keeps the memory reachable, as the
// array does.
func (a *Array[T]) Slice(i, j int) (*Array[T], error) {
	if a == nil {
		return nil, nilError("Array")
	}
	if i < 0 || j < i || j > a.n {
		return nil, fmt.Errorf("highlevel: slice [%d:%d] of an array of %d elements", i, j, a.n)
	}
	if a.n == 0 {
		return &Array[T]{}, nil
	}
	if err := a.p.Mem.live(); err != nil {
		return nil, err
	}
	if i == j {
		return &Array[T]{}, nil
	}
	p := a.p
	p.Offset += i * int(unsafe.Sizeof(*new(T)))
	return &Array[T]{p: p, n: j - i}, nil
}

// Free frees the array's memory. Arrays sliced from it become unusable. A
// slice (from Slice) does not own the memory: its Free returns an error.
// A second Free returns ErrFreed.
func (a *Array[T]) Free() error {
	if a == nil {
		return nilError("Array")
	}
	if !a.owned {
		return fmt.Errorf("highlevel: Free of a slice of an array: free the array it was sliced from")
	}
	if a.n == 0 {
		return nil
	}
	return a.p.Mem.Free()
}
