// The C twin of the benchmarks of graphs built node by node
// (../graphbuild_test.go): a loop of 1000 runs of a kernel that decides on
// the device whether to go on, as a graph's while node whose body's kernel
// sets the node's condition, and as the host's loop that launches the
// kernel and reads its flag after each launch, from mapped pinned memory or
// copied back; a graph of 100 kernel nodes built, instantiated and
// destroyed; and one kernel node's arguments set in an instantiated graph,
// then a launch and the wait for it; the last two also with the driver
// work highlevel's shim adds (the Shim rows). Made with the driver's calls, as
// highlevel makes them, the kernels compiled by NVRTC and loaded with
// cuLibraryLoadData (load_kernel). Printed in Go benchmark format.
//
//	nvcc -O2 -o graphbuild graphbuild.c -lcudart -lcuda -lnvrtc && ./graphbuild
//
// The loop's kernel includes cuda_device_runtime_api.h, from
// $CUDA_HOME/include, else /usr/local/cuda/include, as the Go benchmarks
// find it.
#include "bench.h"
#include <pthread.h>
#include <string.h>

// loop_source is the Go benchmarks' loopSource.
static const char loop_source[] =
	"#include <cuda_device_runtime_api.h>\n"
	"extern \"C\" __global__ void step(unsigned *count, unsigned limit, cudaGraphConditionalHandle h) {\n"
	"	cudaGraphSetConditional(h, ++*count < limit);\n"
	"}\n"
	"extern \"C\" __global__ void stepFlag(unsigned *count, unsigned limit, unsigned *flag) {\n"
	"	*flag = ++*count < limit;\n"
	"}\n";

// kernels_source is launch_test.go's kernels.
static const char kernels_source[] =
	"extern \"C\" __global__ void empty() {}\n"
	"extern \"C\" __global__ void args4(float a, const float *x, float *y, int n) {\n"
	"	if (n > 0 && threadIdx.x == 0) y[0] = a * x[0];\n"
	"}\n";

enum { ITERATIONS = 1000, NODES = 100 };

static CUcontext ctx;
static CUfunction step, step_flag, empty, args4;
static CUdeviceptr count, dflag, xy[2];
static volatile unsigned *flag;  // pinned and mapped
static CUdeviceptr flag_mapped; // flag's device address

// kernel_params returns the parameters of a one-thread launch of f with args.
static CUDA_KERNEL_NODE_PARAMS kernel_params(CUfunction f, void **args) {
	CUDA_KERNEL_NODE_PARAMS p;
	memset(&p, 0, sizeof p);
	p.func = f;
	p.gridDimX = p.gridDimY = p.gridDimZ = 1;
	p.blockDimX = p.blockDimY = p.blockDimZ = 1;
	p.kernelParams = args;
	return p;
}

// check_count fails unless the last loop ran its kernel ITERATIONS times.
static void check_count(void) {
	unsigned n;
	drvcheck(cuMemcpyDtoH(&n, count, sizeof n), "cuMemcpyDtoH");
	if (n != ITERATIONS) {
		fprintf(stderr, "the loop ran its kernel %u times, want %d\n", n, ITERATIONS);
		exit(1);
	}
}

static CUgraphExec while_exec;

// build_while builds and instantiates BenchmarkWhileNode's graph: a memset
// of the counter, then a while node whose body is a launch of step.
static void build_while(void) {
	CUgraph g;
	drvcheck(cuGraphCreate(&g, 0), "cuGraphCreate");
	CUgraphConditionalHandle h;
	drvcheck(cuGraphConditionalHandleCreate(&h, g, ctx, 1, CU_GRAPH_COND_ASSIGN_DEFAULT), "cuGraphConditionalHandleCreate");
	CUDA_MEMSET_NODE_PARAMS m;
	memset(&m, 0, sizeof m);
	m.dst = count;
	m.elementSize = 1;
	m.width = sizeof(unsigned);
	m.height = 1;
	CUgraphNode zero, loop, node;
	drvcheck(cuGraphAddMemsetNode(&zero, g, NULL, 0, &m, ctx), "cuGraphAddMemsetNode");
	CUgraphNodeParams p;
	memset(&p, 0, sizeof p);
	p.type = CU_GRAPH_NODE_TYPE_CONDITIONAL;
	p.conditional.handle = h;
	p.conditional.type = CU_GRAPH_COND_TYPE_WHILE;
	p.conditional.size = 1;
	p.conditional.ctx = ctx;
#if CUDA_VERSION >= 13000 // cuGraphAddNode_v2, with the edges' data
	drvcheck(cuGraphAddNode(&loop, g, &zero, NULL, 1, &p), "cuGraphAddNode");
#else
	drvcheck(cuGraphAddNode(&loop, g, &zero, 1, &p), "cuGraphAddNode");
#endif
	unsigned limit = ITERATIONS;
	void *args[] = {&count, &limit, &h};
	CUDA_KERNEL_NODE_PARAMS k = kernel_params(step, args);
	drvcheck(cuGraphAddKernelNode(&node, p.conditional.phGraph_out[0], NULL, 0, &k), "cuGraphAddKernelNode");
	drvcheck(cuGraphInstantiate(&while_exec, g, 0), "cuGraphInstantiate");
	drvcheck(cuGraphDestroy(g), "cuGraphDestroy");
}

