package bench

import (
	"runtime"
	"testing"
	"unsafe"

	"github.com/gocuda/cuda/cudadrv"
	"github.com/gocuda/cuda/cudart"
	"github.com/gocuda/cuda/highlevel"
)

// kernels are the launch benchmarks' kernels; c/launch.cu has the same.
const kernels = `
extern "C" __global__ void empty() {}
extern "C" __global__ void args4(float a, const float *x, float *y, int n) {
	if (n > 0 && threadIdx.x == 0) y[0] = a * x[0];
}
`

// launchSetup compiles the kernels and returns one by name, with a stream.
func launchSetup(b *testing.B, name string) (*highlevel.Kernel, *highlevel.Stream) {
	k := kernel(b, kernels, name)
	s, err := highlevel.NewStream(0, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return k, s
}

var one = highlevel.LaunchConfig{Grid: highlevel.Dim3{X: 1}, Block: highlevel.Dim3{X: 1}}

// BenchmarkLaunchEmpty is launch throughput: empty kernels queued on a
// stream, synchronized once at the end, as c/launch.cu times <<<>>> and
// cudaLaunchKernel.
func BenchmarkLaunchEmpty(b *testing.B) {
	launchEmpty(b)
}

// BenchmarkLaunchEmptyContextCurrent is BenchmarkLaunchEmpty on a thread
// where the device's primary context is current already.
func BenchmarkLaunchEmptyContextCurrent(b *testing.B) { onContextThread(b, launchEmpty) }

// onContextThread runs bench on a thread where device 0's primary context
// is current already, as it is for C's calls.
func onContextThread(b *testing.B, bench func(*testing.B)) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	initDevice(b)
	bench(b)
}

func launchEmpty(b *testing.B) {
	k, s := launchSetup(b, "empty")
	b.ReportAllocs()
	for b.Loop() {
		if err := k.Launch(s, one); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.Synchronize(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkLaunchArgs is BenchmarkLaunchEmpty with four arguments (a
// float32, two device pointers and an int), as saxpy takes.
func BenchmarkLaunchArgs(b *testing.B) {
	k, s := launchSetup(b, "args4")
	x, err := highlevel.AllocArray[float32](nil, 1)
	if err != nil {
		b.Fatal(err)
	}
	defer x.Free()
	b.ReportAllocs()
	for b.Loop() {
		if err := k.Launch(s, one, float32(2), x, x, int32(0)); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.Synchronize(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkLaunchSync is a round trip: launch an empty kernel and wait for
// it with Stream.Synchronize.
func BenchmarkLaunchSync(b *testing.B) {
	k, s := launchSetup(b, "empty")
	for b.Loop() {
		if err := k.Launch(s, one); err != nil {
			b.Fatal(err)
		}
		if err := s.Synchronize(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGraph100 launches a graph of 100 empty kernels, captured from a
// stream and instantiated once, and waits for it, as c/launch.cu does.
func BenchmarkGraph100(b *testing.B) {
	k, s := launchSetup(b, "empty")
	x := captured(b, s, func() error {
		for range 100 {
			if err := k.Launch(s, one); err != nil {
				return err
			}
		}
		return nil
	})
	for b.Loop() {
		if err := x.Launch(s); err != nil {
			b.Fatal(err)
		}
		if err := s.Synchronize(); err != nil {
			b.Fatal(err)
		}
	}
}

// captured returns the graph of the work fn queues on s, instantiated; it
// is closed, and its graph, when the benchmark ends.
func captured(b *testing.B, s *highlevel.Stream, fn func() error) *highlevel.GraphExec {
	b.Helper()
	g, err := highlevel.Capture(s, highlevel.CaptureRelaxed, fn)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { g.Close() })
	x, err := g.Instantiate(nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { x.Close() })
	return x
}

// BenchmarkLaunchEmptyRaw is BenchmarkLaunchEmpty through the raw bindings
// alone, as c/launch.cu's library path does it in C: the same cubin loaded
// with cuLibraryLoadData, launched with cuLaunchKernel on a thread that keeps
// the context current. Against BenchmarkLaunchEmpty it shows what highlevel
// adds; against C, what a cgo call adds.
func BenchmarkLaunchEmptyRaw(b *testing.B) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	initDevice(b)
	f := rawFunction(b, kernels, "empty")
	var s cudart.Stream
	if err := cudart.StreamCreate(&s); err != nil {
		b.Fatal(err)
	}
	defer cudart.StreamDestroy(s)
	for b.Loop() {
		if err := cudadrv.LaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, cudadrv.Stream(s), nil, nil); err != nil {
			b.Fatal(err)
		}
	}
	if err := cudart.StreamSynchronize(s); err != nil {
		b.Fatal(err)
	}
}

// rawFunction compiles src and returns the CUfunction of its kernel name in
// the current context, loaded as the C twins load theirs: cuLibraryLoadData,
// cuLibraryGetKernel and cuKernelGetFunction. The library is unloaded when
// the benchmark ends.
func rawFunction(b *testing.B, src, name string) cudadrv.Function {
	b.Helper()
	c, err := highlevel.Compile(src, nil)
	if err != nil {
		b.Fatal(err)
	}
	var (
		lib cudadrv.Library
		k   cudadrv.Kernel
		f   cudadrv.Function
	)
	if err := cudadrv.LibraryLoadData(&lib, unsafe.Pointer(&c.Image[0]), nil, nil, 0, nil, nil, 0); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cudadrv.LibraryUnload(lib) })
	if err := cudadrv.LibraryGetKernel(&k, lib, name); err != nil {
		b.Fatal(err)
	}
	if err := cudadrv.KernelGetFunction(&f, k); err != nil {
		b.Fatal(err)
	}
	return f
}
