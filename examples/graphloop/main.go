// Graphloop runs a loop that the GPU ends: a graph's while node repeats Newton's
// step x = (x + a/x) / 2 towards √a until a kernel finds that no x moved.
//
//	go run ./examples/graphloop
package main

import (
	"cmp"
	"fmt"
	"log"
	"math"

	"github.com/gocuda/cuda/highlevel"
)

// flags[0] says whether an x moved in the last step; flags[1] counts steps.
const source = `#include <cuda_device_runtime_api.h>
extern "C" __global__ void step(float *x, const float *a, unsigned *flags, int n) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	float next = i < n ? 0.5f * (x[i] + a[i] / x[i]) : 0;
	if (i < n && next != x[i]) flags[0] = 1, x[i] = next;
}
extern "C" __global__ void decide(unsigned *flags, cudaGraphConditionalHandle loop) {
	cudaGraphSetConditional(loop, flags[0] && ++flags[1] < 100);
	flags[0] = 0;
}`

func main() {
	if err := run(1 << 20); err != nil {
		log.Fatal(err)
	}
}

// run finds √a for n numbers a on the default device and checks them.
func run(n int) error {
	compiled, err := highlevel.Compile(source, nil) // for the default device, with the toolkit's headers
	if err != nil {
		return err
	}
	as := make([]float32, n)
	for i := range as {
		as[i] = float32(i + 1)
	}
	// Made, deferred (Close and Free of nil just fail), then checked.
	m, err0 := highlevel.LoadModule(compiled.Image)
	defer m.Close()
	step, err1 := m.Kernel("step")
	decide, err2 := m.Kernel("decide")
	a, err3 := highlevel.ArrayFrom(nil, as)
	x, err4 := highlevel.ArrayFrom(nil, as) // the first guess: x = a
	flags, err5 := highlevel.ArrayFrom(nil, []uint32{0, 0})
	g, err6 := highlevel.NewGraph(0)
	defer a.Free()
	defer x.Free()
	defer flags.Free()
	defer g.Close()
	loop, err7 := g.NewConditional(1, true) // 1 at each launch: the body runs at least once
	_, body, err8 := g.AddWhile(nil, loop)
	grid := highlevel.LaunchConfig{Grid: highlevel.Dim3{X: (n + 255) / 256}, Block: highlevel.Dim3{X: 256}}
	stepped, err9 := body.AddKernel(nil, step, grid, x, a, flags, int32(n))
	_, err10 := body.AddKernel([]highlevel.GraphNode{stepped}, decide, highlevel.LaunchConfig{}, flags, loop)
	exec, err11 := g.Instantiate(nil)
	defer exec.Close()
	if err := cmp.Or(err0, err1, err2, err3, err4, err5, err6, err7, err8, err9, err10, err11, exec.Launch(nil)); err != nil {
		return err
	}
	xs, err1 := x.ToHost() // on the legacy default stream, after the launch
	fs, err2 := flags.ToHost()
	if err := cmp.Or(err1, err2); err != nil {
		return err
	}
	for i, v := range xs {
		if want := math.Sqrt(float64(as[i])); math.Abs(float64(v)-want) > 1e-6*want {
			return fmt.Errorf("x[%d] = %v after %d steps, want %v", i, v, fs[1], want)
		}
	}
	fmt.Printf("√a for %d numbers in %d steps of a loop the GPU ended\n", n, fs[1])
	return nil
}
