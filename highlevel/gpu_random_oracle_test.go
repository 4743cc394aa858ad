package highlevel

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/gocuda/cuda/cudadrv"
	"github.com/gocuda/cuda/internal/randomtest"
)

// The oracle of TestGPURandomOps: the state of everything the program
// closes or frees (randomObj), which errors an operation may return given
// what the program did before and during it (randomUse, randomJudge), the
// minimum counts a program must reach (randomMinimums), and the model of
// the words of every allocation (randomMem), which every read is checked
// against. The decisions are pure functions of what the program recorded,
// tested without a GPU in gpu_random_model_test.go.

// A randomObj is something the program closes or frees: a shared stream,
// event, MemoryAsyncPool, GraphExec or Graph, the stream and event of a
// busyclose, or an allocation. Its state says whether its Close (or Free)
// has begun, and whether it has returned.
type randomObj struct {
	name  string
	kind  error // what using it once it is gone returns: ErrClosed or ErrFreed
	state atomic.Int32
}

const (
	randomOpen    = iota
	randomClosing // Close or Free called, not returned
	randomClosed  // Close or Free returned
)

func newRandomObj(name string, kind error) *randomObj { return &randomObj{name: name, kind: kind} }

// closeWith runs close, o's Close or Free, with o's state around it.
func (o *randomObj) closeWith(close func() error) error {
	o.state.Store(randomClosing)
	err := close()
	o.state.Store(randomClosed)
	return err
}

// A randomAllow lets an operation accept errors of randomExpected that
// only some operations may get.
type randomAllow uint32

const (
	allowDeadline randomAllow = 1 << iota
	allowUpdateShape
	allowDeviceLaunch
	allowAutoFreeDevice
	allowView
	allowNotShareable
	allowIPCSelf
	allowLegacyCapture
	allowCaptureStatus // a capture: CUDA's statuses of stream capture, where its own draws or a close of its stream explain them
	allowIsolation     // Stream.WaitEvent on a stream another goroutine captured meanwhile
	allowJoin          // Event.Record on a shared stream another goroutine captured meanwhile
	allowLaunchUnknown // a graph launch: driver 580's rare CUDA_ERROR_UNKNOWN beside a capture (launchUnknownBound)
)

// randomWhen is when an entry of randomExpected applies, besides the
// operation allowing it.
type randomWhen int

const (
	whenAllowed       randomWhen = iota // whenever the operation allows it
	whenClosed                          // an object the operation names was closed by the program (its Close had begun)
	whenFreed                           // memory the operation names was freed by the program (its Free had begun)
	whenCapture                         // another goroutine's capture was in progress during the operation, or a capture's own draws require it to fail
	whenCaptureStatus                   // a capture whose own draws require it to fail, or whose stream was closed
	whenIsolated                        // the stream waiting or recorded on was captured by another goroutine during the call
)