static void while_node(void) {
	drvcheck(cuGraphLaunch(while_exec, (CUstream)stream), "cuGraphLaunch");
	check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
}

// host_loop_flag zeroes the counter, then launches step_flag and waits for it,
// with the flag at address f, and, where dflag is the flag, copies it back
// before the wait, until the flag says stop.
static void host_loop_flag(CUdeviceptr f) {
	drvcheck(cuMemsetD8Async(count, 0, sizeof(unsigned), (CUstream)stream), "cuMemsetD8Async");
	unsigned limit = ITERATIONS;
	void *args[] = {&count, &limit, &f};
	for (int i = 1;; i++) {
		drvcheck(cuLaunchKernel(step_flag, 1, 1, 1, 1, 1, 1, 0, (CUstream)stream, args, NULL), "cuLaunchKernel");
		if (f == dflag) {
			drvcheck(cuMemcpyDtoHAsync((void *)flag, dflag, sizeof(unsigned), (CUstream)stream), "cuMemcpyDtoHAsync");
		}
		check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
		unsigned v = *flag;
		if (v == 0 || i >= ITERATIONS) {
			if (v != 0 || i != ITERATIONS) {
				fprintf(stderr, "the loop ended after %d runs of its kernel, flag %u; want %d, 0\n", i, v, ITERATIONS);
				exit(1);
			}
			return;
		}
	}
}

static void host_loop(void) { host_loop_flag(flag_mapped); }

static void host_loop_copy(void) { host_loop_flag(dflag); }

// The driver work highlevel's shim adds around each call, which C makes
// none of: the current context asked before every call (hl_enter), a
// lock held shared around instantiations, launches and destructions
// (hl_gate), the capture status asked before a wait (hl_uncaptured), and
// the context named in a kernel node's parameters. The Shim rows make
// their rows' calls with it, taking turns with them run by run, to tell
// how much of highlevel's gap to C is the driver's.
static pthread_rwlock_t gate = PTHREAD_RWLOCK_INITIALIZER;

// shim_enter is, where shim is set, hl_enter where ctx is current
// already; shared says whether the call is one hl_gate holds the lock
// shared around.
static void shim_enter(int shim, int shared) {
	if (!shim) return;
	CUcontext c;
	if (shared) pthread_rwlock_rdlock(&gate);
	drvcheck(cuCtxGetCurrent(&c), "cuCtxGetCurrent");
}

static void shim_leave(int shim, int shared) {
	if (shim && shared) pthread_rwlock_unlock(&gate);
}

// build_nodes builds a chain of NODES launches of empty, instantiates it
// and destroys both; with shim, as highlevel's shim makes those calls.
static void build_nodes(int shim) {
	CUgraph g;
	CUgraphExec x;
	CUgraphNode prev = NULL, node;
	shim_enter(shim, 0);
	drvcheck(cuGraphCreate(&g, 0), "cuGraphCreate");
	CUDA_KERNEL_NODE_PARAMS k = kernel_params(empty, NULL);
	if (shim) k.ctx = ctx;
	for (int i = 0; i < NODES; i++) {
		shim_enter(shim, 0);
		drvcheck(cuGraphAddKernelNode(&node, g, i > 0 ? &prev : NULL, i > 0, &k), "cuGraphAddKernelNode");
		prev = node;
	}
	shim_enter(shim, 1);
	if (shim) {
		CUDA_GRAPH_INSTANTIATE_PARAMS p;
		memset(&p, 0, sizeof p);
		drvcheck(cuGraphInstantiateWithParams(&x, g, &p), "cuGraphInstantiateWithParams");
	} else {
		drvcheck(cuGraphInstantiate(&x, g, 0), "cuGraphInstantiate");
	}
	shim_leave(shim, 1);
	shim_enter(shim, 1);
	drvcheck(cuGraphExecDestroy(x), "cuGraphExecDestroy");
	shim_leave(shim, 1);
	shim_enter(shim, 1);
	drvcheck(cuGraphDestroy(g), "cuGraphDestroy");
	shim_leave(shim, 1);
}
static void build100(void) { build_nodes(0); }
static void build100_shim(void) { build_nodes(1); }

// add100 is build100 without the instantiation; add100ctx names the
// context in each node's parameters, as highlevel does.
static void add_nodes(CUcontext c) {
	CUgraph g;
	CUgraphNode prev = NULL, node;
	drvcheck(cuGraphCreate(&g, 0), "cuGraphCreate");
	CUDA_KERNEL_NODE_PARAMS k = kernel_params(empty, NULL);
	k.ctx = c;
	for (int i = 0; i < NODES; i++) {
		drvcheck(cuGraphAddKernelNode(&node, g, i > 0 ? &prev : NULL, i > 0, &k), "cuGraphAddKernelNode");
		prev = node;
	}
	drvcheck(cuGraphDestroy(g), "cuGraphDestroy");
}
static void add100(void) { add_nodes(NULL); }
static void add100ctx(void) { add_nodes(ctx); }

