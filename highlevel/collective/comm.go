package collective

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/gocuda/cuda/highlevel"
	"github.com/gocuda/cuda/highlevel/internal/driver"
	"github.com/gocuda/cuda/highlevel/internal/life"
	"github.com/gocuda/cuda/highlevel/internal/refusal"
	"github.com/gocuda/cuda/nccl"
)

// Options are the options of a communicator; nil or the zero value gives
// the defaults.
type Options struct {
	// Timeout bounds the communicator's initialization, each Wait, each
	// Run's wait for NCCL's background work, and Close; past it the
	// communicator is aborted and the operation returns an error wrapping
	// ErrTimeout and ErrAborted. Zero means DefaultTimeout.
	Timeout time.Duration
	// Name is the communicator's name in NCCL's logs; empty: none.
	Name string
	// Blocking makes the communicator's collectives blocking (NCCL's
	// blocking = 1): Run returns once NCCL has queued the work, with no
	// thread of NCCL's between, so a Run of a small collective costs
	// about 12 µs rather than 70 (2×H200, two processes; the raw
	// binding's takes 8-10). The communicator is still made and split
	// without blocking, within the Timeout: the package makes a
	// non-blocking communicator and splits it into the blocking one (a
	// collective call of every rank, so every rank must ask for Blocking
	// alike, here and in Split's Options; twice the initialization, and a
	// second communicator's resources). Close, whose finalization
	// waits in NCCL for the collectives queued, first waits for the last
	// eight streams Run queued them on (the legacy default stream: for
	// every blocking stream of the device too), within the Timeout, as
	// Comm.Wait does. The price: a Run while NCCL connects the ranks (the
	// first collective of a kind, the first Send to a peer) waits in NCCL
	// for the peers, so a peer that never makes its call leaves the Run
	// waiting, whatever the Timeout, until an Abort (RunEach's, when
	// another rank fails) ends it; so does Close for a collective queued
	// on an earlier stream, on a stream closed since, through Do, or
	// captured in a graph not yet closed. Such an Abort waits for the
	// call to have been in NCCL for 50 ms, so that NCCL never sees a call
	// on the communicator it freed, and then aborts it from another
	// thread, as NCCL's abort flag allows.
	Blocking bool
}

func (o *Options) blocking() bool { return o != nil && o.Blocking }

func (o *Options) timeout() time.Duration {
	if o == nil || o.Timeout <= 0 {
		return DefaultTimeout
	}
	return o.Timeout
}

// config returns NCCL's configuration: NCCL_CONFIG_INITIALIZER, blocking as
// asked, named name (nil: no name; see cName).
func config(blocking bool, name *byte) *nccl.Config {
	const undef = nccl.CONFIG_UNDEF_INT
	cfg := &nccl.Config{
		Size:    uint64(unsafe.Sizeof(nccl.Config{})),
		Magic:   0xcafebeef,
		Version: nccl.VERSION_CODE,
		// Every NCCL call returns at once unless blocking; the package
		// polls ncclCommGetAsyncError and so can give up and abort.
		Blocking:            0,
		CommName:            name,
		CgaClusterSize:      undef,
		MinCTAs:             undef,
		MaxCTAs:             undef,
		SplitShare:          undef,
		TrafficClass:        undef,
		CollnetEnable:       undef,
		CTAPolicy:           undef,
		ShrinkShare:         undef,
		NvlsCTAs:            undef,
		NChannelsPerNetPeer: undef,
		NvlinkCentricSched:  undef,
	}
	if blocking {
		cfg.Blocking = 1
	}
	return cfg
}

// cName returns the Options' Name as a C string, nil for none. NCCL keeps
// the pointer for the communicator's life: the string is in C memory, and
// freeName frees it once the communicators named by it have ended.
func (o *Options) cName() *byte {
	if o == nil || o.Name == "" {
		return nil
	}
	return driver.CString(o.Name)
}

func freeName(name *byte) {
	if name != nil {
		driver.CFree(unsafe.Pointer(name))
	}
}

// handles returns n communicators in C memory, for NCCL to write after the
// call that takes them has returned (a split writes its new communicator
// once its background work ends), and the function that frees them.
func handles(n int) ([]nccl.Comm, func()) {
	p := driver.CBytes(make([]byte, n*int(unsafe.Sizeof(nccl.Comm(0)))))
	return unsafe.Slice((*nccl.Comm)(p), n), func() { driver.CFree(p) }
}

