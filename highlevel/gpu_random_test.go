package highlevel

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gocuda/cuda/cudadrv"
	"github.com/gocuda/cuda/internal/randomtest"
)

// randomKernels are the kernels of TestGPURandomOps: fill writes v to n
// words, check counts in *bad the words that differ from v.
const randomKernels = `
extern "C" __global__ void fill(unsigned *p, unsigned v, int n) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) p[i] = v;
}
extern "C" __global__ void check(const unsigned *p, unsigned v, int n, int *bad) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n && p[i] != v) atomicAdd(bad, 1);
}
`

const (
	// randomOwned is the most allocations a goroutine holds at once.
	randomOwned = 8
	// randomWait bounds every wait that must not time out: the test's
	// work takes microseconds to milliseconds, so a wait that lasts longer
	// has lost its wake-up.
	randomWait = time.Second
	// randomStaged is the size from which copies with pageable memory are
	// staged, in words (2 MiB).
	randomStaged = 1 << 19
)

// TestGPURandomOps runs goroutines that issue random sequences of the
// package's operations over shared streams, events, pools, graphs and
// kernels: they close and replace the streams, events and pools while the
// others use them, capture graphs in every capture mode on streams the
// others use and close, launch, update and close executable graphs that
// all of them share, and free memory or drop it for the GC. Each goroutine
// owns its allocations and keeps a model of every word of them (runs of
// words of one value, or unknown after a write that failed), against which
// every read is checked, on the host or with a kernel. The test proves
// that an operation on an object closed by another goroutine fails with
// ErrClosed and never crashes, that no pool hands out memory still in use,
// that no memory is corrupted, that every host function queued runs, that
// every error is one randomExpected lists, and that the test's pool gets
// back all the memory freed.
//
// Each kind of operation has a short name (see randomKinds), used by
// $HL_RANDOM_SKIP and in the summary the test logs at its end: operations
// per kind, expected errors per reason, graphs launched, captures per mode
// and outcome, and so on.
//
// Knobs, all environment variables:
//
//	HL_RANDOM_SEEDS       seeds to run, from 0 (default 100, or 5 with -short)
//	HL_RANDOM_SEED        run this seed only (17 runs subtest seed17)
//	HL_RANDOM_OPS         operations per goroutine (default 150)
//	HL_RANDOM_GOROUTINES  goroutines per seed (default 8)
//	HL_RANDOM_SKIP        kinds of operation to leave out, such as
//	                      "capture,asyncpool"; an unknown name fails the test
//	HL_RANDOM_ONLY        the only kinds of operation to run (the others are
//	                      skipped), such as "alloc,capture"
//
// Goroutine g of seed s draws, from rand.NewPCG(s, g), the kind of each
// of its operations and a seed for the numbers that operation draws: what
// each goroutine does is the same on every run of the seed, whatever the
// operations before it returned and however the goroutines interleave (an
// operation's numbers pick among what the goroutine holds, which depends
// on what succeeded before). A skipped kind still takes its draws, so
// skipping one leaves the others' draws as they were.
//
// The test avoids the interleavings where the package's documentation
// leaves it open whether they are the program's bug, for the reasons
// given:
//
//   - Work queued on a stream while another goroutine captures it: CUDA
//     would make it a node of that goroutine's graph, run only when, and
//     each time, that graph is launched (a stream-ordered allocation or
//     free an allocation or free node, a graph launch a child graph, a
//     host function a host node, an event record a join for the streams
//     that wait for it). Each shared stream has a gate (randomStream) that
//     such work holds shared and a capture holds exclusively; what the
//     others still do to a capturing stream (wait, query, synchronize,
//     WaitEvent, close) is refused or harmless.
//   - Freeing memory while work queued on another stream may still use it
//     (the MemoryPool's rule): every write is waited for on the host before
//     the operation ends, but for the asyncpool kind's stream-ordered frees
//     behind an event. Those are queued on the goroutine's own streams
//     only: on a shared stream that another goroutine closes meanwhile,
//     the free would move to the legacy default stream, which a
//     non-blocking stream's work does not precede.
//   - Freeing pinned memory whose asynchronous copy may not be done: where
//     the wait for the copy fails, the test leaks the pinned memory.
//   - Strict captures begun and ended on different OS threads: the capture
//     would go on for ever; the capture kind only tries an EndCapture from
//     a second thread while the capturing goroutine stays locked to its
//     own, which then ends the capture.
//   - Waiting for the whole device to settle memory while a capture may be
//     in progress: the test's syncDevice holds a lock that excludes its
//     captures (the devsync kind waits without it, only to stress them).
//
// Package highlevel/linalg's calls are left out: a test in package
// highlevel cannot import it, since it imports highlevel.
func TestGPURandomOps(t *testing.T) {
	d := gpu(t)
	cfg := newRandomConfig(t)

	c, err := Compile(randomKernels, &CompileOptions{Name: "random.cu"})
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	m, err := LoadModule(c.Image)
	if err != nil {
		t.Fatalf("LoadModule: %v", err)
	}
	defer m.Close()
	fill, check := kernel(t, m, "fill"), kernel(t, m, "check")
	// Load the kernels into the device before any capture: a strict
	// capture refuses the loading, at a kernel's first launch.
	warm, err := d.Alloc(8)
	if err != nil {
		t.Fatal(err)
	}
	if err := fill.Launch(nil, randomGrid(1), warm, uint32(0), int32(1)); err != nil {
		t.Fatal(err)
	}
	count, err := warm.Add(4)
	if err != nil {
		t.Fatal(err)
	}
	if err := check.Launch(nil, randomGrid(1), warm, uint32(0), int32(1), count); err != nil {
		t.Fatal(err)
	}
	if err := d.Synchronize(); err != nil {
		t.Fatal(err)
	}
	if err := warm.Memory().free(); err != nil {
		t.Fatal(err)
	}

	sum := newRandomTally()
	for _, seed := range cfg.seeds {
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			w := newRandomWorld(t, d, seed, cfg, fill, check)
			var wg sync.WaitGroup
			for g := range cfg.goroutines {
				wg.Go(func() { w.run(g) })
			}
			wg.Wait()
			w.finish()
			sum.merge(w.tally)
		})
	}
	t.Logf("%d seeds of %d goroutines, %d operations each:\n%s", len(cfg.seeds), cfg.goroutines, cfg.ops, sum)
}

