package highlevel

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gocuda/cuda/internal/randomtest"
	"github.com/gocuda/cuda/internal/stubtest"
)

// TestStandInRandom runs random programs of highlevel on the stand-in
// driver, one for each seed, in a child process (TestStandInRandomChild),
// against a strict oracle (standin_random_model_test.go).
//
// srWorkers goroutines each do srOps operations, drawn from the seed: they
// allocate blocks (from the device, a MemoryPool, a MemoryAsyncPool, the
// device's default async pool; AllocArray, ArrayFrom, AllocArrayAsync),
// copy to and from the host and between blocks, fill them with elements
// of 1, 2, 3, 4, 6, 8 and 16 bytes, launch axpy on them, take views of
// them (Slice, ArrayOf), free and drop them, make and close streams and
// events and wait on them, capture work into graphs (Capture, and
// Graph.Capture into a built graph, with streams that join the capture
// and rejoin it), build graphs node by node (memset, kernel, copy, empty
// and child graph nodes), instantiate and launch them, give their
// instantiations' kernel nodes new arguments (SetKernelArgs), and free
// memory an instantiation uses, take a block from the pool it went back
// to, and launch the instantiation; some operations ask for what must be
// refused (past the end, lengths that differ, a memset node of 8 bytes
// that differ, what a capture refuses) or use what they freed or closed.
// They share streams, constant blocks read by their copies and kernels
// and by a shared graph (memset, axpy and copy nodes), its instantiation,
// and the pools: another goroutine closes each of those, and frees the
// constant blocks, at a point of the program the seed draws, while the
// others use them.
//
// The oracle: every operation's error must be nil unless the program's
// own actions explain it (srExpect, judge); every operation that worked
// is done on a model of each block's bytes, and a graph's work at each of
// its launches that worked, in the order its nodes were added (the
// stand-in's, which their dependencies allow); every read is compared
// with the model, and every block is read back whole and compared before
// it is freed or dropped, and at the end, with its views. Each seed must
// reach srMinimums, per kind of operation and outcome. The shared graph's
// targets must be, at the end, what the number of its launches that
// worked makes them.
//
// What each goroutine draws is the same on every run of a seed; how the
// goroutines interleave is not, and so neither is which of the racing
// operations fail. $HL_STANDIN_RANDOM_SEED runs one seed only; a failure
// names the seed, the goroutine and its operation, and the last
// operations on the block it concerns.
func TestStandInRandom(t *testing.T) {
	seeds := srSeeds
	if s, ok := randomtest.Seed(t, srSeedEnv); ok {
		seeds = []uint64{s}
	}
	name := "seeds"
	for _, s := range seeds {
		name += fmt.Sprintf(" %d", s)
	}
	// One child for all the seeds: a child's exit costs a second under
	// -race (GORACE's atexit_sleep_ms).
	runChildCases(t, "TestStandInRandomChild", srCaseEnv, []childCase{{name: name}})
}

func TestStandInRandomChild(t *testing.T) {
	stubtest.SkipUnlessChild(t, "TestStandInRandom")
	name := os.Getenv(srCaseEnv)
	for _, f := range strings.Fields(strings.TrimPrefix(name, "seeds")) {
		seed, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			t.Fatalf("case %q: %q is no seed", name, f)
		}
		t.Run(fmt.Sprintf("seed %d", seed), func(t *testing.T) { srRun(t, seed) })
	}
}

var srSeeds = []uint64{1, 2, 3, 4}

const (
	srSeedEnv = "HL_STANDIN_RANDOM_SEED"
	srCaseEnv = "HL_STANDIN_RANDOM_CASE"
	srWorkers = 4
	srOps     = 1000 // per goroutine
)

