package highlevel

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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
// words of one value; of one of a few values after a write that failed,
// until a read or a write that worked says which; unknown only where a
// write may still be in flight), against which every read is checked, on
// the host or with a kernel; every allocation is read whole and checked
// before it is freed or dropped and at the end, views included. The test
// proves that an operation on an object closed by another goroutine fails
// with ErrClosed and never crashes, that no pool hands out memory still in
// use, that no memory is corrupted, that every host function queued runs,
// and that the test's pool gets back all the memory freed.
//
// The oracle (gpu_random_oracle_test.go) is strict: an error is expected
// only where the program's own actions explain it (randomExpected,
// randomJudge): ErrClosed where the program closed an object the call
// names, ErrFreed where it freed the memory, ErrCapturing where another
// goroutine's capture overlapped the call, CUDA's statuses of stream
// capture where a capture's own draws spoil it; and where they require an
// error (an object closed or freed before the call began, a draw that asks
// for a refusal), nil fails. Each program must reach randomMinimums, per
// kind of operation and outcome, and so must all the seeds together: a
// regression that makes a whole kind fail with an expected error fails
// the test.
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
			for _, s := range randomShortfalls(w.tally.counts(), randomMinimums) {
				t.Errorf("seed %d (HL_RANDOM_SEED=%d): %s", seed, seed, s)
			}
			sum.merge(w.tally)
		})
	}
	t.Logf("%d seeds of %d goroutines, %d operations each:\n%s", len(cfg.seeds), cfg.goroutines, cfg.ops, sum)
	// The seeds together: most minimums are checked here only, where their
	// expectation is large enough.
	for _, s := range randomShortfalls(sum.counts(), randomMinimums) {
		t.Errorf("all seeds: %s", s)
	}
	if s := launchUnknownBound(sum.counts()); s != "" {
		t.Errorf("all seeds: %s", s)
	}
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
//
// obj is the stream's Close, for the oracle; caps counts its captures
// (capBegun), for WaitEvent's CUDA_ERROR_STREAM_CAPTURE_ISOLATION.
type randomStream struct {
	s      *Stream
	what   string
	legacy bool // the legacy default stream, which CUDA cannot capture
	gate   sync.RWMutex
	obj    *randomObj
	caps   atomic.Int64
}

func newRandomStream(s *Stream, what string, legacy bool) *randomStream {
	return &randomStream{s: s, what: what, legacy: legacy, obj: newRandomObj(what, ErrClosed)}
}

// A randomEvent is an event the goroutines share, with its Close.
type randomEvent struct {
	e   *Event
	obj *randomObj
}