// A randomConfig is what the knobs chose.
type randomConfig struct {
	seeds      []uint64
	ops        int
	goroutines int
	skip       map[string]bool
}

func newRandomConfig(t *testing.T) *randomConfig {
	cfg := &randomConfig{}
	seeds := 100
	if testing.Short() {
		seeds = 5
	}
	seeds = randomtest.Int(t, "HL_RANDOM_SEEDS", seeds)
	if n, ok := randomtest.Seed(t, "HL_RANDOM_SEED"); ok {
		cfg.seeds = []uint64{n}
	} else {
		for s := range uint64(seeds) {
			cfg.seeds = append(cfg.seeds, s)
		}
	}
	cfg.ops = randomtest.Int(t, "HL_RANDOM_OPS", 150)
	cfg.goroutines = randomtest.Int(t, "HL_RANDOM_GOROUTINES", 8)
	var names []string
	for _, k := range randomKinds {
		names = append(names, k.name)
	}
	cfg.skip = randomtest.Skipped(t, "HL_RANDOM_SKIP", "HL_RANDOM_ONLY", names)
	return cfg
}

// A randomKind is a kind of operation: its name (for $HL_RANDOM_SKIP and
// the summary), how often it is drawn, and what it does.
type randomKind struct {
	name   string
	weight int
	do     func(*randomWorker)
}

// randomKinds are the kinds of operation, in the order of the summary.
var randomKinds []randomKind

