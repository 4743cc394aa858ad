package highlevel

// #include "shim.h"
import "C"

import (
	"context"
	"runtime/cgo"
	"sync"
	"time"
	"unsafe"

	"github.com/gocuda/cuda/cudart"
)

// The waiter wakes the goroutines that wait for events (Event.Wait,
// Event.Done, Stream.Wait, Stream.Done), which park on channels and hold no
// OS thread, however many there are.
//
// Each request queues, on a helper stream of the event's device, a wait for
// the event and then a host function that wakes the request: CUDA runs it
// as soon as the event has happened, and waiting costs no CPU. One
// goroutine also polls the pending events, all in one cgo call a round, as
// a safety net (an error of the event's stream, which host functions do not
// report) and for requests whose helper stream could not be had. Waits for
// a record made inside a capture are refused before they get here (a
// helper stream waiting for it would join the capture). Between rounds it
// sleeps an eighth of the age of the youngest request, from minPoll to
// maxPoll, or, when every request has its host function, from armedPoll to
// maxPoll. Short sleeps are in C, with a timer slack of 1 ns (Go's timers,
// and Linux's default slack of 50 µs, would add more than the sleep); a new
// request wakes the poller at once.
const (
	minPoll   = 2 * time.Microsecond
	armedPoll = time.Millisecond
	maxPoll   = 20 * time.Millisecond
	// goSleep is the shortest sleep left to Go's timers.
	goSleep = 500 * time.Microsecond
)

var closedChan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// A waitEvent is an event that requests watch. The waiter destroys it once
// it is closed (Event.Close, or at once for the events of Stream.watch) and
// no request watches it any more.
type waitEvent struct {
	ctx unsafe.Pointer
	ev  cudart.Event

	// Guarded by waiter.mu: the requests in the poller's list, and the
	// calls in progress, that use ev; it is destroyed only when none does.
	refs   int
	closed bool
	// captured is set by close for an event recorded in a capture, whose
	// destruction changes the capture: it is made holding captureOps.
	captured bool
}

// release drops a reference to e; waiter.mu is held.
func (e *waitEvent) release() {
	if e.refs--; e.refs == 0 && e.closed {
		waiter.dead = append(waiter.dead, e)
	}
}

// A waitReq is one watched record of an event.
type waitReq struct {
	e     *waitEvent
	start time.Time
	done  chan struct{}
	err   error // set before done is closed

	// Guarded by waiter.mu:
	finished bool
	armed    bool        // a host function will wake it
	helper   C.uintptr_t // the helper stream of its host function
}

var waiter struct {
	mu       sync.Mutex
	pending  []*waitReq
	dead     []*waitEvent                     // to destroy
	helpers  map[unsafe.Pointer][]C.uintptr_t // idle helper streams, by context
	running  bool
	sleeping bool // the poller is in (or about to enter) hl_poll_sleep
	wake     chan struct{}
}

// watch starts watching e as it was last recorded.
func watch(e *waitEvent) *waitReq {
	w := &waitReq{e: e, start: time.Now(), done: make(chan struct{})}
	waiter.mu.Lock()
	e.refs += 2 // the request's, and this call's until it has queued the wake-up
	waiter.pending = append(waiter.pending, w)
	helper, ok := takeHelper(e.ctx)
	waiter.mu.Unlock()
	// The callers' event is not recorded in a capture (Event.watch and
	// Stream.watch make sure), which a helper stream waiting for it would
	// join.
	armed := false
	if ok || newHelper(e.ctx, &helper) {
		h := cgo.NewHandle(w)
		waiter.mu.Lock()
		w.helper = helper
		waiter.mu.Unlock()
		if C.hl_wake_after(e.ctx, helper, C.uintptr_t(e.ev), C.uintptr_t(h)) != 0 {
			h.Delete()
			waiter.mu.Lock()
			waiter.helpers[e.ctx] = append(waiter.helpers[e.ctx], helper)
			waiter.mu.Unlock()
		} else {
			armed = true
		}
	} else if ok {
		waiter.mu.Lock()
		waiter.helpers[e.ctx] = append(waiter.helpers[e.ctx], helper)
		waiter.mu.Unlock()
	}
	waiter.mu.Lock()
	// Set once the wake-up is queued: the poller queries the helper
	// stream of an armed request, idle before.
	w.armed = armed
	e.release()
	sleeping := waiter.sleeping
	if !waiter.running {
		waiter.running = true
		waiter.wake = make(chan struct{}, 1)
		go poll()
	}
	wake := waiter.wake
	waiter.mu.Unlock()
	if sleeping {
		C.hl_poll_wake()
	}
	select {
	case wake <- struct{}{}:
	default:
	}
	return w
}

