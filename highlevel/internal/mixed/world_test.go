package mixed

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gocuda/cuda/highlevel"
)

// A program is what the goroutines of one seed share.
type program struct {
	t           *testing.T
	d           highlevel.Device
	ndev        int // devices CUDA counts, for the bad devices of refuse
	seed        uint64
	cfg         *config
	k           *kernels
	pool        *highlevel.MemoryPool
	pinned      *highlevel.PinnedMemoryPool
	legacy      *stream // the legacy default stream, never closed
	blocks      []*block
	writes      *writeLog
	graphTarget *sharedTarget // what the shared GraphExecs write
	workers     []*worker
	// progress is what each worker, then the finish, is doing, for the
	// watchdog.
	progress  []progress
	managedOK bool // the device has concurrent managed access

	mu      sync.Mutex // guards what follows; the objects are used without it
	streams []*stream
	events  []*highlevel.Event
	async   *highlevel.MemoryAsyncPool
	execs   []*sharedExec
	// openModules are modules of operations whose Close was refused
	// while captures went on (closeModule): the finish closes them.
	openModules []*highlevel.Module

	// capturing is held shared while a goroutine captures and exclusively
	// by syncDevice: the package refuses device-wide waits while a
	// capture is in progress.
	capturing sync.RWMutex
	// capAny and capGlobal count the captures begun and in progress (see
	// window), of all modes and of CaptureGlobal.
	capAny, capGlobal atomic.Int64

	tally                        *tally
	hostWant, hostRan, hostMaybe atomic.Int64 // host functions queued (graph launches included), run, and maybe queued
	dropped                      atomic.Int64 // blocks of pool dropped without Free
	callbackBad                  atomic.Int64 // calls of the package in host functions that did not return ErrInCallback
	callbackErr                  atomic.Value // the first of them
}

// A stream is a stream the goroutines share (or a goroutine's own), with
// its gate. Work whose effect a model counts on is queued holding the gate
// shared (queue); a capture holds it exclusively from BeginCapture to
// EndCapture. So no goroutine's work is ever captured into another's graph,
// where it would run only when, and each time, that graph is launched:
// whether a program lets that happen is its business, not the package's.
// Close does not take the gate: streams are closed under the others' work,
// waits and captures.
type stream struct {
	s          *highlevel.Stream
	what       string
	legacy     bool // the legacy default stream, which the package refuses during captures
	capturable bool // a non-blocking stream, which the program's captures take
	gate       sync.RWMutex
}

// queue runs fn, which queues work on rs, with rs's gate held shared.
func (rs *stream) queue(fn func(s *highlevel.Stream) error) error {
	rs.gate.RLock()
	defer rs.gate.RUnlock()
	return fn(rs.s)
}

// allow is what work queued on rs may return: ErrClosed once another
// goroutine closed it, and on the legacy default stream ErrCapturing while
// a capture is in progress.
func (rs *stream) allow() allow {
	if rs.legacy {
		return aClosed | aCapAny
	}
	return aClosed
}

func newStream(d highlevel.Device, capturable bool, priority int) (*stream, error) {
	s, err := highlevel.NewStream(d, &highlevel.StreamOptions{NonBlocking: capturable, Priority: priority})
	if err != nil {
		return nil, err
	}
	what := "a shared blocking stream"
	if capturable {
		what = "a shared non-blocking stream"
	}
	return &stream{s: s, what: what, capturable: capturable}, nil
}

// A sharedTarget is device memory the shared GraphExecs write: every word
// holds one of the values a graph may have written.
type sharedTarget struct {
	p      highlevel.MemoryPointer
	n      int // words
	mu     sync.Mutex
	values map[uint32]bool
}

func (tg *sharedTarget) allowValue(v uint32) {
	tg.mu.Lock()
	tg.values[v] = true
	tg.mu.Unlock()
}

// A sharedExec is a GraphExec the goroutines share.
type sharedExec struct {
	x         *highlevel.GraphExec
	hostNodes int
}

