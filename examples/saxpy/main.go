// Saxpy computes y = a·x + y on a GPU with cuBLAS's saxpy, through
// highlevel/linalg, and checks the result against the CPU.
//
//	go run ./examples/saxpy -n 1000000 -device 1
package main

import (
	"flag"
	"fmt"
	"log"

	"github.com/gocuda/cuda/highlevel"
	"github.com/gocuda/cuda/highlevel/linalg"
)

func main() {
	n := flag.Int("n", 1<<20, "number of elements")
	dev := flag.Int("device", 0, "the GPU to run on")
	flag.Parse()
	if err := run(highlevel.Device(*dev), *n); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("saxpy of %d elements on device %d: equal to the CPU's\n", *n, *dev)
}

// run computes y = 2·x + y for n elements on device d and checks y.
func run(d highlevel.Device, n int) error {
	if n < 1 {
		return fmt.Errorf("n = %d: want at least 1", n)
	}
	xs, ys := make([]float32, n), make([]float32, n)
	for i := range xs {
		xs[i], ys[i] = float32(i%1000), float32(i%7) // small integers: exact sums
	}
	x, err := highlevel.ArrayFrom(d, xs) // d's memory, unpooled
	if err != nil {
		return err
	}
	defer x.Free()
	y, err := highlevel.ArrayFrom(d, ys)
	if err != nil {
		return err
	}
	defer y.Free()
	if err := linalg.Axpy(nil, 2, x, y); err != nil { // nil: d's default stream
		return err
	}
	got, err := y.ToHost() // on the default stream too: after Axpy
	if err != nil {
		return err
	}
	for i := range got {
		if want := 2*xs[i] + ys[i]; got[i] != want {
			return fmt.Errorf("y[%d] = %v, the CPU says %v", i, got[i], want)
		}
	}
	return nil
}
