package collective

import (
	"errors"
	"fmt"
	"runtime"
	"sync"

	"github.com/gocuda/cuda/highlevel"
)

// RunEach calls fn(c) for every communicator c of comms at once, each in a
// goroutine of its own, and returns their errors joined, each naming its
// rank: the way to drive the ranks of NewComms from one process one
// goroutine per device, as NCCL's one-thread-per-GPU programs do.
//
// A goroutine that fails (fn returns an error, panics or calls
// runtime.Goexit) aborts every communicator of comms, so that the other
// goroutines, whose collectives wait for its rank, return errors wrapping
// ErrAborted at once rather than waiting out their Timeout. A panic is
// returned as a *highlevel.PanicError (its Goexit set for
// runtime.Goexit); it does not reach the caller.
func RunEach(comms []*Comm, fn func(c *Comm) error) error {
	if fn == nil {
		return &Error{Op: "run each", Rank: -1, Err: errors.New("nil function")}
	}
	for i, c := range comms {
		if err := c.usable(); err != nil {
			return &Error{Op: "run each", Rank: -1, Err: fmt.Errorf("communicator %d: %w", i, err)}
		}
	}
	errs := make([]error, len(comms))
	var (
		wg   sync.WaitGroup
		once sync.Once
	)
	failed := func(err error) {
		once.Do(func() {
			for _, c := range comms {
				c.abort(wrapf(ErrAborted, err, "another rank failed"))
			}
		})
	}
	for i, c := range comms {
		wg.Go(func() {
			returned := false
			defer func() {
				if returned {
					return
				}
				// A panic, or runtime.Goexit (recover returns nil).
				v := recover()
				buf := make([]byte, 16<<10)
				errs[i] = &highlevel.PanicError{Op: fmt.Sprintf("RunEach's function on rank %d", c.rank), Value: v, Goexit: v == nil, Stack: buf[:runtime.Stack(buf, false)]}
				failed(errs[i])
			}()
			err := fn(c)
			returned = true
			if err != nil {
				errs[i] = fmt.Errorf("rank %d: %w", c.rank, err)
				failed(errs[i])
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// CloseAll closes comms at once, each in a goroutine of its own, and
// returns their errors joined: the way to close the communicators of one
// process's NewComms, since NCCL's finalization may wait for every rank of
// the process to finalize. A nil Comm is skipped.
func CloseAll(comms []*Comm) error {
	errs := make([]error, len(comms))
	var wg sync.WaitGroup
	for i, c := range comms {
		if c != nil {
			wg.Go(func() { errs[i] = c.Close() })
		}
	}
	wg.Wait()
	return errors.Join(errs...)
}