func init() {
	// Set in init: the operations refer to randomKinds' names.
	randomKinds = []randomKind{
		{"alloc", 12, (*randomWorker).alloc},         // allocate with one of eleven allocators, and write
		{"write", 16, (*randomWorker).write},         // write a span in one of five ways
		{"verify", 12, (*randomWorker).verify},       // read a span back, on the host or with a kernel
		{"free", 8, (*randomWorker).free},            // Free, or drop for the cleanups
		{"gc", 1, (*randomWorker).gc},                // runtime.GC
		{"stream", 3, (*randomWorker).replaceStream}, // close a shared stream, put a new one in its place
		{"event", 3, (*randomWorker).replaceEvent},   // close a shared event, put a new one in its place
		{"recordwait", 6, (*randomWorker).recordWait},
		{"wait", 8, (*randomWorker).wait},         // Stream.Wait, Event.Wait, Done: must not time out
		{"deadline", 4, (*randomWorker).deadline}, // the same with deadlines of 0 to 5 ms
		{"query", 3, (*randomWorker).query},
		{"hostfunc", 4, (*randomWorker).hostFunc}, // LaunchHostFunc, AddCallback, CUDA calls in them
		{"graph", 4, (*randomWorker).graph},       // capture on the own stream, instantiate, launch, close
		{"capture", 6, (*randomWorker).capture},   // capture in any mode on any stream, calls the mode refuses
		{"gexec", 6, (*randomWorker).gexec},       // shared GraphExecs: launch, update, replace, close
		{"sources", 4, (*randomWorker).sources},   // shared Graphs: instantiate, launch and close at once; update from them
		{"devsync", 1, (*randomWorker).devsync},   // Device.Synchronize, whatever captures
		{"busyclose", 2, (*randomWorker).busyClose},
		{"typed", 6, (*randomWorker).typed},     // typed copies at offsets, staged ones included
		{"pinned", 3, (*randomWorker).pinned},   // copies through PinnedSlice
		{"view", 3, (*randomWorker).view},       // ArrayOf and Slice views, their owner dropped
		{"ipc", 2, (*randomWorker).ipc},         // IPC handles opened in the process
		{"managed", 3, (*randomWorker).managed}, // Advise and Prefetch of managed memory
		{"asyncpool", 4, (*randomWorker).asyncPool},
		{"freerace", 2, (*randomWorker).freeRace},   // Free while another goroutine copies
		{"poolorder", 3, (*randomWorker).poolOrder}, // MemoryPool blocks freed with work queued on their stream
	}
}

// A randomAllow lets an operation accept errors of randomExpected that
// only some operations may get.
type randomAllow uint32

const (
	allowFreed randomAllow = 1 << iota
	allowDeadline
	allowUpdateShape
	allowDeviceLaunch
	allowAutoFreeDevice
	allowView
	allowNotShareable
	allowIPCSelf
	allowLegacyCapture
)

// randomExpected is every error TestGPURandomOps accepts, and why. An
// error is accepted when each of its parts (errors.Join) matches an entry
// that the call allows (allow 0: every call) and, for the entries marked
// window, when a stream capture was in progress at some time during the
// operation (from its start to the error). Any other error fails the seed
// and prints the seed, goroutine, operation and kind.
var randomExpected = []struct {
	name   string
	allow  randomAllow
	window bool
	is     func(error) bool
	why    string
}{
	{
		name: "closed",
		is:   func(err error) bool { return errors.Is(err, ErrClosed) },
		why: "another goroutine closed the stream, event, graph, GraphExec or pool " +
			"(stream, event, asyncpool, gexec, sources and busyclose close what the others use)",
	},
	{
		name:   "capture",
		window: true,
		is:     randomCaptureStatus,
		why: "a capture was in progress: CUDA refuses what the capture mode forbids " +
			"(cuMemAlloc, cuMemFree, synchronous copies and device-wide waits in the strict modes, " +
			"on every thread in global mode, on the capturing one in thread-local mode: " +
			"CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED), waits and queries of a capturing stream in every mode " +
			"(_UNSUPPORTED, CUDA_ERROR_CAPTURED_EVENT for an event recorded in it), the legacy default " +
			"stream while a blocking stream captures (_IMPLICIT), a wait for an event outside the capture " +
			"(_ISOLATION), and then everything on the spoilt capture (_INVALIDATED); the capture kind " +
			"also ends a strict capture from another OS thread (_WRONG_THREAD) and leaves a fork unjoined (_UNJOINED)",
	},
	{
		name:   "capturing",
		window: true,
		is:     func(err error) bool { return errors.Is(err, ErrCapturing) },
		why:    "the package refuses a device-wide wait while one of its captures is in progress",
	},
	{
		name:  "freed",
		allow: allowFreed,
		is:    func(err error) bool { return errors.Is(err, ErrFreed) },
		why:   "freerace: the memory was freed by the other goroutine before the copy began",
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
		why:   "gexec and sources: GraphExec.Update with a graph of another shape (a memset node where a host node was)",
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
		why: "Array.Free of a view (ArrayOf, Slice) refuses: the memory's owner frees it",
	},
	{
		name:  "notshareable",
		allow: allowNotShareable,
		is:    func(err error) bool { return errors.Is(err, ErrNotShareable) },
		why:   "IPCHandle of managed or stream-ordered memory, or of an event without Interprocess",
	},
	{
		name:  "ipcself",
		allow: allowIPCSelf,
		is:    randomAnyStatus,
		why: "OpenIPCMemory or OpenIPCEvent of a handle the process exported itself: " +
			"\"a process cannot open memory it exported itself\", with no status named, so any CUDA status",
	},
	{
		name:  "legacycapture",
		allow: allowLegacyCapture,
		is:    randomAnyStatus,
		why: "capture: BeginCapture on the legacy default stream, which CUDA cannot capture " +
			"(\"capture may not be initiated if stream is cudaStreamLegacy\", with no status named, so any CUDA status)",
	},
}

