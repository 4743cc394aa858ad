// stubcuda.c is a stand-in for libcuda, libcudart and libnvrtc in one
// library, so that the benchmarks of highlevel run on a machine without a
// GPU (stub_test.go builds it and loads it through $GOCUDA_CUDA,
// $GOCUDA_CUDART and $GOCUDA_NVRTC). Each function returns success at once;
// what remains of a benchmark's time is Go's side of each call: highlevel's
// checks and bookkeeping and the cgo transition.
//
// It has one device (compute capability 9.0, an H200's limits), a context
// current per thread as the driver keeps it, memory from malloc, and kernels
// whose parameters it knows by name (stubKernels). Every other function the
// shim resolves is a weak definition that returns 0 (stubweak.c, written by
// stub_test.go from highlevel/shim.c's list).
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <nvrtc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static __thread CUcontext current;
static char primary; // the device's primary context is its address
static uintptr_t handles = 0x1000; // streams, events, libraries: distinct values

static uintptr_t next_handle(void) { return __atomic_add_fetch(&handles, 16, __ATOMIC_RELAXED); }

CUresult cuInit(unsigned flags) { return CUDA_SUCCESS; }
CUresult cuDeviceGet(CUdevice *d, int ordinal) {
	*d = ordinal;
	return ordinal == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}
CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice d) {
	*ctx = (CUcontext)&primary;
	return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxGetState(CUdevice d, unsigned *flags, int *active) {
	*flags = 0;
	*active = 1;
	return CUDA_SUCCESS;
}
CUresult cuCtxGetCurrent(CUcontext *ctx) {
	*ctx = current;
	return CUDA_SUCCESS;
}
CUresult cuCtxSetCurrent(CUcontext ctx) {
	current = ctx;
	return CUDA_SUCCESS;
}

cudaError_t cudaGetDeviceCount(int *n) {
	*n = 1;
	return cudaSuccess;
}
cudaError_t cudaGetDevice(int *d) {
	*d = 0;
	return cudaSuccess;
}
cudaError_t cudaRuntimeGetVersion(int *v) {
	*v = CUDART_VERSION;
	return cudaSuccess;
}
cudaError_t cudaDriverGetVersion(int *v) {
	*v = CUDART_VERSION;
	return cudaSuccess;
}
cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *p, int d) {
	memset(p, 0, sizeof *p);
	strcpy(p->name, "stub");
	p->major = 9;
	p->totalGlobalMem = (size_t)140 << 30;
	p->multiProcessorCount = 132;
	p->maxThreadsPerBlock = 1024;
	p->maxThreadsDim[0] = p->maxThreadsDim[1] = 1024;
	p->maxThreadsDim[2] = 64;
	p->maxGridSize[0] = 0x7fffffff;
	p->maxGridSize[1] = p->maxGridSize[2] = 65535;
	p->sharedMemPerBlock = 48 << 10;
	p->sharedMemPerBlockOptin = 227 << 10;
	p->warpSize = 32;
	return cudaSuccess;
}
cudaError_t cudaDeviceGetAttribute(int *v, enum cudaDeviceAttr attr, int d) {
	*v = attr == cudaDevAttrComputeCapabilityMajor ? 9 : 0;
	return cudaSuccess;
}
cudaError_t cudaMemGetInfo(size_t *free, size_t *total) {
	*free = *total = (size_t)140 << 30;
	return cudaSuccess;
}
const char *cudaGetErrorString(cudaError_t e) { return "stub error"; }

// Memory is the host's: highlevel reads and writes pinned memory itself.
cudaError_t cudaMalloc(void **p, size_t n) {
	*p = malloc(n);
	return *p != NULL ? cudaSuccess : cudaErrorMemoryAllocation;
}
cudaError_t cudaMallocManaged(void **p, size_t n, unsigned flags) { return cudaMalloc(p, n); }
cudaError_t cudaHostAlloc(void **p, size_t n, unsigned flags) { return cudaMalloc(p, n); }
cudaError_t cudaMallocHost(void **p, size_t n) { return cudaMalloc(p, n); }
cudaError_t cudaMallocFromPoolAsync(void **p, size_t n, cudaMemPool_t pool, cudaStream_t s) { return cudaMalloc(p, n); }
cudaError_t cudaMallocAsync(void **p, size_t n, cudaStream_t s) { return cudaMalloc(p, n); }
cudaError_t cudaFree(void *p) {
	free(p);
	return cudaSuccess;
}
cudaError_t cudaFreeHost(void *p) { return cudaFree(p); }
cudaError_t cudaFreeAsync(void *p, cudaStream_t s) { return cudaFree(p); }

