package collective

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"time"
	"unsafe"

	"github.com/gocuda/cuda/cudart"
	"github.com/gocuda/cuda/highlevel"
	"github.com/gocuda/cuda/highlevel/internal/buffer"
	"github.com/gocuda/cuda/highlevel/internal/refusal"
	"github.com/gocuda/cuda/nccl"
)

// Elem is the element types NCCL reduces and moves, which the type
// parameter of the collectives is constrained to, so that a type NCCL
// lacks (int16, bool, complex64, a struct) does not compile: int8, uint8,
// int32, uint32, int64, uint64, int and uint (64 bits on the platforms the
// module builds for), float32 and float64, and types defined over them.
type Elem interface {
	~int8 | ~uint8 | ~int32 | ~uint32 | ~int64 | ~uint64 | ~int | ~uint | ~float32 | ~float64
}

// dataType returns NCCL's type of T.
func dataType[T Elem]() nccl.DataType {
	switch reflect.TypeFor[T]().Kind() {
	case reflect.Int8:
		return nccl.Int8
	case reflect.Uint8:
		return nccl.Uint8
	case reflect.Int32:
		return nccl.Int32
	case reflect.Uint32:
		return nccl.Uint32
	case reflect.Int64, reflect.Int:
		return nccl.Int64
	case reflect.Uint64, reflect.Uint:
		return nccl.Uint64
	case reflect.Float32:
		return nccl.Float32
	case reflect.Float64:
		return nccl.Float64
	}
	panic("collective: unreachable: " + reflect.TypeFor[T]().String()) // Elem allows no other kind
}

// A ReduceOp is the reduction of AllReduce, Reduce and ReduceScatter.
type ReduceOp int

//go:generate go run golang.org/x/tools/cmd/stringer -type=ReduceOp -output=zstring.go

const (
	Sum  ReduceOp = iota // the sum (ncclSum)
	Prod                 // the product (ncclProd)
	Max                  // the maximum (ncclMax)
	Min                  // the minimum (ncclMin)
	Avg                  // the mean over the ranks (ncclAvg); integers are divided, rounding as NCCL does
)

func (o ReduceOp) nccl() (nccl.RedOp, error) {
	switch o {
	case Sum:
		return nccl.Sum, nil
	case Prod:
		return nccl.Prod, nil
	case Max:
		return nccl.Max, nil
	case Min:
		return nccl.Min, nil
	case Avg:
		return nccl.Avg, nil
	}
	return 0, fmt.Errorf("%w: %v is no reduction", ErrConfig, o)
}

// A Call is one collective or point-to-point operation on one rank, made by
// AllReduce, Broadcast, Reduce, AllGather, ReduceScatter, Send or Recv and
// queued by Run. Making it checks its arguments and queues nothing; an
// argument that cannot work makes a Call whose Run returns the error. The
// zero Call is not usable: Run returns an error wrapping highlevel.ErrNil.
type Call struct {
	op     string
	comm   *Comm
	s      *highlevel.Stream
	arrays [2]buffer.Buffer // the send and receive buffers; the zero Buffer for none
	// sendAt is where send is in place, in bytes from recv, as NCCL
	// defines it: 0 (the same array), this rank's place in recv
	// (AllGather), or minus recv's in send (ReduceScatter).
	sendAt int
	err    error
	// queue makes NCCL's call: p are the addresses of arrays.
	queue func(p [2]unsafe.Pointer, s cudart.Stream) error
}

// newCall begins a Call of op on c, checking what every call needs.
func newCall(op string, c *Comm, s *highlevel.Stream) Call {
	call := Call{op: op, comm: c, s: s}
	call.err = c.usable()
	return call
}

// fail sets the call's error, unless it has one.
func (call *Call) fail(format string, args ...any) {
	if call.err == nil {
		call.err = fmt.Errorf("%w: "+format, append([]any{ErrConfig}, args...)...)
	}
}

// array checks that a, the argument name, is not nil and holds n elements
// (any number when n < 0).
func array[T Elem](call *Call, name string, a *highlevel.Array[T], n int) {
	switch {
	case a == nil:
		call.fail("nil %s", name)
	case n >= 0 && a.Len() != n:
		call.fail("%s holds %d elements, want %d", name, a.Len(), n)
	}
}

func (call *Call) rank(name string, r int) {
	if call.err == nil && (r < 0 || r >= call.comm.size) {
		call.fail("%s %d: want 0 to %d", name, r, call.comm.size-1)
	}
}

