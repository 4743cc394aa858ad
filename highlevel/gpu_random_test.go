package highlevel

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"
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
	randomGoroutines = 8
	// randomOwned is the most allocations a goroutine holds at once.
	randomOwned = 8
	// randomWait bounds every wait: the work the test queues takes
	// microseconds, so a wait that lasts longer has lost its wake-up.
	randomWait = time.Second
)

// TestGPURandomOps runs goroutines that issue random sequences of the
// package's operations over shared streams, events, pools and kernels:
// they close and replace the streams and events while the others use them,
// capture graphs and close them while they run, and free memory or drop it
// for the GC. Each goroutine owns its allocations and checks that they hold
// what it last wrote. The test proves that an operation on an object closed
// by another goroutine fails with ErrClosed and never crashes, that no pool
// hands out memory still in use, that no memory is corrupted, that every
// host function queued runs, and that the test's pool gets back all the
// memory freed.
//
// It runs $HL_RANDOM_SEEDS seeds (default 100, or 5 with -short), each a
// subtest named after its seed, of 8 goroutines with $HL_RANDOM_OPS
// operations each (default 150). Goroutine g of seed s draws its operations
// from rand.NewPCG(s, g), so a seed reproduces what each goroutine does,
// though not how the goroutines interleave.
func TestGPURandomOps(t *testing.T) {
	d := gpu(t)
	seeds := 100
	if testing.Short() {
		seeds = 5
	}
	seeds = envInt(t, "HL_RANDOM_SEEDS", seeds)
	ops := envInt(t, "HL_RANDOM_OPS", 150)

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

	var total, closed, graphs, hostFuncs int64
	for seed := range uint64(seeds) {
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			w := newRandomWorld(t, d, seed, fill, check)
			var wg sync.WaitGroup
			for g := range randomGoroutines {
				wg.Go(func() { w.run(g, ops) })
			}
			wg.Wait()
			w.finish()
			total += w.ops.Load()
			closed += w.closed.Load()
			graphs += w.graphs.Load()
			hostFuncs += w.hostRan.Load()
		})
	}
	t.Logf("%d seeds, %d operations, %d of them on objects closed meanwhile (ErrClosed), %d graphs launched, %d host functions run",
		seeds, total, closed, graphs, hostFuncs)
}

// envInt returns the positive integer in the environment variable name, or
// def when it is unset.
func envInt(t *testing.T, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		t.Fatalf("$%s = %q: want a positive integer", name, s)
	}
	return n
}

// A randomWorld is what the goroutines of one seed share.
type randomWorld struct {
	t           *testing.T
	d           Device
	seed        uint64
	fill, check *Kernel
	pool        *MemoryPool
	async       *MemoryAsyncPool
	legacy      *Stream // the legacy default stream, never closed

	mu      sync.Mutex // guards the slices; their objects are used without it
	streams []*Stream
	events  []*Event

	// capturing is held shared while a goroutine captures a graph and
	// exclusively by syncDevice: CUDA refuses cudaDeviceSynchronize while a
	// stream of the device captures, and invalidates the capture.
	capturing sync.RWMutex

	ops      atomic.Int64
	closed   atomic.Int64 // operations that returned ErrClosed
	graphs   atomic.Int64 // graphs launched
	hostWant atomic.Int64 // host functions queued: graph launches included
	hostRan  atomic.Int64
	dropped  atomic.Int64 // blocks of pool dropped without Free
}

func newRandomWorld(t *testing.T, d Device, seed uint64, fill, check *Kernel) *randomWorld {
	w := &randomWorld{t: t, d: d, seed: seed, fill: fill, check: check}
	var err error
	if w.pool, err = NewMemoryPool(d); err != nil {
		t.Fatal(err)
	}
	if w.async, err = NewMemoryAsyncPool(d); err != nil {
		t.Fatal(err)
	}
	if w.legacy, err = LegacyDefaultStream(d); err != nil {
		t.Fatal(err)
	}
	// The legacy default stream is shared too, through a Stream of its
	// own: closing that only makes it unusable.
	shared, err := LegacyDefaultStream(d)
	if err != nil {
		t.Fatal(err)
	}
	w.streams = append(w.streams, shared)
	for _, nonBlocking := range []bool{false, true, true} {
		s, err := NewStream(d, &StreamOptions{NonBlocking: nonBlocking})
		if err != nil {
			t.Fatal(err)
		}
		w.streams = append(w.streams, s)
	}
	for i := range 4 {
		e, err := NewEvent(d, &EventOptions{DisableTiming: i%2 == 0, Blocking: i >= 2})
		if err != nil {
			t.Fatal(err)
		}
		w.events = append(w.events, e)
	}
	return w
}

