package mixed

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gocuda/cuda/highlevel"
)

// The kinds of streams, events and waits: stream, event, busyclose,
// recordwait, wait and hostfunc.

// replaceStream closes a shared stream, which other goroutines may be
// using, capturing or waiting for, and puts a new one of its kind in its
// place.
func (w *worker) replaceStream() {
	w.mu.Lock()
	i := w.r.IntN(len(w.streams))
	capturable := w.streams[i].capturable
	w.mu.Unlock()
	rs, err := newStream(w.d, capturable, -w.r.IntN(3))
	if !w.ok(err, 0, "NewStream") {
		return
	}
	w.mu.Lock()
	old := w.streams[i]
	w.streams[i] = rs
	w.mu.Unlock()
	// A stream closed while another goroutine captures on it gives an
	// error to one of them.
	w.ok(old.s.Close(), aCapStatus, "Stream.Close of %s", old.what)
}

// replaceEvent closes a shared event, which other goroutines may be
// recording and waiting for, and puts a new one in its place.
func (w *worker) replaceEvent() {
	e, err := highlevel.NewEvent(w.d, &highlevel.EventOptions{DisableTiming: w.r.IntN(2) == 0, Blocking: w.r.IntN(2) == 0})
	if !w.ok(err, 0, "NewEvent") {
		return
	}
	w.mu.Lock()
	i := w.r.IntN(len(w.events))
	old := w.events[i]
	w.events[i] = e
	w.mu.Unlock()
	w.ok(old.Close(), 0, "Event.Close of a shared event")
}

// recordWait records a shared event on a shared stream and makes another
// wait for it. The waiting stream's gate is held one time in two; without
// it, the stream may be capturing, and CUDA refuses a wait for an event
// outside the capture.
func (w *worker) recordWait() {
	e, from, to := w.event(), w.stream(), w.stream()
	if !w.ok(from.queue(func(s *highlevel.Stream) error { return e.Record(s) }), from.allow(), "Event.Record on %s", from.what) {
		return
	}
	if w.r.IntN(2) == 0 {
		w.ok(to.queue(func(s *highlevel.Stream) error { return s.WaitEvent(e) }), to.allow(), "Stream.WaitEvent on %s", to.what)
	} else {
		w.ok(to.s.WaitEvent(e), to.allow()|aCapStatus|aCapAny, "Stream.WaitEvent on %s, maybe capturing", to.what)
	}
}

// wait waits for a shared stream or event in one of the package's ways,
// with a deadline it must not reach, or now and then one of 0 to 2 ms,
// which it may. Holding the stream's gate, no capture takes the stream:
// Wait, Done and Synchronize must not say a capture is in progress (Query
// may, for another goroutine's capture in CaptureGlobal mode). Shared
// events are recorded outside captures, always.
func (w *worker) wait() {
	bound := w.cfg.wait
	a := allow(0)
	if w.r.IntN(5) == 0 {
		bound = []time.Duration{0, 50 * time.Microsecond, 500 * time.Microsecond, 2 * time.Millisecond}[w.r.IntN(4)]
		a |= aDeadline
	}
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	rs, e := w.stream(), w.event()
	gated := w.r.IntN(2) == 0
	if gated {
		rs.gate.RLock()
		defer rs.gate.RUnlock()
	} else {
		a |= aCapAny // the stream may be capturing
	}
	a |= rs.allow()
	how := w.r.IntN(8)
	if rs.legacy && how < 4 {
		how += 4 // the legacy default stream refuses during every capture: waits on events
	}
	var err error
	var name string
	switch how {
	case 0:
		name, err = "Stream.Wait", rs.s.Wait(ctx)
	case 1:
		name = "Stream.Done"
		select {
		case <-rs.s.Done():
		case <-ctx.Done():
			err = ctx.Err()
		}
	case 2:
		name, err = "Stream.Synchronize", rs.s.Synchronize()
	case 3:
		name = "Stream.Query"
		_, err = rs.s.Query()
		a |= aCapGlobal
	case 4:
		name, err = "Event.Wait", e.Wait(ctx)
	case 5:
		name = "Event.Done"
		select {
		case <-e.Done():
		case <-ctx.Done():
			err = ctx.Err()
		}
	case 6:
		name, err = "Event.Synchronize", e.Synchronize()
	case 7:
		name = "Event.Query"
		_, err = e.Query()
		a |= aCapGlobal
	}
	if how >= 4 {
		a &^= aCapAny // the event's stream does not matter
	}
	if errors.Is(err, context.DeadlineExceeded) && bound == w.cfg.wait {
		w.fail("%s of %s did not end within %v", name, rs.what, bound)
		return
	}
	w.ok(err, a, "%s (stream: %s, gated %v, bound %v)", name, rs.what, gated, bound)
}

