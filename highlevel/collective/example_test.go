package collective_test

import (
	"context"
	"fmt"
	"time"

	"github.com/gocuda/cuda/highlevel"
	"github.com/gocuda/cuda/highlevel/collective"
)

// Sums a vector over every GPU of the process, one goroutine per GPU.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	comms, err := collective.NewComms(ctx, nil, &collective.Options{Timeout: 30 * time.Second})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer collective.CloseAll(comms)
	err = collective.RunEach(comms, func(c *collective.Comm) error {
		s, err := highlevel.NewStream(c.Device(), nil)
		if err != nil {
			return err
		}
		defer s.Close()
		x, err := highlevel.ArrayFrom(c.Device(), []float32{1, 2, 3})
		if err != nil {
			return err
		}
		defer x.Free()
		if err := collective.Run(collective.AllReduce(s, c, x, x, collective.Sum)); err != nil {
			return err
		}
		if err := c.Wait(ctx, s); err != nil {
			return err
		}
		v, err := x.ToHost()
		if err == nil && c.Rank() == 0 {
			fmt.Println(v) // [n 2n 3n] for n GPUs
		}
		return err
	})
	if err != nil {
		fmt.Println(err)
	}
}
