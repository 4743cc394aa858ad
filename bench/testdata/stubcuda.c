// stubcuda.c is a stand-in for libcuda and libnvrtc in one library, so that
// the benchmarks of highlevel run on a machine without a GPU (stub_test.go
// builds it and loads it through $GOCUDA_CUDA and $GOCUDA_NVRTC), and for
// the runtime functions the C twin (c/mix.c) calls. Each function returns
// success at once; what remains of a benchmark's time is Go's side of each
// call: highlevel's checks and bookkeeping and the cgo transition.
//
// It has one device (compute capability 9.0, an H200's limits), a context
// current per thread as the driver keeps it, memory from malloc, and kernels
// whose parameters it knows by name (stubKernels). highlevel takes the
// driver's functions from cuGetProcAddress_v2, which answers from
// stub_procs: the shim's list of functions (highlevel/shim.c's HL_SYMBOLS),
// written by stub_test.go into stubprocs.c, each the stand-in stub_NAME
// defined here or, for the others, a weak definition there that returns 0.
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <nvrtc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

// STUB names the stand-in of a driver function: STUB(cuMemAlloc) is
// stub_cuMemAlloc, whatever versioned symbol cuda.h makes of cuMemAlloc.
#define STUB(name) CUresult stub_##name

struct stub_proc {
	const char *name;
	void *fn;
};
extern const struct stub_proc stub_procs[]; // ends with a NULL name

CUresult cuGetProcAddress_v2(const char *symbol, void **fn, int version, cuuint64_t flags,
		CUdriverProcAddressQueryResult *status) {
	for (const struct stub_proc *p = stub_procs; p->name != NULL; p++) {
		if (strcmp(p->name, symbol) == 0) {
			*fn = p->fn;
			*status = CU_GET_PROC_ADDRESS_SUCCESS;
			return CUDA_SUCCESS;
		}
	}
	*fn = NULL;
	*status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
	return CUDA_ERROR_NOT_FOUND;
}

static __thread CUcontext current;
static char primary; // the device's primary context is its address
static uintptr_t handles = 0x1000; // streams, events, libraries: distinct values

static uintptr_t next_handle(void) { return __atomic_add_fetch(&handles, 16, __ATOMIC_RELAXED); }

STUB(cuDriverGetVersion)(int *v) {
	*v = CUDA_VERSION;
	return CUDA_SUCCESS;
}
STUB(cuDeviceGet)(CUdevice *d, int ordinal) {
	*d = ordinal;
	return ordinal == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}
STUB(cuDeviceGetCount)(int *n) {
	*n = 1;
	return CUDA_SUCCESS;
}
STUB(cuDeviceGetName)(char *name, int n, CUdevice d) {
	strncpy(name, "stub", n);
	return CUDA_SUCCESS;
}
STUB(cuDeviceGetAttribute)(int *v, CUdevice_attribute attr, CUdevice d) {
	switch (attr) {
	case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = 9; break;
	case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *v = 1024; break;
	case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: *v = 1024; break;
	case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: *v = 1024; break;
	case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: *v = 64; break;
	case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: *v = 0x7fffffff; break;
	case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: *v = 65535; break;
	case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: *v = 65535; break;
	case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: *v = 48 << 10; break;
	case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *v = 227 << 10; break;
	case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = 132; break;
	case CU_DEVICE_ATTRIBUTE_WARP_SIZE: *v = 32; break;
	default: *v = 0;
	}
	return CUDA_SUCCESS;
}
STUB(cuDevicePrimaryCtxRetain)(CUcontext *ctx, CUdevice d) {
	*ctx = (CUcontext)&primary;
	return CUDA_SUCCESS;
}
STUB(cuDevicePrimaryCtxGetState)(CUdevice d, unsigned *flags, int *active) {
	*flags = 0;
	*active = 1;
	return CUDA_SUCCESS;
}
STUB(cuCtxGetCurrent)(CUcontext *ctx) {
	*ctx = current;
	return CUDA_SUCCESS;
}
STUB(cuCtxSetCurrent)(CUcontext ctx) {
	current = ctx;
	return CUDA_SUCCESS;
}
STUB(cuCtxGetDevice)(CUdevice *d) {
	*d = 0;
	return current != NULL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}
STUB(cuCtxGetStreamPriorityRange)(int *least, int *greatest) {
	*least = 0;
	*greatest = -5;
	return CUDA_SUCCESS;
}
STUB(cuMemGetInfo)(size_t *free, size_t *total) {
	*free = *total = (size_t)140 << 30;
	return CUDA_SUCCESS;
}