// randomCaptureStatus reports whether err is one of CUDA's statuses of
// stream capture.
func randomCaptureStatus(err error) bool {
	var r cudadrv.Result
	if !errors.As(err, &r) {
		return false
	}
	switch r {
	case cudadrv.ERROR_STREAM_CAPTURE_UNSUPPORTED, cudadrv.ERROR_STREAM_CAPTURE_INVALIDATED,
		cudadrv.ERROR_STREAM_CAPTURE_MERGE, cudadrv.ERROR_STREAM_CAPTURE_UNMATCHED,
		cudadrv.ERROR_STREAM_CAPTURE_UNJOINED, cudadrv.ERROR_STREAM_CAPTURE_ISOLATION,
		cudadrv.ERROR_STREAM_CAPTURE_IMPLICIT, cudadrv.ERROR_CAPTURED_EVENT,
		cudadrv.ERROR_STREAM_CAPTURE_WRONG_THREAD:
		return true
	}
	return false
}

// randomAnyStatus reports whether err is one of CUDA's statuses.
func randomAnyStatus(err error) bool {
	var r cudadrv.Result
	return errors.As(err, &r)
}

// randomParts returns the parts of err: the errors it joins (errors.Join,
// also inside a wrapping), each whole with its wrappings; or err.
func randomParts(err error) []error {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			var parts []error
			for _, c := range j.Unwrap() {
				parts = append(parts, randomParts(c)...)
			}
			return parts
		}
	}
	return []error{err}
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

// A randomStream is a stream the goroutines share (or a goroutine's own),
// with its gate. Work whose effect a goroutine's model counts on (writes,
// checks, host functions, graph launches, stream-ordered allocations and
// frees, prefetches, event records) is queued holding the gate shared
// (queue); a capture holds it exclusively from BeginCapture to EndCapture.
// So no goroutine's work is ever captured into another goroutine's graph:
// CUDA would make it a node of that graph, run only when (and each time)
// that graph is launched, which no model could follow; whether a program
// may let that happen is its business, not the package's. What the gate
// leaves free, and the others do during captures: Synchronize, Query,
// Wait, Done, WaitEvent (the capturing stream waiting for an event
// outside the capture: refused), Close, and every call on other streams
// and on no stream (cuMemAlloc and the like, which the strict modes
// refuse).
type randomStream struct {
	s      *Stream
	what   string
	legacy bool // the legacy default stream, which CUDA cannot capture
	gate   sync.RWMutex
}

// queue runs fn, which queues work on rs, with rs's gate held shared.
func (rs *randomStream) queue(fn func(s *Stream) error) error {
	rs.gate.RLock()
	defer rs.gate.RUnlock()
	return fn(rs.s)
}

// A randomTarget is device memory the shared graphs (gexec) write: every
// word holds one of the values a graph may have written.
type randomTarget struct {
	p      MemoryPointer
	n      int
	mu     sync.Mutex
	values map[uint32]bool
}

func (tg *randomTarget) allow(v uint32) {
	tg.mu.Lock()
	tg.values[v] = true
	tg.mu.Unlock()
}

// A randomExec is a GraphExec the goroutines share.
type randomExec struct {
	x      *GraphExec
	shape  int // 0: fill and a host node; 1: fill and a memset
	device bool
	target *randomTarget
}