func newProgram(t *testing.T, d highlevel.Device, ndev int, seed uint64, cfg *config, k *kernels) *program {
	p := &program{t: t, d: d, ndev: ndev, seed: seed, cfg: cfg, k: k, tally: newTally(), writes: &writeLog{}}
	var err error
	if p.pool, err = highlevel.NewMemoryPool(d); err != nil {
		t.Fatal(err)
	}
	p.pinned = highlevel.NewPinnedMemoryPool()
	if p.async, err = highlevel.NewMemoryAsyncPool(d); err != nil {
		t.Fatal(err)
	}
	legacy, err := highlevel.LegacyDefaultStream(d)
	if err != nil {
		t.Fatal(err)
	}
	p.legacy = &stream{s: legacy, what: "the legacy default stream", legacy: true}
	// Four non-blocking streams, which captures take, and one blocking
	// stream, which they do not: a blocking stream's capture would take
	// in the legacy default stream's work.
	for i := range 5 {
		rs, err := newStream(d, i < 4, -i%3)
		if err != nil {
			t.Fatal(err)
		}
		p.streams = append(p.streams, rs)
	}
	for i := range 4 {
		e, err := highlevel.NewEvent(d, &highlevel.EventOptions{DisableTiming: i%2 == 0, Blocking: i >= 2})
		if err != nil {
			t.Fatal(err)
		}
		p.events = append(p.events, e)
	}
	p.graphTarget = &sharedTarget{n: 1 << 14, values: map[uint32]bool{0: true}}
	if p.graphTarget.p, err = d.Alloc(4 * p.graphTarget.n); err != nil {
		t.Fatal(err)
	}
	if err := p.graphTarget.p.Memset(0, 4*p.graphTarget.n); err != nil {
		t.Fatal(err)
	}
	p.execs = make([]*sharedExec, 2)
	if v, err := d.Attribute(highlevel.DeviceConcurrentManagedAccess); err == nil && v != 0 {
		p.managedOK = true
	}
	p.progress = make([]progress, cfg.goroutines+1)
	setup := &worker{op: op{program: p, g: -1, n: -1, sub: -1, kind: "setup"}, r: rand.New(rand.NewPCG(seed, 1<<32))}
	for i := range cfg.blocks {
		b := &block{id: i}
		if !setup.allocBlock(b) {
			t.Fatalf("seed %d: block %d could not be made", seed, i)
		}
		p.blocks = append(p.blocks, b)
	}
	for g := range cfg.goroutines {
		w, err := newWorker(p, g)
		if err != nil {
			t.Fatalf("seed %d: goroutine %d: %v", seed, g, err)
		}
		p.workers = append(p.workers, w)
	}
	return p
}

// finish checks, once the goroutines are done, that every host function
// ran, that the shared graphs wrote only what they were given, every block
// against its model, and that the pool has every block back but those
// dropped; it frees and closes what the goroutines shared.
func (p *program) finish() {
	t := p.t
	o := &op{program: p, g: -1, n: -1, sub: -1, kind: "finish", win: p.window()}
	if !o.syncDevice() {
		return
	}
	ran, want, maybe := p.hostRan.Load(), p.hostWant.Load(), p.hostMaybe.Load()
	if ran < want || ran > want+maybe {
		t.Errorf("seed %d: %d host functions ran, want %d, or up to %d more queued by calls that failed", p.seed, ran, want, maybe)
	}
	p.tally.add("host functions run", ran)
	if n := p.callbackBad.Load(); n > 0 {
		t.Errorf("seed %d: %d calls of the package in host functions did not return ErrInCallback; the first: %v", p.seed, n, p.callbackErr.Load())
	}
	o.verifyTarget()
	fin := &worker{op: *o, r: rand.New(rand.NewPCG(p.seed, 1<<33))}
	for _, b := range p.blocks {
		if b.n == 0 {
			continue // its allocation failed, and was reported
		}
		b.mu.Lock()
		got, err := readAll(b)
		if o.okCopy(err, 0, "CopyToHost of all of %s", b.describe()) {
			b.compare(o, 0, got, "the last read, CopyToHost,")
		}
		fin.freeBlock(b, false)
		b.mu.Unlock()
	}
	for _, x := range p.execs {
		if x != nil {
			o.ok(x.x.Close(), 0, "GraphExec.Close of a shared GraphExec")
		}
	}
	for _, m := range p.openModules {
		o.ok(m.Close(), 0, "Module.Close of an operation's module, with no capture in progress")
	}
	for _, rs := range p.streams {
		o.ok(rs.s.Close(), 0, "Stream.Close of %s", rs.what)
	}
	for _, e := range p.events {
		o.ok(e.Close(), 0, "Event.Close of a shared event")
	}
	o.ok(p.async.Close(), 0, "MemoryAsyncPool.Close")
	o.ok(p.graphTarget.p.Free(), 0, "Free of the shared graphs' target")
	o.ok(p.pinned.Close(), 0, "PinnedMemoryPool.Close")
	// Blocks dropped without Free come back once their Memory values are
	// collected and the pool's next allocation takes them in.
	runtime.GC()
	runtime.GC()
	m, err := p.pool.Alloc(1)
	if o.ok(err, 0, "MemoryPool.Alloc") {
		o.ok(m.Free(), 0, "MemoryPool Free")
	}
	if active, dropped := p.pool.ActiveBlocks(), p.dropped.Load(); int64(active) > dropped {
		t.Errorf("seed %d: the pool has %d blocks in use after everything was freed, %d dropped without Free", p.seed, active, dropped)
	}
	o.ok(p.pool.Close(), 0, "MemoryPool.Close")
}

