// stubcuda.c is, with highlevel's stand-in driver
// (../../highlevel/testdata/stubdriver.c and stubprocs.c), a stand-in for
// libcuda and libnvrtc in one library, so that the benchmarks of highlevel
// run on a machine without a GPU (stub_test.go builds it and loads it
// through $GOCUDA_CUDA and $GOCUDA_NVRTC, with libcudart missing: highlevel
// needs none), and for the functions the C twin (c/mix.c) calls by name.
// The stand-in does the work on host memory (copies, memsets, its known
// kernels), and the twin's functions forward to it, so that Go and C do
// the same work: what differs in their times is Go's side of each call,
// highlevel's checks and bookkeeping and the cgo transition.
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <nvrtc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

// The stand-in driver's functions that the twin's are.
CUresult stub_cuDeviceGetAttribute(int *v, CUdevice_attribute attr, CUdevice d);
CUresult stub_cuLibraryLoadData(CUlibrary *lib, const void *image, CUjit_option *jo, void **jv, unsigned nj,
	CUlibraryOption *lo, void **lv, unsigned nl);
CUresult stub_cuLibraryGetKernel(CUkernel *k, CUlibrary lib, const char *name);
CUresult stub_cuKernelGetFunction(CUfunction *f, CUkernel k);
CUresult stub_cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
	unsigned smem, CUstream s, void **params, void **extra);
CUresult stub_cuMemsetD8Async(CUdeviceptr p, unsigned char v, size_t n, CUstream s);
CUresult stub_cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s);
CUresult stub_cuMemAlloc(CUdeviceptr *p, size_t n);
CUresult stub_cuMemFree(CUdeviceptr p);
CUresult stub_cuStreamCreate(CUstream *s, unsigned flags);
CUresult stub_cuStreamSynchronize(CUstream s);
CUresult stub_cuInit(unsigned flags);
CUresult stub_cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice d);
CUresult stub_cuCtxSetCurrent(CUcontext ctx);

// The functions the C twin calls by name: the driver's for its kernel and
// its work, the runtime's for its setup.
CUresult cuLibraryLoadData(CUlibrary *lib, const void *image, CUjit_option *jo, void **jv, unsigned nj,
		CUlibraryOption *lo, void **lv, unsigned nl) {
	return stub_cuLibraryLoadData(lib, image, jo, jv, nj, lo, lv, nl);
}
CUresult cuLibraryGetKernel(CUkernel *k, CUlibrary lib, const char *name) { return stub_cuLibraryGetKernel(k, lib, name); }
CUresult cuKernelGetFunction(CUfunction *f, CUkernel k) { return stub_cuKernelGetFunction(f, k); }
CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
		unsigned smem, CUstream s, void **params, void **extra) {
	return stub_cuLaunchKernel(f, gx, gy, gz, bx, by, bz, smem, s, params, extra);
}
CUresult cuMemsetD8Async(CUdeviceptr p, unsigned char v, size_t n, CUstream s) { return stub_cuMemsetD8Async(p, v, n, s); }
CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) { return stub_cuMemcpyAsync(dst, src, n, s); }

// cudaSetDevice makes device d's primary context current, as the runtime
// does on the thread's first call that needs one.
cudaError_t cudaSetDevice(int d) {
	CUcontext ctx;
	if (d != 0 || stub_cuInit(0) != CUDA_SUCCESS || stub_cuDevicePrimaryCtxRetain(&ctx, d) != CUDA_SUCCESS ||
		stub_cuCtxSetCurrent(ctx) != CUDA_SUCCESS) {
		return cudaErrorInvalidDevice;
	}
	return cudaSuccess;
}
cudaError_t cudaDeviceGetAttribute(int *v, enum cudaDeviceAttr attr, int d) {
	return (cudaError_t)stub_cuDeviceGetAttribute(v, (CUdevice_attribute)attr, d);
}
cudaError_t cudaMalloc(void **p, size_t n) {
	return stub_cuMemAlloc((CUdeviceptr *)p, n) == CUDA_SUCCESS ? cudaSuccess : cudaErrorMemoryAllocation;
}
cudaError_t cudaFree(void *p) {
	if (p == NULL) { // cudaFree(0): the runtime's set-up, nothing to free
		return cudaSuccess;
	}
	return stub_cuMemFree((CUdeviceptr)p) == CUDA_SUCCESS ? cudaSuccess : cudaErrorInvalidValue;
}
cudaError_t cudaStreamCreate(cudaStream_t *s) {
	return stub_cuStreamCreate((CUstream *)s, 0) == CUDA_SUCCESS ? cudaSuccess : cudaErrorUnknown;
}
cudaError_t cudaStreamSynchronize(cudaStream_t s) {
	return stub_cuStreamSynchronize((CUstream)s) == CUDA_SUCCESS ? cudaSuccess : cudaErrorUnknown;
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
