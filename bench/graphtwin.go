package bench

/*
#cgo CFLAGS: -I${SRCDIR}/../headers/cuda-13.0
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cuda.h>

typedef CUresult (*twin_graph_create_fn)(CUgraph *, unsigned);
typedef CUresult (*twin_add_kernel_fn)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t,
	const CUDA_KERNEL_NODE_PARAMS *);
typedef CUresult (*twin_instantiate_fn)(CUgraphExec *, CUgraph, unsigned long long);
typedef CUresult (*twin_exec_destroy_fn)(CUgraphExec);
typedef CUresult (*twin_graph_destroy_fn)(CUgraph);
typedef CUresult (*twin_set_kernel_fn)(CUgraphExec, CUgraphNode, const CUDA_KERNEL_NODE_PARAMS *);
typedef CUresult (*twin_launch_fn)(CUgraphExec, CUstream);
typedef CUresult (*twin_sync_fn)(CUstream);

// graph_twin holds what c/graphbuild.c's build100 and set_args need: the
// driver's entry points, the kernels empty and args4, the stream, the two
// one-float arrays, and set_args' graph, one launch of args4, and its
// instantiation.
typedef struct {
	uintptr_t create, add, instantiate, exec_destroy, destroy, set, launch, sync;
	uintptr_t empty, args4, s;
	uint64_t xy[2];
	uintptr_t graph, exec, node;
	int turn;
} graph_twin;

static CUDA_KERNEL_NODE_PARAMS twin_params(uintptr_t f, void **args) {
	CUDA_KERNEL_NODE_PARAMS p;
	memset(&p, 0, sizeof p);
	p.func = (CUfunction)f;
	p.gridDimX = p.gridDimY = p.gridDimZ = 1;
	p.blockDimX = p.blockDimY = p.blockDimZ = 1;
	p.kernelParams = args;
	return p;
}

// graph_twin_build makes rounds of build100: a chain of nodes launches of
// empty, instantiated, then both destroyed; it returns the first status
// that is not 0.
static int graph_twin_build(graph_twin *t, int rounds, int nodes) {
	CUDA_KERNEL_NODE_PARAMS k = twin_params(t->empty, NULL);
	for (int r = 0; r < rounds; r++) {
		CUgraph g;
		CUgraphExec x;
		CUgraphNode prev = NULL, node;
		int e = ((twin_graph_create_fn)t->create)(&g, 0);
		if (e != 0) return e;
		for (int i = 0; i < nodes && e == 0; i++) {
			e = ((twin_add_kernel_fn)t->add)(&node, g, i > 0 ? &prev : NULL, i > 0, &k);
			prev = node;
		}
		if (e == 0) e = ((twin_instantiate_fn)t->instantiate)(&x, g, 0);
		if (e == 0) e = ((twin_exec_destroy_fn)t->exec_destroy)(x);
		int d = ((twin_graph_destroy_fn)t->destroy)(g);
		if (e != 0 || d != 0) return e != 0 ? e : d;
	}
	return 0;
}

// graph_twin_args builds and instantiates set_args' graph.
static int graph_twin_args(graph_twin *t) {
	float a = 2;
	int n = 1;
	void *args[] = {&a, &t->xy[0], &t->xy[1], &n};
	CUDA_KERNEL_NODE_PARAMS k = twin_params(t->args4, args);
	CUgraph g;
	CUgraphNode node;
	CUgraphExec x;
	int e = ((twin_graph_create_fn)t->create)(&g, 0);
	if (e == 0) e = ((twin_add_kernel_fn)t->add)(&node, g, NULL, 0, &k);
	if (e == 0) e = ((twin_instantiate_fn)t->instantiate)(&x, g, 0);
	if (e != 0) return e;
	t->graph = (uintptr_t)g, t->node = (uintptr_t)node, t->exec = (uintptr_t)x;
	return 0;
}

// graph_twin_set_args makes rounds of set_args: new arguments for the
// node, the scalar and the arrays' roles swapped each time, then a launch
// of the graph and the wait for it.
static int graph_twin_set_args(graph_twin *t, int rounds) {
	for (int r = 0; r < rounds; r++) {
		t->turn ^= 1;
		float a = 2 + t->turn;
		int n = 1;
		void *args[] = {&a, &t->xy[t->turn], &t->xy[1 - t->turn], &n};
		CUDA_KERNEL_NODE_PARAMS k = twin_params(t->args4, args);
		int e = ((twin_set_kernel_fn)t->set)((CUgraphExec)t->exec, (CUgraphNode)t->node, &k);
		if (e == 0) e = ((twin_launch_fn)t->launch)((CUgraphExec)t->exec, (CUstream)t->s);
		if (e == 0) e = ((twin_sync_fn)t->sync)((CUstream)t->s);
		if (e != 0) return e;
	}
	return 0;
}

static void graph_twin_close(graph_twin *t) {
	if (t->exec != 0) ((twin_exec_destroy_fn)t->exec_destroy)((CUgraphExec)t->exec);
	if (t->graph != 0) ((twin_graph_destroy_fn)t->destroy)((CUgraph)t->graph);
}
*/
import "C"