// Memory is the host's: highlevel reads and writes pinned memory itself.
STUB(cuMemAlloc)(CUdeviceptr *p, size_t n) {
	*p = (CUdeviceptr)(uintptr_t)malloc(n);
	return *p != 0 ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
STUB(cuMemAllocManaged)(CUdeviceptr *p, size_t n, unsigned flags) { return stub_cuMemAlloc(p, n); }
STUB(cuMemAllocFromPoolAsync)(CUdeviceptr *p, size_t n, CUmemoryPool pool, CUstream s) { return stub_cuMemAlloc(p, n); }
STUB(cuMemFree)(CUdeviceptr p) {
	free((void *)(uintptr_t)p);
	return CUDA_SUCCESS;
}
STUB(cuMemFreeAsync)(CUdeviceptr p, CUstream s) { return stub_cuMemFree(p); }
STUB(cuMemHostAlloc)(void **p, size_t n, unsigned flags) {
	*p = malloc(n);
	return *p != NULL ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
STUB(cuMemFreeHost)(void *p) {
	free(p);
	return CUDA_SUCCESS;
}

STUB(cuStreamCreate)(CUstream *s, unsigned flags) {
	*s = (CUstream)next_handle();
	return CUDA_SUCCESS;
}
STUB(cuStreamCreateWithPriority)(CUstream *s, unsigned flags, int priority) { return stub_cuStreamCreate(s, flags); }
STUB(cuEventCreate)(CUevent *e, unsigned flags) {
	*e = (CUevent)next_handle();
	return CUDA_SUCCESS;
}
STUB(cuDeviceGetDefaultMemPool)(CUmemoryPool *p, CUdevice d) {
	*p = (CUmemoryPool)next_handle();
	return CUDA_SUCCESS;
}
STUB(cuMemPoolCreate)(CUmemoryPool *p, const CUmemPoolProps *props) { return stub_cuDeviceGetDefaultMemPool(p, 0); }
STUB(cuMemPoolGetAttribute)(CUmemoryPool p, CUmemPool_attribute attr, void *v) {
	*(uint64_t *)v = 0;
	return CUDA_SUCCESS;
}
STUB(cuStreamGetCaptureInfo)(CUstream s, CUstreamCaptureStatus *st, cuuint64_t *id, CUgraph *g,
		const CUgraphNode **deps, size_t *n) {
	*st = CU_STREAM_CAPTURE_STATUS_NONE;
	return CUDA_SUCCESS;
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

STUB(cuLibraryLoadData)(CUlibrary *lib, const void *image, CUjit_option *jo, void **jv, unsigned nj,
		CUlibraryOption *lo, void **lv, unsigned nl) {
	*lib = (CUlibrary)next_handle();
	return CUDA_SUCCESS;
}
STUB(cuLibraryGetKernel)(CUkernel *k, CUlibrary lib, const char *name) {
	int i = 0;
	while (i < NKERNELS && strcmp(stubKernels[i].name, name) != 0) i++;
	*k = (CUkernel)(uintptr_t)(i + 1); // NKERNELS + 1: no parameters
	return CUDA_SUCCESS;
}
STUB(cuKernelGetFunction)(CUfunction *f, CUkernel k) {
	*f = (CUfunction)k;
	return CUDA_SUCCESS;
}
STUB(cuKernelGetParamInfo)(CUkernel k, size_t i, size_t *offset, size_t *size) {
	int j = (int)(uintptr_t)k - 1;
	if (j >= NKERNELS || i >= (size_t)stubKernels[j].n) {
		return CUDA_ERROR_INVALID_VALUE;
	}
	*offset = stubKernels[j].offsets[i];
	*size = stubKernels[j].sizes[i];
	return CUDA_SUCCESS;
}

// The functions the C twin calls by name: the driver's for its kernel, the
// runtime's for the rest.
CUresult cuLibraryLoadData(CUlibrary *lib, const void *image, CUjit_option *jo, void **jv, unsigned nj,
		CUlibraryOption *lo, void **lv, unsigned nl) {
	return stub_cuLibraryLoadData(lib, image, jo, jv, nj, lo, lv, nl);
}
CUresult cuLibraryGetKernel(CUkernel *k, CUlibrary lib, const char *name) { return stub_cuLibraryGetKernel(k, lib, name); }
CUresult cuKernelGetFunction(CUfunction *f, CUkernel k) { return stub_cuKernelGetFunction(f, k); }
CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
		unsigned smem, CUstream s, void **params, void **extra) {
	return CUDA_SUCCESS;
}

cudaError_t cudaSetDevice(int d) { return d == 0 ? cudaSuccess : cudaErrorInvalidDevice; }
cudaError_t cudaDeviceGetAttribute(int *v, enum cudaDeviceAttr attr, int d) {
	return (cudaError_t)stub_cuDeviceGetAttribute(v, (CUdevice_attribute)attr, d);
}
cudaError_t cudaMalloc(void **p, size_t n) {
	*p = malloc(n);
	return *p != NULL ? cudaSuccess : cudaErrorMemoryAllocation;
}
cudaError_t cudaFree(void *p) {
	free(p);
	return cudaSuccess;
}
cudaError_t cudaStreamCreate(cudaStream_t *s) {
	*s = (cudaStream_t)next_handle();
	return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t s) { return cudaSuccess; }
cudaError_t cudaMemsetAsync(void *p, int v, size_t n, cudaStream_t s) { return cudaSuccess; }
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind, cudaStream_t s) {
	return cudaSuccess;
}
const char *cudaGetErrorString(cudaError_t e) { return "stub error"; }
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
