// Sgemm multiplies two float32 matrices on a chosen GPU with cuBLAS through
// highlevel/linalg.MatMul: row-major matrices from a pool of that device's
// own, typed copies of Go slices, a wait bounded by a context, and a check
// against the CPU. No unsafe, no handle to manage, and the process's
// default allocator is left alone.
//
//	go run ./examples/sgemm -size 1024 -device 1
package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"time"

	"github.com/gocuda/cuda/highlevel"
	"github.com/gocuda/cuda/highlevel/linalg"
)

func main() {
	size := flag.Int("size", 512, "the matrices are size×size")
	dev := flag.Int("device", -1, "the device to run on (default: highlevel.DefaultDevice)")
	timeout := flag.Duration("timeout", 10*time.Second, "how long to wait for the GPU")
	flag.Parse()
	if err := run(*dev, *size, *timeout); err != nil {
		fmt.Fprintln(os.Stderr, "sgemm:", err)
		os.Exit(1)
	}
}

// maxSize bounds -size: the CPU reference is O(size³).
const maxSize = 4096

// run computes c = a·b for size×size matrices on device dev
// (DefaultDevice when negative) and checks c against the CPU.
func run(dev, size int, timeout time.Duration) error {
	if size <= 0 || size > maxSize {
		return fmt.Errorf("-size %d: want 1 to %d", size, maxSize)
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
	pool, err := highlevel.NewMemoryPool(d)
	if err != nil {
		return err
	}
	defer pool.Close()

	n := size
	as, bs := make([]float32, n*n), make([]float32, n*n)
	for i := range as {
		// Small integers: every product and sum is exact in float32, so
		// the GPU's result must equal the CPU's whatever the order of the
		// additions.
		as[i], bs[i] = float32(i%7-3), float32(i%5-2)
	}
	a, err := highlevel.ArrayFrom(pool, as)
	if err != nil {
		return err
	}
	defer a.Free()
	b, err := highlevel.ArrayFrom(pool, bs)
	if err != nil {
		return err
	}
	defer b.Free()
	c, err := highlevel.AllocArray[float32](pool, n*n)
	if err != nil {
		return err
	}
	defer c.Free()

	s, err := highlevel.NewStream(d, nil)
	if err != nil {
		return err
	}
	defer s.Close()
	// The first call creates the device's cuBLAS handle; time the second.
	if err := linalg.MatMul(s, a, b, c, n, n, n); err != nil {
		return err
	}
	start, err := recordNew(s)
	if err != nil {
		return err
	}
	defer start.Close()
	if err := linalg.MatMul(s, a, b, c, n, n, n); err != nil {
		return err
	}
	end, err := recordNew(s)
	if err != nil {
		return err
	}
	defer end.Close()
	got := make([]float32, n*n)
	if err := c.CopyToHostAsync(s, got); err != nil {
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

	want := matMul(as, bs, n)
	for i := range got {
		if got[i] != want[i] {
			return fmt.Errorf("c[%d][%d] = %v, the CPU says %v", i/n, i%n, got[i], want[i])
		}
	}
	fmt.Printf("%v (%s): sgemm %d×%d×%d in %v, %.1f TFLOP/s; all equal to the CPU's\n",
		d, name, n, n, n, elapsed, 2*math.Pow(float64(n), 3)/elapsed.Seconds()/1e12)
	return nil
}

// matMul is the CPU's c = a·b for row-major n×n matrices.
func matMul(a, b []float32, n int) []float32 {
	c := make([]float32, n*n)
	for i := range n {
		for k := range n {
			aik := a[i*n+k]
			row := c[i*n : (i+1)*n]
			for j, bkj := range b[k*n : (k+1)*n] {
				row[j] += aik * bkj
			}
		}
	}
	return c
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