// srMinimums are the operations, with their outcomes, that each seed must
// count at least so many of: a regression that makes a whole kind fail
// with an error the oracle allows fails the test here.
var srMinimums = map[string]int{
	"alloc device ok":           12,
	"alloc pool ok":             18,
	"alloc async pool ok":       40,
	"alloc array ok":            12,
	"alloc array from ok":       20,
	"h2d ok":                    100,
	"d2h ok":                    50,
	"d2d ok":                    60,
	"fill uint8 ok":             15,
	"fill uint16 ok":            5,
	"fill float32 ok":           30,
	"fill uint64 ok":            6,
	"fill [4]uint32 ok":         5,
	"fill [3]byte ok":           5,
	"fill [3]uint16 ok":         6,
	"axpy ok":                   20,
	"view ok":                   20,
	"free ok":                   120,
	"free freed":                8,
	"check free":                120,
	"check drop":                25,
	"check view":                12,
	"check capture":             50,
	"check reuse":               4,
	"check end":                 3,
	"use freed":                 30,
	"use closed":                20,
	"stream new ok":             15,
	"stream close ok":           12,
	"wait stream ok":            10,
	"wait event ok":             7,
	"record ok":                 6,
	"capture ok":                120,
	"capture into ok":           12,
	"captured op ok":            200,
	"captured join ok":          10,
	"capture refusal capturing": 60,
	"instantiate ok":            80,
	"launch ok":                 100,
	"launch shared ok":          1,
	"launch after free done":    25,
	"graph new ok":              15,
	"node memset ok":            8,
	"node memset invalid":       1,
	"node kernel ok":            7,
	"node copy ok":              6,
	"node empty ok":             5,
	"node child ok":             8,
	"set kernel args ok":        3,
	"refusal invalid":           50,
	"shared close ok":           11, // every one of them
}

// An srWorld is one seed's program: what its goroutines share.
type srWorld struct {
	t    *testing.T
	seed uint64
	k    *Kernel

	pool   *MemoryPool
	apool  *MemoryAsyncPool
	pools  [2]*srObj // their states
	shared []*srStream
	consts []*srBlock // read by the goroutines' copies and kernels, and the shared graph

	// The shared graph: t1 = v1 (a memset node), t2 += a2*consts[0] (an
	// axpy node), t3 = consts[1] (a copy node); and its instantiation.
	graph      *srGraph
	exec       *srExec
	t1, t2, t3 *srBlock
	v1         []byte
	a2         float32
	launches   atomic.Int64 // of the shared graph's work, that worked

	capActive atomic.Int32 // captures of the program in progress
	capGen    atomic.Int64 // captures of the program begun
	ops       atomic.Int64 // operations done, for the closer's schedule
	failed    atomic.Bool

	counts map[string]int // the goroutines', once they are done
}

func srRun(t *testing.T, seed uint64) {
	start := time.Now()
	wd := &srWorld{t: t, seed: seed, counts: map[string]int{}}
	closer := newSrWorker(wd, srWorkers, seed)
	wd.setUp(closer)
	workers := make([]*srWorker, srWorkers)
	for i := range workers {
		workers[i] = newSrWorker(wd, i, seed)
	}
	var wg sync.WaitGroup
	done := make(chan struct{})
	for _, w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.run()
		}()
	}
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		closer.closeShared(done)
	}()
	wg.Wait()
	close(done)
	<-closed
	if wd.failed.Load() {
		return
	}
	for _, w := range workers {
		w.end()
	}
	closer.endShared()
	for _, w := range append(workers, closer) {
		for k, n := range w.counts {
			wd.counts[k] += n
		}
	}
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(wd.counts)) {
		fmt.Fprintf(&b, "\t%-36s %5d\n", k, wd.counts[k])
	}
	t.Logf("seed %d: %d goroutines, %d operations each, %d launches of the shared graph, in %v:\n%s",
		seed, srWorkers, srOps, wd.launches.Load(), time.Since(start).Round(time.Millisecond), b.String())
	for _, k := range slices.Sorted(maps.Keys(srMinimums)) {
		if n := wd.counts[k]; n < srMinimums[k] {
			t.Errorf("seed %d: %d of %q, want at least %d", seed, n, k, srMinimums[k])
		}
	}
}