func (call *Call) redOp(o ReduceOp) nccl.RedOp {
	r, err := o.nccl()
	if err != nil && call.err == nil {
		call.err = err
	}
	return r
}

// AllReduce reduces send over every rank with op and leaves the result in
// recv on every rank (ncclAllReduce). send and recv hold as many elements;
// they may be the same array (in place).
func AllReduce[T Elem](s *highlevel.Stream, c *Comm, send, recv *highlevel.Array[T], op ReduceOp) Call {
	call := newCall("all-reduce", c, s)
	array(&call, "send", send, -1)
	array(&call, "recv", recv, send.Len())
	o := call.redOp(op)
	if call.err != nil {
		return call
	}
	n, dt, h := uint64(send.Len()), dataType[T](), c.h
	call.arrays = [2]buffer.Buffer{buffer.Of(send), buffer.Of(recv)}
	call.queue = func(p [2]unsafe.Pointer, s cudart.Stream) error {
		return nccl.AllReduce(p[0], p[1], n, dt, o, h, s)
	}
	return call
}

// Broadcast copies send of rank root to recv of every rank (ncclBroadcast).
// send matters on the root alone, where it holds as many elements as recv
// or is recv itself (in place); elsewhere it may be nil.
func Broadcast[T Elem](s *highlevel.Stream, c *Comm, send, recv *highlevel.Array[T], root int) Call {
	call := newCall("broadcast", c, s)
	call.rank("root", root)
	array(&call, "recv", recv, -1)
	if call.err != nil {
		return call
	}
	call.arrays[1] = buffer.Of(recv)
	if c.rank == root {
		array(&call, "send at the root", send, recv.Len())
		call.arrays[0] = buffer.Of(send)
	}
	n, dt, h := uint64(recv.Len()), dataType[T](), c.h
	call.queue = func(p [2]unsafe.Pointer, s cudart.Stream) error {
		return nccl.Broadcast(p[0], p[1], n, dt, int32(root), h, s)
	}
	return call
}

// Reduce reduces send over every rank with op into recv of rank root
// (ncclReduce). recv matters on the root alone, where it holds as many
// elements as send or is send itself (in place); elsewhere it may be nil.
func Reduce[T Elem](s *highlevel.Stream, c *Comm, send, recv *highlevel.Array[T], op ReduceOp, root int) Call {
	call := newCall("reduce", c, s)
	call.rank("root", root)
	array(&call, "send", send, -1)
	o := call.redOp(op)
	if call.err != nil {
		return call
	}
	call.arrays[0] = buffer.Of(send)
	if c.rank == root {
		array(&call, "recv at the root", recv, send.Len())
		call.arrays[1] = buffer.Of(recv)
	}
	n, dt, h := uint64(send.Len()), dataType[T](), c.h
	call.queue = func(p [2]unsafe.Pointer, s cudart.Stream) error {
		return nccl.Reduce(p[0], p[1], n, dt, o, int32(root), h, s)
	}
	return call
}

// AllGather gathers send of every rank into recv of every rank, rank r's at
// r·len(send) (ncclAllGather): recv holds Size times as many elements as
// send. In place, send is recv's slice at this rank's place.
func AllGather[T Elem](s *highlevel.Stream, c *Comm, send, recv *highlevel.Array[T]) Call {
	call := newCall("all-gather", c, s)
	array(&call, "send", send, -1)
	if call.err == nil {
		array(&call, "recv", recv, c.size*send.Len())
	}
	if call.err != nil {
		return call
	}
	n, dt, h := uint64(send.Len()), dataType[T](), c.h
	call.arrays = [2]buffer.Buffer{buffer.Of(send), buffer.Of(recv)}
	call.sendAt = c.rank * call.arrays[0].Bytes()
	call.queue = func(p [2]unsafe.Pointer, s cudart.Stream) error {
		return nccl.AllGather(p[0], p[1], n, dt, h, s)
	}
	return call
}

