package highlevel

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// graphKernels are the kernels of the graphs built node by node: add adds
// v to n words; spin_add does too, after spinning for cycles clock cycles;
// mul multiplies n words by v; step counts the runs of a while node's
// body and sets its condition to go on below limit; choose sets a
// condition to v.
const graphKernels = `
#include <cuda_device_runtime_api.h>
extern "C" __global__ void add(unsigned *p, unsigned v, int n) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) p[i] += v;
}
extern "C" __global__ void spin_add(unsigned *p, unsigned v, int n, long long cycles) {
	long long start = clock64();
	while (clock64() - start < cycles) {}
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) p[i] += v;
}
extern "C" __global__ void mul(unsigned *p, unsigned v, int n) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) p[i] *= v;
}
extern "C" __global__ void step(unsigned *count, unsigned limit, cudaGraphConditionalHandle h) {
	unsigned c = ++*count;
	cudaGraphSetConditional(h, c < limit);
}
extern "C" __global__ void choose(cudaGraphConditionalHandle h, unsigned v) {
	cudaGraphSetConditional(h, v);
}
`

// graphKernel returns the kernels of graphKernels, by name, on device d.
func graphKernel(t *testing.T, d Device) map[string]*Kernel {
	t.Helper()
	arch, err := d.Arch()
	if err != nil {
		t.Fatal(err)
	}
	// The device runtime's header comes from the toolkit's include
	// directory, which Compile searches.
	c, err := Compile(graphKernels, &CompileOptions{Arch: arch})
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	m, err := LoadModule(c.Image)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	ks := map[string]*Kernel{}
	for _, name := range []string{"add", "spin_add", "mul", "step", "choose"} {
		if ks[name], err = m.Kernel(name); err != nil {
			t.Fatal(err)
		}
	}
	return ks
}

