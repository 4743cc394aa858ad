package highlevel

// #include "shim.h"
import "C"

import (
	"runtime/cgo"
	"sync/atomic"
)

// callback is a Go function queued on a stream (Stream.AddCallback,
// Stream.LaunchHostFunc), passed to C as a cgo.Handle.
type callback struct {
	s       *Stream // where a panic is reported
	fn      func()
	withErr func(error)
}

// hlRunCallback runs the callback behind h on CUDA's callback thread. The
// shim has marked the thread so that the package refuses calls into CUDA
// from fn. A handle that may run again (a graph's node) is kept: the
// graph's user object gives it back (deleteDeadHandles). A panic in fn is
// recovered and reported by the stream's next Synchronize, Wait or Query.
//
//export hlRunCallback
func hlRunCallback(h C.uintptr_t, status C.int, keep C.int) {
	c := cgo.Handle(h)
	cb := c.Value().(callback)
	if keep == 0 {
		c.Delete()
	}
	op := "host function"
	if cb.withErr != nil {
		op = "stream callback"
	}
	callbacks.Add(1)
	defer func() {
		callbacks.Add(-1)
		if v := recover(); v != nil {
			cb.s.fail(recovered(op, v))
		}
	}()
	if cb.withErr != nil {
		var err error
		if status != 0 {
			err = opErr("stream callback", driverStatus(status))
		}
		cb.withErr(err)
		return
	}
	cb.fn()
}

// callbacks counts the program's functions running as stream callbacks or
// host functions, so that inCallback asks the shim only while one runs.
var callbacks atomic.Int32

// inCallback reports whether the calling goroutine runs a stream callback
// or host function, where CUDA must not be called; while none runs, at the
// cost of an atomic load.
func inCallback() bool {
	return callbacks.Load() != 0 && C.hl_in_callback_now() != 0
}

// deleteDeadHandles deletes the handles of host functions whose graphs
// CUDA has destroyed.
func deleteDeadHandles() {
	var buf [64]C.uintptr_t
	for {
		n := int(C.hl_dead_handles(&buf[0], C.int(len(buf))))
		for _, h := range buf[:n] {
			cgo.Handle(h).Delete()
		}
		if n < len(buf) {
			return
		}
	}
}
