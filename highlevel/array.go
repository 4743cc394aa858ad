package highlevel

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"reflect"
	"sync/atomic"
	"unsafe"
)

// An Array is a typed slice of device memory, the Go form of CuPy's
// asarray and asnumpy: ArrayFrom copies a Go slice to the device, ToHost
// copies it back. T must hold no Go pointers (no pointers, slices, maps,
// strings, interfaces, channels or funcs, also inside structs and arrays),
// since the device cannot hold them.
//
// An Array made by AllocArray, AllocArrayAsync or ArrayFrom owns its
// memory: Free frees it. One made by Slice or ArrayOf is a view: it keeps
// the memory reachable but does not own it.
//
// The zero value is an empty view, as Slice(i, i) returns: its copies of
// empty slices do nothing, and Free returns an error.
type Array[T any] struct {
	p     MemoryPointer
	n     int
	owned bool        // Free frees the memory; false for a view
	freed atomic.Bool // an empty array's Free ran (others ask their Memory)
}

// checkElem refuses element types that hold Go pointers or have no size.
func checkElem[T any]() error {
	t := reflect.TypeFor[T]()
	if v, ok := elemChecks.Load(t); ok {
		err, _ := v.(error)
		return err
	}
	var err error
	switch {
	case t.Size() == 0:
		err = invalid("highlevel: element type %v has size 0", t)
	case hasPointers(t):
		err = invalid("highlevel: element type %v holds Go pointers, which device memory cannot hold", t)
	}
	elemChecks.Store(t, err)
	return err
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

// AllocArray allocates an array of n elements from a: a Device
// (unpooled), a MemoryPool, a MemoryAsyncPool or Managed(d), for instance;
// a nil a is the process's default allocator (Alloc). Its contents are
// undefined. An array of 0 elements allocates nothing, and its copies do
// nothing.
func AllocArray[T any](a Allocator, n int) (*Array[T], error) {
	return newArray[T](a, n)
}

// A StreamAllocator allocates memory ordered on a stream: a MemoryPool or
// a MemoryAsyncPool.
type StreamAllocator interface {
	AllocAsync(s *Stream, size int) (MemoryPointer, error)
}

// AllocArrayAsync allocates an array of n elements from a, ordered on
// stream s: work queued on s after it may use the array at once, and its
// Free is ordered as a's AllocAsync says. A nil a is the default memory
// pool of s's device (the function AllocAsync).
func AllocArrayAsync[T any](s *Stream, a StreamAllocator, n int) (*Array[T], error) {
	return newArray[T](streamAllocator{s, a}, n)
}

// A streamAllocator is the Allocator AllocArrayAsync allocates from: a's
// AllocAsync on s, or the function AllocAsync where a is nil.
type streamAllocator struct {
	s *Stream
	a StreamAllocator
}

func (x streamAllocator) Alloc(size int) (MemoryPointer, error) {
	if x.a == nil {
		return AllocAsync(x.s, size)
	}
	return x.a.AllocAsync(x.s, size)
}

// Device returns the device of s, for errors (allocatorDevice).
func (x streamAllocator) Device() Device { return x.s.Device() }

// newArray allocates an array of n elements from a; nil a is Alloc's.
func newArray[T any](a Allocator, n int) (_ *Array[T], err error) {
	defer func() {
		if err != nil {
			noteOutOfMemory(err) // a size no device has, or an Allocator of the program's
			wrap(&err, "alloc array of", n, reflect.TypeFor[T]())
		}
	}()
	size, err := arrayBytes[T](n, allocatorDevice(a))
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return &Array[T]{owned: true}, nil
	}
	if a == nil {
		if a, err = GetAllocator(); err != nil {
			return nil, err
		}
	}
	p, err := a.Alloc(size)
	if err != nil {
		return nil, err
	}
	if err := fitsAllocation(p, size, unsafe.Alignof(*new(T))); err != nil {
		return nil, err
	}
	return &Array[T]{p: p, n: n, owned: true}, nil
}

