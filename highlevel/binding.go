package highlevel

import (
	"runtime"
	"sync/atomic"
)

// The states of a Borrow: Keep and Return wait for each other, with
// atomics rather than a mutex, whose Lock would move a Borrow to the heap.
const (
	borrowOpen int32 = iota
	borrowKeeping
	borrowReturned
)

// A Borrow lends streams and memory of the package's to a call into
// another CUDA library: cuBLAS, cuDNN, NCCL, a program's own C. The call
// takes the stream's handle (Stream.Handle) and the memory's address
// (MemoryPointer.Ptr, Array.Ptr) and queues work on them; until Return,
// Close of the streams and Free of the memory wait, no capture takes the
// streams in or out, and a capture a stream takes part in keeps the
// memory for its graph, as the package's own operations do. So the call
// never reaches a destroyed stream or freed memory. highlevel/linalg and
// highlevel/collective bind their libraries this way.
//
// As Unlock follows Lock, Return follows each Borrow that returned no
// error, once the call has queued its work; until then the goroutine must
// not close the streams, free the memory, or begin or end a capture on
// them, which would wait for the Borrow. A Borrow is for one call and one
// goroutine; its methods are safe to call again after Return, and do
// nothing then.
type Borrow struct {
	state atomic.Int32 // open, keeping or returned
	// The streams and memory, in arrays rather than slices of the arrays,
	// so that a Borrow that does not escape its caller stays on its stack
	// (collective's Run allocates nothing).
	nss, nmem int
	ssBuf     [4]streamOn
	ssMore    []streamOn
	memBuf    [8]*Memory
	memMore   []*Memory
}

// Borrow lends s, a stream of device d (nil: d's legacy default stream),
// and the memory mems to a call into another CUDA library that queues
// work on s. It returns an error, and lends nothing, for a closed stream
// (ErrClosed), freed memory (ErrFreed), the zero MemoryPointer (ErrNil),
// a stream of another device, or in a stream's host function
// (ErrInCallback). See the type's documentation.
func (s *Stream) Borrow(d Device, mems ...MemoryPointer) (b *Borrow, err error) {
	b = new(Borrow) // inlined, so that it may stay on the caller's stack
	if err = b.begin(nil, nil, s, d, mems); err != nil {
		b = nil
	}
	return
}

// BorrowAll is Stream.Borrow for a call that queues work on several
// streams at once, such as a group of NCCL calls over several devices:
// work for devs[i] on streams[i], each pair once. Unlike Borrows one
// after the other, which may wait for each other where the streams take
// part in captures, it takes the streams together. A capture any of the
// streams takes part in keeps all of mems.
func BorrowAll(streams []*Stream, devs []Device, mems ...MemoryPointer) (b *Borrow, err error) {
	b = new(Borrow) // inlined, so that it may stay on the caller's stack
	if err = b.begin(streams, devs, nil, 0, mems); err != nil {
		b = nil
	}
	return
}

// set records the streams of BorrowAll.
func (b *Borrow) set(streams []*Stream, devs []Device) error {
	if len(streams) != len(devs) {
		return invalid("highlevel: %d streams for %d devices", len(streams), len(devs))
	}
	b.nss = len(streams)
	if b.nss > len(b.ssBuf) {
		b.ssMore = make([]streamOn, b.nss)
	}
	ss := b.streams()
	for i, s := range streams {
		ss[i] = streamOn{s, devs[i]}
	}
	return nil
}

// streams returns the borrowed streams.
func (b *Borrow) streams() []streamOn {
	if b.ssMore != nil {
		return b.ssMore
	}
	return b.ssBuf[:b.nss]
}

// memory returns the borrowed memory.
func (b *Borrow) memory() []*Memory {
	if b.memMore != nil {
		return b.memMore
	}
	return b.memBuf[:b.nmem]
}

