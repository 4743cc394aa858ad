// Saxpy is y = a·x + y on a chosen GPU, as a program written from the
// package documentation alone would do it: memory from a pool of that
// device's own, typed copies of Go slices, a kernel compiled from a Go
// string with NVRTC for the device's architecture, a launch, a wait
// bounded by a context, and a check against the CPU. No unsafe, and the
// process's default allocator is left alone.
//
//	go run ./examples/saxpy -n 1000000 -device 1
package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"time"

	"github.com/gocuda/cuda/highlevel"
)

const source = `
extern "C" __global__ void saxpy(float a, const float *x, float *y, int n) {
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		y[i] = a * x[i] + y[i];
	}
}
`

func main() {
	n := flag.Int("n", 1<<20, "number of elements")
	a := flag.Float64("a", 2, "the scalar a of y = a*x + y")
	dev := flag.Int("device", -1, "the device to run on (default: highlevel.DefaultDevice)")
	timeout := flag.Duration("timeout", 10*time.Second, "how long to wait for the GPU")
	flag.Parse()
	if err := run(*dev, *n, float32(*a), *timeout); err != nil {
		fmt.Fprintln(os.Stderr, "saxpy:", err)
		os.Exit(1)
	}
}

// run computes a·x + y on device dev (DefaultDevice when negative) for n
// elements and checks the result against the CPU.
func run(dev, n int, a float32, timeout time.Duration) error {
	if n <= 0 || n > math.MaxInt32 {
		return fmt.Errorf("-n %d: want 1 to %d elements", n, math.MaxInt32)
	}
	d := highlevel.Device(dev)
	if dev < 0 {
		var err error
		if d, err = highlevel.DefaultDevice(); err != nil {
			return err
		}
	}
	name, err := d.Name()
	if err != nil {
		return err
	}

	// Device code for this device's architecture.
	arch, err := d.Arch()
	if err != nil {
		return err
	}
	compiled, err := highlevel.Compile(source, &highlevel.CompileOptions{Name: "saxpy.cu", Arch: arch})
	if err != nil {
		return err
	}
	mod, err := highlevel.LoadModule(compiled.Image)
	if err != nil {
		return err
	}
	defer mod.Close()
	saxpy, err := mod.Kernel("saxpy")
	if err != nil {
		return err
	}

	// Memory from a pool of the device's own.
	pool, err := highlevel.NewMemoryPool(d)
	if err != nil {
		return err
	}
	defer pool.Close()
	xs, ys := make([]float32, n), make([]float32, n)
	for i := range xs {
		xs[i], ys[i] = float32(i%1000)/10, float32(i%7)
	}
	x, err := highlevel.ArrayFrom(pool, xs)
	if err != nil {
		return err
	}
	defer x.Free()
	y, err := highlevel.AllocArray[float32](pool, n)
	if err != nil {
		return err
	}
	defer y.Free()

	s, err := highlevel.NewStream(d, nil)
	if err != nil {
		return err
	}
	defer s.Close()
	if err := y.CopyFromHostAsync(s, ys); err != nil {
		return err
	}
	_, block, err := saxpy.MaxPotentialBlockSize(d, 0, 0)
	if err != nil {
		return err
	}
	grid := min((n+block-1)/block, 65535)
	cfg := highlevel.LaunchConfig{Grid: highlevel.Dim3{X: grid}, Block: highlevel.Dim3{X: block}}
	start, err := recordNew(s)
	if err != nil {
		return err
	}
	defer start.Close()
	if err := saxpy.Launch(s, cfg, a, x, y, int32(n)); err != nil {
		return err
	}
	end, err := recordNew(s)
	if err != nil {
		return err
	}
	defer end.Close()
	got := make([]float32, n)
	if err := y.CopyToHostAsync(s, got); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := s.Wait(ctx); err != nil {
		return err
	}

	elapsed, err := highlevel.ElapsedTime(start, end)
	if err != nil {
		return err
	}
	for i := range got {
		if want := a*xs[i] + ys[i]; got[i] != want {
			return fmt.Errorf("y[%d] = %v, the CPU says %v", i, got[i], want)
		}
	}
	fmt.Printf("%v (%s, %s): saxpy of %d elements in %v (grid %d, block %d), %.1f GB/s; all equal to the CPU's\n",
		d, name, arch, n, elapsed, grid, block, float64(12*n)/elapsed.Seconds()/1e9)
	return nil
}

// recordNew returns a new event recorded on s.
func recordNew(s *highlevel.Stream) (*highlevel.Event, error) {
	e, err := highlevel.NewEvent(s.Device(), nil)
	if err != nil {
		return nil, err
	}
	if err := e.Record(s); err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}
