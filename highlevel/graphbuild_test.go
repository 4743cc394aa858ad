package highlevel

import (
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/gocuda/cuda/cudadrv"
	"github.com/gocuda/cuda/highlevel/internal/driver"
)

// graphBuildCases are what TestGraphBuild checks of graphs built node by
// node (NewGraph, the Add methods, Graph.Capture, SetKernelArgs, Dot, the
// conditional nodes) on the stand-in driver, each in a child process
// (TestGraphBuildChild).
var graphBuildCases = []childCase{
	{"a chain of nodes runs in its order", checkBuiltChain},
	{"SetKernelArgs changes an instantiation", checkBuiltSetArgs},
	{"SetMemset and SetCopy change an instantiation", checkBuiltSetMemsetCopy},
	{"AddHost calls its function at each launch", checkBuiltHost},
	{"event record and wait nodes", checkBuiltEvents},
	{"a record node's launch is a record for the event's waits", checkBuiltEventState},
	{"allocation and free nodes", checkBuiltMemory},
	{"allocation node memory is for its graph's nodes", checkBuiltMemoryRefusals},
	{"AddGraph runs a copy", checkBuiltChild},
	{"Dot names the nodes", checkBuiltDot},
	{"conditional nodes", checkBuiltConditional},
	{"graphs with conditional nodes take turns", checkBuiltCondTurns},
	{"refusals", checkBuiltRefusals},
	{"the stand-in refuses what CUDA refuses", checkBuiltStandInRefusals},
	{"a built graph holds what its nodes use", checkBuiltHolds},
	{"nodes added concurrently", checkBuiltConcurrent},
	{"Graph.Capture runs its work between nodes", checkCaptureInto},
	{"Graph.Capture has the graph to itself", checkCaptureExclusive},
	{"Graph.Capture whose fn fails or panics", checkCaptureFails},
	{"Graph.Capture whose fn closes or ends the stream", checkCaptureStreamEnds},
	{"Graph.Capture's graph holds what the work uses", checkCaptureHolds},
	{"Graph.Capture refusals", checkCaptureRefusals},
	{"the stand-in captures into a graph", checkStandInCaptureInto},
}

// TestGraphBuild runs graphBuildCases on the stand-in driver, in child
// processes where libcudart cannot be loaded, as TestStandIn does: a graph
// built node by node runs its nodes, in an order their dependencies allow,
// at each launch of an instantiation and not before; an instantiation's
// kernel node takes new arguments; a child graph node runs a copy of its
// child; Dot draws the nodes and their dependencies; conditional nodes run
// the bodies their conditions pick; the package refuses what is wrong with
// the error kinds it documents; a built graph, and its instantiations,
// keep the memory and modules its nodes use until they are closed; and
// work captured into a graph (Graph.Capture) becomes nodes between its
// others, while the graph refuses its other methods and its Close waits,
// and is held as nodes added are.
func TestGraphBuild(t *testing.T) {
	runChildCases(t, "TestGraphBuildChild", "HL_GRAPHBUILD_CASE", graphBuildCases)
}

func TestGraphBuildChild(t *testing.T) {
	runChildCase(t, "TestGraphBuild", "HL_GRAPHBUILD_CASE", graphBuildCases)
}

// checkBuiltSetMemsetCopy changes a memset node's value and array, and a
// copy node's arrays, in an instantiation; checks that it holds the new
// memory; and that the refusals are the package's or CUDA's, as they
// should be.
func checkBuiltSetMemsetCopy(t *testing.T) {
	s := standInStream(t)
	c := newBuiltChain(t)
	x := builtInstantiate(t, c.g)
	if err := SetMemset(x, c.set, c.y, float32(4)); err != nil {
		t.Fatalf("SetMemset of a new value: %v", err)
	}
	if got := launchBuilt(t, x, s, c.y); !slices.Equal(got, axpyWant(4, 5, 4)) {
		t.Errorf("after SetMemset(y, 4): %v, want %v", got, axpyWant(4, 5, 4))
	}
	// The memset sets z instead: y keeps what it had, plus 5x.
	z := builtArray(t, make([]float32, 4))
	if err := SetMemset(x, c.set, z, float32(7)); err != nil {
		t.Fatalf("SetMemset of another array: %v", err)
	}
	if got := launchBuilt(t, x, s, c.y); !slices.Equal(got, axpyWant(4, 10, 4)) {
		t.Errorf("y after SetMemset(z, 7): %v, want %v", got, axpyWant(4, 10, 4))
	}
	if got := builtHost(t, z); !slices.Equal(got, []float32{7, 7, 7, 7}) {
		t.Errorf("z after SetMemset(z, 7): %v, want 7s", got)
	}

	g := newBuiltGraph(t)
	a, b := builtArray(t, make([]float32, 4)), builtArray(t, builtXs)
	cp, err := AddCopy(g, nil, a, b)
	if err != nil {
		t.Fatal(err)
	}
	xc := builtInstantiate(t, g)
	if got := launchBuilt(t, xc, s, a); !slices.Equal(got, builtXs) {
		t.Errorf("a copy node: %v, want %v", got, builtXs)
	}
	a2, b2 := builtArray(t, make([]float32, 4)), builtArray(t, []float32{5, 6, 7, 8})
	if err := SetCopy(xc, cp, a2, b2); err != nil {
		t.Fatalf("SetCopy: %v", err)
	}
	if err := a.CopyFromHost(make([]float32, 4)); err != nil {
		t.Fatal(err)
	}
	if got := launchBuilt(t, xc, s, a2); !slices.Equal(got, []float32{5, 6, 7, 8}) {
		t.Errorf("after SetCopy(a2, b2): %v, want [5 6 7 8]", got)
	}
	if got := builtHost(t, a); !slices.Equal(got, make([]float32, 4)) {
		t.Errorf("the copy's old destination after SetCopy: %v, want zeros", got)
	}
	// xc holds b2: Free leaves it to xc's Close.
	p := b2.Ptr()
	if err := b2.Free(); err != nil {
		t.Fatal(err)
	}
	if got := launchBuilt(t, xc, s, a2); !slices.Equal(got, []float32{5, 6, 7, 8}) {
		t.Errorf("SetCopy's source freed while held: %v, want [5 6 7 8]", got)
	}
	if !standInAllocated(t, p) {
		t.Error("SetCopy's source was given back while its instantiation holds it")
	}
	if err := xc.Close(); err != nil {
		t.Fatal(err)
	}
	freeLost() // as the next allocation would
	if standInAllocated(t, p) {
		t.Error("SetCopy's source was kept after its instantiation's Close")
	}

	three := builtArray(t, make([]float32, 3))
	freed := builtArray(t, make([]float32, 4))
	if err := freed.Free(); err != nil {
		t.Fatal(err)
	}
	x2 := builtInstantiate(t, c.g)
	for _, r := range []struct {
		name string
		err  error
		want error
	}{
		{"SetMemset of a value of 3 bytes that differ", SetMemset(x2, c.set, builtBytes(t), [3]byte{1, 2, 3}), ErrInvalid},
		{"SetMemset of the zero GraphNode", SetMemset(x2, GraphNode{}, c.y, float32(1)), ErrInvalid},
		{"SetMemset of a nil Array", SetMemset(x2, c.set, nil, float32(1)), ErrNil},
		{"SetMemset of a freed Array", SetMemset(x2, c.set, freed, float32(1)), ErrFreed},
		{"SetMemset on a nil GraphExec", SetMemset(nil, c.set, c.y, float32(1)), ErrNil},
		{"SetCopy of arrays of 3 and 4", SetCopy(x2, cp, three, c.y), ErrInvalid},
		{"SetCopy of a freed Array", SetCopy(x2, cp, freed, c.y), ErrFreed},
		// CUDA's refusals: a node of another kind, another shape.
		{"SetMemset of a kernel node", SetMemset(x2, c.first, c.y, float32(1)), cudadrv.ERROR_INVALID_VALUE},
		{"SetMemset of another length", SetMemset(x2, c.set, three, float32(1)), cudadrv.ERROR_INVALID_VALUE},
		{"SetCopy of a memset node", SetCopy(x2, c.set, z, c.y), cudadrv.ERROR_INVALID_VALUE},
	} {
		if !errors.Is(r.err, r.want) {
			t.Errorf("%s: %v, want %v", r.name, r.err, r.want)
		}
	}
	if got := launchBuilt(t, x2, s, c.y); !slices.Equal(got, axpyWant(1, 5, 4)) {
		t.Errorf("after the refused calls: %v, want %v, as before them", got, axpyWant(1, 5, 4))
	}
	if err := x2.Close(); err != nil {
		t.Fatal(err)
	}
	if err := SetMemset(x2, c.set, c.y, float32(1)); !errors.Is(err, ErrClosed) {
		t.Errorf("SetMemset after the GraphExec's Close: %v, want ErrClosed", err)
	}
	x3 := builtInstantiate(t, c.g)
	if err := c.g.Close(); err != nil {
		t.Fatal(err)
	}
	if err := SetMemset(x3, c.set, c.y, float32(1)); !errors.Is(err, ErrClosed) {
		t.Errorf("SetMemset of a node of a closed graph: %v, want ErrClosed", err)
	}
}

// builtBytes is an array of [3]byte, for the refusal of a memset of a
// value whose bytes differ.
func builtBytes(t *testing.T) *Array[[3]byte] {
	a, err := AllocArray[[3]byte](Device(0), 4)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Free() })
	return a
}

