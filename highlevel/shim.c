#include "shim.h"

#include <cuda.h>
#include <cuda_profiler_api.h>
#include <errno.h>
#include <string.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <time.h>

// The functions the shim calls, resolved by Go (load.go) through cudart's and
// cudadrv's loaded libraries: RT for libcudart.so.13, DRV for libcuda.so.1.
#define HL_SYMBOLS(RT, DRV) \
	RT(cudaGetDevice) RT(cudaSetDevice) RT(cudaGetDeviceCount) \
	RT(cudaRuntimeGetVersion) RT(cudaDriverGetVersion) RT(cudaDeviceGetAttribute) \
	RT(cudaGetDeviceProperties) RT(cudaMemGetInfo) RT(cudaDeviceSynchronize) \
	RT(cudaPointerGetAttributes) RT(cudaMalloc) RT(cudaMallocManaged) RT(cudaFree) \
	RT(cudaMemPrefetchAsync) RT(cudaMemAdvise) \
	RT(cudaMallocFromPoolAsync) RT(cudaFreeAsync) \
	RT(cudaMemcpy) RT(cudaMemcpyAsync) RT(cudaMemcpyPeer) RT(cudaMemcpyPeerAsync) \
	RT(cudaMemset) RT(cudaMemsetAsync) RT(cudaHostAlloc) RT(cudaFreeHost) \
	RT(cudaHostRegister) RT(cudaHostUnregister) RT(cudaMemPoolCreate) \
	RT(cudaMemPoolDestroy) RT(cudaMemPoolSetAttribute) RT(cudaMemPoolGetAttribute) \
	RT(cudaMemPoolTrimTo) RT(cudaDeviceGetDefaultMemPool) RT(cudaStreamCreateWithFlags) \
	RT(cudaStreamCreateWithPriority) \
	RT(cudaDeviceGetStreamPriorityRange) RT(cudaStreamDestroy) \
	RT(cudaStreamSynchronize) RT(cudaStreamQuery) RT(cudaStreamWaitEvent) \
	RT(cudaStreamAddCallback) RT(cudaLaunchHostFunc) RT(cudaStreamGetCaptureInfo) \
	RT(cudaUserObjectCreate) RT(cudaGraphRetainUserObject) RT(cudaUserObjectRelease) \
	RT(cudaStreamBeginCapture) RT(cudaStreamEndCapture) RT(cudaEventCreateWithFlags) \
	RT(cudaEventDestroy) RT(cudaEventRecord) RT(cudaEventSynchronize) \
	RT(cudaEventQuery) RT(cudaEventElapsedTime) RT(cudaGraphInstantiate) \
	RT(cudaGraphLaunch) RT(cudaGraphUpload) RT(cudaGraphExecUpdate) \
	RT(cudaGraphDestroy) RT(cudaGraphExecDestroy) \
	RT(cudaGraphInstantiateWithParams) \
	RT(cudaProfilerStart) RT(cudaProfilerStop) \
	DRV(cuCtxGetCurrent) DRV(cuCtxSetCurrent) DRV(cuInit) DRV(cuDeviceGet) \
	DRV(cuDevicePrimaryCtxRetain) DRV(cuLibraryLoadData) DRV(cuLibraryUnload) \
	DRV(cuLibraryGetKernel) DRV(cuKernelGetFunction) DRV(cuKernelGetParamInfo) DRV(cuKernelGetAttribute) \
	DRV(cuKernelSetAttribute) DRV(cuLaunchKernel) DRV(cuLaunchKernelEx) \
	DRV(cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags) \
	DRV(cuOccupancyMaxPotentialBlockSizeWithFlags) DRV(cuPointerGetAttributes) \
	DRV(cuIpcGetEventHandle) DRV(cuIpcOpenEventHandle) DRV(cuIpcGetMemHandle) \
	DRV(cuIpcOpenMemHandle_v2) DRV(cuIpcCloseMemHandle) \
	DRV(cuCtxSynchronize) DRV(cuCtxEnablePeerAccess) DRV(cuDevicePrimaryCtxGetState)

#define HL_INDEX(name) HL_##name,
enum { HL_SYMBOLS(HL_INDEX, HL_INDEX) HL_NSYMBOLS };

#define HL_NAME(name) #name,
static const char *const hl_names[] = { HL_SYMBOLS(HL_NAME, HL_NAME) };

static void *hl_fn[HL_NSYMBOLS];

const char *hl_symbol(int i) { return hl_names[i]; }
int hl_nsymbols(void) { return HL_NSYMBOLS; }
void hl_set_symbol(int i, void *p) { hl_fn[i] = p; }

// RT calls a runtime function with its own prototype from cuda_runtime_api.h.
#define RT(name) ((__typeof__(&name))hl_fn[HL_##name])