// randomExpected is every error TestGPURandomOps accepts, and why. An
// error is accepted when each of its parts (errors.Join) matches an entry
// that the operation allows (allow 0: every operation) at a time it
// applies (when). Any other error fails the seed and prints the seed,
// goroutine, operation and kind.
//
// What the package's code says about captures decides the capture
// entries. Another goroutine's capture never reaches the operations of the
// others as one of CUDA's statuses: the shim refuses, with ErrCapturing,
// every call on the legacy default stream while any capture is in
// progress, and the calls a capture in CaptureGlobal mode forbids on
// every thread (CUDA gets such a capture as a thread-local one); the
// package refuses waits, queries and Close of a capturing stream with
// ErrCapturing (Close puts the destruction off) and answers a wait for an
// event outside the capture with CUDA_ERROR_STREAM_CAPTURE_ISOLATION
// without handing it to CUDA; the test's gates keep every other call off
// a stream another goroutine captures but for the Event.Record of settle
// and deadline, which joins the capture, and is refused with
// CUDA_ERROR_STREAM_CAPTURE_INVALIDATED where the capture was spoiled
// already (allowJoin; seen on an H200, 2026-12-02). CUDA ignores, in the thread-local
// and relaxed modes, what other threads do. So a capture fails with one of
// CUDA's statuses only where its own draws make it (the legacy default
// stream, cuMemAlloc on the capturing thread in a strict mode, a fork left
// unjoined) or where its stream was closed under it, which leaves its
// forks unjoined.
var randomExpected = []struct {
	name  string
	allow randomAllow
	when  randomWhen
	is    func(error) bool
	why   string
}{
	{
		name: "closed",
		when: whenClosed,
		is:   func(err error) bool { return errors.Is(err, ErrClosed) },
		why: "the program closed a stream, event, MemoryAsyncPool, Graph or GraphExec the operation names " +
			"(stream, event, asyncpool, gexec and sources replace shared ones and close the old; busyclose closes " +
			"its stream and event under its helpers); required where the Close had returned before the operation began",
	},
	{
		name: "freed",
		when: whenFreed,
		is:   func(err error) bool { return errors.Is(err, ErrFreed) },
		why:  "freerace: the memory was freed by the goroutine while its helper copied it; required where the Free had returned first",
	},
	{
		name: "capturing",
		when: whenCapture,
		is:   func(err error) bool { return errors.Is(err, ErrCapturing) },
		why: "another goroutine's capture was in progress: the package refuses work on the legacy default stream " +
			"(nil, LegacyDefaultStream, copies and memsets without Async), waits, queries and Close of a capturing " +
			"stream, device-wide waits, and, during a capture in CaptureGlobal mode, allocation, freeing, queries, " +
			"Advise and Instantiate, Launch, Upload and Update of graphs, and the beginning of another capture; " +
			"also the capture kind's own refusals (Query of its capturing stream, a synchronous copy, cuMemAlloc in CaptureGlobal mode)",
	},
	{
		name:  "capture",
		allow: allowCaptureStatus,
		when:  whenCaptureStatus,
		is:    randomtest.CaptureStatus,
		why: "a capture whose own draws spoil it: cuMemAlloc on the capturing thread in CaptureThreadLocal mode " +
			"(_UNSUPPORTED, then _INVALIDATED), a fork left unjoined (_UNJOINED), the legacy default stream " +
			"(_UNSUPPORTED); or whose stream another goroutine closed, which leaves a fork unjoined",
	},
	{
		name:  "isolation",
		allow: allowIsolation,
		when:  whenIsolated,
		is:    func(err error) bool { return errors.Is(err, cudadrv.ERROR_STREAM_CAPTURE_ISOLATION) },
		why: "recordwait: WaitEvent on a shared stream another goroutine captured meanwhile, for an event outside " +
			"the capture: the package answers as CUDA would, and leaves the capture alone",
	},
	{
		name:  "joined",
		allow: allowJoin,
		when:  whenIsolated,
		is:    func(err error) bool { return errors.Is(err, cudadrv.ERROR_STREAM_CAPTURE_INVALIDATED) },
		why: "settle and deadline: Event.Record on a shared stream another goroutine captured meanwhile joins " +
			"its capture, and CUDA refuses it where that capture was invalidated already",
	},
	{
		name:  "launchunknown",
		allow: allowLaunchUnknown,
		when:  whenCapture,
		is:    func(err error) bool { return errors.Is(err, cudadrv.ERROR_UNKNOWN) },
		why: "a graph launch while another goroutine captured: driver 580 answered CUDA_ERROR_UNKNOWN, rarely " +
			"(a 4xH200 host, seed 94, 2026-11-27; an H200, 2 of 300 seeds, 2026-12-02), and the context went on; " +
			"counted, and bounded over the seeds (launchUnknownBound)",
	},
	{
		name:  "deadline",
		allow: allowDeadline,
		is: func(err error) bool {
			return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
		},
		why: "deadline: a wait given a deadline of 0 to 5 ms, or a cancelled context, ended before the work",
	},
	{
		name:  "updateshape",
		allow: allowUpdateShape,
		is:    func(err error) bool { return errors.Is(err, cudadrv.ERROR_GRAPH_EXEC_UPDATE_FAILURE) },
		why:   "gexec and sources: GraphExec.Update with a graph of another shape (a memset node where a host node was); required",
	},
	{
		name:  "devicelaunch",
		allow: allowDeviceLaunch,
		is: func(err error) bool {
			return errors.Is(err, cudadrv.ERROR_GRAPH_EXEC_UPDATE_FAILURE) ||
				errors.Is(err, cudadrv.ERROR_NOT_SUPPORTED) || errors.Is(err, cudadrv.ERROR_INVALID_VALUE)
		},
		why: "gexec and sources: an update or a host launch of a GraphExec instantiated with DeviceLaunch, " +
			"which CUDA may restrict (unsure: the test counts them so that they can be looked at)",
	},
	{
		name:  "autofreedevice",
		allow: allowAutoFreeDevice,
		is:    func(err error) bool { return errors.Is(err, cudadrv.ERROR_INVALID_VALUE) },
		why:   "InstantiateOptions with AutoFreeOnLaunch and DeviceLaunch: CUDA refuses the two together",
	},
	{
		name:  "view",
		allow: allowView,
		is: func(err error) bool {
			return strings.Contains(err.Error(), "Free of a view of memory")
		},
		why: "Array.Free of a view (ArrayOf, Slice) refuses: the memory's owner frees it; required",
	},
	{
		name:  "notshareable",
		allow: allowNotShareable,
		is:    func(err error) bool { return errors.Is(err, ErrNotShareable) },
		why:   "IPCHandle of managed or stream-ordered memory, or of an event without Interprocess; required",
	},
	{
		name:  "ipcself",
		allow: allowIPCSelf,
		is:    randomtest.AnyStatus,
		why: "OpenIPCMemory or OpenIPCEvent of a handle the process exported itself: " +
			"\"a process cannot open memory it exported itself\", with no status named, so any CUDA status",
	},
	{
		name:  "legacycapture",
		allow: allowLegacyCapture,
		is:    randomtest.AnyStatus,
		why: "capture: BeginCapture on the legacy default stream, which CUDA cannot capture " +
			"(the shim answers CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED); required",
	},
}