// ReduceScatter reduces send over every rank with op and leaves block r of
// the result, len(recv) elements at r·len(recv), in recv of rank r
// (ncclReduceScatter): send holds Size times as many elements as recv. In
// place, recv is send's slice at this rank's place.
func ReduceScatter[T Elem](s *highlevel.Stream, c *Comm, send, recv *highlevel.Array[T], op ReduceOp) Call {
	call := newCall("reduce-scatter", c, s)
	array(&call, "recv", recv, -1)
	if call.err == nil {
		array(&call, "send", send, c.size*recv.Len())
	}
	o := call.redOp(op)
	if call.err != nil {
		return call
	}
	n, dt, h := uint64(recv.Len()), dataType[T](), c.h
	call.arrays = [2]buffer.Buffer{buffer.Of(send), buffer.Of(recv)}
	call.sendAt = -c.rank * call.arrays[1].Bytes()
	call.queue = func(p [2]unsafe.Pointer, s cudart.Stream) error {
		return nccl.ReduceScatter(p[0], p[1], n, dt, o, h, s)
	}
	return call
}

// Send sends send to rank peer, whose Recv of as many elements receives it
// (ncclSend). A Send and a Recv between two ranks that both send and
// receive go in one Run, or NCCL may wait forever (until the Timeout).
func Send[T Elem](s *highlevel.Stream, c *Comm, send *highlevel.Array[T], peer int) Call {
	call := newCall("send", c, s)
	call.rank("peer", peer)
	array(&call, "send", send, -1)
	if call.err != nil {
		return call
	}
	n, dt, h := uint64(send.Len()), dataType[T](), c.h
	call.arrays[0] = buffer.Of(send)
	call.queue = func(p [2]unsafe.Pointer, s cudart.Stream) error {
		return nccl.Send(p[0], n, dt, int32(peer), h, s)
	}
	return call
}

// Recv receives into recv what rank peer sends with Send (ncclRecv).
func Recv[T Elem](s *highlevel.Stream, c *Comm, recv *highlevel.Array[T], peer int) Call {
	call := newCall("recv", c, s)
	call.rank("peer", peer)
	array(&call, "recv", recv, -1)
	if call.err != nil {
		return call
	}
	n, dt, h := uint64(recv.Len()), dataType[T](), c.h
	call.arrays[1] = buffer.Of(recv)
	call.queue = func(p [2]unsafe.Pointer, s cudart.Stream) error {
		return nccl.Recv(p[1], n, dt, int32(peer), h, s)
	}
	return call
}

// overlap returns why calls are refused where their arrays overlap so
// that NCCL's result is undefined, at the addresses ptrs, and the
// communicator of the call at fault: two arrays of the calls, one of them
// written (a recv), but a call's send and recv in place, as NCCL defines
// it (Call.sendAt). NCCL's calls in a group run at once.
func overlap(calls []Call, ptrs [][2]unsafe.Pointer) (*Comm, error) {
	names := [2]string{"send", "recv"}
	for i := range calls {
		for j := range 2 {
			n := calls[i].arrays[j].Bytes()
			if n == 0 {
				continue
			}
			p := uintptr(ptrs[i][j])
			for k := i; k < len(calls); k++ {
				for l := range 2 {
					m := calls[k].arrays[l].Bytes()
					q := uintptr(ptrs[k][l])
					switch {
					case k == i && l <= j, m == 0, j == 0 && l == 0: // itself, empty, both read
						continue
					case p >= q+uintptr(m) || q >= p+uintptr(n): // apart
						continue
					case k == i && int(p)-int(q) == calls[i].sendAt: // in place
						continue
					case k == i && len(calls) == 1:
						return calls[i].comm, fmt.Errorf("%w: send and recv overlap, other than in place", ErrConfig)
					case k == i:
						return calls[i].comm, fmt.Errorf("%w: the send and recv of call %d (%s) overlap, other than in place", ErrConfig, i, calls[i].op)
					}
					return calls[i].comm, fmt.Errorf("%w: the %s of call %d (%s) overlaps the %s of call %d (%s)", ErrConfig, names[j], i, calls[i].op, names[l], k, calls[k].op)
				}
			}
		}
	}
	return nil, nil
}

// runOp names a Run's operation in errors.
func runOp(calls []Call) string {
	if len(calls) == 1 {
		return calls[0].op
	}
	return fmt.Sprintf("group of %d calls", len(calls))
}

