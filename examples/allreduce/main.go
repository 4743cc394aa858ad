// Allreduce sums a vector over every GPU with NCCL, in one process with a
// rank per GPU, in place on each GPU's default stream (a nil *Stream).
//
//	go run ./examples/allreduce
package main

import (
	"context"
	"fmt"
	"log"

	"github.com/gocuda/cuda/highlevel"
	"github.com/gocuda/cuda/highlevel/collective"
)

func main() {
	if err := run(1 << 20); err != nil {
		log.Fatal(err)
	}
}

// run all-reduces n float32 over every GPU and checks the sums.
func run(n int) error {
	if n < 1 {
		return fmt.Errorf("n = %d: want at least 1", n)
	}
	comms, err := collective.NewComms(context.Background(), nil, nil) // every GPU, a rank each
	if err != nil {
		return err
	}
	defer collective.CloseAll(comms)
	return collective.RunEach(comms, func(c *collective.Comm) error { // a goroutine per rank
		host := make([]float32, n)
		for i := range host {
			host[i] = float32(c.Rank() + 1 + i%7)
		}
		x, err := highlevel.ArrayFrom(c.Device(), host)
		if err != nil {
			return err
		}
		defer x.Free()
		if err := collective.Run(collective.AllReduce(nil, c, x, x, collective.Sum)); err != nil {
			return err
		}
		if err := c.Wait(context.Background(), nil); err != nil {
			return err
		}
		got, err := x.ToHost()
		if err != nil {
			return err
		}
		for i, v := range got { // rank r gave r+1+i%7
			if want := float32(c.Size()*(c.Size()+1)/2 + c.Size()*(i%7)); v != want {
				return fmt.Errorf("rank %d: x[%d] = %v, want %v", c.Rank(), i, v, want)
			}
		}
		return nil
	})
}
