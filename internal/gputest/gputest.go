// Package gputest holds what the generated libraries' GPU tests share: the
// end of a test that cannot use a GPU or its library, and device memory
// through cudart, freed at cleanup.
package gputest

import (
	"testing"
	"unsafe"

	"github.com/gocuda/cuda/cudart"
	"github.com/gocuda/cuda/internal/gpuprobe"
)

// Require ends the test unless it can use a GPU through the CUDA runtime
// and load, a library's Load, succeeds. Where the driver has no device or
// fails, it ends the test as gpuprobe.Require does; where load or
// libcudart's Load fails, it ends it as gpuprobe.RequireLibrary does, what
// naming the library: it skips it where the library is not installed,
// but fails it, with the loader's error, where $GOCUDA_TEST_GPU=1 says
// the machine has a GPU (the GPU suite's); where the runtime finds no
// device on a driver that has one, it fails it.
func Require(t testing.TB, what string, load func() error) {
	t.Helper()
	gpuprobe.Require(t)
	gpuprobe.RequireLibrary(t, what, load())
	gpuprobe.RequireLibrary(t, "CUDA runtime", cudart.Load())
	var n int32
	if err := cudart.GetDeviceCount(&n); err != nil || n == 0 {
		t.Fatalf("the CUDA runtime counts %d devices, %v, where the driver has one", n, err)
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