// fitsAllocation checks what an Allocator returned for size bytes: memory
// of at least that size, aligned to align. An allocator of the program's
// own that returns less would let kernels and libraries, which take only
// the address, write past its end. Memory that does not fit is freed.
func fitsAllocation(p MemoryPointer, size int, align uintptr) error {
	switch {
	case p.mem == nil:
		return errors.New("the allocator returned no memory and no error")
	case p.Size() < size || uintptr(p.Ptr())%align != 0:
		err := fmt.Errorf("the allocator returned %d bytes at %p for %d bytes aligned to %d", p.Size(), p.Ptr(), size, align)
		if p.off == 0 {
			p.mem.free()
		}
		return err
	}
	return nil
}

// arrayBytes returns the size of n elements of T on d, checking T and n.
func arrayBytes[T any](n int, d Device) (int, error) {
	if err := checkElem[T](); err != nil {
		return 0, err
	}
	if n < 0 {
		return 0, invalid("length %d: it must not be negative", n)
	}
	size := int(unsafe.Sizeof(*new(T)))
	if n > maxSize/size {
		total := math.MaxInt // more than an int counts
		if n <= math.MaxInt/size {
			total = n * size
		}
		return 0, &OutOfMemoryError{Size: total, Device: d}
	}
	return n * size, nil
}

// allocatorDevice returns the device a allocates on, where it says; 0
// otherwise (nil, the process's default, is usually device 0).
func allocatorDevice(a Allocator) Device {
	switch a := a.(type) {
	case Device:
		return a
	case interface{ Device() Device }:
		return a.Device()
	}
	return 0
}

// ArrayFrom allocates an array as long as s from a (nil: the process's
// default allocator), as AllocArray does, and copies s to it.
func ArrayFrom[T any](a Allocator, s []T) (*Array[T], error) {
	return newArrayFrom(a, s)
}

func newArrayFrom[T any](al Allocator, s []T) (*Array[T], error) {
	a, err := newArray[T](al, len(s))
	if err != nil {
		return nil, err
	}
	if err := a.CopyFromHost(s); err != nil {
		a.Free()
		return nil, opErr(fmt.Sprintf("array from []%v", reflect.TypeFor[T]()), inner(err))
	}
	return a, nil
}

