package highlevel

// #include "shim.h"
import "C"

import (
	"context"
	"fmt"
	"runtime/cgo"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/gocuda/cuda/cudart"
)

// A Stream is a CUDA stream of a device: work queued on it runs in order.
// Every asynchronous operation of the package takes a *Stream; nil means
// the legacy default stream of the device the operation's memory or object
// belongs to. A Stream is safe for use by several goroutines.
type Stream struct {
	h     cudart.Stream
	dev   Device
	ctx   unsafe.Pointer
	owned bool // Close destroys it

	closed atomic.Bool

	mu       sync.Mutex
	captured []cgo.Handle // host functions queued while capturing
}

// StreamOptions are the options of NewStream; the zero value gives a
// blocking stream (one that synchronizes with the legacy default stream) of
// default priority.
type StreamOptions struct {
	// NonBlocking makes the stream run concurrently with the legacy default
	// stream (cudaStreamNonBlocking).
	NonBlocking bool
	// Priority is the stream's priority: lower numbers run first. The
	// device's range is from its least priority, 0, down to its greatest
	// (-5 on current GPUs: see StreamPriorityRange); values outside are
	// clamped.
	Priority int
}

// NewStream creates a stream on d. opts may be nil.
func NewStream(d Device, opts *StreamOptions) (*Stream, error) {
	if opts == nil {
		opts = &StreamOptions{}
	}
	ctx, err := d.context()
	if err != nil {
		return nil, err
	}
	var flags C.uint
	if opts.NonBlocking {
		flags = C.cudaStreamNonBlocking
	}
	var h C.uintptr_t
	if err := check("cudaStreamCreate", C.hl_stream_create(ctx, &h, flags, C.int(opts.Priority))); err != nil {
		return nil, err
	}
	return &Stream{h: cudart.Stream(h), dev: d, ctx: ctx, owned: true}, nil
}

// StreamPriorityRange returns d's least and greatest stream priorities
// (0 and -5 on current GPUs).
func StreamPriorityRange(d Device) (least, greatest int, err error) {
	ctx, err := d.context()
	if err != nil {
		return 0, 0, err
	}
	var l, g C.int
	err = check("cudaDeviceGetStreamPriorityRange", C.hl_stream_priority_range(ctx, &l, &g))
	return int(l), int(g), err
}

// LegacyDefaultStream returns d's legacy default stream (stream 0), which
// synchronizes with every blocking stream of the device. Close does nothing
// to it.
func LegacyDefaultStream(d Device) (*Stream, error) {
	return ExternalStream(0, d)
}

// PerThreadDefaultStream returns d's per-thread default stream
// (cudaStreamPerThread). Which OS thread's stream that is depends on the
// thread that issues each operation, and goroutines move between threads;
// only a goroutine locked to its thread (Device.Do) gets one predictable
// stream. Close does nothing to it.
func PerThreadDefaultStream(d Device) (*Stream, error) {
	return ExternalStream(cudart.Stream(cudart.StreamPerThread), d)
}

// ExternalStream wraps a stream of device d that something else created and
// will destroy (CuPy's ExternalStream): Close only makes the Stream
// unusable.
func ExternalStream(h cudart.Stream, d Device) (*Stream, error) {
	ctx, err := d.context()
	if err != nil {
		return nil, err
	}
	return &Stream{h: h, dev: d, ctx: ctx}, nil
}

// Handle returns the CUDA stream, for use with cudart.
func (s *Stream) Handle() cudart.Stream {
	if s == nil {
		return 0
	}
	return s.h
}

// Device returns the stream's device.
func (s *Stream) Device() Device { return s.dev }

// handleOn returns the stream's handle for an operation on device d: the
// legacy default stream for a nil Stream, and an error for a closed stream
// or one of another device.
func (s *Stream) handleOn(d Device) (cudart.Stream, error) {
	if s == nil {
		return 0, nil
	}
	if s.closed.Load() {
		return 0, ErrClosed
	}
	if s.dev != d {
		return 0, fmt.Errorf("highlevel: stream of %v used for work on %v", s.dev, d)
	}
	return s.h, nil
}

// use returns the handle and context of an open stream.
func (s *Stream) use() (C.uintptr_t, unsafe.Pointer, error) {
	if s == nil {
		return 0, nil, fmt.Errorf("highlevel: nil Stream")
	}
	if s.closed.Load() {
		return 0, nil, ErrClosed
	}
	return C.uintptr_t(s.h), s.ctx, nil
}

// Synchronize waits until the stream has done all its work. It holds the
// calling goroutine's OS thread while it waits; Wait does not.
func (s *Stream) Synchronize() error {
	h, ctx, err := s.use()
	if err != nil {
		return err
	}
	return check("cudaStreamSynchronize", C.hl_stream_synchronize(ctx, h))
}

// Query reports whether the stream has done all its work, without waiting
// (CuPy's Stream.done).
func (s *Stream) Query() (bool, error) {
	h, ctx, err := s.use()
	if err != nil {
		return false, err
	}
	return ready("cudaStreamQuery", C.hl_stream_query(ctx, h))
}

