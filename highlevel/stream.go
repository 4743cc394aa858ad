package highlevel

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gocuda/cuda/cudadrv"
	"github.com/gocuda/cuda/cudart"

	"github.com/gocuda/cuda/highlevel/internal/driver"
)

// A Stream is a CUDA stream of a device: work queued on it runs in order.
// Every asynchronous operation of the package takes a *Stream; nil means
// the legacy default stream of the device the operation's memory or object
// belongs to. A Stream is safe for use by several goroutines; its Close
// lets the operations in progress on it finish first.
//
// The zero value is not usable: make one with NewStream (or
// LegacyDefaultStream, PerThreadDefaultStream, ExternalStream); its
// methods, and the operations given it, return an error wrapping ErrNil.
type Stream struct {
	h     cudadrv.Stream
	dev   Device
	state *deviceState // dev's: its primary context, and for launches its limits; nil in a zero Stream
	owned bool         // Close destroys it
	nodes bool         // a deviceState's packOn, for graph nodes, which may name an allocation node's memory

	life life
	// queued is set by every operation of the package on the stream once
	// it has queued its work (leave), for Done; a flag rather than a count,
	// so that an operation that finds it set writes nothing shared.
	queued atomic.Bool

	// pooled is set once a MemoryPool allocated for the stream; Close then
	// waits for the stream's work and settles the pools' blocks (settle).
	pooled  atomic.Bool
	settled atomic.Bool
	// asyncOwner owns the memory allocated on the stream from the
	// MemoryAsyncPool the stream last allocated from (owner).
	asyncOwner atomic.Pointer[asyncOwner]
	capturing  atomic.Bool // BeginCapture counted a capture in captures
	global     atomic.Bool // and in the shim's global captures
	// joins is held alone by the operations that may take the stream into
	// a capture or out of one (BeginCapture, EndCapture, WaitEvent, which
	// joins the stream to the capture of the event's record, and the
	// destruction), and shared by every other: those that queue work
	// (enter), which must know whether it is captured, and Query,
	// Synchronize and Done's and Wait's event, which refuse a capturing
	// stream. A join between the check and the work would make the work
	// captured unseen, and a helper stream of the waiter waiting for such
	// an event would join the capture too.
	joins sync.RWMutex
	// capture is the capture the stream takes part in, having begun it or
	// joined it, or one that ended, or nil. Guarded by joins.
	capture *capture
	// captureThread is the OS thread that began a capture in a strict
	// mode, which alone may end it; 0 for none.
	captureThread atomic.Int64

	// closeMu is held by Close and by what ends a stream Close left to a
	// capture (reapStreams), so that a Free after Close finds it done.
	closeMu sync.Mutex
	// capturedClose is set when Close found the stream capturing: the
	// stream is destroyed once its capture ends (reapStreams). Guarded by
	// closeMu.
	capturedClose bool

	clock waitClock // how long waits for the stream take

	mu       sync.Mutex
	done     *signal // Done's, for the work queued before queued was cleared
	lastDone *signal // Done's latest, for Err
	watches  uint64  // the clears of queued, to keep the latest one's signal in done
	// marks are idle events of the stream's waits (mark); marksClosed is
	// set by Close, which destroyed them: the events in use then are
	// destroyed when their waits end.
	marks       []uintptr
	marksClosed bool
	failed      error    // a callback's panic, for the next Synchronize, Wait or Query
	pools       []*arena // pools that keep free blocks for the stream

	// after is the event other streams wait for in WaitStream, made on
	// first use and recorded anew by each; afterMu guards it, and keeps a
	// record and its wait together, so that no other WaitStream's record
	// (perhaps in a capture begun meanwhile) comes between them.
	afterMu sync.Mutex
	after   *Event
}

// StreamOptions are the options of NewStream; the zero value gives a
// blocking stream (one that synchronizes with the legacy default stream) of
// default priority.
type StreamOptions struct {
	// NonBlocking makes the stream run concurrently with the legacy default
	// stream (CU_STREAM_NON_BLOCKING).
	NonBlocking bool
	// Priority is the stream's priority: lower numbers run first. The
	// device's range is from its least priority, 0, down to its greatest
	// (-5 on current GPUs: see StreamPriorityRange); values outside are
	// clamped.
	Priority int
}

// NewStream creates a stream on d. opts may be nil.
func NewStream(d Device, opts *StreamOptions) (_ *Stream, err error) {
	defer func() {
		if err != nil {
			wrap(&err, "new stream on", d)
		}
	}()
	if opts == nil {
		opts = &StreamOptions{}
	}
	st, err := d.state()
	if err != nil {
		return nil, err
	}
	var flags uint32
	if opts.NonBlocking {
		flags = uint32(cudadrv.STREAM_NON_BLOCKING)
	}
	var h uintptr
	if err := check("cuStreamCreate", driver.StreamCreate(st.ctx, &h, flags, int32(opts.Priority))); err != nil {
		return nil, err
	}
	return &Stream{h: cudadrv.Stream(h), dev: d, state: st, owned: true}, nil
}