// randomFacts are what the oracle knows of an operation when its error
// comes back.
type randomFacts struct {
	allow randomAllow
	// before has the kind (ErrClosed, ErrFreed) of each object the
	// operation names whose Close or Free had returned before it began:
	// the operation must fail with one of them.
	before []error
	// closing has the kind of each object it names whose Close or Free
	// had begun by the time its error came back.
	closing []error
	// others says whether another goroutine's capture was in progress at
	// some time during the operation.
	others bool
	// isolated says whether the stream a WaitEvent made wait was captured
	// by another goroutine during the call.
	isolated bool
	// must says why the operation's own draws require it to fail; "" where
	// they do not.
	must string
}

// admits reports whether an entry of randomExpected applies.
func (f randomFacts) admits(allow randomAllow, when randomWhen) bool {
	if allow != 0 && f.allow&allow == 0 {
		return false
	}
	switch when {
	case whenClosed:
		return slices.Contains(f.closing, ErrClosed)
	case whenFreed:
		return slices.Contains(f.closing, ErrFreed)
	case whenCapture:
		return f.others || f.must != "" && f.allow&allowCaptureStatus != 0
	case whenCaptureStatus:
		return f.must != "" || len(f.closing) > 0
	case whenIsolated:
		return f.isolated
	}
	return true
}

// randomJudge judges err, the error of an operation of which f is known.
// It returns the names of the entries of randomExpected that err's parts
// match, and what is wrong with err: "" where nothing is. An error is
// expected only where the program's own actions explain it (f), and where
// they require one (an object closed or freed before the operation began,
// a draw that asks for a refusal), nil is wrong.
func randomJudge(err error, f randomFacts) ([]string, string) {
	if err == nil {
		switch {
		case len(f.before) > 0:
			return nil, fmt.Sprintf("returned nil; want %v: what it names was closed or freed before it began", f.before[0])
		case f.must != "":
			return nil, "returned nil; want an error: " + f.must
		}
		return nil, ""
	}
	var names []string
parts:
	for _, part := range randomtest.Parts(err) {
		for _, x := range randomExpected {
			if f.admits(x.allow, x.when) && x.is(part) {
				names = append(names, x.name)
				continue parts
			}
		}
		return nil, fmt.Sprintf("unexpected error (%s)", f)
	}
	if len(f.before) > 0 && !slices.ContainsFunc(f.before, func(k error) bool { return errors.Is(err, k) }) {
		return nil, fmt.Sprintf("want %v: what it names was closed or freed before it began", f.before[0])
	}
	return names, ""
}

// String describes f for a failure's message.
func (f randomFacts) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "another goroutine's capture during it %v", f.others)
	if len(f.closing) > 0 {
		fmt.Fprintf(&b, "; gone: %v", f.closing)
	}
	if len(f.before) > 0 {
		fmt.Fprintf(&b, "; gone before it began: %v", f.before)
	}
	if f.must != "" {
		fmt.Fprintf(&b, "; required to fail: %s", f.must)
	}
	if f.isolated {
		b.WriteString("; its stream was captured meanwhile")
	}
	return b.String()
}

// capBegun is what a capture adds to a capture count (randomWorld.capCount,
// a goroutine's own, a stream's) as it begins; it takes 1 away as it ends.
// A count holds the captures begun in its upper 32 bits and those in
// progress in its lower ones, so that one read sees both at one instant.
const capBegun = 1<<32 + 1

// randomOverlap reports whether a capture was in progress at some time
// between two reads of a capture count, then and now, other than the
// calling goroutine's own, whose count was ownThen and ownNow (0 and 0 to
// count them all).
func randomOverlap(then, now, ownThen, ownNow int64) bool {
	active := func(c int64) int64 { return c % (1 << 32) }
	begun := func(c int64) int64 { return c >> 32 }
	return active(then)-active(ownThen) > 0 || active(now)-active(ownNow) > 0 ||
		begun(now)-begun(then) > begun(ownNow)-begun(ownThen)
}

// A randomWindow is the state of the captures when an operation began: the
// program's, and the goroutine's own.
type randomWindow struct{ all, own int64 }

