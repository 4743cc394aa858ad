package bench

import (
	"runtime"
	"testing"
	"unsafe"

	"github.com/gocuda/cuda/cudart"
	"github.com/gocuda/cuda/highlevel"
)

// copySize is what the copy benchmarks move per operation, as c/copy.c does.
const copySize = 256 << 20

// copySetup returns copySize bytes of device memory and a stream.
func copySetup(b *testing.B) (highlevel.MemoryPointer, *highlevel.Stream) {
	d := device(b)
	m, err := d.Alloc(copySize)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { m.Free() })
	s, err := highlevel.NewStream(d, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	b.SetBytes(copySize)
	return m, s
}

// pinnedHost returns copySize bytes of pinned memory.
func pinnedHost(b *testing.B) unsafe.Pointer {
	p, err := highlevel.AllocPinned(copySize)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { p.Free() })
	clear(p.Bytes())
	return p.Ptr()
}

// pageableHost returns copySize bytes of ordinary Go memory, touched, so
// that the pages exist before the timing starts.
func pageableHost() unsafe.Pointer {
	h := make([]byte, copySize)
	for i := range h {
		h[i] = byte(i)
	}
	return unsafe.Pointer(&h[0])
}

// loop runs op b.N times and synchronizes s: the loop of c/bench.h. It
// reports the cgo calls op made, per op (cgo-calls/op).
func loop(b *testing.B, s *highlevel.Stream, op func() error) {
	b.Helper()
	if err := op(); err != nil { // warm up: the staging buffers, the DMA path
		b.Fatal(err)
	}
	if err := s.Synchronize(); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	calls := runtime.NumCgoCall()
	for range b.N {
		if err := op(); err != nil {
			b.Fatal(err)
		}
	}
	calls = runtime.NumCgoCall() - calls
	if err := s.Synchronize(); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(calls)/float64(b.N), "cgo-calls/op")
}

// BenchmarkH2DPinned copies 256 MiB from pinned memory on a stream.
func BenchmarkH2DPinned(b *testing.B) {
	m, s := copySetup(b)
	h := pinnedHost(b)
	loop(b, s, func() error { return m.CopyFromHostPointerAsync(s, h, copySize) })
}

// BenchmarkD2HPinned copies 256 MiB to pinned memory on a stream.
func BenchmarkD2HPinned(b *testing.B) {
	m, s := copySetup(b)
	h := pinnedHost(b)
	loop(b, s, func() error { return m.CopyToHostPointerAsync(s, h, copySize) })
}

// BenchmarkH2DPageable copies 256 MiB of ordinary Go memory with
// CopyFromHost, which stages it through pinned buffers; c/copy.c times
// cudaMemcpy from malloc'd memory.
func BenchmarkH2DPageable(b *testing.B) {
	m, s := copySetup(b)
	h := pageableHost()
	loop(b, s, func() error { return m.CopyFromHostPointer(h, copySize) })
}

// BenchmarkD2HPageable copies 256 MiB to ordinary Go memory with
// CopyToHost.
func BenchmarkD2HPageable(b *testing.B) {
	m, s := copySetup(b)
	h := pageableHost()
	loop(b, s, func() error { return m.CopyToHostPointer(h, copySize) })
}

// BenchmarkH2DPageableUnstaged is what BenchmarkH2DPageable measured before
// the staging pipeline: cudaMemcpy from ordinary Go memory, through the raw
// binding.
func BenchmarkH2DPageableUnstaged(b *testing.B) {
	m, s := copySetup(b)
	h := pageableHost()
	loop(b, s, func() error { return cudart.Memcpy(m.Ptr(), h, copySize, cudart.MemcpyHostToDevice) })
}

// BenchmarkD2HPageableUnstaged is cudaMemcpy to ordinary Go memory.
func BenchmarkD2HPageableUnstaged(b *testing.B) {
	m, s := copySetup(b)
	h := pageableHost()
	loop(b, s, func() error { return cudart.Memcpy(h, m.Ptr(), copySize, cudart.MemcpyDeviceToHost) })
}

// d2dSetup is copySetup with a second allocation to copy from.
func d2dSetup(b *testing.B) (dst, src highlevel.MemoryPointer, s *highlevel.Stream) {
	dst, s = copySetup(b)
	src, err := dst.Device().Alloc(copySize)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { src.Free() })
	return dst, src, s
}

// BenchmarkD2D copies 256 MiB between two allocations of one device.
func BenchmarkD2D(b *testing.B) {
	m, src, s := d2dSetup(b)
	loop(b, s, func() error { return m.CopyFromDeviceAsync(s, src, copySize) })
}

// BenchmarkMemset sets 256 MiB.
func BenchmarkMemset(b *testing.B) {
	m, s := copySetup(b)
	loop(b, s, func() error { return m.MemsetAsync(s, 0, copySize) })
}

// BenchmarkH2DRegistered is the other way to copy ordinary Go memory at
// the link's speed: register it with CUDA for the copy (RegisterHost),
// copy, unregister. It shows what registering costs against staging.
func BenchmarkH2DRegistered(b *testing.B) {
	m, s := copySetup(b)
	h := make([]byte, copySize)
	clear(h)
	loop(b, s, func() error {
		r, err := highlevel.RegisterHost(h)
		if err != nil {
			return err
		}
		if err := m.CopyFromHostPointerAsync(s, unsafe.Pointer(&h[0]), copySize); err != nil {
			r.Unregister()
			return err
		}
		if err := s.Synchronize(); err != nil {
			r.Unregister()
			return err
		}
		return r.Unregister()
	})
}

// BenchmarkD2DDefaultKind is BenchmarkD2D through the raw binding with
// cudaMemcpyDefault, the kind that lets the runtime find out where the
// memory is, to compare with cudaMemcpyDeviceToDevice.
func BenchmarkD2DDefaultKind(b *testing.B) {
	m, src, s := d2dSetup(b)
	loop(b, s, func() error {
		return cudart.MemcpyAsync(m.Ptr(), src.Ptr(), copySize, cudart.MemcpyDefault, s.Handle())
	})
}