// A Comm is one rank of an NCCL communicator, on one device: NCCL's
// ncclComm_t. NewComms makes one per device of the process, NewComm and
// Join one rank of a job of several processes, Split new ones from it.
//
// A Comm is safe for use by several goroutines. NCCL takes a
// communicator's calls from one thread at a time, so the package makes
// them one operation at a time: a Run, Split or Do waits for another
// one's NCCL calls on the same communicator (for a non-blocking one, until
// NCCL's work for them is no longer in progress), or for its abort; Wait
// and Err, while one is in progress, leave the watching of the
// communicator to it; Abort waits for none. Ranks of one communicator must
// still make their collectives in the same order, as NCCL requires: from
// one goroutine a rank, or ordered by the program. Close follows
// highlevel's protocol: the operations in progress finish, later ones
// return an error wrapping highlevel.ErrClosed, and so does a second
// Close. Abort ends the communicator at once, without waiting for its
// peers: the collectives it queued stop, and waits for them return.
//
// Every NCCL call the package makes on a Comm returns at once
// (NCCL's non-blocking mode): where NCCL's work goes on in the background,
// the package polls ncclCommGetAsyncError, for no longer than the
// Comm's Timeout, after which the communicator is aborted. A rank that
// dies therefore never leaves the others waiting past their timeout.
// Options.Blocking trades that bound, for some of Run's calls into NCCL
// and Close's finalization, for speed.
//
// The zero value is not usable: its methods return an error wrapping
// highlevel.ErrNil.
type Comm struct {
	h nccl.Comm // the collectives'
	// ctl, with Options.Blocking, is the non-blocking communicator h was
	// split from, which Split splits; 0 without.
	ctl     nccl.Comm
	name    *byte // Options.Name in C memory, or nil
	dev     highlevel.Device
	rank    int
	size    int
	timeout time.Duration

	life life.Life
	// calls makes the NCCL calls on h and ctl one at a time, as NCCL
	// requires of a communicator, and a non-blocking one's operation
	// last until it is no longer in progress; ncclCommAbort, which may
	// come at any time, does not take it. seq orders the locking of
	// several communicators' calls (lockCalls).
	calls    sync.Mutex
	seq      uint64
	aborting atomic.Bool           // pollers stop
	ended    atomic.Bool           // Close or Abort is done
	endedCh  chan struct{}         // closed once ended
	cause    atomic.Pointer[error] // why it was aborted

	// queued, with ctl, are the streams Run queued collectives on whose
	// work may not be done (nil: the legacy default stream), for Close.
	mu     sync.Mutex
	queued []*highlevel.Stream

	// block guards the state of h's blocking NCCL calls, with ctl: the
	// one in progress, if any (Run's, Close's finalization), which may
	// wait in NCCL for peers that never come, and which only
	// ncclCommAbort from another thread ends (abortBlocked); and whether
	// h was aborted.
	block     sync.Mutex
	blocked   bool
	blockedAt time.Time
	hAborted  bool
}

// NoColor is the color of Split for a rank that takes part in no new
// communicator.
const NoColor = nccl.SPLIT_NOCOLOR

// A UniqueID is what every rank of a communicator must share to make it:
// NCCL's ncclUniqueId. NewUniqueID makes one, in one process, which must
// live until all ranks have made their communicator (NCCL's bootstrap runs
// there); Join carries it to the others.
type UniqueID [nccl.UNIQUE_ID_BYTES]byte

// NewUniqueID returns a new UniqueID (ncclGetUniqueId).
func NewUniqueID() (UniqueID, error) {
	var id nccl.UniqueId
	if err := nccl.GetUniqueId(&id); err != nil {
		return UniqueID{}, fmt.Errorf("%snew unique id: ncclGetUniqueId: %w", prefix, err)
	}
	return UniqueID(id.Internal), nil
}

func nilComm() error { return fmt.Errorf("%w: nil *Comm", highlevel.ErrNil) }

func (c *Comm) usable() error {
	switch {
	case c == nil:
		return nilComm()
	case c.h == 0:
		return fmt.Errorf("%w: zero Comm (make one with NewComms, NewComm or Join)", highlevel.ErrNil)
	}
	return nil
}

// opErr is the error of operation op on c.
func (c *Comm) opErr(op string, err error) error {
	if c == nil || c.h == 0 {
		return &Error{Op: op, Rank: -1, Err: err}
	}
	return &Error{Op: op, Rank: c.rank, Size: c.size, Dev: int(c.dev), Err: err}
}

// Rank returns the communicator's rank; 0 for a nil Comm.
func (c *Comm) Rank() int {
	if c == nil {
		return 0
	}
	return c.rank
}

// Size returns the communicator's number of ranks; 0 for a nil Comm.
func (c *Comm) Size() int {
	if c == nil {
		return 0
	}
	return c.size
}

// Device returns the communicator's device; 0 for a nil Comm.
func (c *Comm) Device() highlevel.Device {
	if c == nil {
		return 0
	}
	return c.dev
}

// Timeout returns the communicator's timeout (Options.Timeout).
func (c *Comm) Timeout() time.Duration {
	if c == nil {
		return 0
	}
	return c.timeout
}

// acquire begins an operation on c: nil, or the error of a closed or
// aborted communicator. release must follow nil.
func (c *Comm) acquire() error {
	if err := c.usable(); err != nil {
		return err
	}
	if !c.life.Acquire() {
		return c.closedErr()
	}
	return nil
}

func (c *Comm) release() { c.life.Release() }

// closedErr is the error of an operation after Close or Abort.
func (c *Comm) closedErr() error {
	if p := c.cause.Load(); p != nil {
		return &joined{errs: []error{highlevel.ErrClosed, *p}}
	}
	return highlevel.ErrClosed
}

// stopped returns the error that ends a poll of c: its abort's.
func (c *Comm) stopped() error {
	if !c.aborting.Load() {
		return nil
	}
	if p := c.cause.Load(); p != nil {
		return *p
	}
	return ErrAborted
}

// Do calls fn with the NCCL communicator of Run's calls, the Comm's device
// current on the calling OS thread, while the Comm stays open (Close and
// Abort wait for fn), for the NCCL functions the package does not wrap
// (nccl.AlltoAll, nccl.CommRegister, ...), while the package's other NCCL
// calls on it wait (NCCL takes a communicator's calls from one thread at a
// time). Unless Options.Blocking made it blocking, the communicator is
// non-blocking: a call that returns nccl.InProgress must be followed by
// polls of nccl.CommGetAsyncError until it is no longer in progress,
// before fn returns. fn must not keep the handle, nor call any Comm's
// methods or Run: they could wait for fn, or for each other.
func (c *Comm) Do(fn func(h nccl.Comm) error) error {
	if err := c.acquire(); err != nil {
		return c.opErr("do", err)
	}
	defer c.release()
	if fn == nil {
		return c.opErr("do", refusal.Errorf("nil function"))
	}
	if err := lockCalls([]*Comm{c}); err != nil {
		return c.opErr("do", err)
	}
	defer c.calls.Unlock()
	return c.dev.Do(func() error { return fn(c.h) })
}