// begin takes the memory, then the streams: those of BorrowAll, or s on
// d where streams is nil. On an error it takes nothing.
func (b *Borrow) begin(streams []*Stream, devs []Device, s *Stream, d Device, mems []MemoryPointer) error {
	if streams == nil {
		b.nss, b.ssBuf[0] = 1, streamOn{s, d}
	} else if err := b.set(streams, devs); err != nil {
		return err
	}
	ss := b.streams()
	for _, so := range ss {
		if so.s != nil && so.s.state == nil {
			return so.s.usable()
		}
	}
	if len(mems) > len(b.memBuf) {
		b.memMore = make([]*Memory, 0, len(mems))
	}
	for _, p := range mems {
		err := errNoMemory
		if p.mem != nil {
			err = p.mem.live()
		}
		if err == nil && p.mem.graph != nil {
			err = errGraphMemory
		}
		if err == nil && !p.mem.life.Acquire() {
			err = ErrFreed
		}
		if err != nil {
			b.releaseMemory()
			return err
		}
		if b.memMore != nil {
			b.memMore = append(b.memMore, p.mem)
		} else {
			b.memBuf[b.nmem] = p.mem
		}
		b.nmem++
	}
	var err error
	if len(ss) == 1 {
		_, err = ss[0].s.enter(ss[0].dev)
	} else {
		err = enterAll(ss)
	}
	if err != nil {
		b.releaseMemory()
		return err
	}
	for _, so := range ss {
		so.s.keep(b.memory()...)
	}
	return nil
}

// Keep makes each capture the borrowed streams take part in hold h for
// its graph, as the memory of the Borrow is held: a handle of another
// CUDA library whose workspace the captured work uses, for one. The
// capture calls h.Hold once, however often Keep is called with h in it (h
// is compared as an interface value, so it should be a pointer); each
// instantiation of the graph calls it again; each Hold is matched by one
// h.Unhold once its holder lets h go (the Graph or GraphExec is closed or
// updated to another graph, or the capture fails). Unhold may run on any
// goroutine, holding locks of the package's, so it must neither block
// nor call the package. Where no borrowed stream takes part in a capture,
// Keep does nothing and allocates nothing.
func (b *Borrow) Keep(h Holder) {
	if b == nil || h == nil {
		return
	}
	if !b.take(borrowKeeping) {
		return
	}
	defer b.state.Store(borrowOpen)
	for _, so := range b.streams() {
		if so.s != nil && so.s.inCapture() {
			so.s.capture.keep(heldFor{h})
		}
	}
}

// Return ends the Borrow: the streams may close and the memory be freed
// again. A second Return does nothing.
func (b *Borrow) Return() {
	if b == nil {
		return
	}
	if !b.take(borrowReturned) {
		return
	}
	if ss := b.streams(); len(ss) == 1 {
		ss[0].s.leave()
	} else {
		leaveAll(ss)
	}
	b.releaseMemory()
}

// take moves an open Borrow to state to, waiting while a Keep runs; it
// reports false for a returned one.
func (b *Borrow) take(to int32) bool {
	for {
		switch b.state.Load() {
		case borrowReturned:
			return false
		case borrowOpen:
			if b.state.CompareAndSwap(borrowOpen, to) {
				return true
			}
		default:
			runtime.Gosched()
		}
	}
}

func (b *Borrow) releaseMemory() {
	for _, m := range b.memory() {
		m.life.Release()
	}
	b.nmem, b.memMore = 0, nil
}

// DoRestoring is Device.Do for fn that puts back the device it found
// current where it succeeds, as NCCL's calls do (cudaGetDevice, then
// cudaSetDevice of that device once done), and that may change the
// device meanwhile. Where fn returns nil, a thread that had d's context
// or none, which is the rule once the package has run there, is left as
// fn left it, with one cgo call instead of Do's two; where fn fails or
// panics, the thread's context is put back as Do puts it back. Such a
// library needs a context current all the same: on a thread without one,
// the device cudaGetDevice reports is device 0, whose context the library
// would make, in a process that may have no use for it.
func (d Device) DoRestoring(fn func() error) error {
	return d.do(fn, true)
}

// A Holder is what a capture may hold for its graph besides memory
// (Borrow.Keep): a handle of another CUDA library whose internal
// workspace the captured work uses, for one.
type Holder interface {
	Hold()
	Unhold()
}

// heldFor is a Holder as the package's captures hold it (holder).
type heldFor struct{ h Holder }

func (f heldFor) hold()   { f.h.Hold() }
func (f heldFor) unhold() { f.h.Unhold() }

// Managed reports whether p's memory is managed memory (Managed), which
// every device may use.
func (p MemoryPointer) Managed() bool { return p.mem != nil && p.mem.managed }