// hostFunc queues one to three host functions (or callbacks) on the
// goroutine's quiet stream, between busy kernels, maybe while a helper
// goroutine captures on the goroutine's second stream in a mode drawn at
// random, and waits for the quiet stream in one of seven ways: once a wait
// returns nil, or Done's channel is closed with Err nil, every host
// function queued before must have run. The quiet stream takes part in no
// capture: a wait that says a capture is in progress fails the program,
// but for Query during a capture in CaptureGlobal mode, which refuses it
// on every goroutine.
//
// One function in four calls the package, which must return
// ErrInCallback there.
func (w *worker) hostFunc() {
	q := w.quiet
	var wg sync.WaitGroup
	if w.r.IntN(2) == 0 {
		o := w.helper(0)
		mode, spin := w.mode(), w.r.IntN(2) == 0
		wg.Go(func() { w.concurrentCapture(o, mode, spin) })
	}
	defer wg.Wait()
	n := 1 + w.r.IntN(3)
	ran := make([]atomic.Bool, n)
	for i := range n {
		if w.r.IntN(2) == 0 {
			w.ok(w.k.spin.Launch(q, grid(1<<14), w.scratch, int32(1<<14), int32(64+w.r.IntN(1024))), 0, "spin on the quiet stream")
		}
		probe := w.r.IntN(4) == 0
		fn := func() {
			if probe {
				w.probeInCallback(q)
			}
			ran[i].Store(true)
			w.hostRan.Add(1)
		}
		var err error
		if w.r.IntN(3) == 0 {
			err = q.AddCallback(func(err error) {
				if err != nil && w.callbackBad.Add(1) == 1 {
					w.callbackErr.Store(fmt.Sprintf("AddCallback's stream error: %v", err))
				}
				fn()
			})
		} else {
			err = q.LaunchHostFunc(fn)
		}
		if !w.ok(err, 0, "LaunchHostFunc or AddCallback on the quiet stream") {
			w.hostMaybe.Add(1)
			ran[i].Store(true) // not queued: nothing to wait for
			continue
		}
		w.hostWant.Add(1)
	}
	for range w.r.IntN(16) {
		runtime.Gosched()
	}
	ctx, cancel := w.waitCtx()
	defer cancel()
	var err error
	var how string
	a := allow(0)
	done := func(ch <-chan struct{}, errFn func() error) error {
		select {
		case <-ch:
			return errFn()
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	switch w.r.IntN(7) {
	case 0:
		how, err = "Stream.Done, then Err", done(q.Done(), q.Err)
	case 1:
		how, err = "Stream.Wait", q.Wait(ctx)
	case 2:
		how, err = "Stream.Synchronize", q.Synchronize()
	case 3, 4, 5:
		e, rerr := recordNew(q)
		if !w.ok(rerr, 0, "Event.Record on the quiet stream") {
			return
		}
		switch w.r.IntN(3) {
		case 0:
			how, err = "Event.Wait", e.Wait(ctx)
		case 1:
			how, err = "Event.Done, then Err", done(e.Done(), e.Err)
		case 2:
			how, err = "Event.Synchronize", e.Synchronize()
		}
		w.ok(e.Close(), 0, "Event.Close")
	case 6:
		how, a = "Stream.Query until done", aCapGlobal
		for {
			var ok bool
			ok, err = q.Query()
			if errors.Is(err, highlevel.ErrCapturing) {
				// Only a capture in CaptureGlobal mode refuses it.
				w.ok(err, aCapGlobal, "Stream.Query of the quiet stream")
				err = nil
			}
			if ok || err != nil || ctx.Err() != nil {
				break
			}
			time.Sleep(20 * time.Microsecond)
		}
		if err == nil && ctx.Err() != nil {
			err = ctx.Err()
		}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		w.fail("%s of the quiet stream did not end within %v", how, w.cfg.wait)
		return
	}
	if err != nil {
		if w.ok(err, a, "%s of the quiet stream, which takes part in no capture", how) {
			return
		}
		// Refused for a global capture: wait for the host functions.
		how, err = "Stream.Wait after a refusal", q.Wait(ctx)
		if !w.ok(err, 0, "%s of the quiet stream", how) {
			return
		}
	}
	for i := range ran {
		if !ran[i].Load() {
			w.fail("%s of the quiet stream returned with no error before host function %d of %d queued on it had run", how, i+1, n)
			return
		}
	}
	w.note("hostfunc waits that saw their host functions run")
}

// probeInCallback calls the package from a host function: it must return
// ErrInCallback (ErrClosed for a closed object, which answers first).
func (w *worker) probeInCallback(q *highlevel.Stream) {
	_, err := q.Query()
	if !errors.Is(err, highlevel.ErrInCallback) && w.callbackBad.Add(1) == 1 {
		w.callbackErr.Store(fmt.Sprintf("Stream.Query in a host function: %v", err))
	}
}

// concurrentCapture captures a fill of the goroutine's target and a spin
// on its second stream in the given mode, and discards the graph: a
// capture that begins and ends while hostFunc waits for its quiet stream.
func (w *worker) concurrentCapture(o *op, mode highlevel.CaptureMode, spin bool) {
	g, err := o.captureOn(w.own2, mode, false, func(s *highlevel.Stream) error {
		if spin {
			if err := w.k.spin.Launch(s, grid(1<<12), w.scratch, int32(1<<12), int32(16)); err != nil {
				return err
			}
		}
		return w.fillTarget(s, 0, 1, 1)
	})
	if o.ok(err, aCapStatus|aCapGlobal, "capture in %v mode on the goroutine's second stream beside hostfunc's wait", mode) {
		o.ok(g.Close(), 0, "Graph.Close")
	}
}

// busyClose makes a stream and an event, has two to four helper
// goroutines queue kernels, memsets, copies, host functions, callbacks,
// records, waits and queries on them, and closes both while they do:
// every operation works or returns ErrClosed (or ErrCapturing for a query
// during another goroutine's global capture), every host function queued
// runs.
func (w *worker) busyClose() {
	nonBlocking := w.r.IntN(2) == 0
	s, err := highlevel.NewStream(w.d, &highlevel.StreamOptions{NonBlocking: nonBlocking})
	if !w.ok(err, 0, "NewStream") {
		return
	}
	e, err := highlevel.NewEvent(w.d, &highlevel.EventOptions{DisableTiming: w.r.IntN(2) == 0, Blocking: w.r.IntN(2) == 0})
	if !w.ok(err, 0, "NewEvent") {
		w.ok(s.Close(), 0, "Stream.Close")
		return
	}
	var wg sync.WaitGroup
	for h := range 2 + w.r.IntN(3) {
		o := w.helper(h)
		r := rand.New(rand.NewPCG(w.r.Uint64(), uint64(h)))
		steps := 4 + r.IntN(16)
		wg.Go(func() {
			for range steps {
				w.busyStep(o, r, s, e, nonBlocking)
			}
		})
	}
	for range w.r.IntN(64) {
		runtime.Gosched()
	}
	switch w.r.IntN(3) {
	case 0:
		w.ok(s.Close(), 0, "Stream.Close of a busy stream")
		w.ok(e.Close(), 0, "Event.Close of a busy event")
	case 1:
		w.ok(e.Close(), 0, "Event.Close of a busy event")
		w.ok(s.Close(), 0, "Stream.Close of a busy stream")
	case 2:
		var cw sync.WaitGroup
		cw.Go(func() { w.ok(s.Close(), 0, "Stream.Close of a busy stream") })
		w.ok(e.Close(), 0, "Event.Close of a busy event")
		cw.Wait()
	}
	wg.Wait()
	w.note("busy streams closed")
}

// busyStep is one operation of a busyClose helper on s and e. A blocking
// stream synchronizes with the legacy default stream, but the package
// refuses no work on it during a capture.
func (w *worker) busyStep(o *op, r *rand.Rand, s *highlevel.Stream, e *highlevel.Event, nonBlocking bool) {
	ctx, cancel := o.waitCtx()
	defer cancel()
	n := 1 + r.IntN(1<<16)
	var err error
	var how string
	a := aClosed
	switch r.IntN(15) {
	case 0:
		how, err = "MemsetAsync", w.scratch.MemsetAsync(s, byte(r.Uint32()), 4*n)
	case 1:
		how, err = "spin", w.k.spin.Launch(s, grid(n), w.scratch, int32(n), int32(1+r.IntN(256)))
	case 2:
		how, err = "LaunchHostFunc", s.LaunchHostFunc(func() { w.hostRan.Add(1) })
		w.countHost(err)
	case 3:
		how, err = "AddCallback", s.AddCallback(func(error) { w.hostRan.Add(1) })
		w.countHost(err)
	case 4:
		how, err = "Event.Record", e.Record(s)
	case 5:
		how, err = "Stream.WaitEvent", s.WaitEvent(e)
	case 6:
		how, a = "Stream.Query", a|aCapGlobal
		_, err = s.Query()
	case 7:
		how, a = "Event.Query", a|aCapGlobal
		_, err = e.Query()
	case 8:
		how, err = "Stream.Wait", s.Wait(ctx)
	case 9:
		how, err = "Event.Wait", e.Wait(ctx)
	case 10:
		how = "Stream.Done"
		select {
		case <-s.Done():
		case <-ctx.Done():
			err = ctx.Err()
		}
	case 11:
		how = "Event.Done"
		select {
		case <-e.Done():
		case <-ctx.Done():
			err = ctx.Err()
		}
	case 12:
		how = "recordNew(Stream)"
		var x *highlevel.Event
		if x, err = recordNew(s); err == nil {
			err = x.Close()
		}
	case 13:
		how = "Synchronize"
		if r.IntN(2) == 0 {
			err = s.Synchronize()
		} else {
			err = e.Synchronize()
		}
	case 14:
		// To pageable memory, CUDA has written got when the call returns.
		how = "CopyToHostAsync of about 47 KB"
		got := make([]byte, 40<<10+r.IntN(16<<10))
		err = highlevel.CopyToHostAsync(s, got, w.scratch)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		o.fail("%s on a stream or event being closed did not end within %v", how, o.cfg.wait)
		return
	}
	o.ok(err, a, "%s on a stream or event being closed (non-blocking %v)", how, nonBlocking)
}

// countHost counts a host function or callback queued, or maybe queued.
func (w *worker) countHost(err error) {
	switch {
	case err == nil:
		w.hostWant.Add(1)
	case !errors.Is(err, highlevel.ErrClosed):
		w.hostMaybe.Add(1)
	}
}