// StreamPriorityRange returns d's least and greatest stream priorities
// (0 and -5 on current GPUs).
func StreamPriorityRange(d Device) (least, greatest int, err error) {
	defer func() {
		if err != nil {
			wrap(&err, "stream priority range of", d)
		}
	}()
	ctx, err := d.context()
	if err != nil {
		return 0, 0, err
	}
	var l, g int32
	err = check("cuCtxGetStreamPriorityRange", driver.StreamPriorityRange(ctx, &l, &g))
	return int(l), int(g), err
}

// LegacyDefaultStream returns d's legacy default stream (stream 0), which
// synchronizes with every blocking stream of the device. Close does nothing
// to it. It cannot be captured, and while a capture is in progress the
// operations on it return ErrCapturing, but for Wait and Done, which wait
// for the captures to end (see Stream.BeginCapture).
func LegacyDefaultStream(d Device) (*Stream, error) {
	return ExternalStream(0, d)
}

// PerThreadDefaultStream returns d's per-thread default stream
// (CU_STREAM_PER_THREAD, the runtime's cudaStreamPerThread). Which OS
// thread's stream that is depends on the thread that issues each
// operation, and goroutines move between threads; only a goroutine locked
// to its thread (Device.Do) gets one predictable stream, and memory pools
// refuse it. Close does nothing to it.
func PerThreadDefaultStream(d Device) (*Stream, error) {
	return ExternalStream(cudart.StreamPerThread, d)
}

// ExternalStream wraps a stream of device d that something else created and
// will destroy (CuPy's ExternalStream): Close only makes the Stream
// unusable. The stream must outlive the Stream, until its Close. h is a
// cudart.Stream, as the libraries' bindings (cuBLAS, NCCL, ...) give it; a
// cudadrv.Stream is the same value, converted: cudart.Stream(h).
func ExternalStream(h cudart.Stream, d Device) (*Stream, error) {
	st, err := d.state()
	if err != nil {
		return nil, opErr("stream of "+d.String(), err)
	}
	return &Stream{h: cudadrv.Stream(h), dev: d, state: st}, nil
}

// Handle returns the CUDA stream as the libraries' bindings take it
// (cublas.SetStream(h, s.Handle()), nccl, cufft, ... and cudart), and,
// converted, cudadrv: cudadrv.Stream(s.Handle()), the same value. A nil
// Stream's is 0, the legacy default stream.
func (s *Stream) Handle() cudart.Stream {
	if s == nil {
		return 0
	}
	return cudart.Stream(s.h)
}

// Device returns the stream's device; 0 for a nil Stream.
func (s *Stream) Device() Device {
	if s == nil {
		return 0
	}
	return s.dev
}

// capture is a stream capture in progress: the streams that take part in
// it, the one that began it and those joined to it by WaitEvent, point to
// it, and it is ended once EndCapture has ended it in CUDA.
type capture struct {
	ended atomic.Bool // set holding captureOps
	// into is set for a capture into a graph of the program's
	// (Graph.Capture), which ends it: EndCapture refuses it.
	into bool
	// held is what the captured work uses, memory and modules, each held
	// once for the graph (holder); captureOps guards it.
	held map[holder]struct{}
	// dead are the events recorded in the capture and closed while it
	// went on, destroyed when it ends (waitEvent.destroy); captureOps
	// guards it.
	dead []*waitEvent
}

// keep makes the capture s takes part in, if any, hold mems for its
// graph. s is entered (Stream.enter), so captureOps is held while s
// captures.
func (s *Stream) keep(mems ...*Memory) {
	if s == nil || !s.inCapture() {
		return
	}
	for _, m := range mems {
		if m != nil {
			s.capture.keep(m)
		}
	}
}

// keep makes c hold h for its graph, once; captureOps is held.
func (c *capture) keep(h holder) {
	if _, ok := c.held[h]; ok {
		return
	}
	if c.held == nil {
		c.held = make(map[holder]struct{})
	}
	c.held[h] = struct{}{}
	h.hold()
}

// inCapture reports whether s takes part in a capture in progress; s.joins
// is held.
func (s *Stream) inCapture() bool {
	return s.capture != nil && !s.capture.ended.Load()
}

// usable returns the error of a method called on a nil or zero Stream; nil
// for a Stream the package made.
func (s *Stream) usable() error {
	if s == nil {
		return nilError("Stream")
	}
	if s.state == nil {
		return zeroError("Stream", "NewStream")
	}
	return nil
}

// perThread reports whether s is a per-thread default stream.
func (s *Stream) perThread() bool {
	return s != nil && s.h == cudadrv.Stream(cudadrv.STREAM_PER_THREAD)
}

// enter begins an operation that queues work on s for device d: it returns
// the stream's handle (0, the legacy default stream, for a nil Stream), or
// an error for a zero or closed stream or one of another device. leave ends
// it. In between, the operation holds joins shared, so that no capture
// takes s in or out, and, while s takes part in a capture, captureOps.
func (s *Stream) enter(d Device) (uintptr, error) {
	h, err := s.open(d)
	if err != nil || s == nil {
		return h, err
	}
	s.joins.RLock()
	if s.inCapture() {
		captureOps.Lock()
		if !s.inCapture() { // the capture ended while the lock was waited for
			captureOps.Unlock()
		}
	}
	return h, nil
}

