package highlevel

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/gocuda/cuda/cudadrv"

	"github.com/gocuda/cuda/highlevel/internal/driver"
)

// An Event marks a point in a stream's work: Record places it, and it
// happens when the stream reaches it. An Event is safe for use by several
// goroutines.
//
// The zero value is not usable: make one with NewEvent (or
// OpenIPCEvent); its methods, and the operations given it, return an error
// wrapping ErrNil.
type Event struct {
	h    cudadrv.Event
	dev  Device
	ctx  unsafe.Pointer
	life life

	we *waitEvent // what the waiter watches; nil in a zero Event
	// interprocess is set for an event other processes may record: it was
	// created with EventOptions.Interprocess or opened with OpenIPCEvent.
	interprocess bool

	// captured is set when the latest Record was made while its stream
	// captured: the event then happens in the graph's launches, and is
	// not waited for here.
	captured atomic.Bool
	// capture is the capture the latest Record was made in, which a
	// stream waiting for the event joins; nil when it was made in none.
	// capturedOnce is set once a Record was made in a capture: the event is
	// destroyed holding captureOps.
	capture      atomic.Pointer[capture]
	capturedOnce atomic.Bool

	clock waitClock // how long waits for the event take

	holds holdCount // the graphs with nodes that record or wait for it, and whether Close came

	mu sync.Mutex // held by Record, and by a wait's query of the event
	// Guarded by mu:
	gen      uint64    // the Records made
	waiting  int       // goroutines waiting for the latest Record
	handoffs []handoff // the hand-offs of earlier Records still waited for
	waits    int       // goroutines waiting, for any Record
	// closeLater is set by a Close that left the event to its waiters:
	// the last one destroys it.
	closeLater bool
	done       *signal // Done's, for the latest Record; nil before the first Done
	lastDone   *signal // Done's latest, for Err
}

// A handoff is a waiter's watch (wait.go) of a Record made before the
// latest, for the n goroutines that waited for it when the event was
// recorded again and have not yet taken it.
type handoff struct {
	gen uint64
	n   int
	w   *waitReq
}

// EventOptions are the options of NewEvent; the zero value gives an event
// that records timing and is waited for by spinning.
type EventOptions struct {
	// Blocking makes Synchronize yield the CPU while it waits
	// (CU_EVENT_BLOCKING_SYNC).
	Blocking bool
	// DisableTiming makes the event cheaper, and unusable with ElapsedTime.
	DisableTiming bool
	// Interprocess lets other processes open the event (Event.IPCHandle,
	// OpenIPCEvent); it needs DisableTiming.
	Interprocess bool
}

// NewEvent creates an event on d. opts may be nil.
func NewEvent(d Device, opts *EventOptions) (_ *Event, err error) {
	defer func() {
		if err != nil {
			wrap(&err, "new event on", d)
		}
	}()
	if opts == nil {
		opts = &EventOptions{}
	}
	if opts.Interprocess && !opts.DisableTiming {
		return nil, invalid("an interprocess event needs DisableTiming")
	}
	ctx, err := d.context()
	if err != nil {
		return nil, err
	}
	var flags uint32
	if opts.Blocking {
		flags |= uint32(cudadrv.EVENT_BLOCKING_SYNC)
	}
	if opts.DisableTiming {
		flags |= uint32(cudadrv.EVENT_DISABLE_TIMING)
	}
	if opts.Interprocess {
		flags |= uint32(cudadrv.EVENT_INTERPROCESS)
	}
	var h uintptr
	if err := check("cuEventCreate", driver.EventCreate(ctx, &h, flags)); err != nil {
		return nil, err
	}
	return newEvent(h, d, ctx, opts.Interprocess), nil
}

func newEvent(h uintptr, d Device, ctx unsafe.Pointer, interprocess bool) *Event {
	return &Event{h: cudadrv.Event(h), dev: d, ctx: ctx, we: &waitEvent{ctx: ctx, ev: cudadrv.Event(h)}, interprocess: interprocess}
}