// DRV calls a driver function with its own prototype from cuda.h.
#define DRV(name) ((__typeof__(&name))hl_fn[HL_##name])

// The driver functions of the shim's context handling.
#define CTX_GET ((int (*)(void **))hl_fn[HL_cuCtxGetCurrent])
#define CTX_SET ((int (*)(void *))hl_fn[HL_cuCtxSetCurrent])
#define DRV_INIT ((int (*)(unsigned))hl_fn[HL_cuInit])
#define DRV_DEVICE_GET ((int (*)(int *, int))hl_fn[HL_cuDeviceGet])
#define DRV_RETAIN ((int (*)(void **, int))hl_fn[HL_cuDevicePrimaryCtxRetain])

// hl_in_callback is set while a stream callback or host function runs on
// this thread: CUDA forbids calling it from there, so every shim function
// refuses, rather than deadlock.
static __thread int hl_in_callback;

// drv_status turns the driver's CUresult r into a shim status.
static int drv_status(int r) { return r == 0 ? 0 : HL_DRIVER_BASE - r; }

// hl_enter makes ctx current (when it is not NULL and not current already)
// and leaves the context to restore in *prev.
static int hl_enter(void *ctx, void **prev) {
	*prev = ctx;
	if (hl_in_callback) {
		return HL_IN_CALLBACK;
	}
	if (ctx == NULL) {
		return 0;
	}
	int r = CTX_GET(prev);
	if (r == 0 && *prev != ctx) {
		r = CTX_SET(ctx);
	}
	if (r != 0) {
		*prev = ctx;
	}
	return drv_status(r);
}

// hl_leave puts back the context that was current before hl_enter. A
// thread that had none keeps ctx: setting a context and unsetting it again
// costs about 0.3 µs, more than many calls it would wrap, and with no
// context current the thread has no device of its own to keep.
static void hl_leave(void *ctx, void *prev) {
	if (prev != ctx && prev != NULL) {
		CTX_SET(prev);
	}
}

// CALL runs one runtime call inside hl_enter/hl_leave and returns its status.
#define CALL(ctx, call) do { \
	void *prev_; \
	int e_ = hl_enter(ctx, &prev_); \
	if (e_ != 0) return e_; \
	int r_ = (int)(call); \
	hl_leave(ctx, prev_); \
	return r_; \
} while (0)

// DCALL is CALL for a driver call, whose CUresult becomes a shim status.
#define DCALL(ctx, call) CALL(ctx, drv_status(call))

#define STREAM(s) ((cudaStream_t)(s))
#define EVENT(e) ((cudaEvent_t)(e))

// hl_primary_context retains dev's primary context through the driver,
// leaving the calling thread's current context and device alone.
int hl_primary_context(int dev, void **ctx) {
	void *prev;
	int r = hl_enter(NULL, &prev);
	if (r != 0) return r;
	int d;
	r = DRV_INIT(0);
	if (r == 0) r = DRV_DEVICE_GET(&d, dev);
	if (r == 0) r = DRV_RETAIN(ctx, d);
	return drv_status(r);
}

int hl_get_device(int *dev) { CALL(NULL, RT(cudaGetDevice)(dev)); }
int hl_set_device(int dev) { CALL(NULL, RT(cudaSetDevice)(dev)); }
int hl_device_count(int *n) { CALL(NULL, RT(cudaGetDeviceCount)(n)); }

int hl_versions(int *runtime, int *driver) {
	void *prev;
	int e = hl_enter(NULL, &prev);
	if (e != 0) return e;
	int r = RT(cudaRuntimeGetVersion)(runtime);
	if (r != 0) return r;
	return RT(cudaDriverGetVersion)(driver);
}

int hl_device_attribute(int *v, int attr, int dev) {
	CALL(NULL, RT(cudaDeviceGetAttribute)(v, (enum cudaDeviceAttr)attr, dev));
}
int hl_device_properties(void *ctx, struct cudaDeviceProp *p, int dev) {
	CALL(ctx, RT(cudaGetDeviceProperties)(p, dev));
}
int hl_mem_info(void *ctx, size_t *free, size_t *total) { CALL(ctx, RT(cudaMemGetInfo)(free, total)); }
int hl_device_synchronize(void *ctx) { CALL(ctx, RT(cudaDeviceSynchronize)()); }

