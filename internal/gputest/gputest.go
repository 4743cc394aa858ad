// Package gputest holds what the generated libraries' GPU tests share: a
// skip where the library or a GPU is missing, and device memory through
// cudart, freed at cleanup.
package gputest

import (
	"testing"
	"unsafe"

	"github.com/gocuda/cuda/cudart"
)

// Require skips the test where load, a library's Load, fails, or where
// there is no CUDA device; what names the library in the reason.
func Require(t testing.TB, what string, load func() error) {
	t.Helper()
	if err := load(); err != nil {
		t.Skipf("no %s: %v", what, err)
	}
	var n int32
	if err := cudart.GetDeviceCount(&n); err != nil || n == 0 {
		t.Skipf("no CUDA device: %d, %v", n, err)
	}
}

// Alloc allocates n elements of T in device memory, freed at cleanup.
func Alloc[T any](t testing.TB, n int) *T {
	t.Helper()
	var p unsafe.Pointer
	if err := cudart.Malloc(&p, size[T](n)); err != nil {
		t.Fatalf("Malloc of %d elements: %v", n, err)
	}
	t.Cleanup(func() { cudart.Free(p) })
	return (*T)(p)
}

// Device copies s to new device memory, freed at cleanup.
func Device[T any](t testing.TB, s []T) *T {
	t.Helper()
	p := Alloc[T](t, len(s))
	ToDevice(t, p, s)
	return p
}

// ToDevice copies s to p.
func ToDevice[T any](t testing.TB, p *T, s []T) {
	t.Helper()
	if err := cudart.Memcpy(unsafe.Pointer(p), unsafe.Pointer(unsafe.SliceData(s)), size[T](len(s)), cudart.MemcpyHostToDevice); err != nil {
		t.Fatal(err)
	}
}

// ToHost waits for the device, then copies len(dst) elements from p to
// dst.
func ToHost[T any](t testing.TB, dst []T, p *T) {
	t.Helper()
	if err := cudart.DeviceSynchronize(); err != nil {
		t.Fatalf("DeviceSynchronize: %v", err)
	}
	if err := cudart.Memcpy(unsafe.Pointer(unsafe.SliceData(dst)), unsafe.Pointer(p), size[T](len(dst)), cudart.MemcpyDeviceToHost); err != nil {
		t.Fatal(err)
	}
}

func size[T any](n int) uint64 {
	return uint64(n) * uint64(unsafe.Sizeof(*new(T)))
}
