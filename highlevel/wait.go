package highlevel

import (
	"context"
	"runtime"
	"runtime/cgo"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/gocuda/cuda/cudadrv"

	"github.com/gocuda/cuda/highlevel/internal/driver"
)

// Waiting (Event.Wait and Done, Stream.Wait and Done) is done by the
// waiting goroutine itself, with no lock, thread or helper stream shared
// with the waiters of other streams and events. It waits in steps, each
// one cgo call that sleeps, then queries the event, spinning on it for a
// while if the step says so. The steps come from what the earlier waits of
// the same stream or event took (a waitClock): a wait like the last ones
// sleeps until shortly before it is due and spins across its end, which
// gives cuEventSynchronize's latency for a fraction of its CPU; a wait
// with nothing learned spins for firstSpin, then polls at an eighth of its
// age, and one later than the last ones at a quarter of how late it is.
// The first step only queries, and unless the last waits agreed, no
// sleep is longer than twice the wait's age, so that a wait shorter than
// they were costs little more than its own time. A step sleeps and spins
// in C, with a timer slack of 1 ns (Go's timers, and Linux's default slack
// of 50 µs, would add more than the sleep), and holds an OS thread
// meanwhile: at most maxThreads() waiters sleep there at once, the others,
// and sleeps over goSleep, use Go's timers and hold none. At most
// maxSpinners() spin at once; the others poll instead.
//
// A goroutine sleeping in C keeps its processor (P), and Go takes it back
// only from a call that lasts: with more waiters than processors, waiters
// that sleep briefly and often kept the others runnable but unrun for up
// to Go's 10 ms time slice (BenchmarkServe's 64 workers on 16 processors:
// a 99th percentile of 7-10 ms). So while more than half the processors
// sleep in C, a sleep shorter than yieldNap first yields the processor.
//
// The waiter below (hand-offs) serves Event.Wait and Done when the event
// is recorded again while goroutines wait for its earlier Record: it
// queues, on a helper stream, a wait for the earlier Record and a host
// function that wakes them.
const (
	firstSpin = 20 * time.Microsecond
	// lead is how long before a wait is due it starts spinning, plus a
	// thirty-second of the time it is due in, up to maxLead, but no more
	// than minLead and two deviations of the last waits, so that waits
	// that agree spin briefly.
	lead    = 15 * time.Microsecond
	maxLead = 100 * time.Microsecond
	minLead = 8 * time.Microsecond
	// minNap is the shortest sleep between polls, firstNap the longest
	// sleep of a wait younger than half of it.
	minNap   = 5 * time.Microsecond
	firstNap = 50 * time.Microsecond
	// goSleep is the shortest sleep left to Go's timers, which may fire up
	// to a millisecond late: they sleep all but the last millisecond.
	goSleep = 2 * time.Millisecond
	// yieldNap is the longest sleep in C that yields first (see above):
	// Go takes back the processor of a longer one.
	yieldNap = 500 * time.Microsecond
)

// yield lets the other runnable goroutines run; tests replace it.
var yield = runtime.Gosched

// maxThreads is how many waiters may sleep in C at once.
func maxThreads() int32 { return max(64, 4*procs()) }

// maxSpinners is how many waiters may spin at once: half the processors.
func maxSpinners() int32 { return max(1, procs()/2) }

// take takes one of n's max places, if one is free.
func take(n *atomic.Int32, max int32) bool {
	if n.Add(1) <= max {
		return true
	}
	n.Add(-1)
	return false
}

// A waitClock learns how long the waits of a stream or an event take: the
// moving average of the last ones (0 before the first), and of their
// distance from it.
type waitClock struct{ avg, dev atomic.Int64 }

func (c *waitClock) observe(d time.Duration) {
	avg := c.avg.Load()
	if avg == 0 {
		c.avg.Store(int64(d))
		c.dev.Store(int64(d) / 2) // trusted once waits agree
		return
	}
	diff := int64(d) - avg
	dev := c.dev.Load()
	c.dev.Store(dev + (max(diff, -diff)-dev)/4)
	c.avg.Store(avg + diff/4)
}