// hl_pointer_device asks the driver, which needs no current context, where
// ptr lives: *type is a CUmemorytype (0 for memory CUDA does not know, such
// as pageable host memory), *managed says whether it is managed memory.
int hl_pointer_device(void *ptr, int *dev, int *type, int *managed) {
	void *prev;
	int e = hl_enter(NULL, &prev);
	if (e != 0) return e;
	CUpointer_attribute attrs[] = {
		CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, CU_POINTER_ATTRIBUTE_IS_MANAGED,
	};
	unsigned int type_ = 0;
	int dev_ = -1;
	unsigned int managed_ = 0;
	void *data[] = {&type_, &dev_, &managed_};
	int r = DRV(cuPointerGetAttributes)(3, attrs, data, (CUdeviceptr)(uintptr_t)ptr);
	*type = (int)type_;
	*dev = dev_;
	*managed = (int)managed_;
	return drv_status(r);
}

int hl_malloc(void *ctx, void **p, size_t n) { CALL(ctx, RT(cudaMalloc)(p, n)); }
int hl_malloc_managed(void *ctx, void **p, size_t n) {
	CALL(ctx, RT(cudaMallocManaged)(p, n, cudaMemAttachGlobal));
}
int hl_free(void *ctx, void *p) { CALL(ctx, RT(cudaFree)(p)); }

int hl_malloc_async(void *ctx, void **p, size_t n, uintptr_t pool, uintptr_t s) {
	CALL(ctx, RT(cudaMallocFromPoolAsync)(p, n, (cudaMemPool_t)pool, STREAM(s)));
}
int hl_free_async(void *ctx, void *p, uintptr_t s) { CALL(ctx, RT(cudaFreeAsync)(p, STREAM(s))); }

int hl_memcpy(void *ctx, void *dst, const void *src, size_t n, int kind, uintptr_t s, int async) {
	if (async) {
		CALL(ctx, RT(cudaMemcpyAsync)(dst, src, n, (enum cudaMemcpyKind)kind, STREAM(s)));
	}
	CALL(ctx, RT(cudaMemcpy)(dst, src, n, (enum cudaMemcpyKind)kind));
}

int hl_memcpy_record(void *ctx, void *dst, const void *src, size_t n, uintptr_t s, uintptr_t e) {
	void *prev;
	int r = hl_enter(ctx, &prev);
	if (r != 0) return r;
	r = RT(cudaMemcpyAsync)(dst, src, n, cudaMemcpyDefault, STREAM(s));
	if (r == 0) r = RT(cudaEventRecord)(EVENT(e), STREAM(s));
	hl_leave(ctx, prev);
	return r;
}

int hl_memcpy_peer(void *ctx, void *dst, int ddev, const void *src, int sdev, size_t n, uintptr_t s, int async) {
	if (async) {
		CALL(ctx, RT(cudaMemcpyPeerAsync)(dst, ddev, src, sdev, n, STREAM(s)));
	}
	CALL(ctx, RT(cudaMemcpyPeer)(dst, ddev, src, sdev, n));
}

int hl_memset(void *ctx, void *p, int v, size_t n, uintptr_t s, int async) {
	if (async) {
		CALL(ctx, RT(cudaMemsetAsync)(p, v, n, STREAM(s)));
	}
	CALL(ctx, RT(cudaMemset)(p, v, n));
}

// Host memory is portable: pinned for every context, whichever one ctx is.
int hl_malloc_host(void *ctx, void **p, size_t n) { CALL(ctx, RT(cudaHostAlloc)(p, n, cudaHostAllocPortable)); }
int hl_free_host(void *ctx, void *p) { CALL(ctx, RT(cudaFreeHost)(p)); }
int hl_host_register(void *ctx, void *p, size_t n) {
	CALL(ctx, RT(cudaHostRegister)(p, n, cudaHostRegisterPortable));
}
int hl_host_unregister(void *ctx, void *p) { CALL(ctx, RT(cudaHostUnregister)(p)); }

int hl_mem_pool_create(void *ctx, uintptr_t *pool, int dev) {
	struct cudaMemPoolProps props = {0};
	props.allocType = cudaMemAllocationTypePinned;
	props.location.type = cudaMemLocationTypeDevice;
	props.location.id = dev;
	CALL(ctx, RT(cudaMemPoolCreate)((cudaMemPool_t *)pool, &props));
}
int hl_default_mem_pool(void *ctx, uintptr_t *pool, int dev) {
	CALL(ctx, RT(cudaDeviceGetDefaultMemPool)((cudaMemPool_t *)pool, dev));
}
int hl_mem_pool_destroy(void *ctx, uintptr_t pool) { CALL(ctx, RT(cudaMemPoolDestroy)((cudaMemPool_t)pool)); }
int hl_mem_pool_set_attribute(void *ctx, uintptr_t pool, int attr, uint64_t v) {
	CALL(ctx, RT(cudaMemPoolSetAttribute)((cudaMemPool_t)pool, (enum cudaMemPoolAttr)attr, &v));
}
int hl_mem_pool_get_attribute(void *ctx, uintptr_t pool, int attr, uint64_t *v) {
	CALL(ctx, RT(cudaMemPoolGetAttribute)((cudaMemPool_t)pool, (enum cudaMemPoolAttr)attr, v));
}
int hl_mem_pool_trim(void *ctx, uintptr_t pool, size_t keep) {
	CALL(ctx, RT(cudaMemPoolTrimTo)((cudaMemPool_t)pool, keep));
}

