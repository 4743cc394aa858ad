package highlevel

// #include "shim.h"
import "C"

import (
	"context"
	"runtime"
	"sync"
	"time"
	"unsafe"

	"github.com/gocuda/cuda/cudart"
)

// The waiter: one goroutine polls every event that goroutines wait for
// (Event.Wait, Event.Done, Stream.Wait, Stream.Done), all in one cgo call a
// round, and closes each one's channel when it has happened. So waiting
// goroutines park on channels and hold no OS thread, however many there are.
//
// Between rounds the poller sleeps an eighth of the age of the youngest
// request, from minPoll to maxPoll: a wait of a few microseconds is seen
// within about a microsecond of its end, a wait of a second costs about a
// thousand rounds. It sleeps in C, on a thread with a timer slack of 1 ns
// (Go's timers, and Linux's default slack of 50 µs, would add more than
// the waits themselves), and a new request wakes it at once.
const (
	minPoll = 2 * time.Microsecond
	maxPoll = time.Millisecond
)

var closedChan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// A waitReq is one watched event.
type waitReq struct {
	ctx   unsafe.Pointer
	ev    cudart.Event
	start time.Time
	done  chan struct{}
	err   error // set before done is closed

	// Guarded by waiter.mu:
	finished bool
	destroy  bool // the event belongs to the waiter once finished
}

var waiter struct {
	mu       sync.Mutex
	pending  []*waitReq
	running  bool
	sleeping bool // the poller is in (or about to enter) hl_poll_sleep
}

// watch starts watching ev; the waiter destroys ev when it has happened if
// destroy is set.
func watch(ctx unsafe.Pointer, ev cudart.Event, destroy bool) *waitReq {
	w := &waitReq{ctx: ctx, ev: ev, start: time.Now(), done: make(chan struct{}), destroy: destroy}
	waiter.mu.Lock()
	waiter.pending = append(waiter.pending, w)
	wake := waiter.sleeping
	if !waiter.running {
		waiter.running = true
		go poll()
	}
	waiter.mu.Unlock()
	if wake {
		C.hl_poll_wake()
	}
	return w
}

// handOver gives the event to the waiter to destroy once it has happened,
// and reports whether it took it (false: it has happened already).
func (w *waitReq) handOver() bool {
	waiter.mu.Lock()
	defer waiter.mu.Unlock()
	if w.finished {
		return false
	}
	w.destroy = true
	return true
}

func (w *waitReq) isFinished() bool {
	waiter.mu.Lock()
	defer waiter.mu.Unlock()
	return w.finished
}

func (w *waitReq) wait(ctx context.Context) error {
	select {
	case <-w.done:
		return w.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func poll() {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	C.hl_poll_thread()
	var (
		batch    []*waitReq
		finished []*waitReq
		ctxs     []unsafe.Pointer
		events   []C.uintptr_t
		status   []C.int
	)
	for {
		waiter.mu.Lock()
		batch = append(batch[:0], waiter.pending...)
		if len(batch) == 0 {
			waiter.running = false
			waiter.mu.Unlock()
			return
		}
		waiter.mu.Unlock()

		ctxs, events, status = ctxs[:0], events[:0], status[:0]
		youngest := batch[0].start
		for _, w := range batch {
			ctxs = append(ctxs, w.ctx)
			events = append(events, C.uintptr_t(w.ev))
			status = append(status, 0)
			if w.start.After(youngest) {
				youngest = w.start
			}
		}
		C.hl_event_query_many(C.int(len(batch)), (*unsafe.Pointer)(unsafe.Pointer(&ctxs[0])), &events[0], &status[0])

		finished = finished[:0]
		waiter.mu.Lock()
		keep := waiter.pending[:0]
		for i, w := range waiter.pending {
			if i >= len(batch) || status[i] == C.cudaErrorNotReady {
				keep = append(keep, w)
				continue
			}
			w.err = check("cudaEventQuery", status[i])
			w.finished = true
			finished = append(finished, w)
		}
		clear(waiter.pending[len(keep):])
		waiter.pending = keep
		sleep := len(finished) == 0 && len(keep) == len(batch)
		waiter.sleeping = sleep
		waiter.mu.Unlock()

		// destroy was settled under the lock, with finished: Event.Close
		// leaves a finished request's event alone.
		for _, w := range finished {
			if w.destroy {
				C.hl_event_destroy(w.ctx, C.uintptr_t(w.ev))
			}
			close(w.done)
		}
		clear(finished) // let the requests go
		if sleep {
			C.hl_poll_sleep(C.long(pollInterval(time.Since(youngest))))
			waiter.mu.Lock()
			waiter.sleeping = false
			waiter.mu.Unlock()
		}
	}
}

// pollInterval is the sleep between rounds while the youngest request is
// age old.
func pollInterval(age time.Duration) time.Duration {
	return min(max(age/8, minPoll), maxPoll)
}