// setUp makes what the goroutines share, with w, the closer, which must
// see all of it work.
func (wd *srWorld) setUp(w *srWorker) {
	t := wd.t
	w.desc = "setting up"
	mod, err := LoadModule([]byte("stub image"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mod.Close() })
	if wd.k, err = mod.Kernel("axpy"); err != nil {
		t.Fatal(err)
	}
	if wd.pool, err = NewMemoryPool(Device(0)); err != nil {
		t.Fatal(err)
	}
	if wd.apool, err = NewMemoryAsyncPool(0); err != nil {
		t.Fatal(err)
	}
	wd.pools = [2]*srObj{newSrObj("the shared MemoryPool", ErrClosed), newSrObj("the shared MemoryAsyncPool", ErrClosed)}
	for i := range 3 {
		s, err := NewStream(0, &StreamOptions{NonBlocking: i != 0})
		if err != nil {
			t.Fatal(err)
		}
		wd.shared = append(wd.shared, &srStream{s: s, obj: newSrObj(fmt.Sprintf("shared stream %d", i), ErrClosed)})
	}
	r := w.r
	constant := func(name string, class, size int) *srBlock {
		var data []byte
		if class == srBytes {
			data = make([]byte, size)
			for i := range data {
				data[i] = byte(r.Uint32())
			}
		} else {
			data = srFloats(srSmall(r, size/4))
		}
		p, err := Device(0).Alloc(size)
		if err != nil {
			t.Fatal(err)
		}
		if err := CopyFromHost(p, data); err != nil {
			t.Fatal(err)
		}
		return &srBlock{name: name, class: class, p: p, size: size, free: p.Free, model: data, obj: newSrObj(name, ErrFreed)}
	}
	wd.consts = []*srBlock{
		constant("shared constant 0", srSrc, 256),
		constant("shared constant 1", srBytes, 256),
		constant("shared constant 2", srSrc, 512),
		constant("shared constant 3", srBytes, 1024),
	}
	for _, c := range wd.consts {
		c.note("written at the start")
	}

	// The shared graph and its targets.
	wd.t1 = constant("shared target 1", srBytes, 256)
	wd.t2 = constant("shared target 2", srAcc, 256)
	wd.t3 = constant("shared target 3", srBytes, 256)
	wd.v1 = []byte{0xc3, 0x5a, 0x96, 0x0f}
	wd.a2 = float32(r.IntN(4) + 1)
	g, err := NewGraph(0)
	if err != nil {
		t.Fatal(err)
	}
	t1, err := ArrayOf[uint32](wd.t1.p, 64)
	if err != nil {
		t.Fatal(err)
	}
	n1, err := AddMemset(g, nil, t1, srValue[uint32](wd.v1))
	if err != nil {
		t.Fatal(err)
	}
	x, err := ArrayOf[float32](wd.consts[0].p, 64)
	if err != nil {
		t.Fatal(err)
	}
	y, err := ArrayOf[float32](wd.t2.p, 64)
	if err != nil {
		t.Fatal(err)
	}
	n2, err := g.AddKernel([]GraphNode{n1}, wd.k, LaunchConfig{Grid: Dim3{X: 2}, Block: Dim3{X: 32}}, wd.a2, x, y, int32(64))
	if err != nil {
		t.Fatal(err)
	}
	src, err := ArrayOf[byte](wd.consts[1].p, 256)
	if err != nil {
		t.Fatal(err)
	}
	dst, err := ArrayOf[byte](wd.t3.p, 256)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := AddCopy(g, []GraphNode{n2}, dst, src); err != nil {
		t.Fatal(err)
	}
	wd.graph = &srGraph{name: "the shared graph", g: g, obj: newSrObj("the shared graph", ErrClosed), built: true, shared: true,
		nodes: []srNode{{eff: []srEffect{{kind: srShared}}}}}
	xe, err := g.Instantiate(nil)
	if err != nil {
		t.Fatal(err)
	}
	wd.exec = &srExec{name: "the shared instantiation", x: xe, obj: newSrObj("the shared instantiation", ErrClosed), graph: wd.graph,
		nodes: wd.graph.nodes}
}

// An srClose is one of the closer's closes: when, of the goroutines'
// operations, it comes, and what it does.
type srClose struct {
	at  int64
	obj *srObj
	do  func() error
	pre func() // checks before it
}