int hl_stream_create(void *ctx, uintptr_t *s, unsigned flags, int priority) {
	if (priority == 0) {
		CALL(ctx, RT(cudaStreamCreateWithFlags)((cudaStream_t *)s, flags));
	}
	CALL(ctx, RT(cudaStreamCreateWithPriority)((cudaStream_t *)s, flags, priority));
}
int hl_stream_priority_range(void *ctx, int *least, int *greatest) {
	CALL(ctx, RT(cudaDeviceGetStreamPriorityRange)(least, greatest));
}
int hl_stream_destroy(void *ctx, uintptr_t s) { CALL(ctx, RT(cudaStreamDestroy)(STREAM(s))); }
int hl_stream_synchronize(void *ctx, uintptr_t s) { CALL(ctx, RT(cudaStreamSynchronize)(STREAM(s))); }
int hl_stream_query(void *ctx, uintptr_t s) { CALL(ctx, RT(cudaStreamQuery)(STREAM(s))); }
int hl_stream_wait_event(void *ctx, uintptr_t s, uintptr_t e) {
	CALL(ctx, RT(cudaStreamWaitEvent)(STREAM(s), EVENT(e), 0));
}

// Go's side of the callbacks (callback.go). keep says whether the callback
// may run again (it is a node of a graph), so that Go keeps its handle.
extern void hlRunCallback(uintptr_t h, int status, int keep);

static void CUDART_CB hl_host_fn(void *h) {
	hl_in_callback = 1;
	hlRunCallback((uintptr_t)h, 0, 0);
	hl_in_callback = 0;
}

static void CUDART_CB hl_host_fn_node(void *h) {
	hl_in_callback = 1;
	hlRunCallback((uintptr_t)h, 0, 1);
	hl_in_callback = 0;
}

static void CUDART_CB hl_stream_callback(cudaStream_t s, cudaError_t status, void *h) {
	hl_in_callback = 1;
	hlRunCallback((uintptr_t)h, (int)status, 0);
	hl_in_callback = 0;
}

int hl_in_callback_now(void) { return hl_in_callback; }

// The handles of graph host nodes whose graphs are gone. CUDA destroys a
// user object on a thread of its own, maybe inside another CUDA call, so
// the destructor only queues the handle here; Go deletes it later
// (hl_dead_handles).
static pthread_mutex_t hl_dead_mu = PTHREAD_MUTEX_INITIALIZER;
static uintptr_t *hl_dead;
static int hl_ndead, hl_capdead;

static void CUDART_CB hl_handle_destroy(void *h) {
	pthread_mutex_lock(&hl_dead_mu);
	if (hl_ndead == hl_capdead) {
		int c = hl_capdead ? 2 * hl_capdead : 64;
		uintptr_t *d = realloc(hl_dead, c * sizeof *d);
		if (d == NULL) { // keep the handle: a leak, never a crash
			pthread_mutex_unlock(&hl_dead_mu);
			return;
		}
		hl_dead = d;
		hl_capdead = c;
	}
	hl_dead[hl_ndead++] = (uintptr_t)h;
	pthread_mutex_unlock(&hl_dead_mu);
}

// hl_dead_handles moves up to max queued handles to out and returns their
// number.
int hl_dead_handles(uintptr_t *out, int max) {
	pthread_mutex_lock(&hl_dead_mu);
	int n = hl_ndead < max ? hl_ndead : max;
	hl_ndead -= n;
	for (int i = 0; i < n; i++) out[i] = hl_dead[hl_ndead + i];
	pthread_mutex_unlock(&hl_dead_mu);
	return n;
}

int hl_stream_add_callback(void *ctx, uintptr_t s, uintptr_t h) {
	CALL(ctx, RT(cudaStreamAddCallback)(STREAM(s), hl_stream_callback, (void *)h, 0));
}

