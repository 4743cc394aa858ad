package highlevel

// #include "shim.h"
import "C"

import (
	"context"
	"runtime"
	"sync"
	"unsafe"

	"github.com/gocuda/cuda/cudart"
)

// The waiter: one goroutine polls every event that goroutines wait for
// (Event.Wait, Event.Done, Stream.Wait, Stream.Done), all in one cgo call a
// round, and closes each one's channel when it has happened. So waiting
// goroutines park on channels and hold no OS thread, however many there are.
// While events are pending, the poller yields for a few rounds, then sleeps
// 10µs doubling up to 50µs between rounds, in C (nanosleep): Go's timers
// wake about a millisecond late on an idle machine. That sleep holds the
// poller's one OS thread; a new request is seen by the next round.

var closedChan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// A waitReq is one watched event.
type waitReq struct {
	ctx  unsafe.Pointer
	ev   cudart.Event
	done chan struct{}
	err  error // set before done is closed

	// Guarded by waiter.mu:
	finished bool
	destroy  bool // the event belongs to the waiter once finished
}

var waiter struct {
	mu      sync.Mutex
	pending []*waitReq
	running bool
}

// watch starts watching ev; the waiter destroys ev when it has happened if
// destroy is set.
func watch(ctx unsafe.Pointer, ev cudart.Event, destroy bool) *waitReq {
	w := &waitReq{ctx: ctx, ev: ev, done: make(chan struct{}), destroy: destroy}
	waiter.mu.Lock()
	waiter.pending = append(waiter.pending, w)
	if !waiter.running {
		waiter.running = true
		go poll()
	}
	waiter.mu.Unlock()
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
	var (
		batch    []*waitReq
		finished []*waitReq
		ctxs     []unsafe.Pointer
		events   []C.uintptr_t
		status   []C.int
		idle     int
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
		for _, w := range batch {
			ctxs = append(ctxs, w.ctx)
			events = append(events, C.uintptr_t(w.ev))
			status = append(status, 0)
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
		if len(finished) > 0 {
			idle = 0
			continue
		}
		idle++
		if idle < 16 {
			runtime.Gosched()
			continue
		}
		C.hl_sleep_us(C.int(min(10<<min(idle-16, 3), 50)))
	}
}