// runGraph instantiates g, launches it times times on s and returns what
// a holds after.
func runGraph[T any](t *testing.T, g *Graph, s *Stream, times int, a *Array[T]) []T {
	t.Helper()
	x, err := g.Instantiate(nil)
	if err != nil {
		t.Fatalf("Instantiate: %v", err)
	}
	defer x.Close()
	for range times {
		if err := x.Launch(s); err != nil {
			t.Fatalf("Launch: %v", err)
		}
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	got, err := a.ToHost()
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func allEqual[T comparable](s []T, v T) bool {
	return slices.IndexFunc(s, func(x T) bool { return x != v }) < 0
}

// TestGPUGraphBuild builds a graph of a memset and two kernels node by
// node, launches it, updates one kernel's arguments in the instantiation,
// and checks the refusals.
func TestGPUGraphBuild(t *testing.T) {
	d := gpu(t)
	ks := graphKernel(t, d)
	s, err := NewStream(d, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const n = 1000
	a, err := AllocArray[uint32](d, n)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Free()
	g, err := NewGraph(d)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	cfg := LaunchConfig{Grid: Dim3{X: (n + 255) / 256}, Block: Dim3{X: 256}}
	zero, err := AddMemset(g, nil, a, 5)
	if err != nil {
		t.Fatal(err)
	}
	one, err := g.AddKernel([]GraphNode{zero}, ks["add"], cfg, a, uint32(1), int32(n))
	if err != nil {
		t.Fatal(err)
	}
	two, err := g.AddKernel([]GraphNode{one}, ks["add"], cfg, a, uint32(2), int32(n))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.AddEmpty(one, two); err != nil {
		t.Fatal(err)
	}
	if got := runGraph(t, g, s, 2, a); !allEqual(got, 8) {
		t.Errorf("memset to 5, add 1, add 2, twice: %v..., want all 8", got[:4])
	}

	x, err := g.Instantiate(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if err := x.SetKernelArgs(two, ks["add"], cfg, a, uint32(20), int32(n)); err != nil {
		t.Fatalf("SetKernelArgs: %v", err)
	}
	if err := errors.Join(x.Launch(s), s.Synchronize()); err != nil {
		t.Fatal(err)
	}
	if got, err := a.ToHost(); err != nil || !allEqual(got, 26) {
		t.Errorf("after SetKernelArgs(add 20): %v, %v..., want all 26", err, got[:4])
	}
	if err := x.SetKernelArgs(two, ks["add"], cfg, a, uint32(20)); !errors.Is(err, ErrArgument) {
		t.Errorf("SetKernelArgs with an argument short: %v, want ErrArgument", err)
	}

	// A copy node: cb = a, then cb += 1 while a stays.
	cb, err := AllocArray[uint32](d, n)
	if err != nil {
		t.Fatal(err)
	}
	defer cb.Free()
	c, err := NewGraph(d)
	if err != nil {
		t.Fatal(err)
	}
	copied, err := AddCopy(c, nil, cb, a)
	if err != nil {
		t.Fatalf("AddCopy: %v", err)
	}
	if _, err := c.AddKernel([]GraphNode{copied}, ks["add"], cfg, cb, uint32(1), int32(n)); err != nil {
		t.Fatal(err)
	}
	if got := runGraph(t, c, s, 1, cb); !allEqual(got, 27) {
		t.Errorf("copy node then add 1: %v..., want all 27", got[:4])
	}
	short, _ := a.Slice(0, n-1)
	if _, err := AddCopy(c, nil, cb, short); !errors.Is(err, ErrInvalid) {
		t.Errorf("AddCopy of arrays of different lengths: %v, want ErrInvalid", err)
	}
	cx, err := c.Instantiate(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cx.Close()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := cx.SetKernelArgs(copied, ks["add"], cfg, cb, uint32(1), int32(n)); !errors.Is(err, ErrClosed) {
		t.Errorf("SetKernelArgs of a node of a closed graph: %v, want ErrClosed", err)
	}

	dot, err := g.Dot()
	if err != nil || !bytes.Contains(dot, []byte("digraph")) || !bytes.Contains(dot, []byte("add")) {
		t.Errorf("Dot: %v, %.200q; want a digraph naming add", err, dot)
	}

	other, err := NewGraph(d)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.AddEmpty(one); !errors.Is(err, ErrInvalid) {
		t.Errorf("a dependency of another graph: %v, want ErrInvalid", err)
	}
	if _, err := g.AddEmpty(GraphNode{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("the zero GraphNode as a dependency: %v, want ErrInvalid", err)
	}
	if _, err := g.AddKernel(nil, ks["add"], cfg, a); !errors.Is(err, ErrArgument) {
		t.Errorf("AddKernel with arguments short: %v, want ErrArgument", err)
	}
	// The child graph: other runs two copies of g in a row.
	c1, err := other.AddGraph(nil, g)
	if err != nil {
		t.Fatalf("AddGraph: %v", err)
	}
	if _, err := other.AddGraph([]GraphNode{c1}, g); err != nil {
		t.Fatal(err)
	}
	if got := runGraph(t, other, s, 1, a); !allEqual(got, 8) {
		t.Errorf("two copies of the graph: %v..., want all 8 (each sets 5, adds 3)", got[:4])
	}
	if err := other.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := other.AddEmpty(); !errors.Is(err, ErrClosed) {
		t.Errorf("AddEmpty on a closed graph: %v, want ErrClosed", err)
	}
	// The graph holds its memory: freed, the array stays allocated for
	// the instantiation's launches.
	b, err := AllocArray[uint32](d, n)
	if err != nil {
		t.Fatal(err)
	}
	h, err := NewGraph(d)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if _, err := h.AddKernel(nil, ks["add"], cfg, b, uint32(1), int32(n)); err != nil {
		t.Fatal(err)
	}
	if err := b.Free(); err != nil {
		t.Fatal(err)
	}
	if b.p.mem.holds.n.Load() < 2 {
		t.Errorf("freed memory a built graph uses: hold count %d, want the graph's", b.p.mem.holds.n.Load())
	}
}

// TestGPUGraphWhile runs a while node whose body counts to a limit its
// kernel tests on the device, and launches it again: the memset and the
// condition's reset start it over.
func TestGPUGraphWhile(t *testing.T) {
	d := gpu(t)
	if v, _ := DriverVersion(); v < 12030 {
		t.Skipf("driver %d has no conditional nodes", v)
	}
	ks := graphKernel(t, d)
	s, err := NewStream(d, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	count, err := AllocArray[uint32](d, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer count.Free()
	g, err := NewGraph(d)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	c, err := g.NewConditional(1, true)
	if err != nil {
		t.Fatal(err)
	}
	zero, err := AddMemset(g, nil, count, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, body, err := g.AddWhile([]GraphNode{zero}, c)
	if err != nil {
		t.Fatalf("AddWhile: %v", err)
	}
	one := LaunchConfig{Grid: Dim3{X: 1}, Block: Dim3{X: 1}}
	if _, err := body.AddKernel(nil, ks["step"], one, count, uint32(100), c); err != nil {
		t.Fatalf("a kernel in the body: %v", err)
	}
	for range 2 {
		if got := runGraph(t, g, s, 1, count); got[0] != 100 {
			t.Errorf("the while node ran its body %d times, want 100", got[0])
		}
	}
	if err := body.Close(); !errors.Is(err, ErrInvalid) {
		t.Errorf("Close of a body: %v, want ErrInvalid", err)
	}
	if _, err := body.Instantiate(nil); !errors.Is(err, ErrInvalid) {
		t.Errorf("Instantiate of a body: %v, want ErrInvalid", err)
	}
	if _, _, err := g.AddWhile(nil, 0); !errors.Is(err, ErrInvalid) {
		t.Errorf("AddWhile of the zero Conditional: %v, want ErrInvalid", err)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := body.AddEmpty(); !errors.Is(err, ErrClosed) {
		t.Errorf("AddEmpty to a body of a closed graph: %v, want ErrClosed", err)
	}
}

// TestGPUGraphEvents checks event nodes on the GPU: a record node's event
// happens after the node's dependency, a kernel that spins for about 20 ms,
// and a wait node in another graph, launched on another stream, holds its
// kernel back until then; the graphs hold their event past its Close.
func TestGPUGraphEvents(t *testing.T) {
	d := gpu(t)
	ks := graphKernel(t, d)
	var streams [2]*Stream
	for i := range streams {
		s, err := NewStream(d, &StreamOptions{NonBlocking: true})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		streams[i] = s
	}
	const n = 1 << 12
	a, err := AllocArray[uint32](d, n)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Free()
	if err := a.CopyFromHost(make([]uint32, n)); err != nil {
		t.Fatal(err)
	}
	e, err := NewEvent(d, &EventOptions{DisableTiming: true})
	if err != nil {
		t.Fatal(err)
	}
	cfg := LaunchConfig{Grid: Dim3{X: n / 256}, Block: Dim3{X: 256}}
	// rec adds 1 after spinning, then records e; wait waits for e, then
	// multiplies by 10.
	rec, wait := newGraph(t, d), newGraph(t, d)
	k, err := rec.AddKernel(nil, ks["spin_add"], cfg, a, uint32(1), int32(n), int64(40_000_000))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rec.AddEventRecord([]GraphNode{k}, e); err != nil {
		t.Fatalf("AddEventRecord: %v", err)
	}
	w, err := wait.AddEventWait(nil, e)
	if err != nil {
		t.Fatalf("AddEventWait: %v", err)
	}
	if _, err := wait.AddKernel([]GraphNode{w}, ks["mul"], cfg, a, uint32(10), int32(n)); err != nil {
		t.Fatal(err)
	}
	xr, xw := instantiate(t, rec), instantiate(t, wait)
	check := func(what string, want uint32) {
		t.Helper()
		got, err := a.ToHost()
		if err != nil {
			t.Fatal(err)
		}
		if !allEqual(got, want) {
			t.Errorf("%s: %d..., want all %d", what, got[0], want)
		}
	}
	if err := xr.Launch(streams[0]); err != nil {
		t.Fatal(err)
	}
	if err := e.Synchronize(); err != nil {
		t.Fatalf("Synchronize of a record node's event: %v", err)
	}
	check("after the record node's event", 1)
	both := func() {
		t.Helper()
		if err := errors.Join(xr.Launch(streams[0]), xw.Launch(streams[1])); err != nil {
			t.Fatal(err)
		}
		if err := errors.Join(streams[1].Synchronize(), streams[0].Synchronize()); err != nil {
			t.Fatal(err)
		}
	}
	both()
	check("a wait node's graph launched beside the record node's", 20)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	both()
	check("the same, the event closed", 210)
}

// TestGPUGraphMemory builds a graph that allocates an array, sets it,
// adds to it with a kernel, copies it out and frees it; each launch gives
// the same result, a SetMemset of the array's node changes it, and the
// array is refused outside the graph.
func TestGPUGraphMemory(t *testing.T) {
	d := gpu(t)
	ks := graphKernel(t, d)
	s, err := NewStream(d, &StreamOptions{NonBlocking: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const n = 1 << 16
	y, err := AllocArray[uint32](d, n)
	if err != nil {
		t.Fatal(err)
	}
	defer y.Free()
	g := newGraph(t, d)
	alloc, a, err := AddAlloc[uint32](g, nil, n)
	if err != nil {
		t.Fatalf("AddAlloc: %v", err)
	}
	set, err := AddMemset(g, []GraphNode{alloc}, a, 3)
	if err != nil {
		t.Fatal(err)
	}
	cfg := LaunchConfig{Grid: Dim3{X: n / 256}, Block: Dim3{X: 256}}
	k, err := g.AddKernel([]GraphNode{set}, ks["add"], cfg, a, uint32(5), int32(n))
	if err != nil {
		t.Fatal(err)
	}
	cp, err := AddCopy(g, []GraphNode{k}, y, a)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := AddFree(g, []GraphNode{cp}, a); err != nil {
		t.Fatalf("AddFree: %v", err)
	}
	x := instantiate(t, g)
	run := func(what string, want uint32) {
		t.Helper()
		if err := y.CopyFromHost(make([]uint32, n)); err != nil {
			t.Fatal(err)
		}
		if err := errors.Join(x.Launch(s), s.Synchronize()); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		got, err := y.ToHost()
		if err != nil {
			t.Fatal(err)
		}
		if !allEqual(got, want) {
			t.Errorf("%s: %d..., want all %d", what, got[0], want)
		}
	}
	for i := range 3 {
		run(fmt.Sprintf("launch %d", i), 8)
	}
	if err := SetMemset(x, set, a, 10); err != nil {
		t.Fatalf("SetMemset of the array's memset node: %v", err)
	}
	run("after SetMemset", 15)
	if _, err := a.ToHost(); !errors.Is(err, errGraphMemory) {
		t.Errorf("ToHost of an allocation node's array: %v, want errGraphMemory", err)
	}
	if err := ks["add"].Launch(s, cfg, a, uint32(1), int32(n)); !errors.Is(err, errGraphMemory) {
		t.Errorf("a launch with an allocation node's array: %v, want errGraphMemory", err)
	}
	// CUDA has one instantiation of such a graph at a time.
	if x2, err := g.Instantiate(nil); err == nil {
		x2.Close()
		t.Errorf("a second instantiation of a graph with allocation nodes: no error")
	}
}

// newGraph returns a new graph of d, closed when t ends.
func newGraph(t *testing.T, d Device) *Graph {
	t.Helper()
	g, err := NewGraph(d)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g
}

// instantiate instantiates g, closing the instantiation when t ends.
func instantiate(t *testing.T, g *Graph) *GraphExec {
	t.Helper()
	x, err := g.Instantiate(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x.Close() })
	return x
}

// TestGPUGraphHostAndUpdates builds a memset, a host node and a copy;
// changes the memset's value and the copy's destination in the
// instantiation; and has a host node panic, which is reported once.
func TestGPUGraphHostAndUpdates(t *testing.T) {
	d := gpu(t)
	s, err := NewStream(d, &StreamOptions{NonBlocking: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const n = 1 << 16
	var arrays [3]*Array[uint32]
	for i := range arrays {
		if arrays[i], err = AllocArray[uint32](d, n); err != nil {
			t.Fatal(err)
		}
		defer arrays[i].Free()
	}
	y, z, z2 := arrays[0], arrays[1], arrays[2]
	g, err := NewGraph(d)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	set, err := AddMemset(g, nil, y, 3)
	if err != nil {
		t.Fatal(err)
	}
	var runs atomic.Int32
	host, err := g.AddHost([]GraphNode{set}, func() { runs.Add(1) })
	if err != nil {
		t.Fatalf("AddHost: %v", err)
	}
	cp, err := AddCopy(g, []GraphNode{host}, z, y)
	if err != nil {
		t.Fatal(err)
	}
	x, err := g.Instantiate(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	// check launches x times times and checks that a holds v everywhere
	// and that the host node ran once a launch.
	check := func(what string, times int, a *Array[uint32], v uint32) {
		t.Helper()
		before := runs.Load()
		for range times {
			if err := x.Launch(s); err != nil {
				t.Fatalf("%s: Launch: %v", what, err)
			}
		}
		if err := s.Synchronize(); err != nil {
			t.Fatal(err)
		}
		got, err := a.ToHost()
		if err != nil {
			t.Fatal(err)
		}
		if !allEqual(got, v) {
			t.Errorf("%s: %v..., want all %d", what, got[:4], v)
		}
		if ran := runs.Load() - before; ran != int32(times) {
			t.Errorf("%s: the host node ran %d times in %d launches", what, ran, times)
		}
	}
	check("memset to 3, copy", 3, z, 3)
	if err := SetMemset(x, set, y, uint32(9)); err != nil {
		t.Fatalf("SetMemset: %v", err)
	}
	check("after SetMemset to 9", 1, z, 9)
	if err := SetCopy(x, cp, z2, y); err != nil {
		t.Fatalf("SetCopy: %v", err)
	}
	check("after SetCopy to another array", 2, z2, 9)
	short, err := AllocArray[uint32](d, n/2)
	if err != nil {
		t.Fatal(err)
	}
	defer short.Free()
	// CUDA may take a shorter 1D memset ("opportunistically", its docs
	// say) or refuse it; taken, it sets short, and y no more.
	if err := SetMemset(x, set, short, uint32(1)); err == nil {
		check("after SetMemset of a shorter array", 1, z2, 9)
		if got, err := short.ToHost(); err != nil || !allEqual(got, 1) {
			t.Errorf("a shorter array after SetMemset to 1: %v..., %v", got[:4], err)
		}
	} else {
		t.Logf("SetMemset of a shorter array: %v", err)
		check("after a refused SetMemset", 1, z2, 9)
	}

	boom, err := NewGraph(d)
	if err != nil {
		t.Fatal(err)
	}
	defer boom.Close()
	if _, err := boom.AddHost(nil, func() { panic("boom") }); err != nil {
		t.Fatal(err)
	}
	xb, err := boom.Instantiate(nil)
	if err != nil {
		t.Fatal(err)
	}
	// The panic goes to the launch's stream, as LaunchHostFunc's does.
	var p *PanicError
	if err := errors.Join(xb.Launch(s), s.Synchronize(), xb.Close()); !errors.As(err, &p) || strings.Count(err.Error(), "boom") != 1 {
		t.Errorf("Launch, Synchronize and Close of a graph whose host node panicked once: %v, want one *PanicError", err)
	}
}

// TestGPUGraphWhileGoroutines launches graphs with while nodes from 8
// goroutines at once, each on a stream of its own, and checks each count:
// such graphs take turns on the device (condTurns). Without the turns,
// driver 580.159.04 on an H200 failed within a few hundred launches, with
// CUDA_ERROR_LAUNCH_FAILED. It runs in a child process: on that driver a
// while node also fails while other processes' work runs on the GPU (see
// docs/graphs.md), and the fault spoils the context for the rest of the
// process.
func TestGPUGraphWhileGoroutines(t *testing.T) {
	d := gpu(t)
	if v, _ := DriverVersion(); v < 12030 {
		t.Skipf("driver %d has no conditional nodes", v)
	}
	if os.Getenv("HL_WHILE_CHILD") != "1" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestGPUGraphWhileGoroutines$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), "HL_WHILE_CHILD=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("child: %v\n%s", err, out)
		}
		return
	}
	ks := graphKernel(t, d)
	const goroutines, launches = 8, 400
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for i := range goroutines {
		wg.Go(func() {
			if err := whileLaunches(d, ks["step"], uint32(1+i*7), launches); err != nil {
				errs <- fmt.Errorf("goroutine %d: %w", i, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// whileLaunches builds a graph whose while node counts to limit with step,
// launches it n times on a stream of its own and checks the count after
// each.
func whileLaunches(d Device, step *Kernel, limit uint32, n int) error {
	s, err := NewStream(d, &StreamOptions{NonBlocking: true})
	if err != nil {
		return err
	}
	defer s.Close()
	count, err := AllocArray[uint32](d, 1)
	if err != nil {
		return err
	}
	defer count.Free()
	g, err := NewGraph(d)
	if err != nil {
		return err
	}
	defer g.Close()
	c, err := g.NewConditional(1, true)
	if err != nil {
		return err
	}
	zero, err := AddMemset(g, nil, count, 0)
	if err != nil {
		return err
	}
	_, body, err := g.AddWhile([]GraphNode{zero}, c)
	if err != nil {
		return err
	}
	if _, err := body.AddKernel(nil, step, LaunchConfig{Grid: Dim3{X: 1}, Block: Dim3{X: 1}}, count, limit, c); err != nil {
		return err
	}
	x, err := g.Instantiate(nil)
	if err != nil {
		return err
	}
	defer x.Close()
	got := make([]uint32, 1)
	for i := range n {
		if err := x.Launch(s); err != nil {
			return fmt.Errorf("launch %d: %w", i, err)
		}
		if err := count.CopyToHostAsync(s, got); err != nil {
			return fmt.Errorf("copy after launch %d: %w", i, err)
		}
		if err := s.Synchronize(); err != nil {
			return fmt.Errorf("launch %d: %w", i, err)
		}
		if got[0] != limit {
			return fmt.Errorf("launch %d counted to %d, want %d", i, got[0], limit)
		}
	}
	return nil
}

// TestGPUGraphIfElseSwitch chooses among bodies with a condition a kernel
// sets: if, if/else and switch.
func TestGPUGraphIfElseSwitch(t *testing.T) {
	d := gpu(t)
	if v, _ := DriverVersion(); v < 12080 {
		t.Skipf("driver %d has no if/else or switch nodes", v)
	}
	ks := graphKernel(t, d)
	s, err := NewStream(d, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	a, err := AllocArray[uint32](d, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Free()
	one := LaunchConfig{Grid: Dim3{X: 1}, Block: Dim3{X: 1}}
	for _, tc := range []struct {
		what   string
		v      uint32
		bodies int
		want   uint32
	}{
		{"if, true", 1, 0, 1}, {"if, false", 0, 0, 0},
		{"if/else, true", 7, -1, 1}, {"if/else, false", 0, -1, 2},
		{"switch 1 of 3", 1, 3, 11}, {"switch 3 of 3", 3, 3, 0},
	} {
		g, err := NewGraph(d)
		if err != nil {
			t.Fatal(err)
		}
		c, err := g.NewConditional(0, true)
		if err != nil {
			t.Fatal(err)
		}
		zero, err := AddMemset(g, nil, a, 0)
		if err != nil {
			t.Fatal(err)
		}
		set, err := g.AddKernel([]GraphNode{zero}, ks["choose"], one, c, tc.v)
		if err != nil {
			t.Fatal(err)
		}
		var bodies []*Graph
		switch {
		case tc.bodies == 0:
			_, body, err1 := g.AddIf([]GraphNode{set}, c)
			bodies, err = []*Graph{body}, err1
		case tc.bodies < 0:
			_, then, els, err1 := g.AddIfElse([]GraphNode{set}, c)
			bodies, err = []*Graph{then, els}, err1
		default:
			_, bodies, err = g.AddSwitch([]GraphNode{set}, c, tc.bodies)
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.what, err)
		}
		for i, b := range bodies {
			v := uint32(i + 1)
			if tc.bodies > 0 {
				v = uint32(10 + i)
			}
			if _, err := b.AddKernel(nil, ks["add"], one, a, v, int32(1)); err != nil {
				t.Fatal(err)
			}
		}
		if got := runGraph(t, g, s, 1, a); got[0] != tc.want {
			t.Errorf("%s: %d, want %d", tc.what, got[0], tc.want)
		}
		g.Close()
	}
}

// TestGPUGraphCapture captures a stream's work into a built graph between
// its nodes: a copy between arrays, a launch and a host function, after a
// memset node and before a kernel node that comes after the captured
// work's last nodes.
func TestGPUGraphCapture(t *testing.T) {
	d := gpu(t)
	if v, _ := DriverVersion(); v < 12030 {
		t.Skipf("driver %d cannot capture into a graph", v)
	}
	ks := graphKernel(t, d)
	s, err := NewStream(d, &StreamOptions{NonBlocking: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const n = 1000
	src, err1 := ArrayFrom(d, make([]uint32, n))
	dst, err2 := AllocArray[uint32](d, n)
	if err := errors.Join(err1, err2); err != nil {
		t.Fatal(err)
	}
	defer src.Free()
	defer dst.Free()
	g, err := NewGraph(d)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	cfg := LaunchConfig{Grid: Dim3{X: (n + 255) / 256}, Block: Dim3{X: 256}}
	set, err := AddMemset(g, nil, src, 1)
	if err != nil {
		t.Fatal(err)
	}
	var ran atomic.Int32
	var inside error
	sinks, err := g.Capture(s, CaptureRelaxed, []GraphNode{set}, func() error {
		_, inside = g.AddEmpty()
		return errors.Join(
			ks["add"].Launch(s, cfg, src, uint32(2), int32(n)), // src = 3
			dst.CopyFromAsync(s, src),                          // dst = 3
			s.LaunchHostFunc(func() { ran.Add(1) }))
	})
	if err != nil {
		t.Fatalf("Capture into the graph: %v", err)
	}
	if !errors.Is(inside, ErrCapturing) {
		t.Errorf("AddEmpty during a capture into the graph: %v, want ErrCapturing", inside)
	}
	if len(sinks) == 0 {
		t.Fatal("the capture ended with no nodes")
	}
	if _, err := g.AddKernel(sinks, ks["add"], cfg, dst, uint32(4), int32(n)); err != nil { // dst = 7
		t.Fatal(err)
	}
	for launch := 1; launch <= 2; launch++ {
		if got := runGraph(t, g, s, 1, dst); !allEqual(got, 7) {
			t.Errorf("launch %d: %v..., want all 7", launch, got[:4])
		}
		if got := ran.Load(); got != int32(launch) {
			t.Errorf("the captured host function ran %d times after %d launches", got, launch)
		}
	}
	if _, err := g.Capture(s, CaptureRelaxed, nil, func() error { return errors.New("fn fails") }); err == nil || !strings.Contains(err.Error(), "fn fails") {
		t.Errorf("Capture whose fn fails: %v", err)
	}
	if _, err := g.AddEmpty(); err != nil {
		t.Errorf("AddEmpty after a failed capture into the graph: %v", err)
	}
}