import (
	"runtime"
	"unsafe"

	"github.com/gocuda/cuda/cudadrv"
	"github.com/gocuda/cuda/cudart"
)

// A graphTwin makes c/graphbuild.c's calls of BenchmarkGraphBuild100 and
// BenchmarkGraphSetKernelArgs in this process, a block of rounds a cgo
// call, on a thread of its own where device 0's primary context is
// current, as it is in C: the Go side keeps its own threads, where it is
// not (BenchmarkGraphBuild100Paired, BenchmarkGraphSetKernelArgsPaired).
type graphTwin struct {
	t    *C.graph_twin
	do   chan func() C.int
	done chan C.int
}

// newGraphTwin returns the twin of the kernels empty and args4, stream s
// and the one-float arrays x and y; close stops it.
func newGraphTwin(empty, args4 cudadrv.Function, s cudadrv.Stream, x, y cudadrv.Deviceptr) (*graphTwin, error) {
	// CUDA 12's headers' cuGraphInstantiate is
	// cuGraphInstantiateWithFlags; cuGetProcAddress gives the 11.0
	// function of that name.
	fns, err := driverProcs("cuGraphCreate", "cuGraphAddKernelNode", "cuGraphInstantiateWithFlags",
		"cuGraphExecDestroy", "cuGraphDestroy", "cuGraphExecKernelNodeSetParams", "cuGraphLaunch", "cuStreamSynchronize")
	if err != nil {
		return nil, err
	}
	t := (*C.graph_twin)(C.calloc(1, C.sizeof_graph_twin))
	for i, p := range []*C.uintptr_t{&t.create, &t.add, &t.instantiate, &t.exec_destroy, &t.destroy, &t.set, &t.launch, &t.sync} {
		*p = C.uintptr_t(uintptr(fns[i]))
	}
	t.empty, t.args4, t.s = C.uintptr_t(empty), C.uintptr_t(args4), C.uintptr_t(s)
	t.xy[0], t.xy[1] = C.uint64_t(x), C.uint64_t(y)
	g := &graphTwin{t: t, do: make(chan func() C.int), done: make(chan C.int)}
	ready := make(chan error)
	go g.serve(ready)
	if err := <-ready; err != nil {
		C.free(unsafe.Pointer(t))
		return nil, err
	}
	if err := g.call(func() C.int { return C.graph_twin_args(t) }); err != nil {
		g.close()
		return nil, err
	}
	return g, nil
}

// serve runs the twin's calls on a thread where device 0's primary
// context is current, until close.
func (g *graphTwin) serve(ready chan<- error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	err := cudart.SetDevice(0)
	if err == nil {
		err = cudart.Free(nil) // makes the primary context current
	}
	ready <- err
	if err != nil {
		return
	}
	for f := range g.do {
		g.done <- f()
	}
}

// call runs f on the twin's thread and returns its status as an error.
func (g *graphTwin) call(f func() C.int) error {
	g.do <- f
	if r := <-g.done; r != 0 {
		return cudadrv.Result(r)
	}
	return nil
}

// build makes n rounds of build100, of nodes nodes.
func (g *graphTwin) build(n, nodes int) error {
	return g.call(func() C.int { return C.graph_twin_build(g.t, C.int(n), C.int(nodes)) })
}

// setArgs makes n rounds of set_args.
func (g *graphTwin) setArgs(n int) error {
	return g.call(func() C.int { return C.graph_twin_set_args(g.t, C.int(n)) })
}

// close destroys the twin's graph and stops its thread.
func (g *graphTwin) close() {
	g.call(func() C.int { C.graph_twin_close(g.t); return 0 })
	close(g.do)
	C.free(unsafe.Pointer(g.t))
}