// hl_launch_host_func queues a host function. While s is capturing, into
// its own graph or, forked, into another stream's, the function becomes a
// node of the graph being captured, which may run at every launch of every
// instantiation: the handle then belongs to a CUDA user object that the
// graph owns, destroyed once the graph, its instantiations and their
// launches in flight are all gone. *owned says whether CUDA took the handle
// (the Go side deletes it on an error when it did not).
int hl_launch_host_func(void *ctx, uintptr_t s, uintptr_t h, int *owned) {
	*owned = 0;
	void *prev;
	int r = hl_enter(ctx, &prev);
	if (r != 0) return r;
	enum cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
	cudaGraph_t g = NULL;
	r = RT(cudaStreamGetCaptureInfo)(STREAM(s), &st, NULL, &g, NULL, NULL, NULL);
	if (r == 0 && st == cudaStreamCaptureStatusActive) {
		cudaUserObject_t obj;
		r = RT(cudaUserObjectCreate)(&obj, (void *)h, hl_handle_destroy, 1, cudaUserObjectNoDestructorSync);
		if (r == 0) {
			*owned = 1; // the user object deletes it
			r = RT(cudaGraphRetainUserObject)(g, obj, 1, cudaGraphUserObjectMove);
			if (r != 0) {
				RT(cudaUserObjectRelease)(obj, 1);
			} else {
				r = RT(cudaLaunchHostFunc)(STREAM(s), hl_host_fn_node, (void *)h);
			}
		}
	} else if (r == 0) {
		r = RT(cudaLaunchHostFunc)(STREAM(s), hl_host_fn, (void *)h);
		*owned = r == 0;
	}
	hl_leave(ctx, prev);
	return r;
}

int hl_stream_begin_capture(void *ctx, uintptr_t s, int mode) {
	CALL(ctx, RT(cudaStreamBeginCapture)(STREAM(s), (enum cudaStreamCaptureMode)mode));
}
int hl_stream_end_capture(void *ctx, uintptr_t s, uintptr_t *g) {
	CALL(ctx, RT(cudaStreamEndCapture)(STREAM(s), (cudaGraph_t *)g));
}

int hl_event_create(void *ctx, uintptr_t *e, unsigned flags) {
	CALL(ctx, RT(cudaEventCreateWithFlags)((cudaEvent_t *)e, flags));
}
int hl_event_destroy(void *ctx, uintptr_t e) { CALL(ctx, RT(cudaEventDestroy)(EVENT(e))); }
int hl_event_record(void *ctx, uintptr_t e, uintptr_t s) { CALL(ctx, RT(cudaEventRecord)(EVENT(e), STREAM(s))); }
int hl_event_synchronize(void *ctx, uintptr_t e) { CALL(ctx, RT(cudaEventSynchronize)(EVENT(e))); }
int hl_event_query(void *ctx, uintptr_t e) { CALL(ctx, RT(cudaEventQuery)(EVENT(e))); }
int hl_event_elapsed(void *ctx, float *ms, uintptr_t start, uintptr_t end) {
	CALL(ctx, RT(cudaEventElapsedTime)(ms, EVENT(start), EVENT(end)));
}

// The waiter's wake-ups (wait.go): a host function queued behind an event
// on a helper stream of the waiter's.
extern void hlWake(uintptr_t h);

static void CUDART_CB hl_wake_fn(void *h) {
	hl_in_callback = 1;
	hlWake((uintptr_t)h);
	hl_in_callback = 0;
}

// hl_wake_after queues on the helper stream s a wait for e, then a host
// function that wakes the request behind handle h.
int hl_wake_after(void *ctx, uintptr_t s, uintptr_t e, uintptr_t h) {
	void *prev;
	int r = hl_enter(ctx, &prev);
	if (r != 0) return r;
	r = RT(cudaStreamWaitEvent)(STREAM(s), EVENT(e), 0);
	if (r == 0) r = RT(cudaLaunchHostFunc)(STREAM(s), hl_wake_fn, (void *)h);
	hl_leave(ctx, prev);
	return r;
}

// hl_ctx_current returns the calling thread's current context (NULL for
// none) and hl_ctx_set makes ctx current (NULL: none), for Device.Do.
int hl_ctx_current(void **ctx) {
	void *prev;
	int e = hl_enter(NULL, &prev);
	if (e != 0) return e;
	return drv_status(CTX_GET(ctx));
}
int hl_ctx_set(void *ctx) {
	void *prev;
	int e = hl_enter(NULL, &prev);
	if (e != 0) return e;
	return drv_status(CTX_SET(ctx));
}
int hl_ctx_synchronize(void *ctx) { DCALL(ctx, DRV(cuCtxSynchronize)()); }
int hl_enable_peer_access(void *ctx, void *peer) { DCALL(ctx, DRV(cuCtxEnablePeerAccess)((CUcontext)peer, 0)); }

// hl_primary_context_active reports whether dev's primary context is
// active, without making it.
int hl_primary_context_active(int dev, int *active) {
	void *prev;
	int e = hl_enter(NULL, &prev);
	if (e != 0) return e;
	int d;
	unsigned flags;
	int r = DRV_DEVICE_GET(&d, dev);
	if (r == 0) r = DRV(cuDevicePrimaryCtxGetState)(d, &flags, active);
	return drv_status(r);
}

