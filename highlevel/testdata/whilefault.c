// whilefault shows, with driver calls alone, the fault that makes
// highlevel's graphs with conditional nodes take turns (condTurns) and
// keeps the mixed test's cond kind apart from the other kinds.
//
// Each of CONDS threads builds a graph of a memset and a while node whose
// body's kernel counts to a limit, instantiates it, launches it, waits and
// checks the count, over and over, on a stream of its own; with TURNS 1 the
// launches take turns, each after the last one's event, as condTurns
// orders them. Each of OTHERS threads launches kernels (KIND 1) or memsets
// (KIND 2) on a stream of its own meanwhile.
//
//	nvcc -o whilefault whilefault.c -lcuda -lnvrtc    (or gcc, -I and -L to CUDA)
//	./whilefault CONDS TURNS OTHERS KIND SECONDS
//
// On an H200, driver 580.159.04 (2026-12-02), 5 seconds each:
//
//	8 0 0 -: CUDA_ERROR_LAUNCH_FAILED within 850 launches a thread
//	8 1 0 -: clean, 16711 launches
//	1 0 4 1: CUDA_ERROR_LAUNCH_FAILED (kernels beside)
//	1 0 4 2: CUDA_ERROR_LAUNCH_FAILED (memsets beside)
//	1 0 1 1: clean
//
// and graphs with if nodes alone ran clean in every case tried. It exits 1 at the
// first failure.
#include <cuda.h>
#include <nvrtc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *src =
	"#include <cuda_device_runtime_api.h>\n"
	"extern \"C\" __global__ void step(unsigned *count, unsigned limit, cudaGraphConditionalHandle h) {\n"
	"	unsigned c = ++*count;\n"
	"	cudaGraphSetConditional(h, c < limit);\n"
	"}\n"
	"extern \"C\" __global__ void add(unsigned *p, unsigned v, int n) {\n"
	"	int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
	"	if (i < n) p[i] += v;\n"
	"}\n";

static CUcontext ctx;
static CUfunction step, add;
static int turns, kind, seconds;
static CUevent last; // recorded after each launch, with turns
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

#define CK(x) do { \
	CUresult r_ = (x); \
	if (r_ != CUDA_SUCCESS) { \
		const char *s_ = ""; \
		cuGetErrorName(r_, &s_); \
		printf("%s %d, round %d: %s: %s\n", who, id, round, #x, s_); \
		exit(1); \
	} \
} while (0)

static void *conds(void *arg) {
	const char *who = "while thread";
	int id = (int)(long)arg, round = 0;
	unsigned seed = 7919 * id + 1;
	CK(cuCtxSetCurrent(ctx));
	CUstream s;
	CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CUdeviceptr count;
	CK(cuMemAlloc(&count, 4));
	for (time_t end = time(0) + seconds; time(0) < end; round++) {
		CUgraph g;
		CK(cuGraphCreate(&g, 0));
		CUgraphConditionalHandle h;
		CK(cuGraphConditionalHandleCreate(&h, g, ctx, 1, CU_GRAPH_COND_ASSIGN_DEFAULT));
		CUDA_MEMSET_NODE_PARAMS mp = {.dst = count, .elementSize = 4, .width = 1, .height = 1};
		CUgraphNode zero, loop, k;
		CK(cuGraphAddMemsetNode(&zero, g, NULL, 0, &mp, ctx));
		CUgraphNodeParams cp;
		memset(&cp, 0, sizeof cp);
		cp.type = CU_GRAPH_NODE_TYPE_CONDITIONAL;
		cp.conditional.handle = h;
		cp.conditional.type = CU_GRAPH_COND_TYPE_WHILE;
		cp.conditional.size = 1;
		cp.conditional.ctx = ctx;
		CK(cuGraphAddNode(&loop, g, &zero, NULL, 1, &cp));
		unsigned limit = 1 + rand_r(&seed) % 64;
		void *args[] = {&count, &limit, &h};
		CUDA_KERNEL_NODE_PARAMS kp = {.func = step, .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1,
			.blockDimX = 1, .blockDimY = 1, .blockDimZ = 1, .kernelParams = args, .ctx = ctx};
		CK(cuGraphAddKernelNode(&k, cp.conditional.phGraph_out[0], NULL, 0, &kp));
		CUgraphExec x;
		CK(cuGraphInstantiate(&x, g, 0));
		if (turns) {
			pthread_mutex_lock(&mu);
			CK(cuStreamWaitEvent(s, last, 0));
		}
		CK(cuGraphLaunch(x, s));
		if (turns) {
			CK(cuEventRecord(last, s));
			pthread_mutex_unlock(&mu);
		}
		CK(cuStreamSynchronize(s));
		unsigned got;
		CK(cuMemcpyDtoH(&got, count, 4));
		if (got != limit) {
			printf("while thread %d, round %d: counted to %u, want %u\n", id, round, got, limit);
			exit(1);
		}
		CK(cuGraphExecDestroy(x));
		CK(cuGraphDestroy(g));
	}
	printf("while thread %d: %d launches\n", id, round);
	return NULL;
}