// A randomWorld is what the goroutines of one seed share.
type randomWorld struct {
	t           *testing.T
	d           Device
	seed        uint64
	cfg         *randomConfig
	fill, check *Kernel
	pool        *MemoryPool
	pinnedPool  *PinnedMemoryPool
	legacy      *randomStream // the legacy default stream, never closed
	scratch     MemoryPointer // written by busyclose, never read
	targets     []*randomTarget
	managedOK   bool // the device has concurrent managed access, for Advise and Prefetch

	mu      sync.Mutex // guards what follows; the objects are used without it
	streams []*randomStream
	events  []*Event
	async   *MemoryAsyncPool
	execs   []*randomExec
	srcs    []*randomSource

	// capturing is held shared while a goroutine captures a graph and
	// exclusively by syncDevice: CUDA refuses cuCtxSynchronize while a
	// stream of the device captures, and invalidates the capture.
	capturing sync.RWMutex
	// capCount holds the number of captures begun in its upper 32 bits
	// and of those in progress in its lower ones: an error of
	// randomExpected's window entries is accepted when a capture was in
	// progress during the operation. Both are in one word, so that a
	// window reads them at one instant: read one after the other, a
	// capture that began between the reads and ended before the error was
	// checked was in neither.
	capCount atomic.Int64

	tally                        *randomTally
	hostWant, hostRan, hostMaybe atomic.Int64 // host functions queued (graph launches included), run, and maybe queued
	dropped                      atomic.Int64 // blocks of pool dropped without Free
	callbackBad                  atomic.Int64 // CUDA calls in host functions that did not return ErrInCallback
	callbackErr                  atomic.Value // the first of them
}

func newRandomWorld(t *testing.T, d Device, seed uint64, cfg *randomConfig, fill, check *Kernel) *randomWorld {
	w := &randomWorld{t: t, d: d, seed: seed, cfg: cfg, fill: fill, check: check, tally: newRandomTally()}
	var err error
	if w.pool, err = NewMemoryPool(d); err != nil {
		t.Fatal(err)
	}
	w.pinnedPool = NewPinnedMemoryPool()
	if w.async, err = NewMemoryAsyncPool(d); err != nil {
		t.Fatal(err)
	}
	legacy, err := LegacyDefaultStream(d)
	if err != nil {
		t.Fatal(err)
	}
	w.legacy = &randomStream{s: legacy, what: "the legacy default stream", legacy: true}
	// The legacy default stream is shared too, through a Stream of its
	// own: closing that only makes it unusable.
	shared, err := LegacyDefaultStream(d)
	if err != nil {
		t.Fatal(err)
	}
	w.streams = append(w.streams, &randomStream{s: shared, what: "a shared legacy default stream", legacy: true})
	for i, nonBlocking := range []bool{false, true, true} {
		s, err := NewStream(d, &StreamOptions{NonBlocking: nonBlocking, Priority: -i})
		if err != nil {
			t.Fatal(err)
		}
		w.streams = append(w.streams, &randomStream{s: s, what: randomStreamWhat(nonBlocking)})
	}
	for i := range 4 {
		e, err := NewEvent(d, &EventOptions{DisableTiming: i%2 == 0, Blocking: i >= 2})
		if err != nil {
			t.Fatal(err)
		}
		w.events = append(w.events, e)
	}
	if w.scratch, err = d.Alloc(1 << 20); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{4096, 1 << 16} {
		p, err := d.Alloc(4 * n)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Memset(0, 4*n); err != nil {
			t.Fatal(err)
		}
		w.targets = append(w.targets, &randomTarget{p: p, n: n, values: map[uint32]bool{0: true}})
	}
	w.execs = make([]*randomExec, 3)
	w.srcs = make([]*randomSource, 2)
	if v, err := d.Attribute(DeviceConcurrentManagedAccess); err == nil && v != 0 {
		w.managedOK = true
	}
	return w
}

func randomStreamWhat(nonBlocking bool) string {
	if nonBlocking {
		return "a shared non-blocking stream"
	}
	return "a shared blocking stream"
}