// readAll reads all of b with CopyToHost.
func readAll(b *block) ([]byte, error) {
	got := make([]byte, b.n)
	return got, highlevel.CopyToHost(got, b.p)
}

// verifyTarget checks that every word of the shared graphs' target holds
// a value a graph was given; the graphs may be running.
func (o *op) verifyTarget() {
	tg := o.graphTarget
	got := make([]uint32, tg.n)
	if !o.okCopy(retry(o, func() error { return highlevel.CopyToHost(got, tg.p) }), aCapAny, "CopyToHost of the shared graphs' target") {
		return
	}
	tg.mu.Lock()
	defer tg.mu.Unlock()
	for i, x := range got {
		if !tg.values[x] {
			o.fail("word %d of the shared graphs' target is %#x, which no graph wrote", i, x)
			return
		}
	}
}

// retry calls fn until it returns anything but ErrCapturing, for at most
// the bound of a wait: the refusals of a capture in progress pass.
func retry(o *op, fn func() error) error {
	deadline := time.Now().Add(o.cfg.wait)
	for {
		err := fn()
		if !errors.Is(err, highlevel.ErrCapturing) || time.Now().After(deadline) {
			return err
		}
		o.note("retries after ErrCapturing")
		time.Sleep(50 * time.Microsecond)
	}
}

// free calls fn, a Free, until it returns anything but ErrCapturing, for
// at most the bound of a wait, as retry does, and checks its error. A Free
// refused with ErrCapturing (during a capture in CaptureGlobal mode, which
// refuses freeing) must have changed nothing: where a later try says the
// memory was freed, the refusal freed it in the package's eyes, and
// neither gave it back nor left it usable.
func (o *op) free(fn func() error, a allow, format string, args ...any) bool {
	refused := false
	err := retry(o, func() error {
		err := fn()
		refused = refused || errors.Is(err, highlevel.ErrCapturing)
		return err
	})
	if refused && errors.Is(err, highlevel.ErrFreed) {
		o.fail("%s: refused with ErrCapturing during a capture in CaptureGlobal mode, yet tried again: %v; "+
			"the refusal changed the memory, which is neither given back nor usable", fmt.Sprintf(format, args...), err)
		return false
	}
	return o.ok(err, a|aCapGlobal, format, args...)
}

// syncDevice waits for all the device's work, with none of the program's
// captures in progress: it must work.
func (o *op) syncDevice() bool {
	o.capturing.Lock()
	defer o.capturing.Unlock()
	return o.ok(o.d.Synchronize(), 0, "Device.Synchronize with no capture in progress")
}

// waitCtx returns a context that ends after the bound of a wait.
func (o *op) waitCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), o.cfg.wait)
}

