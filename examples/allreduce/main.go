// Allreduce sums a vector of float32 over several GPUs with NCCL through
// highlevel/collective, checks the sum against the CPU and prints the
// time and bus bandwidth of the all-reduce. It runs as one process over
// every GPU of the host or, where torchrun's variables are set, as one
// rank of a job of many processes, on the device $LOCAL_RANK names.
//
// One process over every GPU:
//
//	go run ./examples/allreduce -n 16777216
//
// Two processes on one host (torchrun sets the variables; by hand):
//
//	go build -o allreduce ./examples/allreduce
//	MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 WORLD_SIZE=2 RANK=0 LOCAL_RANK=0 ./allreduce &
//	MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 WORLD_SIZE=2 RANK=1 LOCAL_RANK=1 ./allreduce
//
// Two hosts, one GPU each (the root's address must be reachable; NCCL's own
// traffic picks its interface by $NCCL_SOCKET_IFNAME):
//
//	host A: MASTER_ADDR=hostA MASTER_PORT=29500 WORLD_SIZE=2 RANK=0 LOCAL_RANK=0 ./allreduce
//	host B: MASTER_ADDR=hostA MASTER_PORT=29500 WORLD_SIZE=2 RANK=1 LOCAL_RANK=0 ./allreduce
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/gocuda/cuda/highlevel"
	"github.com/gocuda/cuda/highlevel/collective"
)

func main() {
	n := flag.Int("n", 1<<20, "elements of float32 per GPU")
	iters := flag.Int("iters", 20, "all-reduces to time")
	timeout := flag.Duration("timeout", time.Minute, "how long a rank may wait for the others")
	flag.Parse()
	if err := run(*n, *iters, *timeout, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "allreduce:", err)
		os.Exit(1)
	}
}

// run all-reduces n float32 iters times over the ranks: every GPU of the
// process, or this process's rank where torchrun's variables are set.
func run(n, iters int, timeout time.Duration, out *os.File) error {
	if n < 1 || iters < 1 {
		return fmt.Errorf("-n %d -iters %d: want at least 1 of each", n, iters)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	opts := &collective.Options{Timeout: timeout}
	var comms []*collective.Comm
	if collective.InEnv() {
		cfg, err := collective.ConfigFromEnv()
		if err != nil {
			return err
		}
		cfg.Timeout = timeout
		c, err := collective.Join(ctx, cfg, highlevel.Device(cfg.LocalRank), opts)
		if err != nil {
			return err
		}
		comms = []*collective.Comm{c}
	} else {
		var err error
		if comms, err = collective.NewComms(ctx, nil, opts); err != nil {
			return err
		}
	}
	defer collective.CloseAll(comms)
	var mu sync.Mutex
	return collective.RunEach(comms, func(c *collective.Comm) error {
		took, err := rank(ctx, c, n, iters)
		if err != nil || c.Rank() != 0 {
			return err
		}
		size := c.Size()
		per := took / time.Duration(iters)
		bytes := float64(4 * n)
		busbw := 2 * float64(size-1) / float64(size) * bytes / per.Seconds() / 1e9
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(out, "all-reduce of %d float32 over %d ranks: correct; %v each, bus bandwidth %.2f GB/s\n", n, size, per, busbw)
		return nil
	})
}

// rank is one rank's part: it fills its vector with rank+1+i%7, checks one
// all-reduce (in place) against the CPU, then times iters more.
func rank(ctx context.Context, c *collective.Comm, n, iters int) (time.Duration, error) {
	dev := c.Device()
	s, err := highlevel.NewStream(dev, nil)
	if err != nil {
		return 0, err
	}
	defer s.Close()
	host := make([]float32, n)
	for i := range host {
		host[i] = float32(c.Rank() + 1 + i%7)
	}
	x, err := highlevel.ArrayFrom(dev, host)
	if err != nil {
		return 0, err
	}
	defer x.Free()
	allReduce := collective.AllReduce(s, c, x, x, collective.Sum)
	if err := collective.Run(allReduce); err != nil {
		return 0, err
	}
	if err := c.Wait(ctx, s); err != nil {
		return 0, err
	}
	got, err := x.ToHost()
	if err != nil {
		return 0, err
	}
	size := c.Size()
	for i, v := range got {
		// Small integers: every order of addition gives the exact sum.
		if want := float32(size*(size+1)/2 + size*(i%7)); v != want {
			return 0, fmt.Errorf("rank %d: element %d is %v, want %v", c.Rank(), i, v, want)
		}
	}
	// Sums of sums grow; the timed runs need not be checked.
	start := time.Now()
	for range iters {
		if err := collective.Run(allReduce); err != nil {
			return 0, err
		}
	}
	if err := c.Wait(ctx, s); err != nil {
		return 0, err
	}
	took := time.Since(start)
	if took <= 0 {
		return 0, errors.New("no time measured")
	}
	return took, nil
}