// finish checks, once the goroutines are done, that every host function
// ran, that the shared graphs wrote only what they were given, and that
// the pool has every block back but those dropped; it closes the shared
// objects.
func (w *randomWorld) finish() {
	t := w.t
	if err := w.d.Synchronize(); err != nil {
		t.Fatalf("Device.Synchronize: %v", err)
	}
	ran, want, maybe := w.hostRan.Load(), w.hostWant.Load(), w.hostMaybe.Load()
	if ran < want || ran > want+maybe {
		t.Errorf("%d host functions ran, want %d, or up to %d more queued by calls that failed (graph launches and LaunchHostFunc and AddCallback calls)",
			ran, want, maybe)
	}
	w.tally.add("host functions run", ran)
	if n := w.callbackBad.Load(); n > 0 {
		t.Errorf("%d calls of the package in host functions did not return ErrInCallback; the first: %v", n, w.callbackErr.Load())
	}
	for _, tg := range w.targets {
		w.verifyTarget(tg, func(format string, args ...any) { t.Errorf(format, args...) })
	}
	for _, x := range w.execs {
		if x != nil {
			if err := x.x.Close(); err != nil {
				t.Errorf("GraphExec.Close: %v", err)
			}
		}
	}
	for _, src := range w.srcs {
		if src != nil {
			if err := src.g.Close(); err != nil {
				t.Errorf("Graph.Close: %v", err)
			}
		}
	}
	for _, s := range w.streams {
		if err := s.s.Close(); err != nil {
			t.Errorf("Stream.Close: %v", err)
		}
	}
	for _, e := range w.events {
		if err := e.Close(); err != nil {
			t.Errorf("Event.Close: %v", err)
		}
	}
	if err := w.async.Close(); err != nil {
		t.Errorf("MemoryAsyncPool.Close: %v", err)
	}
	for _, p := range append([]MemoryPointer{w.scratch}, w.targetPointers()...) {
		if err := p.Memory().free(); err != nil {
			t.Errorf("Free of a shared buffer: %v", err)
		}
	}
	if err := w.pinnedPool.Close(); err != nil {
		t.Errorf("PinnedMemoryPool.Close: %v", err)
	}
	// Blocks dropped without Free come back once their Memory values are
	// collected and the pool's next allocation takes them in.
	runtime.GC()
	runtime.GC()
	m, err := w.pool.Alloc(1)
	if err != nil {
		t.Fatalf("MemoryPool.Alloc: %v", err)
	}
	if err := m.Memory().free(); err != nil {
		t.Errorf("MemoryPool Free: %v", err)
	}
	active, dropped := w.pool.ActiveBlocks(), w.dropped.Load()
	if int64(active) > dropped {
		t.Errorf("the pool has %d blocks in use after everything was freed, %d dropped without Free", active, dropped)
	}
	w.tally.add("pool blocks dropped without Free", dropped)
	w.tally.add("pool blocks dropped and not back yet", int64(active))
	if err := w.pool.FreeAllBlocks(); err != nil {
		t.Errorf("MemoryPool.FreeAllBlocks: %v", err)
	}
}

func (w *randomWorld) targetPointers() []MemoryPointer {
	var ps []MemoryPointer
	for _, tg := range w.targets {
		ps = append(ps, tg.p)
	}
	return ps
}

// verifyTarget checks that every word of tg holds a value a graph was
// given; the graphs may be running.
func (w *randomWorld) verifyTarget(tg *randomTarget, fail func(string, ...any)) error {
	got := make([]uint32, tg.n)
	if err := CopyToHost(got, tg.p); err != nil {
		return err
	}
	tg.mu.Lock()
	defer tg.mu.Unlock()
	for i, x := range got {
		if !tg.values[x] {
			fail("word %d of a shared graphs' target of %d words is %#x, which no graph wrote", i, tg.n, x)
			break
		}
	}
	return nil
}

// A randomWindow is the state of the captures when an operation began.
type randomWindow struct {
	active bool
	begun  int64
}

// capBegun is what a capture adds to randomWorld.capCount as it begins; it
// takes 1 away as it ends.
const capBegun = 1<<32 + 1

func (w *randomWorld) window() randomWindow {
	c := w.capCount.Load()
	return randomWindow{active: c%(1<<32) > 0, begun: c >> 32}
}

// inWindow reports whether a capture was in progress at some time since
// the operation that took x began.
func (w *randomWorld) inWindow(x randomWindow) bool {
	now := w.window()
	return x.active || now.active || now.begun != x.begun
}

// A randomOp is who does an operation, for its errors: a goroutine, the
// operation's number and kind, and for a helper goroutine its number.
type randomOp struct {
	*randomWorld
	g, op, sub int
	kind       string
	win        randomWindow
}