// A randomAsync is the MemoryAsyncPool the goroutines share, with its
// Close.
type randomAsync struct {
	p   *MemoryAsyncPool
	obj *randomObj
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
	obj    *randomObj
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
	legacy      *randomStream // the legacy default stream, never closed (its obj neither)
	scratch     MemoryPointer // written by busyclose, never read
	targets     []*randomTarget
	managedOK   bool // the device has concurrent managed access, for Advise and Prefetch

	mu      sync.Mutex // guards what follows; the objects are used without it
	streams []*randomStream
	events  []*randomEvent
	async   *randomAsync
	execs   []*randomExec
	srcs    []*randomSource

	// capturing is held shared while a goroutine captures a graph and
	// exclusively by syncDevice: CUDA refuses cuCtxSynchronize while a
	// stream of the device captures, and invalidates the capture.
	capturing sync.RWMutex
	// capCount holds the number of captures begun in its upper 32 bits
	// and of those in progress in its lower ones (capBegun): ErrCapturing
	// is expected where another goroutine's capture was in progress during
	// the operation (randomOp.others). Both are in one word, so that a
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
	async, err := NewMemoryAsyncPool(d)
	if err != nil {
		t.Fatal(err)
	}
	w.async = &randomAsync{p: async, obj: newRandomObj("the shared MemoryAsyncPool", ErrClosed)}
	legacy, err := LegacyDefaultStream(d)
	if err != nil {
		t.Fatal(err)
	}
	w.legacy = newRandomStream(legacy, "the legacy default stream", true)
	// The legacy default stream is shared too, through a Stream of its
	// own: closing that only makes it unusable.
	shared, err := LegacyDefaultStream(d)
	if err != nil {
		t.Fatal(err)
	}
	w.streams = append(w.streams, newRandomStream(shared, "a shared legacy default stream", true))
	for i, nonBlocking := range []bool{false, true, true} {
		s, err := NewStream(d, &StreamOptions{NonBlocking: nonBlocking, Priority: -i})
		if err != nil {
			t.Fatal(err)
		}
		w.streams = append(w.streams, newRandomStream(s, randomStreamWhat(nonBlocking), false))
	}
	for i := range 4 {
		e, err := NewEvent(d, &EventOptions{DisableTiming: i%2 == 0, Blocking: i >= 2})
		if err != nil {
			t.Fatal(err)
		}
		w.events = append(w.events, &randomEvent{e: e, obj: newRandomObj("a shared event", ErrClosed)})
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
		if err := e.e.Close(); err != nil {
			t.Errorf("Event.Close: %v", err)
		}
	}
	if err := w.async.p.Close(); err != nil {
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

// A randomWorker is one goroutine of a seed.
type randomWorker struct {
	randomOp
	main      *rand.Rand // the kinds and seeds of the operations
	r         *rand.Rand // the numbers of the operation in progress
	own, own2 *randomStream
	bad       MemoryPointer // check's count
	mem       []*randomMem
	ownCaps   atomic.Int64 // the goroutine's captures (capBegun): randomOp.own
}

// run runs goroutine g: cfg.ops random operations, then it checks whole
// and frees what it still owns.
func (w *randomWorld) run(g int) {
	r := &randomWorker{
		randomOp: randomOp{randomWorld: w, g: g, op: -1, sub: -1, kind: "setup"},
		main:     rand.New(rand.NewPCG(w.seed, uint64(g))),
	}
	r.randomOp.own = &r.ownCaps
	r.r = rand.New(rand.NewPCG(w.seed, uint64(g)))
	r.win = r.window()
	// A capture on a blocking stream would take in the legacy default
	// stream's work that the other goroutines queue meanwhile.
	own, err := NewStream(w.d, &StreamOptions{NonBlocking: true})
	if !r.ok(r.on(0), err, "NewStream") {
		return
	}
	r.own = newRandomStream(own, "the goroutine's own stream", false)
	own2, err := NewStream(w.d, &StreamOptions{NonBlocking: true, Priority: -1})
	if !r.ok(r.on(0), err, "NewStream") {
		return
	}
	r.own2 = newRandomStream(own2, "the goroutine's second stream", false)
	if r.bad, err = w.d.Alloc(4); !r.ok(r.on(0), err, "Device.Alloc") {
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
		r.win = r.window()
		for _, k := range randomKinds {
			if k.name == r.kind {
				k.do(r)
			}
		}
		w.tally.add("op "+r.kind, 1)
	}
	r.op, r.kind = w.cfg.ops, "end"
	r.win = r.window()
	for _, a := range r.mem {
		r.reached()
		r.checkWhole(a, "end")
		r.release(a)
	}
	r.ok(r.on(0), r.bad.Memory().free(), "Free of check's count")
	r.ok(r.on(0), r.own.obj.closeWith(r.own.s.Close), "Stream.Close of the goroutine's own stream")
	r.ok(r.on(0), r.own2.obj.closeWith(r.own2.s.Close), "Stream.Close of the goroutine's second stream")
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

func (w *randomWorker) event() *randomEvent {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.events[w.r.IntN(len(w.events))]
}

// settle waits, in one of the package's ways, until rs has done the work
// queued on it so far. If that fails, because another goroutine closed the
// stream (the work queued on it still runs) or captures it, it waits for
// the whole device. It reports whether one of the waits worked; the
// second must.
func (w *randomWorker) settle(rs *randomStream) bool {
	ctx, cancel := context.WithTimeout(context.Background(), randomWait)
	defer cancel()
	s := rs.s
	var err error
	var how string
	u := w.on(0, rs.obj)
	switch w.r.IntN(3) {
	case 0:
		how, err = "Stream.Synchronize", s.Synchronize()
	case 1:
		how, err = "Stream.Wait", s.Wait(ctx)
	case 2:
		how = "Event.Wait after Event.Record"
		u = u.recordsOn(rs)
		var e *Event
		if e, err = s.recordNew(nil); err == nil {
			err = e.Wait(ctx)
		}
		if e != nil {
			w.ok(w.on(0), e.Close(), "Event.Close of a waited event")
		}
	}
	if !w.ok(u, err, "%s of %s", how, rs.what) {
		return w.syncDevice()
	}
	return true
}

// syncDevice waits for all the device's work, with no capture in progress:
// the capturing lock keeps the test's captures out, and no other captures
// the package's, so Device.Synchronize must work.
func (w *randomWorker) syncDevice() bool {
	w.capturing.Lock()
	defer w.capturing.Unlock()
	if err := w.d.Synchronize(); err != nil {
		w.fail("Device.Synchronize with no capture in progress: %v", err)
		return false
	}
	return true
}

// checkWhole reads all of a, on the goroutine's own stream, and checks it
// against the model: before a is freed or dropped, and at the end. The
// read must work: the goroutine neither closes its own stream nor
// captures it here, a is its own and not freed, and a copy to pageable
// memory on a stream other than the legacy default one is refused by no
// capture (the shim gates only the legacy default stream's and the
// calls CaptureGlobal forbids, and a staged copy stages only outside
// global captures, which wait for it). To pageable memory, CUDA has written
// got when the call returns.
func (w *randomWorker) checkWhole(a *randomMem, why string) {
	got := make([]uint32, a.n)
	if err := CopyToHostAsync(w.own.s, got, a.p); err != nil {
		w.fail("a whole read of %s on the goroutine's own stream (%s): %v", a.describe(), why, err)
		return
	}
	if msg := a.check(0, got); msg != "" {
		w.fail("a whole read (%s) of %s: %s", why, a.describe(), msg)
		return
	}
	w.note("check " + why + " ok")
}