// Run queues calls on their streams (nil: the legacy default stream of the
// communicator's device), as one NCCL group where there are several
// (ncclGroupStart, the calls, ncclGroupEnd): in one goroutine, the calls
// of several ranks of one communicator must be one Run, as must a Send and
// a Recv that wait for each other. Nothing is queued unless every call's
// arguments are right, its communicator open, its arrays and stream on the
// communicator's device, its arrays overlapping no other's where one is
// written (but in place), and its stream open. The arrays' memory and the
// streams are held until NCCL has queued the work (a Free or a Close in
// another goroutine waits), the communicators until NCCL's background
// work for the calls is done, polled for no longer than their Timeout
// (then the communicator is aborted).
//
// Run returns once the work is queued; Comm.Wait (or the stream's Wait,
// Done, Synchronize, or an Event recorded after it) waits for it.
func Run(calls ...Call) error {
	abort, err := run(calls)
	// The aborts wait for the operations in progress, run's among them:
	// they come once run has let go of the communicators.
	if abort != nil {
		for _, c := range abort {
			c.abort(err)
		}
		return &Error{Op: runOp(calls), Rank: abort[0].rank, Size: abort[0].size, Dev: int(abort[0].dev), Err: err}
	}
	return err
}

// run is Run; it returns the communicators to abort, and the cause, where
// NCCL's background work failed.
func run(calls []Call) (abort []*Comm, err error) {
	if len(calls) == 0 {
		return nil, nil
	}
	op := runOp(calls)
	var first *Comm
	for i := range calls {
		call := &calls[i]
		if call.comm == nil && call.err == nil {
			call.err = fmt.Errorf("%w: zero Call (make one with AllReduce, Broadcast, ...)", highlevel.ErrNil)
		}
		if call.err != nil {
			return nil, call.comm.opErr(call.op, call.err)
		}
		if first == nil {
			first = call.comm
		}
	}
	fail := func(c *Comm, err error) error {
		if len(calls) == 1 {
			return c.opErr(op, err)
		}
		return &Error{Op: op, Rank: -1, Dev: int(c.dev), Err: fmt.Errorf("rank %d of %d: %w", c.rank, c.size, err)}
	}

	// What run holds, let go of in one deferred function, so that its
	// defer stays open-coded (cheaper than a defer each, with run's many
	// returns): the streams and the arrays' memory returned first, then
	// the blocking communicators told the streams of the calls queued
	// (while held), and the communicators released. The buffers spare a
	// Run of a few calls allocations.
	var (
		commBuf   [4]*Comm
		memBuf    [8]highlevel.MemoryPointer
		streamBuf [4]*highlevel.Stream
		devBuf    [4]highlevel.Device
	)
	comms, mems := commBuf[:0], memBuf[:0]
	streams, devs := streamBuf[:0], devBuf[:0]
	var borrow *highlevel.Borrow
	held, locked, queued := 0, false, false
	defer func() {
		if locked {
			unlockCalls(comms)
		}
		borrow.Return()
		for i := range calls {
			if c := calls[i].comm; queued && c.ctl != 0 {
				c.queuedOn(calls[i].s)
			}
		}
		for _, c := range comms[:held] {
			c.release()
		}
	}()

	// The communicators, each once.
	for i := range calls {
		if c := calls[i].comm; !slices.Contains(comms, c) {
			comms = append(comms, c)
		}
	}
	for _, c := range comms {
		if err := c.acquire(); err != nil {
			return nil, fail(c, err)
		}
		held++
	}

	// The arrays' addresses, and their memory for the Borrow, once for a
	// call in place.
	ptrs := make([][2]unsafe.Pointer, len(calls))
	for i := range calls {
		call := &calls[i]
		for j, a := range call.arrays {
			if a == (buffer.Buffer{}) {
				continue
			}
			if j == 1 && a == call.arrays[0] {
				ptrs[i][1] = ptrs[i][0]
				continue
			}
			p, dev, err := a.Check()
			if err != nil {
				return nil, fail(call.comm, err)
			}
			if p != nil {
				mems = append(mems, a.Memory())
			}
			if dev >= 0 && highlevel.Device(dev) != call.comm.dev {
				return nil, fail(call.comm, refusal.Errorf("an array on %v for a communicator on %v", highlevel.Device(dev), call.comm.dev))
			}
			ptrs[i][j] = p
		}
	}

	if c, err := overlap(calls, ptrs); err != nil {
		return nil, fail(c, err)
	}

	// The streams, each once, entered together: a group over two
	// capturing streams, entered one by one, would wait for itself.
	for i := range calls {
		call := &calls[i]
		if call.s != nil && call.s.Device() != call.comm.dev {
			return nil, fail(call.comm, refusal.Errorf("a stream of %v for a communicator on %v", call.s.Device(), call.comm.dev))
		}
		seen := false
		for j := range streams {
			seen = seen || streams[j] == call.s && devs[j] == call.comm.dev
		}
		if !seen {
			streams, devs = append(streams, call.s), append(devs, call.comm.dev)
		}
	}
	// The communicators' NCCL calls, one operation at a time, until
	// NCCL's work for these is no longer in progress; then the streams.
	if err := lockCalls(comms); err != nil {
		return nil, fail(first, err)
	}
	locked = true
	// A captured call is a node of its stream's graph, which holds the
	// arrays it names until the graph is closed: the Borrow's doing.
	b, berr := highlevel.BorrowAll(streams, devs, mems...)
	if berr != nil {
		return nil, fail(first, berr)
	}
	borrow = b

	// NCCL's calls, on one OS thread, which a group belongs to, with the
	// first call's device current (DoRestoring). NCCL sets each call's
	// device itself and then sets back the one cudaGetDevice reported:
	// on a thread without a context that is device 0, whose context it
	// would make in a process that may have no use for it. One context
	// for the group, not one swapped in and out around each call: a
	// group over two devices switched contexts four times a Run, 2-3% of
	// a small all-reduce's time (2×H200).
	var errs []error
	queue := func() error {
		grouped := len(calls) > 1
		if grouped {
			if err := nccl.GroupStart(); err != nil {
				errs = append(errs, fail(first, fmt.Errorf("ncclGroupStart: %w", err)))
				return errs[0]
			}
		}
		for i := range calls {
			call := &calls[i]
			err := call.queue(ptrs[i], call.s.Handle())
			if err != nil && !errors.Is(err, nccl.InProgress) {
				errs = append(errs, fail(call.comm, ncclErr(call.comm.h, err)))
			}
		}
		if grouped {
			// ncclGroupEnd whatever happened: the group is the thread's.
			if err := nccl.GroupEnd(); err != nil && !errors.Is(err, nccl.InProgress) {
				errs = append(errs, fail(first, fmt.Errorf("ncclGroupEnd: %w", ncclErr(first.h, err))))
			}
		}
		// An error has DoRestoring put the context back: a group whose
		// launch failed leaves its last device's current.
		return errors.Join(errs...)
	}
	// A blocking communicator's calls may wait in NCCL for peers that
	// never come: an abort meanwhile ends them (Comm.abortBlocked).
	var blockBuf [4]*Comm
	blocking := blockBuf[:0] // the blocking communicators entered
	leave := func() (aborted error) {
		for _, c := range blocking {
			if err := c.leaveBlocking(); err != nil && aborted == nil {
				aborted = fail(c, err)
			}
		}
		return aborted
	}
	for _, c := range comms {
		if c.ctl != 0 {
			if err := c.enterBlocking(); err != nil {
				leave()
				return nil, fail(c, err)
			}
			blocking = append(blocking, c)
		}
	}
	qerr := first.dev.DoRestoring(queue)
	switch aborted := leave(); {
	case aborted != nil:
		return nil, errors.Join(aborted, qerr)
	case qerr != nil && len(errs) == 0: // d's context could not be made current
		return nil, fail(first, qerr)
	case qerr != nil:
		return nil, qerr
	}
	queued = true

	// NCCL's background work (connection setup, a non-blocking group's
	// launch), for which the arrays and streams stay held. Blocking
	// communicators have none: NCCL returned once it was done.
	if !slices.ContainsFunc(comms, func(c *Comm) bool { return c.ctl == 0 }) {
		return nil, nil
	}
	if err := settle(comms); err != nil {
		return slices.Clone(comms), err
	}
	return nil, nil
}

// settle polls comms until NCCL's work on them is no longer in progress;
// it returns why they are to be aborted, where it fails or times out.
func settle(comms []*Comm) error {
	hs := make([]nccl.Comm, len(comms))
	timeout := comms[0].timeout
	for i, c := range comms {
		hs[i] = c.h
		timeout = min(timeout, c.timeout)
	}
	stop := func() error {
		for _, c := range comms {
			if err := c.stopped(); err != nil {
				return err
			}
		}
		return nil
	}
	err := poll(nil, time.Now().Add(timeout), hs, stop)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrTimeout):
		return wrapf(ErrTimeout, ErrAborted, "NCCL's work not done after %v", timeout)
	case errors.Is(err, ErrAborted):
		return err
	}
	return wrapf(ErrAborted, err, "NCCL failed")
}