// leave ends an operation enter began, once it has queued its work.
func (s *Stream) leave() {
	if s != nil {
		if s.inCapture() {
			captureOps.Unlock()
		}
		s.joins.RUnlock()
		s.shut()
	}
}

// A streamOn is a stream and the device of work queued on it: enterAll's
// argument. A nil stream is the legacy default stream of the device.
type streamOn struct {
	s   *Stream
	dev Device
}

// enterAll begins an operation that queues work on several streams at once
// (a group of NCCL calls over several devices): enter for each, but with
// captureOps taken once, where any of them takes part in a capture, for the
// mutex is not reentrant: a second enter of a capturing stream would wait
// for the first forever. It sorts ss by device and handle, so that any two
// callers take the streams' locks in one order. leaveAll(ss) ends it.
func enterAll(ss []streamOn) error {
	slices.SortFunc(ss, func(a, b streamOn) int {
		return cmp.Or(cmp.Compare(a.dev, b.dev), cmp.Compare(a.s.Handle(), b.s.Handle()))
	})
	for i, so := range ss {
		if _, err := so.s.open(so.dev); err != nil {
			unjoinAll(ss[:i])
			return err
		}
		if so.s != nil {
			so.s.joins.RLock()
		}
	}
	if anyInCapture(ss) {
		captureOps.Lock()
		if !anyInCapture(ss) { // the captures ended while the lock was waited for
			captureOps.Unlock()
		}
	}
	return nil
}

// leaveAll ends an operation enterAll(ss) began, once it has queued its
// work.
func leaveAll(ss []streamOn) {
	if anyInCapture(ss) {
		captureOps.Unlock()
	}
	unjoinAll(ss)
}

// unjoinAll releases the streams enterAll opened and joined.
func unjoinAll(ss []streamOn) {
	for _, so := range ss {
		if so.s != nil {
			so.s.joins.RUnlock()
			so.s.shut()
		}
	}
}

// anyInCapture reports whether any of ss takes part in a capture; their
// joins are held.
func anyInCapture(ss []streamOn) bool {
	return slices.ContainsFunc(ss, func(so streamOn) bool { return so.s != nil && so.s.inCapture() })
}

// enterAlone begins an operation that may take s into a capture or out of
// one: it holds joins alone, and captureOps as it needs. leaveAlone ends it.
func (s *Stream) enterAlone() (uintptr, error) {
	h, err := s.open(s.dev)
	if err != nil {
		return h, err
	}
	s.joins.Lock()
	return h, nil
}

func (s *Stream) leaveAlone() {
	s.joins.Unlock()
	s.shut()
}

// open is enter without the locks; shut is leave's end.
func (s *Stream) open(d Device) (uintptr, error) {
	if s == nil {
		return 0, nil
	}
	if s.state == nil {
		return 0, s.usable()
	}
	if inCallback() { // before the stream's locks, held by calls that may wait for the callback
		return 0, ErrInCallback
	}
	if s.dev != d {
		return 0, invalid("highlevel: stream of %v used for work on %v", s.dev, d)
	}
	if !s.life.Acquire() {
		return 0, ErrClosed
	}
	return uintptr(s.h), nil
}

// deviceState returns the state of the stream's device, which pack makes
// the device of every launch on s, or nil for a nil s.
func (s *Stream) deviceState() *deviceState {
	if s == nil {
		return nil
	}
	return s.state
}

func (s *Stream) shut() {
	if !s.queued.Load() {
		s.queued.Store(true)
	}
	s.life.Release()
}

// use begins an operation of the stream's own: Synchronize, Query, Wait.
func (s *Stream) use() (uintptr, error) {
	if s == nil || s.state == nil {
		return 0, s.usable()
	}
	if inCallback() { // before the stream's locks, held by calls that may wait for the callback
		return 0, ErrInCallback
	}
	if !s.life.Acquire() {
		return 0, ErrClosed
	}
	return uintptr(s.h), nil
}

// fail records the panic of a callback, for the next Synchronize, Wait or
// Query.
func (s *Stream) fail(err error) {
	s.mu.Lock()
	s.failed = errors.Join(s.failed, err)
	s.mu.Unlock()
}

// failure returns err with the callbacks' panics recorded so far, which it
// forgets.
func (s *Stream) failure(err error) error {
	s.mu.Lock()
	f := s.failed
	s.failed = nil
	s.mu.Unlock()
	return errors.Join(err, f)
}

