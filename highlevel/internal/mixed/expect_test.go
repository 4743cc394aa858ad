package mixed

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/gocuda/cuda/cudadrv"
	"github.com/gocuda/cuda/highlevel"
	"github.com/gocuda/cuda/internal/randomtest"
)

// An allow names the errors of expected that a call may return: each call
// passes those its documentation allows it, and every other error fails
// the program.
type allow uint32

const (
	aClosed       allow = 1 << iota // another goroutine closed a shared stream, event, pool or GraphExec
	aCapAny                         // ErrCapturing, while a capture of the program was in progress
	aCapGlobal                      // ErrCapturing, while one in CaptureGlobal mode was
	aCapStatus                      // CUDA's statuses of stream capture, while a capture was in progress
	aPartial                        // a copy's error that says it copied part of its bytes, while a capture was
	aDeadline                       // a wait given a short deadline ended at it
	aView                           // the Free of a view refused
	aNotShareable                   // IPCHandle of what cannot be shared
	aIPCSelf                        // OpenIPCMemory or OpenIPCEvent of the process's own export
)

// window is when an expected error may happen.
type windowKind int

const (
	always windowKind = iota
	duringCapture
	duringGlobal
)

// expected is every error the test accepts, and why. An error is accepted
// when each of its parts (errors.Join, or several %w) matches an entry the
// call allows, in its window: a capture was in progress at some time
// during the operation (from its start to the error), or one in
// CaptureGlobal mode was. A copy's error is matched whole (see
// allowCopy).
var expected = []struct {
	name  string
	allow allow
	when  windowKind
	is    func(error) bool
	why   string
}{
	{
		name:  "closed",
		allow: aClosed,
		is:    func(err error) bool { return errors.Is(err, highlevel.ErrClosed) },
		why: "another goroutine closed the shared stream, event, MemoryAsyncPool or GraphExec (stream, event, " +
			"asyncpool, gexec); ClearCaches fails no linalg call",
	},
	{
		name:  "capturing",
		allow: aCapAny,
		when:  duringCapture,
		is:    func(err error) bool { return errors.Is(err, highlevel.ErrCapturing) },
		why: "a capture was in progress: the package refuses work on the legacy default stream (plain copies " +
			"and memsets, nil streams), device-wide waits, and waits and queries of a stream that takes part in a capture",
	},
	{
		name:  "capturing-global",
		allow: aCapGlobal,
		when:  duringGlobal,
		is:    func(err error) bool { return errors.Is(err, highlevel.ErrCapturing) },
		why: "a capture in CaptureGlobal mode was in progress: the package refuses, on every goroutine, " +
			"allocation and freeing, queries, Advise, Instantiate, Launch, Upload " +
			"and Update of graphs, and the beginning of another capture (which CUDA refuses then too)",
	},
	{
		name:  "capture-status",
		allow: aCapStatus,
		when:  duringCapture,
		is:    randomtest.CaptureStatus,
		why: "a capture was in progress: CUDA refuses a wait for an event outside the capture on a capturing " +
			"stream (_ISOLATION), and what its mode forbids, and invalidates the capture (_INVALIDATED)",
	},
	{
		name:  "partial",
		allow: aPartial,
		when:  duringCapture,
		is:    partialCopy,
		why:   "a copy begun before a capture, refused part way through: its error says so (see partialCopy)",
	},
	{
		name:  "deadline",
		allow: aDeadline,
		is: func(err error) bool {
			return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
		},
		why: "wait: a wait given a deadline of 0 to 2 ms ended before the work",
	},
	{
		name:  "view",
		allow: aView,
		is:    func(err error) bool { return errors.Is(err, highlevel.ErrInvalid) },
		why:   "read and write: Array.Free of a view (ArrayOf, Slice) is refused: its owner frees the memory",
	},
	{
		name:  "notshareable",
		allow: aNotShareable,
		is:    func(err error) bool { return errors.Is(err, highlevel.ErrNotShareable) },
		why:   "ipc: IPCHandle of managed memory or of an event without Interprocess",
	},
	{
		name:  "ipcself",
		allow: aIPCSelf,
		is:    func(err error) bool { return randomtest.AnyStatus(err) || errors.Is(err, highlevel.ErrInvalid) },
		why:   "ipc: a process cannot open memory or an event it exported itself; CUDA's status, or the package's refusal",
	},
}