// ArrayOf returns an array of n elements over the memory at p: a view, as
// a Go slice made from an array is. It keeps the memory reachable, as
// Slice does, and Free does not free it: the memory's owner does. p must
// be aligned for T, and the n elements must lie within p's memory.
func ArrayOf[T any](p MemoryPointer, n int) (_ *Array[T], err error) {
	defer func() {
		if err != nil {
			wrap(&err, "array of", n, reflect.TypeFor[T](), "over memory")
		}
	}()
	size, err := arrayBytes[T](n, p.Device())
	if err != nil {
		return nil, err
	}
	if err := p.mem.live(); err != nil {
		return nil, err
	}
	if size > p.Size() {
		return nil, invalid("%d bytes over %d bytes of memory", size, p.Size())
	}
	if align := unsafe.Alignof(*new(T)); uintptr(p.Ptr())%align != 0 {
		return nil, invalid("address %p not aligned to %d bytes", p.Ptr(), align)
	}
	if n == 0 {
		return &Array[T]{}, nil
	}
	return &Array[T]{p: p, n: n}, nil
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

// Device returns the device of the array's memory; 0 for an empty or nil
// Array.
func (a *Array[T]) Device() Device {
	if a == nil {
		return 0
	}
	return a.p.Device()
}

// MemoryPointer returns the array's memory and offset; the zero
// MemoryPointer for an empty or nil Array.
func (a *Array[T]) MemoryPointer() MemoryPointer {
	if a == nil {
		return MemoryPointer{}
	}
	return a.p
}

// isArray marks every *Array[T], for Kernel.Launch.
func (*Array[T]) isArray() {}

func (a *Array[T]) bytes() int { return a.n * int(unsafe.Sizeof(*new(T))) }

// host checks that s is as long as the array and returns its data, or nil
// when there is nothing to copy.
func (a *Array[T]) host(s []T) (unsafe.Pointer, error) {
	if a == nil {
		return nil, nilError("Array")
	}
	if len(s) != a.n {
		return nil, invalid("highlevel: host slice of %d elements for an array of %d", len(s), a.n)
	}
	if a.n == 0 && a.freed.Load() {
		return nil, ErrFreed
	}
	return unsafe.Pointer(unsafe.SliceData(s)), nil
}

// CopyFromHost copies src, which must be as long as the array, to it.
func (a *Array[T]) CopyFromHost(src []T) error {
	h, err := a.host(src)
	if err != nil || a.n == 0 {
		return err
	}
	return a.p.CopyFromHostPointer(h, a.bytes())
}

// CopyFromHostAsync is CopyFromHost ordered on stream s; see
// MemoryPointer.CopyFromHostAsync for when src may be reused.
func (a *Array[T]) CopyFromHostAsync(s *Stream, src []T) error {
	h, err := a.host(src)
	if err != nil || a.n == 0 {
		return err
	}
	return a.p.CopyFromHostPointerAsync(s, h, a.bytes())
}

// CopyToHost copies the array to dst, which must be as long as the array.
func (a *Array[T]) CopyToHost(dst []T) error {
	h, err := a.host(dst)
	if err != nil || a.n == 0 {
		return err
	}
	return a.p.CopyToHostPointer(h, a.bytes())
}

// CopyToHostAsync is CopyToHost ordered on stream s; see
// MemoryPointer.CopyToHostAsync for when dst holds the data.
func (a *Array[T]) CopyToHostAsync(s *Stream, dst []T) error {
	h, err := a.host(dst)
	if err != nil || a.n == 0 {
		return err
	}
	return a.p.CopyToHostPointerAsync(s, h, a.bytes())
}

// CopyFrom copies src, which must be as long as the array, to it; the
// arrays may be on different devices. It returns once the copy is done.
func (a *Array[T]) CopyFrom(src *Array[T]) error {
	if err := a.same(src); err != nil || a.n == 0 {
		return err
	}
	return a.p.CopyFromDevice(src.p, a.bytes())
}

// CopyFromAsync is CopyFrom ordered on stream s.
func (a *Array[T]) CopyFromAsync(s *Stream, src *Array[T]) error {
	if err := a.same(src); err != nil || a.n == 0 {
		return err
	}
	return a.p.CopyFromDeviceAsync(s, src.p, a.bytes())
}

// same checks that src can be copied to a.
func (a *Array[T]) same(src *Array[T]) error {
	switch {
	case a == nil || src == nil:
		return nilError("Array")
	case src.n != a.n:
		return invalid("highlevel: copy of an array of %d elements to one of %d", src.n, a.n)
	case a.n == 0 && (a.freed.Load() || src.freed.Load()):
		return ErrFreed
	}
	return nil
}

// Fill sets every element of the array to v. It returns once the array
// is filled. Elements of 1, 2 or a multiple of 4 bytes are set by the
// driver's memsets, which a capture takes (FillAsync); others are copied
// from the host, which a capture refuses (ErrCapturing).
func (a *Array[T]) Fill(v T) error { return a.fill(nil, v, false) }

// FillAsync is Fill ordered on stream s.
func (a *Array[T]) FillAsync(s *Stream, v T) error { return a.fill(s, v, true) }

// fillChunk is the most elements Fill copies from the host; it doubles
// the rest on the device.
const fillChunk = 4096

// fill sets every element to v with the driver's memsets, which a capture
// takes as it takes any memset: one where v's bytes are all equal (zero,
// for one), or where v is 2 or 4 bytes long; where it is a multiple of 4,
// one memset of every element's ith 4 bytes for each i. Other sizes copy up
// to fillChunk copies of v from the host and double them on the device.
func (a *Array[T]) fill(s *Stream, v T, async bool) error {
	if a == nil {
		return nilError("Array")
	}
	if a.n == 0 {
		if a.freed.Load() {
			return ErrFreed
		}
		return nil
	}
	b := unsafe.Slice((*byte)(unsafe.Pointer(&v)), unsafe.Sizeof(v))
	size := len(b)
	if r, ok := oneMemset(b, a.n); ok {
		return a.p.set(r, s, async)
	}
	if size%4 == 0 {
		var err error
		for i := 0; i < size && err == nil; i += 4 {
			var p MemoryPointer
			if p, err = a.p.Add(i); err == nil {
				err = p.set(memsetRows{v: binary.NativeEndian.Uint32(b[i:]), size: 4, width: 1, height: a.n, pitch: size}, s, async)
			}
		}
		return err
	}
	k := min(a.n, fillChunk)
	chunk := make([]T, k)
	for i := range chunk {
		chunk[i] = v
	}
	head, err := a.Slice(0, k)
	if err == nil {
		if async {
			err = head.CopyFromHostAsync(s, chunk)
		} else {
			err = head.CopyFromHost(chunk)
		}
	}
	for done := k; err == nil && done < a.n; done *= 2 {
		n := min(done, a.n-done) * size
		dst, aerr := a.p.Add(done * size)
		if aerr != nil {
			return aerr
		}
		if async {
			err = dst.CopyFromDeviceAsync(s, a.p, n)
		} else {
			err = dst.CopyFromDevice(a.p, n)
		}
	}
	return err
}

// oneMemset returns the one memset of the driver's that sets n elements
// whose bytes are b, where there is one: b's bytes all equal, b 2 bytes
// long, or b its first 4 bytes repeated.
func oneMemset(b []byte, n int) (memsetRows, bool) {
	switch size := len(b); {
	case uniform(b):
		return memsetRows{v: uint32(b[0]), size: 1, width: n * size, height: 1}, true
	case size == 2:
		return memsetRows{v: uint32(binary.NativeEndian.Uint16(b)), size: 2, width: n, height: 1}, true
	case size%4 == 0 && uniformWords(b):
		return memsetRows{v: binary.NativeEndian.Uint32(b), size: 4, width: n * size / 4, height: 1}, true
	}
	return memsetRows{}, false
}

// uniformWords reports whether b, a multiple of 4 bytes long, repeats its
// first 4 bytes.
func uniformWords(b []byte) bool {
	for i := 4; i < len(b); i += 4 {
		if [4]byte(b[i:]) != [4]byte(b) {
			return false
		}
	}
	return true
}

// uniform reports whether every byte of b is b[0].
func uniform(b []byte) bool {
	for _, c := range b[1:] {
		if c != b[0] {
			return false
		}
	}
	return true
}

// ToHost returns a new Go slice holding the array's elements: a
// convenience over CopyToHost, which copies into a slice of the caller's.
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
		return nil, invalid("highlevel: slice [%d:%d] of an array of %d elements", i, j, a.n)
	}
	if a.n == 0 {
		if a.freed.Load() {
			return nil, ErrFreed
		}
		return &Array[T]{}, nil
	}
	if err := a.p.mem.live(); err != nil {
		return nil, err
	}
	if i == j {
		return &Array[T]{}, nil
	}
	p := a.p
	p.off += i * int(unsafe.Sizeof(*new(T)))
	return &Array[T]{p: p, n: j - i}, nil
}

// Free frees the array's memory. Arrays sliced from it become unusable. A
// view (from Slice or ArrayOf) does not own the memory: its Free returns
// an error and changes nothing. A second Free returns ErrFreed, also for
// an empty array.
func (a *Array[T]) Free() error {
	if a == nil {
		return nilError("Array")
	}
	if !a.owned {
		return invalid("highlevel: Free of a view of memory (Array.Slice, ArrayOf): free the memory's owner")
	}
	if a.n == 0 {
		if a.freed.Swap(true) {
			return ErrFreed
		}
		return nil
	}
	return a.p.mem.free()
}