cudaError_t cudaStreamCreate(cudaStream_t *s) {
	*s = (cudaStream_t)next_handle();
	return cudaSuccess;
}
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags) { return cudaStreamCreate(s); }
cudaError_t cudaStreamCreateWithPriority(cudaStream_t *s, unsigned flags, int priority) { return cudaStreamCreate(s); }
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned flags) {
	*e = (cudaEvent_t)next_handle();
	return cudaSuccess;
}
cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t *p, int d) {
	*p = (cudaMemPool_t)next_handle();
	return cudaSuccess;
}
cudaError_t cudaMemPoolCreate(cudaMemPool_t *p, const struct cudaMemPoolProps *props) {
	return cudaDeviceGetDefaultMemPool(p, 0);
}
cudaError_t cudaMemPoolGetAttribute(cudaMemPool_t p, enum cudaMemPoolAttr attr, void *v) {
	*(uint64_t *)v = 0;
	return cudaSuccess;
}
cudaError_t cudaStreamGetCaptureInfo(cudaStream_t s, enum cudaStreamCaptureStatus *st,
		unsigned long long *id, cudaGraph_t *g, const cudaGraphNode_t **deps,
		const cudaGraphEdgeData **edges, size_t *n) {
	*st = cudaStreamCaptureStatusNone;
	return cudaSuccess;
}
cudaError_t cudaDeviceGetStreamPriorityRange(int *least, int *greatest) {
	*least = 0;
	*greatest = -5;
	return cudaSuccess;
}

// stubKernels are the kernels the stub knows the parameters of; any other
// name has none.
static const struct {
	const char *name;
	int n;
	size_t offsets[4], sizes[4];
} stubKernels[] = {
	{"empty", 0, {0}, {0}},
	// (float a, const float *x, float *y, int n)
	{"args4", 4, {0, 8, 16, 24}, {4, 8, 8, 4}},
	{"axpy", 4, {0, 8, 16, 24}, {4, 8, 8, 4}},
};
enum { NKERNELS = sizeof stubKernels / sizeof stubKernels[0] };

CUresult cuLibraryLoadData(CUlibrary *lib, const void *image, CUjit_option *jo, void **jv, unsigned nj,
		CUlibraryOption *lo, void **lv, unsigned nl) {
	*lib = (CUlibrary)next_handle();
	return CUDA_SUCCESS;
}
CUresult cuLibraryGetKernel(CUkernel *k, CUlibrary lib, const char *name) {
	int i = 0;
	while (i < NKERNELS && strcmp(stubKernels[i].name, name) != 0) i++;
	*k = (CUkernel)(uintptr_t)(i + 1); // NKERNELS + 1: no parameters
	return CUDA_SUCCESS;
}
CUresult cuKernelGetFunction(CUfunction *f, CUkernel k) {
	*f = (CUfunction)k;
	return CUDA_SUCCESS;
}
CUresult cuKernelGetParamInfo(CUkernel k, size_t i, size_t *offset, size_t *size) {
	int j = (int)(uintptr_t)k - 1;
	if (j >= NKERNELS || i >= (size_t)stubKernels[j].n) {
		return CUDA_ERROR_INVALID_VALUE;
	}
	*offset = stubKernels[j].offsets[i];
	*size = stubKernels[j].sizes[i];
	return CUDA_SUCCESS;
}

// NVRTC: the "compiled" image is the source itself.
struct program {
	char *src;
	size_t n;
};

nvrtcResult nvrtcCreateProgram(nvrtcProgram *prog, const char *src, const char *name, int nh,
		const char *const *headers, const char *const *includeNames) {
	struct program *p = malloc(sizeof *p);
	p->n = strlen(src) + 1;
	p->src = strdup(src);
	*prog = (nvrtcProgram)p;
	return NVRTC_SUCCESS;
}
nvrtcResult nvrtcDestroyProgram(nvrtcProgram *prog) {
	struct program *p = (struct program *)*prog;
	free(p->src);
	free(p);
	*prog = NULL;
	return NVRTC_SUCCESS;
}
nvrtcResult nvrtcCompileProgram(nvrtcProgram prog, int n, const char *const *opts) { return NVRTC_SUCCESS; }
nvrtcResult nvrtcGetProgramLogSize(nvrtcProgram prog, size_t *n) {
	*n = 1;
	return NVRTC_SUCCESS;
}
nvrtcResult nvrtcGetProgramLog(nvrtcProgram prog, char *log) {
	*log = 0;
	return NVRTC_SUCCESS;
}
nvrtcResult nvrtcGetCUBINSize(nvrtcProgram prog, size_t *n) {
	*n = ((struct program *)prog)->n;
	return NVRTC_SUCCESS;
}
nvrtcResult nvrtcGetCUBIN(nvrtcProgram prog, char *cubin) {
	memcpy(cubin, ((struct program *)prog)->src, ((struct program *)prog)->n);
	return NVRTC_SUCCESS;
}
nvrtcResult nvrtcGetPTXSize(nvrtcProgram prog, size_t *n) { return nvrtcGetCUBINSize(prog, n); }
nvrtcResult nvrtcGetPTX(nvrtcProgram prog, char *ptx) { return nvrtcGetCUBIN(prog, ptx); }
const char *nvrtcGetErrorString(nvrtcResult r) { return "stub error"; }
