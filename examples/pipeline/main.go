// Pipeline passes data through a GPU in chunks on two streams: A copies a
// chunk into x, and B, once A's copy is done, launches a graph captured
// once, y += 2·x; A's next copy waits for B's graph to be done with x.
//
//	go run ./examples/pipeline
package main

import (
	"cmp"
	"errors"
	"log"
	"slices"

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
	a, err1 := highlevel.NewStream(d, nil)
	b, err2 := highlevel.NewStream(d, nil)
	x, err3 := highlevel.AllocArray[float32](d, n)
	y, err4 := highlevel.ArrayFrom(d, make([]float32, n))
	defer a.Close() // Close and Free of nil return an error: made, deferred, then checked
	defer b.Close()
	defer x.Free()
	defer y.Free()
	if err := cmp.Or(err1, err2, err3, err4); err != nil {
		return err
	}
	g, err1 := highlevel.Capture(b, highlevel.CaptureRelaxed, func() error { return linalg.Axpy(b, 2, x, y) })
	exec, err2 := g.Instantiate(nil) // of a nil g, after a failed Capture: ErrNil
	defer g.Close()
	defer exec.Close()
	xs, want := make([]float32, chunks*n), make([]float32, n)
	for i := range xs {
		xs[i] = float32(i % 1000)
		want[i%n] += 2 * xs[i]
	}
	err := cmp.Or(err1, err2)
	for c := 0; c < chunks && err == nil; c++ { // the calls queue work and return
		err = cmp.Or(a.WaitStream(b), x.CopyFromHostAsync(a, xs[c*n:(c+1)*n]), b.WaitStream(a), exec.Launch(b))
	}
	if err != nil {
		return err
	}
	got, err := y.ToHost() // on the legacy default stream, which waits for b
	if err == nil && !slices.Equal(got, want) {
		err = errors.New("y differs from the sums the CPU worked out")
	}
	return err
}