// Err returns the communicator's asynchronous error, as
// ncclCommGetAsyncError reports it (nil while none, and while NCCL's work
// is in progress), or the error of a closed or aborted communicator.
func (c *Comm) Err() error {
	if err := c.acquire(); err != nil {
		return c.opErr("async error", err)
	}
	defer c.release()
	// An operation whose NCCL calls are in progress watches the
	// communicator itself, as for Wait.
	if !c.calls.TryLock() {
		return nil
	}
	err := c.stopped()
	if err == nil {
		err = asyncErr(c.h)
	}
	c.calls.Unlock()
	if err != nil && !errors.Is(err, nccl.InProgress) {
		return c.opErr("async error", err)
	}
	return nil
}

// asyncErr returns the communicator's state: nil, nccl.InProgress or its
// error.
func asyncErr(h nccl.Comm) error {
	var r nccl.Result
	if err := nccl.CommGetAsyncError(h, &r); err != nil {
		return fmt.Errorf("ncclCommGetAsyncError: %w", err)
	}
	if r != nccl.Success {
		return ncclErr(h, r)
	}
	return nil
}

// ncclErr is NCCL's status r on h, with NCCL's last error message where it
// has one.
func ncclErr(h nccl.Comm, err error) error {
	var r nccl.Result
	if !errors.As(err, &r) || r == nccl.InProgress {
		return err
	}
	if msg, e := nccl.GetLastError(h); e == nil && msg != "" {
		return &joined{errs: []error{err}, msg: err.Error() + " (" + msg + ")"}
	}
	return err
}

// pollSpin is how long poll asks NCCL without sleeping.
const pollSpin = 500 * time.Microsecond

// poll waits until NCCL's background work on hs is done: until
// ncclCommGetAsyncError reports none of them in progress. It gives up on
// the first error, when ctx is done, at deadline (ErrTimeout), or when
// stop returns an error.
func poll(ctx context.Context, deadline time.Time, hs []nccl.Comm, stop func() error) error {
	wait := time.Duration(0)
	start := time.Now()
	for {
		busy := false
		for _, h := range hs {
			if h == 0 {
				continue
			}
			err := asyncErr(h)
			if errors.Is(err, nccl.InProgress) {
				busy = true
				continue
			}
			if err != nil {
				return err
			}
		}
		if !busy {
			return nil
		}
		if stop != nil {
			if err := stop(); err != nil {
				return err
			}
		}
		if ctx != nil && ctx.Err() != nil {
			return ctx.Err()
		}
		if !deadline.IsZero() && time.Now().After(deadline) {
			return ErrTimeout
		}
		// A group's launch takes tens of microseconds, a collective's
		// connection setup up to milliseconds, an initialization up to
		// seconds. Sleeping at once would add a timer's delay, tens of
		// microseconds or more, to every Run.
		if time.Since(start) < pollSpin {
			runtime.Gosched()
			continue
		}
		wait = min(max(2*wait, 20*time.Microsecond), 2*time.Millisecond)
		if ctx != nil {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
			}
		} else {
			time.Sleep(wait)
		}
	}
}

// newComm wraps a communicator NCCL made, and the one it was split from
// where opts ask for Blocking; name is their name (cName).
func newComm(h, ctl nccl.Comm, name *byte, dev highlevel.Device, rank, size int, opts *Options) *Comm {
	ncclStarted()
	return &Comm{h: h, ctl: ctl, name: name, dev: dev, rank: rank, size: size, timeout: opts.timeout(),
		seq: commSeq.Add(1), endedCh: make(chan struct{})}
}

// commSeq counts the Comms made, for their seq.
var commSeq atomic.Uint64

// lockCalls locks the NCCL calls of comms, in the order of their seq, so
// that operations over the same communicators wait for each other rather
// than for ever; unlockCalls unlocks them. It gives up, with the abort's
// error, where one of comms is aborted meanwhile: the abort waits for the
// operation that waits here, which may wait for another communicator's
// operation up to that one's Timeout. A goroutine that holds them may go
// on to enter streams (highlevel.BorrowAll), not the other way round.
func lockCalls(comms []*Comm) error {
	var buf [4]*Comm
	sorted := append(buf[:0], comms...)
	slices.SortFunc(sorted, func(a, b *Comm) int { return cmp.Compare(a.seq, b.seq) })
	for i, c := range sorted {
		for wait := time.Duration(0); !c.calls.TryLock(); {
			for _, d := range sorted {
				if err := d.stopped(); err != nil {
					unlockCalls(sorted[:i])
					return err
				}
			}
			if wait == 0 {
				runtime.Gosched()
				wait = 10 * time.Microsecond
				continue
			}
			time.Sleep(wait)
			wait = min(2*wait, time.Millisecond)
		}
	}
	// An abort that ended a blocking call, whose operation held them, has
	// left its communicator to no other NCCL call.
	for _, c := range sorted {
		if err := c.stopped(); err != nil {
			unlockCalls(sorted)
			return err
		}
	}
	return nil
}

func unlockCalls(comms []*Comm) {
	for _, c := range comms {
		c.calls.Unlock()
	}
}