// Handle returns the CUDA event, for use with cudadrv (or, converted, with
// cudart); 0 for a nil Event.
func (e *Event) Handle() cudadrv.Event {
	if e == nil {
		return 0
	}
	return e.h
}

// Device returns the event's device; 0 for a nil Event.
func (e *Event) Device() Device {
	if e == nil {
		return 0
	}
	return e.dev
}

// usable returns the error of a method called on a nil or zero Event; nil
// for an Event the package made.
func (e *Event) usable() error {
	if e == nil {
		return nilError("Event")
	}
	if e.we == nil {
		return zeroError("Event", "NewEvent")
	}
	return nil
}

// use begins an operation on the event; e.life.Release ends it.
func (e *Event) use() error {
	if e == nil || e.we == nil {
		return e.usable()
	}
	if inCallback() { // before e.mu, held by calls that may wait for the callback
		return ErrInCallback
	}
	if !e.life.Acquire() {
		return ErrClosed
	}
	return nil
}

// Record records the event on s, a stream of the event's device (nil: its
// legacy default stream): the event happens when s reaches this point.
// While s captures, the point is one of the graph being captured (other
// streams join the capture by waiting for it, Stream.WaitEvent): until the
// next Record, Wait, Synchronize and Query return ErrCapturing.
func (e *Event) Record(s *Stream) (err error) {
	defer func() {
		if err != nil {
			wrap(&err, "record event of", e.Device())
		}
	}()
	return e.record(s)
}

// record is Record without the operation's name in its error.
func (e *Event) record(s *Stream) error {
	if err := e.use(); err != nil {
		return err
	}
	defer e.life.Release()
	sh, err := s.enter(e.dev)
	if err != nil {
		return err
	}
	defer s.leave()
	e.mu.Lock()
	defer e.mu.Unlock()
	var c *capture
	if s != nil && s.inCapture() {
		c = s.capture
	}
	e.rerecord(c)
	// With no capture in progress, the record is not captured.
	if captures.Load() == 0 {
		if e.captured.Load() {
			e.captured.Store(false)
		}
		return check("cuEventRecord", driver.EventRecord(e.ctx, uintptr(e.h), sh))
	}
	var captured int32
	err = check("cuEventRecord", driver.EventRecordCapture(e.ctx, uintptr(e.h), sh, &captured))
	e.captured.Store(captured != 0)
	return err
}

// rerecord counts a new record of the event, made in capture c (or none)
// by the caller while it holds e.mu, by Record or by the launch of a graph
// with a record node of it (GraphExec.Launch). The goroutines that wait
// for the record before, by querying the event, would see this one: a
// waiter's watch of it takes over.
func (e *Event) rerecord(c *capture) {
	if e.waiting > 0 {
		e.handoffs = append(e.handoffs, handoff{gen: e.gen, n: e.waiting, w: watch(e.we)})
		e.waiting = 0
	}
	e.gen++
	e.done = nil // waits from now on are for this record
	e.capture.Store(c)
	if c != nil && !e.capturedOnce.Load() {
		e.capturedOnce.Store(true)
	}
}

// A recordedEvent is an event a graph's record node records
// (Graph.AddEventRecord): the graph holds it as it holds the event, and
// its instantiations' launches count a record of it (rerecord).
type recordedEvent struct{ e *Event }

func (r recordedEvent) hold()   { r.e.hold() }
func (r recordedEvent) unhold() { r.e.unhold() }

// lockEvents counts a record of each of es, sorted by address, by a
// graph launch to be made while they stay locked: the record is no
// capture's. It returns the function that unlocks them.
func lockEvents(es []*Event) func() {
	for _, e := range es {
		e.mu.Lock()
		e.rerecord(nil)
		e.captured.Store(false)
	}
	return func() {
		for _, e := range es {
			e.mu.Unlock()
		}
	}
}

// uncaptured returns errCapturedWork when the event's latest Record was
// captured.
func (e *Event) uncaptured() error {
	if e.captured.Load() {
		return errCapturedWork
	}
	return nil
}