// plan returns how long the next step of a wait age old sleeps, then spins,
// with due the time the wait is expected to take (0: unknown) and dev how
// far the last ones strayed from it.
func plan(age, due, dev time.Duration) (nap, spin time.Duration) {
	switch {
	case due > 0:
		l := min(lead+due/32, maxLead, minLead+2*dev)
		switch {
		case age+minNap < due-l: // shorter sleeps are not worth a wake-up
			nap, spin = due-l-age, 2*l
		case age < due+l:
			return 0, due + l - age
		default:
			nap = max(min((age-due)/4, age/8), minNap)
		}
	case age < firstSpin:
		return 0, firstSpin - age
	default:
		nap = max(age/8, minNap)
	}
	// A wait may end sooner than the last ones: a sleep goes no further
	// than four of their deviations before they were due, or twice the
	// age (firstNap at first), so that where they agree a wait sleeps once
	// or twice, and where they do not, a wrong guess costs at most about
	// twice the wait, and the clock learns it.
	if limit := max(2*age, firstNap, due-lead-4*dev); nap > limit {
		return limit, 0
	}
	return nap, spin
}

// What a step reports besides CUDA's results: the event has not happened
// yet (CUDA_ERROR_NOT_READY), or it was recorded again (see
// Event.waitFor); and waitSteps' report that ctx is done.
const (
	notReady   = int(cudadrv.ERROR_NOT_READY)
	superseded = -100
	ctxDone    = -101
)

// waitSteps waits with step (see the top of the file) until the event has
// happened, ctx is done, or step reports something else than
// CUDA_ERROR_NOT_READY, which it returns. clock learns from the wait.
func waitSteps(ctx context.Context, clock *waitClock, step func(nap, spin time.Duration) int) int {
	start := time.Now()
	due, dev := time.Duration(clock.avg.Load()), time.Duration(clock.dev.Load())
	done := ctx.Done()
	var timer *time.Timer
	for first := true; ; first = false {
		if done != nil {
			select {
			case <-done:
				return ctxDone
			default:
			}
		}
		age := time.Since(start)
		nap, spin := plan(age, due, dev)
		if first && nap > 0 { // the work may be done already
			nap, spin = 0, 0
		}
		spun := spin > 0 && take(&spinning, maxSpinners())
		if !spun {
			if spin > 0 && nap == 0 { // poll through the spin instead
				nap = max(min(age/8, spin/4), minNap)
			}
			spin = 0
		}
		if d, ok := ctx.Deadline(); ok {
			left := time.Until(d)
			if left <= 0 {
				if spun {
					spinning.Add(-1)
				}
				<-done
				return ctxDone
			}
			nap = min(nap, left)
		}
		if nap > 0 && (nap >= goSleep || !take(&napping, maxThreads())) {
			// Sleep on Go's timers, then query once.
			if spun {
				spinning.Add(-1)
			}
			if nap >= goSleep {
				nap -= time.Millisecond
			}
			if timer == nil {
				timer = time.NewTimer(nap)
				defer timer.Stop()
			} else {
				timer.Reset(nap)
			}
			select {
			case <-timer.C:
			case <-done:
				return ctxDone
			}
			nap, spin, spun = 0, 0, false
		}
		napped := nap > 0
		if napped && nap < yieldNap && napping.Load() > procs()/2 {
			t := time.Now()
			yield()
			nap = max(nap-time.Since(t), 0)
		}
		r := step(nap, spin)
		if napped {
			napping.Add(-1)
		}
		if spun {
			spinning.Add(-1)
		}
		if r != notReady {
			if r == 0 {
				clock.observe(time.Since(start))
			}
			return r
		}
	}
}

var closedChan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// A signal is a channel closed once, with the error it was closed with:
// what Done returns, and what the hand-offs wake.
type signal struct {
	done  chan struct{}
	err   error // set before done is closed
	fired atomic.Bool
}