// hl_event_query_many queries n events in one cgo call, for the waiter.
void hl_event_query_many(int n, void **ctxs, uintptr_t *events, int *status) {
	void *prev = NULL;
	if (hl_in_callback) {
		for (int i = 0; i < n; i++) status[i] = HL_IN_CALLBACK;
		return;
	}
	CTX_GET(&prev);
	void *cur = prev;
	for (int i = 0; i < n; i++) {
		if (ctxs[i] != cur) {
			CTX_SET(ctxs[i]);
			cur = ctxs[i];
		}
		status[i] = RT(cudaEventQuery)(EVENT(events[i]));
	}
	if (cur != prev) CTX_SET(prev);
}

// hl_graph_instantiate instantiates g with cudaGraphInstantiateFlags flags,
// uploading it on stream upload when flags has cudaGraphInstantiateFlagUpload;
// *result is the cudaGraphInstantiateResult.
int hl_graph_instantiate(void *ctx, uintptr_t *exec, uintptr_t g, unsigned long long flags, uintptr_t upload,
		int *result) {
	cudaGraphInstantiateParams p = {.flags = flags, .uploadStream = STREAM(upload)};
	void *prev;
	int r = hl_enter(ctx, &prev);
	if (r != 0) return r;
	r = RT(cudaGraphInstantiateWithParams)((cudaGraphExec_t *)exec, (cudaGraph_t)g, &p);
	*result = (int)p.result_out;
	hl_leave(ctx, prev);
	return r;
}
int hl_graph_launch(void *ctx, uintptr_t exec, uintptr_t s) {
	CALL(ctx, RT(cudaGraphLaunch)((cudaGraphExec_t)exec, STREAM(s)));
}
int hl_graph_upload(void *ctx, uintptr_t exec, uintptr_t s) {
	CALL(ctx, RT(cudaGraphUpload)((cudaGraphExec_t)exec, STREAM(s)));
}
int hl_graph_update(void *ctx, uintptr_t exec, uintptr_t g, int *result) {
	cudaGraphExecUpdateResultInfo info = {0};
	void *prev;
	int r = hl_enter(ctx, &prev);
	if (r != 0) return r;
	r = RT(cudaGraphExecUpdate)((cudaGraphExec_t)exec, (cudaGraph_t)g, &info);
	*result = info.result;
	hl_leave(ctx, prev);
	return r;
}
int hl_graph_destroy(void *ctx, uintptr_t g) { CALL(ctx, RT(cudaGraphDestroy)((cudaGraph_t)g)); }
int hl_graph_exec_destroy(void *ctx, uintptr_t exec) { CALL(ctx, RT(cudaGraphExecDestroy)((cudaGraphExec_t)exec)); }

int hl_profiler(void *ctx, int start) {
	if (start) {
		CALL(ctx, RT(cudaProfilerStart)());
	}
	CALL(ctx, RT(cudaProfilerStop)());
}

// Kernels go through the driver: a CUkernel of a context-independent
// CUlibrary, launched as a CUfunction in the stream's context.
#define KERNEL(k) ((CUkernel)(k))
#define FUNC(k) ((CUfunction)(k))

// hl_library_load loads a library, which needs no context: only an
// initialized driver.
int hl_library_load(void *ctx, uintptr_t *lib, const void *image) {
	void *prev;
	int r = hl_enter(ctx, &prev);
	if (r != 0) return r;
	r = DRV_INIT(0);
	if (r == 0) r = DRV(cuLibraryLoadData)((CUlibrary *)lib, image, NULL, NULL, 0, NULL, NULL, 0);
	hl_leave(ctx, prev);
	return drv_status(r);
}
int hl_library_unload(void *ctx, uintptr_t lib) { DCALL(ctx, DRV(cuLibraryUnload)((CUlibrary)lib)); }
int hl_library_get_kernel(void *ctx, uintptr_t *k, uintptr_t lib, const char *name) {
	DCALL(ctx, DRV(cuLibraryGetKernel)((CUkernel *)k, (CUlibrary)lib, name));
}

// hl_kernel_function returns k's function in ctx, which launches take:
// launching the CUkernel itself makes the driver look that up each time.
int hl_kernel_function(void *ctx, uintptr_t *f, uintptr_t k) {
	DCALL(ctx, DRV(cuKernelGetFunction)((CUfunction *)f, KERNEL(k)));
}

