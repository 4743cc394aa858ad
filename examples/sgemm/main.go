// Sgemm multiplies two row-major float32 matrices on a GPU with cuBLAS,
// through highlevel/linalg.MatMul, and checks the product against the CPU.
//
//	go run ./examples/sgemm -size 1024 -device 1
package main

import (
	"flag"
	"fmt"
	"log"

	"github.com/gocuda/cuda/highlevel"
	"github.com/gocuda/cuda/highlevel/linalg"
)

func main() {
	size := flag.Int("size", 512, "the matrices are size×size")
	dev := flag.Int("device", 0, "the GPU to run on")
	flag.Parse()
	if err := run(highlevel.Device(*dev), *size); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("sgemm %d×%d on device %d: equal to the CPU's\n", *size, *size, *dev)
}

// maxSize bounds -size: the CPU's check takes size³ steps.
const maxSize = 4096

// run computes c = a·b for n×n matrices on device d and checks c.
func run(d highlevel.Device, n int) error {
	if n < 1 || n > maxSize {
		return fmt.Errorf("size %d: want 1 to %d", n, maxSize)
	}
	as, bs := make([]float32, n*n), make([]float32, n*n)
	for i := range as {
		as[i], bs[i] = float32(i%7-3), float32(i%5-2) // small integers: exact sums
	}
	a, err := highlevel.ArrayFrom(d, as) // d's memory, unpooled
	if err != nil {
		return err
	}
	defer a.Free()
	b, err := highlevel.ArrayFrom(d, bs)
	if err != nil {
		return err
	}
	defer b.Free()
	c, err := highlevel.AllocArray[float32](d, n*n)
	if err != nil {
		return err
	}
	defer c.Free()
	if err := linalg.MatMul(nil, a, b, c, n, n, n); err != nil { // nil: d's default stream
		return err
	}
	got, err := c.ToHost() // on the default stream too: after MatMul
	if err != nil {
		return err
	}
	for i, want := range matMul(as, bs, n) {
		if got[i] != want {
			return fmt.Errorf("c[%d][%d] = %v, the CPU says %v", i/n, i%n, got[i], want)
		}
	}
	return nil
}

// matMul returns the CPU's a·b for row-major n×n matrices.
func matMul(a, b []float32, n int) []float32 {
	c := make([]float32, n*n)
	for i := range n {
		for k := range n {
			for j := range n {
				c[i*n+j] += a[i*n+k] * b[k*n+j]
			}
		}
	}
	return c
}
