package mixed

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gocuda/cuda/highlevel"
)

// The kinds of graphs built node by node (issue 48): build, cond and
// update. Each works on memory of its own, which it allocates, reads back
// and frees, and races the closes that captured graphs meet: Close of the
// graph, of its GraphExec, Free of the memory its nodes name and Close of
// the module of its kernels, which the graph and its instantiations hold.
// An error is expected only where the operation's own closes explain it:
// ErrClosed from a Graph, GraphExec or Module it closed, ErrFreed from
// memory it freed; and there it is required.

// graphSource holds the kernels of the graphs built node by node: set
// writes v to n words, add adds v to n words; step counts the runs of a
// while node's body in *count and sets its condition to go on below
// limit; choose sets a condition to v.
const graphSource = `
#include <cuda_device_runtime_api.h>
extern "C" __global__ void set(unsigned *p, unsigned v, int n) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) p[i] = v;
}
extern "C" __global__ void add(unsigned *p, unsigned v, int n) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) p[i] += v;
}
extern "C" __global__ void step(unsigned *count, unsigned limit, cudaGraphConditionalHandle h) {
	unsigned c = ++*count;
	cudaGraphSetConditional(h, c < limit);
}
extern "C" __global__ void choose(cudaGraphConditionalHandle h, unsigned v) {
	cudaGraphSetConditional(h, v);
}
`

// builtKinds are the kinds of this file, which need graphSource compiled.
var builtKinds = []string{"build", "cond", "update"}

// graphKernels are graphSource's compiled image and the program's module
// of it, never closed; the operations load modules of their own from the
// image too, which they close.
type graphKernels struct {
	image []byte
	*opModule
	// condOK and switchOK say whether the driver has conditional nodes
	// (CUDA 12.3) and if/else and switch nodes (CUDA 12.8).
	condOK, switchOK bool
}

// An opModule is a module of graphSource's kernels.
type opModule struct {
	m                      *highlevel.Module
	set, add, step, choose *highlevel.Kernel
	own                    bool // the operation's, which it closes
	closed                 bool // its Close returned nil
}

// cudaInclude is the CUDA toolkit's include directory, for the device
// runtime's header, as scripts/gpu.sh finds it.
func cudaInclude() string {
	if h := os.Getenv("CUDA_HOME"); h != "" {
		return filepath.Join(h, "include")
	}
	return "/usr/local/cuda/include"
}

