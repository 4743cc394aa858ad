package highlevel

// #include "shim.h"
import "C"

import (
	"runtime/cgo"

	"github.com/gocuda/cuda/cudart"
)

// callback is a Go function queued on a stream (Stream.AddCallback,
// Stream.LaunchHostFunc), passed to C as a cgo.Handle.
type callback struct {
	fn      func()
	withErr func(error)
}

// hlRunCallback runs the callback behind h on CUDA's callback thread. The
// shim has marked the thread so that the package refuses calls into CUDA
// from fn. A handle that may run again (a graph's node) is kept; the graph
// deletes it.
//
//export hlRunCallback
func hlRunCallback(h C.uintptr_t, status C.int, keep C.int) {
	c := cgo.Handle(h)
	cb := c.Value().(callback)
	if keep == 0 {
		c.Delete()
	}
	if cb.withErr != nil {
		var err error
		if status != 0 {
			err = opError("stream callback", cudart.Error(status))
		}
		cb.withErr(err)
		return
	}
	cb.fn()
}
