package bench

import (
	"testing"
	"unsafe"

	"github.com/gocuda/cuda/cudart"
)

// initDevice makes device 0 current with its primary context created:
// before that, every runtime call takes a slow path.
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
	initDevice(b)
	var d int32
	for b.Loop() {
		if err := cudart.GetDevice(&d); err != nil {
			b.Fatal(err)
		}
	}
}
