package highlevel_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"runtime/pprof"
	"time"

	"github.com/gocuda/cuda/curand"
	"github.com/gocuda/cuda/highlevel"
)

// Device.Do runs code with a device current on a locked OS thread, as
// CuPy's "with Device(1):" does; the package's own objects need no Do.
func ExampleDevice_Do() {
	dev := highlevel.Device(1)
	err := dev.Do(func() error {
		d, err := highlevel.CurrentDevice()
		fmt.Println("current:", d, err)
		// cudart calls made here go to device 1.
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
}

// An allocation returns a MemoryPointer; Free gives the memory back.
func ExampleMemoryPointer_Free() {
	p, err := highlevel.Alloc(1 << 20)
	if err != nil {
		log.Fatal(err)
	}
	defer p.Free()
	if err := p.Memset(0, p.Size()); err != nil {
		log.Fatal(err)
	}
}

// A pool hands freed blocks to the next allocation without calling CUDA.
func ExampleMemoryPool() {
	pool, err := highlevel.NewMemoryPool(highlevel.Device(0))
	if err != nil {
		log.Fatal(err)
	}
	for range 1000 {
		m, err := pool.Alloc(1 << 20)
		if err != nil {
			log.Fatal(err)
		}
		// ... use m ...
		m.Free()
	}
	fmt.Println(pool.UsedBytes(), pool.TotalBytes()) // 0 1048576
	pool.FreeAllBlocks()
}

// Array moves Go slices to the device and back.
func ExampleArray() {
	a, err := highlevel.ArrayFrom(nil, []float32{1, 2, 3, 4})
	if err != nil {
		log.Fatal(err)
	}
	defer a.Free()
	tail, _ := a.Slice(2, 4)
	tail.CopyFromHost([]float32{30, 40})
	v, err := a.ToHost()
	fmt.Println(v, err) // [1 2 30 40] <nil>
}

// Events on a stream time its work; Wait waits without holding a thread.
func ExampleElapsedTime() {
	dev := highlevel.Device(0)
	s, err := highlevel.NewStream(dev, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	start, _ := highlevel.NewEvent(dev, nil)
	defer start.Close()
	end, _ := highlevel.NewEvent(dev, nil)
	defer end.Close()
	m, _ := dev.Alloc(256 << 20)
	defer m.Free()
	start.Record(s)
	m.MemsetAsync(s, 0, m.Size())
	end.Record(s)
	if err := end.Wait(context.Background()); err != nil {
		log.Fatal(err)
	}
	d, err := highlevel.ElapsedTime(start, end)
	fmt.Println("memset of 256 MiB took", d, err)
}

// Capture records a stream's work once; the instantiated graph replays it.
func ExampleCapture() {
	dev := highlevel.Device(0)
	s, _ := highlevel.NewStream(dev, &highlevel.StreamOptions{NonBlocking: true})
	defer s.Close()
	m, _ := dev.Alloc(1 << 20)
	defer m.Free()
	g, err := highlevel.Capture(s, highlevel.CaptureRelaxed, func() error {
		return m.MemsetAsync(s, 1, m.Size())
	})
	if err != nil {
		log.Fatal(err)
	}
	defer g.Close()
	x, err := g.Instantiate(nil)
	if err != nil {
		log.Fatal(err)
	}
	defer x.Close()
	for range 10 {
		x.Launch(s)
	}
	fmt.Println(s.Synchronize())
}

// AddAlloc gives a graph memory of its own, allocated and freed at each
// launch: only the graph's nodes between the two use it.
func ExampleAddAlloc() {
	dev := highlevel.Device(0)
	s, err := highlevel.NewStream(dev, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	c, err := highlevel.Compile(`extern "C" __global__ void twice(const float *x, float *y, int n) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) y[i] = 2 * x[i];
}`, nil)
	if err != nil {
		log.Fatal(err)
	}
	mod, err := highlevel.LoadModule(c.Image)
	if err != nil {
		log.Fatal(err)
	}
	defer mod.Close()
	twice, _ := mod.Kernel("twice")
	const n = 1024
	out, err := highlevel.AllocArray[float32](dev, n)
	if err != nil {
		log.Fatal(err)
	}
	defer out.Free()

	g, err := highlevel.NewGraph(dev)
	if err != nil {
		log.Fatal(err)
	}
	defer g.Close()
	alloc, tmp, err := highlevel.AddAlloc[float32](g, nil, n)
	if err != nil {
		log.Fatal(err)
	}
	set, _ := highlevel.AddMemset(g, []highlevel.GraphNode{alloc}, tmp, 1.5)
	cfg := highlevel.LaunchConfig{Grid: highlevel.Dim3{X: n / 256}, Block: highlevel.Dim3{X: 256}}
	k, _ := g.AddKernel([]highlevel.GraphNode{set}, twice, cfg, tmp, out, int32(n))
	if _, err := highlevel.AddFree(g, []highlevel.GraphNode{k}, tmp); err != nil {
		log.Fatal(err)
	}
	x, err := g.Instantiate(nil)
	if err != nil {
		log.Fatal(err)
	}
	defer x.Close()
	if err := errors.Join(x.Launch(s), s.Synchronize()); err != nil {
		log.Fatal(err)
	}
	got, _ := out.ToHost()
	fmt.Println(got[0], got[n-1])
	// Outside its graph, the memory is refused.
	_, err = tmp.ToHost()
	fmt.Println(errors.Is(err, highlevel.ErrInvalid))
}

// CopyFromHost and CopyToHost move Go slices to and from device memory
// without unsafe.
func ExampleCopyFromHost() {
	m, err := highlevel.Device(0).Alloc(4 * 1024)
	if err != nil {
		log.Fatal(err)
	}
	defer m.Free()
	in := make([]int32, 1024)
	for i := range in {
		in[i] = int32(i)
	}
	if err := highlevel.CopyFromHost(m, in); err != nil {
		log.Fatal(err)
	}
	out := make([]int32, 1024)
	err = highlevel.CopyToHost(out, m)
	fmt.Println(out[1023], err) // 1023 <nil>
}

// Arrays come from the allocator named: here a pool of device 1's own,
// whatever the process's default allocator is.
func ExampleAllocArray() {
	pool, err := highlevel.NewMemoryPool(highlevel.Device(1))
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	x, err := highlevel.ArrayFrom(pool, []float32{1, 2, 3})
	if err != nil {
		log.Fatal(err)
	}
	defer x.Free()
	y, err := highlevel.AllocArray[float32](pool, 3)
	if err != nil {
		log.Fatal(err)
	}
	defer y.Free()
	fmt.Println(x.Device(), y.Len()) // device 1 3
}

// PinnedSlice views pinned memory as a []T, valid until Free: copies
// with it run at the link's full speed and truly asynchronously.
func ExamplePinnedSlice() {
	pinned, err := highlevel.AllocPinned(4 << 20)
	if err != nil {
		log.Fatal(err)
	}
	defer pinned.Free()
	v, err := highlevel.PinnedSlice[float32](pinned)
	if err != nil {
		log.Fatal(err)
	}
	for i := range v {
		v[i] = 1
	}
	a, err := highlevel.AllocArray[float32](nil, len(v))
	if err != nil {
		log.Fatal(err)
	}
	defer a.Free()
	s, _ := highlevel.NewStream(a.Device(), nil)
	defer s.Close()
	a.CopyFromHostAsync(s, v) // v must stay untouched until s has copied it
	fmt.Println(s.Synchronize())
}

// Compile turns CUDA C++ into device code for a device's architecture;
// the kernel launches with typed Go arguments, Arrays passing their
// device address.
func ExampleCompile() {
	dev := highlevel.Device(0)
	arch, err := dev.Arch() // "sm_90" on an H100
	if err != nil {
		log.Fatal(err)
	}
	c, err := highlevel.Compile(`extern "C" __global__ void iota(int *y, int n) {
		int i = blockIdx.x * blockDim.x + threadIdx.x;
		if (i < n) y[i] = i;
	}`, &highlevel.CompileOptions{Arch: arch})
	if err != nil {
		log.Fatal(err) // a *CompileError holds the compiler's log
	}
	m, err := highlevel.LoadModule(c.Image)
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	k, err := m.Kernel("iota")
	if err != nil {
		log.Fatal(err)
	}
	pool, err := highlevel.NewMemoryPool(dev)
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	const n = 1000
	y, err := highlevel.AllocArray[int32](pool, n)
	if err != nil {
		log.Fatal(err)
	}
	defer y.Free()
	s, err := highlevel.NewStream(dev, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	cfg := highlevel.LaunchConfig{Grid: highlevel.Dim3{X: (n + 255) / 256}, Block: highlevel.Dim3{X: 256}}
	if err := k.Launch(s, cfg, y, int32(n)); err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Wait(ctx); err != nil {
		log.Fatal(err)
	}
	v, err := y.ToHost()
	fmt.Println(v[999], err) // 999 <nil>
}

// Borrow lends a stream and memory to another CUDA library's call, here
// cuRAND's: no other goroutine closes the stream or frees the memory
// until Return, once the call has queued its work.
func ExampleStream_Borrow() {
	d := highlevel.Device(0)
	s, err := highlevel.NewStream(d, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	x, err := highlevel.AllocArray[float32](d, 1024)
	if err != nil {
		log.Fatal(err)
	}
	defer x.Free()
	var gen curand.Generator
	if err := d.Do(func() error { return curand.CreateGenerator(&gen, curand.RNG_PSEUDO_DEFAULT) }); err != nil {
		log.Fatal(err)
	}
	defer d.Do(func() error { return curand.DestroyGenerator(gen) })

	b, err := s.Borrow(d, x.MemoryPointer())
	if err != nil {
		log.Fatal(err)
	}
	err = d.Do(func() error {
		if err := curand.SetStream(gen, s.Handle()); err != nil {
			return err
		}
		return curand.GenerateUniform(gen, (*float32)(x.Ptr()), uint64(x.Len()))
	})
	b.Return()
	if err != nil {
		log.Fatal(err)
	}
	got, err := x.ToHost() // after s's work: s is a blocking stream
	fmt.Println(len(got), err)
}

// The allocation recorder draws device memory by stack and label: record,
// allocate, write the profile, then run go tool pprof -http=: gpu.pprof.
func ExampleWriteMemoryProfile() {
	highlevel.StartMemoryProfile(nil)
	defer highlevel.StopMemoryProfile()
	pool, err := highlevel.NewMemoryPool(highlevel.Device(0))
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	// The labels of runtime/pprof, carried by the allocator.
	ctx := pprof.WithLabels(context.Background(), pprof.Labels("layer", "embedding"))
	x, err := highlevel.AllocArray[float32](highlevel.LabelAllocator(ctx, pool), 1<<20)
	if err != nil {
		log.Fatal(err)
	}
	defer x.Free()
	f, err := os.Create("gpu.pprof")
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	if err := highlevel.WriteMemoryProfile(f); err != nil {
		log.Fatal(err)
	}
}

// An out-of-memory hook sees each out-of-memory error as it is returned,
// with what held the memory: here it logs the report and keeps the
// profile of the moment.
func ExampleSetOutOfMemoryHook() {
	highlevel.StartMemoryProfile(nil)
	highlevel.SetOutOfMemoryHook(func(e *highlevel.OutOfMemoryError) {
		log.Print(e.Report())
		if f, err := os.Create("oom.pprof"); err == nil {
			highlevel.WriteMemoryProfile(f)
			f.Close()
		}
	})
	defer highlevel.SetOutOfMemoryHook(nil)
	if _, err := highlevel.AllocArray[float64](highlevel.Device(0), 1<<40); err != nil {
		var oom *highlevel.OutOfMemoryError
		if errors.As(err, &oom) {
			fmt.Println(oom.DeviceFree, oom.DeviceTotal, len(oom.Pools))
		}
	}
}