// queueAndWait queues fn's work on rs, holding its gate, and an event
// after it, and waits for the event; where the stream was closed
// meanwhile, or the event could not be recorded otherwise, it waits for
// the whole device. It returns whether the wait worked, and fn's error.
// The event waited for was recorded outside any capture: its wait must
// not say that a capture is in progress.
func (o *op) queueAndWait(rs *stream, fn func(s *highlevel.Stream) error) (bool, error) {
	var e *highlevel.Event
	var rerr error
	err := rs.queue(func(s *highlevel.Stream) error {
		err := fn(s)
		e, rerr = recordNew(s)
		return err
	})
	if rerr != nil {
		o.ok(rerr, rs.allow(), "Event.Record on %s", rs.what)
		return o.syncDevice(), err
	}
	defer func() { o.ok(e.Close(), 0, "Event.Close") }()
	ctx, cancel := o.waitCtx()
	defer cancel()
	werr := e.Wait(ctx)
	if errors.Is(werr, context.DeadlineExceeded) {
		o.fail("Event.Wait after work on %s did not end within %v", rs.what, o.cfg.wait)
		return false, err
	}
	return o.ok(werr, 0, "Event.Wait of an event recorded on %s outside any capture", rs.what), err
}

// captureOn captures what fn queues on rs in the given mode, through
// Capture or, when direct, BeginCapture and EndCapture on a locked OS
// thread. It holds the program's capturing lock shared and rs's gate
// exclusively, and counts the capture in progress for the windows of
// expected errors.
func (o *op) captureOn(rs *stream, mode highlevel.CaptureMode, direct bool, fn func(s *highlevel.Stream) error) (*highlevel.Graph, error) {
	o.capturing.RLock()
	defer o.capturing.RUnlock()
	rs.gate.Lock()
	defer rs.gate.Unlock()
	o.capAny.Add(capBegun)
	defer o.capAny.Add(-1)
	if mode == highlevel.CaptureGlobal {
		o.capGlobal.Add(capBegun)
		defer o.capGlobal.Add(-1)
	}
	o.note(fmt.Sprintf("captures %v", mode))
	if !direct {
		return highlevel.Capture(rs.s, mode, func() error { return fn(rs.s) })
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := rs.s.BeginCapture(mode); err != nil {
		return nil, err
	}
	ferr := fn(rs.s)
	g, err := rs.s.EndCapture()
	if ferr != nil {
		if err == nil {
			o.ok(g.Close(), 0, "Graph.Close of a capture whose work failed")
		}
		return nil, errors.Join(ferr, err)
	}
	return g, err
}

// A worker is one goroutine of a program, with what it owns.
type worker struct {
	op
	main, r *rand.Rand // the kinds and seeds of the operations; the numbers of the one in progress
	own     *stream    // captured by the worker alone
	own2    *stream    // the forks of its captures, and its hostfunc's concurrent captures
	// quiet is never captured and never shared: hostfunc's waits on it
	// must see every host function queued before them run.
	quiet   *highlevel.Stream
	scratch highlevel.MemoryPointer // busy kernels write it; never read
	bad     highlevel.MemoryPointer // check's count
	// target is what the worker's captures write, and tmodel its model:
	// a word that is unknown is -1.
	target highlevel.MemoryPointer
	tmodel []int64
	la     *linalgArrays
	mbuf   *managedBuf
}

const targetWords = 1 << 14

func newWorker(p *program, g int) (*worker, error) {
	w := &worker{
		op:   op{program: p, g: g, n: -1, sub: -1, kind: "setup"},
		main: rand.New(rand.NewPCG(p.seed, uint64(g))),
	}
	w.r = rand.New(rand.NewPCG(p.seed, uint64(g)+1<<31))
	var err error
	own, err := highlevel.NewStream(p.d, &highlevel.StreamOptions{NonBlocking: true})
	if err != nil {
		return nil, err
	}
	w.own = &stream{s: own, what: "the goroutine's own stream", capturable: true}
	own2, err := highlevel.NewStream(p.d, &highlevel.StreamOptions{NonBlocking: true, Priority: -1})
	if err != nil {
		return nil, err
	}
	w.own2 = &stream{s: own2, what: "the goroutine's second stream", capturable: true}
	if w.quiet, err = highlevel.NewStream(p.d, &highlevel.StreamOptions{NonBlocking: true}); err != nil {
		return nil, err
	}
	if w.scratch, err = p.d.Alloc(4 << 20); err != nil {
		return nil, err
	}
	if w.bad, err = p.d.Alloc(4); err != nil {
		return nil, err
	}
	if w.target, err = p.d.Alloc(4 * targetWords); err != nil {
		return nil, err
	}
	if err := w.target.Memset(0, 4*targetWords); err != nil {
		return nil, err
	}
	w.tmodel = make([]int64, targetWords)
	if w.la, err = newLinalgArrays(p.d); err != nil {
		return nil, err
	}
	return w, nil
}

// teardown frees what the worker owns, once its own streams are done.
func (w *worker) teardown() {
	for _, rs := range []*stream{w.own, w.own2} {
		ctx, cancel := w.waitCtx()
		w.ok(rs.s.Wait(ctx), 0, "Stream.Wait of %s", rs.what)
		cancel()
	}
	w.checkTarget(0, targetWords, "the last read")
	free := func(p highlevel.MemoryPointer, what string) {
		w.free(p.Free, 0, "Free of %s", what)
	}
	w.ok(w.quiet.Synchronize(), 0, "Stream.Synchronize of the quiet stream")
	free(w.scratch, "the scratch memory")
	free(w.bad, "check's count")
	free(w.target, "the captures' target")
	w.la.free(w)
	if w.mbuf != nil {
		free(w.mbuf.p, "managed memory")
	}
	w.ok(w.own.s.Close(), 0, "Stream.Close of the goroutine's own stream")
	w.ok(w.own2.s.Close(), 0, "Stream.Close of the goroutine's second stream")
	w.ok(w.quiet.Close(), 0, "Stream.Close of the quiet stream")
}

// stream returns one of the shared streams, or now and then the legacy
// default stream.
func (w *worker) stream() *stream {
	if w.r.IntN(10) == 0 {
		return w.legacy
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.streams[w.r.IntN(len(w.streams))]
}

// anyStream returns a shared stream, or now and then the goroutine's own.
func (w *worker) anyStream() *stream {
	if w.r.IntN(5) == 0 {
		return w.own
	}
	return w.stream()
}

// capturable returns one of the shared streams captures take.
func (w *worker) capturable() *stream {
	w.mu.Lock()
	defer w.mu.Unlock()
	for {
		if rs := w.streams[w.r.IntN(len(w.streams))]; rs.capturable {
			return rs
		}
	}
}

func (w *worker) event() *highlevel.Event {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.events[w.r.IntN(len(w.events))]
}

func (w *worker) sharedAsync() *highlevel.MemoryAsyncPool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.async
}

// mode draws a capture mode, of those $GOCUDA_MIXED_MODES allows.
func (w *worker) mode() highlevel.CaptureMode {
	return w.cfg.modes[w.r.IntN(3)%len(w.cfg.modes)]
}

// checkTarget compares words i to j-1 of the worker's target with its
// model, reading them on its own stream.
func (w *worker) checkTarget(i, j int, how string) {
	got := make([]uint32, j-i)
	p, _ := w.target.Add(4 * i)
	// To pageable memory, CUDA has written got when the call returns.
	if !w.okCopy(highlevel.CopyToHostAsync(w.own.s, got, p), 0, "CopyToHostAsync of the captures' target") {
		return
	}
	for k, v := range got {
		if m := w.tmodel[i+k]; m >= 0 && uint32(m) != v {
			w.fail("%s of the captures' target: word %d is %#x, want %#x", how, i+k, v, m)
			return
		}
	}
}

// setTarget sets the model of words i to j-1 of the worker's target to v,
// or unknown for v < 0.
func (w *worker) setTarget(i, j int, v int64) {
	for k := i; k < j; k++ {
		w.tmodel[k] = v
	}
}

// recordNew returns a new event recorded on s.
func recordNew(s *highlevel.Stream) (*highlevel.Event, error) {
	e, err := highlevel.NewEvent(s.Device(), nil)
	if err != nil {
		return nil, err
	}
	if err := e.Record(s); err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}