// classify returns the names of expected's entries that err matches, and
// whether it is accepted: each part of err (or err whole, when whole) matches
// an entry that a admits in its window.
func classify(err error, a allow, whole bool, w windowState) ([]string, bool) {
	ps := randomtest.Parts(err)
	if whole {
		ps = []error{err}
	}
	var names []string
next:
	for _, part := range ps {
		for _, x := range expected {
			if a&x.allow == 0 || x.when == duringCapture && !w.any || x.when == duringGlobal && !w.global {
				continue
			}
			if x.is(part) {
				names = append(names, x.name)
				continue next
			}
		}
		return nil, false
	}
	return names, true
}

// A windowState says which captures were in progress at some time during
// an operation.
type windowState struct{ any, global bool }

// A window is the state of the program's captures when an operation
// began: for each of all captures and those in CaptureGlobal mode, the
// number begun (upper 32 bits) and in progress (lower ones), read at one
// instant.
type window struct{ any, global int64 }

// capBegun is what a capture adds to a count of window as it begins; it
// takes 1 away as it ends.
const capBegun = 1<<32 + 1

func (p *program) window() window {
	return window{p.capAny.Load(), p.capGlobal.Load()}
}

// since reports which captures were in progress at some time from x to
// now.
func (p *program) since(x window) windowState {
	now := p.window()
	during := func(then, now int64) bool {
		return then%(1<<32) > 0 || now%(1<<32) > 0 || then>>32 != now>>32
	}
	return windowState{any: during(x.any, now.any), global: during(x.global, now.global)}
}

// An op is who does an operation, for its errors: a goroutine, the
// operation's number and kind, and for a helper goroutine its number.
type op struct {
	*program
	g, n, sub int
	kind      string
	win       window
}

// ok reports whether err is nil. It counts the errors expected lists and a
// admits, and reports any other error as a failure.
func (o *op) ok(err error, a allow, format string, args ...any) bool {
	return o.check(err, a, false, format, args...)
}

// okCopy is ok for a copy, whose error is matched whole: a copy refused
// part way through may wrap the partial copy's error and the refusal
// together.
func (o *op) okCopy(err error, a allow, format string, args ...any) bool {
	return o.check(err, a|aPartial, true, format, args...)
}

func (o *op) check(err error, a allow, whole bool, format string, args ...any) bool {
	if err == nil {
		return true
	}
	w := o.since(o.win)
	names, accepted := classify(err, a, whole, w)
	if !accepted {
		o.fail("%s: %v (unexpected error; captures during the operation: any %v, global %v)",
			fmt.Sprintf(format, args...), err, w.any, w.global)
		return false
	}
	for _, n := range names {
		o.note("expected " + n)
	}
	var r cudadrv.Result
	if errors.As(err, &r) {
		o.note("status " + r.String())
	}
	return false
}

// fail fails the program, naming the seed, goroutine and operation.
func (o *op) fail(format string, args ...any) {
	who := fmt.Sprintf("goroutine %d", o.g)
	if o.sub >= 0 {
		who += fmt.Sprintf(" (helper %d)", o.sub)
	}
	o.t.Errorf("seed %d (rerun: GOCUDA_MIXED_SEED=%d GOCUDA_MIXED_PROGRAMS=1) %s op %d (%s): %s",
		o.seed, o.seed, who, o.n, o.kind, fmt.Sprintf(format, args...))
}

func (o *op) note(key string) { o.tally.add(key, 1) }

// helper returns o for helper goroutine i of the operation.
func (o op) helper(i int) *op {
	o.sub = i
	return &o
}

// A tally counts what happened: operations per kind, expected errors per
// reason, and events ("graphs launched").
type tally struct {
	mu sync.Mutex
	n  map[string]int64
}

func newTally() *tally { return &tally{n: map[string]int64{}} }

func (c *tally) add(key string, n int64) {
	c.mu.Lock()
	c.n[key] += n
	c.mu.Unlock()
}

func (c *tally) merge(o *tally) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for k, v := range o.n {
		c.add(k, v)
	}
}

// String gives the operations per kind, the expected errors, then the rest.
func (c *tally) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var b strings.Builder
	b.WriteString("operations:")
	for _, k := range kinds {
		fmt.Fprintf(&b, " %s %d", k.name, c.n["op "+k.name])
		if s := c.n["skipped "+k.name]; s > 0 {
			fmt.Fprintf(&b, " (skipped %d)", s)
		}
	}
	b.WriteString("\nexpected errors:")
	for _, x := range expected {
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
		if i%5 == 0 {
			b.WriteString("\n ")
		}
		fmt.Fprintf(&b, " %s %d;", k, c.n[k])
	}
	return b.String()
}