// ok reports whether err is nil. It counts the errors randomExpected lists
// and allow admits, and reports any other error as a failure.
func (o *randomOp) ok(err error, allow randomAllow, format string, args ...any) bool {
	if err == nil {
		return true
	}
	names, expected := randomClassify(err, allow, o.inWindow(o.win))
	if !expected {
		o.fail("%s: %v (window %+v, captures now: the test's %d, the package's %d)",
			fmt.Sprintf(format, args...), err, o.win, o.capCount.Load()%(1<<32), captures.Load())
		return false
	}
	for i, part := range randomParts(err) {
		o.tally.add("expected "+names[i], 1)
		// Which of CUDA's statuses, for the summary.
		var r cudadrv.Result
		if errors.As(part, &r) {
			o.tally.add(names[i]+" "+r.String(), 1)
		}
	}
	return false
}

// randomClassify returns the names of randomExpected's entries that err's
// parts match, and whether each part matches one that allow admits;
// inWindow says whether a capture was in progress during the operation.
func randomClassify(err error, allow randomAllow, inWindow bool) ([]string, bool) {
	var names []string
parts:
	for _, part := range randomParts(err) {
		for _, x := range randomExpected {
			if x.allow != 0 && allow&x.allow == 0 || x.window && !inWindow {
				continue
			}
			if x.is(part) {
				names = append(names, x.name)
				continue parts
			}
		}
		return nil, false
	}
	return names, true
}

func (o *randomOp) fail(format string, args ...any) {
	who := fmt.Sprintf("goroutine %d", o.g)
	if o.sub >= 0 {
		who += fmt.Sprintf(" (helper %d)", o.sub)
	}
	o.t.Errorf("seed %d (HL_RANDOM_SEED=%d) %s op %d (%s): %s", o.seed, o.seed, who, o.op, o.kind, fmt.Sprintf(format, args...))
}

func (o *randomOp) note(key string) { o.tally.add(key, 1) }

// helper returns o for helper goroutine i of the operation.
func (o randomOp) helper(i int) *randomOp {
	o.sub = i
	return &o
}

// A randomSeg is a run of words of a randomMem from word at to the next
// run: all v, or unknown.
type randomSeg struct {
	at    int
	v     uint32
	known bool
	how   string // how it was written, for errors
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
}

// segEnd returns the end of segment k.
func (a *randomMem) segEnd(k int) int {
	if k+1 < len(a.segs) {
		return a.segs[k+1].at
	}
	return a.n
}

// set makes words i to j-1 all v, or unknown.
func (a *randomMem) set(i, j int, v uint32, known bool, how string) {
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
		if n := len(out); n > 0 && out[n-1].known == s.known && (!s.known || out[n-1].v == s.v) {
			return
		}
		out = append(out, s)
	}
	for _, s := range before {
		add(s)
	}
	add(randomSeg{at: i, v: v, known: known, how: how})
	for _, s := range after {
		add(s)
	}
	a.segs = out
}

// forget makes words i to j-1 unknown.
func (a *randomMem) forget(i, j int) { a.set(i, j, 0, false, "") }

// runs returns the runs of words i to j-1, clipped to them.
func (a *randomMem) runs(i, j int) []randomSeg {
	var rs []randomSeg
	for k, s := range a.segs {
		if e := a.segEnd(k); e > i && s.at < j {
			s.at = max(s.at, i)
			rs = append(rs, s)
		}
	}
	return rs
}

