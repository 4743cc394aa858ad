package highlevel

import (
	"errors"
	"unsafe"

	"github.com/gocuda/cuda/cudadrv"
	lifepkg "github.com/gocuda/cuda/highlevel/internal/life"
)

// The methods below are for highlevel's subpackages (lifepkg.Key): a
// subpackage that hands a Stream's handle or the address of memory to
// another CUDA library (highlevel/linalg does, for cuBLAS, cuSOLVER and
// cuSPARSE; highlevel/collective, for NCCL) holds them for its call as
// the package's own operations hold theirs, so that Close and Free wait
// for the call, a capture keeps for its graph the memory the call names,
// and no call reaches a destroyed handle. As Unlock follows Lock, Leave
// follows each Enter, and Release each Acquire, that returned a nil error,
// once the call has queued its work. Without the subpackages' key they do
// nothing and return errNoKey.

var errNoKey = errors.New("highlevel: the method is for highlevel's subpackages")

// Enter begins a call into another CUDA library that queues work on s for
// device d; it is for highlevel's subpackages. It returns the stream's
// handle, that of the legacy default stream (0) for a nil Stream, or an
// error: ErrClosed for a closed stream, ErrInCallback from a host function
// a stream runs, another for a zero Stream or a stream of another device.
// Until Leave, Close of s waits and no capture takes s in or out, so the
// goroutine must not close s, begin or end a capture on it, or Enter it
// again.
func (s *Stream) Enter(k lifepkg.Key, d Device) (cudadrv.Stream, error) {
	switch {
	case s != nil && s.state == nil:
		return 0, s.usable()
	case !k.OK():
		return 0, errNoKey
	}
	h, err := s.enter(d)
	return cudadrv.Stream(h), err
}

// DoRestoring is Do for fn that puts back the device it found current
// where it succeeds, as NCCL's calls do (cudaGetDevice, then cudaSetDevice
// of that device once done; a group whose launch failed does not), and
// that may change the device meanwhile; it is for highlevel's
// subpackages. Where fn returns nil, a thread that had d's context or
// none, which is the rule once the package has run there, is left as fn
// left it, with one cgo call instead of Do's two; where fn fails or
// panics, the thread's context is put back as Do puts it back. Such a
// library needs a context current all the same: on a thread without one,
// the device cudaGetDevice reports is device 0, whose context the library
// would make, in a process that may have no use for it.
func (d Device) DoRestoring(k lifepkg.Key, fn func() error) error {
	if !k.OK() {
		return errNoKey
	}
	return d.do(fn, true)
}

// EnterAll is Enter for a call that queues work on several streams at once
// (a group of NCCL calls over several devices), work for devs[i] on
// streams[i], each pair once: unlike Enters one after the other, it holds
// the lock of captures once where several of the streams take part in
// captures, and takes the streams in one order whatever the order given.
// Each stream's handle is its Handle. LeaveAll(k, streams, devs) ends it.
func EnterAll(k lifepkg.Key, streams []*Stream, devs []Device) error {
	for _, s := range streams {
		if s != nil && s.state == nil {
			return s.usable()
		}
	}
	if !k.OK() {
		return errNoKey
	}
	return enterAll(streamsOn(streams, devs))
}

// LeaveAll ends the call EnterAll began.
func LeaveAll(k lifepkg.Key, streams []*Stream, devs []Device) {
	if k.OK() {
		leaveAll(streamsOn(streams, devs))
	}
}

func streamsOn(streams []*Stream, devs []Device) []streamOn {
	ss := make([]streamOn, len(streams))
	for i, s := range streams {
		ss[i] = streamOn{s, devs[i]}
	}
	return ss
}

// Leave ends the call Enter began.
func (s *Stream) Leave(k lifepkg.Key) {
	if k.OK() {
		s.leave()
	}
}

// Keep makes the capture s takes part in, if any, hold p's memory for its
// graph, as the package's own operations on a capturing stream hold the
// memory they name; it is called between Enter and Leave.
func (s *Stream) Keep(k lifepkg.Key, p MemoryPointer) {
	if k.OK() && p.mem != nil {
		s.keep(p.mem)
	}
}

// A Holder is what a capture may hold for its graph besides memory, for
// highlevel's subpackages (Stream.KeepHolder): a handle of another CUDA
// library whose internal workspace the captured work uses, for one.
type Holder interface {
	Hold()
	Unhold()
}

// KeepHolder makes the capture s takes part in, if any, hold h for its
// graph, as Keep holds memory: the capture calls h.Hold once, however
// often KeepHolder is called with h in it (h is compared as an interface
// value, so it should be a pointer), the graph's instantiations call it
// again, each, as does a capture that launches one; and each Hold is
// matched by one h.Unhold once its holder lets h go: the Graph or
// GraphExec is closed (or updated to another graph), or the capture fails.
// Launches of the graph may still be in flight then, as for memory a graph
// held. Unhold may run on any goroutine, holding locks of the package's,
// so it must neither block nor call the package. KeepHolder is called
// between Enter and Leave; while s takes part in no capture it does
// nothing, and allocates nothing.
func (s *Stream) KeepHolder(k lifepkg.Key, h Holder) {
	if k.OK() && h != nil && s != nil && s.inCapture() {
		s.capture.keep(heldFor{h})
	}
}

// heldFor is a Holder as the package's captures hold it (holder).
type heldFor struct{ h Holder }

func (f heldFor) hold()   { f.h.Hold() }
func (f heldFor) unhold() { f.h.Unhold() }

// Acquire begins a call into another CUDA library on p's memory; it is for
// highlevel's subpackages. Until Release, Free of the memory waits. It
// returns p's address, or an error: ErrFreed once the memory is freed,
// one wrapping ErrNil for the zero MemoryPointer.
func (p MemoryPointer) Acquire(k lifepkg.Key) (unsafe.Pointer, error) {
	switch {
	case p.mem == nil:
		return nil, errNoMemory
	case !k.OK():
		return nil, errNoKey
	case !p.mem.life.Acquire():
		return nil, ErrFreed
	}
	return p.Ptr(), nil
}

// Release ends the call Acquire began.
func (p MemoryPointer) Release(k lifepkg.Key) {
	if k.OK() && p.mem != nil {
		p.mem.life.Release()
	}
}

// Managed reports whether p's memory is managed memory
// (Managed(d).Alloc), which every device may use.
func (p MemoryPointer) Managed() bool { return p.mem != nil && p.mem.managed }
