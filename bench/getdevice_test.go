package bench

import (
	"runtime"
	"testing"
	"unsafe"

	"github.com/gocuda/cuda/cudadrv"
	"github.com/gocuda/cuda/cudart"
)

// initDevice makes device 0 current on the calling thread, with its primary
// context created: before that, every runtime call takes a slow path.
func initDevice(b *testing.B) {
	b.Helper()
	if err := cudart.Load(); err != nil {
		b.Skipf("no CUDA runtime: %v", err)
	}
	if err := cudart.SetDevice(0); err != nil {
		b.Skipf("no CUDA device: %v", err)
	}
	if err := cudart.Free(unsafe.Pointer(nil)); err != nil {
		b.Fatalf("creating the context: %v", err)
	}
}

// BenchmarkGetDevice is cudaGetDevice through the binding; c/getdevice.c
// times the same loop in C.
func BenchmarkGetDevice(b *testing.B) {
	// The current device is per OS thread, and on a thread without one
	// every call takes CUDA's slow path (about 1 µs): stay on the thread
	// initDevice sets up.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	initDevice(b)
	var d int32
	for b.Loop() {
		if err := cudart.GetDevice(&d); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCtxGetDevice is cuCtxGetDevice through the driver binding, the
// driver's cheapest call; c/getdevice.c times it in C as well.
func BenchmarkCtxGetDevice(b *testing.B) {
	// The context is current on one OS thread: stay on it.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	initDevice(b)
	var d cudadrv.Device
	for b.Loop() {
		if err := cudadrv.CtxGetDevice(&d); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCgoNoop is the floor under BenchmarkGetDevice: a cgo call of a C
// function that does nothing. GetDevice costs this plus cudaGetDevice's own
// time (c/getdevice.c) plus what the binding adds.
func BenchmarkCgoNoop(b *testing.B) {
	var d int32
	for b.Loop() {
		if cgoNoop(&d) != 0 {
			b.Fatal("bench_noop failed")
		}
	}
}