// Synchronize waits until the stream has done all its work. It holds the
// calling goroutine's OS thread while it waits; Wait holds one only for its
// short sleeps. It returns the stream's error, and a *PanicError for each
// callback or host function of the stream that panicked since the last
// report. While the stream takes part in a capture it returns ErrCapturing
// and waits for nothing. On the legacy default stream it returns
// ErrCapturing while any capture is in progress, as CUDA does: it cannot
// be cancelled, and the goroutine that captures would wait for itself;
// Wait and Done wait for the captures to end instead.
func (s *Stream) Synchronize() error {
	h, err := s.use()
	if err != nil {
		return err
	}
	defer s.life.Release()
	s.joins.RLock()
	defer s.joins.RUnlock()
	r := int32(driver.Capturing)
	if !s.inCapture() {
		r = driver.StreamSynchronize(s.state.ctx, h)
	}
	return s.failure(check("cuStreamSynchronize", r))
}

// Query reports whether the stream has done all its work, without waiting
// (CuPy's Stream.done). Its error reports panics as Synchronize does, and
// it refuses a stream that takes part in a capture as Synchronize does.
func (s *Stream) Query() (bool, error) {
	h, err := s.use()
	if err != nil {
		return false, err
	}
	defer s.life.Release()
	s.joins.RLock()
	r := int32(driver.Capturing)
	if !s.inCapture() {
		r = driver.StreamQuery(s.state.ctx, h)
	}
	s.joins.RUnlock()
	done, err := ready("cuStreamQuery", r)
	return done, s.failure(err)
}

// Done returns a channel that is closed when the work queued on the stream
// so far is done, for use in select. While no operation of the package
// queues more work on a stream NewStream created, Done returns the same
// channel. For a nil or closed stream, a stream that is capturing, or when
// CUDA fails, the channel is closed at once, and Err reports why.
func (s *Stream) Done() <-chan struct{} {
	d, err := s.watch()
	if err != nil {
		d = failed(err)
	}
	if s != nil && s.state != nil {
		s.mu.Lock()
		s.lastDone = d
		s.mu.Unlock()
	}
	return d.done
}

