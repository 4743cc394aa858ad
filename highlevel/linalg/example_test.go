package linalg_test

import (
	"fmt"
	"log"

	"github.com/gocuda/cuda/highlevel"
	"github.com/gocuda/cuda/highlevel/linalg"
)

// MatMul multiplies row-major matrices, as a Go [][]float32 flattened row
// by row, on a stream; no unsafe, no handle to manage.
func ExampleMatMul() {
	const m, k, n = 2, 3, 2
	a, err := highlevel.ArrayFrom(nil, []float32{
		1, 2, 3,
		4, 5, 6,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer a.Free()
	b, err := highlevel.ArrayFrom(nil, []float32{
		1, 0,
		0, 1,
		1, 1,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer b.Free()
	c, err := highlevel.AllocArray[float32](nil, m*n)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Free()

	s, err := highlevel.NewStream(highlevel.Device(0), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	if err := linalg.MatMul(s, a, b, c, m, n, k); err != nil {
		log.Fatal(err)
	}
	if err := s.Synchronize(); err != nil {
		log.Fatal(err)
	}
	v, err := c.ToHost()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(v) // [4 5 10 11]
}