static void *others(void *arg) {
	const char *who = "other thread";
	int id = (int)(long)arg, round = 0;
	CK(cuCtxSetCurrent(ctx));
	CUstream s;
	CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	int n = 1 << 18;
	CUdeviceptr p;
	CK(cuMemAlloc(&p, 4 * n));
	unsigned v = 1;
	void *args[] = {&p, &v, &n};
	for (time_t end = time(0) + seconds; time(0) < end; round++) {
		if (kind == 1) {
			CK(cuLaunchKernel(add, n / 256, 1, 1, 256, 1, 1, 0, s, args, NULL));
		} else {
			CK(cuMemsetD32Async(p, round, n, s));
		}
		if (round % 4 == 0) CK(cuStreamSynchronize(s));
	}
	CK(cuStreamSynchronize(s));
	printf("other thread %d: %d rounds\n", id, round);
	return NULL;
}

int main(int argc, char **argv) {
	if (argc != 6) {
		fprintf(stderr, "usage: whilefault CONDS TURNS OTHERS KIND SECONDS\n");
		return 2;
	}
	int nconds = atoi(argv[1]), nothers = atoi(argv[3]);
	turns = atoi(argv[2]), kind = atoi(argv[4]), seconds = atoi(argv[5]);
	const char *who = "main";
	int id = 0, round = 0;
	CK(cuInit(0));
	CUdevice dev;
	CK(cuDeviceGet(&dev, 0));
	CK(cuDevicePrimaryCtxRetain(&ctx, dev));
	CK(cuCtxSetCurrent(ctx));
	int major, minor;
	CK(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
	CK(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev));
	char arch[32], inc[512];
	snprintf(arch, sizeof arch, "-arch=sm_%d%d", major, minor);
	const char *home = getenv("CUDA_HOME");
	snprintf(inc, sizeof inc, "-I%s/include", home != NULL ? home : "/usr/local/cuda");
	const char *opts[] = {arch, inc};
	nvrtcProgram prog;
	if (nvrtcCreateProgram(&prog, src, "whilefault.cu", 0, NULL, NULL) != NVRTC_SUCCESS ||
			nvrtcCompileProgram(prog, 2, opts) != NVRTC_SUCCESS) {
		fprintf(stderr, "whilefault: the kernels do not compile (%s)\n", inc);
		return 1;
	}
	size_t n;
	nvrtcGetCUBINSize(prog, &n);
	char *cubin = malloc(n);
	nvrtcGetCUBIN(prog, cubin);
	CUlibrary lib;
	CUkernel k;
	CK(cuLibraryLoadData(&lib, cubin, NULL, NULL, 0, NULL, NULL, 0));
	CK(cuLibraryGetKernel(&k, lib, "step"));
	CK(cuKernelGetFunction(&step, k));
	CK(cuLibraryGetKernel(&k, lib, "add"));
	CK(cuKernelGetFunction(&add, k));
	CK(cuEventCreate(&last, CU_EVENT_DISABLE_TIMING));
	pthread_t t[256];
	int nt = 0;
	for (int i = 0; i < nconds && nt < 256; i++) pthread_create(&t[nt++], NULL, conds, (void *)(long)i);
	for (int i = 0; i < nothers && nt < 256; i++) pthread_create(&t[nt++], NULL, others, (void *)(long)i);
	for (int i = 0; i < nt; i++) pthread_join(t[i], NULL);
	printf("clean\n");
	return 0;
}