// takeHelper takes an idle helper stream of ctx; waiter.mu is held.
func takeHelper(ctx unsafe.Pointer) (C.uintptr_t, bool) {
	if waiter.helpers == nil {
		waiter.helpers = make(map[unsafe.Pointer][]C.uintptr_t)
	}
	idle := waiter.helpers[ctx]
	if len(idle) == 0 {
		return 0, false
	}
	h := idle[len(idle)-1]
	waiter.helpers[ctx] = idle[:len(idle)-1]
	return h, true
}

// newHelper creates a helper stream of ctx.
func newHelper(ctx unsafe.Pointer, h *C.uintptr_t) bool {
	return C.hl_stream_create(ctx, h, C.CU_STREAM_NON_BLOCKING, 0) == 0
}

// hlWake is the host function of a request: its event has happened.
//
//export hlWake
func hlWake(h C.uintptr_t) {
	c := cgo.Handle(h)
	w := c.Value().(*waitReq)
	c.Delete()
	waiter.mu.Lock()
	waiter.helpers[w.e.ctx] = append(waiter.helpers[w.e.ctx], w.helper)
	w.finishLocked(nil)
	waiter.mu.Unlock()
}

// finishLocked ends w with err; waiter.mu is held. It leaves w in pending:
// the poller drops it, and its reference to the event, once no round of its
// uses the event any more.
func (w *waitReq) finishLocked(err error) {
	if w.finished {
		return
	}
	w.finished, w.err = true, err
	close(w.done)
}

// close gives e to the waiter, which destroys it once no request watches
// it: at once when none does. captured tells whether it was recorded in a
// capture.
func (e *waitEvent) close(captured bool) {
	waiter.mu.Lock()
	e.closed, e.captured = true, captured
	now := e.refs == 0
	waiter.mu.Unlock()
	if now {
		e.destroy()
	}
}

// destroy destroys the event, once closed and watched no more.
func (e *waitEvent) destroy() {
	if e.captured {
		captureOps.Lock()
		defer captureOps.Unlock()
	}
	C.hl_event_destroy(e.ctx, C.uintptr_t(e.ev))
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
		batch   []*waitReq
		dead    []*waitEvent
		ctxs    []unsafe.Pointer
		handles []C.uintptr_t
		streams []C.int
		status  []C.int
	)
	for {
		waiter.mu.Lock()
		keep := waiter.pending[:0]
		for _, w := range waiter.pending {
			if w.finished {
				w.e.release()
			} else {
				keep = append(keep, w)
			}
		}
		dead = append(dead[:0], waiter.dead...)
		clear(waiter.dead)
		waiter.dead = waiter.dead[:0]
		clear(waiter.pending[len(keep):])
		waiter.pending = keep
		batch = append(batch[:0], keep...)
		var youngest time.Time
		armed := true
		for _, w := range batch {
			if w.start.After(youngest) {
				youngest = w.start
			}
			armed = armed && w.armed
		}
		if len(batch) == 0 && len(dead) == 0 {
			waiter.running = false
			waiter.mu.Unlock()
			return
		}
		waiter.mu.Unlock()

		for _, e := range dead {
			e.destroy()
		}
		clear(dead)
		if len(batch) == 0 {
			continue
		}
		// An armed request's helper stream is queried rather than its
		// event, which other goroutines may record again meanwhile, inside
		// a capture too, where a query of it crashed the driver: the
		// helper's work is the wait and the host function, and the query
		// reports a failed context, when the host function never runs.
		ctxs, handles, streams, status = ctxs[:0], handles[:0], streams[:0], status[:0]
		waiter.mu.Lock()
		for _, w := range batch {
			h, stream := C.uintptr_t(w.e.ev), C.int(0)
			if w.armed {
				h, stream = w.helper, 1
			}
			ctxs = append(ctxs, w.e.ctx)
			handles = append(handles, h)
			streams = append(streams, stream)
			status = append(status, 0)
		}
		waiter.mu.Unlock()
		C.hl_event_query_many(C.int(len(batch)), (*unsafe.Pointer)(unsafe.Pointer(&ctxs[0])), &handles[0], &streams[0], &status[0])

		waiter.mu.Lock()
		progress := false
		for i, w := range batch {
			if status[i] != C.CUDA_ERROR_NOT_READY {
				w.finishLocked(check("cuEventQuery", status[i]))
				progress = true
			}
		}
		progress = progress || len(waiter.pending) != len(batch) || len(waiter.dead) > 0
		waiter.sleeping = !progress
		wake := waiter.wake
		waiter.mu.Unlock()
		if progress {
			continue
		}
		d := pollInterval(time.Since(youngest), armed)
		if d < goSleep {
			C.hl_poll_sleep(C.long(d))
		} else {
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-wake:
				t.Stop()
			}
		}
		waiter.mu.Lock()
		waiter.sleeping = false
		waiter.mu.Unlock()
	}
}

// pollInterval is the sleep between rounds while the youngest request is
// age old; armed says whether every request has a host function to wake
// it.
func pollInterval(age time.Duration, armed bool) time.Duration {
	least := minPoll
	if armed {
		least = armedPoll
	}
	return min(max(age/8, least), maxPoll)
}