// A randomUse is what explains the errors of a call: the objects it names,
// whether each was gone before the call, what it allows besides, and what
// its own draws require. Make it (randomOp.on) before the call: Go
// evaluates a call's arguments from left to right, so ok(w.on(...),
// f(), ...) reads the states before f runs.
type randomUse struct {
	objs   []*randomObj
	before []bool
	allow  randomAllow
	must   string
	iso    *randomStream // allowIsolation's or allowJoin's stream, and its capture count before the call
	isoAt  int64
}

// on begins the judgement of a call that names objs (nil ones are left
// out) and allows allow.
func (o *randomOp) on(allow randomAllow, objs ...*randomObj) randomUse {
	u := randomUse{allow: allow}
	for _, x := range objs {
		if x != nil {
			u.objs = append(u.objs, x)
			u.before = append(u.before, x.state.Load() == randomClosed)
		}
	}
	return u
}

// mustFail records that the call's own draws require it to fail, and why.
func (u randomUse) mustFail(why string) randomUse {
	u.must = why
	return u
}

// recordsOn records the stream an Event.Record records on, for allowJoin.
func (u randomUse) recordsOn(rs *randomStream) randomUse {
	u.allow |= allowJoin
	u.iso, u.isoAt = rs, rs.caps.Load()
	return u
}

// waitsOn records the stream a WaitEvent makes wait, for allowIsolation.
func (u randomUse) waitsOn(rs *randomStream) randomUse {
	u.allow |= allowIsolation
	u.iso, u.isoAt = rs, rs.caps.Load()
	return u
}

// facts returns what is known of the call u began, now that its error is
// back.
func (o *randomOp) facts(u randomUse) randomFacts {
	f := randomFacts{allow: u.allow, must: u.must, others: o.others(o.win)}
	for i, x := range u.objs {
		if u.before[i] {
			f.before = append(f.before, x.kind)
		}
		if x.state.Load() != randomOpen {
			f.closing = append(f.closing, x.kind)
		}
	}
	if u.iso != nil {
		f.isolated = randomOverlap(u.isoAt, u.iso.caps.Load(), 0, 0)
	}
	return f
}

// window returns the state of the captures now.
func (o *randomOp) window() randomWindow {
	x := randomWindow{all: o.capCount.Load()}
	if o.own != nil {
		x.own = o.own.Load()
	}
	return x
}

// others reports whether a capture other than the goroutine's own was in
// progress at some time since x. A helper goroutine counts its
// goroutine's captures too (own is nil).
func (o *randomOp) others(x randomWindow) bool {
	now := o.window()
	return randomOverlap(x.all, now.all, x.own, now.own)
}

// A randomOp is who does an operation, for its errors: a goroutine, the
// operation's number and kind, and for a helper goroutine its number.
type randomOp struct {
	*randomWorld
	g, op, sub int
	kind       string
	win        randomWindow
	own        *atomic.Int64 // the goroutine's own captures (capBegun), nil in a helper
}

// ok judges err, the error of the call u began: it reports whether err is
// nil, counts the errors the oracle expects, and reports any other error,
// and a nil where an error is required, as a failure.
func (o *randomOp) ok(u randomUse, err error, format string, args ...any) bool {
	f := o.facts(u)
	names, problem := randomJudge(err, f)
	if problem != "" {
		o.fail("%s: %v: %s (captures now: the test's %d, the package's %d)",
			fmt.Sprintf(format, args...), err, problem, o.capCount.Load()%(1<<32), captures.Load())
		return false
	}
	if err == nil {
		return true
	}
	if len(f.before) > 0 || u.must != "" {
		o.note("required errors returned")
	}
	for i, part := range randomtest.Parts(err) {
		o.tally.add("expected "+names[i], 1)
		// Which of CUDA's statuses, for the summary.
		var r cudadrv.Result
		if errors.As(part, &r) {
			o.tally.add(names[i]+" "+r.String(), 1)
		}
	}
	return false
}

func (o *randomOp) fail(format string, args ...any) {
	who := fmt.Sprintf("goroutine %d", o.g)
	if o.sub >= 0 {
		who += fmt.Sprintf(" (helper %d)", o.sub)
	}
	o.t.Errorf("seed %d (HL_RANDOM_SEED=%d) %s op %d (%s): %s", o.seed, o.seed, who, o.op, o.kind, fmt.Sprintf(format, args...))
}

func (o *randomOp) note(key string) { o.tally.add(key, 1) }

// reached counts an operation of o's kind that found what it works on: the
// minimum counts are fractions of these.
func (o *randomOp) reached() { o.note("reached " + o.kind) }

