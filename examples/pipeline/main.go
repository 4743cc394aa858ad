// Pipeline passes data through a GPU in chunks on two streams: A copies a
// chunk into x; B waits for it (an event) and launches a graph captured once,
// y += 2·x; A waits for B (a second event) before it copies the next chunk.
//
//	go run ./examples/pipeline
package main

import (
	"cmp"
	"fmt"
	"log"

	"github.com/gocuda/cuda/highlevel"
	"github.com/gocuda/cuda/highlevel/linalg"
)

func main() {
	if err := run(0, 16, 1<<20); err != nil {
		log.Fatal(err)
	}
}

// run passes chunks chunks of n float32 through device d and checks y.
func run(d highlevel.Device, chunks, n int) error {
	if chunks < 1 || n < 1 {
		return fmt.Errorf("%d chunks of %d: want at least 1 of each", chunks, n)
	}
	// Made together, then checked: Close and Free of nil only return an error.
	a, err1 := highlevel.NewStream(d, nil)
	b, err2 := highlevel.NewStream(d, nil)
	copied, err3 := highlevel.NewEvent(d, nil)
	used, err4 := highlevel.NewEvent(d, nil)
	x, err5 := highlevel.AllocArray[float32](d, n)
	y, err6 := highlevel.ArrayFrom(d, make([]float32, n))
	_, err7 := linalg.BLASOf(d) // d's cuBLAS handle, made before the capture
	defer a.Close()
	defer b.Close()
	defer copied.Close()
	defer used.Close()
	defer x.Free()
	defer y.Free()
	if err := cmp.Or(err1, err2, err3, err4, err5, err6, err7); err != nil {
		return err
	}
	g, err := highlevel.Capture(b, highlevel.CaptureRelaxed, func() error { return linalg.Axpy(b, 2, x, y) })
	if err != nil {
		return err
	}
	defer g.Close()
	exec, err := g.Instantiate(nil)
	if err != nil {
		return err
	}
	defer exec.Close()

	xs, want := make([]float32, chunks*n), make([]float32, n)
	for i := range xs {
		xs[i] = float32(i % 1000)
		want[i%n] += 2 * xs[i]
	}
	for c := range chunks {
		// The calls only queue work: each line reports its first error.
		errA := cmp.Or(a.WaitEvent(used), x.CopyFromHostAsync(a, xs[c*n:(c+1)*n]), copied.Record(a))
		errB := cmp.Or(b.WaitEvent(copied), exec.Launch(b), used.Record(b))
		if err := cmp.Or(errA, errB); err != nil {
			return err
		}
	}
	got, err := y.ToHost() // on the legacy default stream, which waits for b
	if err != nil {
		return err
	}
	for i := range got {
		if got[i] != want[i] {
			return fmt.Errorf("y[%d] = %v, the CPU says %v", i, got[i], want[i])
		}
	}
	return nil
}