// Err returns why the channel of the latest Done was closed: nil while it
// is open and when the work was done, else the error, as Wait would have
// returned it (Wait alone reports the panics of callbacks).
func (s *Stream) Err() error {
	if err := s.usable(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastDone.result()
}

// Wait waits until the work queued on the stream so far is done, or ctx is
// done; then it returns ctx's error and leaves the GPU's work alone. Its
// error reports panics as Synchronize does. While the stream captures, its
// work runs only when the graph is launched: Wait returns ErrCapturing.
// On the legacy default stream, which no capture lets work wait for, Wait
// (and Done) first waits for the captures in progress to end.
//
// Waiting holds no OS thread for long and costs little CPU, so any number
// of goroutines may wait at once. Wait, Done, and Event's Wait and Done
// wait alike, without a thread, lock or helper stream shared with the
// waiters of other streams and events: the waiting goroutine queries an
// event in steps, each a short sleep in C, then a query. A wait like the
// stream's (or event's) earlier ones sleeps until shortly before it is due
// and spins on the event across its end, which matches
// cuEventSynchronize's latency for a fraction of its CPU; a wait with
// nothing learned spins for 20 µs, then polls at an eighth of its age, and
// a wait later than the earlier ones at a quarter of how late it is;
// unless the earlier waits agreed, no sleep is longer than twice the
// wait's age. A step holds an OS thread while it sleeps or spins in C: at
// most the larger of 64 and four per GOMAXPROCS waiters sleep there at
// once (the others, and sleeps of milliseconds, use Go's timers), at most
// half of GOMAXPROCS spin, and while more than half of GOMAXPROCS sleep
// there, a sleep under 500 µs first yields the processor to the runnable
// goroutines.
func (s *Stream) Wait(ctx context.Context) error {
	ev, err := s.markAfterCaptures(ctx)
	if err != nil {
		return err
	}
	if err := s.waitMark(ctx, ev); err != nil {
		return err
	}
	return s.failure(nil)
}

// markAfterCaptures is mark for a wait that may wait for the captures that
// hold off the legacy default stream (errHeldOff) to end, or for ctx.
func (s *Stream) markAfterCaptures(ctx context.Context) (uintptr, error) {
	for {
		h, err := s.use()
		if err != nil {
			return 0, err
		}
		ev, err := s.mark(h)
		s.life.Release()
		if err != errHeldOff {
			return ev, err
		}
		if err := afterCaptures(ctx); err != nil {
			return 0, err
		}
	}
}

// watch returns Done's signal for the work queued so far, shared while
// nothing new is queued.
func (s *Stream) watch() (*signal, error) {
	h, err := s.use()
	if err != nil {
		return nil, err
	}
	defer s.life.Release()
	s.mu.Lock()
	// Cleared before the event is recorded, queued is set again by every
	// operation whose work the event may not cover: one that queued its
	// work after the clear. A stream the Stream does not own (the legacy
	// default stream, an external one) takes work through other Streams
	// and nil too, which queued does not see: it gets a new signal each
	// time.
	if !s.queued.Swap(false) && s.done != nil && s.owned {
		d := s.done
		s.mu.Unlock()
		return d, nil
	}
	// The event is recorded without s.mu, which a callback of the stream
	// takes to report a panic: CUDA may wait for the callback in the call.
	// Of the signals made at once, the one of the latest clear is kept.
	s.done = nil
	s.watches++
	gen := s.watches
	s.mu.Unlock()
	ev, err := s.mark(h)
	if err != nil && err != errHeldOff {
		return nil, err
	}
	d := newSignal()
	if err == errHeldOff { // the legacy default stream, during a capture
		go func() {
			ev, err := s.markAfterCaptures(context.Background())
			if err != nil {
				d.fire(err)
				return
			}
			d.fire(s.waitMark(context.Background(), ev))
		}()
	} else {
		go func() { d.fire(s.waitMark(context.Background(), ev)) }()
	}
	s.mu.Lock()
	if s.watches == gen {
		s.done = d
	}
	s.mu.Unlock()
	return d, nil
}

// errHeldOff is mark's error for the legacy default stream while a
// capture is in progress: the record waits for the capture's end
// (markAfterCaptures).
var errHeldOff = fmt.Errorf("%w: the legacy default stream waits for the captures in progress", ErrCapturing)

// mark records an event on the stream, one of its idle ones or a new one,
// for a wait, unless the stream takes part in a capture: then its work
// runs only when the graph is launched, and it returns errCapturedWork;
// or unless the stream is the legacy default stream and a capture is in
// progress: then it returns errHeldOff. The caller holds the stream's
// life, and gives the event back with waitMark.
func (s *Stream) mark(h uintptr) (uintptr, error) {
	var ev uintptr
	s.mu.Lock()
	if n := len(s.marks); n > 0 {
		ev = s.marks[n-1]
		s.marks = s.marks[:n-1]
	}
	s.mu.Unlock()
	s.joins.RLock()
	r := int32(driver.Capturing)
	if !s.inCapture() {
		m := driver.StreamMark(s.state.ctx, h, ev)
		r, ev = m.R, m.H
	}
	s.joins.RUnlock()
	if err := check("cuEventRecord", r); err != nil {
		if ev != 0 {
			s.unmark(ev)
		}
		if errors.Is(err, ErrCapturing) {
			err = errCapturedWork
			if h == 0 {
				err = errHeldOff
			}
		}
		return 0, err
	}
	return ev, nil
}

// waitMark waits for the event mark recorded, and gives it back.
func (s *Stream) waitMark(ctx context.Context, ev uintptr) error {
	r := waitSteps(ctx, &s.clock, func(nap, spin time.Duration) int {
		return int(driver.EventStep(s.state.ctx, ev, int64(nap), int64(spin)))
	})
	s.unmark(ev)
	if r == ctxDone {
		return ctx.Err()
	}
	return check("cuEventQuery", int32(r))
}

// unmark gives back an event of mark's: to the idle ones, or, once Close
// has destroyed those, to CUDA.
func (s *Stream) unmark(ev uintptr) {
	s.mu.Lock()
	if !s.marksClosed {
		s.marks = append(s.marks, ev)
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	driver.EventDestroy(s.state.ctx, ev)
}

// dropMarks destroys the idle events of the stream's waits; Close calls it.
func (s *Stream) dropMarks() {
	s.mu.Lock()
	marks := s.marks
	s.marks, s.marksClosed = nil, true
	s.mu.Unlock()
	for _, ev := range marks {
		driver.EventDestroy(s.state.ctx, ev)
	}
}

// WaitEvent makes the work queued on the stream from now on wait until e
// has happened; e may belong to another device. Waiting for an event
// recorded in a capture joins the stream to that capture; once the
// capture has ended, such an event stands for the graph's work, and
// WaitEvent returns ErrCapturing until e is recorded again. While the stream
// takes part in a capture, e must have been recorded in it: otherwise
// WaitEvent returns CUDA_ERROR_STREAM_CAPTURE_ISOLATION, as CUDA does, but
// leaves the capture as it was, where CUDA would invalidate it.
func (s *Stream) WaitEvent(e *Event) error {
	if err := s.usable(); err != nil {
		return err
	}
	if e == nil {
		return nilError("Event")
	}
	if err := e.use(); err != nil {
		return err
	}
	defer e.life.Release()
	h, err := s.enterAlone()
	if err != nil {
		return err
	}
	defer s.leaveAlone()
	c := e.capture.Load()
	if s.capture != nil || c != nil {
		captureOps.Lock()
		defer captureOps.Unlock()
	}
	if s.inCapture() && c != s.capture {
		// What CUDA returns, but CUDA also invalidates the capture,
		// which may be another goroutine's.
		return opErr("cuStreamWaitEvent", driverStatus(cudadrv.ERROR_STREAM_CAPTURE_ISOLATION))
	}
	if c != nil && c.ended.Load() {
		// e's latest record was a point of a capture that has ended
		// (set under captureOps, held): it stands for the graph's work,
		// which CUDA refuses to wait for with CUDA_ERROR_INVALID_VALUE.
		return errCapturedWork
	}
	r := driver.StreamWaitEvent(s.state.ctx, h, uintptr(e.h))
	if r == 0 && c != nil && !c.ended.Load() && !s.inCapture() {
		s.capture = c // joined
	}
	return check("cuStreamWaitEvent", r)
}

// WaitStream makes the work queued on s from now on wait until the work
// queued on other so far is done, on any device: a convenience over
// Event.Record on other and WaitEvent on s with an event of other's own
// (cudarc's join, cuda.core's Stream.wait(stream)). Waiting for a stream
// that takes part in a capture joins s to the capture, as WaitEvent does.
// Use an Event of your own to time the work or to wait for it elsewhere.
func (s *Stream) WaitStream(other *Stream) (err error) {
	defer func() {
		if err != nil {
			wrap(&err, "wait for stream of", other.Device())
		}
	}()
	if err := s.usable(); err != nil {
		return err
	}
	if _, err := other.use(); err != nil {
		return err
	}
	defer other.life.Release()
	other.afterMu.Lock()
	defer other.afterMu.Unlock()
	if other.after == nil {
		e, err := NewEvent(other.dev, &EventOptions{DisableTiming: true})
		if err != nil {
			return err
		}
		other.after = e
	}
	if err := other.after.record(other); err != nil {
		return err
	}
	return s.WaitEvent(other.after)
}

// AddCallback queues fn to run once the work queued before it is done, for
// a thread of CUDA's that waits for it (cuStreamAddCallback); fn gets the
// stream's error, nil when all went well. fn must not call CUDA: every
// function of this package called from fn returns ErrInCallback (calling
// cudart directly from there may deadlock). Hand such work to a goroutine
// instead. fn must not block for long: the stream waits for it. fn runs on
// a goroutine of the package's, locked to its OS thread, which CUDA's
// thread waits for. If fn panics, or calls runtime.Goexit (t.FailNow does),
// which ends that goroutine alone, the stream's next Synchronize, Wait or
// Query returns it as a *PanicError (with Goexit set for runtime.Goexit).
func (s *Stream) AddCallback(fn func(error)) error {
	if err := s.usable(); err != nil {
		return err
	}
	if fn == nil {
		return invalid("highlevel: AddCallback: nil function")
	}
	h, err := s.enter(s.dev)
	if err != nil {
		return err
	}
	defer s.leave()
	c := newCallback(callback{to: s, withErr: fn})
	if err := check("cuStreamAddCallback", driver.StreamAddCallback(s.state.ctx, h, uintptr(c))); err != nil {
		c.Delete()
		return err
	}
	return nil
}

// LaunchHostFunc queues fn to run once the work queued before it is done,
// for a thread of CUDA's that waits for it (cuLaunchHostFunc). The rules of
// AddCallback apply.
// While the stream is capturing (also when it joined another stream's
// capture), fn becomes a node of the graph being captured and runs each time
// the graph is launched; it stays alive as long as the graph, its
// instantiations or any of their launches do. A panic of such a node is
// reported by the stream that captured it.
func (s *Stream) LaunchHostFunc(fn func()) error {
	if err := s.usable(); err != nil {
		return err
	}
	if fn == nil {
		return invalid("highlevel: LaunchHostFunc: nil function")
	}
	h, err := s.enter(s.dev)
	if err != nil {
		return err
	}
	defer s.leave()
	deleteDeadHandles()
	c := newCallback(callback{to: s, fn: fn})
	var owned int32
	if err := check("cuLaunchHostFunc", driver.LaunchHostFunc(s.state.ctx, h, uintptr(c), &owned)); err != nil {
		if owned == 0 {
			c.Delete()
		}
		return err
	}
	return nil
}

// BeginCapture starts capturing the work queued on the stream into a graph,
// in the given mode (cuStreamBeginCapture). CaptureRelaxed is the one to
// use unless other goroutines' unsafe calls must be caught. In the stricter
// modes CUDA requires EndCapture on the OS thread that called
// BeginCapture, so the goroutine must stay locked to its thread
// (runtime.LockOSThread) from one to the other, as Capture does; and the
// calls CUDA refuses during the capture fail whoever makes them, the
// package's own included (cuMemAlloc behind Device.Alloc or a pool that
// grows, and possibly the loading of a kernel into a device at its first
// use there: launch kernels once before such a capture).
//
// The captured work runs when the graph is launched, not before, so
// waiting for it returns ErrCapturing: Wait, Done, Synchronize and Query
// of a stream that takes part in a capture (having begun it, or joined it
// by WaitEvent), and of an event recorded in one (see Event.Record). CUDA's
// captures are not safe for calls from several threads at once (driver 580
// corrupts its heap), so the package makes the calls on the streams of a
// capture one at a time, whichever goroutines make them.
//
// The legacy default stream cannot be captured: BeginCapture on it returns
// CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED. It waits for every blocking
// stream, which CUDA forbids while one captures, and the driver crashed
// where such work raced a capture: so while a capture the package began is
// in progress, every operation on the legacy default stream (nil,
// LegacyDefaultStream, and the copies and memsets without Async) returns
// ErrCapturing without reaching CUDA, but for the stream's Wait and Done,
// which wait for the captures to end, since a capture says nothing of the
// work they wait for. So do Device.Synchronize and the package's other
// device-wide waits, and, during a capture in CaptureGlobal mode, the
// calls that mode refuses (see CaptureGlobal). A copy the package stages
// through pinned buffers on the legacy default stream (see
// MemoryPointer.CopyFromHostPointer) is one operation: BeginCapture waits
// for those in progress. Programs that capture while other goroutines
// work use non-blocking streams (StreamOptions.NonBlocking) and
// CaptureRelaxed or CaptureThreadLocal.
func (s *Stream) BeginCapture(mode CaptureMode) error {
	return s.beginCapture(mode, 0, nil)
}

// beginCapture is BeginCapture, into graph g after the nodes deps where g
// is not 0 (Graph.Capture).
func (s *Stream) beginCapture(mode CaptureMode, g uintptr, deps []uintptr) error {
	if err := s.usable(); err != nil {
		return err
	}
	m, err := mode.cuda()
	if err != nil {
		return err
	}
	h, err := s.enterAlone()
	if err != nil {
		return err
	}
	defer s.leaveAlone()
	// Counted under staging's lock, so that a staged copy on the legacy
	// default stream, which stages only while none is counted, sees it
	// before it begins; and counted while it holds captureMu, so that
	// what finds captureMu held and waits for the captures' end
	// (afterCaptures) has one to wait for.
	staging.Lock()
	captures.Add(1)
	if mode == CaptureGlobal {
		staging.global++
	}
	staging.Unlock()
	captureMu.RLock()
	var tid int64
	if g == 0 {
		err = check("cuStreamBeginCapture", driver.StreamBeginCapture(s.state.ctx, h, m, &tid))
	} else {
		err = check("cuStreamBeginCaptureToGraph", driver.StreamBeginCaptureToGraph(s.state.ctx, h, m, &tid, g, depsPtr(deps), uintptr(len(deps))))
	}
	if err != nil || s.capturing.Swap(true) {
		if mode == CaptureGlobal {
			staging.Lock()
			staging.global--
			staging.Unlock()
		}
		captureMu.RUnlock()
		uncountCapture()
		return err
	}
	s.capture = &capture{into: g != 0}
	s.global.Store(mode == CaptureGlobal)
	if mode != CaptureRelaxed {
		s.captureThread.Store(int64(tid))
	}
	return nil
}

// endCapture counts the stream's capture as ended.
func (s *Stream) endCapture() {
	if s.capturing.Swap(false) {
		s.captureThread.Store(0)
		// The shim counts it as ended, and device-wide waits may go,
		// before uncountCapture wakes what waits for the captures' end:
		// waits on the legacy default stream, and the destroys
		// DestroyOutsideCaptures put off.
		captureEnded(s.global.Swap(false))
		captureMu.RUnlock()
		uncountCapture()
	}
}

// EndCapture ends the capture BeginCapture started and returns its graph.
func (s *Stream) EndCapture() (*Graph, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	h, err := s.enterAlone()
	if errors.Is(err, ErrClosed) {
		_, err := s.endClosed(false)
		return nil, err
	}
	if err != nil {
		return nil, err
	}
	defer reapStreams()
	defer s.leaveAlone()
	if s.capture != nil && s.capture.into && !s.capture.ended.Load() {
		return nil, errIntoCapture
	}
	g, held, err := s.end(h)
	if err != nil {
		unholdAll(held)
		return nil, err
	}
	return &Graph{h: cudadrv.Graph(g), dev: s.dev, ctx: s.state.ctx, held: held}, nil
}

// errIntoCapture is EndCapture's error for a capture Graph.Capture began,
// which it ends itself.
var errIntoCapture = fmt.Errorf("%w: the capture is into a graph (Graph.Capture), which ends it", ErrCapturing)

// endInto ends a capture Graph.Capture began into the program's graph, and
// returns the nodes the capture ended with and what the capture held.
func (s *Stream) endInto() ([]uintptr, []holder, error) {
	h, err := s.enterAlone()
	if errors.Is(err, ErrClosed) {
		held, err := s.endClosed(true)
		return nil, held, err
	}
	if err != nil {
		return nil, nil, err
	}
	defer reapStreams()
	defer s.leaveAlone()
	sinks := make([]uintptr, 64)
	var n uintptr
	serr := check("cuStreamGetCaptureInfo", driver.StreamCaptureSinks(s.state.ctx, h, &sinks[0], uintptr(len(sinks)), &n))
	if serr == nil && int(n) > len(sinks) {
		sinks = make([]uintptr, n) // the capture is still on: ask again
		serr = check("cuStreamGetCaptureInfo", driver.StreamCaptureSinks(s.state.ctx, h, &sinks[0], uintptr(len(sinks)), &n))
	}
	_, held, err := s.end(h)
	if err = errors.Join(serr, err); err != nil {
		return nil, held, err
	}
	return sinks[:n], held, nil
}

// end ends the capture on stream h, s's handle, and returns its graph and
// what the graph holds; s.joins is held alone. Once a capture is over, the
// streams Close left to it are destroyed.
func (s *Stream) end(h uintptr) (uintptr, []holder, error) {
	var g uintptr
	var held []holder
	captureOps.Lock()
	r := driver.StreamEndCapture(s.state.ctx, h, &g, int64(s.captureThread.Load()))
	// The capture is over, unless it was ended from another thread than
	// began it (the strict modes): it goes on, and may be ended from that
	// thread still.
	over := r != int32(cudadrv.ERROR_STREAM_CAPTURE_WRONG_THREAD)
	if over && s.capture != nil {
		s.capture.ended.Store(true)
		for h := range s.capture.held {
			held = append(held, h)
		}
		for _, e := range s.capture.dead {
			driver.EventDestroy(e.ctx, uintptr(e.ev))
		}
		s.capture = nil
	}
	captureOps.Unlock()
	if over {
		s.endCapture()
	}
	return g, held, check("cuStreamEndCapture", r)
}

// endClosed ends the capture BeginCapture started on s, which Close found
// capturing and left open to it: the graph is discarded, and the error is
// ErrClosed. A capture into the program's graph (into) leaves the graph,
// and returns what the capture held for it.
func (s *Stream) endClosed(into bool) ([]holder, error) {
	defer reapStreams()
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	if !s.capturedClose || !s.capturing.Load() {
		return nil, ErrClosed
	}
	s.joins.Lock()
	defer s.joins.Unlock()
	g, held, err := s.end(uintptr(s.h))
	if into {
		// The graph is Graph.Capture's, which keeps it and what the
		// capture held.
		return held, errors.Join(ErrClosed, err)
	}
	unholdAll(held)
	if err != nil {
		return nil, errors.Join(ErrClosed, err)
	}
	driver.GraphDestroy(s.state.ctx, g)
	return nil, ErrClosed
}

// Close destroys the stream; work queued on it still runs. Operations in
// progress on it finish first; later ones return ErrClosed, and so does a
// second Close. If memory pools kept blocks for the stream, or allocated
// stream-ordered memory on it, Close waits for the stream's work, so that
// the blocks can serve the legacy default stream (see MemoryPool) and the
// memory can be freed. A stream that is capturing (BeginCapture, or joined
// to another stream's capture by WaitEvent) is destroyed once the capture
// ends, never inside it, and only then waited for; EndCapture on it ends
// its capture, discards the graph and returns ErrClosed. Closing a default
// or external stream only makes the Stream unusable.
func (s *Stream) Close() error {
	if err := s.usable(); err != nil {
		return err
	}
	if inCallback() { // before closeMu, held by a Close that may wait for the callback
		return ErrInCallback
	}
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	if err := closing(&s.life); err != nil {
		return err
	}
	s.dropMarks()
	s.afterMu.Lock()
	if s.after != nil {
		s.after.Close()
	}
	s.afterMu.Unlock()
	err := s.destroy()
	if errors.Is(err, ErrCapturing) {
		s.capturedClose = true
		closedCaptures.Lock()
		closedCaptures.streams = append(closedCaptures.streams, s)
		closedCaptures.Unlock()
		return nil
	}
	return err
}

// destroy waits for the stream's work when pools need that, destroys the
// stream when Close should, and gives the pools' blocks of the stream to
// the legacy default stream's free lists. While the stream is capturing it
// does nothing and returns ErrCapturing. closeMu is held.
func (s *Stream) destroy() error {
	// Closed, s takes part in no more captures; one it takes part in
	// still is ended first, and no call may race its operations.
	s.joins.Lock()
	capturing := s.inCapture()
	s.joins.Unlock()
	if capturing {
		return ErrCapturing
	}
	var err error
	if sync := s.pooled.Load(); sync || s.owned {
		err = check("cuStreamDestroy", driver.StreamClose(s.state.ctx, uintptr(s.h), cbool(sync), cbool(s.owned)))
		if errors.Is(err, ErrCapturing) {
			return err
		}
	}
	s.endCapture()
	s.settlePools()
	return err
}

// reapStreams destroys the streams Close left to captures that have ended.
func reapStreams() {
	closedCaptures.Lock()
	streams := closedCaptures.streams
	closedCaptures.streams = nil
	closedCaptures.Unlock()
	var keep []*Stream
	for _, s := range streams {
		s.closeMu.Lock()
		if errors.Is(s.destroy(), ErrCapturing) {
			keep = append(keep, s)
		} else {
			s.capturedClose = false
		}
		s.closeMu.Unlock()
	}
	if len(keep) > 0 {
		closedCaptures.Lock()
		closedCaptures.streams = append(closedCaptures.streams, keep...)
		closedCaptures.Unlock()
	}
}

// settlePools moves the pools' blocks of the stream, whose work is done, to
// the legacy default stream.
func (s *Stream) settlePools() {
	s.mu.Lock()
	s.settled.Store(true)
	pools := s.pools
	s.pools = nil
	s.mu.Unlock()
	for _, a := range pools {
		a.settleStream(s)
	}
}