// hl_kernel_params stores the offset and size of each of k's parameters,
// at most max, and their number in *n.
int hl_kernel_params(void *ctx, uintptr_t k, uint32_t *offsets, uint32_t *sizes, int max, int *n) {
	void *prev;
	int r = hl_enter(ctx, &prev);
	if (r != 0) return r;
	*n = 0;
	for (int i = 0; i < max; i++) {
		size_t off, size;
		CUresult e = DRV(cuKernelGetParamInfo)(KERNEL(k), i, &off, &size);
		if (e == CUDA_ERROR_INVALID_VALUE) {
			break; // no parameter i
		}
		if (e != CUDA_SUCCESS) {
			hl_leave(ctx, prev);
			return drv_status(e);
		}
		offsets[i] = (uint32_t)off;
		sizes[i] = (uint32_t)size;
		*n = i + 1;
	}
	hl_leave(ctx, prev);
	return 0;
}

// hl_kernel_attribute gets (set 0) or sets k's attribute on device ordinal
// dev.
int hl_kernel_attribute(void *ctx, int set, int *v, int attr, uintptr_t k, int dev) {
	void *prev;
	int r = hl_enter(ctx, &prev);
	if (r != 0) return r;
	CUdevice d;
	r = DRV_DEVICE_GET(&d, dev);
	if (r == 0) {
		r = set ? DRV(cuKernelSetAttribute)((CUfunction_attribute)attr, *v, KERNEL(k), d)
			: DRV(cuKernelGetAttribute)(v, (CUfunction_attribute)attr, KERNEL(k), d);
	}
	hl_leave(ctx, prev);
	return drv_status(r);
}

// hl_launch launches f, a kernel's function in context ctx (an integer, so
// that cgo need not check it for Go pointers at each launch), with the
// arguments at the given offsets of args.
// dims holds the grid, block and cluster dimensions (x, y, z each); a
// cluster of 0 and cooperative 0 take cuLaunchKernel, the rest
// cuLaunchKernelEx.
int hl_launch(uintptr_t ctxv, uintptr_t f, const uint32_t *dims, uint32_t smem, uintptr_t s, int cooperative,
		char *args, const uint32_t *offsets, int n) {
	void *ctx = (void *)ctxv;
	void *params[n > 0 ? n : 1];
	for (int i = 0; i < n; i++) {
		params[i] = args + offsets[i];
	}
	void *prev;
	int r = hl_enter(ctx, &prev);
	if (r != 0) return r;
	if (dims[6] == 0 && !cooperative) {
		r = DRV(cuLaunchKernel)(FUNC(f), dims[0], dims[1], dims[2], dims[3], dims[4], dims[5], smem,
			(CUstream)s, params, NULL);
	} else {
		CUlaunchAttribute attrs[2];
		CUlaunchConfig cfg = {
			.gridDimX = dims[0], .gridDimY = dims[1], .gridDimZ = dims[2],
			.blockDimX = dims[3], .blockDimY = dims[4], .blockDimZ = dims[5],
			.sharedMemBytes = smem, .hStream = (CUstream)s, .attrs = attrs,
		};
		if (dims[6] != 0) {
			attrs[cfg.numAttrs].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
			attrs[cfg.numAttrs].value.clusterDim.x = dims[6];
			attrs[cfg.numAttrs].value.clusterDim.y = dims[7];
			attrs[cfg.numAttrs].value.clusterDim.z = dims[8];
			cfg.numAttrs++;
		}
		if (cooperative) {
			attrs[cfg.numAttrs].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
			attrs[cfg.numAttrs].value.cooperative = 1;
			cfg.numAttrs++;
		}
		r = DRV(cuLaunchKernelEx)(&cfg, FUNC(f), params, NULL);
	}
	hl_leave(ctx, prev);
	return drv_status(r);
}

int hl_occupancy_blocks(void *ctx, int *n, uintptr_t k, int block, size_t smem) {
	DCALL(ctx, DRV(cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags)(n, FUNC(k), block, smem, CU_OCCUPANCY_DEFAULT));
}
int hl_occupancy_block_size(void *ctx, int *grid, int *block, uintptr_t k, size_t smem, int limit) {
	DCALL(ctx, DRV(cuOccupancyMaxPotentialBlockSizeWithFlags)(grid, block, FUNC(k), NULL, smem, limit, CU_OCCUPANCY_DEFAULT));
}

// The waiter's poller sleeps here between rounds, for at most ns
// nanoseconds, until hl_poll_wake is called. The thread's timer slack is
// set to 1 ns first (Linux's default, 50 µs, would add that much to every
// short sleep).
static pthread_mutex_t hl_poll_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t hl_poll_cv;
static pthread_once_t hl_poll_once = PTHREAD_ONCE_INIT;
static int hl_poll_woken;

static void hl_poll_init(void) {
	pthread_condattr_t a;
	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(&hl_poll_cv, &a);
	pthread_condattr_destroy(&a);
}

