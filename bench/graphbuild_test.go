package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/gocuda/cuda/cudadrv"
	"github.com/gocuda/cuda/highlevel"
)

// loopSource is the kernel of the loops that the device ends: each run
// counts itself and says whether to go on, below limit; step sets a while
// node's condition (cudaGraphSetConditional), stepFlag writes a flag for
// the host to read. c/graphbuild.c compiles the same source.
const loopSource = `
#include <cuda_device_runtime_api.h>
extern "C" __global__ void step(unsigned *count, unsigned limit, cudaGraphConditionalHandle h) {
	cudaGraphSetConditional(h, ++*count < limit);
}
extern "C" __global__ void stepFlag(unsigned *count, unsigned limit, unsigned *flag) {
	*flag = ++*count < limit;
}
`

// loopIterations is the runs of the kernel in one loop, one operation of
// the loop benchmarks.
const loopIterations = 1000

// cudaInclude is the CUDA toolkit's include directory, for the device
// runtime's header: $CUDA_HOME/include, else /usr/local/cuda/include, as
// c/graphbuild.c has it.
func cudaInclude() string {
	if h := os.Getenv("CUDA_HOME"); h != "" {
		return filepath.Join(h, "include")
	}
	return "/usr/local/cuda/include"
}

// loopSetup returns loopSource's kernel name on device 0, a stream, and
// the loop's counter, one word of device memory.
func loopSetup(b *testing.B, name string) (*highlevel.Kernel, *highlevel.Stream, *highlevel.Array[uint32]) {
	d := device(b)
	k := kernelWith(b, loopSource, name, &highlevel.CompileOptions{IncludePaths: []string{cudaInclude()}})
	s, err := highlevel.NewStream(d, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	count, err := highlevel.AllocArray[uint32](d, 1)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { count.Free() })
	return k, s, count
}

// checkCount fails b unless the last loop ran its kernel loopIterations
// times.
func checkCount(b *testing.B, count *highlevel.Array[uint32]) {
	b.Helper()
	got, err := count.ToHost()
	if err != nil {
		b.Fatal(err)
	}
	if got[0] != loopIterations {
		b.Fatalf("the loop ran its kernel %d times, want %d", got[0], loopIterations)
	}
}

// BenchmarkWhileNode is a loop of loopIterations runs of a one-thread
// kernel that decides on the device whether to go on: a graph built node by
// node, a memset of the counter and a while node whose body is the kernel,
// which sets the node's condition; one operation is a launch of the graph
// and the wait for it. c/graphbuild.c builds the same graph with the
// driver's calls (cuGraphConditionalHandleCreate, cuGraphAddNode).
func BenchmarkWhileNode(b *testing.B) {
	k, s, count := loopSetup(b, "step")
	g, err := highlevel.NewGraph(device(b))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { g.Close() })
	c, err := g.NewConditional(1, true)
	if err != nil {
		b.Fatal(err)
	}
	zero, err := highlevel.AddMemset(g, nil, count, 0)
	if err != nil {
		b.Fatal(err)
	}
	_, body, err := g.AddWhile([]highlevel.GraphNode{zero}, c)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := body.AddKernel(nil, k, one, count, uint32(loopIterations), c); err != nil {
		b.Fatal(err)
	}
	x, err := g.Instantiate(nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { x.Close() })
	b.ReportAllocs()
	loop(b, s, func() error {
		if err := x.Launch(s); err != nil {
			return err
		}
		return s.Synchronize()
	})
	checkCount(b, count)
}

// hostLoop runs the loop from the host, as a C program without
// conditional nodes would: zero the counter, then launch the kernel with
// the flag argument, queue back (when not nil: the flag's copy to the
// host) and wait, and read *flag, until it says stop.
func hostLoop(k *highlevel.Kernel, s *highlevel.Stream, count *highlevel.Array[uint32], arg any, back func() error, flag *uint32) error {
	if err := count.MemoryPointer().MemsetAsync(s, 0, 4); err != nil {
		return err
	}
	for i := 1; ; i++ {
		if err := k.Launch(s, one, count, uint32(loopIterations), arg); err != nil {
			return err
		}
		if back != nil {
			if err := back(); err != nil {
				return err
			}
		}
		if err := s.Synchronize(); err != nil {
			return err
		}
		if f := atomic.LoadUint32(flag); f == 0 || i >= loopIterations {
			if f != 0 || i != loopIterations {
				return fmt.Errorf("the loop ended after %d runs of its kernel, flag %d; want %d, 0", i, f, loopIterations)
			}
			return nil
		}
	}
}

// pinnedFlag returns a word of pinned host memory, its address and the
// word.
func pinnedFlag(b *testing.B) (unsafe.Pointer, *uint32) {
	p, err := highlevel.AllocPinned(4)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { p.Free() })
	w, err := highlevel.PinnedSlice[uint32](p)
	if err != nil {
		b.Fatal(err)
	}
	return p.Ptr(), &w[0]
}