// loadGraphKernels compiles graphSource, with the CUDA toolkit's headers,
// and loads it, for the program's of the kinds of this file.
func loadGraphKernels(t *testing.T, d highlevel.Device) *graphKernels {
	c, err := highlevel.Compile(graphSource, &highlevel.CompileOptions{Name: "graphs.cu", IncludePaths: []string{cudaInclude()}})
	if err != nil {
		t.Fatalf("Compile of the built graphs' kernels, with the headers of %s ($CUDA_HOME/include; GOCUDA_MIXED_SKIP=%s leaves them out): %v",
			cudaInclude(), "build,cond,update", err)
	}
	m, err := highlevel.LoadModule(c.Image)
	if err != nil {
		t.Fatalf("LoadModule: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	om, err := moduleKernels(m, d)
	if err != nil {
		t.Fatal(err)
	}
	gk := &graphKernels{image: c.Image, opModule: om}
	v, err := highlevel.DriverVersion()
	if err != nil {
		t.Fatal(err)
	}
	gk.condOK, gk.switchOK = v >= 12030, v >= 12080
	if !gk.condOK {
		t.Logf("driver %d has no conditional nodes: the cond kind does nothing", v)
	}
	return gk
}

// moduleKernels returns the kernels of m, a module of graphSource, loaded
// into device d: an occupancy query loads a kernel, as its first launch
// would.
func moduleKernels(m *highlevel.Module, d highlevel.Device) (*opModule, error) {
	om := &opModule{m: m}
	for name, kp := range map[string]**highlevel.Kernel{"set": &om.set, "add": &om.add, "step": &om.step, "choose": &om.choose} {
		k, err := m.Kernel(name)
		if err != nil {
			return nil, fmt.Errorf("Kernel(%q): %w", name, err)
		}
		if _, err := k.MaxActiveBlocksPerSM(d, 1, 0); err != nil {
			return nil, fmt.Errorf("MaxActiveBlocksPerSM of %s: %w", name, err)
		}
		*kp = k
	}
	return om, nil
}

// graphModule returns the module whose kernels an operation's nodes use:
// the program's or, one time in four, one it loads for itself, which
// closeModule closes. It returns nil where the loading failed (reported).
func (w *worker) graphModule() *opModule {
	if w.r.IntN(4) != 0 {
		return w.k.graph.opModule
	}
	// With no capture of the program in progress, as before the first:
	// CUDA loads the kernels into the device at their first use, which a
	// strict capture refuses on its thread (and LoadModule is refused
	// during a capture in CaptureGlobal mode).
	w.capturing.Lock()
	defer w.capturing.Unlock()
	m, err := highlevel.LoadModule(w.k.graph.image)
	if !w.ok(err, 0, "LoadModule of the built graphs' kernels with no capture in progress") {
		return nil
	}
	om, err := moduleKernels(m, w.d)
	if !w.ok(err, 0, "a kernel of a module loaded for an operation") {
		w.ok(m.Close(), 0, "Module.Close with no capture in progress")
		return nil
	}
	om.own = true
	return om
}

// closeModule closes om if it is the operation's and not closed yet. Close
// refuses while a capture is in progress (ErrCapturing), and is tried
// again for the bound of a wait; a module still open after that is left
// to the program's finish.
func (w *worker) closeModule(om *opModule) {
	if !om.own || om.closed {
		return
	}
	err := retry(&w.op, om.m.Close)
	if w.ok(err, aCapAny, "Module.Close of a module loaded for an operation") {
		om.closed = true
		return
	}
	om.own = false // its error was reported or expected: the finish closes it
	w.mu.Lock()
	w.openModules = append(w.openModules, om.m)
	w.mu.Unlock()
}

// mustBe checks that err, which the operation's own close or free
// explains, is target (ErrClosed or ErrFreed): nil or any other error
// fails the program.
func (w *worker) mustBe(err, target error, format string, args ...any) {
	what, name := fmt.Sprintf(format, args...), "ErrClosed"
	if target == highlevel.ErrFreed {
		name = "ErrFreed"
	}
	switch {
	case err == nil:
		w.fail("%s succeeded: want %s", what, name)
	case !errors.Is(err, target):
		w.fail("%s: %v, want %s", what, err, name)
	default:
		w.note("required " + name + " returned")
	}
}

// graphArray allocates n words for an operation's graph.
func (w *worker) graphArray(n int) (*highlevel.Array[uint32], bool) {
	var a *highlevel.Array[uint32]
	err := retry(&w.op, func() (err error) {
		a, err = highlevel.AllocArray[uint32](w.d, n)
		return err
	})
	return a, w.ok(err, aCapGlobal, "AllocArray of %d words", n)
}

// wordsAt returns words i to j-1 of a as a kernel argument: a itself where
// they are all of it, else a MemoryPointer to word i.
func wordsAt(a *highlevel.Array[uint32], i, j int) any {
	if i == 0 && j == a.Len() {
		return a
	}
	p, err := a.MemoryPointer().Add(4 * i)
	if err != nil {
		panic(err) // i is within a
	}
	return p
}

// wordSpan draws a span of n words: all of them one time in three.
func (w *worker) wordSpan(n int) (int, int) {
	if w.r.IntN(3) == 0 {
		return 0, n
	}
	i := w.r.IntN(n)
	return i, i + 1 + w.r.IntN(n-i)
}

// setWords sets want[i:j] to v.
func setWords(want []uint32, i, j int, v uint32) {
	for k := i; k < j; k++ {
		want[k] = v
	}
}

// repeat returns n words of v.
func repeat(v uint32, n int) []uint32 {
	s := make([]uint32, n)
	setWords(s, 0, n, v)
	return s
}

// one is the launch configuration of a single thread.
var one = highlevel.LaunchConfig{Grid: highlevel.Dim3{X: 1}, Block: highlevel.Dim3{X: 1}}

// checkWords reads words i to i+len(want)-1 of a on the goroutine's own
// stream and compares them with want. It reports whether it compared.
func (w *worker) checkWords(a *highlevel.Array[uint32], i int, want []uint32, what string) bool {
	got := make([]uint32, a.Len())
	// To pageable memory, CUDA has written got when the call returns.
	if !w.okCopy(a.CopyToHostAsync(w.own.s, got), 0, "CopyToHostAsync of %s", what) {
		return false
	}
	for k, v := range want {
		if got[i+k] != v {
			bad := 0
			for k2, v2 := range want {
				if got[i+k2] != v2 {
					bad++
				}
			}
			w.fail("%s: word %d is %#x, want %#x; %d of words %d..%d differ", what, i+k, got[i+k], v, bad, i, i+len(want)-1)
			return true
		}
	}
	return true
}

// mustBeFreed checks that a read of a, which the operation freed, is
// refused with ErrFreed.
func (w *worker) mustBeFreed(a *highlevel.Array[uint32], what string) {
	got := make([]uint32, a.Len())
	w.mustBe(a.CopyToHostAsync(w.own.s, got), highlevel.ErrFreed, "CopyToHostAsync of %s after its Free", what)
}

// A built is a graph an operation built node by node, with what a launch
// writes: all of arr, which then holds want.
type built struct {
	kind string // the operation's kind, for the counts
	what string
	g    *highlevel.Graph
	arr  *highlevel.Array[uint32]
	want []uint32
	om   *opModule
	// host is set where the graph has a host node, which counts its runs
	// in runs.
	host bool
	runs atomic.Int32
}

// build builds a graph of a memset of a new array and one to four kernel
// nodes that set or add to spans of it, each after the one before, one of
// them maybe in a child graph, closed once added, maybe an array
// allocated, set, copied in and freed by nodes (buildMemory), and maybe an
// empty node, a host node and event nodes (buildEvents) after them; then
// it runs it (runBuilt). One time in six another
// goroutine closes the graph while this one adds the nodes instead.
func (w *worker) build() {
	om := w.graphModule()
	if om == nil {
		return
	}
	defer w.closeModule(om)
	n := 1 + w.r.IntN(1<<14)
	arr, ok := w.graphArray(n)
	if !ok {
		return
	}
	if w.r.IntN(6) == 0 {
		w.buildClosing(om, arr)
		w.free(arr.Free, 0, "Array.Free of a graph's memory")
		return
	}
	g, err := highlevel.NewGraph(w.d)
	if !w.ok(err, 0, "NewGraph") {
		w.free(arr.Free, 0, "Array.Free of a graph's memory")
		return
	}
	b := &built{kind: "build", what: "a built graph", g: g, arr: arr, om: om}
	if w.buildNodes(b) {
		w.note("build: graphs built")
		w.runBuilt(b)
		return
	}
	w.ok(g.Close(), 0, "Graph.Close of a built graph")
	w.free(arr.Free, 0, "Array.Free of a built graph's memory")
}

// buildNodes adds build's nodes to b.g and sets b.want. It reports
// whether every node was added.
func (w *worker) buildNodes(b *built) bool {
	g, arr, om, n := b.g, b.arr, b.om, b.arr.Len()
	v0 := w.r.Uint32()
	prev, err := highlevel.AddMemset(g, nil, arr, v0)
	if !w.ok(err, 0, "AddMemset of %d words", n) {
		return false
	}
	b.want = repeat(v0, n)
	nodes := []highlevel.GraphNode{prev}
	kernels := 1 + w.r.IntN(4)
	child := -1
	if w.r.IntN(4) == 0 {
		child = w.r.IntN(kernels)
	}
	for k := range kernels {
		i, j := w.wordSpan(n)
		v := w.r.Uint32()
		kern, name := om.set, "set"
		if w.r.IntN(2) == 0 {
			kern, name = om.add, "add"
		}
		deps := []highlevel.GraphNode{prev}
		if prev != nodes[0] && w.r.IntN(3) == 0 {
			deps = append(deps, nodes[0]) // the memset, which prev comes after too
		}
		var nd highlevel.GraphNode
		if k == child {
			c, err := highlevel.NewGraph(w.d)
			if !w.ok(err, 0, "NewGraph of a child graph") {
				return false
			}
			_, err = c.AddKernel(nil, kern, grid(j-i), wordsAt(arr, i, j), v, int32(j-i))
			if w.ok(err, 0, "AddKernel of %s to a child graph", name) {
				nd, err = g.AddGraph(deps, c)
				w.ok(err, 0, "AddGraph")
			}
			// The graph holds a copy of the child, and what it uses.
			w.ok(c.Close(), 0, "Graph.Close of a child graph")
			if err != nil {
				return false
			}
			w.note("build: child graphs")
		} else {
			nd, err = g.AddKernel(deps, kern, grid(j-i), wordsAt(arr, i, j), v, int32(j-i))
			if !w.ok(err, 0, "AddKernel of %s on words %d..%d of %d", name, i, j-1, n) {
				return false
			}
		}
		for x := i; x < j; x++ {
			if kern == om.add {
				b.want[x] += v
			} else {
				b.want[x] = v
			}
		}
		prev = nd
		nodes = append(nodes, nd)
	}
	if w.r.IntN(4) == 0 {
		var ok bool
		if prev, ok = w.buildMemory(b, prev); !ok {
			return false
		}
		nodes = append(nodes, prev)
	}
	if w.r.IntN(3) == 0 {
		_, err := g.AddEmpty(nodes...)
		if !w.ok(err, 0, "AddEmpty after %d nodes", len(nodes)) {
			return false
		}
	}
	if w.r.IntN(4) == 0 {
		_, err := g.AddHost([]highlevel.GraphNode{prev}, func() { b.runs.Add(1) })
		if !w.ok(err, 0, "AddHost after %d nodes", len(nodes)) {
			return false
		}
		b.host = true
	}
	if w.r.IntN(4) == 0 && !w.buildEvents(g, prev) {
		return false
	}
	if w.r.IntN(16) == 0 {
		dot, err := g.Dot()
		if w.ok(err, 0, "Graph.Dot") && !bytes.Contains(dot, []byte("digraph")) {
			w.fail("Graph.Dot gave no digraph: %.200q", dot)
		}
	}
	return true
}

// buildMemory adds to b's graph, after prev, an allocation node of an
// array the length of some of b.arr's words, a memset of it, a copy of it
// to those words and its free node, and returns the copy node. Outside
// its graph, the array is refused.
func (w *worker) buildMemory(b *built, prev highlevel.GraphNode) (highlevel.GraphNode, bool) {
	i, j := w.wordSpan(b.arr.Len())
	alloc, scratch, err := highlevel.AddAlloc[uint32](b.g, []highlevel.GraphNode{prev}, j-i)
	if !w.ok(err, 0, "AddAlloc of %d words", j-i) {
		return prev, false
	}
	v := w.r.Uint32()
	set, err := highlevel.AddMemset(b.g, []highlevel.GraphNode{alloc}, scratch, v)
	if !w.ok(err, 0, "AddMemset of an allocation node's array") {
		return prev, false
	}
	words, err := b.arr.Slice(i, j)
	if !w.ok(err, 0, "Array.Slice(%d, %d)", i, j) {
		return prev, false
	}
	cp, err := highlevel.AddCopy(b.g, []highlevel.GraphNode{set}, words, scratch)
	if !w.ok(err, 0, "AddCopy from an allocation node's array") {
		return prev, false
	}
	_, err = highlevel.AddFree(b.g, []highlevel.GraphNode{cp}, scratch)
	if !w.ok(err, 0, "AddFree of an allocation node's array") {
		return prev, false
	}
	w.mustBe(scratch.Free(), highlevel.ErrInvalid, "Free of an allocation node's array")
	w.mustBe(scratch.CopyFromHost(make([]uint32, j-i)), highlevel.ErrInvalid, "CopyFromHost to an allocation node's array")
	for x := i; x < j; x++ {
		b.want[x] = v
	}
	w.note("build: allocation nodes")
	return cp, true
}

// buildEvents adds to g, after prev, an event record node of a new event
// and a wait node for it, then closes the event, which g holds. It
// reports whether both nodes were added.
func (w *worker) buildEvents(g *highlevel.Graph, prev highlevel.GraphNode) bool {
	e, err := highlevel.NewEvent(w.d, &highlevel.EventOptions{DisableTiming: true})
	if !w.ok(err, 0, "NewEvent for event nodes") {
		return false
	}
	rec, err := g.AddEventRecord([]highlevel.GraphNode{prev}, e)
	ok := w.ok(err, 0, "AddEventRecord")
	if ok {
		_, err = g.AddEventWait([]highlevel.GraphNode{rec}, e)
		ok = w.ok(err, 0, "AddEventWait after the event's record node")
	}
	w.ok(e.Close(), 0, "Event.Close of an event a graph holds")
	if ok {
		w.note("build: event nodes")
	}
	return ok
}

// buildClosing adds nodes to a new graph while a helper goroutine closes
// it: each add works or, once the graph is closed, returns ErrClosed, and
// every call after Close returned must return ErrClosed.
func (w *worker) buildClosing(om *opModule, arr *highlevel.Array[uint32]) {
	g, err := highlevel.NewGraph(w.d)
	if !w.ok(err, 0, "NewGraph") {
		return
	}
	h := w.helper(0)
	spins := w.r.IntN(64)
	var closed atomic.Bool // the helper's Close returned
	var wg sync.WaitGroup
	wg.Go(func() {
		for range spins {
			runtime.Gosched()
		}
		h.ok(g.Close(), 0, "Graph.Close of a graph other goroutines add nodes to")
		closed.Store(true)
	})
	n := arr.Len()
	saw := false // an add returned ErrClosed
	var deps []highlevel.GraphNode
	for k := range 2 + w.r.IntN(8) {
		after := closed.Load()
		var nd highlevel.GraphNode
		var err error
		what := fmt.Sprintf("node %d (an add on words of %d)", k, n)
		switch {
		case k == 0:
			what = "AddMemset"
			nd, err = highlevel.AddMemset(g, nil, arr, w.r.Uint32())
		case k%3 == 0:
			what = "AddEmpty"
			nd, err = g.AddEmpty(deps...)
		default:
			i, j := w.wordSpan(n)
			nd, err = g.AddKernel(deps, om.add, grid(j-i), wordsAt(arr, i, j), w.r.Uint32(), int32(j-i))
		}
		switch {
		case after || saw:
			w.mustBe(err, highlevel.ErrClosed, "%s after Graph.Close", what)
		case err == nil:
			deps = []highlevel.GraphNode{nd}
		case errors.Is(err, highlevel.ErrClosed):
			saw = true
			w.note("build: adds refused by a Close under them")
		default:
			w.ok(err, 0, "%s while another goroutine closes the graph", what)
		}
	}
	wg.Wait()
	_, err = g.AddEmpty()
	w.mustBe(err, highlevel.ErrClosed, "AddEmpty after Graph.Close")
	_, err = g.Instantiate(nil)
	w.mustBe(err, highlevel.ErrClosed, "Instantiate after Graph.Close")
	w.mustBe(g.Close(), highlevel.ErrClosed, "a second Graph.Close")
	w.note("build: graphs closed under node adds")
}

// cond builds a graph of a memset of two new words, a while node whose
// body's kernel counts in word 0 to a limit, then a kernel that sets a
// second condition to v, then an if node (an if/else or a switch of three
// bodies, where the driver has them) whose bodies add to word 1; then it
// runs it (runBuilt). Each launch starts with the memset and the
// conditions reset: word 0 ends at the limit, word 1 as v chose.
func (w *worker) cond() {
	if !w.k.graph.condOK {
		w.note("cond: skipped, the driver has no conditional nodes")
		return
	}
	om := w.graphModule()
	if om == nil {
		return
	}
	defer w.closeModule(om)
	arr, ok := w.graphArray(2)
	if !ok {
		return
	}
	g, err := highlevel.NewGraph(w.d)
	if !w.ok(err, 0, "NewGraph") {
		w.free(arr.Free, 0, "Array.Free of a graph's memory")
		return
	}
	b := &built{kind: "cond", what: "a conditional graph", g: g, arr: arr, om: om}
	if w.condNodes(b) {
		w.note("cond: graphs built")
		w.runBuilt(b)
		return
	}
	w.ok(g.Close(), 0, "Graph.Close of a conditional graph")
	w.free(arr.Free, 0, "Array.Free of a conditional graph's memory")
}

// condNodes adds cond's nodes to b.g and sets b.want. It reports whether
// every node was added.
func (w *worker) condNodes(b *built) bool {
	g, om := b.g, b.om
	loop, err := g.NewConditional(1, true)
	if !w.ok(err, 0, "NewConditional(1, reset)") {
		return false
	}
	pick, err := g.NewConditional(0, true)
	if !w.ok(err, 0, "NewConditional(0, reset)") {
		return false
	}
	zero, err := highlevel.AddMemset(g, nil, b.arr, 0)
	if !w.ok(err, 0, "AddMemset of two words") {
		return false
	}
	limit := 1 + w.r.IntN(64)
	while, body, err := g.AddWhile([]highlevel.GraphNode{zero}, loop)
	if !w.ok(err, 0, "AddWhile") {
		return false
	}
	if _, err := body.AddKernel(nil, om.step, one, b.arr, uint32(limit), loop); !w.ok(err, 0, "AddKernel of step to a while node's body") {
		return false
	}
	word1 := wordsAt(b.arr, 1, 2)
	shape := 0 // if
	if w.k.graph.switchOK {
		shape = w.r.IntN(3) // if, if/else, switch
	}
	v := uint32(w.r.IntN(2))
	if shape == 2 {
		v = uint32(w.r.IntN(4))
	}
	// After the while node: CUDA leaves concurrent calls of
	// cudaGraphSetConditional undefined.
	set, err := g.AddKernel([]highlevel.GraphNode{while}, om.choose, one, pick, v)
	if !w.ok(err, 0, "AddKernel of choose") {
		return false
	}
	// Body k of the node adds 10+k to word 1.
	var bodies []*highlevel.Graph
	var want1 uint32
	after := []highlevel.GraphNode{set}
	switch shape {
	case 0:
		_, then, err := g.AddIf(after, pick)
		if !w.ok(err, 0, "AddIf") {
			return false
		}
		bodies = []*highlevel.Graph{then}
		if v != 0 {
			want1 = 10
		}
	case 1:
		_, then, els, err := g.AddIfElse(after, pick)
		if !w.ok(err, 0, "AddIfElse") {
			return false
		}
		bodies = []*highlevel.Graph{then, els}
		want1 = 11
		if v != 0 {
			want1 = 10
		}
	case 2:
		_, bodies, err = g.AddSwitch(after, pick, 3)
		if !w.ok(err, 0, "AddSwitch of 3 bodies") {
			return false
		}
		if v < 3 {
			want1 = 10 + v
		}
	}
	for k, body := range bodies {
		if _, err := body.AddKernel(nil, om.add, one, word1, uint32(10+k), int32(1)); !w.ok(err, 0, "AddKernel of add to body %d", k) {
			return false
		}
	}
	b.want = []uint32{uint32(limit), want1}
	b.what = fmt.Sprintf("a conditional graph (while to %d, %s of %d)", limit, []string{"if", "if/else", "switch"}[shape], v)
	return true
}

// runBuilt instantiates b's graph and launches it once or twice on a
// stream, then checks the array: a launch writes all of it. The closes
// race the launch as they do a captured graph's: its module is closed
// before the instantiation, after it or at the end; its memory freed
// before the instantiation or the launch one time in four (the graph and
// its instantiation hold it; a read of it must then be refused with
// ErrFreed); the graph closed before the launch, or it and its
// instantiation closed as soon as Launch returns, or after the wait. Once
// its module is closed, a kernel node of it must be refused with
// ErrClosed.
func (w *worker) runBuilt(b *built) {
	closeModAt := w.r.IntN(3)   // 0: before Instantiate, 1: after it, 2: at the end, before the GraphExec's Close
	freeAt := w.r.IntN(8)       // 0: before Instantiate, 1: after it, else after the check
	closeGraphAt := w.r.IntN(3) // 0: before the launch, 1: as soon as Launch returns, 2: after the wait
	early := w.r.IntN(2) == 0   // the GraphExec closed as soon as Launch returns
	times := 1 + w.r.IntN(2)
	freed, graphClosed := false, false
	freeArr := func() {
		if w.free(b.arr.Free, 0, "Array.Free of %s's memory, which it holds", b.what) {
			freed = true
			w.mustBeFreed(b.arr, b.what+"'s memory")
		}
	}
	closeMod := func() {
		if !b.om.own {
			return
		}
		w.closeModule(b.om)
		if b.om.closed && !graphClosed {
			_, err := b.g.AddKernel(nil, b.om.set, one, b.arr, uint32(0), int32(1))
			w.mustBe(err, highlevel.ErrClosed, "AddKernel of a kernel of a closed module")
		}
	}
	closeGraph := func() {
		if !graphClosed {
			w.ok(b.g.Close(), 0, "Graph.Close of %s", b.what)
			graphClosed = true
		}
	}
	defer func() {
		closeGraph()
		if !freed {
			w.free(b.arr.Free, 0, "Array.Free of %s's memory", b.what)
		}
	}()
	if closeModAt == 0 {
		closeMod()
	}
	if freeAt == 0 {
		freeArr()
	}
	x, ok := w.instantiate(b.g)
	if !ok {
		return
	}
	if closeModAt == 1 {
		closeMod()
	}
	if freeAt == 1 && !freed {
		freeArr()
	}
	if closeGraphAt == 0 {
		closeGraph() // its instantiation stays usable
	}
	execClosed := false
	closeExec := func() {
		w.ok(x.Close(), 0, "GraphExec.Close of %s", b.what)
		execClosed = true
	}
	defer func() {
		if !execClosed {
			closeExec()
		}
	}()
	if closeModAt == 2 {
		defer closeMod() // while the GraphExec holds it: it is unloaded once both let go
	}
	rs := w.anyStream()
	waited, err := w.queueAndWait(rs, func(s *highlevel.Stream) error {
		for range times {
			// A refusal of a capture in progress changes nothing: tried again.
			if err := retry(&w.op, func() error { return x.Launch(s) }); err != nil {
				return err
			}
		}
		if early {
			closeExec() // the launches run to their end
		}
		if closeGraphAt == 1 {
			closeGraph()
		}
		return nil
	})
	if !w.ok(err, rs.allow()|aCapGlobal, "GraphExec.Launch of %s on %s (%d times)", b.what, rs.what, times) || !waited {
		return
	}
	w.note(b.kind + ": launches")
	if b.host {
		if got := b.runs.Load(); got != int32(times) {
			w.fail("%s: its host node ran %d times in %d launches", b.what, got, times)
		} else {
			w.note(b.kind + ": host nodes checked")
		}
	}
	if freed {
		w.note(b.kind + ": launches of freed memory")
	} else if w.checkWords(b.arr, 0, b.want, "a launch of "+b.what) {
		w.note(b.kind + ": launches checked")
	}
	if execClosed {
		w.mustBe(x.Launch(w.own.s), highlevel.ErrClosed, "GraphExec.Launch after its Close")
		w.mustBe(x.Close(), highlevel.ErrClosed, "a second GraphExec.Close")
	}
}

// update builds a graph of a memset of a new array and a set of a span of
// it, instantiates it, launches it and checks the array; then, one to
// three times, changes the set's value with GraphExec.SetKernelArgs (now
// and then its span too, or its memory: a second array, which it may free
// at once, the GraphExec holding it), launches and checks again. It races
// closes and frees with them: one time in four another goroutine closes
// the GraphExec meanwhile (each call works or returns ErrClosed, and every
// call after Close returned must return ErrClosed; the launches are then
// on the goroutine's own stream, so that ErrClosed is the GraphExec's);
// one time in four it frees the array at an update (the GraphExec holds
// it: the launches go on, a read must return ErrFreed); where the module
// is its own, it closes it at an update one time in two (the launches go
// on, SetKernelArgs with its kernel must return ErrClosed), else at the
// end while the GraphExec holds it. The graph is closed after the last
// update, before the last launch, or at the end.
func (w *worker) update() {
	om := w.graphModule()
	if om == nil {
		return
	}
	defer w.closeModule(om)
	n := 1 + w.r.IntN(1<<14)
	arr, ok := w.graphArray(n)
	if !ok {
		return
	}
	var arr2 *highlevel.Array[uint32] // the second array, once retargeted
	freed, freed2 := false, false
	defer func() {
		if !freed {
			w.free(arr.Free, 0, "Array.Free of an updated graph's memory")
		}
		if arr2 != nil && !freed2 {
			w.free(arr2.Free, 0, "Array.Free of an updated graph's second memory")
		}
	}()
	g, err := highlevel.NewGraph(w.d)
	if !w.ok(err, 0, "NewGraph") {
		return
	}
	graphClosed := false
	closeGraph := func() {
		if !graphClosed {
			w.ok(g.Close(), 0, "Graph.Close of an updated graph")
			graphClosed = true
		}
	}
	defer closeGraph()
	v0 := w.r.Uint32()
	zero, err := highlevel.AddMemset(g, nil, arr, v0)
	if !w.ok(err, 0, "AddMemset of %d words", n) {
		return
	}
	i, j := w.wordSpan(n)
	v := w.r.Uint32()
	node, err := g.AddKernel([]highlevel.GraphNode{zero}, om.set, grid(j-i), wordsAt(arr, i, j), v, int32(j-i))
	if !w.ok(err, 0, "AddKernel of set on words %d..%d of %d", i, j-1, n) {
		return
	}
	w.note("update: graphs built")
	x, ok := w.instantiate(g)
	if !ok {
		return
	}
	rounds := 1 + w.r.IntN(3)
	racer := w.r.IntN(4) == 0
	freeAt, closeModAt := -1, -1
	if w.r.IntN(4) == 0 {
		freeAt = w.r.IntN(rounds)
	}
	if om.own && w.r.IntN(2) == 0 {
		closeModAt = w.r.IntN(rounds)
	}
	rs := w.own // with racer: ErrClosed is the GraphExec's
	if !racer {
		rs = w.anyStream()
	}
	var closed atomic.Bool // the helper's Close of x returned
	var wg sync.WaitGroup
	if racer {
		h := w.helper(0)
		spins := w.r.IntN(256)
		wg.Go(func() {
			for range spins {
				runtime.Gosched()
			}
			h.ok(x.Close(), 0, "GraphExec.Close of a GraphExec another goroutine updates and launches")
			closed.Store(true)
		})
	}
	saw := false // a call on x returned ErrClosed
	// onX checks the error of a call on x, which began after the helper's
	// Close returned where after: it reports whether the call worked.
	onX := func(err error, after bool, a allow, format string, args ...any) bool {
		switch {
		case after || saw:
			w.mustBe(err, highlevel.ErrClosed, "%s after GraphExec.Close", fmt.Sprintf(format, args...))
			return false
		case err == nil:
			return true
		case racer && errors.Is(err, highlevel.ErrClosed):
			saw = true
			w.note("update: calls refused by a Close under them")
			return false
		}
		return w.ok(err, a, format, args...)
	}
	// The model: a launch sets all of arr to v0 but, where the node
	// writes arr, words i to j-1 to v; where it writes arr2, those of arr2.
	target := arr
	launch := func(updated bool) {
		after := closed.Load()
		waited, err := w.queueAndWait(rs, func(s *highlevel.Stream) error {
			return retry(&w.op, func() error { return x.Launch(s) })
		})
		if !onX(err, after, rs.allow()|aCapGlobal, "GraphExec.Launch of an updated graph on %s", rs.what) || !waited {
			return
		}
		w.note("update: launches")
		checked := false
		if !freed {
			want := repeat(v0, n)
			if target == arr {
				setWords(want, i, j, v)
			}
			checked = w.checkWords(arr, 0, want, "a launch of an updated graph")
		}
		if target == arr2 && !freed2 {
			checked = w.checkWords(arr2, i, repeat(v, j-i), "a launch of a graph updated to write a second array") && checked
		}
		if checked && updated {
			w.note("update: updates checked")
		}
	}
	launch(false)
	// alive reports whether a, an array of the operation, may be named
	// again: allocated and not freed.
	alive := func(a *highlevel.Array[uint32]) bool {
		return a == arr && !freed || a != nil && a == arr2 && !freed2
	}
	for u := range rounds {
		if u == freeAt && !freed {
			if w.free(arr.Free, 0, "Array.Free of an updated graph's memory, which it holds") {
				freed = true
				w.mustBeFreed(arr, "an updated graph's memory")
			}
		}
		if u == closeModAt {
			w.closeModule(om)
			if om.closed {
				// Refused before its arguments are looked at: arr may be freed.
				err := x.SetKernelArgs(node, om.set, one, arr, v, int32(1))
				w.mustBe(err, highlevel.ErrClosed, "SetKernelArgs with a kernel of a closed module")
			}
		}
		// The memory the node writes from now on: arr, or a second
		// array; one that is freed cannot be named.
		want := arr
		switch c := w.r.IntN(4); {
		case c == 0 && arr2 == nil:
			if a2, ok := w.graphArray(n); ok {
				arr2, want = a2, a2
			}
		case c == 1:
			want = arr2
		}
		var nt *highlevel.Array[uint32]
		for _, a := range []*highlevel.Array[uint32]{want, target, arr, arr2} {
			if alive(a) {
				nt = a
				break
			}
		}
		updated := false
		if !freed && w.r.IntN(3) == 0 {
			// The memset sets arr to a new value from now on.
			nv0 := w.r.Uint32()
			after := closed.Load()
			if onX(highlevel.SetMemset(x, zero, arr, nv0), after, 0, "SetMemset of %d words", n) {
				v0, updated = nv0, true
				w.note("update: memsets updated")
			}
		}
		if !om.closed && nt != nil {
			ni, nj, nv := i, j, w.r.Uint32()
			if w.r.IntN(3) == 0 {
				ni, nj = w.wordSpan(n)
			}
			after := closed.Load()
			err := x.SetKernelArgs(node, om.set, grid(nj-ni), wordsAt(nt, ni, nj), nv, int32(nj-ni))
			if onX(err, after, 0, "SetKernelArgs of set on words %d..%d", ni, nj-1) {
				i, j, v, target, updated = ni, nj, nv, nt, true
				w.note("update: updates")
				if nt == arr2 && w.r.IntN(3) == 0 {
					// The GraphExec holds it now.
					if w.free(arr2.Free, 0, "Array.Free of memory a GraphExec's update named") {
						freed2 = true
						w.mustBeFreed(arr2, "the memory of an update")
					}
				}
			}
		}
		if u == rounds-1 && w.r.IntN(2) == 0 {
			closeGraph() // the GraphExec stays usable
		}
		launch(updated)
	}
	wg.Wait()
	w.closeModule(om) // where it is the operation's and still open: while the graph or the GraphExec holds it
	if racer {
		err := x.SetKernelArgs(node, om.set, one, arr, v, int32(1)) // as above
		w.mustBe(err, highlevel.ErrClosed, "SetKernelArgs after GraphExec.Close")
		w.mustBe(x.Launch(w.own.s), highlevel.ErrClosed, "GraphExec.Launch after its Close")
		w.mustBe(x.Close(), highlevel.ErrClosed, "a second GraphExec.Close")
		return
	}
	w.ok(x.Close(), 0, "GraphExec.Close of an updated graph")
}

// builtMinimum is the fewest operations of a kind from which a program
// checks the successes of the kinds of this file.
const builtMinimum = 20

// checkBuilt checks that a program of enough operations built, launched,
// checked and updated graphs node by node often enough: each kind built
// at least half as many graphs as it had operations, and checked the
// launches (and updates) of at least a quarter as many. A kind skipped, or
// cond on a driver without conditional nodes, is not checked.
func (p *program) checkBuilt() {
	p.tally.mu.Lock()
	defer p.tally.mu.Unlock()
	n := p.tally.n
	for _, c := range []struct {
		kind   string
		counts []string
	}{
		{"build", []string{"build: graphs built", "build: launches", "build: launches checked"}},
		{"cond", []string{"cond: graphs built", "cond: launches", "cond: launches checked"}},
		{"update", []string{"update: graphs built", "update: updates", "update: launches", "update: updates checked"}},
	} {
		ops := n["op "+c.kind]
		if ops < builtMinimum || c.kind == "cond" && !p.k.graph.condOK {
			continue
		}
		for i, key := range c.counts {
			min := ops / 2
			if i == len(c.counts)-1 {
				min = ops / 4 // the checks: some launches write memory freed first
			}
			if n[key] < min {
				p.t.Errorf("seed %d (rerun: GOCUDA_MIXED_SEED=%d GOCUDA_MIXED_PROGRAMS=1): %d operations of kind %s, and %q only %d: want at least %d",
					p.seed, p.seed, ops, c.kind, key, n[key], min)
			}
		}
	}
}