// splitBlocking makes the blocking communicator of each of ctls, the
// ranks' non-blocking ones on devs, named names, by splitting it, all in
// one NCCL group (the ranks of one process split together), without
// blocking: ctx, deadline and stop bound the split (timeout is the
// Timeout, for the error). ranks are their ranks in ctls, to keep. On
// failure it aborts ctls and what the split made.
func splitBlocking(ctx context.Context, deadline time.Time, timeout time.Duration, ctls []nccl.Comm, names []*byte, devs []highlevel.Device, ranks []int, stop func() error) ([]nccl.Comm, error) {
	hs, free := handles(len(ctls))
	defer free()
	cfgs := make([]*nccl.Config, len(ctls))
	errs := group(devs, ranks, func(i int) error {
		cfgs[i] = config(true, names[i])
		if err := nccl.CommSplit(ctls[i], 0, int32(ranks[i]), &hs[i], cfgs[i]); err != nil {
			return fmt.Errorf("ncclCommSplit: %w", ncclErr(ctls[i], err))
		}
		return nil
	})
	if len(errs) == 0 {
		// The split's work is the parents', NCCL's state of it theirs.
		errs = append(errs, timeoutErr(timeout, poll(ctx, deadline, ctls, stop)))
	}
	runtime.KeepAlive(cfgs)
	if err := errors.Join(errs...); err != nil {
		// Aborting the parents ends the split's work, which then writes
		// the communicators it made, failed or not: those are aborted
		// after.
		abortAll(ctls, devs)
		abortAll(hs, devs)
		return nil, fmt.Errorf("the blocking communicator: %w", err)
	}
	return slices.Clone(hs), nil
}

// group makes call(i) for each of devs, with devs[i] current, in one NCCL
// group on one OS thread (a group belongs to it), as the ranks of one
// process make a collective call together, and returns the errors but
// ncclInProgress, each naming its rank (ranks[i]) and device.
func group(devs []highlevel.Device, ranks []int, call func(i int) error) []error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := nccl.GroupStart(); err != nil {
		return []error{fmt.Errorf("ncclGroupStart: %w", err)}
	}
	var errs []error
	for i, d := range devs {
		if err := d.Do(func() error { return call(i) }); err != nil && !errors.Is(err, nccl.InProgress) {
			errs = append(errs, fmt.Errorf("rank %d on %v: %w", ranks[i], d, err))
		}
	}
	if err := nccl.GroupEnd(); err != nil && !errors.Is(err, nccl.InProgress) {
		errs = append(errs, fmt.Errorf("ncclGroupEnd: %w", err))
	}
	return errs
}

// abortAll aborts the communicators NCCL made, on their devices; for a
// failed initialization.
func abortAll(hs []nccl.Comm, devs []highlevel.Device) {
	for i, h := range hs {
		if h != 0 {
			devs[i].Do(func() error { return nccl.CommAbort(h) })
		}
	}
}

// initDeadline is the earlier of ctx's deadline and timeout from now.
func initDeadline(ctx context.Context, timeout time.Duration) time.Time {
	d := time.Now().Add(timeout)
	if dl, ok := ctx.Deadline(); ok && dl.Before(d) {
		return dl
	}
	return d
}

// timeoutErr is the error of something that did not finish within
// timeout.
func timeoutErr(timeout time.Duration, err error) error {
	if errors.Is(err, ErrTimeout) {
		return wrapf(ErrTimeout, ErrAborted, "not done after %v", timeout)
	}
	return err
}

// NewComms makes one communicator over devices, one rank per device in
// their order (nil or empty: every device of the process), in one call:
// ncclCommInitRankConfig for each device in one NCCL group. ctx and the
// Options' Timeout bound it; on failure the communicators made so far are
// aborted.
func NewComms(ctx context.Context, devices []highlevel.Device, opts *Options) (_ []*Comm, err error) {
	op := "new communicators"
	fail := func(err error) error { return &Error{Op: op, Rank: -1, Err: err} }
	if ctx == nil {
		return nil, fail(fmt.Errorf("%w: nil context", ErrConfig))
	}
	if len(devices) == 0 {
		n, err := highlevel.DeviceCount()
		if err != nil {
			return nil, fail(err)
		}
		for d := range n {
			devices = append(devices, highlevel.Device(d))
		}
		if n == 0 {
			return nil, fail(fmt.Errorf("%w: no devices", ErrConfig))
		}
	}
	seen := make(map[highlevel.Device]bool, len(devices))
	for _, d := range devices {
		if seen[d] {
			return nil, fail(fmt.Errorf("%w: %v listed twice", ErrConfig, d))
		}
		seen[d] = true
	}
	n := len(devices)
	id, err := NewUniqueID()
	if err != nil {
		return nil, fail(err)
	}
	timeout := opts.timeout()
	deadline := initDeadline(ctx, timeout)
	names := make([]*byte, n)
	cfgs := make([]*nccl.Config, n)
	hs := make([]nccl.Comm, n)
	ranks := make([]int, n)
	for r := range ranks {
		ranks[r] = r
	}
	errs := group(devices, ranks, func(r int) error {
		names[r] = opts.cName()
		cfgs[r] = config(false, names[r])
		if err := nccl.CommInitRankConfig(&hs[r], int32(n), nccl.UniqueId{Internal: id}, int32(r), cfgs[r]); err != nil {
			return fmt.Errorf("ncclCommInitRankConfig: %w", err)
		}
		return nil
	})
	if len(errs) == 0 {
		errs = append(errs, timeoutErr(timeout, poll(ctx, deadline, hs, nil)))
	}
	runtime.KeepAlive(cfgs)
	fails := func(err error) error {
		for _, name := range names {
			freeName(name)
		}
		return fail(err)
	}
	if err := errors.Join(errs...); err != nil {
		abortAll(hs, devices)
		return nil, fails(err)
	}
	ctls := make([]nccl.Comm, n)
	if opts.blocking() {
		ctls = hs
		if hs, err = splitBlocking(ctx, deadline, timeout, ctls, names, devices, ranks, nil); err != nil {
			return nil, fails(err)
		}
	}
	comms := make([]*Comm, n)
	for r, d := range devices {
		comms[r] = newComm(hs[r], ctls[r], names[r], d, r, n, opts)
	}
	return comms, nil
}

