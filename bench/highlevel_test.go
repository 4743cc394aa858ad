package bench

import (
	"runtime"
	"testing"

	"github.com/gocuda/cuda/cudadrv"
	"github.com/gocuda/cuda/highlevel"
)

// device returns device 0 with its primary context made, or skips.
func device(b *testing.B) highlevel.Device {
	b.Helper()
	if !highlevel.IsAvailable() {
		b.Skip("no CUDA device")
	}
	d := highlevel.Device(0)
	if _, err := d.Name(); err != nil {
		b.Fatal(err)
	}
	return d
}

// kernel compiles source for device 0 and returns its kernel name, in a
// module closed when the benchmark ends.
func kernel(b *testing.B, source, name string) *highlevel.Kernel {
	b.Helper()
	return kernelWith(b, source, name, nil)
}

// kernelWith is kernel with the compiler's options opts.
func kernelWith(b *testing.B, source, name string, opts *highlevel.CompileOptions) *highlevel.Kernel {
	b.Helper()
	device(b)
	c, err := highlevel.Compile(source, opts)
	if err != nil {
		b.Fatal(err)
	}
	m, err := highlevel.LoadModule(c.Image)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { m.Close() })
	k, err := m.Kernel(name)
	if err != nil {
		b.Fatal(err)
	}
	return k
}

// BenchmarkPoolMallocFree is a pool hit: Malloc and Free of 1 MiB, no cgo
// call. CuPy's MemoryPool takes 557 ns for the pair on the H200; c/highlevel.c
// times cudaMallocAsync + cudaFreeAsync, CUDA's own pool.
func BenchmarkPoolMallocFree(b *testing.B) {
	d := device(b)
	p, err := highlevel.NewMemoryPool(d)
	if err != nil {
		b.Fatal(err)
	}
	defer p.FreeAllBlocks()
	b.ReportAllocs()
	for b.Loop() {
		m, err := p.Alloc(1 << 20)
		if err != nil {
			b.Fatal(err)
		}
		m.Free()
	}
}

// BenchmarkMallocAsyncFree is AllocAsync + Free of 1 MiB on a stream,
// through CUDA's stream-ordered pool.
func BenchmarkMallocAsyncFree(b *testing.B) {
	mallocAsyncFree(b, device(b))
}

// BenchmarkMallocAsyncFreeContextCurrent is BenchmarkMallocAsyncFree on a
// thread where the device's primary context is current already, so that
// the shim need not make it current and put the thread's own back around
// each call.
func BenchmarkMallocAsyncFreeContextCurrent(b *testing.B) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	initDevice(b)
	mallocAsyncFree(b, device(b))
}

func mallocAsyncFree(b *testing.B, d highlevel.Device) {
	s, err := highlevel.NewStream(d, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	b.ReportAllocs()
	loop(b, s, func() error {
		m, err := highlevel.AllocAsync(s, 1<<20)
		if err != nil {
			return err
		}
		return m.Free()
	})
}

// BenchmarkMallocAsyncFreePaired is BenchmarkMallocAsyncFree against C's
// cudaMallocFromPoolAsync and cudaFreeAsync on the same stream and pool,
// made in this process (asyncTwin, a cgo call a block), in blocks of
// asyncBlock rounds that take turns (paired).
func BenchmarkMallocAsyncFreePaired(b *testing.B) {
	s, twin := asyncPaired(b)
	b.ReportAllocs()
	paired(b, s.Synchronize, asyncBlock, func(n int) error {
		for range n {
			m, err := highlevel.AllocAsync(s, 1<<20)
			if err != nil {
				return err
			}
			if err := m.Free(); err != nil {
				return err
			}
		}
		return nil
	}, twin.rounds)
}

// BenchmarkMallocAsyncFreeRawPaired is BenchmarkMallocAsyncFreePaired with
// the raw bindings' cuMemAllocFromPoolAsync and cuMemFreeAsync on Go's side,
// one cgo call each: the floor of any Go binding of the two calls.
func BenchmarkMallocAsyncFreeRawPaired(b *testing.B) {
	runtime.LockOSThread() // the raw calls need the context current
	defer runtime.UnlockOSThread()
	s, twin := asyncPaired(b)
	var pool cudadrv.MemoryPool
	if err := cudadrv.DeviceGetDefaultMemPool(&pool, 0); err != nil {
		b.Fatal(err)
	}
	rs := cudadrv.Stream(s.Handle())
	paired(b, s.Synchronize, asyncBlock, func(n int) error {
		for range n {
			var p cudadrv.Deviceptr
			if err := cudadrv.MemAllocFromPoolAsync(&p, 1<<20, pool, rs); err != nil {
				return err
			}
			if err := cudadrv.MemFreeAsync(p, rs); err != nil {
				return err
			}
		}
		return nil
	}, twin.rounds)
}

// asyncPaired returns a stream of device 0, closed when b ends, and C's
// side of the paired AllocAsync benchmarks on it.
func asyncPaired(b *testing.B) (*highlevel.Stream, *asyncTwin) {
	initDevice(b)
	s, err := highlevel.NewStream(device(b), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	twin, err := newAsyncTwin(s.Handle())
	if err != nil {
		b.Fatal(err)
	}
	return s, twin
}

// asyncBlock is the rounds of a block of BenchmarkMallocAsyncFreePaired:
// about a millisecond.
const asyncBlock = 2000

// BenchmarkEventRecord records one event on one stream, as c/highlevel.c
// does.
func BenchmarkEventRecord(b *testing.B) {
	d := device(b)
	s, err := highlevel.NewStream(d, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	e, err := highlevel.NewEvent(d, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	for b.Loop() {
		if err := e.Record(s); err != nil {
			b.Fatal(err)
		}
	}
	s.Synchronize()
}

// BenchmarkStreamCreateDestroy creates and closes a stream.
func BenchmarkStreamCreateDestroy(b *testing.B) {
	d := device(b)
	for b.Loop() {
		s, err := highlevel.NewStream(d, nil)
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDeviceAttribute reads the number of multiprocessors, which
// highlevel answers from its cache after the first call; c/getdevice.c calls
// cudaDeviceGetAttribute each time, as a C program would.
func BenchmarkDeviceAttribute(b *testing.B) {
	d := device(b)
	for b.Loop() {
		if _, err := d.Attribute(highlevel.DeviceMultiprocessorCount); err != nil {
			b.Fatal(err)
		}
	}
}
