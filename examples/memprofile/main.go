// Memprofile fills a memory pool from several goroutines, each labeling
// its allocations with its worker (runtime/pprof's labels), and writes the
// memory in use by stack as a pprof profile for go tool pprof to draw:
//
//	go run ./examples/memprofile -o gpu.pprof && go tool pprof -http=: gpu.pprof
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"runtime/pprof"
	"slices"
	"strconv"
	"sync"

	"github.com/gocuda/cuda/highlevel"
)

type array = *highlevel.Array[float32]

func main() {
	out := flag.String("o", "gpu.pprof", "the profile to write")
	flag.Parse()
	if err := run(*out, 4); err != nil {
		log.Fatal(err)
	}
	fmt.Println("go tool pprof -http=: " + *out)
}

// run records n workers' allocations from a pool and writes the profile to out.
func run(out string, n int) error {
	highlevel.StartMemoryProfile(nil)
	defer highlevel.StopMemoryProfile()
	pool, err := highlevel.NewMemoryPool(nil)
	if err != nil {
		return err
	}
	defer pool.Close()
	held, errs := make([][]array, n), make([]error, n) // held until the profile is written
	var wg sync.WaitGroup
	for w := range n {
		wg.Go(func() {
			pprof.Do(context.Background(), pprof.Labels("worker", strconv.Itoa(w)), func(ctx context.Context) {
				held[w], errs[w] = fill(highlevel.LabelAllocator(ctx, pool), w+1)
			})
		})
	}
	wg.Wait()
	for _, a := range slices.Concat(held...) {
		defer a.Free()
	}
	f, err := os.Create(out)
	if err := errors.Join(append(errs, err)...); err != nil {
		return err
	}
	return errors.Join(highlevel.WriteMemoryProfile(f), f.Close())
}

// fill allocates n MiB of weights and n activations of 256 KiB from a.
func fill(a highlevel.Allocator, n int) ([]array, error) {
	w, err := weights(a, n)
	arrays := []array{w}
	for i := 0; i < n && err == nil; i++ {
		x, e := activations(a)
		arrays, err = append(arrays, x), e
	}
	return arrays, err
}

func weights(a highlevel.Allocator, n int) (array, error) {
	return highlevel.AllocArray[float32](a, n<<18)
}

func activations(a highlevel.Allocator) (array, error) {
	return highlevel.AllocArray[float32](a, 1<<16)
}