// closeShared closes the shared objects, each once the goroutines have
// done the number of operations the seed drew for it, while they use
// them; the rest once done is closed.
func (w *srWorker) closeShared(done <-chan struct{}) {
	wd := w.wd
	total := int64(srWorkers * srOps)
	at := func(lo, hi float64) int64 { return int64((lo + (hi-lo)*w.r.Float64()) * float64(total)) }
	var cs []srClose
	for _, s := range wd.shared {
		cs = append(cs, srClose{at: at(0.1, 0.9), obj: s.obj, do: s.s.Close})
	}
	for _, c := range wd.consts {
		cs = append(cs, srClose{at: at(0.1, 0.9), obj: c.obj, do: c.free, pre: func() { w.check(c, "free") }})
	}
	cs = append(cs,
		srClose{at: at(0.3, 0.9), obj: wd.graph.obj, do: wd.graph.g.Close},
		srClose{at: at(0.3, 0.95), obj: wd.exec.obj, do: wd.exec.x.Close},
		srClose{at: at(0.5, 0.95), obj: wd.pools[0], do: wd.pool.Close},
		srClose{at: at(0.5, 0.95), obj: wd.pools[1], do: wd.apool.Close})
	slices.SortFunc(cs, func(a, b srClose) int { return int(a.at - b.at) })
	for _, c := range cs {
	wait:
		for wd.ops.Load() < c.at {
			select {
			case <-done:
				break wait
			default:
				time.Sleep(20 * time.Microsecond)
			}
		}
		if wd.failed.Load() {
			return
		}
		w.op++
		w.desc = "closing " + c.obj.name
		if c.pre != nil {
			c.pre()
		}
		x := w.expect()
		c.obj.state.Store(srClosing)
		err := w.bounded(c.obj.name, c.do)
		c.obj.state.Store(srClosed)
		w.count("shared close", w.judge(x, err))
	}
}

// endShared checks, once all is done, the shared graph's targets against
// the launches of its work that worked, and the constant blocks not
// freed, and closes what is left.
func (w *srWorker) endShared() {
	wd := w.wd
	w.op++
	w.desc = "checking the shared graph's targets"
	n := int(wd.launches.Load())
	if n > 0 {
		for i := 0; i < len(wd.t1.model); i += 4 {
			copy(wd.t1.model[i:], wd.v1)
		}
		copy(wd.t3.model, wd.consts[1].model)
	}
	w.axpy(wd.t2, 0, wd.consts[0], 0, 64, wd.a2, n)
	note := fmt.Sprintf("the shared graph's work, launched %d times", n)
	for _, b := range []*srBlock{wd.t1, wd.t2, wd.t3} {
		b.note(note)
	}
	for _, b := range append([]*srBlock{wd.t1, wd.t2, wd.t3}, wd.consts...) {
		if b.obj.state.Load() == srOpen {
			w.check(b, "end")
			w.count("free", w.judge(w.expect(b.obj), w.bounded("Free of "+b.name, b.free)))
		}
	}
	for _, s := range wd.shared {
		if s.obj.state.Load() == srOpen {
			w.count("stream close", w.judge(w.expect(), w.bounded("Close of "+s.obj.name, s.s.Close)))
		}
	}
	for _, c := range []struct {
		obj *srObj
		do  func() error
	}{{wd.graph.obj, wd.graph.g.Close}, {wd.exec.obj, wd.exec.x.Close}, {wd.pools[0], wd.pool.Close}, {wd.pools[1], wd.apool.Close}} {
		if c.obj.state.Load() == srOpen {
			w.count("shared close", w.judge(w.expect(), w.bounded(c.obj.name, c.do)))
		}
	}
	w.count("close", w.judge(w.expect(), w.bounded("Close of "+w.home.obj.name, w.home.s.Close)))
}

// newSrWorker returns goroutine id of the program of seed.
func newSrWorker(wd *srWorld, id int, seed uint64) *srWorker {
	w := &srWorker{wd: wd, id: id, r: rand.New(rand.NewPCG(seed, uint64(id))), counts: map[string]int{}}
	s, err := NewStream(0, nil)
	if err != nil {
		wd.t.Fatal(err)
	}
	w.home = &srStream{s: s, obj: newSrObj(fmt.Sprintf("goroutine %d's own stream", id), ErrClosed)}
	return w
}