// copyFrom sets words i to i+n-1 to what words bi to bi+n-1 of b hold.
func (a *randomMem) copyFrom(i int, b *randomMem, bi, n int) {
	rs := b.runs(bi, bi+n)
	for k, s := range rs {
		e := bi + n
		if k+1 < len(rs) {
			e = rs[k+1].at
		}
		a.set(i+s.at-bi, i+e-bi, s.v, s.known, s.how)
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

// compare checks got, words i to i+len(got)-1 of a, against the model.
func (a *randomMem) compare(o *randomOp, i int, got []uint32, how string) {
	j := i + len(got)
	for k, s := range a.runs(i, j) {
		if !s.known {
			continue
		}
		e := j
		if rs := a.runs(i, j); k+1 < len(rs) {
			e = rs[k+1].at
		}
		for x := s.at; x < e; x++ {
			if got[x-i] != s.v {
				bad := 0
				for y := s.at; y < e; y++ {
					if got[y-i] != s.v {
						bad++
					}
				}
				o.fail("%s of %s: word %d is %#x, want %#x (written by %s); %d of words %d..%d differ",
					how, a.describe(), x, got[x-i], s.v, s.how, bad, s.at, e-1)
				return
			}
		}
	}
}

func (a *randomMem) describe() string {
	return fmt.Sprintf("a %s of %d words", a.kind, a.n)
}

// A randomWorker is one goroutine of a seed.
type randomWorker struct {
	randomOp
	main      *rand.Rand // the kinds and seeds of the operations
	r         *rand.Rand // the numbers of the operation in progress
	own, own2 *randomStream
	bad       MemoryPointer // check's count
	mem       []*randomMem
}

// run runs goroutine g: cfg.ops random operations, then it verifies and
// frees what it still owns.
func (w *randomWorld) run(g int) {
	r := &randomWorker{
		randomOp: randomOp{randomWorld: w, g: g, op: -1, sub: -1, kind: "setup"},
		main:     rand.New(rand.NewPCG(w.seed, uint64(g))),
	}
	r.r = rand.New(rand.NewPCG(w.seed, uint64(g)))
	// A capture on a blocking stream would take in the legacy default
	// stream's work that the other goroutines queue meanwhile.
	own, err := NewStream(w.d, &StreamOptions{NonBlocking: true})
	if !r.ok(err, 0, "NewStream") {
		return
	}
	r.own = &randomStream{s: own, what: "the goroutine's own stream"}
	own2, err := NewStream(w.d, &StreamOptions{NonBlocking: true, Priority: -1})
	if !r.ok(err, 0, "NewStream") {
		return
	}
	r.own2 = &randomStream{s: own2, what: "the goroutine's second stream"}
	if r.bad, err = w.d.Alloc(4); !r.ok(err, 0, "Device.Alloc") {
		return
	}
	total := 0
	for _, k := range randomKinds {
		total += k.weight
	}
	for r.op = range w.cfg.ops {
		x, seed := r.main.IntN(total), r.main.Uint64()
		for _, k := range randomKinds {
			if x -= k.weight; x < 0 {
				r.kind = k.name
				break
			}
		}
		if w.cfg.skip[r.kind] {
			w.tally.add("skipped "+r.kind, 1)
			continue
		}
		r.r = rand.New(rand.NewPCG(seed, w.seed))
		r.win = w.window()
		for _, k := range randomKinds {
			if k.name == r.kind {
				k.do(r)
			}
		}
		w.tally.add("op "+r.kind, 1)
	}
	r.op, r.kind = w.cfg.ops, "teardown"
	r.win = w.window()
	for _, a := range r.mem {
		r.verifyMem(a)
		r.release(a)
	}
	r.ok(r.bad.Memory().free(), 0, "Free of check's count")
	r.ok(r.own.s.Close(), 0, "Stream.Close of the goroutine's own stream")
	r.ok(r.own2.s.Close(), 0, "Stream.Close of the goroutine's second stream")
}

// stream returns one of the shared streams.
func (w *randomWorker) stream() *randomStream {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.streams[w.r.IntN(len(w.streams))]
}

// anyStream returns a shared stream, or now and then the goroutine's own.
func (w *randomWorker) anyStream() *randomStream {
	if w.r.IntN(5) == 0 {
		return w.own
	}
	return w.stream()
}

func (w *randomWorker) event() *Event {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.events[w.r.IntN(len(w.events))]
}

// settle waits, in one of the package's ways, until rs has done the work
// queued on it so far. If that fails, because another goroutine closed the
// stream (the work queued on it still runs), a capture refused the wait,
// or otherwise, it waits for the whole device. It reports whether one of
// the waits worked.
func (w *randomWorker) settle(rs *randomStream) bool {
	ctx, cancel := context.WithTimeout(context.Background(), randomWait)
	defer cancel()
	s := rs.s
	var err error
	var how string
	switch w.r.IntN(3) {
	case 0:
		how, err = "Stream.Synchronize", s.Synchronize()
	case 1:
		how, err = "Stream.Wait", s.Wait(ctx)
	case 2:
		how = "Event.Wait after Event.Record"
		var e *Event
		if e, err = s.recordNew(nil); err == nil {
			err = e.Wait(ctx)
		}
		if e != nil {
			w.ok(e.Close(), 0, "Event.Close of a waited event")
		}
	}
	if err != nil {
		w.ok(err, 0, "%s of %s", how, rs.what)
		return w.syncDevice()
	}
	return true
}

// syncDevice waits for all the device's work, with no capture in progress.
func (w *randomWorker) syncDevice() bool {
	w.capturing.Lock()
	defer w.capturing.Unlock()
	return w.ok(w.d.Synchronize(), 0, "Device.Synchronize")
}