void hl_poll_sleep(long ns) {
	pthread_once(&hl_poll_once, hl_poll_init);
	prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	t.tv_sec += ns / 1000000000;
	t.tv_nsec += ns % 1000000000;
	if (t.tv_nsec >= 1000000000) {
		t.tv_sec++;
		t.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&hl_poll_mu);
	while (!hl_poll_woken) {
		if (pthread_cond_timedwait(&hl_poll_cv, &hl_poll_mu, &t) == ETIMEDOUT) break;
	}
	hl_poll_woken = 0;
	pthread_mutex_unlock(&hl_poll_mu);
	prctl(PR_SET_TIMERSLACK, 0UL, 0UL, 0UL, 0UL); // the thread's default again
}

void hl_poll_wake(void) {
	pthread_once(&hl_poll_once, hl_poll_init);
	pthread_mutex_lock(&hl_poll_mu);
	hl_poll_woken = 1;
	pthread_cond_signal(&hl_poll_cv);
	pthread_mutex_unlock(&hl_poll_mu);
}

// Managed memory: prefetch and advice, with the location as CUDA 13 takes
// it (a cudaMemLocation, not a device ordinal).
int hl_mem_prefetch(void *ctx, const void *p, size_t n, int loc_type, int loc_id, uintptr_t s) {
	struct cudaMemLocation loc = {(enum cudaMemLocationType)loc_type, loc_id};
	CALL(ctx, RT(cudaMemPrefetchAsync)(p, n, loc, 0, STREAM(s)));
}
int hl_mem_advise(void *ctx, const void *p, size_t n, int advice, int loc_type, int loc_id) {
	struct cudaMemLocation loc = {(enum cudaMemLocationType)loc_type, loc_id};
	CALL(ctx, RT(cudaMemAdvise)(p, n, (enum cudaMemoryAdvise)advice, loc));
}

// Interprocess sharing (ipc.go): events and device memory exported as
// CU_IPC_HANDLE_SIZE bytes that another process opens.

int hl_ipc_event_handle(void *ctx, uintptr_t e, void *handle) {
	DCALL(ctx, DRV(cuIpcGetEventHandle)((CUipcEventHandle *)handle, (CUevent)e));
}

int hl_ipc_open_event(void *ctx, uintptr_t *e, const void *handle) {
	CUipcEventHandle h;
	memcpy(&h, handle, sizeof h);
	DCALL(ctx, DRV(cuIpcOpenEventHandle)((CUevent *)e, h));
}

// hl_ipc_mem_handle exports the allocation that holds ptr: *offset is ptr's
// offset in it. *capable is 0, and nothing is exported, when the allocation
// cannot be shared this way (managed memory, or memory of a CUDA memory
// pool).
int hl_ipc_mem_handle(void *ctx, void *ptr, void *handle, size_t *offset, int *capable) {
	void *prev;
	int r = hl_enter(ctx, &prev);
	if (r != 0) return r;
	CUpointer_attribute attrs[] = {
		CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
	};
	unsigned int capable_ = 0; // a boolean, written as 1 or 4 bytes
	CUdeviceptr base = 0;
	void *data[] = {&capable_, &base};
	r = DRV(cuPointerGetAttributes)(2, attrs, data, (CUdeviceptr)(uintptr_t)ptr);
	*capable = capable_ != 0;
	if (r == 0 && capable_ != 0) {
		*offset = (size_t)((CUdeviceptr)(uintptr_t)ptr - base);
		r = DRV(cuIpcGetMemHandle)((CUipcMemHandle *)handle, base);
	}
	hl_leave(ctx, prev);
	return drv_status(r);
}

// hl_ipc_open_mem maps the allocation an exported handle names, at *base,
// and stores the size of the mapping in *size.
int hl_ipc_open_mem(void *ctx, void **base, const void *handle, size_t *size) {
	CUipcMemHandle h;
	memcpy(&h, handle, sizeof h);
	void *prev;
	int r = hl_enter(ctx, &prev);
	if (r != 0) return r;
	CUdeviceptr p = 0;
	r = DRV(cuIpcOpenMemHandle_v2)(&p, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
	if (r == 0) {
		CUpointer_attribute attr = CU_POINTER_ATTRIBUTE_RANGE_SIZE;
		size_t n = 0;
		void *data = &n;
		r = DRV(cuPointerGetAttributes)(1, &attr, &data, p);
		if (r != 0) {
			DRV(cuIpcCloseMemHandle)(p);
		}
		*size = n;
	}
	*base = (void *)(uintptr_t)p;
	hl_leave(ctx, prev);
	return drv_status(r);
}

int hl_ipc_close_mem(void *ctx, void *base) { DCALL(ctx, DRV(cuIpcCloseMemHandle)((CUdeviceptr)(uintptr_t)base)); }