static CUgraphExec args_exec;
static CUgraphNode args_node;
static int turn;

// build_args builds and instantiates BenchmarkGraphSetKernelArgs's graph:
// one launch of args4. The graph stays: its node names the node to update
// in the instantiation (cuGraphExecKernelNodeSetParams refuses a node of a
// destroyed graph).
static CUgraph args_graph;
static void build_args(void) {
	CUgraph g;
	float a = 2;
	int n = 1;
	void *args[] = {&a, &xy[0], &xy[1], &n};
	CUDA_KERNEL_NODE_PARAMS k = kernel_params(args4, args);
	drvcheck(cuGraphCreate(&g, 0), "cuGraphCreate");
	drvcheck(cuGraphAddKernelNode(&args_node, g, NULL, 0, &k), "cuGraphAddKernelNode");
	drvcheck(cuGraphInstantiate(&args_exec, g, 0), "cuGraphInstantiate");
	args_graph = g;
}

// set_args_as sets the node's arguments, the scalar and the arrays' roles
// swapped each time, then launches the graph and waits for it; with shim,
// as highlevel's shim makes those calls.
static void set_args_as(int shim) {
	turn ^= 1;
	float a = 2 + turn;
	int n = 1;
	void *args[] = {&a, &xy[turn], &xy[1 - turn], &n};
	CUDA_KERNEL_NODE_PARAMS k = kernel_params(args4, args);
	if (shim) k.ctx = ctx;
	shim_enter(shim, 0);
	drvcheck(cuGraphExecKernelNodeSetParams(args_exec, args_node, &k), "cuGraphExecKernelNodeSetParams");
	shim_enter(shim, 1);
	drvcheck(cuGraphLaunch(args_exec, (CUstream)stream), "cuGraphLaunch");
	shim_leave(shim, 1);
	if (shim) {
		shim_enter(shim, 0);
		CUstreamCaptureStatus st;
		drvcheck(cuStreamIsCapturing((CUstream)stream, &st), "cuStreamIsCapturing");
	}
	check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
}
static void set_args(void) { set_args_as(0); }
static void set_args_shim(void) { set_args_as(1); }

// bench_turns runs fn and with_shim a run each in turn, RUNS times, so
// that both see the same drift.
static void bench_turns(const char *name, void (*fn)(void), const char *shim_name, void (*with_shim)(void), long n) {
	runs = 1;
	for (int r = 0; r < RUNS; r++) {
		bench(name, fn, n);
		bench(shim_name, with_shim, n);
	}
	runs = RUNS;
}

int main(void) {
	check(cudaSetDevice(0), "cudaSetDevice");
	check(cudaFree(0), "cudaFree");
	drvcheck(cuCtxGetCurrent(&ctx), "cuCtxGetCurrent");
	check(cudaStreamCreate(&stream), "cudaStreamCreate");
	check(cudaMalloc((void **)&count, sizeof(unsigned)), "cudaMalloc");
	check(cudaMalloc((void **)&dflag, sizeof(unsigned)), "cudaMalloc");
	for (int i = 0; i < 2; i++) {
		check(cudaMalloc((void **)&xy[i], sizeof(float)), "cudaMalloc");
	}
	check(cudaHostAlloc((void **)&flag, sizeof(unsigned), cudaHostAllocMapped), "cudaHostAlloc");
	check(cudaHostGetDevicePointer((void **)&flag_mapped, (void *)flag, 0), "cudaHostGetDevicePointer");
	const char *home = getenv("CUDA_HOME");
	char include[4096];
	snprintf(include, sizeof include, "%s/include", home != NULL && *home != 0 ? home : "/usr/local/cuda");
	step = load_kernel_include(loop_source, "step", include);
	step_flag = load_kernel_include(loop_source, "stepFlag", include);
	empty = load_kernel(kernels_source, "empty");
	args4 = load_kernel(kernels_source, "args4");

	build_while();
	bench("BenchmarkWhileNode", while_node, 100);
	check_count();
	bench("BenchmarkWhileHostLoop", host_loop, 30);
	check_count();
	bench("BenchmarkWhileHostLoopCopy", host_loop_copy, 30);
	check_count();
	bench_turns("BenchmarkGraphBuild100", build100, "BenchmarkGraphBuild100Shim", build100_shim, 1000);
	bench("BenchmarkGraphAdd100", add100, 1000);
	bench("BenchmarkGraphAdd100Context", add100ctx, 1000);
	build_args();
	bench_turns("BenchmarkGraphSetKernelArgs", set_args, "BenchmarkGraphSetKernelArgsShim", set_args_shim, 20000);
	return 0;
}