// finish checks, once the goroutines are done, that every host function
// ran and that the pool has every block back but those dropped, and closes
// the shared objects.
func (w *randomWorld) finish() {
	t := w.t
	if err := w.d.Synchronize(); err != nil {
		t.Fatalf("Device.Synchronize: %v", err)
	}
	if ran, want := w.hostRan.Load(), w.hostWant.Load(); ran != want {
		t.Errorf("%d host functions ran, want %d (graph launches and LaunchHostFunc calls)", ran, want)
	}
	for _, s := range w.streams {
		if err := s.Close(); err != nil {
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
	// Blocks dropped without Free come back once their Memory values are
	// collected and the pool's next allocation takes them in.
	runtime.GC()
	runtime.GC()
	m, err := w.pool.Malloc(1)
	if err != nil {
		t.Fatalf("MemoryPool.Malloc: %v", err)
	}
	if err := m.Memory().Free(); err != nil {
		t.Errorf("MemoryPool Free: %v", err)
	}
	active, dropped := w.pool.ActiveBlocks(), w.dropped.Load()
	if int64(active) > dropped {
		t.Errorf("the pool has %d blocks in use after everything was freed, %d dropped without Free", active, dropped)
	}
	if active > 0 {
		t.Logf("%d of the %d blocks dropped without Free are not back in the pool yet", active, dropped)
	}
	if err := w.pool.FreeAllBlocks(); err != nil {
		t.Errorf("MemoryPool.FreeAllBlocks: %v", err)
	}
}

// A randomMem is an allocation a goroutine owns.
type randomMem struct {
	kind  string // how it was allocated
	p     MemoryPointer
	arr   *Array[uint32] // for NewArray, else nil
	n     int            // words
	v     uint32         // the value of every word, if known
	known bool           // false after a write that failed
	wrote string         // how v was written, for errors
}

// arg is a as an argument of a kernel.
func (a *randomMem) arg() any {
	if a.arr != nil {
		return a.arr
	}
	return a.p
}

func (a *randomMem) free() error {
	if a.arr != nil {
		return a.arr.Free()
	}
	return a.p.Memory().Free()
}

// A randomWorker is one goroutine of a seed.
type randomWorker struct {
	*randomWorld
	g, op int
	r     *rand.Rand
	own   *Stream       // the goroutine's own stream, for captures
	bad   MemoryPointer // check's count
	mem   []*randomMem
}

// run runs goroutine g: ops random operations, then it verifies and frees
// what it still owns.
func (w *randomWorld) run(g, ops int) {
	r := &randomWorker{randomWorld: w, g: g, op: -1, r: rand.New(rand.NewPCG(w.seed, uint64(g)))}
	var err error
	// A capture on a blocking stream would take in the legacy default
	// stream's work that the other goroutines queue meanwhile.
	if r.own, err = NewStream(w.d, &StreamOptions{NonBlocking: true}); !r.ok(err, "NewStream") {
		return
	}
	if r.bad, err = w.d.Malloc(4); !r.ok(err, "Device.Malloc") {
		r.own.Close()
		return
	}
	type op struct {
		name   string
		weight int
		do     func()
	}
	table := []op{
		{"alloc", 12, r.alloc},
		{"write", 16, r.write},
		{"verify", 12, r.verify},
		{"free", 8, r.free},
		{"gc", 1, runtime.GC},
		{"stream", 3, r.replaceStream},
		{"event", 3, r.replaceEvent},
		{"recordwait", 6, r.recordWait},
		{"wait", 8, r.wait},
		{"query", 3, r.query},
		{"hostfunc", 4, r.hostFunc},
		{"graph", 5, r.graph},
	}
	// $HL_RANDOM_SKIP lists operations to leave out, to narrow a failure
	// down: "graph,hostfunc".
	skip := strings.Split(os.Getenv("HL_RANDOM_SKIP"), ",")
	sum := 0
	for i, o := range table {
		if slices.Contains(skip, o.name) {
			table[i].weight = 0
		}
		sum += table[i].weight
	}
	for r.op = range ops {
		x := r.r.IntN(sum)
		for _, o := range table {
			if x -= o.weight; x < 0 {
				o.do()
				break
			}
		}
	}
	w.ops.Add(int64(ops))
	r.op = ops
	for _, a := range r.mem {
		r.verifyMem(a)
		r.ok(a.free(), "Free of a %s", a.kind)
	}
	r.ok(r.bad.Memory().Free(), "Free of check's count")
	r.ok(r.own.Close(), "Stream.Close of the goroutine's own stream")
}

// ok reports whether err is nil. It counts ErrClosed, which another
// goroutine closing a shared object causes, and reports any other error
// as a failure.
func (w *randomWorker) ok(err error, format string, args ...any) bool {
	if err == nil {
		return true
	}
	if errors.Is(err, ErrClosed) {
		w.closed.Add(1)
		return false
	}
	w.fail("%s: %v", fmt.Sprintf(format, args...), err)
	return false
}

func (w *randomWorker) fail(format string, args ...any) {
	w.t.Errorf("seed %d goroutine %d op %d: %s", w.seed, w.g, w.op, fmt.Sprintf(format, args...))
}

func (w *randomWorker) stream() *Stream {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.streams[w.r.IntN(len(w.streams))]
}

func (w *randomWorker) event() *Event {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.events[w.r.IntN(len(w.events))]
}

// settle waits, in one of the package's ways, until s has done the work
// queued on it so far. If that fails, because another goroutine closed s
// (the work queued on it still runs) or otherwise, it waits for the whole
// device.
func (w *randomWorker) settle(s *Stream) {
	ctx, cancel := context.WithTimeout(context.Background(), randomWait)
	defer cancel()
	var err error
	var how string
	switch w.r.IntN(3) {
	case 0:
		how, err = "Stream.Synchronize", s.Synchronize()
	case 1:
		how, err = "Stream.Wait", s.Wait(ctx)
	case 2:
		how = "Event.Wait after Stream.Record"
		var e *Event
		if e, err = s.Record(nil); err == nil {
			err = e.Wait(ctx)
		}
		if e != nil {
			w.ok(e.Close(), "Event.Close of a waited event")
		}
	}
	if err != nil {
		w.ok(err, "%s", how)
		w.syncDevice()
	}
}

func (w *randomWorker) syncDevice() {
	w.capturing.Lock()
	defer w.capturing.Unlock()
	w.ok(w.d.Synchronize(), "Device.Synchronize")
}

// size returns the words of a new allocation: often as many as one the
// goroutine owns, for copies between them, and now and then 4 MiB, which
// host copies stage.
func (w *randomWorker) size() int {
	switch x := w.r.IntN(20); {
	case x < 8 && len(w.mem) > 0:
		return w.mem[w.r.IntN(len(w.mem))].n
	case x == 19:
		return 1 << 20
	case x >= 16:
		return 1 + w.r.IntN(1<<18)
	default:
		return 1 + w.r.IntN(4096)
	}
}

// alloc allocates in one of four ways and writes the new memory.
func (w *randomWorker) alloc() {
	if len(w.mem) == randomOwned {
		w.free()
		return
	}
	a := &randomMem{n: w.size()}
	var err error
	switch w.r.IntN(4) {
	case 0:
		a.kind = "Device.Malloc"
		a.p, err = w.d.Malloc(4 * a.n)
	case 1:
		a.kind = "MemoryPool.MallocStream"
		a.p, err = w.pool.MallocStream(4*a.n, w.stream())
	case 2:
		a.kind = "MemoryAsyncPool.MallocAsync"
		s := w.stream()
		if a.p, err = w.async.MallocAsync(4*a.n, s); err == nil {
			// Other streams may use the memory once s has allocated it.
			w.settle(s)
		}
	case 3:
		a.kind = "NewArrayOn"
		if a.arr, err = NewArrayOn[uint32](w.pool, a.n); err == nil {
			a.p = a.arr.MemoryPointer()
		}
	}
	if !w.ok(err, "%s of %d bytes", a.kind, 4*a.n) {
		return
	}
	w.mem = append(w.mem, a)
	w.writeTo(a)
}

// pick returns one of the goroutine's allocations, or nil.
func (w *randomWorker) pick() *randomMem {
	if len(w.mem) == 0 {
		return nil
	}
	return w.mem[w.r.IntN(len(w.mem))]
}

func (w *randomWorker) write() {
	if a := w.pick(); a != nil {
		w.writeTo(a)
	}
}

// writeTo writes a new value to a in one of five ways, on a shared stream,
// and waits for that stream: then a is ready for any use.
func (w *randomWorker) writeTo(a *randomMem) {
	v := w.r.Uint32()
	s := w.stream()
	var src *randomMem
	for _, b := range w.mem {
		if b != a && b.n == a.n && b.known {
			src = b
		}
	}
	how := w.r.IntN(5)
	if how == 4 && src == nil {
		how = 0
	}
	var err error
	switch how {
	case 0:
		a.wrote = "fill"
		err = w.fill.Launch(s, randomGrid(a.n), a.arg(), v, int32(a.n))
	case 1:
		a.wrote = "MemsetAsync"
		b := byte(v)
		v = uint32(b) * 0x01010101
		err = a.p.MemsetAsync(b, 4*a.n, s)
	case 2:
		a.wrote = "CopyFromHostAsync"
		h := randomWords(a.n, v)
		if a.arr != nil {
			err = a.arr.CopyFromHostAsync(h, s)
		} else {
			err = a.p.CopyFromHostAsync(unsafe.Pointer(&h[0]), 4*a.n, s)
		}
	case 3:
		a.wrote = "CopyFromHost"
		h := randomWords(a.n, v)
		if a.arr != nil {
			err = a.arr.CopyFromHost(h)
		} else {
			err = a.p.CopyFromHost(unsafe.Pointer(&h[0]), 4*a.n)
		}
		// A copy from pageable memory may return before its transfer is
		// done, on the legacy default stream.
		s = w.legacy
	case 4:
		a.wrote = "CopyFromDeviceAsync from a " + src.kind
		v = src.v
		err = a.p.CopyFromDeviceAsync(src.p, 4*a.n, s)
	}
	a.v = v
	a.known = w.ok(err, "%s to a %s of %d bytes", a.wrote, a.kind, 4*a.n)
	w.settle(s)
}

func randomGrid(n int) LaunchConfig {
	return LaunchConfig{Grid: Dim3{X: (n + 255) / 256}, Block: Dim3{X: 256}}
}

func randomWords(n int, v uint32) []uint32 {
	h := make([]uint32, n)
	for i := range h {
		h[i] = v
	}
	return h
}

func (w *randomWorker) verify() {
	if a := w.pick(); a != nil {
		w.verifyMem(a)
	}
}

// verifyMem checks that every word of a holds a.v: on the host, or with the
// check kernel on a shared stream.
func (w *randomWorker) verifyMem(a *randomMem) {
	if !a.known {
		return
	}
	what := fmt.Sprintf("a %s of %d words, written by %s", a.kind, a.n, a.wrote)
	if w.r.IntN(3) == 0 {
		s := w.stream()
		err := w.bad.MemsetAsync(0, 4, s)
		if err == nil {
			err = w.check.Launch(s, randomGrid(a.n), a.arg(), a.v, int32(a.n), w.bad)
		}
		ran := w.ok(err, "check of %s", what)
		w.settle(s)
		var bad int32
		if ran && w.ok(w.bad.CopyToHost(unsafe.Pointer(&bad), 4), "CopyToHost of check's count") && bad != 0 {
			w.fail("%s: %d words differ from %#x", what, bad, a.v)
		}
		return
	}
	var got []uint32
	var err error
	if a.arr != nil && w.r.IntN(2) == 0 {
		got, err = a.arr.ToHost()
	} else {
		got = make([]uint32, a.n)
		err = a.p.CopyToHost(unsafe.Pointer(&got[0]), 4*a.n)
	}
	if !w.ok(err, "reading %s", what) {
		return
	}
	if i := slices.IndexFunc(got, func(x uint32) bool { return x != a.v }); i >= 0 {
		bad := 0
		for _, x := range got {
			if x != a.v {
				bad++
			}
		}
		w.fail("%s: word %d is %#x, want %#x; %d words differ", what, i, got[i], a.v, bad)
	}
}

// free frees one of the goroutine's allocations, or, one time in four,
// drops it for the GC and the cleanups. Its writes have been waited for.
func (w *randomWorker) free() {
	if len(w.mem) == 0 {
		return
	}
	i := w.r.IntN(len(w.mem))
	a := w.mem[i]
	w.mem = slices.Delete(w.mem, i, i+1)
	if w.r.IntN(4) == 0 {
		if a.kind == "MemoryPool.MallocStream" || a.kind == "NewArrayOn" {
			w.dropped.Add(1)
		}
		return
	}
	w.ok(a.free(), "Free of a %s", a.kind)
}

// replaceStream closes a shared stream, which other goroutines may be
// using, and puts a new one in its place.
func (w *randomWorker) replaceStream() {
	s, err := NewStream(w.d, &StreamOptions{NonBlocking: w.r.IntN(2) == 0})
	if !w.ok(err, "NewStream") {
		return
	}
	w.mu.Lock()
	i := w.r.IntN(len(w.streams))
	old := w.streams[i]
	w.streams[i] = s
	w.mu.Unlock()
	w.ok(old.Close(), "Stream.Close of a shared stream")
}

// replaceEvent closes a shared event, which other goroutines may be using,
// and puts a new one in its place.
func (w *randomWorker) replaceEvent() {
	e, err := NewEvent(w.d, &EventOptions{DisableTiming: w.r.IntN(2) == 0, Blocking: w.r.IntN(2) == 0})
	if !w.ok(err, "NewEvent") {
		return
	}
	w.mu.Lock()
	i := w.r.IntN(len(w.events))
	old := w.events[i]
	w.events[i] = e
	w.mu.Unlock()
	w.ok(old.Close(), "Event.Close of a shared event")
}

// recordWait records a shared event on a shared stream and makes another
// wait for it.
func (w *randomWorker) recordWait() {
	e := w.event()
	if w.ok(e.Record(w.stream()), "Event.Record") {
		w.ok(w.stream().WaitEvent(e), "Stream.WaitEvent")
	}
}

// wait waits for a shared event or stream, with a timeout.
func (w *randomWorker) wait() {
	ctx, cancel := context.WithTimeout(context.Background(), randomWait)
	defer cancel()
	switch w.r.IntN(4) {
	case 0:
		w.ok(w.event().Wait(ctx), "Event.Wait")
	case 1:
		w.ok(w.stream().Wait(ctx), "Stream.Wait")
	case 2:
		select {
		case <-w.event().Done():
		case <-ctx.Done():
			w.fail("Event.Done not closed after %v", randomWait)
		}
	case 3:
		select {
		case <-w.stream().Done():
		case <-ctx.Done():
			w.fail("Stream.Done not closed after %v", randomWait)
		}
	}
}

func (w *randomWorker) query() {
	var err error
	if w.r.IntN(2) == 0 {
		_, err = w.stream().Query()
	} else {
		_, err = w.event().Query()
	}
	w.ok(err, "Query")
}

func (w *randomWorker) hostFunc() {
	if w.ok(w.stream().LaunchHostFunc(func() { w.hostRan.Add(1) }), "LaunchHostFunc") {
		w.hostWant.Add(1)
	}
}

// graph captures a fill of one of the goroutine's allocations and a host
// function on its own stream, launches the graph on a shared stream and
// closes it, before the launch is done or after.
func (w *randomWorker) graph() {
	a := w.pick()
	if a == nil {
		return
	}
	v := w.r.Uint32()
	w.capturing.RLock()
	g, err := Capture(w.own, CaptureRelaxed, func() error {
		if err := w.fill.Launch(w.own, randomGrid(a.n), a.arg(), v, int32(a.n)); err != nil {
			return err
		}
		return w.own.LaunchHostFunc(func() { w.hostRan.Add(1) })
	})
	w.capturing.RUnlock()
	if !w.ok(err, "Capture") {
		return
	}
	x, err := g.Instantiate(nil)
	if !w.ok(err, "Graph.Instantiate") {
		w.ok(g.Close(), "Graph.Close")
		return
	}
	s := w.stream()
	err = x.Launch(s)
	if w.ok(err, "GraphExec.Launch") {
		w.graphs.Add(1)
		w.hostWant.Add(1)
		a.v, a.known, a.wrote = v, true, "a graph"
	} else if !errors.Is(err, ErrClosed) {
		a.known = false // CUDA does not say whether a failed launch ran
	}
	closeGraph := func() {
		if w.r.IntN(2) == 0 {
			w.ok(x.Close(), "GraphExec.Close")
			w.ok(g.Close(), "Graph.Close")
		} else {
			w.ok(g.Close(), "Graph.Close")
			w.ok(x.Close(), "GraphExec.Close")
		}
	}
	early := w.r.IntN(2) == 0
	if early {
		closeGraph()
	}
	w.settle(s)
	if !early {
		closeGraph()
	}
}