// Synchronize waits until the event has happened. It holds the calling
// goroutine's OS thread while it waits; Wait holds one only for its short
// sleeps.
func (e *Event) Synchronize() (err error) {
	defer func() {
		if err != nil {
			wrap(&err, "synchronize event of", e.Device())
		}
	}()
	if err := e.use(); err != nil {
		return err
	}
	defer e.life.Release()
	if err := e.uncaptured(); err != nil {
		return err
	}
	return check("cuEventSynchronize", driver.EventSynchronize(e.ctx, uintptr(e.h)))
}

// Query reports whether the event has happened, without waiting (CuPy's
// Event.done).
func (e *Event) Query() (_ bool, err error) {
	defer func() {
		if err != nil {
			wrap(&err, "query event of", e.Device())
		}
	}()
	if err := e.use(); err != nil {
		return false, err
	}
	defer e.life.Release()
	if err := e.uncaptured(); err != nil {
		return false, err
	}
	return ready("cuEventQuery", driver.EventQuery(e.ctx, uintptr(e.h)))
}

// Done returns a channel that is closed when the event has happened, for
// use in select: when the latest Record before the call is reached (by any
// process, for an interprocess event), or at once for an event never
// recorded. Calls between two Records return the same channel, but for an
// interprocess event. For a nil or closed event, or one whose latest Record
// was made while its stream captured, the channel is closed at once, and
// Err reports why.
func (e *Event) Done() <-chan struct{} {
	s := e.doneSignal()
	if e != nil && e.we != nil {
		e.mu.Lock()
		e.lastDone = s
		e.mu.Unlock()
	}
	return s.done
}

func (e *Event) doneSignal() *signal {
	gen, err := e.beginWait(true)
	if err != nil {
		return failed(opErr("wait for event of "+e.Device().String(), err))
	}
	if gen == nil { // the Record has its channel; e.mu is held
		s := e.done
		e.mu.Unlock()
		return s
	}
	defer e.mu.Unlock()
	s := newSignal()
	e.done = s
	g := *gen
	go func() { s.fire(e.waitFor(context.Background(), g)) }()
	return s
}