// checkBuiltHost adds host nodes: their functions run once at each launch,
// in the graph's order; a panic in one is reported by the launch's
// stream, also for a graph it is a child of, or after a launch on the
// legacy default stream by the next Launch or Close; and the refusals.
func checkBuiltHost(t *testing.T) {
	s := standInStream(t)
	g := newBuiltGraph(t)
	var runs atomic.Int32
	first, err := g.AddHost(nil, func() { runs.Add(1) })
	if err != nil {
		t.Fatalf("AddHost: %v", err)
	}
	// The second doubles what the first counted: it runs after it.
	if _, err := g.AddHost([]GraphNode{first}, func() { runs.Add(runs.Load()) }); err != nil {
		t.Fatalf("AddHost after a host node: %v", err)
	}
	x := builtInstantiate(t, g)
	for range 3 {
		if err := x.Launch(s); err != nil {
			t.Fatalf("Launch: %v", err)
		}
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	if got := runs.Load(); got != 14 { // ((0+1)*2+1)*2+1)*2
		t.Errorf("after 3 launches of a graph of two host nodes: %d, want 14", got)
	}

	boom := newBuiltGraph(t)
	if _, err := boom.AddHost(nil, func() { panic("boom") }); err != nil {
		t.Fatal(err)
	}
	parent := newBuiltGraph(t)
	if _, err := parent.AddGraph(nil, boom); err != nil {
		t.Fatal(err)
	}
	xb, xp := builtInstantiate(t, boom), builtInstantiate(t, parent)
	// reported counts the panics err reports, each a *PanicError; Launch
	// reports those of earlier launches, or its own where it ran already.
	reported := func(err error) int {
		var p *PanicError
		if err != nil && !errors.As(err, &p) {
			t.Errorf("a report of panics: %v, want *PanicErrors", err)
		}
		if err == nil {
			return 0
		}
		return strings.Count(err.Error(), "panicked: boom")
	}
	// Each panic goes to the launch's stream, as LaunchHostFunc's does:
	// its Synchronize reports it, once.
	for i := range 2 {
		if n := reported(xb.Launch(s)); n != 0 {
			t.Errorf("launch %d of a graph whose host node panics: %d panics reported, want 0", i, n)
		}
		if n := reported(s.Synchronize()); n != 1 {
			t.Errorf("Synchronize after launch %d: %d panics reported, want 1", i, n)
		}
	}
	if n := reported(xb.Close()); n != 0 {
		t.Errorf("Close after the stream reported the panics: %d reported again", n)
	}
	if n := reported(xp.Launch(s)) + reported(s.Synchronize()) + reported(xp.Close()); n != 1 {
		t.Errorf("a launch of a graph with it as a child, Synchronize and Close: %d panics reported, want 1", n)
	}
	// On the legacy default stream, which reports nothing, the next
	// Launch or Close does; a Close before the function runs does not
	// lose it: the stream of a later launch gets it.
	xl := builtInstantiate(t, boom)
	n := reported(xl.Launch(nil))
	if err := Device(0).Synchronize(); err != nil {
		t.Fatal(err)
	}
	if n += reported(xl.Close()); n != 1 {
		t.Errorf("a launch on the legacy default stream, then Close: %d panics reported, want 1", n)
	}

	c, err := g.NewConditional(1, true)
	if err != nil {
		t.Fatal(err)
	}
	_, body, err := g.AddIf(nil, c)
	if err != nil {
		t.Fatal(err)
	}
	closed := newBuiltGraph(t)
	if err := closed.Close(); err != nil {
		t.Fatal(err)
	}
	fn := func() {}
	for _, r := range []struct {
		name string
		err  error
		want error
	}{
		{"a nil function", second(g.AddHost(nil, nil)), ErrInvalid},
		{"a conditional node's body", second(body.AddHost(nil, fn)), ErrInvalid},
		{"a closed graph", second(closed.AddHost(nil, fn)), ErrClosed},
		{"a nil graph", second((*Graph)(nil).AddHost(nil, fn)), ErrNil},
		{"a dependency of another graph", second(g.AddHost([]GraphNode{{1, boom}}, fn)), ErrInvalid},
	} {
		if !errors.Is(r.err, r.want) {
			t.Errorf("AddHost to %s: %v, want %v", r.name, r.err, r.want)
		}
	}
}

// checkBuiltEvents checks event nodes: a record node's event happens
// once the node's dependencies have run, at each launch, and not before
// one; a wait node's graph runs; a graph and its instantiation hold their
// events, which Close leaves to the last of them (the stand-in fails a
// launch whose event was destroyed); and the refusals.
func checkBuiltEvents(t *testing.T) {
	s, other := standInStream(t), standInStream(t)
	e, err := NewEvent(0, nil)
	if err != nil {
		t.Fatal(err)
	}
	g := newBuiltGraph(t)
	release := make(chan struct{})
	held, err := g.AddHost(nil, func() { <-release })
	if err != nil {
		t.Fatal(err)
	}
	_, err = g.AddEventRecord([]GraphNode{held}, e)
	if err != nil {
		t.Fatalf("AddEventRecord: %v", err)
	}
	c := newBuiltChain(t)
	if _, err := c.g.AddEventWait(nil, e); err != nil {
		t.Fatalf("AddEventWait: %v", err)
	}
	x, xc := builtInstantiate(t, g), builtInstantiate(t, c.g)
	if err := e.Record(other); err != nil { // done at once: nothing on other
		t.Fatal(err)
	}
	if err := x.Launch(s); err != nil {
		t.Fatal(err)
	}
	if done, err := e.Query(); err != nil || done {
		t.Errorf("Query while the record node's dependency runs: %v, %v, want false, nil", done, err)
	}
	close(release)
	if err := e.Synchronize(); err != nil {
		t.Errorf("Synchronize of a record node's event: %v", err)
	}
	if done, err := e.Query(); err != nil || !done {
		t.Errorf("Query after: %v, %v, want true, nil", done, err)
	}
	// Closed, e stays while the graphs hold it: their launches run.
	if err := e.Close(); err != nil {
		t.Fatalf("Close of an event graphs hold: %v", err)
	}
	freeLost()
	if err := errors.Join(x.Launch(s), s.Synchronize()); err != nil {
		t.Errorf("a launch of a record node whose event was closed: %v", err)
	}
	if got := launchBuilt(t, xc, s, c.y); !slices.Equal(got, axpyWant(1, 5, 4)) {
		t.Errorf("a graph with a wait node, its event closed: %v, want %v", got, axpyWant(1, 5, 4))
	}
	if err := errors.Join(g.Close(), x.Close(), c.g.Close()); err != nil {
		t.Fatal(err)
	}
	freeLost()
	if r := driver.EventQuery(e.ctx, uintptr(e.h)); r != 0 {
		t.Errorf("cuEventQuery of the event while an instantiation holds it: %d, want CUDA_SUCCESS", r)
	}
	if err := xc.Close(); err != nil {
		t.Fatal(err)
	}
	freeLost()
	if r := driver.EventQuery(e.ctx, uintptr(e.h)); r != int32(cudadrv.ERROR_INVALID_HANDLE) {
		t.Errorf("cuEventQuery of the event once its graphs are closed: %d, want CUDA_ERROR_INVALID_HANDLE", r)
	}

	e2, err := NewEvent(0, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer e2.Close()
	g2 := newBuiltGraph(t)
	r2, err := g2.AddEventRecord(nil, e2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g2.AddEventWait([]GraphNode{r2}, e2); err != nil {
		t.Fatal(err)
	}
	if dot, err := g2.Dot(); err != nil || !strings.Contains(string(dot), "EVENT_RECORD") || !strings.Contains(string(dot), "EVENT_WAIT") {
		t.Errorf("Dot of a record and a wait node: %v\n%s", err, dot)
	}
	cond, err := g2.NewConditional(1, true)
	if err != nil {
		t.Fatal(err)
	}
	_, body, err := g2.AddIf(nil, cond)
	if err != nil {
		t.Fatal(err)
	}
	closed := newBuiltGraph(t)
	if err := closed.Close(); err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct {
		name string
		err  error
		want error
	}{
		{"a nil event", second(g2.AddEventRecord(nil, nil)), ErrNil},
		{"a zero event", second(g2.AddEventWait(nil, &Event{})), ErrNil},
		{"a closed event", second(g2.AddEventRecord(nil, e)), ErrClosed},
		{"a conditional node's body", second(body.AddEventWait(nil, e2)), ErrInvalid},
		{"a closed graph", second(closed.AddEventRecord(nil, e2)), ErrClosed},
		{"a nil graph", second((*Graph)(nil).AddEventWait(nil, e2)), ErrNil},
		{"a dependency of another graph", second(g2.AddEventRecord([]GraphNode{r2, {1, g}}, e2)), ErrInvalid},
	} {
		if !errors.Is(r.err, r.want) {
			t.Errorf("an event node with %s: %v, want %v", r.name, r.err, r.want)
		}
	}
}

// checkBuiltEventState checks that a launch of a graph with a record node
// is a record of the event for its waits: a Done channel closed for the
// event's earlier record is not given again while the node waits, and a
// Record made in a capture no longer refuses the waits.
func checkBuiltEventState(t *testing.T) {
	s := standInStream(t)
	e, err := NewEvent(0, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	g := newBuiltGraph(t)
	gate := make(chan struct{}, 2) // a token lets the host node's function return
	held, err := g.AddHost(nil, func() { <-gate })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.AddEventRecord([]GraphNode{held}, e); err != nil {
		t.Fatal(err)
	}
	x := builtInstantiate(t, g)
	if err := e.Record(s); err != nil {
		t.Fatal(err)
	}
	<-e.Done() // the stream's record has happened
	if err := x.Launch(s); err != nil {
		t.Fatal(err)
	}
	select {
	case <-e.Done():
		t.Errorf("Done closed while the launch's record node waits for its dependency")
	default:
	}
	gate <- struct{}{}
	<-e.Done()
	if err := e.Err(); err != nil {
		t.Errorf("Err after the record node's event: %v", err)
	}
	// Recorded in a capture, the event stands for the graph's work; a
	// launch of x records it anew.
	cg, err := Capture(s, CaptureRelaxed, func() error { return e.Record(s) })
	if err != nil {
		t.Fatal(err)
	}
	defer cg.Close()
	if _, err := e.Query(); !errors.Is(err, ErrCapturing) {
		t.Fatalf("Query of an event recorded in a capture: %v, want ErrCapturing", err)
	}
	gate <- struct{}{}
	if err := errors.Join(x.Launch(s), e.Synchronize()); err != nil {
		t.Errorf("Synchronize after a launch recorded it: %v", err)
	}
}

// checkBuiltMemory builds a graph that allocates an array, sets it, adds
// 2x to it with a kernel, copies it out and frees it: each launch gives
// the same result; SetMemset and SetKernelArgs change the nodes that use
// it in an instantiation.
func checkBuiltMemory(t *testing.T) {
	s := standInStream(t)
	k := standInAxpy(t)
	x, y := builtArray(t, builtXs), builtArray(t, make([]float32, 4))
	g := newBuiltGraph(t)
	alloc, a, err := AddAlloc[float32](g, nil, 4)
	if err != nil {
		t.Fatalf("AddAlloc: %v", err)
	}
	set, err := AddMemset(g, []GraphNode{alloc}, a, float32(1))
	if err != nil {
		t.Fatalf("AddMemset of an allocation node's array: %v", err)
	}
	kn, err := g.AddKernel([]GraphNode{set}, k, builtCfg, float32(2), x, a, int32(4))
	if err != nil {
		t.Fatalf("AddKernel with an allocation node's array: %v", err)
	}
	cp, err := AddCopy(g, []GraphNode{kn}, y, a)
	if err != nil {
		t.Fatalf("AddCopy from an allocation node's array: %v", err)
	}
	if _, err := AddFree(g, []GraphNode{cp}, a); err != nil {
		t.Fatalf("AddFree: %v", err)
	}
	xg := builtInstantiate(t, g)
	for i := range 3 {
		if got := launchBuilt(t, xg, s, y); !slices.Equal(got, axpyWant(1, 2, 4)) {
			t.Errorf("launch %d: %v, want %v", i, got, axpyWant(1, 2, 4))
		}
	}
	if err := SetMemset(xg, set, a, float32(5)); err != nil {
		t.Errorf("SetMemset of the array's memset node: %v", err)
	}
	if err := xg.SetKernelArgs(kn, k, builtCfg, float32(3), x, a, int32(4)); err != nil {
		t.Errorf("SetKernelArgs of the array's kernel node: %v", err)
	}
	if got := launchBuilt(t, xg, s, y); !slices.Equal(got, axpyWant(5, 3, 4)) {
		t.Errorf("after the updates: %v, want %v", got, axpyWant(5, 3, 4))
	}
	if dot, err := g.Dot(); err != nil || !strings.Contains(string(dot), "MEM_ALLOC") || !strings.Contains(string(dot), "MEM_FREE") {
		t.Errorf("Dot of allocation and free nodes: %v\n%s", err, dot)
	}
	// A captured launch would be a child graph node, which CUDA refuses
	// such a graph as: refused before CUDA, the capture goes on.
	cg, err := Capture(s, CaptureRelaxed, func() error {
		if err := xg.Launch(s); !errors.Is(err, errCapturedAlloc) {
			t.Errorf("a launch in a capture: %v, want errCapturedAlloc", err)
		}
		return k.Launch(s, builtCfg, float32(1), x, y, int32(4))
	})
	if err != nil {
		t.Fatalf("the capture around the refused launch: %v", err)
	}
	cg.Close()
}

// checkBuiltMemoryRefusals checks that an allocation node's array is
// refused everywhere but in its graph's nodes after the allocation node
// and before the free node, and the other refusals of AddAlloc and
// AddFree.
func checkBuiltMemoryRefusals(t *testing.T) {
	s := standInStream(t)
	k := standInAxpy(t)
	x, y := builtArray(t, builtXs), builtArray(t, make([]float32, 4))
	g, other := newBuiltGraph(t), newBuiltGraph(t)
	before, err := g.AddEmpty()
	if err != nil {
		t.Fatal(err)
	}
	alloc, a, err := AddAlloc[float32](g, []GraphNode{before}, 4)
	if err != nil {
		t.Fatal(err)
	}
	bAlloc, b, err := AddAlloc[float32](g, nil, 4) // never used
	if err != nil {
		t.Fatal(err)
	}
	aside, err := g.AddEmpty(before) // not after the allocation node
	if err != nil {
		t.Fatal(err)
	}
	user, err := AddMemset(g, []GraphNode{alloc}, a, float32(1))
	if err != nil {
		t.Fatal(err)
	}
	yset, err := AddMemset(g, []GraphNode{alloc}, y, float32(0))
	if err != nil {
		t.Fatal(err)
	}
	// The kernel's arguments take the fast path, a shape of three
	// arrays and two numbers, which must refuse a too.
	if err := errors.Join(k.Launch(s, builtCfg, float32(1), x, y, int32(4)), s.Synchronize()); err != nil {
		t.Fatal(err)
	}
	cond, err := g.NewConditional(1, true)
	if err != nil {
		t.Fatal(err)
	}
	_, body, err := g.AddIf(nil, cond)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]float32, 4)
	for _, r := range []struct {
		name      string
		err, want error
	}{
		{"ToHost", second(a.ToHost()), errGraphMemory},
		{"CopyFromHost", a.CopyFromHost(got), errGraphMemory},
		{"CopyToHostAsync", a.CopyToHostAsync(s, got), errGraphMemory},
		{"CopyFrom into another array", y.CopyFrom(a), errGraphMemory},
		{"Kernel.Launch, with no shape yet", standInAxpy(t).Launch(s, builtCfg, float32(1), x, a, int32(4)), errGraphMemory},
		{"Kernel.Launch, the shape's fast path", k.Launch(s, builtCfg, float32(1), x, a, int32(4)), errGraphMemory},
		{"Free", a.Free(), errGraphMemory},
		{"Stream.Borrow, as linalg's calls do", borrowErr(s, a.MemoryPointer()), errGraphMemory},
		{"IPCHandle", second(a.MemoryPointer().IPCHandle()), errGraphMemory},
		{"ToHost of a view", viewToHost(a), errGraphMemory},
		{"a node of another graph", second(other.AddKernel(nil, k, builtCfg, float32(1), x, a, int32(4))), errGraphMemory},
		{"a memset node of another graph", second(AddMemset(other, nil, a, float32(1))), errGraphMemory},
		{"a node of a conditional node's body", second(body.AddKernel(nil, k, builtCfg, float32(1), x, a, int32(4))), errGraphMemory},
		{"a node not after the allocation node", second(g.AddKernel([]GraphNode{aside}, k, builtCfg, float32(1), x, a, int32(4))), ErrInvalid},
		{"a copy node not after the allocation node", second(AddCopy(g, []GraphNode{aside}, y, a)), ErrInvalid},
		{"a node with no dependencies", second(AddMemset(g, nil, a, float32(2))), ErrInvalid},
		{"a free node not after its user", second(AddFree(g, []GraphNode{alloc}, a)), ErrInvalid},
		{"a free node not after the allocation node", second(AddFree(g, []GraphNode{aside}, b)), ErrInvalid},
		{"a free node of another graph", second(AddFree(other, nil, a)), ErrInvalid},
		{"a free node of an array of no allocation node", second(AddFree(g, []GraphNode{user}, x)), ErrInvalid},
		{"Instantiate with an allocation never freed", second(g.Instantiate(nil)), ErrInvalid},
		{"an allocation node of no elements", thirdErr(AddAlloc[float32](g, nil, 0)), ErrInvalid},
		{"an allocation node of -1 elements", thirdErr(AddAlloc[float32](g, nil, -1)), ErrInvalid},
		{"an allocation node in a conditional node's body", thirdErr(AddAlloc[float32](body, nil, 4)), ErrInvalid},
	} {
		if !errors.Is(r.err, r.want) {
			t.Errorf("%s: %v, want %v", r.name, r.err, r.want)
		}
	}
	// A capture of nothing after aside and the allocation node makes no
	// node: aside stays not after it.
	sinks, err := g.Capture(s, CaptureRelaxed, []GraphNode{alloc, aside}, func() error { return nil })
	if err != nil {
		t.Fatalf("Graph.Capture of nothing: %v", err)
	}
	if _, err := AddMemset(g, sinks[len(sinks)-1:], a, float32(1)); !errors.Is(err, ErrInvalid) || len(sinks) != 2 {
		t.Errorf("a memset after the sinks %v of an empty capture after aside: %v, want ErrInvalid", sinks, err)
	}
	free, err := AddFree(g, []GraphNode{user}, a)
	if err != nil {
		t.Fatalf("AddFree after the user: %v", err)
	}
	for _, r := range []struct {
		name string
		err  error
	}{
		{"a node after the free node", second(AddMemset(g, []GraphNode{free}, a, float32(1)))},
		{"a second free node", second(AddFree(g, []GraphNode{free}, a))},
		{"Instantiate with b never freed", second(g.Instantiate(nil))},
	} {
		if !errors.Is(r.err, ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", r.name, r.err)
		}
	}
	if _, err := AddFree(g, []GraphNode{bAlloc}, b); err != nil {
		t.Fatalf("AddFree of b, after its allocation node: %v", err)
	}
	if _, err := other.AddGraph(nil, g); !errors.Is(err, ErrInvalid) {
		t.Errorf("AddGraph of a graph with allocation nodes: %v, want ErrInvalid", err)
	}
	x1 := builtInstantiate(t, g)
	if err := errors.Join(x1.Launch(s), s.Synchronize()); err != nil {
		t.Errorf("a launch once every allocation is freed: %v", err)
	}
	if err := SetMemset(x1, yset, a, float32(1)); !errors.Is(err, ErrInvalid) {
		t.Errorf("SetMemset with the array of a node that did not use it: %v, want ErrInvalid", err)
	}
	if err := SetMemset(x1, user, a, float32(3)); err != nil {
		t.Errorf("SetMemset of the node that uses the array: %v", err)
	}
	if err := x1.Update(g); !errors.Is(err, ErrInvalid) {
		t.Errorf("Update of an instantiation with allocation nodes: %v, want ErrInvalid", err)
	}
	plain := newBuiltGraph(t)
	if _, err := plain.AddEmpty(); err != nil {
		t.Fatal(err)
	}
	if err := builtInstantiate(t, plain).Update(g); !errors.Is(err, ErrInvalid) {
		t.Errorf("Update to a graph with allocation nodes: %v, want ErrInvalid", err)
	}
	closed := newBuiltGraph(t)
	if err := closed.Close(); err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct {
		name      string
		err, want error
	}{
		{"a closed graph", thirdErr(AddAlloc[float32](closed, nil, 4)), ErrClosed},
		{"a nil graph", thirdErr(AddAlloc[float32](nil, nil, 4)), ErrNil},
		{"a nil array", second(AddFree[float32](g, nil, nil)), ErrNil},
		{"elements that hold pointers", thirdErr(AddAlloc[*int](g, nil, 4)), ErrInvalid},
	} {
		if !errors.Is(r.err, r.want) {
			t.Errorf("%s: %v, want %v", r.name, r.err, r.want)
		}
	}
}

// viewToHost returns the error of ToHost of a view of a's elements 1 to
// 2.
func viewToHost(a *Array[float32]) error {
	v, err := a.Slice(1, 3)
	if err != nil {
		return err
	}
	_, err = v.ToHost()
	return err
}

// borrowErr returns the error of s.Borrow of p; a Borrow that works is
// returned.
func borrowErr(s *Stream, p MemoryPointer) error {
	b, err := s.Borrow(0, p)
	if err == nil {
		b.Return()
	}
	return err
}

// checkBuiltCondTurns launches graphs with conditional nodes on two
// non-blocking streams by turns, with no wait between: two built graphs,
// one that has the first as a child, and one captured from a launch of the
// second. Each launch must come after the last (the stand-in refuses one
// that may run with another with CUDA_ERROR_LAUNCH_FAILED, as such graphs
// failed on driver 580), and each adds what its if node's body says.
func checkBuiltCondTurns(t *testing.T) {
	k := standInAxpy(t)
	x, y := builtArray(t, builtXs), builtArray(t, make([]float32, 4))
	var ss [3]*Stream
	for i := range ss {
		s, err := NewStream(0, &StreamOptions{NonBlocking: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		ss[i] = s
	}
	// ifAxpy returns a graph whose if node adds a*x to y.
	ifAxpy := func(a float32) *Graph {
		g := newBuiltGraph(t)
		c, err := g.NewConditional(1, true)
		if err != nil {
			t.Fatal(err)
		}
		_, body, err := g.AddIf(nil, c)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := body.AddKernel(nil, k, builtCfg, a, x, y, int32(4)); err != nil {
			t.Fatal(err)
		}
		return g
	}
	one, two := ifAxpy(1), ifAxpy(2)
	parent := newBuiltGraph(t)
	if _, err := parent.AddGraph(nil, one); err != nil {
		t.Fatal(err)
	}
	xTwo := builtInstantiate(t, two)
	captured, err := Capture(ss[2], CaptureRelaxed, func() error { return xTwo.Launch(ss[2]) })
	if err != nil {
		t.Fatalf("a capture of a launch: %v", err)
	}
	t.Cleanup(func() { captured.Close() })
	execs := []struct {
		name string
		x    *GraphExec
		a    float32
	}{
		{"an if node", builtInstantiate(t, one), 1},
		{"another", xTwo, 2},
		{"a child graph with an if node", builtInstantiate(t, parent), 1},
		{"a captured launch of a graph with an if node", builtInstantiate(t, captured), 2},
	}
	var sum float32
	for i := range 12 {
		e, s := execs[i%len(execs)], ss[i%2]
		if err := e.x.Launch(s); err != nil {
			t.Fatalf("launch %d, of %s on stream %d: %v", i, e.name, i%2, err)
		}
		sum += e.a
	}
	for _, s := range ss[:2] {
		if err := s.Synchronize(); err != nil {
			t.Fatal(err)
		}
	}
	if got := builtHost(t, y); !slices.Equal(got, axpyWant(0, sum, 4)) {
		t.Errorf("after the launches: %v, want %v", got, axpyWant(0, sum, 4))
	}
}

// builtCfg is the configuration of the kernel nodes: 4 threads, one for
// each element of the arrays.
var builtCfg = LaunchConfig{Grid: Dim3{X: 1}, Block: Dim3{X: 4}}

// builtXs are the elements of x, the arrays the kernel nodes read.
var builtXs = []float32{1, 2, 3, 4}

// builtArray returns an array of device 0 holding v, freed when t ends.
func builtArray(t *testing.T, v []float32) *Array[float32] {
	t.Helper()
	a, err := ArrayFrom(Device(0), v)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Free() })
	return a
}

// newBuiltGraph returns a new graph of device 0, closed when t ends.
func newBuiltGraph(t *testing.T) *Graph {
	t.Helper()
	g, err := NewGraph(0)
	if err != nil {
		t.Fatalf("NewGraph: %v", err)
	}
	t.Cleanup(func() { g.Close() })
	return g
}

// A builtChain is a graph built node by node: set sets y to 1 (a memset
// node), first adds 2x to y, second 3x after it (axpy kernel nodes), join
// comes after both kernels (an empty node). Each launch leaves y = 1 + 5x.
type builtChain struct {
	g                        *Graph
	k                        *Kernel
	x, y                     *Array[float32]
	set, first, second, join GraphNode
}

func newBuiltChain(t *testing.T) *builtChain {
	t.Helper()
	c := &builtChain{g: newBuiltGraph(t), k: standInAxpy(t), x: builtArray(t, builtXs), y: builtArray(t, make([]float32, 4))}
	var err error
	if c.set, err = AddMemset(c.g, nil, c.y, float32(1)); err != nil {
		t.Fatalf("AddMemset: %v", err)
	}
	if c.first, err = c.g.AddKernel([]GraphNode{c.set}, c.k, builtCfg, float32(2), c.x, c.y, int32(4)); err != nil {
		t.Fatalf("AddKernel: %v", err)
	}
	if c.second, err = c.g.AddKernel([]GraphNode{c.first}, c.k, builtCfg, float32(3), c.x, c.y, int32(4)); err != nil {
		t.Fatalf("AddKernel: %v", err)
	}
	if c.join, err = c.g.AddEmpty(c.first, c.second); err != nil {
		t.Fatalf("AddEmpty: %v", err)
	}
	return c
}

// axpyWant returns y0 + a*x for each x of builtXs, below n of them, and
// y0 for the others.
func axpyWant(y0, a float32, n int) []float32 {
	want := make([]float32, len(builtXs))
	for i, x := range builtXs {
		want[i] = y0
		if i < n {
			want[i] += a * x
		}
	}
	return want
}

// builtInstantiate instantiates g, closing the instantiation when t ends.
func builtInstantiate(t *testing.T, g *Graph) *GraphExec {
	t.Helper()
	x, err := g.Instantiate(nil)
	if err != nil {
		t.Fatalf("Instantiate: %v", err)
	}
	t.Cleanup(func() { x.Close() })
	return x
}

// launchBuilt launches x once on s and returns what y holds after.
func launchBuilt(t *testing.T, x *GraphExec, s *Stream, y *Array[float32]) []float32 {
	t.Helper()
	if err := x.Launch(s); err != nil {
		t.Fatalf("Launch: %v", err)
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	return builtHost(t, y)
}

func builtHost(t *testing.T, y *Array[float32]) []float32 {
	t.Helper()
	got, err := y.ToHost()
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// checkBuiltChain builds a chain of a memset and two kernels: nothing runs
// while it is built and instantiated; each launch runs the nodes, in the
// order of their dependencies, once; so does a launch of a graph that
// captured a launch of it. A graph of the same nodes added the other way
// round, the memset last, leaves what the memset sets.
func checkBuiltChain(t *testing.T) {
	s := standInStream(t)
	c := newBuiltChain(t)
	x := builtInstantiate(t, c.g)
	if got := builtHost(t, c.y); !slices.Equal(got, make([]float32, 4)) {
		t.Errorf("y after the graph was built and instantiated: %v, want it untouched", got)
	}
	want := axpyWant(1, 5, 4)
	for i := range 2 {
		if err := c.y.CopyFromHost([]float32{-1, -1, -1, -1}); err != nil {
			t.Fatal(err)
		}
		if got := launchBuilt(t, x, s, c.y); !slices.Equal(got, want) {
			t.Errorf("launch %d of set y 1, y += 2x, y += 3x: %v, want %v", i+1, got, want)
		}
	}

	// A capture of the launch takes the nodes' work, which the captured
	// graph's launches do.
	if err := c.y.CopyFromHost(make([]float32, 4)); err != nil {
		t.Fatal(err)
	}
	cg, err := Capture(s, CaptureRelaxed, func() error { return x.Launch(s) })
	if err != nil {
		t.Fatal(err)
	}
	defer cg.Close()
	if got := builtHost(t, c.y); !slices.Equal(got, make([]float32, 4)) {
		t.Errorf("y after a capture of the launch: %v, want it untouched", got)
	}
	if got := launchBuilt(t, builtInstantiate(t, cg), s, c.y); !slices.Equal(got, want) {
		t.Errorf("launch of a graph that captured the launch: %v, want %v", got, want)
	}

	// A copy node after the chain: z gets y.
	z := builtArray(t, make([]float32, 4))
	if _, err := AddCopy(c.g, []GraphNode{c.join}, z, c.y); err != nil {
		t.Fatalf("AddCopy: %v", err)
	}
	if got := launchBuilt(t, builtInstantiate(t, c.g), s, z); !slices.Equal(got, want) {
		t.Errorf("a copy of y after the chain: %v, want %v", got, want)
	}

	// The memset after the kernels: its value is what is left.
	g := newBuiltGraph(t)
	k1, err := g.AddKernel(nil, c.k, builtCfg, float32(2), c.x, c.y, int32(4))
	if err != nil {
		t.Fatal(err)
	}
	k2, err := g.AddKernel([]GraphNode{k1}, c.k, builtCfg, float32(3), c.x, c.y, int32(4))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := AddMemset(g, []GraphNode{k1, k2}, c.y, float32(7)); err != nil {
		t.Fatal(err)
	}
	if got := launchBuilt(t, builtInstantiate(t, g), s, c.y); !slices.Equal(got, axpyWant(7, 0, 0)) {
		t.Errorf("kernels, then a memset to 7: %v, want all 7", got)
	}
}

// checkBuiltSetArgs changes the arguments and configuration of a kernel
// node in an instantiation: its launches run the new ones, the graph and
// its other instantiations the old ones. Bad arguments, and nodes that are
// not kernel nodes of the graph, are refused, and change nothing.
func checkBuiltSetArgs(t *testing.T) {
	s := standInStream(t)
	c := newBuiltChain(t)
	x, other := builtInstantiate(t, c.g), builtInstantiate(t, c.g)
	if err := x.SetKernelArgs(c.second, c.k, builtCfg, float32(10), c.x, c.y, int32(4)); err != nil {
		t.Fatalf("SetKernelArgs: %v", err)
	}
	want := axpyWant(1, 12, 4)
	if got := launchBuilt(t, x, s, c.y); !slices.Equal(got, want) {
		t.Errorf("after SetKernelArgs(y += 10x): %v, want %v", got, want)
	}
	if got := launchBuilt(t, other, s, c.y); !slices.Equal(got, axpyWant(1, 5, 4)) {
		t.Errorf("another instantiation after SetKernelArgs: %v, want %v", got, axpyWant(1, 5, 4))
	}
	if got := launchBuilt(t, builtInstantiate(t, c.g), s, c.y); !slices.Equal(got, axpyWant(1, 5, 4)) {
		t.Errorf("a new instantiation of the graph after SetKernelArgs: %v, want %v", got, axpyWant(1, 5, 4))
	}

	// A new configuration: two threads, over the first two elements.
	two := LaunchConfig{Grid: Dim3{X: 1}, Block: Dim3{X: 2}}
	if err := x.SetKernelArgs(c.second, c.k, two, float32(10), c.x, c.y, int32(4)); err != nil {
		t.Fatalf("SetKernelArgs: %v", err)
	}
	want = axpyWant(1, 2, 4)
	for i := range 2 {
		want[i] += 10 * builtXs[i]
	}
	if got := launchBuilt(t, x, s, c.y); !slices.Equal(got, want) {
		t.Errorf("after SetKernelArgs with 2 threads: %v, want %v", got, want)
	}

	other2 := newBuiltGraph(t)
	elsewhere, err := other2.AddKernel(nil, c.k, builtCfg, float32(1), c.x, c.y, int32(4))
	if err != nil {
		t.Fatal(err)
	}
	ten := []any{float32(10), c.x, c.y, int32(4)} // y += 10x
	big := LaunchConfig{Grid: Dim3{X: 1}, Block: Dim3{X: 2000}}
	for _, r := range []struct {
		name string
		err  error
		want error
	}{
		{"an argument short", x.SetKernelArgs(c.second, c.k, builtCfg, ten[:3]...), ErrArgument},
		{"an int for a float", x.SetKernelArgs(c.second, c.k, builtCfg, int64(10), c.x, c.y, int32(4)), ErrArgument},
		{"a configuration of 2000 threads a block", x.SetKernelArgs(c.second, c.k, big, ten...), ErrInvalid},
		{"the zero GraphNode", x.SetKernelArgs(GraphNode{}, c.k, builtCfg, ten...), ErrInvalid},
		{"a nil Kernel", x.SetKernelArgs(c.second, nil, builtCfg, ten...), ErrNil},
		// CUDA's refusals: a node of another graph, one that is no kernel node.
		{"a node of another graph", x.SetKernelArgs(elsewhere, c.k, builtCfg, ten...), cudadrv.ERROR_INVALID_VALUE},
		{"a memset node", x.SetKernelArgs(c.set, c.k, builtCfg, ten...), cudadrv.ERROR_INVALID_VALUE},
		{"a nil GraphExec", (*GraphExec)(nil).SetKernelArgs(c.second, c.k, builtCfg, ten...), ErrNil},
		{"the zero GraphExec", new(GraphExec).SetKernelArgs(c.second, c.k, builtCfg, ten...), ErrNil},
	} {
		if !errors.Is(r.err, r.want) {
			t.Errorf("SetKernelArgs with %s: %v, want %v", r.name, r.err, r.want)
		}
	}
	if got := launchBuilt(t, x, s, c.y); !slices.Equal(got, want) {
		t.Errorf("after the refused SetKernelArgs: %v, want %v, as before them", got, want)
	}
	// The node's graph closed: CUDA finds the node through it.
	if err := c.g.Close(); err != nil {
		t.Fatal(err)
	}
	if err := x.SetKernelArgs(c.second, c.k, builtCfg, float32(10), c.x, c.y, int32(4)); !errors.Is(err, ErrClosed) {
		t.Errorf("SetKernelArgs of a node of a closed graph: %v, want ErrClosed", err)
	}
	if got := launchBuilt(t, x, s, c.y); !slices.Equal(got, want) {
		t.Errorf("after the graph's Close: %v, want %v", got, want)
	}
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	if err := x.SetKernelArgs(c.second, c.k, builtCfg, float32(10), c.x, c.y, int32(4)); !errors.Is(err, ErrClosed) {
		t.Errorf("SetKernelArgs after Close: %v, want ErrClosed", err)
	}
}

// checkBuiltChild adds a graph to another twice, as child graph nodes:
// the other runs both copies, as the child was when added, whatever is
// added to the child later, and after the child is closed.
func checkBuiltChild(t *testing.T) {
	s := standInStream(t)
	k := standInAxpy(t)
	x, y := builtArray(t, builtXs), builtArray(t, make([]float32, 4))
	child := newBuiltGraph(t)
	if _, err := child.AddKernel(nil, k, builtCfg, float32(2), x, y, int32(4)); err != nil {
		t.Fatal(err)
	}
	g := newBuiltGraph(t)
	set, err := AddMemset(g, nil, y, float32(1))
	if err != nil {
		t.Fatal(err)
	}
	once, err := g.AddGraph([]GraphNode{set}, child)
	if err != nil {
		t.Fatalf("AddGraph: %v", err)
	}
	if _, err := g.AddGraph([]GraphNode{once}, child); err != nil {
		t.Fatalf("AddGraph: %v", err)
	}
	// Added to the child later: not in g's copies.
	if _, err := child.AddKernel(nil, k, builtCfg, float32(100), x, y, int32(4)); err != nil {
		t.Fatal(err)
	}
	want := axpyWant(1, 4, 4)
	if got := launchBuilt(t, builtInstantiate(t, g), s, y); !slices.Equal(got, want) {
		t.Errorf("set y 1, then two copies of y += 2x: %v, want %v", got, want)
	}
	// The child itself runs both its nodes, on what g left.
	w := slices.Clone(want)
	addAxpy(w, 102)
	if got := launchBuilt(t, builtInstantiate(t, child), s, y); !slices.Equal(got, w) {
		t.Errorf("the child itself, y += 2x, y += 100x: %v, want %v", got, w)
	}
	if err := child.Close(); err != nil {
		t.Fatal(err)
	}
	if got := launchBuilt(t, builtInstantiate(t, g), s, y); !slices.Equal(got, want) {
		t.Errorf("after the child's Close: %v, want %v", got, want)
	}
}

// addAxpy adds a*x to w, for each x of builtXs.
func addAxpy(w []float32, a float32) {
	for i, x := range builtXs {
		w[i] += a * x
	}
}

// dotLine is the lines of the DOT the stand-in writes: a node with its
// label, an edge, a cluster of a body and its label, its end.
var (
	dotNode    = regexp.MustCompile(`^\s*"([^"]+)" \[[^]]*label="((?:[^"\\]|\\.)*)"\];$`)
	dotEdge    = regexp.MustCompile(`^\s*"([^"]+)" -> "([^"]+)";$`)
	dotCluster = regexp.MustCompile(`^\s*subgraph "cluster_[^"]*" \{$`)
	dotLabel   = regexp.MustCompile(`^\s*label="[^"]*";$`)
)

// parseDot checks that dot is a digraph of the lines the stand-in writes,
// whose edges join nodes it declares, and returns its nodes' labels, by
// name, and its edges, "from -> to"; with Graphviz installed, dot checks it
// too.
func parseDot(t *testing.T, dot []byte) (map[string]string, []string) {
	t.Helper()
	if path, err := exec.LookPath("dot"); err == nil {
		cmd := exec.Command(path, "-Tcanon")
		cmd.Stdin = strings.NewReader(string(dot))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("dot -Tcanon: %v\n%s", err, out)
		}
	}
	lines := strings.Split(strings.TrimSuffix(string(dot), "\n"), "\n")
	if len(lines) < 2 || !strings.HasPrefix(lines[0], "digraph ") || !strings.HasSuffix(lines[0], " {") ||
		lines[len(lines)-1] != "}" {
		t.Fatalf("DOT not one digraph:\n%s", dot)
	}
	nodes := map[string]string{}
	var edges []string
	depth := 1
	for _, l := range lines[1 : len(lines)-1] {
		switch {
		case dotNode.MatchString(l):
			m := dotNode.FindStringSubmatch(l)
			nodes[m[1]] = m[2]
		case dotEdge.MatchString(l):
			m := dotEdge.FindStringSubmatch(l)
			edges = append(edges, m[1]+" -> "+m[2])
		case dotCluster.MatchString(l):
			depth++
		case dotLabel.MatchString(l) && depth > 1:
		case strings.TrimSpace(l) == "}" && depth > 1:
			depth--
		default:
			t.Fatalf("DOT line %q is none the stand-in writes:\n%s", l, dot)
		}
	}
	if depth != 1 {
		t.Fatalf("DOT with a cluster not closed:\n%s", dot)
	}
	for _, e := range edges {
		from, to, _ := strings.Cut(e, " -> ")
		if nodes[from] == "" || nodes[to] == "" {
			t.Errorf("edge %s joins a node the DOT does not declare", e)
		}
	}
	return nodes, edges
}

// checkBuiltDot writes the chain in DOT: its nodes, named, each with its
// kind (and a kernel's name), and an edge for each dependency.
func checkBuiltDot(t *testing.T) {
	c := newBuiltChain(t)
	dot, err := c.g.Dot()
	if err != nil {
		t.Fatalf("Dot: %v", err)
	}
	nodes, edges := parseDot(t, dot)
	for name, kind := range map[string]string{"n0": "MEMSET", "n1": `KERNEL\naxpy`, "n2": `KERNEL\naxpy`, "n3": "EMPTY"} {
		if !strings.Contains(nodes[name], kind) {
			t.Errorf("node %s: label %q, want one saying %s", name, nodes[name], kind)
		}
	}
	if len(nodes) != 4 {
		t.Errorf("DOT of 4 nodes declares %d: %v", len(nodes), nodes)
	}
	slices.Sort(edges)
	if want := []string{"n0 -> n1", "n1 -> n2", "n1 -> n3", "n2 -> n3"}; !slices.Equal(edges, want) {
		t.Errorf("edges %q, want %q", edges, want)
	}

	// A captured graph is drawn too: its one memset, after nothing.
	s := standInStream(t)
	cg, err := Capture(s, CaptureRelaxed, func() error { return c.y.FillAsync(s, 2) })
	if err != nil {
		t.Fatal(err)
	}
	defer cg.Close()
	if dot, err := cg.Dot(); err != nil {
		t.Errorf("Dot of a captured graph: %v", err)
	} else if nodes, edges := parseDot(t, dot); len(nodes) != 1 || !strings.Contains(nodes["n0"], "MEMSET") || len(edges) != 0 {
		t.Errorf("Dot of a graph that captured a memset: nodes %q, edges %q", nodes, edges)
	}
	if err := c.g.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.g.Dot(); !errors.Is(err, ErrClosed) {
		t.Errorf("Dot after Close: %v, want ErrClosed", err)
	}
	if _, err := (*Graph)(nil).Dot(); !errors.Is(err, ErrNil) {
		t.Errorf("Dot of a nil Graph: %v, want ErrNil", err)
	}
}

// checkBuiltConditional adds if, if/else, while and switch nodes whose
// conditions are their handles' defaults, assigned at each launch (no
// kernel of the stand-in's sets one): each runs the body its condition
// picks; what the stand-in cannot run (a while that starts true, a
// condition with no default) it refuses at instantiation. A body is built
// as a graph is, but is closed, instantiated and updated with its graph.
func checkBuiltConditional(t *testing.T) {
	s := standInStream(t)
	k := standInAxpy(t)
	x, y := builtArray(t, builtXs), builtArray(t, make([]float32, 4))
	v, err := DriverVersion()
	if err != nil {
		t.Fatal(err)
	}
	// build makes a graph that sets y to 1, then runs a conditional node of
	// a handle of value c: add adds it, and a kernel y += (i+1)x to each
	// body i.
	build := func(c uint32, reset bool, add func(g *Graph, deps []GraphNode, c Conditional) ([]*Graph, error)) (*Graph, error) {
		g, err := NewGraph(0)
		if err != nil {
			t.Fatal(err)
		}
		cond, err := g.NewConditional(c, reset)
		if err != nil {
			t.Fatalf("NewConditional: %v", err)
		}
		set, err := AddMemset(g, nil, y, float32(1))
		if err != nil {
			t.Fatal(err)
		}
		bodies, err := add(g, []GraphNode{set}, cond)
		if err != nil {
			g.Close()
			return nil, err
		}
		for i, b := range bodies {
			if _, err := b.AddKernel(nil, k, builtCfg, float32(i+1), x, y, int32(4)); err != nil {
				t.Fatalf("AddKernel to body %d: %v", i, err)
			}
		}
		return g, nil
	}
	addIf := func(g *Graph, deps []GraphNode, c Conditional) ([]*Graph, error) {
		_, b, err := g.AddIf(deps, c)
		return []*Graph{b}, err
	}
	addIfElse := func(g *Graph, deps []GraphNode, c Conditional) ([]*Graph, error) {
		_, then, els, err := g.AddIfElse(deps, c)
		return []*Graph{then, els}, err
	}
	addWhile := func(g *Graph, deps []GraphNode, c Conditional) ([]*Graph, error) {
		_, b, err := g.AddWhile(deps, c)
		return []*Graph{b}, err
	}
	addSwitch := func(g *Graph, deps []GraphNode, c Conditional) ([]*Graph, error) {
		_, bs, err := g.AddSwitch(deps, c, 3)
		return bs, err
	}
	for _, tc := range []struct {
		what  string
		c     uint32
		add   func(*Graph, []GraphNode, Conditional) ([]*Graph, error)
		need  int
		body  int // the body that runs, from 0; -1: none
		cases []int
	}{
		{"if, true", 1, addIf, 12030, 0, nil},
		{"if, false", 0, addIf, 12030, -1, nil},
		{"while, false", 0, addWhile, 12030, -1, nil},
		{"if/else, true", 7, addIfElse, 12080, 0, nil},
		{"if/else, false", 0, addIfElse, 12080, 1, nil},
		{"switch, 1 of 3", 1, addSwitch, 12080, 1, nil},
		{"switch, 3 of 3", 3, addSwitch, 12080, -1, nil},
	} {
		g, err := build(tc.c, true, tc.add)
		if v < tc.need {
			var dv *DriverVersionError
			if !errors.As(err, &dv) {
				t.Errorf("%s on driver %d: %v, want a *DriverVersionError", tc.what, v, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.what, err)
			continue
		}
		want := axpyWant(1, float32(tc.body+1), 4)
		if tc.body < 0 {
			want = axpyWant(1, 0, 0)
		}
		xg := builtInstantiate(t, g)
		for range 2 {
			if got := launchBuilt(t, xg, s, y); !slices.Equal(got, want) {
				t.Errorf("%s: %v, want %v", tc.what, got, want)
			}
		}
		g.Close()
	}

	// What the stand-in cannot run: a while whose condition starts true,
	// which no kernel of its sets false, and a condition with no default,
	// whose value at a launch the stand-in does not know.
	for _, tc := range []struct {
		what  string
		c     uint32
		reset bool
		add   func(*Graph, []GraphNode, Conditional) ([]*Graph, error)
	}{
		{"while, true", 1, true, addWhile},
		{"if, no default", 1, false, addIf},
	} {
		g, err := build(tc.c, tc.reset, tc.add)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := g.Instantiate(nil); !errors.Is(err, cudadrv.ERROR_NOT_SUPPORTED) {
			t.Errorf("Instantiate of %s on the stand-in: %v, want CUDA_ERROR_NOT_SUPPORTED", tc.what, err)
		}
		g.Close()
	}

	// A body: nodes of its own, a conditional node in it of a handle of
	// its own, drawn in its graph's DOT; closed, instantiated and updated
	// with its graph, refused alone.
	g := newBuiltGraph(t)
	c, err := g.NewConditional(1, true)
	if err != nil {
		t.Fatal(err)
	}
	set, err := AddMemset(g, nil, y, float32(1))
	if err != nil {
		t.Fatal(err)
	}
	ifNode, body, err := g.AddIf([]GraphNode{set}, c)
	if err != nil {
		t.Fatal(err)
	}
	first, err := body.AddKernel(nil, k, builtCfg, float32(2), x, y, int32(4))
	if err != nil {
		t.Fatal(err)
	}
	inner, err := body.NewConditional(1, true)
	if err != nil {
		t.Fatal(err)
	}
	_, innerBody, err := body.AddIf([]GraphNode{first}, inner)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := innerBody.AddKernel(nil, k, builtCfg, float32(3), x, y, int32(4)); err != nil {
		t.Fatal(err)
	}
	if _, err := g.AddEmpty(ifNode); err != nil {
		t.Fatal(err)
	}
	if got := launchBuilt(t, builtInstantiate(t, g), s, y); !slices.Equal(got, axpyWant(1, 5, 4)) {
		t.Errorf("if (y += 2x, if (y += 3x)): %v, want %v", got, axpyWant(1, 5, 4))
	}
	dot, err := g.Dot()
	if err != nil {
		t.Fatalf("Dot: %v", err)
	}
	nodes, edges := parseDot(t, dot)
	if !strings.Contains(nodes["n1"], "CONDITIONAL") || !strings.Contains(nodes["n1.0.0"], `KERNEL\naxpy`) ||
		!strings.Contains(nodes["n1.0.1"], "CONDITIONAL") || !strings.Contains(nodes["n1.0.1.0.0"], `KERNEL\naxpy`) ||
		!slices.Contains(edges, "n1.0.0 -> n1.0.1") || len(nodes) != 6 {
		t.Errorf("Dot of a graph with nested if nodes: nodes %q, edges %q", nodes, edges)
	}
	if bodyDot, err := body.Dot(); err != nil || !strings.Contains(string(bodyDot), `KERNEL\naxpy`) {
		t.Errorf("Dot of a body: %v\n%s", err, bodyDot)
	}
	for _, r := range []struct {
		name string
		err  error
		want error
	}{
		{"Close of a body", body.Close(), ErrInvalid},
		{"Instantiate of a body", second(body.Instantiate(nil)), ErrInvalid},
		{"Update to a body", builtInstantiate(t, g).Update(body), ErrInvalid},
		{"a body's node as a dependency in its graph", second(g.AddEmpty(first)), ErrInvalid},
		{"a graph's node as a dependency in a body", second(body.AddEmpty(set)), ErrInvalid},
		{"the body's own graph as a child", second(body.AddGraph(nil, g)), ErrInvalid},
		{"the zero Conditional", thirdErr(g.AddWhile(nil, 0)), ErrInvalid},
		// CUDA's refusal: a handle of another graph.
		{"a handle of another graph", thirdErr(newBuiltGraph(t).AddWhile(nil, c)), cudadrv.ERROR_INVALID_VALUE},
		{"NewConditional on a nil Graph", second((*Graph)(nil).NewConditional(1, true)), ErrNil},
		{"AddIf on a nil Graph", thirdErr((*Graph)(nil).AddIf(nil, c)), ErrNil},
	} {
		if !errors.Is(r.err, r.want) {
			t.Errorf("%s: %v, want %v", r.name, r.err, r.want)
		}
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct {
		name string
		err  error
	}{
		{"AddEmpty to a body of a closed graph", second(body.AddEmpty())},
		{"AddKernel to a body of a closed graph", second(body.AddKernel(nil, k, builtCfg, float32(2), x, y, int32(4)))},
		{"NewConditional on a body of a closed graph", second(body.NewConditional(0, true))},
		{"Dot of a body of a closed graph", second(body.Dot())},
	} {
		if !errors.Is(r.err, ErrClosed) {
			t.Errorf("%s: %v, want ErrClosed", r.name, r.err)
		}
	}
}

// checkBuiltRefusals makes the calls the package refuses: nodes of other
// graphs as dependencies, bad kernel arguments, closed graphs, nil and
// zero receivers and arguments.
func checkBuiltRefusals(t *testing.T) {
	c := newBuiltChain(t)
	other := newBuiltGraph(t)
	closed, err := NewGraph(0)
	if err != nil {
		t.Fatal(err)
	}
	if err := closed.Close(); err != nil {
		t.Fatal(err)
	}
	g, k, x, y := c.g, c.k, c.x, c.y
	one := []any{float32(1), x, y, int32(4)} // y += x
	coop := LaunchConfig{Grid: Dim3{X: 1}, Block: Dim3{X: 4}, Cooperative: true}
	big := LaunchConfig{Grid: Dim3{X: 1}, Block: Dim3{X: 2000}}
	for _, r := range []struct {
		name string
		err  error
		want error
	}{
		{"a dependency of another graph", second(other.AddEmpty(c.first)), ErrInvalid},
		{"another graph's node, of a kernel node", second(other.AddKernel([]GraphNode{c.first}, k, builtCfg, one...)), ErrInvalid},
		{"another graph's node, of a memset node", second(AddMemset(other, []GraphNode{c.set}, y, float32(1))), ErrInvalid},
		{"another graph's node, of a child node", second(other.AddGraph([]GraphNode{c.set}, newBuiltGraph(t))), ErrInvalid},
		{"the zero GraphNode", second(g.AddEmpty(GraphNode{})), ErrInvalid},
		{"the zero GraphNode after a node", second(g.AddEmpty(c.set, GraphNode{})), ErrInvalid},
		{"arguments short", second(g.AddKernel(nil, k, builtCfg, one[:3]...)), ErrArgument},
		{"an argument too many", second(g.AddKernel(nil, k, builtCfg, append(one, int32(4))...)), ErrArgument},
		{"a slice for an array", second(g.AddKernel(nil, k, builtCfg, float32(1), builtXs, y, int32(4))), ErrArgument},
		{"a freed array", second(g.AddKernel(nil, k, builtCfg, float32(1), freedArray(t), y, int32(4))), ErrArgument},
		{"a cooperative launch", second(g.AddKernel(nil, k, coop, one...)), ErrInvalid},
		{"a block of 2000 threads", second(g.AddKernel(nil, k, big, one...)), ErrInvalid},
		{"a memset of differing bytes in 8", second(AddMemset(g, nil, float64Array(t), 1.5)), ErrInvalid},
		{"a memset of a freed array", second(AddMemset(g, nil, freedArray(t), 1)), ErrFreed},
		{"a graph in itself", second(g.AddGraph(nil, g)), ErrInvalid},
		{"a copy of arrays of different lengths", second(AddCopy(g, nil, y, builtArray(t, make([]float32, 3)))), ErrInvalid},
		{"a copy of a freed array", second(AddCopy(g, nil, y, freedArray(t))), ErrFreed},
		{"a copy to a nil Array", second(AddCopy(g, nil, nil, y)), ErrNil},
		{"AddCopy to a nil Graph", second(AddCopy(nil, nil, y, x)), ErrNil},
		{"AddCopy to a closed graph", second(AddCopy(closed, nil, y, x)), ErrClosed},
		// CUDA's refusal: a node named twice.
		{"a dependency twice", second(g.AddEmpty(c.set, c.set)), ErrInvalid}, // refused before CUDA, which documents no duplicates

		{"AddEmpty to a closed graph", second(closed.AddEmpty()), ErrClosed},
		{"AddKernel to a closed graph", second(closed.AddKernel(nil, k, builtCfg, one...)), ErrClosed},
		{"AddMemset to a closed graph", second(AddMemset(closed, nil, y, 1)), ErrClosed},
		{"AddGraph to a closed graph", second(closed.AddGraph(nil, g)), ErrClosed},
		{"AddGraph of a closed graph", second(g.AddGraph(nil, closed)), ErrClosed},
		{"NewConditional on a closed graph", second(closed.NewConditional(1, true)), ErrClosed},
		{"Instantiate of a closed graph", second(closed.Instantiate(nil)), ErrClosed},
		{"Dot of a closed graph", second(closed.Dot()), ErrClosed},
		{"a second Close", closed.Close(), ErrClosed},

		{"AddEmpty to a nil Graph", second((*Graph)(nil).AddEmpty()), ErrNil},
		{"AddEmpty to the zero Graph", second(new(Graph).AddEmpty()), ErrNil},
		{"AddKernel to a nil Graph", second((*Graph)(nil).AddKernel(nil, k, builtCfg, one...)), ErrNil},
		{"AddKernel of a nil Kernel", second(g.AddKernel(nil, nil, builtCfg, one...)), ErrNil},
		{"AddKernel of the zero Kernel", second(g.AddKernel(nil, new(Kernel), builtCfg, one...)), ErrNil},
		{"AddMemset to a nil Graph", second(AddMemset((*Graph)(nil), nil, y, 1)), ErrNil},
		{"AddMemset of a nil Array", second(AddMemset(g, nil, (*Array[float32])(nil), 1)), ErrNil},
		{"AddGraph to a nil Graph", second((*Graph)(nil).AddGraph(nil, g)), ErrNil},
		{"AddGraph of a nil Graph", second(g.AddGraph(nil, nil)), ErrNil},
		{"AddGraph of the zero Graph", second(g.AddGraph(nil, new(Graph))), ErrNil},
		{"NewConditional on the zero Graph", second(new(Graph).NewConditional(1, true)), ErrNil},
		{"AddWhile on the zero Graph", thirdErr(new(Graph).AddWhile(nil, 1)), ErrNil},
		{"AddIfElse on a nil Graph", fourthErr((*Graph)(nil).AddIfElse(nil, 1)), ErrNil},
		{"AddSwitch on a nil Graph", thirdErr((*Graph)(nil).AddSwitch(nil, 1, 2)), ErrNil},
		{"Dot of the zero Graph", second(new(Graph).Dot()), ErrNil},
	} {
		if !errors.Is(r.err, r.want) {
			t.Errorf("%s: %v, want %v", r.name, r.err, r.want)
		}
	}
	// The graph refused them all: it runs its four nodes.
	s := standInStream(t)
	if got := launchBuilt(t, builtInstantiate(t, g), s, y); !slices.Equal(got, axpyWant(1, 5, 4)) {
		t.Errorf("the chain after the refusals: %v, want %v", got, axpyWant(1, 5, 4))
	}
	if dot, err := g.Dot(); err != nil || strings.Count(string(dot), "label=") != 4 {
		t.Errorf("Dot of the chain after the refusals: %v\n%s\nwant 4 nodes", err, dot)
	}
}

// freedArray returns an array of device 0, freed.
func freedArray(t *testing.T) *Array[float32] {
	t.Helper()
	a := builtArray(t, builtXs)
	if err := a.Free(); err != nil {
		t.Fatal(err)
	}
	return a
}

// float64Array returns an array of 4 float64s of device 0, freed when t
// ends.
func float64Array(t *testing.T) *Array[float64] {
	t.Helper()
	a, err := AllocArray[float64](Device(0), 4)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Free() })
	return a
}

// thirdErr and fourthErr return the error of a call of three and four
// results.
func thirdErr[A, B any](_ A, _ B, err error) error          { return err }
func fourthErr[A, B, C any](_ A, _ B, _ C, err error) error { return err }

// checkBuiltStandInRefusals makes, through the shim, the calls that the
// package's checks keep from the driver: the stand-in refuses them as
// CUDA does, with CUDA_ERROR_INVALID_VALUE, and adds no node.
func checkBuiltStandInRefusals(t *testing.T) {
	d := Device(0)
	ctx, err := d.context()
	if err != nil {
		t.Fatal(err)
	}
	g, other := newBuiltGraph(t), newBuiltGraph(t)
	node, err := g.AddEmpty()
	if err != nil {
		t.Fatal(err)
	}
	foreign, err := other.AddEmpty()
	if err != nil {
		t.Fatal(err)
	}
	y := builtArray(t, make([]float32, 4))
	host := make([]float32, 4)
	h := uintptr(g.h)
	var n uintptr
	for _, c := range []struct {
		name string
		r    int32
	}{
		{"a dependency of another graph", driver.GraphAddEmpty(ctx, &n, h, &foreign.h, 1)},
		{"a dependency twice", driver.GraphAddEmpty(ctx, &n, h, &[]uintptr{node.h, node.h}[0], 2)},
		{"a dependency that is no node", driver.GraphAddEmpty(ctx, &n, h, &[]uintptr{h}[0], 1)},
		{"a node of no graph", driver.GraphAddEmpty(ctx, &n, uintptr(unsafe.Pointer(&host[0])), nil, 0)},
		{"a memset of pageable memory", driver.GraphAddMemset(ctx, &n, h, nil, 0, uintptr(unsafe.Pointer(&host[0])), 0, 1, 4, 4, 1)},
		{"a memset past its memory's end", driver.GraphAddMemset(ctx, &n, h, nil, 0, uintptr(y.Ptr()), 0, 1, 4, 5, 1)},
		{"a memset of 3-byte elements", driver.GraphAddMemset(ctx, &n, h, nil, 0, uintptr(y.Ptr()), 0, 1, 3, 4, 1)},
		{"a memset misaligned", driver.GraphAddMemset(ctx, &n, h, nil, 0, uintptr(y.Ptr())+1, 0, 1, 4, 2, 1)},
		{"a child of no graph", driver.GraphAddChild(ctx, &n, h, nil, 0, uintptr(unsafe.Pointer(&host[0])))},
		{"a copy past its memory's end", driver.GraphAddCopy(ctx, &n, h, nil, 0, uintptr(y.Ptr()), uintptr(y.Ptr()), 17)},
	} {
		if err := check(c.name, c.r); !errors.Is(err, cudadrv.ERROR_INVALID_VALUE) {
			t.Errorf("%s: %v, want CUDA_ERROR_INVALID_VALUE", c.name, err)
		}
	}
	// What it does not model: a copy node of pageable memory (as it
	// captures none).
	if err := check("copy node of pageable memory", driver.GraphAddCopy(ctx, &n, h, nil, 0, uintptr(y.Ptr()),
		uintptr(unsafe.Pointer(&host[0])), 16)); !errors.Is(err, cudadrv.ERROR_NOT_SUPPORTED) {
		t.Errorf("a copy node of pageable memory: %v, want CUDA_ERROR_NOT_SUPPORTED", err)
	}
	if dot, err := g.Dot(); err != nil || strings.Count(string(dot), "label=") != 1 {
		t.Errorf("Dot after the refused calls: %v\n%s\nwant the one node", err, dot)
	}
	// A memset node of memory freed after it was added: the launch fails,
	// doing nothing, as a captured graph's does.
	var raw unsafe.Pointer
	if err := check("cuMemAlloc", driver.Malloc(ctx, &raw, 16)); err != nil {
		t.Fatal(err)
	}
	if err := check("cuGraphAddMemsetNode", driver.GraphAddMemset(ctx, &n, h, nil, 0, uintptr(raw), 0, 1, 4, 4, 1)); err != nil {
		t.Fatal(err)
	}
	if err := check("cuGraphAddMemsetNode", driver.GraphAddMemset(ctx, &n, h, nil, 0, uintptr(y.Ptr()), 0, 7, 1, 16, 1)); err != nil {
		t.Fatal(err)
	}
	x := builtInstantiate(t, g)
	if err := check("cuMemFree", driver.Free(ctx, raw)); err != nil {
		t.Fatal(err)
	}
	if err := x.Launch(nil); !errors.Is(err, cudadrv.ERROR_ILLEGAL_ADDRESS) {
		t.Errorf("launch of a memset node whose memory was freed behind the package's back: %v, want CUDA_ERROR_ILLEGAL_ADDRESS", err)
	}
	if got := builtHost(t, y); !slices.Equal(got, make([]float32, 4)) {
		t.Errorf("the refused launch wrote %v", got)
	}
}

// standInAllocated reports whether the stand-in has p allocated.
func standInAllocated(t *testing.T, p unsafe.Pointer) bool {
	t.Helper()
	var dev, typ, managed int32
	if err := check("cuPointerGetAttributes", driver.PointerDevice(p, &dev, &typ, &managed)); err != nil {
		t.Fatal(err)
	}
	return typ != 0
}

// libraryLoaded reports whether the stand-in has m's library loaded.
func libraryLoaded(t *testing.T, m *Module) bool {
	t.Helper()
	ctx, err := Device(0).context()
	if err != nil {
		t.Fatal(err)
	}
	var k uintptr
	name := []byte("axpy\x00")
	return driver.LibraryGetKernel(ctx, &k, m.lib, &name[0]) == 0
}

// checkBuiltHolds frees the memory, and closes the module, that nodes of a
// built graph use: a memset node's array, a kernel node's arguments and
// module, a child graph's arrays, the arrays of an instantiation's new
// kernel arguments. Each stays allocated (the stand-in's allocation
// table says so, and launches that use it work) until the last graph and
// instantiation that use it are closed, and is given back then.
func checkBuiltHolds(t *testing.T) {
	s := standInStream(t)
	alloc := func() (*Array[float32], unsafe.Pointer) {
		a, err := ArrayFrom(Device(0), builtXs)
		if err != nil {
			t.Fatal(err)
		}
		return a, a.Ptr()
	}
	// given checks that the memory at ps is given back, where back is
	// set, or still allocated, once the package has freed what was let go
	// of (freeLost, which its next allocation would call).
	given := func(what string, back bool, ps ...unsafe.Pointer) {
		t.Helper()
		freeLost()
		for i, p := range ps {
			if a := standInAllocated(t, p); a == back {
				t.Errorf("%s: memory %d allocated %v, want %v", what, i, a, !back)
			}
		}
	}

	// A memset node.
	{
		a, p := alloc()
		g := newBuiltGraph(t)
		if _, err := AddMemset(g, nil, a, float32(3)); err != nil {
			t.Fatal(err)
		}
		if err := a.Free(); err != nil {
			t.Fatalf("Free of memory a built graph's memset node uses: %v", err)
		}
		given("a memset node's array, freed", false, p)
		x, err := g.Instantiate(nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := g.Close(); err != nil {
			t.Fatal(err)
		}
		given("a memset node's array, freed, its graph closed", false, p)
		if err := errors.Join(x.Launch(s), s.Synchronize()); err != nil {
			t.Errorf("launch of a memset node whose array was freed, its graph closed: %v", err)
		}
		if err := x.Close(); err != nil {
			t.Fatal(err)
		}
		given("a memset node's array, freed, its graph and instantiation closed", true, p)
	}

	// A kernel node: its arrays and its module.
	{
		mod, err := LoadModule([]byte("stub image"))
		if err != nil {
			t.Fatal(err)
		}
		k, err := mod.Kernel("axpy")
		if err != nil {
			t.Fatal(err)
		}
		a, pa := alloc()
		b, pb := alloc()
		g := newBuiltGraph(t)
		if _, err := g.AddKernel(nil, k, builtCfg, float32(1), a, b, int32(4)); err != nil {
			t.Fatal(err)
		}
		x := builtInstantiate(t, g)
		if err := errors.Join(a.Free(), b.Free(), mod.Close()); err != nil {
			t.Fatalf("Free and Close of what a built graph's kernel node uses: %v", err)
		}
		given("a kernel node's arrays, freed", false, pa, pb)
		if !libraryLoaded(t, mod) {
			t.Errorf("the module of a built graph's kernel node was unloaded at its Close")
		}
		if err := errors.Join(x.Launch(s), s.Synchronize()); err != nil {
			t.Errorf("launch of a kernel node whose arrays were freed and module closed: %v", err)
		}
		if err := g.Close(); err != nil {
			t.Fatal(err)
		}
		given("a kernel node's arrays, freed, its graph closed", false, pa, pb)
		if err := x.Close(); err != nil {
			t.Fatal(err)
		}
		given("a kernel node's arrays, freed, its graph and instantiation closed", true, pa, pb)
		if libraryLoaded(t, mod) {
			t.Errorf("the module of a kernel node is loaded after its graph and instantiation were closed")
		}
	}

	// A copy node: both its arrays.
	{
		a, pa := alloc()
		b, pb := alloc()
		g := newBuiltGraph(t)
		if _, err := AddCopy(g, nil, a, b); err != nil {
			t.Fatal(err)
		}
		x := builtInstantiate(t, g)
		if err := errors.Join(a.Free(), b.Free(), g.Close()); err != nil {
			t.Fatal(err)
		}
		given("a copy node's arrays, freed, its graph closed", false, pa, pb)
		if err := errors.Join(x.Launch(s), s.Synchronize()); err != nil {
			t.Errorf("launch of a copy node whose arrays were freed: %v", err)
		}
		if err := x.Close(); err != nil {
			t.Fatal(err)
		}
		given("a copy node's arrays, freed, its graph and instantiation closed", true, pa, pb)
	}

	// A child graph node: the child's arrays, held by the graph it was
	// added to after the child is closed.
	{
		k := standInAxpy(t)
		a, pa := alloc()
		b, pb := alloc()
		child, g := newBuiltGraph(t), newBuiltGraph(t)
		if _, err := child.AddKernel(nil, k, builtCfg, float32(1), a, b, int32(4)); err != nil {
			t.Fatal(err)
		}
		if _, err := g.AddGraph(nil, child); err != nil {
			t.Fatal(err)
		}
		if err := errors.Join(a.Free(), b.Free(), child.Close()); err != nil {
			t.Fatal(err)
		}
		given("a child graph's arrays, freed, the child closed", false, pa, pb)
		x := builtInstantiate(t, g)
		if err := errors.Join(x.Launch(s), s.Synchronize()); err != nil {
			t.Errorf("launch of a child graph node whose arrays were freed and child closed: %v", err)
		}
		if err := errors.Join(g.Close(), x.Close()); err != nil {
			t.Fatal(err)
		}
		given("a child graph's arrays, freed, the graphs and instantiation closed", true, pa, pb)
	}

	// The arrays of new kernel arguments, held by the instantiation.
	{
		c := newBuiltChain(t)
		x := builtInstantiate(t, c.g)
		a, pa := alloc()
		if err := x.SetKernelArgs(c.second, c.k, builtCfg, float32(10), a, c.y, int32(4)); err != nil {
			t.Fatal(err)
		}
		if err := errors.Join(a.Free(), c.g.Close()); err != nil {
			t.Fatal(err)
		}
		given("SetKernelArgs's array, freed", false, pa)
		if got := launchBuilt(t, x, s, c.y); !slices.Equal(got, axpyWant(1, 12, 4)) {
			t.Errorf("launch after SetKernelArgs with an array since freed: %v, want %v", got, axpyWant(1, 12, 4))
		}
		if err := x.Close(); err != nil {
			t.Fatal(err)
		}
		given("SetKernelArgs's array, freed, the instantiation closed", true, pa)
	}

	// A body's nodes: held by the graph of the conditional node.
	{
		a, pa := alloc()
		g := newBuiltGraph(t)
		c, err := g.NewConditional(1, true)
		if err != nil {
			t.Fatal(err)
		}
		_, body, err := g.AddIf(nil, c)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := AddMemset(body, nil, a, float32(1)); err != nil {
			t.Fatal(err)
		}
		if err := a.Free(); err != nil {
			t.Fatal(err)
		}
		given("a body's array, freed", false, pa)
		if err := g.Close(); err != nil {
			t.Fatal(err)
		}
		given("a body's array, freed, its graph closed", true, pa)
	}
}

// checkBuiltConcurrent adds nodes to one graph from several goroutines,
// each a chain of its own, and draws it meanwhile: every node is added, once;
// and graphs added to each other at once, and closed meanwhile, neither
// deadlock nor fail but as documented.
func checkBuiltConcurrent(t *testing.T) {
	s := standInStream(t)
	k := standInAxpy(t)
	x, y := builtArray(t, builtXs), builtArray(t, make([]float32, 4))
	g := newBuiltGraph(t)
	const workers, each = 8, 16
	var wg sync.WaitGroup
	errs := make(chan error, workers*each+16)
	for range workers {
		wg.Go(func() {
			var prev []GraphNode
			for range each {
				n, err := g.AddKernel(prev, k, builtCfg, float32(1), x, y, int32(4))
				if err != nil {
					errs <- err
					return
				}
				prev = []GraphNode{n}
			}
		})
	}
	wg.Go(func() {
		for range 8 {
			if _, err := g.Dot(); err != nil {
				errs <- err
			}
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("AddKernel or Dot from several goroutines: %v", err)
	}
	if got := launchBuilt(t, builtInstantiate(t, g), s, y); !slices.Equal(got, axpyWant(0, workers*each, 4)) {
		t.Errorf("%d nodes y += x added from %d goroutines: %v, want %v", workers*each, workers, got, axpyWant(0, workers*each, 4))
	}
	if dot, err := g.Dot(); err != nil || strings.Count(string(dot), "->") != workers*(each-1) {
		t.Errorf("Dot: %v, %d edges, want %d", err, strings.Count(string(dot), "->"), workers*(each-1))
	}

	// g.AddGraph(h) racing h.AddGraph(g), three times each, and Close of
	// g: no deadlock; each adds the other or is refused, closed.
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 1000 {
			a, err := NewGraph(0)
			if err != nil {
				t.Error(err)
				return
			}
			b, err := NewGraph(0)
			if err != nil {
				t.Error(err)
				return
			}
			if err := errors.Join(second(a.AddEmpty()), second(b.AddEmpty())); err != nil {
				t.Error(err)
				return
			}
			start := make(chan struct{})
			add := func(g, h *Graph) {
				<-start
				for range 3 {
					if _, err := g.AddGraph(nil, h); err != nil && !errors.Is(err, ErrClosed) {
						t.Errorf("round %d: AddGraph racing the other way and Close: %v", i, err)
					}
				}
			}
			var wg sync.WaitGroup
			wg.Go(func() { add(a, b) })
			wg.Go(func() { add(b, a) })
			if i%4 == 3 {
				wg.Go(func() { <-start; a.Close() })
			}
			close(start)
			wg.Wait()
			a.Close()
			b.Close()
		}
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("g.AddGraph(h) racing h.AddGraph(g): not done after 30s, deadlocked")
	}
}

// checkCaptureInto captures work between nodes of a graph (Graph.Capture):
// a kernel, a copy and a host function after a memset node, and a kernel
// node added after the nodes the capture returned. Nothing runs while the
// graph is built; each launch runs them all, once, in that order, and the
// DOT draws that chain; so it does for a graph's launch captured. Work
// forked to other streams and joined back ends on each branch: the
// capture returns every branch's last node, more than the 64 the package
// asks for first. A conditional node's body is captured into as a graph
// is, but takes no host function, as in CUDA.
func checkCaptureInto(t *testing.T) {
	s := standInStream(t)
	k := standInAxpy(t)
	x, y, z := builtArray(t, builtXs), builtArray(t, make([]float32, 4)), builtArray(t, make([]float32, 4))
	g := newBuiltGraph(t)
	set, err := AddMemset(g, nil, y, float32(1))
	if err != nil {
		t.Fatal(err)
	}
	var ran atomic.Int32
	sinks, err := g.Capture(s, CaptureRelaxed, []GraphNode{set}, func() error {
		return errors.Join(
			k.Launch(s, builtCfg, float32(2), x, y, int32(4)), // y = 1 + 2x
			z.CopyFromAsync(s, y),                             // z = y
			s.LaunchHostFunc(func() { ran.Add(1) }))
	})
	if err != nil {
		t.Fatalf("Graph.Capture: %v", err)
	}
	if len(sinks) != 1 || sinks[0].g != g {
		t.Fatalf("Graph.Capture of work on one stream returned %v, want its last node, of the graph", sinks)
	}
	if _, err := g.AddKernel(sinks, k, builtCfg, float32(3), x, z, int32(4)); err != nil { // z += 3x
		t.Fatalf("AddKernel after the captured work: %v", err)
	}
	xg := builtInstantiate(t, g)
	if y0, z0 := builtHost(t, y), builtHost(t, z); !slices.Equal(y0, make([]float32, 4)) ||
		!slices.Equal(z0, make([]float32, 4)) || ran.Load() != 0 {
		t.Errorf("after the capture and instantiation: y %v, z %v, the host function ran %d times; want nothing run",
			y0, z0, ran.Load())
	}
	for launch := int32(1); launch <= 2; launch++ {
		if err := errors.Join(y.CopyFromHost([]float32{-1, -1, -1, -1}), z.CopyFromHost([]float32{-1, -1, -1, -1})); err != nil {
			t.Fatal(err)
		}
		if got, want := launchBuilt(t, xg, s, z), axpyWant(1, 5, 4); !slices.Equal(got, want) {
			t.Errorf("launch %d: z %v, want %v (set y 1, y += 2x, z = y captured, then z += 3x)", launch, got, want)
		}
		if got, want := builtHost(t, y), axpyWant(1, 2, 4); !slices.Equal(got, want) {
			t.Errorf("launch %d: y %v, want %v", launch, got, want)
		}
		if got := ran.Load(); got != launch {
			t.Errorf("the captured host function ran %d times after %d launches", got, launch)
		}
	}
	dot, err := g.Dot()
	if err != nil {
		t.Fatalf("Dot: %v", err)
	}
	nodes, edges := parseDot(t, dot)
	for name, kind := range map[string]string{"n0": "MEMSET", "n1": `KERNEL\naxpy`, "n2": "MEMCPY", "n3": "HOST", "n4": `KERNEL\naxpy`} {
		if !strings.Contains(nodes[name], kind) {
			t.Errorf("node %s: label %q, want one saying %s", name, nodes[name], kind)
		}
	}
	slices.Sort(edges)
	if want := []string{"n0 -> n1", "n1 -> n2", "n2 -> n3", "n3 -> n4"}; len(nodes) != 5 || !slices.Equal(edges, want) {
		t.Errorf("DOT of memset, captured kernel, copy and host function, kernel: %d nodes, edges %q, want 5, %q", len(nodes), edges, want)
	}

	// A launch of the graph captured: its nodes, the first after root,
	// the last before what comes after the capture.
	g5 := newBuiltGraph(t)
	first, err := g5.AddEmpty()
	if err != nil {
		t.Fatal(err)
	}
	sinks, err = g5.Capture(s, CaptureRelaxed, []GraphNode{first}, func() error { return xg.Launch(s) })
	if err != nil || len(sinks) != 1 {
		t.Fatalf("Graph.Capture of a graph's launch: %v, %v; want one node", sinks, err)
	}
	if _, err := g5.AddEmpty(sinks...); err != nil {
		t.Fatal(err)
	}
	if dot, err = g5.Dot(); err != nil {
		t.Fatalf("Dot: %v", err)
	}
	nodes, edges = parseDot(t, dot)
	slices.Sort(edges)
	if want := []string{"n0 -> n1", "n1 -> n2", "n2 -> n3", "n3 -> n4", "n4 -> n5", "n5 -> n6"}; len(nodes) != 7 || !slices.Equal(edges, want) {
		t.Errorf("DOT of empty, a launch of 5 nodes captured, empty: %d nodes, edges %q, want 7, %q", len(nodes), edges, want)
	}
	if got, want := launchBuilt(t, builtInstantiate(t, g5), s, z), axpyWant(1, 5, 4); !slices.Equal(got, want) || ran.Load() != 3 {
		t.Errorf("a launch of the graph that captured its launch: z %v, host function run %d times; want %v, 3", got, ran.Load(), want)
	}

	// Forked and joined: after root, y set 2 on s and z set 3 on each of
	// the branches, which s waits for.
	const branches = 70
	side := make([]*Stream, branches)
	for i := range side {
		side[i] = standInStream(t)
	}
	g2 := newBuiltGraph(t)
	root, err := g2.AddEmpty()
	if err != nil {
		t.Fatal(err)
	}
	sinks, err = g2.Capture(s, CaptureRelaxed, []GraphNode{root}, func() error {
		for _, o := range side {
			if err := o.WaitStream(s); err != nil {
				return err
			}
		}
		if err := y.FillAsync(s, 2); err != nil {
			return err
		}
		for _, o := range side {
			if err := z.FillAsync(o, 3); err != nil {
				return err
			}
		}
		for _, o := range side {
			if err := s.WaitStream(o); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Graph.Capture of work forked to %d streams: %v", branches, err)
	}
	if len(sinks) != branches+1 {
		t.Fatalf("Graph.Capture of work forked to %d streams and joined: %d nodes, want %d", branches, len(sinks), branches+1)
	}
	if _, err := g2.AddEmpty(sinks...); err != nil {
		t.Fatalf("AddEmpty after the %d nodes: %v", len(sinks), err)
	}
	if dot, err = g2.Dot(); err != nil {
		t.Fatalf("Dot: %v", err)
	}
	nodes, edges = parseDot(t, dot)
	last := fmt.Sprintf("n%d", len(nodes)-1)
	var from, into int
	for _, e := range edges {
		a, b, _ := strings.Cut(e, " -> ")
		from += b2i(a == "n0")
		into += b2i(b == last)
	}
	if len(nodes) != branches+3 || len(edges) != 2*(branches+1) || from != branches+1 || into != branches+1 {
		t.Errorf("DOT of a fork of %d: %d nodes, %d edges, %d from the root, %d into the join; want %d, %d, %d, %d",
			branches, len(nodes), len(edges), from, into, branches+3, 2*(branches+1), branches+1, branches+1)
	}
	if got := launchBuilt(t, builtInstantiate(t, g2), s, z); !slices.Equal(got, axpyWant(3, 0, 0)) || !slices.Equal(builtHost(t, y), axpyWant(2, 0, 0)) {
		t.Errorf("launch of the fork: z %v, y %v; want all 3, all 2", got, builtHost(t, y))
	}

	// A body: if (true) { y += 2x captured, then y += 3x added }.
	g3 := newBuiltGraph(t)
	c, err := g3.NewConditional(1, true)
	if err != nil {
		t.Fatal(err)
	}
	set3, err := AddMemset(g3, nil, y, float32(1))
	if err != nil {
		t.Fatal(err)
	}
	_, body, err := g3.AddIf([]GraphNode{set3}, c)
	if err != nil {
		t.Fatal(err)
	}
	bs, err := body.Capture(s, CaptureRelaxed, nil, func() error { return k.Launch(s, builtCfg, float32(2), x, y, int32(4)) })
	if err != nil {
		t.Fatalf("Graph.Capture into a body: %v", err)
	}
	if _, err := body.AddKernel(bs, k, builtCfg, float32(3), x, y, int32(4)); err != nil {
		t.Fatalf("AddKernel after the work captured into a body: %v", err)
	}
	if _, err := g3.AddEmpty(bs...); !errors.Is(err, ErrInvalid) {
		t.Errorf("AddEmpty to the graph after nodes captured into its body: %v, want ErrInvalid", err)
	}
	if got, want := launchBuilt(t, builtInstantiate(t, g3), s, y), axpyWant(1, 5, 4); !slices.Equal(got, want) {
		t.Errorf("if (y += 2x captured, y += 3x): %v, want %v", got, want)
	}
	if _, err := body.Capture(s, CaptureRelaxed, nil, func() error { return s.LaunchHostFunc(func() {}) }); !errors.Is(err, cudadrv.ERROR_NOT_SUPPORTED) {
		t.Errorf("a host function captured into a body: %v, want the stand-in's CUDA_ERROR_NOT_SUPPORTED", err)
	}
}

// b2i is 1 for true.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// checkCaptureExclusive calls the graph's other methods while fn runs:
// the Add methods, on the graph and its body, Instantiate, Dot, Update,
// SetKernelArgs of its node, a second capture into it, on fn's goroutine
// and another, all return ErrCapturing and add nothing; once Capture has
// returned they work again. A Close called while fn runs waits until
// Capture has returned, and then closes the graph.
func checkCaptureExclusive(t *testing.T) {
	s, s2 := standInStream(t), standInStream(t)
	k := standInAxpy(t)
	x, y := builtArray(t, builtXs), builtArray(t, make([]float32, 4))
	g, other := newBuiltGraph(t), newBuiltGraph(t)
	set, err := AddMemset(g, nil, y, float32(1))
	if err != nil {
		t.Fatal(err)
	}
	cond, err := g.NewConditional(1, true)
	if err != nil {
		t.Fatal(err)
	}
	_, body, err := g.AddIf([]GraphNode{set}, cond)
	if err != nil {
		t.Fatal(err)
	}
	kn, err := g.AddKernel([]GraphNode{set}, k, builtCfg, float32(1), x, y, int32(4)) // y += x
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.AddEmpty(); err != nil {
		t.Fatal(err)
	}
	xg := builtInstantiate(t, g)
	type call struct {
		name string
		err  error
	}
	var inside []call
	nop := func() error { return nil }
	sinks, err := g.Capture(s, CaptureRelaxed, []GraphNode{set}, func() error {
		inside = []call{
			{"AddEmpty", second(g.AddEmpty(set))},
			{"AddKernel", second(g.AddKernel([]GraphNode{set}, k, builtCfg, float32(1), x, y, int32(4)))},
			{"AddMemset", second(AddMemset(g, nil, y, float32(1)))},
			{"AddCopy", second(AddCopy(g, nil, y, x))},
			{"AddGraph", second(g.AddGraph(nil, other))},
			{"AddGraph of the graph to another", second(other.AddGraph(nil, g))},
			{"NewConditional", second(g.NewConditional(1, true))},
			{"AddIf", thirdErr(g.AddIf(nil, cond))},
			{"AddWhile", thirdErr(g.AddWhile(nil, cond))},
			{"AddEmpty to its body", second(body.AddEmpty())},
			{"Instantiate", second(g.Instantiate(nil))},
			{"Dot", second(g.Dot())},
			{"Dot of its body", second(body.Dot())},
			{"Update of an instantiation to it", xg.Update(g)},
			{"SetKernelArgs of its node", xg.SetKernelArgs(kn, k, builtCfg, float32(2), x, y, int32(4))},
			{"a second Capture into it", second(g.Capture(s2, CaptureRelaxed, nil, nop))},
			{"a Capture into its body", second(body.Capture(s2, CaptureRelaxed, nil, nop))},
		}
		done := make(chan error)
		go func() { done <- second(g.AddEmpty()) }()
		inside = append(inside, call{"AddEmpty on another goroutine", <-done})
		return k.Launch(s, builtCfg, float32(2), x, y, int32(4)) // y += 2x
	})
	if err != nil {
		t.Fatalf("Graph.Capture: %v", err)
	}
	for _, c := range inside {
		if !errors.Is(c.err, ErrCapturing) {
			t.Errorf("%s while fn runs: %v, want ErrCapturing", c.name, c.err)
		}
	}
	// None added a node: the memset, the if, the kernel, the captured
	// kernel; and the graph takes nodes again.
	if _, err := g.AddEmpty(sinks...); err != nil {
		t.Fatalf("AddEmpty after Capture: %v", err)
	}
	if dot, err := g.Dot(); err != nil {
		t.Errorf("Dot after Capture: %v", err)
	} else if nodes, _ := parseDot(t, dot); len(nodes) != 5 {
		t.Errorf("DOT after the refused calls: %d nodes %q, want 5", len(nodes), nodes)
	}
	if got, want := launchBuilt(t, builtInstantiate(t, g), s, y), axpyWant(1, 3, 4); !slices.Equal(got, want) {
		t.Errorf("launch of the graph: %v, want %v", got, want)
	}

	// Close while fn runs: it has begun (the graph's life says it is
	// closing) but not returned when fn goes on and returns, and it
	// returns nil once Capture is over.
	g4, err := NewGraph(0)
	if err != nil {
		t.Fatal(err)
	}
	var fnReturned, early atomic.Bool
	closed := make(chan struct{})
	var closeErr error
	_, err = g4.Capture(s, CaptureRelaxed, nil, func() error {
		go func() {
			closeErr = g4.Close()
			early.Store(!fnReturned.Load())
			close(closed)
		}()
		for !g4.life.Closed() {
			runtime.Gosched()
		}
		err := y.FillAsync(s, 3) // captured into g4, still open
		select {
		case <-closed: // Close did not wait
		case <-time.After(20 * time.Millisecond): // time for a Close that did not wait to return
		}
		fnReturned.Store(true)
		return err
	})
	<-closed
	if err != nil || closeErr != nil || early.Load() {
		t.Errorf("Close while fn runs: Capture returned %v, Close returned %v, before fn returned: %v; want nil, nil, false",
			err, closeErr, early.Load())
	}
	if _, err := g4.AddEmpty(); !errors.Is(err, ErrClosed) {
		t.Errorf("AddEmpty after that Close: %v, want ErrClosed", err)
	}

	// Instantiate of a graph with an allocation not freed yet: while fn
	// runs, ErrCapturing, as the graph's other methods; after, the
	// refusal of the unfreed allocation, ErrInvalid.
	ga := newBuiltGraph(t)
	if _, _, err := AddAlloc[float32](ga, nil, 4); err != nil {
		t.Fatal(err)
	}
	var during error
	if _, err := ga.Capture(s, CaptureRelaxed, nil, func() error {
		during = second(ga.Instantiate(nil))
		return nil
	}); err != nil {
		t.Fatalf("Capture into a graph with an allocation node: %v", err)
	}
	if !errors.Is(during, ErrCapturing) {
		t.Errorf("Instantiate of a graph with an unfreed allocation while fn runs: %v, want ErrCapturing", during)
	}
	if _, err := ga.Instantiate(nil); !errors.Is(err, ErrInvalid) || errors.Is(err, ErrCapturing) {
		t.Errorf("Instantiate of it after: %v, want ErrInvalid", err)
	}
}

// checkCaptureFails makes fn fail and panic: Capture returns fn's error,
// or lets the panic go on, having ended the capture (the stream works
// again); the graph takes nodes, captures and instantiations after.
func checkCaptureFails(t *testing.T) {
	s := standInStream(t)
	y := builtArray(t, make([]float32, 4))
	g := newBuiltGraph(t)
	set, err := AddMemset(g, nil, y, float32(1))
	if err != nil {
		t.Fatal(err)
	}
	boom := errors.New("fn fails")
	sinks, err := g.Capture(s, CaptureRelaxed, []GraphNode{set}, func() error {
		if err := y.FillAsync(s, 2); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) || sinks != nil {
		t.Errorf("Graph.Capture whose fn fails: %v, %v; want fn's error, no nodes", sinks, err)
	}
	if err := s.Synchronize(); err != nil {
		t.Errorf("Synchronize after a Capture whose fn failed: %v, want the capture ended", err)
	}
	n, err := g.AddEmpty(set)
	if err != nil {
		t.Errorf("AddEmpty after a Capture whose fn failed: %v", err)
	}

	var recovered any
	func() {
		defer func() { recovered = recover() }()
		g.Capture(s, CaptureRelaxed, []GraphNode{n}, func() error {
			if err := y.FillAsync(s, 3); err != nil {
				t.Error(err)
			}
			panic("fn panics")
		})
	}()
	if recovered != "fn panics" {
		t.Errorf("Graph.Capture whose fn panics: recovered %v, want fn's panic", recovered)
	}
	if err := s.Synchronize(); err != nil {
		t.Errorf("Synchronize after a Capture whose fn panicked: %v, want the capture ended", err)
	}
	if _, err := g.AddEmpty(n); err != nil {
		t.Errorf("AddEmpty after a Capture whose fn panicked: %v", err)
	}
	if sinks, err := g.Capture(s, CaptureRelaxed, []GraphNode{n}, func() error { return y.FillAsync(s, 4) }); err != nil || len(sinks) != 1 {
		t.Errorf("Graph.Capture after one whose fn panicked: %v, %v; want one node", sinks, err)
	}
	if _, err := g.Instantiate(nil); err != nil {
		t.Errorf("Instantiate after the captures whose fn failed: %v", err)
	}
}

// checkCaptureStreamEnds closes, then ends, the capturing stream from fn:
// the graph stays the program's and whole. Close of the stream leaves the
// capture to Graph.Capture, which gets ErrClosed and keeps the graph and
// what the capture held (it destroyed the graph, and g's Close destroyed it
// again); EndCapture is refused with ErrCapturing (it wrapped g's handle
// in a second Graph, whose Close destroyed g).
func checkCaptureStreamEnds(t *testing.T) {
	y := builtArray(t, make([]float32, 4))
	g := newBuiltGraph(t)
	set, err := AddMemset(g, nil, y, float32(1))
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewStream(0, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = g.Capture(s, CaptureRelaxed, []GraphNode{set}, func() error {
		if err := y.FillAsync(s, 2); err != nil {
			return err
		}
		return s.Close()
	})
	if !errors.Is(err, ErrClosed) {
		t.Errorf("Graph.Capture whose fn closes the stream: %v, want ErrClosed", err)
	}
	if _, err := g.AddEmpty(set); err != nil {
		t.Errorf("AddEmpty after the stream closed in Capture: %v, want the graph whole", err)
	}
	if _, err := g.Dot(); err != nil {
		t.Errorf("Dot after the stream closed in Capture: %v", err)
	}

	s2 := standInStream(t)
	var ended error
	var other *Graph
	if _, err := g.Capture(s2, CaptureRelaxed, []GraphNode{set}, func() error {
		other, ended = s2.EndCapture()
		return y.FillAsync(s2, 3)
	}); err != nil {
		t.Errorf("Graph.Capture whose fn called EndCapture: %v", err)
	}
	if !errors.Is(ended, ErrCapturing) || other != nil {
		t.Errorf("EndCapture of a capture into a graph: %v, %v; want ErrCapturing, no graph", other, ended)
	}
	x, err := g.Instantiate(nil)
	if err != nil {
		t.Fatalf("Instantiate after both: %v", err)
	}
	if err := errors.Join(x.Close(), g.Close()); err != nil {
		t.Errorf("Close of the graph and its instantiation: %v, want the graph destroyed once", err)
	}
}

// standInGiven checks that the memory at ps is given back, where back is
// set, or still allocated, once the package has freed what was let go of
// (freeLost, which its next allocation would call).
func standInGiven(t *testing.T, what string, back bool, ps ...unsafe.Pointer) {
	t.Helper()
	freeLost()
	for i, p := range ps {
		if a := standInAllocated(t, p); a == back {
			t.Errorf("%s: memory %d allocated %v, want %v", what, i, a, !back)
		}
	}
}

// checkCaptureHolds frees the memory, and closes the module, that work
// captured into a graph uses: a fill's array, a kernel's arrays and
// module, a copy's arrays, a pool's block, and a fill's captured before fn
// panicked. Each stays allocated (the stand-in's allocation table, the
// pool's count), and launches that use it work, until the graph and its
// instantiation are closed; then it is given back.
func checkCaptureHolds(t *testing.T) {
	s := standInStream(t)
	alloc := func() (*Array[float32], unsafe.Pointer) {
		a, err := ArrayFrom(Device(0), builtXs)
		if err != nil {
			t.Fatal(err)
		}
		return a, a.Ptr()
	}
	mod, err := LoadModule([]byte("stub image"))
	if err != nil {
		t.Fatal(err)
	}
	k, err := mod.Kernel("axpy")
	if err != nil {
		t.Fatal(err)
	}
	pool, err := NewMemoryPool(Device(0))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	m, err := pool.Alloc(1024)
	if err != nil {
		t.Fatal(err)
	}
	a, pa := alloc()
	b, pb := alloc()
	c, pc := alloc()
	d, pd := alloc()
	e, pe := alloc()
	f, pf := alloc()
	g, err := NewGraph(0)
	if err != nil {
		t.Fatal(err)
	}
	first, err := g.AddEmpty()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Capture(s, CaptureRelaxed, []GraphNode{first}, func() error {
		return errors.Join(a.FillAsync(s, 1), k.Launch(s, builtCfg, float32(1), b, c, int32(4)), e.CopyFromAsync(s, d),
			m.MemsetAsync(s, 0, 1024))
	}); err != nil {
		t.Fatalf("Graph.Capture: %v", err)
	}
	func() {
		defer func() { recover() }()
		g.Capture(s, CaptureRelaxed, nil, func() error {
			if err := f.FillAsync(s, 2); err != nil {
				t.Error(err)
			}
			panic("fn panics")
		})
	}()
	if err := errors.Join(a.Free(), b.Free(), c.Free(), d.Free(), e.Free(), f.Free(), m.Free(), mod.Close()); err != nil {
		t.Fatalf("Free and Close of what captured work uses: %v", err)
	}
	ps := []unsafe.Pointer{pa, pb, pc, pd, pe, pf}
	standInGiven(t, "the captured work's arrays, freed", false, ps...)
	if !libraryLoaded(t, mod) {
		t.Errorf("the module of a captured kernel was unloaded at its Close")
	}
	mp := m.Ptr()
	if used := pool.UsedBytes(); used < 1024 {
		t.Errorf("UsedBytes after Free of a block captured work uses: %d, want it in use", used)
	}
	if next, err := pool.Alloc(1024); err != nil {
		t.Fatal(err)
	} else {
		if next.Ptr() == mp {
			t.Errorf("the pool gave %p, which a graph holds, to another allocation", mp)
		}
		next.Free()
	}
	x, err := g.Instantiate(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	standInGiven(t, "the captured work's arrays, freed, the graph closed", false, ps...)
	if err := errors.Join(x.Launch(s), s.Synchronize()); err != nil {
		t.Errorf("launch of the captured work, its memory freed and graph closed: %v", err)
	}
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	standInGiven(t, "the captured work's arrays, freed, the graph and instantiation closed", true, ps...)
	if libraryLoaded(t, mod) {
		t.Errorf("the module of a captured kernel is loaded after its graph and instantiation were closed")
	}
	// The block is the pool's again: its next allocation takes it back.
	next, err := pool.Alloc(1024)
	if err != nil {
		t.Fatal(err)
	}
	defer next.Free()
	if used := pool.UsedBytes(); used != 1024 {
		t.Errorf("UsedBytes after the graph and instantiation were closed and 1024 bytes allocated: %d, want 1024", used)
	}
}

// checkCaptureRefusals makes the calls Graph.Capture refuses: a stream of
// another device, nil, zero and closed graphs and streams, dependencies of
// another graph, an unknown mode, and the streams CUDA will not capture.
// None runs fn or changes the graph; a capture of nothing returns the
// nodes it was given.
func checkCaptureRefusals(t *testing.T) {
	t.Setenv("STUB_DEVICES", "2") // read by the stand-in at each call; before the package counts the devices
	if n, err := DeviceCount(); n != 2 || err != nil {
		t.Fatalf("DeviceCount = %d, %v; want 2 devices of the stand-in's", n, err)
	}
	s := standInStream(t)
	s1, err := NewStream(1, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s1.Close()
	closedStream, err := NewStream(0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := closedStream.Close(); err != nil {
		t.Fatal(err)
	}
	legacy, err := LegacyDefaultStream(0)
	if err != nil {
		t.Fatal(err)
	}
	capturing := standInStream(t)
	if err := capturing.BeginCapture(CaptureRelaxed); err != nil {
		t.Fatal(err)
	}
	g, other := newBuiltGraph(t), newBuiltGraph(t)
	node, err := g.AddEmpty()
	if err != nil {
		t.Fatal(err)
	}
	foreign, err := other.AddEmpty()
	if err != nil {
		t.Fatal(err)
	}
	closed, err := NewGraph(0)
	if err != nil {
		t.Fatal(err)
	}
	if err := closed.Close(); err != nil {
		t.Fatal(err)
	}
	var ran int
	fn := func() error { ran++; return nil }
	for _, r := range []struct {
		name string
		err  error
		want error
	}{
		{"a stream of another device", second(g.Capture(s1, CaptureRelaxed, nil, fn)), ErrInvalid},
		{"a nil Stream", second(g.Capture(nil, CaptureRelaxed, nil, fn)), ErrNil},
		{"the zero Stream", second(g.Capture(new(Stream), CaptureRelaxed, nil, fn)), ErrNil},
		{"a closed Stream", second(g.Capture(closedStream, CaptureRelaxed, nil, fn)), ErrClosed},
		{"a nil Graph", second((*Graph)(nil).Capture(s, CaptureRelaxed, nil, fn)), ErrNil},
		{"the zero Graph", second(new(Graph).Capture(s, CaptureRelaxed, nil, fn)), ErrNil},
		{"a closed Graph", second(closed.Capture(s, CaptureRelaxed, nil, fn)), ErrClosed},
		{"a dependency of another graph", second(g.Capture(s, CaptureRelaxed, []GraphNode{foreign}, fn)), ErrInvalid},
		{"the zero GraphNode", second(g.Capture(s, CaptureRelaxed, []GraphNode{{}}, fn)), ErrInvalid},
		{"a dependency twice", second(g.Capture(s, CaptureRelaxed, []GraphNode{node, node}, fn)), ErrInvalid},
		{"an unknown mode", second(g.Capture(s, CaptureMode(9), nil, fn)), ErrInvalid},
		// CUDA's refusals.
		{"the legacy default stream", second(g.Capture(legacy, CaptureRelaxed, nil, fn)), cudadrv.ERROR_STREAM_CAPTURE_UNSUPPORTED},
		{"a stream that captures already", second(g.Capture(capturing, CaptureRelaxed, nil, fn)), cudadrv.ERROR_ILLEGAL_STATE},
	} {
		if !errors.Is(r.err, r.want) {
			t.Errorf("Graph.Capture with %s: %v, want %v", r.name, r.err, r.want)
		}
	}
	if ran != 0 {
		t.Errorf("the refused captures ran fn %d times", ran)
	}
	if cg, err := capturing.EndCapture(); err != nil {
		t.Errorf("EndCapture of the capture a Graph.Capture was refused: %v", err)
	} else {
		cg.Close()
	}
	if dot, err := g.Dot(); err != nil || strings.Count(string(dot), "label=") != 1 {
		t.Errorf("Dot after the refusals: %v\n%s\nwant the one node", err, dot)
	}
	// A capture of nothing ends where it began: after the nodes given.
	for _, mode := range []CaptureMode{CaptureRelaxed, CaptureGlobal, CaptureThreadLocal} {
		if sinks, err := g.Capture(s, mode, []GraphNode{node}, fn); err != nil || !slices.Equal(sinks, []GraphNode{node}) {
			t.Errorf("Graph.Capture of nothing in mode %v: %v, %v; want the node given", mode, sinks, err)
		}
	}
}

// checkStandInCaptureInto captures into a graph through the package's
// internals, without Graph.Capture's checks: the stand-in refuses the
// dependencies CUDA refuses; while the capture goes on, it reports the
// nodes the stream's work came to, takes nodes added to the graph, draws
// it, and refuses to instantiate or destroy it or to begin a second
// capture into it; the capture ends with the same graph. A capture into
// a graph that fails leaves the graph, with what it captured.
func checkStandInCaptureInto(t *testing.T) {
	d := Device(0)
	ctx, err := d.context()
	if err != nil {
		t.Fatal(err)
	}
	s, s2 := standInStream(t), standInStream(t)
	y := builtArray(t, make([]float32, 4))
	g, other := newBuiltGraph(t), newBuiltGraph(t)
	node, err := g.AddEmpty()
	if err != nil {
		t.Fatal(err)
	}
	foreign, err := other.AddEmpty()
	if err != nil {
		t.Fatal(err)
	}
	host := make([]float32, 4)
	h := uintptr(g.h)
	for _, c := range []struct {
		name string
		err  error
	}{
		{"a dependency of another graph", s.beginCapture(CaptureRelaxed, h, []uintptr{foreign.h})},
		{"a dependency twice", s.beginCapture(CaptureRelaxed, h, []uintptr{node.h, node.h})},
		{"a dependency that is no node", s.beginCapture(CaptureRelaxed, h, []uintptr{h})},
		{"a graph that is none", s.beginCapture(CaptureRelaxed, uintptr(unsafe.Pointer(&host[0])), nil)},
	} {
		if !errors.Is(c.err, cudadrv.ERROR_INVALID_VALUE) {
			t.Errorf("a capture into a graph with %s: %v, want CUDA_ERROR_INVALID_VALUE", c.name, c.err)
		}
	}
	// sinks asks the stand-in for the nodes s's next work would come after.
	sinks := func() []uintptr {
		t.Helper()
		buf := make([]uintptr, 8)
		var n uintptr
		if err := check("cuStreamGetCaptureInfo", driver.StreamCaptureSinks(ctx, uintptr(s.h), &buf[0], uintptr(len(buf)), &n)); err != nil {
			t.Fatal(err)
		}
		return buf[:n]
	}
	end := func() (uintptr, error) {
		s.joins.Lock()
		defer s.joins.Unlock()
		g, held, err := s.end(uintptr(s.h))
		unholdAll(held)
		return g, err
	}
	if got := sinks(); len(got) != 0 {
		t.Errorf("the nodes of a stream that does not capture: %v, want none", got)
	}
	if err := s.beginCapture(CaptureRelaxed, h, []uintptr{node.h}); err != nil {
		t.Fatalf("a capture into a graph: %v", err)
	}
	if got := sinks(); !slices.Equal(got, []uintptr{node.h}) {
		t.Errorf("the nodes of a capture that captured nothing: %v, want the one it was given, %v", got, node.h)
	}
	if err := y.FillAsync(s, 2); err != nil {
		t.Fatal(err)
	}
	set := sinks()
	if len(set) != 1 || set[0] == node.h {
		t.Fatalf("the nodes of a capture after a memset: %v, want the memset's", set)
	}
	var n, x uintptr
	var result int32
	if err := check("cuGraphAddEmptyNode", driver.GraphAddEmpty(ctx, &n, h, &set[0], 1)); err != nil {
		t.Errorf("a node added to a graph captured into, after its captured node: %v", err)
	}
	if err := check("cuGraphInstantiateWithParams", driver.GraphInstantiate(ctx, &x, h, 0, 0, &result)); !errors.Is(err, cudadrv.ERROR_NOT_SUPPORTED) {
		t.Errorf("instantiation of a graph captured into: %v, want the stand-in's CUDA_ERROR_NOT_SUPPORTED", err)
	}
	if err := check("cuGraphDestroy", driver.GraphDestroy(ctx, h)); !errors.Is(err, cudadrv.ERROR_NOT_SUPPORTED) {
		t.Errorf("destruction of a graph captured into: %v, want the stand-in's CUDA_ERROR_NOT_SUPPORTED", err)
	}
	if err := s2.beginCapture(CaptureRelaxed, h, nil); !errors.Is(err, cudadrv.ERROR_NOT_SUPPORTED) {
		t.Errorf("a second capture into a graph captured into: %v, want the stand-in's CUDA_ERROR_NOT_SUPPORTED", err)
	}
	if _, err := g.Dot(); err != nil {
		t.Errorf("Dot of a graph captured into: %v", err)
	}
	if got, err := end(); err != nil || got != h {
		t.Errorf("the end of a capture into a graph: %#x, %v; want the graph, %#x", got, err, h)
	}
	if got := sinks(); len(got) != 0 {
		t.Errorf("the nodes of a stream whose capture ended: %v, want none", got)
	}
	dot, err := g.Dot()
	if err != nil {
		t.Fatal(err)
	}
	nodes, edges := parseDot(t, dot)
	slices.Sort(edges)
	if want := []string{"n0 -> n1", "n1 -> n2"}; len(nodes) != 3 || !strings.Contains(nodes["n1"], "MEMSET") || !slices.Equal(edges, want) {
		t.Errorf("DOT of empty, captured memset, empty: nodes %q, edges %q, want 3, %q", nodes, edges, want)
	}

	// Invalidated by a wait for an event of no capture: the graph is
	// left, with the memset captured before.
	e, err := NewEvent(d, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if err := e.Record(s2); err != nil {
		t.Fatal(err)
	}
	if err := s.beginCapture(CaptureRelaxed, h, nil); err != nil {
		t.Fatal(err)
	}
	if err := y.FillAsync(s, 3); err != nil {
		t.Fatal(err)
	}
	if err := check("cuStreamWaitEvent", driver.StreamWaitEvent(ctx, uintptr(s.h), uintptr(e.h))); !errors.Is(err, cudadrv.ERROR_STREAM_CAPTURE_ISOLATION) {
		t.Errorf("a wait for an event of no capture: %v, want CUDA_ERROR_STREAM_CAPTURE_ISOLATION", err)
	}
	if got, err := end(); got != 0 || !errors.Is(err, cudadrv.ERROR_STREAM_CAPTURE_INVALIDATED) {
		t.Errorf("the end of an invalidated capture into a graph: %#x, %v; want no graph, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED", got, err)
	}
	if dot, err := g.Dot(); err != nil || strings.Count(string(dot), "MEMSET") != 2 {
		t.Errorf("Dot after an invalidated capture into the graph: %v\n%s\nwant both memsets", err, dot)
	}
	if err := check("cuGraphInstantiateWithParams", driver.GraphInstantiate(ctx, &x, h, 0, 0, &result)); err != nil {
		t.Errorf("instantiation after an invalidated capture into the graph: %v", err)
	} else {
		driver.GraphExecDestroy(ctx, x)
	}
}