// BenchmarkWhileHostLoop is BenchmarkWhileNode's loop made by the host:
// loopIterations launches of the kernel, each waited for, its flag in
// pinned host memory that the kernel writes (mapped: where addresses are
// unified, as on every 64-bit platform CUDA 13 supports, the device
// reaches pinned memory at its host address) and the host reads after the
// wait. c/graphbuild.c makes the same calls.
func BenchmarkWhileHostLoop(b *testing.B) {
	k, s, count := loopSetup(b, "stepFlag")
	p, flag := pinnedFlag(b)
	b.ReportAllocs()
	loop(b, s, func() error { return hostLoop(k, s, count, p, nil, flag) })
	checkCount(b, count)
}

// BenchmarkWhileHostLoopCopy is BenchmarkWhileHostLoop with the flag in
// device memory, copied back to pinned memory after each launch
// (cuMemcpyDtoHAsync, queued before the wait).
func BenchmarkWhileHostLoopCopy(b *testing.B) {
	k, s, count := loopSetup(b, "stepFlag")
	dflag, err := highlevel.AllocArray[uint32](device(b), 1)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { dflag.Free() })
	p, flag := pinnedFlag(b)
	back := func() error { return dflag.MemoryPointer().CopyToHostPointerAsync(s, p, 4) }
	b.ReportAllocs()
	loop(b, s, func() error { return hostLoop(k, s, count, dflag, back, flag) })
	checkCount(b, count)
}

// graphNodes is the kernel nodes of BenchmarkGraphBuild100's graph.
const graphNodes = 100

// BenchmarkGraphBuild100 builds a graph of graphNodes launches of the empty
// kernel node by node, a chain, each node after the one before
// (Graph.AddKernel), instantiates it and closes the instantiation and the
// graph: what a program pays for a graph it builds anew, as
// BenchmarkGraph100 launches one. c/graphbuild.c makes the driver's calls:
// cuGraphCreate, cuGraphAddKernelNode, cuGraphInstantiate,
// cuGraphExecDestroy and cuGraphDestroy.
func BenchmarkGraphBuild100(b *testing.B) { benchmarkGraphBuild(b, true) }

// BenchmarkGraphAdd100 is BenchmarkGraphBuild100 without the
// instantiation: NewGraph, 100 chained AddKernel and Close, against
// c/graphbuild.c's cuGraphCreate, cuGraphAddKernelNode and cuGraphDestroy.
func BenchmarkGraphAdd100(b *testing.B) { benchmarkGraphBuild(b, false) }

// benchmarkGraphBuild builds a chain of graphNodes launches of empty, and
// instantiates it where instantiate says so, then closes it all.
func benchmarkGraphBuild(b *testing.B, instantiate bool) {
	k, s := launchSetup(b, "empty")
	d := device(b)
	deps := make([]highlevel.GraphNode, 1)
	b.ReportAllocs()
	loop(b, s, func() error { return buildGraph(d, k, deps, instantiate) })
}

// buildGraph is an operation of benchmarkGraphBuild: deps is its scratch.
func buildGraph(d highlevel.Device, k *highlevel.Kernel, deps []highlevel.GraphNode, instantiate bool) error {
	g, err := highlevel.NewGraph(d)
	if err != nil {
		return err
	}
	var prev []highlevel.GraphNode // none for the first node
	for range graphNodes {
		n, err := g.AddKernel(prev, k, one)
		if err != nil {
			g.Close()
			return err
		}
		deps[0], prev = n, deps
	}
	if instantiate {
		x, err := g.Instantiate(nil)
		if err == nil {
			err = x.Close()
		}
		if err != nil {
			g.Close()
			return err
		}
	}
	return g.Close()
}

// BenchmarkGraphBuild100Paired is BenchmarkGraphBuild100 against
// c/graphbuild.c's build100 made in this process (graphTwin), in blocks of
// graphBuildBlock rounds that take turns (paired).
func BenchmarkGraphBuild100Paired(b *testing.B) { graphBuildPaired(b) }

// BenchmarkGraphBuild100PairedContextCurrent is
// BenchmarkGraphBuild100Paired with Go's side on a thread where the
// device's primary context is current already, as C's is: the shim then
// sets no context around each call.
func BenchmarkGraphBuild100PairedContextCurrent(b *testing.B) { onContextThread(b, graphBuildPaired) }

func graphBuildPaired(b *testing.B) {
	k, s := launchSetup(b, "empty")
	twin := newGraphTwinFor(b, s)
	d := device(b)
	deps := make([]highlevel.GraphNode, 1)
	b.ReportAllocs()
	paired(b, s.Synchronize, graphBuildBlock, func(n int) error {
		for range n {
			if err := buildGraph(d, k, deps, true); err != nil {
				return err
			}
		}
		return nil
	}, func(n int) error { return twin.build(n, graphNodes) })
}