// Err returns why the channel of the latest Done was closed: nil while it
// is open and when the event happened, else the error, as Wait would have
// returned it.
func (e *Event) Err() error {
	if err := e.usable(); err != nil {
		return opErr("wait for event", err)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.lastDone.result()
}

// Wait waits until the event has happened (the latest Record before the
// call) or ctx is done; then it returns ctx's error and leaves the GPU's
// work alone. Waiting holds no OS thread for long and costs little CPU:
// any number of goroutines may wait at once, as Stream.Wait says. If the
// event is recorded again while goroutines wait, they are handed over to a
// helper stream that waits for the Record they began with.
func (e *Event) Wait(ctx context.Context) error {
	gen, err := e.beginWait(false)
	if err != nil {
		return opErr("wait for event of "+e.Device().String(), err)
	}
	return e.waitFor(ctx, *gen) // ctx's error as it is
}

// beginWait counts a goroutine that waits for the latest Record, and
// returns the Record's number. For Done, with a channel for the Record
// already, it returns nil and keeps e.mu; with none, it keeps e.mu too.
func (e *Event) beginWait(done bool) (*uint64, error) {
	if err := e.use(); err != nil {
		return nil, err
	}
	defer e.life.Release()
	e.mu.Lock()
	if err := e.uncaptured(); err != nil {
		e.mu.Unlock()
		return nil, err
	}
	// Other processes record an interprocess event too, unseen here: each
	// Done gets a channel of its own.
	if done && e.done != nil && !e.interprocess {
		return nil, nil
	}
	gen := e.gen
	e.waiting++
	e.waits++
	if !done {
		e.mu.Unlock()
	}
	return &gen, nil
}

// waitFor waits for Record gen, which beginWait counted, by querying the
// event in steps (wait.go), each holding e.mu against a new Record; if
// there is one, the waiter's watch of Record gen takes over.
func (e *Event) waitFor(ctx context.Context, gen uint64) error {
	var w *waitReq
	r := waitSteps(ctx, &e.clock, func(nap, spin time.Duration) int {
		if nap > 0 {
			driver.Nap(int64(nap))
		}
		e.mu.Lock()
		defer e.mu.Unlock()
		if e.gen != gen {
			w = e.handoff(gen)
			return superseded
		}
		// Record waits for the lock: a short spin.
		return int(driver.EventStep(e.ctx, uintptr(e.h), 0, int64(min(spin, lockedSpin))))
	})
	var err error
	switch r {
	case superseded:
		err = w.wait(ctx)
	case ctxDone:
		err = ctx.Err()
	default:
		err = check("cuEventQuery", int32(r))
	}
	e.mu.Lock()
	if w == nil {
		if e.gen == gen {
			e.waiting--
		} else {
			e.handoff(gen)
		}
	}
	e.waits--
	closing := e.waits == 0 && e.closeLater
	e.mu.Unlock()
	if closing {
		e.we.close(e.capturedOnce.Load(), e.capture.Load())
	}
	return err
}

// lockedSpin is the longest spin of a step that holds Event.mu.
const lockedSpin = 10 * time.Microsecond

// handoff returns the watch of Record gen, and counts the goroutine that
// takes it; e.mu is held.
func (e *Event) handoff(gen uint64) *waitReq {
	for i := range e.handoffs {
		h := &e.handoffs[i]
		if h.gen != gen {
			continue
		}
		w := h.w
		if h.n--; h.n == 0 {
			last := len(e.handoffs) - 1
			e.handoffs[i] = e.handoffs[last]
			e.handoffs[last] = handoff{}
			e.handoffs = e.handoffs[:last]
		}
		return w
	}
	panic("highlevel: no hand-off for a wait of an event recorded again")
}

// Close destroys the event. Operations in progress on it finish first;
// later ones return ErrClosed, and so does a second Close. Goroutines
// waiting for it are woken when it happens, as if it were still open.
// An event that nodes of graphs record or wait for (Graph.AddEventRecord,
// Graph.AddEventWait) is destroyed after the last of those graphs and
// their instantiations is closed, as memory dropped without Free is given
// back: by a later allocation, once the work queued until then has run
// (see Memory).
func (e *Event) Close() error {
	if err := e.usable(); err != nil {
		return opErr("close event", err)
	}
	if err := closing(&e.life); err != nil {
		return opErr("close event of "+e.dev.String(), err)
	}
	if e.holds.release() { // graphs use it: the last to let go destroys it
		return nil
	}
	e.destroy()
	return nil
}

// destroy destroys the closed event now or, while goroutines wait for
// it, leaves that to the last of them.
func (e *Event) destroy() {
	e.mu.Lock()
	e.closeLater = e.waits > 0
	later := e.closeLater
	e.mu.Unlock()
	if !later { // else the last waiter closes it
		e.we.close(e.capturedOnce.Load(), e.capture.Load()) // now, or once no watch uses it
	}
}

// hold records that a graph's node records or waits for e; Close then
// leaves the event to the last unhold. It is called during an operation
// on e, which Close waits for, or by a graph or instantiation that holds e
// already, so never once e is destroyed.
func (e *Event) hold() { e.holds.add() }

// unhold ends a hold. The last one after Close leaves the event to be
// destroyed as lost memory is freed, by a later allocation, once the work
// queued so far has run: launches of the graph may still be in flight.
func (e *Event) unhold() {
	if e.holds.done() {
		lostMemory{event: e}.lose()
	}
}

// ElapsedTime returns the time between two recorded events that have
// happened, with a resolution of about half a microsecond (CuPy's
// get_elapsed_time).
func ElapsedTime(start, end *Event) (_ time.Duration, err error) {
	defer wrap(&err, "elapsed time")
	if err := start.use(); err != nil {
		return 0, err
	}
	defer start.life.Release()
	if err := end.use(); err != nil {
		return 0, err
	}
	defer end.life.Release()
	var ms float32
	if err := check("cuEventElapsedTime", driver.EventElapsed(start.ctx, &ms, uintptr(start.h), uintptr(end.h))); err != nil {
		return 0, err
	}
	return time.Duration(float64(ms) * float64(time.Millisecond)), nil
}