// Done returns a channel that is closed when the work queued on the stream
// so far is done, for use in select. It records an event on the stream; if
// that fails (the stream is closed, or a fault), the channel is closed at
// once and Wait or Query report the error.
func (s *Stream) Done() <-chan struct{} {
	w, err := s.watch()
	if err != nil {
		return closedChan
	}
	return w.done
}

// Wait waits until the work queued on the stream so far is done, or ctx is
// done; then it returns ctx's error and leaves the GPU's work alone. Waiting
// holds no OS thread: any number of goroutines may wait at once.
func (s *Stream) Wait(ctx context.Context) error {
	w, err := s.watch()
	if err != nil {
		return err
	}
	return w.wait(ctx)
}

// watch records an event of the waiter's own on s and watches it.
func (s *Stream) watch() (*waitReq, error) {
	h, ctx, err := s.use()
	if err != nil {
		return nil, err
	}
	var e C.uintptr_t
	if err := check("cudaEventCreateWithFlags", C.hl_event_create(ctx, &e, C.cudaEventDisableTiming)); err != nil {
		return nil, err
	}
	if err := check("cudaEventRecord", C.hl_event_record(ctx, e, h)); err != nil {
		C.hl_event_destroy(ctx, e)
		return nil, err
	}
	return watch(ctx, cudart.Event(e), true), nil
}

// Record records e on the stream, or a new event when e is nil, and returns
// the event.
func (s *Stream) Record(e *Event) (*Event, error) {
	if _, _, err := s.use(); err != nil {
		return nil, err
	}
	if e == nil {
		var err error
		if e, err = NewEvent(s.dev, nil); err != nil {
			return nil, err
		}
	}
	return e, e.Record(s)
}

// WaitEvent makes the work queued on the stream from now on wait until e
// has happened; e may belong to another device.
func (s *Stream) WaitEvent(e *Event) error {
	h, ctx, err := s.use()
	if err != nil {
		return err
	}
	if err := e.live(); err != nil {
		return err
	}
	return check("cudaStreamWaitEvent", C.hl_stream_wait_event(ctx, h, C.uintptr_t(e.h)))
}

// AddCallback queues fn to run on a thread of CUDA's once the work queued
// before it is done (cudaStreamAddCallback); fn gets the stream's error, nil
// when all went well. fn must not call CUDA: every function of this package
// called from fn returns ErrInCallback (calling cudart directly from there
// may deadlock). Hand such work to a goroutine instead. fn must not block
// for long: the stream waits for it.
func (s *Stream) AddCallback(fn func(error)) error {
	h, ctx, err := s.use()
	if err != nil {
		return err
	}
	c := cgo.NewHandle(callback{withErr: fn})
	if err := check("cudaStreamAddCallback", C.hl_stream_add_callback(ctx, h, C.uintptr_t(c))); err != nil {
		c.Delete()
		return err
	}
	return nil
}

// LaunchHostFunc queues fn to run on a thread of CUDA's once the work queued
// before it is done (cudaLaunchHostFunc). The rules of AddCallback apply.
// While the stream is capturing, fn becomes a node of the graph and runs
// each time the graph is launched.
func (s *Stream) LaunchHostFunc(fn func()) error {
	h, ctx, err := s.use()
	if err != nil {
		return err
	}
	c := cgo.NewHandle(callback{fn: fn})
	var capturing C.int
	if err := check("cudaLaunchHostFunc", C.hl_launch_host_func(ctx, h, C.uintptr_t(c), &capturing)); err != nil {
		c.Delete()
		return err
	}
	if capturing != 0 {
		s.mu.Lock()
		s.captured = append(s.captured, c)
		s.mu.Unlock()
	}
	return nil
}

// BeginCapture starts capturing the work queued on the stream into a graph,
// in relaxed mode (cudaStreamCaptureModeRelaxed): Go may run any goroutine
// on the capturing OS thread, and the package's waiter queries events while
// a capture runs, which the stricter modes would turn into errors.
func (s *Stream) BeginCapture() error {
	h, ctx, err := s.use()
	if err != nil {
		return err
	}
	return check("cudaStreamBeginCapture", C.hl_stream_begin_capture(ctx, h, C.cudaStreamCaptureModeRelaxed))
}

// EndCapture ends the capture BeginCapture started and returns its graph.
func (s *Stream) EndCapture() (*Graph, error) {
	h, ctx, err := s.use()
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	captured := s.captured
	s.captured = nil
	s.mu.Unlock()
	var g C.uintptr_t
	if err := check("cudaStreamEndCapture", C.hl_stream_end_capture(ctx, h, &g)); err != nil {
		for _, c := range captured {
			c.Delete()
		}
		return nil, err
	}
	return &Graph{h: cudart.Graph(g), dev: s.dev, ctx: ctx, funcs: newHostFuncs(captured)}, nil
}

// Close destroys the stream; work queued on it still runs. Closing a
// default or external stream only makes the Stream unusable. A second
// Close does nothing and returns nil.
func (s *Stream) Close() error {
	if s == nil || !s.closed.CompareAndSwap(false, true) || !s.owned {
		return nil
	}
	return check("cudaStreamDestroy", C.hl_stream_destroy(s.ctx, C.uintptr_t(s.h)))
}