// NewComm makes rank rank of a communicator of size ranks, on device dev,
// with the id every rank shares (ncclCommInitRankConfig): one rank of a
// job of several processes, or of several goroutines. It returns once all
// ranks have joined, or fails when ctx is done or after the Options'
// Timeout, aborting the communicator.
func NewComm(ctx context.Context, dev highlevel.Device, id UniqueID, rank, size int, opts *Options) (*Comm, error) {
	fail := func(err error) error {
		return &Error{Op: fmt.Sprintf("new communicator, rank %d of %d,", rank, size), Rank: -1, Dev: int(dev), Err: err}
	}
	switch {
	case ctx == nil:
		return nil, fail(fmt.Errorf("%w: nil context", ErrConfig))
	case size < 1 || rank < 0 || rank >= size:
		return nil, fail(fmt.Errorf("%w: rank %d of %d", ErrConfig, rank, size))
	case size > math.MaxInt32:
		return nil, fail(fmt.Errorf("%w: %d ranks: NCCL takes %d at most", ErrConfig, size, math.MaxInt32))
	case id == UniqueID{}:
		return nil, fail(fmt.Errorf("%w: zero UniqueID (make one with NewUniqueID)", ErrConfig))
	}
	timeout := opts.timeout()
	deadline := initDeadline(ctx, timeout)
	name := opts.cName()
	cfg := config(false, name)
	var h nccl.Comm
	err := dev.Do(func() error {
		return nccl.CommInitRankConfig(&h, int32(size), nccl.UniqueId{Internal: id}, int32(rank), cfg)
	})
	if err != nil && !errors.Is(err, nccl.InProgress) {
		err = fmt.Errorf("ncclCommInitRankConfig: %w", err)
	} else {
		err = timeoutErr(timeout, poll(ctx, deadline, []nccl.Comm{h}, nil))
	}
	runtime.KeepAlive(cfg)
	if err != nil {
		abortAll([]nccl.Comm{h}, []highlevel.Device{dev})
		freeName(name)
		return nil, fail(err)
	}
	var ctl nccl.Comm
	if opts.blocking() {
		ctl = h
		hs, err := splitBlocking(ctx, deadline, timeout, []nccl.Comm{ctl}, []*byte{name}, []highlevel.Device{dev}, []int{rank}, nil)
		if err != nil {
			freeName(name)
			return nil, fail(err)
		}
		h = hs[0]
	}
	return newComm(h, ctl, name, dev, rank, size, opts), nil
}

// Join makes this process's rank of the job cfg describes, on device dev:
// the root rank makes a UniqueID, Rendezvous carries it to the others, and
// each makes its communicator with NewComm. ctx bounds both; cfg.Timeout
// the rendezvous, the Options' Timeout the communicator's initialization.
// A job of torchrun's passes ConfigFromEnv's Config and
// highlevel.Device(cfg.LocalRank).
func Join(ctx context.Context, cfg Config, dev highlevel.Device, opts *Options) (*Comm, error) {
	data, err := Rendezvous(ctx, cfg, func() ([]byte, error) {
		id, err := NewUniqueID()
		return id[:], err
	})
	if err != nil {
		return nil, err
	}
	if len(data) != len(UniqueID{}) {
		return nil, &RendezvousError{Rank: cfg.Rank, WorldSize: cfg.WorldSize, Addr: cfg.rootAddr(),
			Err: wrapf(ErrProtocol, nil, "a unique id of %d bytes, want %d", len(data), len(UniqueID{}))}
	}
	return NewComm(ctx, dev, UniqueID(data), cfg.Rank, cfg.WorldSize, opts)
}

// Split makes new communicators from c's ranks (ncclCommSplit): every rank
// of c calls it, at the same time (from its own goroutine or process); the
// ranks that pass the same color form one communicator, ranked by key
// (ties by their rank in c). A rank that passes NoColor takes part in none
// and gets a nil *Comm and a nil error. The new communicator is on c's
// device; opts, which may be nil, are its options. ctx and the Timeout
// bound it. A split that NCCL began and that then fails (a rank never
// came, ctx was done) aborts c: NCCL's work on it would go on in the
// background, holding c, until an abort.
func (c *Comm) Split(ctx context.Context, color, key int, opts *Options) (*Comm, error) {
	const op = "split"
	switch {
	case ctx == nil:
		return nil, c.opErr(op, fmt.Errorf("%w: nil context", ErrConfig))
	case color < 0 && color != NoColor || color > math.MaxInt32:
		return nil, c.opErr(op, fmt.Errorf("%w: color %d: want 0 to %d, or NoColor", ErrConfig, color, math.MaxInt32))
	case key < math.MinInt32 || key > math.MaxInt32:
		return nil, c.opErr(op, fmt.Errorf("%w: key %d: want a 32-bit int", ErrConfig, key))
	case ctx.Err() != nil:
		// NCCL's split, once begun, could end only with an abort of c.
		return nil, c.opErr(op, ctx.Err())
	}
	if err := c.acquire(); err != nil {
		return nil, c.opErr(op, err)
	}
	// The non-blocking communicator is split, so that the split is
	// bounded.
	parent := c.h
	if c.ctl != 0 {
		parent = c.ctl
	}
	timeout := opts.timeout()
	deadline := initDeadline(ctx, timeout)
	name := opts.cName()
	cfg := config(false, name)
	hp, free := handles(1)
	err := lockCalls([]*Comm{c})
	if err == nil && ctx.Err() != nil { // done while another operation held c
		c.calls.Unlock()
		err = ctx.Err()
	}
	if err != nil {
		c.release()
		free()
		freeName(name)
		return nil, c.opErr(op, err)
	}
	err = c.dev.Do(func() error { return nccl.CommSplit(parent, int32(color), int32(key), &hp[0], cfg) })
	begun := err == nil || errors.Is(err, nccl.InProgress)
	if !begun {
		err = fmt.Errorf("ncclCommSplit: %w", ncclErr(parent, err))
	} else {
		err = timeoutErr(timeout, poll(ctx, deadline, []nccl.Comm{parent}, c.stopped))
	}
	c.calls.Unlock()
	runtime.KeepAlive(cfg)
	c.release()
	if err != nil {
		cleanup := func() {
			abortAll(hp, []highlevel.Device{c.dev})
			free()
			freeName(name)
		}
		if !begun {
			cleanup()
			return nil, c.opErr(op, err)
		}
		// NCCL's work goes on until an abort of c ends it (this one, or
		// another goroutine's, or its Close's), and then writes the
		// communicator it made, failed, which uses name: both are
		// cleaned up once c has ended.
		c.abort(wrapf(ErrAborted, err, "split failed"))
		select {
		case <-c.endedCh:
			cleanup()
		default:
			go func() {
				<-c.endedCh
				cleanup()
			}()
		}
		return nil, c.opErr(op, err)
	}
	h := hp[0]
	free()
	if h == 0 { // NoColor
		freeName(name)
		return nil, nil
	}
	var rank, size int32
	if err := errors.Join(nccl.CommUserRank(h, &rank), nccl.CommCount(h, &size)); err != nil {
		abortAll([]nccl.Comm{h}, []highlevel.Device{c.dev})
		freeName(name)
		return nil, c.opErr(op, err)
	}
	var ctl nccl.Comm
	if opts.blocking() {
		ctl = h
		hs, err := splitBlocking(ctx, deadline, timeout, []nccl.Comm{ctl}, []*byte{name}, []highlevel.Device{c.dev}, []int{int(rank)}, c.stopped)
		if err != nil {
			freeName(name)
			return nil, c.opErr(op, err)
		}
		h = hs[0]
	}
	return newComm(h, ctl, name, c.dev, int(rank), int(size), opts), nil
}

