package cudart

import (
	"reflect"
	"testing"
	"unsafe"
)

// TestMakers checks the Go forms of driver_functions.h's make_cudaPitchedPtr,
// make_cudaPos and make_cudaExtent: each field from its argument.
func TestMakers(t *testing.T) {
	var buf [64]byte
	p := Make_cudaPitchedPtr(unsafe.Pointer(&buf[0]), 64, 16, 4)
	if p.Ptr != unsafe.Pointer(&buf[0]) || p.Pitch != 64 || p.Xsize != 16 || p.Ysize != 4 {
		t.Errorf("Make_cudaPitchedPtr = %+v", p)
	}
	if got := Make_cudaPos(1, 2, 3); got != (Pos{X: 1, Y: 2, Z: 3}) {
		t.Errorf("Make_cudaPos(1, 2, 3) = %+v", got)
	}
	if got := Make_cudaExtent(4, 5, 6); got != (Extent{Width: 4, Height: 5, Depth: 6}) {
		t.Errorf("Make_cudaExtent(4, 5, 6) = %+v", got)
	}
}

// TestConstHandles checks that a handle to a const array is the plain
// handle in Go: an Array passes where C takes a cudaArray_const_t, with no
// conversion.
func TestConstHandles(t *testing.T) {
	var copyFrom func(dst unsafe.Pointer, dpitch uint64, src Array, wOffset, hOffset, width, height uint64, kind MemcpyKind) error = Memcpy2DFromArray
	_ = copyFrom
	if reflect.TypeFor[Array_const]() != reflect.TypeFor[Array]() || reflect.TypeFor[MipmappedArray_const]() != reflect.TypeFor[MipmappedArray]() {
		t.Error("Array_const or MipmappedArray_const is a type of its own")
	}
}