func newSignal() *signal { return &signal{done: make(chan struct{})} }

// failed returns a signal fired with err.
func failed(err error) *signal {
	s := &signal{done: closedChan, err: err}
	s.fired.Store(true)
	return s
}

// fire closes the channel with err, if it is not closed yet.
func (s *signal) fire(err error) {
	if s.fired.CompareAndSwap(false, true) {
		s.err = err
		close(s.done)
	}
}

// wait waits until s is fired or ctx is done, and returns the error of
// either.
func (s *signal) wait(ctx context.Context) error {
	select {
	case <-s.done:
		return s.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// result returns s's error once it has fired, and nil before or for a nil
// s.
func (s *signal) result() error {
	if s == nil {
		return nil
	}
	select {
	case <-s.done:
		return s.err
	default:
		return nil
	}
}

// The hand-offs' poller sleeps between rounds from minPoll to maxPoll (see
// waitReq).
const (
	minPoll = time.Millisecond
	maxPoll = 20 * time.Millisecond
)

// A waitEvent is an event that hand-offs watch. The waiter destroys it once
// it is closed (Event.Close) and no request watches it any more.
type waitEvent struct {
	ctx unsafe.Pointer
	ev  cudadrv.Event

	// Guarded by waiter.mu: the requests in the poller's list, and the
	// calls in progress, that use ev; it is destroyed only when none does.
	refs   int
	closed bool
	// captured is set by close for an event recorded in a capture, whose
	// destruction changes the capture: it is made holding captureOps.
	captured bool
	// capture is, from close, the capture of the event's latest Record,
	// if any: the event is destroyed only once that capture has ended.
	capture *capture
}

// release drops a reference to e; waiter.mu is held.
func (e *waitEvent) release() {
	if e.refs--; e.refs == 0 && e.closed {
		waiter.dead = append(waiter.dead, e)
	}
}

// A waitReq is one watched record of an event. The host function queued
// for it fires it; one goroutine also polls the pending requests' helper
// streams, all in one cgo call a round, as a safety net (a failed context,
// which host functions do not report), sleeping between rounds an eighth
// of the age of the youngest request, from minPoll to maxPoll.
type waitReq struct {
	signal
	e     *waitEvent
	start time.Time

	// Guarded by waiter.mu:
	armed  bool    // a host function will wake it
	helper uintptr // the helper stream of its host function
}

// watch starts watching e as it was last recorded.
func watch(e *waitEvent) *waitReq {
	w := &waitReq{signal: signal{done: make(chan struct{})}, e: e, start: time.Now()}
	waiter.mu.Lock()
	e.refs += 2 // the request's, and this call's until it has queued the wake-up
	waiter.pending = append(waiter.pending, w)
	helper, ok := takeHelper(e.ctx)
	waiter.mu.Unlock()
	// The event's Record watched was not made in a capture (Record hands
	// off only such Records), which a helper stream waiting for it would
	// join.
	r, op := int32(0), ""
	if !ok {
		r, op = driver.StreamCreate(e.ctx, &helper, uint32(cudadrv.STREAM_NON_BLOCKING), 0), "cuStreamCreate"
	}
	armed := false
	if r == 0 {
		h := cgo.NewHandle(w)
		waiter.mu.Lock()
		w.helper = helper
		waiter.mu.Unlock()
		op = "cuStreamWaitEvent"
		if r = driver.WakeAfter(e.ctx, helper, uintptr(e.ev), uintptr(h)); r != 0 {
			h.Delete()
			waiter.mu.Lock()
			waiter.helpers[e.ctx] = append(waiter.helpers[e.ctx], helper)
			waiter.mu.Unlock()
		} else {
			armed = true
		}
	}
	if !armed {
		// Nothing else can tell when this Record happens: a query of the
		// event would see the Record that replaces it.
		w.fire(check(op, r))
	}
	waiter.mu.Lock()
	// Set once the wake-up is queued: the poller queries the helper
	// stream of an armed request, idle before, and skips the others.
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
		driver.PollWake()
	}
	select {
	case wake <- struct{}{}:
	default:
	}
	return w
}

// takeHelper takes an idle helper stream of ctx; waiter.mu is held.
func takeHelper(ctx unsafe.Pointer) (uintptr, bool) {
	if waiter.helpers == nil {
		waiter.helpers = make(map[unsafe.Pointer][]uintptr)
	}
	idle := waiter.helpers[ctx]
	if len(idle) == 0 {
		return 0, false
	}
	h := idle[len(idle)-1]
	waiter.helpers[ctx] = idle[:len(idle)-1]
	return h, true
}

// Wake is the host function of a request (driver.WakeAfter): its event
// has happened.
func (w *waitReq) Wake() {
	waiter.mu.Lock()
	waiter.helpers[w.e.ctx] = append(waiter.helpers[w.e.ctx], w.helper)
	w.fire(nil)
	waiter.mu.Unlock()
}

var _ driver.Waker = (*waitReq)(nil)

// close gives e to the waiter, which destroys it once no request watches
// it: at once when none does. captured tells whether it was recorded in a
// capture, c the capture of its latest Record, if any.
func (e *waitEvent) close(captured bool, c *capture) {
	waiter.mu.Lock()
	e.closed, e.captured, e.capture = true, captured, c
	now := e.refs == 0
	waiter.mu.Unlock()
	if now {
		e.destroy()
	}
}

// destroy destroys the event, once closed and watched no more, or, where
// the capture of its latest Record goes on, leaves it to the capture's
// end: driver 580 crashed (SIGSEGV in cuEventDestroy) where a goroutine
// destroyed an event recorded in another goroutine's capture in progress.
func (e *waitEvent) destroy() {
	if e.captured {
		captureOps.Lock()
		defer captureOps.Unlock()
		if c := e.capture; c != nil && !c.ended.Load() {
			c.dead = append(c.dead, e)
			return
		}
	}
	driver.EventDestroy(e.ctx, uintptr(e.ev))
}

func poll() {
	var (
		batch   []*waitReq
		dead    []*waitEvent
		ctxs    []unsafe.Pointer
		handles []uintptr
		status  []int32
	)
	for {
		waiter.mu.Lock()
		keep := waiter.pending[:0]
		for _, w := range waiter.pending {
			if w.fired.Load() {
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
		for _, w := range batch {
			if w.start.After(youngest) {
				youngest = w.start
			}
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
		// The helper stream of a request is queried rather than its
		// event, which other goroutines may record again meanwhile, inside
		// a capture too, where a query of it crashed the driver: the
		// helper's work is the wait and the host function, and the query
		// reports a failed context, when the host function never runs. A
		// request not armed yet is left to the next round.
		ctxs, handles, status = ctxs[:0], handles[:0], status[:0]
		waiter.mu.Lock()
		pending := len(batch)
		armed := batch[:0]
		for _, w := range batch {
			if w.armed {
				armed = append(armed, w)
				ctxs = append(ctxs, w.e.ctx)
				handles = append(handles, w.helper)
				status = append(status, 0)
			}
		}
		batch = armed
		waiter.mu.Unlock()
		if len(batch) > 0 {
			driver.StreamQueryMany(int32(len(batch)), (*unsafe.Pointer)(unsafe.Pointer(&ctxs[0])), &handles[0], &status[0])
		}

		waiter.mu.Lock()
		progress := false
		for i, w := range batch {
			if status[i] != int32(cudadrv.ERROR_NOT_READY) {
				w.fire(check("cuEventQuery", status[i]))
				progress = true
			}
		}
		progress = progress || len(waiter.pending) != pending || len(waiter.dead) > 0
		waiter.sleeping = !progress
		wake := waiter.wake
		waiter.mu.Unlock()
		if progress {
			continue
		}
		d := pollInterval(time.Since(youngest))
		if d < goSleep {
			driver.PollSleep(int64(d))
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
// age old.
func pollInterval(age time.Duration) time.Duration {
	return min(max(age/8, minPoll), maxPoll)
}