// Close ends the communicator once the operations in progress on it have
// finished: it waits, for no longer than the Timeout, until NCCL has done
// the work queued on it (with Options.Blocking, first the streams Run
// queued on; then ncclCommFinalize), then frees it
// (ncclCommDestroy). Later operations, and a second Close, return an error
// wrapping highlevel.ErrClosed. A communicator that cannot finish in time
// (a peer died) is aborted, and Close returns an error wrapping ErrAborted
// and ErrTimeout (or NCCL's status).
func (c *Comm) Close() error {
	const op = "close"
	if err := c.usable(); err != nil {
		return c.opErr(op, err)
	}
	if !c.life.Close() {
		return c.opErr(op, c.closedErr())
	}
	defer c.end()
	// The blocking communicator first, whose finalization waits, in NCCL,
	// for the collectives queued on it: their streams are waited for
	// first, watching the communicator, within the Timeout. Then the
	// non-blocking one.
	deadline := time.Now().Add(c.timeout)
	for _, s := range c.queued {
		if err := c.settleStream(s, deadline); err != nil {
			c.setCause(err)
			return c.opErr(op, errors.Join(err, c.ncclAbort(c.h, c.ctl)))
		}
	}
	c.queued = nil
	hs := [2]nccl.Comm{c.h, c.ctl}
	var errs []error
	for i, h := range hs {
		if h == 0 {
			continue
		}
		err := c.finalize(h)
		if err != nil && !errors.Is(err, nccl.InProgress) {
			if !errors.Is(err, ErrAborted) {
				err = fmt.Errorf("ncclCommFinalize: %w", ncclErr(h, err))
			}
		} else {
			err = timeoutErr(c.timeout, poll(nil, deadline, []nccl.Comm{h}, c.stopped))
		}
		if err != nil {
			if !errors.Is(err, ErrAborted) {
				err = wrapf(ErrAborted, err, "NCCL failed")
			}
			c.setCause(err)
			return c.opErr(op, errors.Join(err, c.ncclAbort(hs[i:]...)))
		}
		if err := c.dev.Do(func() error { return nccl.CommDestroy(h) }); err != nil {
			errs = append(errs, fmt.Errorf("ncclCommDestroy: %w", err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return c.opErr(op, err)
	}
	return nil
}

// finalize finalizes h, one of c's communicators (ncclCommFinalize), for
// Close. The blocking one's finalization waits in NCCL for its
// collectives, which an abort ends (abortBlocked): it then returns the
// abort's error.
func (c *Comm) finalize(h nccl.Comm) error {
	if h != c.h || c.ctl == 0 {
		return c.dev.Do(func() error { return nccl.CommFinalize(h) })
	}
	if err := c.enterBlocking(); err != nil {
		return err
	}
	err := c.dev.Do(func() error { return nccl.CommFinalize(h) })
	return cmp.Or(c.leaveBlocking(), err)
}

// queuedOn records that Run queued collectives of c's on s, where c is
// blocking, for Close to wait for: the last queuedStreams streams, the
// earlier ones' work most likely done. It asks nothing of the streams.
func (c *Comm) queuedOn(s *highlevel.Stream) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := len(c.queued); n > 0 && c.queued[n-1] == s {
		return // the last already: a Run after another on the same stream
	}
	if i := slices.Index(c.queued, s); i >= 0 {
		c.queued = slices.Delete(c.queued, i, i+1)
	} else if len(c.queued) == queuedStreams {
		c.queued = slices.Delete(c.queued, 0, 1)
	}
	c.queued = append(c.queued, s)
}

// queuedStreams is how many streams a blocking Comm remembers.
const queuedStreams = 8

// settleStream waits for the work queued on s (nil: the legacy default
// stream) while watching c, for Close: it returns nil once the work is
// done, s is closed or captures, and otherwise why c is to be aborted:
// NCCL's asynchronous error, an Abort, or the deadline passed. It waits
// on an event of its own, which leaves the stream's reports (its
// callbacks' panics, Done's Err) to its user. Close holds c.
func (c *Comm) settleStream(s *highlevel.Stream, deadline time.Time) error {
	if s == nil {
		var err error
		if s, err = highlevel.LegacyDefaultStream(c.dev); err != nil {
			return err
		}
	}
	skip := func(err error) bool {
		return errors.Is(err, highlevel.ErrClosed) || errors.Is(err, highlevel.ErrCapturing)
	}
	e, err := highlevel.NewEvent(c.dev, nil)
	if err == nil {
		if err = e.Record(s); err != nil {
			e.Close()
		}
	}
	if err != nil {
		if skip(err) {
			return nil
		}
		return wrapf(ErrAborted, err, "marking the stream of NCCL's work")
	}
	defer e.Close()
	for {
		step := time.Now().Add(10 * time.Millisecond)
		if deadline.Before(step) {
			step = deadline
		}
		ctx, cancel := context.WithDeadline(context.Background(), step)
		err := e.Wait(ctx)
		cancel()
		switch {
		case err == nil || skip(err):
			return nil
		case !errors.Is(err, context.DeadlineExceeded):
			return wrapf(ErrAborted, err, "the stream of NCCL's work failed")
		case !time.Now().Before(deadline):
			return wrapf(ErrTimeout, ErrAborted, "NCCL's work not done after %v", c.timeout)
		}
		if err := c.stopped(); err != nil {
			return err
		}
		if err := asyncErr(c.h); err != nil && !errors.Is(err, nccl.InProgress) {
			return wrapf(ErrAborted, err, "NCCL failed")
		}
	}
}

// ncclAbort aborts NCCL's communicators hs of c (ncclCommAbort) on c's
// device, skipping zeros and an h that abortBlocked aborted already.
func (c *Comm) ncclAbort(hs ...nccl.Comm) error {
	return c.dev.Do(func() error {
		var errs []error
		for _, h := range hs {
			if h == c.h && !c.markAborted() {
				continue
			}
			if h != 0 {
				if err := nccl.CommAbort(h); err != nil {
					errs = append(errs, fmt.Errorf("ncclCommAbort: %w", err))
				}
			}
		}
		return errors.Join(errs...)
	})
}

// markAborted records that h is to be aborted, and reports whether it
// was not yet.
func (c *Comm) markAborted() bool {
	c.block.Lock()
	defer c.block.Unlock()
	first := !c.hAborted
	c.hAborted = true
	return first
}

// enterBlocking begins a blocking NCCL call on h, where c has ctl (its
// calls are locked): it returns the error of c's abort, and the call
// must not be made, where one has begun. leaveBlocking must follow nil.
func (c *Comm) enterBlocking() error {
	c.block.Lock()
	defer c.block.Unlock()
	if err := c.stopped(); err != nil {
		return err
	}
	c.blocked, c.blockedAt = true, time.Now()
	return nil
}

// leaveBlocking ends the call enterBlocking began. It returns the error
// of the abort that ended the call (abortBlocked), if one did.
func (c *Comm) leaveBlocking() error {
	c.block.Lock()
	c.blocked = false
	aborted := c.hAborted
	c.block.Unlock()
	if !aborted {
		return nil
	}
	if err := c.stopped(); err != nil {
		return err
	}
	return ErrAborted
}

// blockedGrace is how long a blocking NCCL call must have been in
// progress before abortBlocked ends it from another thread: the call
// could otherwise begin after ncclCommAbort has freed the communicator,
// when the goroutine that makes it was paused between enterBlocking and
// NCCL.
const blockedGrace = 50 * time.Millisecond

// abortBlocked ends a blocking NCCL call on h in progress, for an abort
// of c (c.aborting is set, so that no other one begins): a Run while NCCL
// connects the ranks, or Close's finalization, waits in NCCL for peers
// that may never come, and returns only once ncclCommAbort, from another
// thread, has set NCCL's abort flag. It waits for the call to end by
// itself, or to have lasted blockedGrace, and then aborts h while holding
// block, so that the call, and the NCCL calls that follow it, find h
// aborted (leaveBlocking, and stopped's callers).
func (c *Comm) abortBlocked() {
	for wait := 20 * time.Microsecond; ; wait = min(2*wait, 5*time.Millisecond) {
		c.block.Lock()
		switch {
		case !c.blocked || c.hAborted:
			c.block.Unlock()
			return
		case time.Since(c.blockedAt) >= blockedGrace:
			c.hAborted = true
			c.dev.Do(func() error { return nccl.CommAbort(c.h) })
			c.block.Unlock()
			return
		}
		c.block.Unlock()
		time.Sleep(wait)
	}
}

// end marks c ended, once Close or Abort has ended NCCL's communicators,
// and frees its name.
func (c *Comm) end() {
	freeName(c.name)
	c.ended.Store(true)
	close(c.endedCh)
}

func (c *Comm) setCause(err error) {
	c.cause.CompareAndSwap(nil, &err)
}

// Abort ends the communicator at once (ncclCommAbort): the collectives it
// queued stop, on every rank NCCL can tell, and the waits for them return;
// the data they were to write is undefined. The operations in progress on
// it give up and return an error wrapping ErrAborted, a Run or Close that
// waits in NCCL with Options.Blocking too; later ones, and
// Close, return an error wrapping highlevel.ErrClosed and ErrAborted. A
// second Abort, or one after Close, returns an error wrapping
// highlevel.ErrClosed.
func (c *Comm) Abort() error {
	if err := c.usable(); err != nil {
		return c.opErr("abort", err)
	}
	return c.abort(wrapf(ErrAborted, nil, "by Abort"))
}

// abort aborts c for cause, unless it is closed or aborted already. It
// must not be called by an operation in progress on c.
func (c *Comm) abort(cause error) error {
	if c.ended.Load() {
		return c.opErr("abort", c.closedErr())
	}
	// A Close in progress sees it and aborts instead of waiting; so do
	// the operations in progress, but for a blocking NCCL call, which
	// abortBlocked ends.
	c.setCause(cause)
	c.aborting.Store(true)
	if c.ctl != 0 {
		c.abortBlocked()
	}
	if !c.life.Close() {
		return c.opErr("abort", c.closedErr())
	}
	defer c.end()
	if err := c.ncclAbort(c.h, c.ctl); err != nil {
		return c.opErr("abort", err)
	}
	return nil
}

// Wait waits until the work queued on s so far is done, as s.Wait does.
// Once the wait has lasted a millisecond, it watches the communicator, and
// the stream, every millisecond: an asynchronous error of NCCL's (a peer
// died, the network failed), or a wait longer than the Timeout, aborts the
// communicator, so that its collectives stop, and Wait returns an error
// wrapping ErrAborted (and ErrTimeout, or NCCL's status). When ctx is done
// first, Wait returns ctx's error and leaves the work and the communicator
// alone. A nil s is the legacy default stream of the communicator's device.
//
// A plain s.Wait also waits for the collectives, but not for a rank that
// never comes: use Comm.Wait where one may fail.
func (c *Comm) Wait(ctx context.Context, s *highlevel.Stream) error {
	const op = "wait"
	if err := c.usable(); err != nil {
		return c.opErr(op, err)
	}
	if ctx == nil {
		return c.opErr(op, fmt.Errorf("%w: nil context", ErrConfig))
	}
	if s == nil {
		var err error
		if s, err = highlevel.LegacyDefaultStream(c.dev); err != nil {
			return c.opErr(op, err)
		}
	}
	if s.Device() != c.dev {
		return c.opErr(op, fmt.Errorf("a stream of %v for a communicator on %v", s.Device(), c.dev))
	}
	// Work that ends within quickWait, as a small collective's does, is
	// waited for by this goroutine alone, without watching the
	// communicator: a failure of NCCL's would keep it from ending.
	start := time.Now()
	quick, cancel := context.WithTimeout(ctx, min(quickWait, c.timeout))
	err := s.Wait(quick)
	cancel()
	switch {
	case err == nil:
		return c.waited(op, nil)
	case ctx.Err() != nil:
		return c.opErr(op, ctx.Err())
	case !errors.Is(err, context.DeadlineExceeded):
		return c.waited(op, err)
	}
	waitCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.Wait(waitCtx) }()
	deadline := time.NewTimer(c.timeout - time.Since(start))
	defer deadline.Stop()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	// The reports of callbacks' panics that the ticks' queries took: a
	// report goes to whichever call asks first.
	var panicked error
	for {
		select {
		case err := <-done:
			return c.waited(op, errors.Join(err, panicked))
		case <-ctx.Done():
			return c.opErr(op, errors.Join(ctx.Err(), panicked))
		case <-deadline.C:
			err := wrapf(ErrTimeout, ErrAborted, "the stream's work not done after %v", c.timeout)
			c.abort(err)
			return c.opErr(op, errors.Join(err, panicked))
		case <-tick.C:
			// s.Wait polls ever more rarely, at an eighth of the wait's
			// age: a wait of a second would end up to 125 ms late. A
			// query that fails otherwise (a capture elsewhere refuses
			// it, the stream was closed) leaves the deciding to s.Wait.
			idle, err := s.Query()
			if idle {
				cancel()
				werr := <-done
				if errors.Is(werr, context.Canceled) || errors.Is(werr, context.DeadlineExceeded) {
					werr = nil // the work is done
				}
				return c.waited(op, errors.Join(panicked, err, werr))
			}
			panicked = errors.Join(panicked, panics(err))
			if c.life.Closed() && c.cause.Load() == nil {
				continue // closed: Close finished NCCL's work; the stream's remains
			}
			if err := c.acquire(); err != nil {
				return c.opErr(op, errors.Join(err, panicked))
			}
			// An operation whose NCCL calls are in progress watches
			// the communicator itself: this tick leaves it alone.
			err = nil
			if c.calls.TryLock() {
				if c.stopped() == nil {
					err = asyncErr(c.h)
				}
				c.calls.Unlock()
			}
			c.release()
			if err != nil && !errors.Is(err, nccl.InProgress) {
				err = wrapf(ErrAborted, err, "NCCL failed")
				c.abort(err)
				return c.opErr(op, errors.Join(err, panicked))
			}
		}
	}
}

// panics returns the parts of err that report a callback's panic.
func panics(err error) error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var ps []error
		for _, part := range j.Unwrap() {
			if p := panics(part); p != nil {
				ps = append(ps, p)
			}
		}
		return errors.Join(ps...)
	}
	if _, ok := errors.AsType[*highlevel.PanicError](err); ok {
		return err
	}
	return nil
}

// quickWait is how long Comm.Wait waits for the stream before it watches
// the communicator too.
const quickWait = time.Millisecond

// waited is Wait's result once the stream's wait returned err.
func (c *Comm) waited(op string, err error) error {
	if err != nil {
		return c.opErr(op, err)
	}
	// The work ended; an abort may have ended it.
	if p := c.cause.Load(); p != nil {
		return c.opErr(op, *p)
	}
	return nil
}

// joined is several errors as one, all errors.Is-able, with a message of
// its own or theirs joined by ": ".
type joined struct {
	errs []error
	msg  string
}

func (j *joined) Error() string {
	if j.msg != "" {
		return j.msg
	}
	s := ""
	for i, e := range j.errs {
		if i > 0 {
			s += ": "
		}
		s += bare(e)
	}
	return s
}

func (j *joined) Unwrap() []error { return j.errs }