// graphBuildBlock is the rounds of a block of BenchmarkGraphBuild100Paired:
// a few milliseconds.
const graphBuildBlock = 20

// BenchmarkGraphSetKernelArgs changes the arguments of the one kernel node
// of an instantiated graph (GraphExec.SetKernelArgs), launches the graph
// and waits for it: args4 of launch_test.go on two one-float arrays, the
// scalar and the arrays' roles swapped at each operation, so that each
// update changes every argument but n. c/graphbuild.c makes the driver's
// calls: cuGraphExecKernelNodeSetParams, cuGraphLaunch and the wait.
func BenchmarkGraphSetKernelArgs(b *testing.B) {
	a := newSetArgs(b)
	b.ReportAllocs()
	loop(b, a.s, a.op)
}

// A setArgs is BenchmarkGraphSetKernelArgs's instantiated graph of one
// launch of args4 on two one-float arrays, xy, and the turn of its
// operations.
type setArgs struct {
	k    *highlevel.Kernel
	s    *highlevel.Stream
	xy   [2]*highlevel.Array[float32]
	x    *highlevel.GraphExec
	node highlevel.GraphNode
	turn int
}

// newSetArgs makes the graph, closed with the rest when b ends.
func newSetArgs(b *testing.B) *setArgs {
	a := &setArgs{}
	a.k, a.s = launchSetup(b, "args4")
	d := device(b)
	for i := range a.xy {
		m, err := highlevel.AllocArray[float32](d, 1)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { m.Free() })
		a.xy[i] = m
	}
	g, err := highlevel.NewGraph(d)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { g.Close() })
	if a.node, err = g.AddKernel(nil, a.k, one, float32(2), a.xy[0], a.xy[1], int32(1)); err != nil {
		b.Fatal(err)
	}
	if a.x, err = g.Instantiate(nil); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { a.x.Close() })
	return a
}

// op is an operation of BenchmarkGraphSetKernelArgs.
func (a *setArgs) op() error {
	a.turn ^= 1
	i := a.turn
	if err := a.x.SetKernelArgs(a.node, a.k, one, float32(2+i), a.xy[i], a.xy[1-i], int32(1)); err != nil {
		return err
	}
	if err := a.x.Launch(a.s); err != nil {
		return err
	}
	return a.s.Synchronize()
}

// BenchmarkGraphSetKernelArgsPaired is BenchmarkGraphSetKernelArgs
// against c/graphbuild.c's set_args made in this process (graphTwin), on
// its own graph of the same kernel and arrays, in blocks of
// setArgsBlock rounds that take turns (paired).
func BenchmarkGraphSetKernelArgsPaired(b *testing.B) { setKernelArgsPaired(b) }

// BenchmarkGraphSetKernelArgsPairedContextCurrent is
// BenchmarkGraphSetKernelArgsPaired with Go's side on a thread where the
// device's primary context is current already, as C's is.
func BenchmarkGraphSetKernelArgsPairedContextCurrent(b *testing.B) {
	onContextThread(b, setKernelArgsPaired)
}

func setKernelArgsPaired(b *testing.B) {
	a := newSetArgs(b)
	twin := newGraphTwinFor(b, a.s, a.xy[0], a.xy[1])
	b.ReportAllocs()
	paired(b, a.s.Synchronize, setArgsBlock, func(n int) error {
		for range n {
			if err := a.op(); err != nil {
				return err
			}
		}
		return nil
	}, twin.setArgs)
}

// setArgsBlock is the rounds of a block of
// BenchmarkGraphSetKernelArgsPaired: a few milliseconds.
const setArgsBlock = 400

// newGraphTwinFor returns the twin of the graph benchmarks on stream s,
// with kernels of their own from the same source, and for set_args
// arrays xy (none: two of its own), stopped when b ends.
func newGraphTwinFor(b *testing.B, s *highlevel.Stream, xy ...*highlevel.Array[float32]) *graphTwin {
	b.Helper()
	if len(xy) == 0 {
		for range 2 {
			a, err := highlevel.AllocArray[float32](device(b), 1)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { a.Free() })
			xy = append(xy, a)
		}
	}
	// The raw calls need the context current: on this thread, for now.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	initDevice(b)
	empty, args4 := rawFunction(b, kernels, "empty"), rawFunction(b, kernels, "args4")
	ptr := func(a *highlevel.Array[float32]) cudadrv.Deviceptr {
		return cudadrv.Deviceptr(uintptr(a.MemoryPointer().Ptr()))
	}
	twin, err := newGraphTwin(empty, args4, cudadrv.Stream(s.Handle()), ptr(xy[0]), ptr(xy[1]))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(twin.close)
	return twin
}