// helper returns o for helper goroutine i of the operation, which counts
// the goroutine's own captures as others'.
func (o randomOp) helper(i int) *randomOp {
	o.sub = i
	o.own, o.win.own = nil, 0
	return &o
}

// A randomTally counts what happened: operations per kind, expected errors
// per reason, and events ("graphs launched", "capture global ok").
type randomTally struct {
	mu sync.Mutex
	n  map[string]int64
}

func newRandomTally() *randomTally { return &randomTally{n: map[string]int64{}} }

func (c *randomTally) add(key string, n int64) {
	c.mu.Lock()
	c.n[key] += n
	c.mu.Unlock()
}

func (c *randomTally) merge(o *randomTally) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for k, v := range o.n {
		c.add(k, v)
	}
}

// counts returns a copy of the counts.
func (c *randomTally) counts() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := make(map[string]int64, len(c.n))
	for k, v := range c.n {
		m[k] = v
	}
	return m
}

// String gives the operations per kind, the expected errors, then the rest.
func (c *randomTally) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var b strings.Builder
	b.WriteString("operations:")
	for _, k := range randomKinds {
		fmt.Fprintf(&b, " %s %d", k.name, c.n["op "+k.name])
		if s := c.n["skipped "+k.name]; s > 0 {
			fmt.Fprintf(&b, " (skipped %d)", s)
		}
	}
	b.WriteString("\nexpected errors:")
	for _, x := range randomExpected {
		fmt.Fprintf(&b, " %s %d", x.name, c.n["expected "+x.name])
	}
	var rest []string
	for k := range c.n {
		if !strings.HasPrefix(k, "op ") && !strings.HasPrefix(k, "skipped ") && !strings.HasPrefix(k, "expected ") {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	b.WriteString("\nevents:")
	for i, k := range rest {
		if i%6 == 0 {
			b.WriteString("\n ")
		}
		fmt.Fprintf(&b, " %s %d;", k, c.n[k])
	}
	return b.String()
}

// A randomMinimum is a count a program must reach: key, at least a
// quarter of per times the count of reached (the operations of a kind
// that found what they work on, "reached <kind>"), where that expectation
// is at least randomMinExpect. per is worked out from the draws' odds,
// times a guess of how often the operation succeeds, made low on purpose
// (see randomMinimums): a program on a loaded machine, with more of its
// operations overlapping captures, reaches it still, but one where a whole
// kind of operation fails with an error the oracle allows does not.
type randomMinimum struct {
	key, reached string
	per          float64
}

// randomMinExpect is the least expectation a minimum is checked at: a
// quarter of it is 8, which a count of Poisson's law with mean 32 misses
// with odds of about 1 in 10^7.
const randomMinExpect = 32

// Odds that the minimums use (see randomMinimums). An operation on a
// shared stream or the goroutine's own goes through unless a Close races
// it (shared streams are replaced about once in 40 operations of a
// goroutine): randomLikely. One on the legacy default stream (a
// synchronous copy, memset or allocation of a MemoryAsyncPool, or a call
// on the shared stream that is the legacy default one, one slot of four
// at first) is refused while any capture is in progress, and the
// goroutines capture about a twelfth of their operations: randomLegacy
// supposes they capture most of the time. A capture, an allocation with
// cuMemAlloc, a graph's instantiation or launch is refused while another
// goroutine captures in CaptureGlobal mode: randomGated.
const (
	randomLikely = 0.6
	randomLegacy = 0.2
	randomGated  = 0.4
)

// randomMinimums are the counts each program must reach, per kind of
// operation and outcome. per is the odds of the draws that lead to the
// count in an operation that reached its kind, times the odds above.
var randomMinimums = []randomMinimum{
	// alloc: 4 of 11 ways with cuMemAlloc (Device.Alloc, MemoryPool.Alloc,
	// AllocArray of both), 3 stream-ordered on a shared stream, 3 on the
	// legacy default stream (MemoryAsyncPool.Alloc, AllocArray of it,
	// ArrayFrom), 1 managed.
	{"alloc ok", "alloc", 4.0/11*randomGated + 3.0/11*randomLikely*0.75 + 3.0/11*randomLegacy + 1.0/11*randomGated},
	{"alloc device ok", "alloc", 4.0 / 11 * randomGated},
	{"alloc stream-ordered ok", "alloc", 3.0 / 11 * randomLikely * 0.75},
	{"alloc legacy ok", "alloc", 3.0 / 11 * randomLegacy},
	// write: five ways, a fifth each (a copy from another allocation where
	// there is one as large: half the time, say; else a fill); on a shared
	// stream, a legacy one a quarter of the time at first; CopyFromHost on
	// the legacy default stream.
	{"write ok", "write", 0.4},
	{"write fill ok", "write", 0.2 * randomLikely * 0.75},
	{"write MemsetAsync ok", "write", 0.2 * randomLikely * 0.75},
	{"write CopyFromHostAsync ok", "write", 0.2 * randomLikely * 0.75},
	{"write CopyFromHost ok", "write", 0.2 * randomLegacy},
	{"write CopyFromDeviceAsync ok", "write", 0.1 * randomLikely * 0.75},
	// verify: a third with the check kernel on a shared stream; else host
	// reads, three in four on the legacy default stream.
	{"verify device ok", "verify", 1.0 / 3 * randomLikely * 0.75 * 0.8},
	{"verify host ok", "verify", 2.0 / 3 * (0.25*randomLikely*0.75 + 0.75*randomLegacy)},
	// free: three in four freed, one in four dropped (views among them,
	// whose Free refuses); each checked whole first, which must work.
	{"free ok", "free", 0.75 * 0.8},
	{"check free ok", "free", 0.75 * 0.8},
	{"check drop ok", "free", 0.25 * 0.8},
	{"stream replaced", "stream", randomLikely},
	{"event replaced", "event", randomLikely},
	{"record ok", "recordwait", randomLikely * 0.75},
	{"waitevent ok", "recordwait", randomLikely * 0.75 * randomLikely},
	// wait: Event.Wait and Stream.Wait half of the time; a capture of the
	// stream refuses it.
	{"wait ok", "wait", 0.5 * randomLikely * randomGated},
	{"deadline waits", "deadline", randomLikely * 0.75},
	{"query ok", "query", randomGated},
	{"hostfunc queued", "hostfunc", randomLikely * 0.75},
	// graph: half captured on the goroutine's own stream, half built; a
	// capture is refused while another goroutine captures in CaptureGlobal
	// mode; the instantiation and the launch likewise, and the launch is
	// on the legacy default stream now and then.
	{"capture own ok", "graph", 0.5 * randomGated},
	{"built graphs", "graph", 0.5 * randomGated},
	{"graphs launched", "graph", 0.5 * randomGated * randomGated * randomGated},
	{"built graphs launched", "graph", 0.5 * 0.75 * randomGated * randomGated * randomGated},
	// capture: a third in each mode; on the legacy default stream 3/16 of
	// the time at first (refused); one in three draws a refusal (Query of
	// the stream, a synchronous copy) in every mode, one in six cuMemAlloc,
	// refused in the strict modes; one in 24 leaves a fork unjoined.
	{"capture ok", "capture", 13.0 / 16 * 23 / 24 * (1.0/3*4/6 + 2.0/3*3/6) * randomGated},
	{"capture relaxed ok", "capture", 1.0 / 3 * 13 / 16 * 23 / 24 * 4 / 6 * randomGated},
	{"capture global ok", "capture", 1.0 / 3 * 13 / 16 * 23 / 24 * 3 / 6 * randomGated},
	{"capture thread-local ok", "capture", 1.0 / 3 * 13 / 16 * 23 / 24 * 3 / 6 * randomGated},
	{"capture refusals required", "capture", 0.3},
	{"captured graphs launched", "capture", 0.4 * randomGated * randomGated * randomGated},
	// gexec: launches 4 in 10 (where the slot holds one: half the time,
	// say), updates 2 in 10, replacements 2 in 10 and the empty slots.
	{"gexec launches", "gexec", 0.4 * 0.5 * randomGated * randomLikely * 0.75},
	{"gexec replaced", "gexec", 0.2 * randomGated * randomGated},
	{"gexec updates", "gexec", 0.2 * 0.5 * 0.75 * randomGated * randomGated},
	{"sources launched and closed", "sources", 5.0 / 8 * 0.5 * randomGated * randomGated * randomLikely},
	{"busy streams closed", "busyclose", 0.8},
	// typed: a write and a read each time; host copies without Async half
	// of the time, on the legacy default stream.
	{"typed writes", "typed", 0.5*randomLegacy + 0.5*randomLikely*0.75},
	{"typed reads", "typed", 0.5*randomLegacy + 0.5*randomLikely*0.75},
	// Spans of 2 MiB and more, which host copies stage: half the time in an
	// allocation of as many, which 1 in 20 new ones are (and 8 in 20 take
	// the size of one the goroutine holds).
	{"typed copies staged", "typed", 2 * 0.5 * 0.05 * (0.5*randomLegacy + 0.5*randomLikely*0.75)},
	{"pinned copies", "pinned", randomGated * randomLikely * 0.75 * randomLikely * 0.75},
	{"views", "view", 0.8},
	{"view owners dropped", "view", 0.5 * 0.8},
	{"check view drop ok", "view", 0.5 * 0.8},
	{"ipc handles", "ipc", 2.0 / 3 * 0.5},
	{"managed ok", "managed", randomGated * randomLikely * 0.75},
	{"async frees queued behind another stream's kernel", "asyncpool", randomLikely * 0.75 * randomLikely},
	{"freerace copies", "freerace", 0.8},
	{"poolorder checked", "poolorder", randomLikely * 0.75 * randomLikely},
	{"check end ok", "end", 0.8},
}

// randomShortfalls returns, for the counts n of a program, a line for each
// minimum of mins it misses.
func randomShortfalls(n map[string]int64, mins []randomMinimum) []string {
	var short []string
	for _, m := range mins {
		expect := m.per * float64(n["reached "+m.reached])
		if expect < randomMinExpect {
			continue
		}
		if want := int64(expect / 4); n[m.key] < want {
			short = append(short, fmt.Sprintf("%d of %q, want at least %d: a quarter of %.1f expected of %d operations of kind %s that reached it",
				n[m.key], m.key, want, expect, n["reached "+m.reached], m.reached))
		}
	}
	return short
}

// The model of an allocation's words.

// randomCands is the most values the model keeps for a word: a word that
// may hold more is unknown.
const randomCands = 4

// A randomSeg is a run of words of a randomMem from word at to the next
// run: each may hold any of vals (sorted; one value where it is known), or
// anything where vals is nil.
type randomSeg struct {
	at   int
	vals []uint32
	how  string // how it was written, for errors
}

// A randomRun is a run of words, from at to end, clipped to a span.
type randomRun struct {
	at, end int
	vals    []uint32
	how     string
}

// A randomMem is an allocation a goroutine owns, and its model.
type randomMem struct {
	kind    string // how it was allocated
	p       MemoryPointer
	arr     *Array[uint32] // for arrays and views, else nil
	view    bool           // arr is a view: ArrayOf or Slice, its owner dropped
	on      *randomStream  // the stream a stream-ordered allocation is freed on, or nil
	pooled  bool           // a block of the world's MemoryPool (counts as dropped when dropped)
	managed bool
	ipc     bool // from cuMemAlloc: IPCHandle shares it
	n       int  // words
	segs    []randomSeg
	obj     *randomObj // its Free
}

// newRandomMem returns the model of n words of unknown content.
func newRandomMem(kind string, n int) *randomMem {
	return &randomMem{kind: kind, n: n, segs: []randomSeg{{at: 0}}, obj: newRandomObj("memory", ErrFreed)}
}

// segEnd returns the end of segment k.
func (a *randomMem) segEnd(k int) int {
	if k+1 < len(a.segs) {
		return a.segs[k+1].at
	}
	return a.n
}

// setVals makes words i to j-1 each one of vals (nil: unknown).
func (a *randomMem) setVals(i, j int, vals []uint32, how string) {
	if i >= j {
		return
	}
	var before, after []randomSeg
	for k, s := range a.segs {
		e := a.segEnd(k)
		if s.at < min(e, i) {
			before = append(before, s)
		}
		if st := max(s.at, j); st < e {
			s.at = st
			after = append(after, s)
		}
	}
	var out []randomSeg
	add := func(s randomSeg) {
		if n := len(out); n > 0 && (out[n-1].vals == nil) == (s.vals == nil) && slices.Equal(out[n-1].vals, s.vals) {
			return
		}
		out = append(out, s)
	}
	for _, s := range before {
		add(s)
	}
	add(randomSeg{at: i, vals: vals, how: how})
	for _, s := range after {
		add(s)
	}
	a.segs = out
}

// set makes words i to j-1 all v, written by how.
func (a *randomMem) set(i, j int, v uint32, how string) { a.setVals(i, j, []uint32{v}, how) }

// forget makes words i to j-1 unknown: a write may still be in flight.
func (a *randomMem) forget(i, j int) { a.setVals(i, j, nil, "") }

// randomUnion returns the values of a and b, sorted; nil where either is
// unknown or there are more than randomCands.
func randomUnion(a, b []uint32) []uint32 {
	if a == nil || b == nil {
		return nil
	}
	u := slices.Clone(a)
	for _, v := range b {
		if !slices.Contains(u, v) {
			u = append(u, v)
		}
	}
	if len(u) > randomCands {
		return nil
	}
	slices.Sort(u)
	return u
}

// maybe records a write of v to words i to j-1 that failed, and so may
// have written any of them, or none, once it is done: each word holds what
// it held or v.
func (a *randomMem) maybe(i, j int, v uint32, how string) {
	for _, r := range a.runs(i, j) {
		a.setVals(r.at, r.end, randomUnion(r.vals, []uint32{v}), how+" (which failed)")
	}
}

// runs returns the runs of words i to j-1, clipped to them.
func (a *randomMem) runs(i, j int) []randomRun {
	var rs []randomRun
	for k, s := range a.segs {
		if e := a.segEnd(k); e > i && s.at < j {
			rs = append(rs, randomRun{at: max(s.at, i), end: min(e, j), vals: s.vals, how: s.how})
		}
	}
	return rs
}

// copyFrom sets words i to i+n-1 to what words bi to bi+n-1 of b hold.
func (a *randomMem) copyFrom(i int, b *randomMem, bi, n int) {
	for _, r := range b.runs(bi, bi+n) {
		a.setVals(i+r.at-bi, i+r.end-bi, r.vals, r.how)
	}
}

// maybeCopy records a copy of words bi to bi+n-1 of b to words i to
// i+n-1 that failed: each word holds what it held or what b's held.
func (a *randomMem) maybeCopy(i int, b *randomMem, bi, n int, how string) {
	ra, rb := a.runs(i, i+n), b.runs(bi, bi+n)
	type piece struct {
		at, end int
		vals    []uint32
	}
	var ps []piece
	for x, y := 0, 0; x < len(ra) && y < len(rb); {
		lo := max(ra[x].at-i, rb[y].at-bi)
		hi := min(ra[x].end-i, rb[y].end-bi)
		ps = append(ps, piece{lo, hi, randomUnion(ra[x].vals, rb[y].vals)})
		if ra[x].end-i == hi {
			x++
		}
		if rb[y].end-bi == hi {
			y++
		}
	}
	for _, p := range ps {
		a.setVals(i+p.at, i+p.end, p.vals, how+" (which failed)")
	}
}

// randomWant describes the values a word may hold.
func randomWant(vals []uint32) string {
	if len(vals) == 1 {
		return fmt.Sprintf("%#x", vals[0])
	}
	s := make([]string, len(vals))
	for i, v := range vals {
		s[i] = fmt.Sprintf("%#x", v)
	}
	return "one of " + strings.Join(s, ", ")
}

// check compares got, words i to i+len(got)-1 of a, with the model, and
// returns what differs, "" where nothing does. Words that may hold one of
// several values (after a write that failed) hold, from now on, the one
// read: the writes that may have changed them are done.
func (a *randomMem) check(i int, got []uint32) string {
	j := i + len(got)
	var fixes []randomRun
	for _, r := range a.runs(i, j) {
		if r.vals == nil {
			continue
		}
		for x := r.at; x < r.end; x++ {
			if len(r.vals) == 1 && got[x-i] == r.vals[0] || len(r.vals) > 1 && slices.Contains(r.vals, got[x-i]) {
				continue
			}
			bad := 0
			for y := r.at; y < r.end; y++ {
				if !slices.Contains(r.vals, got[y-i]) {
					bad++
				}
			}
			return fmt.Sprintf("word %d is %#x, want %s (written by %s); %d of words %d..%d differ",
				x, got[x-i], randomWant(r.vals), r.how, bad, r.at, r.end-1)
		}
		if len(r.vals) > 1 {
			for x := r.at; x < r.end; {
				y := x + 1
				for y < r.end && got[y-i] == got[x-i] {
					y++
				}
				fixes = append(fixes, randomRun{at: x, end: y, vals: []uint32{got[x-i]}, how: r.how + ", read back"})
				x = y
			}
		}
	}
	for _, f := range fixes {
		a.setVals(f.at, f.end, f.vals, f.how)
	}
	return ""
}

// compare checks got, words i to i+len(got)-1 of a, against the model.
func (a *randomMem) compare(o *randomOp, i int, got []uint32, how string) {
	if msg := a.check(i, got); msg != "" {
		o.fail("%s of %s: %s", how, a.describe(), msg)
	}
}

// at returns a pointer to word i.
func (a *randomMem) at(i int) MemoryPointer {
	p, err := a.p.Add(4 * i)
	if err != nil {
		panic(err) // the model keeps i within the memory
	}
	return p
}

// arg is words i to j-1 of a as a kernel argument: the Array when the span
// is all of it.
func (a *randomMem) arg(i, j int) any {
	if a.arr != nil && i == 0 && j == a.n {
		return a.arr
	}
	return a.at(i)
}

func (a *randomMem) describe() string {
	return fmt.Sprintf("a %s of %d words", a.kind, a.n)
}

// launchUnknownBound checks that the graph launches refused with
// CUDA_ERROR_UNKNOWN (allowLaunchUnknown) stay rare: at most 1 in 500 of
// the launches that worked, or 2, over all seeds. n are the seeds' counts.
func launchUnknownBound(n map[string]int64) string {
	unknown, launched := n["expected launchunknown"], n["graphs launched"]
	if unknown > max(2, launched/500) {
		return fmt.Sprintf("%d graph launches refused with CUDA_ERROR_UNKNOWN beside a capture, of %d that worked: more than driver 580's rare fault", unknown, launched)
	}
	return ""
}
