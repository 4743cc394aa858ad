package highlevel

import (
	"runtime"
	"runtime/cgo"
	"unsafe"

	"github.com/gocuda/cuda/highlevel/internal/driver"
)

// callback is a Go function queued on a stream (Stream.AddCallback,
// Stream.LaunchHostFunc) or a graph's host node (Graph.AddHost), passed to
// C as a cgo.Handle.
type callback struct {
	to      failer // where a panic is reported
	fn      func()
	withErr func(error)
}

// A failer keeps the panics of callbacks for its next report: a Stream's
// waits, a graph's launches (hostPanics).
type failer interface{ fail(error) }

// newCallback returns the handle of cb for the shim, which hands its
// calls to the dispatchers: the first starts here, before any is queued.
func newCallback(cb callback) cgo.Handle {
	dispatchOnce.Do(func() {
		driver.AddDispatcher()
		go dispatch()
	})
	return cgo.NewHandle(cb)
}

// dispatch runs, on a goroutine locked to its thread, the callbacks that
// CUDA's threads hand to it and wait for (driver.NextJob): Go
// cannot end a thread it did not create, so a runtime.Goexit in a
// callback's function run on CUDA's thread would kill the process. Such a
// Goexit ends dispatch, and its thread with it. When no other dispatcher
// waits for callbacks, dispatch starts one before it runs a callback.
func dispatch() {
	runtime.LockOSThread()
	for {
		n := driver.NextJob()
		if n.More != 0 {
			go dispatch()
		}
		runCallback(n.Job, cgo.Handle(n.H), n.Status, n.Keep != 0)
	}
}

// runCallback runs the callback behind h, of the shim's job, with the
// stream's status for a stream callback, and ends the job. A handle that
// may run again (a graph's node) is kept: the graph's user object gives it
// back (deleteDeadHandles). A panic or runtime.Goexit in the function is
// reported by the stream's next Synchronize, Wait or Query.
func runCallback(job unsafe.Pointer, h cgo.Handle, status int32, keep bool) {
	cb := h.Value().(callback)
	if !keep {
		h.Delete()
	}
	callbacks.Add(1)
	returned := false
	defer func() {
		var p *PanicError
		if !returned {
			op := "host function"
			if cb.withErr != nil {
				op = "stream callback"
			}
			p = recovered(op, recover())
			cb.to.fail(p)
		}
		callbacks.Add(-1)
		driver.JobDone(job, cbool(p == nil || !p.Goexit))
	}()
	if cb.withErr == nil {
		cb.fn()
	} else {
		var err error
		if status != 0 {
			err = opErr("stream callback", driverStatus(status))
		}
		cb.withErr(err)
	}
	returned = true
}

// inCallback reports whether the calling goroutine runs a stream callback
// or host function, where CUDA must not be called; while none runs, at the
// cost of an atomic load.
func inCallback() bool {
	return callbacks.Load() != 0 && driver.InCallbackNow() != 0
}

// deleteDeadHandles deletes the handles of host functions whose graphs
// CUDA has destroyed.
func deleteDeadHandles() {
	var buf [64]uintptr
	for {
		n := int(driver.DeadHandles(&buf[0], int32(len(buf))))
		for _, h := range buf[:n] {
			cgo.Handle(h).Delete()
		}
		if n < len(buf) {
			return
		}
	}
}
