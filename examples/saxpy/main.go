// Saxpy compiles a CUDA kernel from a Go string with NVRTC, launches it on
// Array[float32] data and checks the result against the CPU.
//
//	go run ./examples/saxpy -n 1000000
package main

import (
	"flag"
	"fmt"
	"math"
	"os"

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
	flag.Parse()
	if err := run(*n, float32(*a)); err != nil {
		fmt.Fprintln(os.Stderr, "saxpy:", err)
		os.Exit(1)
	}
}

func run(n int, a float32) error {
	if n <= 0 || n > math.MaxInt32 {
		return fmt.Errorf("-n %d: want 1 to %d elements", n, math.MaxInt32)
	}
	d, err := highlevel.DefaultDevice()
	if err != nil {
		return err
	}
	name, err := d.Name()
	if err != nil {
		return err
	}
	compiled, err := highlevel.Compile(source, &highlevel.CompileOptions{Name: "saxpy.cu"})
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

	xs, ys := make([]float32, n), make([]float32, n)
	for i := range xs {
		xs[i], ys[i] = float32(i%1000)/10, float32(i%7)
	}
	x, err := highlevel.ArrayFrom(xs)
	if err != nil {
		return err
	}
	defer x.Free()
	y, err := highlevel.ArrayFrom(ys)
	if err != nil {
		return err
	}
	defer y.Free()

	s, err := highlevel.NewStream(d, nil)
	if err != nil {
		return err
	}
	defer s.Close()
	_, block, err := saxpy.MaxPotentialBlockSize(d, 0, 0)
	if err != nil {
		return err
	}
	grid := min((n+block-1)/block, 65535)
	cfg := highlevel.LaunchConfig{Grid: highlevel.Dim3{X: grid}, Block: highlevel.Dim3{X: block}}
	start, err := s.Record(nil)
	if err != nil {
		return err
	}
	defer start.Close()
	if err := saxpy.Launch(s, cfg, a, x, y, int32(n)); err != nil {
		return err
	}
	end, err := s.Record(nil)
	if err != nil {
		return err
	}
	defer end.Close()
	got := make([]float32, n)
	if err := y.CopyToHostAsync(got, s); err != nil {
		return err
	}
	if err := s.Synchronize(); err != nil {
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
	fmt.Printf("%s: saxpy of %d elements in %v (grid %d, block %d), %.1f GB/s; all equal to the CPU's\n",
		name, n, elapsed, grid, block, float64(12*n)/elapsed.Seconds()/1e9)
	return nil
}
