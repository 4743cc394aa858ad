#include "shim.h"

#include <cudaTypedefs.h>
#include <cudaProfilerTypedefs.h>
#include <errno.h>
#include <string.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <time.h>

#include "cudalogs.h"

// HL_LATE_SYMBOLS lists, as HL_SYMBOLS does, the driver functions the shim
// calls that came after the CUDA headers of some major it is built with:
// gen takes each proc's version from every major's cudaTypedefs.h, and
// CUDA 12.6's has no cuLogsRegisterCallback (CUDA 12.9), so the shim lists
// it here, at the version that introduced it, with its typedef from
// cudalogs.h where the headers lack it. They follow HL_SYMBOLS' in the
// shim's order (hl_symbol) and are resolved as theirs are.
#define HL_LATE_SYMBOLS(X) \
	X(cuLogsRegisterCallback, 12090)

// Each function is a pointer of its typedef's type, named after it: the
// shim calls DRV(cuMemAlloc)(...), checked by the compiler against
// PFN_cuMemAlloc_v3020.
#define HL_POINTER(name, version) static PFN_##name##_v##version hl_fn_##name;
HL_SYMBOLS(HL_POINTER)
HL_LATE_SYMBOLS(HL_POINTER)

#define HL_INDEX(name, version) HL_I_##name,
enum { HL_SYMBOLS(HL_INDEX) HL_LATE_SYMBOLS(HL_INDEX) HL_NSYMBOLS };

#define HL_ENTRY(name, version) {#name, version, (void **)&hl_fn_##name},
static const struct {
	const char *name;
	int version;
	void **fn;
} hl_symbols[] = { HL_SYMBOLS(HL_ENTRY) HL_LATE_SYMBOLS(HL_ENTRY) };

#define DRV(name) hl_fn_##name

const char *hl_symbol(int i) { return hl_symbols[i].name; }
int hl_symbol_version(int i) { return hl_symbols[i].version; }
int hl_nsymbols(void) { return HL_NSYMBOLS; }

// hl_resolve takes symbol i's entry point from get_proc_address, the
// driver's cuGetProcAddress_v2, at the symbol's version, with the legacy
// default stream's semantics (the functions without _ptsz/_ptds), as C
// compiled without CUDA_API_PER_THREAD_DEFAULT_STREAM calls them. *status
// is the CUdriverProcAddressQueryResult.
int hl_resolve(void *get_proc_address, int i, int *status) {
	CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
	void *fn = NULL;
	CUresult r = ((PFN_cuGetProcAddress_v12000)get_proc_address)(hl_symbols[i].name, &fn, hl_symbols[i].version,
		CU_GET_PROC_ADDRESS_LEGACY_STREAM, &st);
	*status = (int)st;
	if (r == CUDA_SUCCESS && st == CU_GET_PROC_ADDRESS_SUCCESS && fn == NULL) {
		r = CUDA_ERROR_NOT_FOUND;
	}
	if (r == CUDA_SUCCESS && st == CU_GET_PROC_ADDRESS_SUCCESS) {
		*hl_symbols[i].fn = fn;
	}
	return (int)r;
}

int hl_driver_version(int *v) { return DRV(cuDriverGetVersion)(v); }

// NEED returns from the calling shim function when the driver lacks a
// function that came after HL_BASE_VERSION.
#define NEED(name) do { \
	if (DRV(name) == NULL) return HL_MISSING_BASE - HL_I_##name; \
} while (0)

// hl_in_callback is set while a callback's Go function runs on this
// thread: a dispatcher's, for the CUDA thread that waits for it
// (hl_next_job), or CUDA's own, for the waiter's wake-ups (hl_wake_fn).
// CUDA forbids calling it from there, so every shim function refuses,
// rather than deadlock.
static __thread int hl_in_callback;

// hl_calls counts the shim's calls on this thread, each from its hl_enter
// (a function that returns a CUresult of its own before, or that makes
// several calls whose statuses it returns apart, counts too): the
// driver's log lines are stamped with it (the section "Logs"), so that a
// failure's lines are told from an earlier call's. It costs an increment
// of a thread-local variable per call.
static __thread unsigned long long hl_calls;

// hl_log_quiet is set around a driver call whose failure the shim expects
// and handles itself (a probe): the driver's lines for it are dropped.
static __thread int hl_log_quiet;

// hl_enter makes ctx current (when it is not NULL and not current already)
// and leaves the context to restore in *prev.
static int hl_enter(void *ctx, void **prev) {
	hl_calls++;
	*prev = ctx;
	if (hl_in_callback) {
		return HL_IN_CALLBACK;
	}
	if (ctx == NULL) {
		return 0;
	}
	CUcontext cur = NULL;
	CUresult r = DRV(cuCtxGetCurrent)(&cur);
	if (r == CUDA_SUCCESS && cur != (CUcontext)ctx) {
		r = DRV(cuCtxSetCurrent)((CUcontext)ctx);
	}
	if (r == CUDA_SUCCESS) {
		*prev = cur;
	}
	return (int)r;
}

// hl_leave puts back the context that was current before hl_enter. A
// thread that had none keeps ctx: setting a context and unsetting it again
// costs about 0.3 µs, more than many calls it would wrap, and with no
// context current the thread has no device of its own to keep.
static void hl_leave(void *ctx, void *prev) {
	if (prev != ctx && prev != NULL) {
		DRV(cuCtxSetCurrent)((CUcontext)prev);
	}
}

// While a capture in CU_STREAM_CAPTURE_MODE_GLOBAL is in progress, CUDA
// refuses potentially unsafe calls from every thread, but driver 580
// crashes where such calls race the capture on other threads: a C program
// with one thread capturing in global mode and one calling
// cuMemAllocAsync, cuMemAlloc, cuStreamQuery, cuEventSynchronize or
// cuGraphInstantiate on streams and objects of its own dies of SIGSEGV
// within seconds, in calls of every kind, while in the thread-local and
// relaxed modes the same programs run clean. So the shim hands the driver
// a global capture as a thread-local one, which refuses unsafe calls on
// the capturing thread, and refuses them on the other threads itself,
// with HL_CAPTURING: they hold hl_global_mu shared (hl_enter_gated), and a
// global capture begins only once those in progress have ended.
// hl_global_n counts the global captures in progress.
//
// Work on the legacy default stream waits for every blocking stream, which
// CUDA forbids while one captures, in every mode; and the driver crashed
// where such work raced a capture on another thread. So while any capture
// is in progress (hl_capture_n), the shim refuses the calls on the legacy
// default stream too (hl_enter_on, for stream 0).
static pthread_rwlock_t hl_global_mu = PTHREAD_RWLOCK_INITIALIZER;
static int hl_global_n, hl_capture_n;

// hl_gate is hl_enter for a call that a global capture forbids, and, with
// legacy, any capture.
static int hl_gate(void *ctx, void **prev, int legacy) {
	*prev = ctx;
	if (hl_in_callback) {
		return HL_IN_CALLBACK;
	}
	pthread_rwlock_rdlock(&hl_global_mu);
	int r = hl_global_n > 0 || (legacy && hl_capture_n > 0) ? HL_CAPTURING : hl_enter(ctx, prev);
	if (r != 0) {
		pthread_rwlock_unlock(&hl_global_mu);
	}
	return r;
}

static int hl_enter_gated(void *ctx, void **prev) { return hl_gate(ctx, prev, 0); }

// hl_enter_exclusive is hl_enter_gated for the destruction of a stream or
// a memory pool: it holds hl_global_mu exclusively, so that no call on the
// legacy default stream runs meanwhile. Such a call waits for every
// blocking stream of its context, and the driver crashed (SIGSEGV inside a
// synchronous cuMemcpy) where one raced the destruction of busy streams
// and of pools with frees queued on other threads. hl_leave_gated ends it.
static int hl_enter_exclusive(void *ctx, void **prev) {
	*prev = ctx;
	if (hl_in_callback) {
		return HL_IN_CALLBACK;
	}
	pthread_rwlock_wrlock(&hl_global_mu);
	int r = hl_global_n > 0 ? HL_CAPTURING : hl_enter(ctx, prev);
	if (r != 0) {
		pthread_rwlock_unlock(&hl_global_mu);
	}
	return r;
}

static void hl_leave_gated(void *ctx, void *prev) {
	hl_leave(ctx, prev);
	pthread_rwlock_unlock(&hl_global_mu);
}

// hl_enter_on and hl_leave_on are hl_enter and hl_leave for a call on
// stream s, gated when s is the legacy default stream.
static int hl_enter_on(void *ctx, void **prev, uintptr_t s) {
	return s == 0 ? hl_gate(ctx, prev, 1) : hl_enter(ctx, prev);
}

static void hl_leave_on(void *ctx, void *prev, uintptr_t s) {
	if (s == 0) {
		hl_leave_gated(ctx, prev);
	} else {
		hl_leave(ctx, prev);
	}
}

// hl_capture_end counts a capture as ended, global or not.
void hl_capture_end(int global) {
	pthread_rwlock_wrlock(&hl_global_mu);
	hl_capture_n--;
	hl_global_n -= global;
	pthread_rwlock_unlock(&hl_global_mu);
}

// CALL runs one driver call inside hl_enter/hl_leave and returns its
// CUresult; GATED does it inside hl_enter_gated/hl_leave_gated, SCALL, for
// a call on stream s, inside hl_enter_on/hl_leave_on. ENTERED is what they
// share: enter and leave are the calls that begin and end it.
#define ENTERED(enter, leave, call) do { \
	void *prev_; \
	int e_ = enter; \
	if (e_ != 0) return e_; \
	int r_ = (int)(call); \
	leave; \
	return r_; \
} while (0)
#define CALL(ctx, call) ENTERED(hl_enter(ctx, &prev_), hl_leave(ctx, prev_), call)
#define GATED(ctx, call) ENTERED(hl_enter_gated(ctx, &prev_), hl_leave_gated(ctx, prev_), call)
#define SCALL(ctx, s, call) ENTERED(hl_enter_on(ctx, &prev_, s), hl_leave_on(ctx, prev_, s), call)

#define STREAM(s) ((CUstream)(s))
#define EVENT(e) ((CUevent)(e))
#define DPTR(p) ((CUdeviceptr)(uintptr_t)(p))
#define NODE(node) ((CUgraphNode *)(node))
#define DEPS(deps) ((const CUgraphNode *)(deps))

// hl_primary_context retains dev's primary context, leaving the calling
// thread's current context alone.
int hl_primary_context(int dev, void **ctx) {
	void *prev;
	int r = hl_enter(NULL, &prev);
	if (r != 0) return r;
	CUdevice d;
	r = DRV(cuInit)(0);
	if (r == 0) r = DRV(cuDeviceGet)(&d, dev);
	if (r == 0) r = DRV(cuDevicePrimaryCtxRetain)((CUcontext *)ctx, d);
	return r;
}

// hl_current_device stores the ordinal of the device of the calling
// thread's current context in *dev, or -1 when the thread has none.
int hl_current_device(int *dev) {
	*dev = -1;
	void *prev;
	int r = hl_enter(NULL, &prev);
	if (r != 0) return r;
	CUcontext c = NULL;
	r = DRV(cuCtxGetCurrent)(&c);
	if (r != 0 || c == NULL) return r;
	CUdevice d;
	int n = 0;
	r = DRV(cuCtxGetDevice)(&d);
	if (r == 0) r = DRV(cuDeviceGetCount)(&n);
	for (int i = 0; r == 0 && i < n; i++) { // the handle's ordinal
		CUdevice di;
		r = DRV(cuDeviceGet)(&di, i);
		if (r == 0 && di == d) {
			*dev = i;
			break;
		}
	}
	return r;
}

int hl_device_count(int *n) {
	void *prev;
	int r = hl_enter(NULL, &prev);
	if (r != 0) return r;
	r = DRV(cuInit)(0);
	if (r == 0) r = DRV(cuDeviceGetCount)(n);
	return r;
}

// hl_device_attributes reads n attributes of device ordinal dev.
int hl_device_attributes(int dev, const int *attrs, int *values, int n) {
	void *prev;
	int r = hl_enter(NULL, &prev);
	if (r != 0) return r;
	CUdevice d;
	r = DRV(cuDeviceGet)(&d, dev);
	for (int i = 0; r == 0 && i < n; i++) {
		r = DRV(cuDeviceGetAttribute)(&values[i], (CUdevice_attribute)attrs[i], d);
	}
	return r;
}

int hl_device_name(int dev, char *name, int n) {
	void *prev;
	int r = hl_enter(NULL, &prev);
	if (r != 0) return r;
	CUdevice d;
	r = DRV(cuDeviceGet)(&d, dev);
	if (r == 0) r = DRV(cuDeviceGetName)(name, n, d);
	return r;
}

int hl_mem_info(void *ctx, size_t *free, size_t *total) { CALL(ctx, DRV(cuMemGetInfo)(free, total)); }

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
	int r = DRV(cuPointerGetAttributes)(3, attrs, data, DPTR(ptr));
	*type = (int)type_;
	*dev = dev_;
	*managed = (int)managed_;
	return r;
}

int hl_malloc(void *ctx, void **p, size_t n) { GATED(ctx, DRV(cuMemAlloc)((CUdeviceptr *)p, n)); }
int hl_malloc_managed(void *ctx, void **p, size_t n) {
	GATED(ctx, DRV(cuMemAllocManaged)((CUdeviceptr *)p, n, CU_MEM_ATTACH_GLOBAL));
}
int hl_free(void *ctx, void *p) { GATED(ctx, DRV(cuMemFree)(DPTR(p))); }

// hl_capturing reports whether s is capturing, into its own graph or,
// joined, into another stream's; ctx is current.
static int hl_capturing(uintptr_t s, int *capturing) {
	CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
	int r = DRV(cuStreamGetCaptureInfo)(STREAM(s), &st, NULL, NULL, NULL, NULL);
	*capturing = st != CU_STREAM_CAPTURE_STATUS_NONE;
	return r;
}

// hl_uncaptured returns HL_CAPTURING where s is capturing, for the calls
// that refuse a capturing stream, else the status of the question.
static int hl_uncaptured(uintptr_t s) {
	int capturing = 0;
	int r = hl_capturing(s, &capturing);
	return r != 0 ? r : capturing ? HL_CAPTURING : 0;
}

// hl_malloc_async and hl_free_async refuse a capturing stream with
// HL_CAPTURING: captured, the allocation or the free would be a node of the
// graph, which the Memory that the package hands out, freed later on some
// stream, cannot follow (the driver crashed on such frees). They take their
// context and address as integers, as hl_memcpy does (below).
hl_alloc hl_malloc_async(uintptr_t ctxv, size_t n, uintptr_t pool, uintptr_t s) {
	void *ctx = (void *)ctxv;
	void *prev;
	CUdeviceptr p = 0;
	int r = hl_enter_on(ctx, &prev, s);
	if (r != 0) return (hl_alloc){r, NULL};
	r = hl_uncaptured(s);
	if (r == 0) r = DRV(cuMemAllocFromPoolAsync)(&p, n, (CUmemoryPool)pool, STREAM(s));
	hl_leave_on(ctx, prev, s);
	return (hl_alloc){r, (void *)(uintptr_t)p};
}
int hl_free_async(uintptr_t ctxv, uintptr_t p, uintptr_t s) {
	void *ctx = (void *)ctxv;
	void *prev;
	int r = hl_enter_on(ctx, &prev, s);
	if (r != 0) return r;
	r = hl_uncaptured(s);
	if (r == 0) r = DRV(cuMemFreeAsync)(DPTR(p), STREAM(s));
	hl_leave_on(ctx, prev, s);
	return r;
}

// hl_memcpy copies between any two pointers of the unified address space,
// host memory pageable or pinned, as cudaMemcpy with cudaMemcpyDefault
// does. hl_memcpy and hl_memset take their context, and hl_memset its
// device address, as integers (hl_memcpy_device both its addresses too):
// cgo checks every void * argument for Go pointers, on every call.
//
// Without async, each returns once the device has done the work: the
// driver's plain forms may return before (a memset, a copy from pageable
// memory once it is staged, a copy between device memory), so the legacy
// default stream they are ordered on is waited for (DONE).
#define DONE(call) (done_ = (call)) != 0 ? done_ : DRV(cuStreamSynchronize)(NULL)

int hl_memcpy(uintptr_t ctxv, void *dst, const void *src, size_t n, uintptr_t s, int async) {
	void *ctx = (void *)ctxv;
	int done_;
	if (async) {
		SCALL(ctx, s, DRV(cuMemcpyAsync)(DPTR(dst), DPTR(src), n, STREAM(s)));
	}
	SCALL(ctx, 0, DONE(DRV(cuMemcpy)(DPTR(dst), DPTR(src), n)));
}

// hl_memcpy_device is hl_memcpy between two device addresses.
int hl_memcpy_device(uintptr_t ctx, uintptr_t dst, uintptr_t src, size_t n, uintptr_t s, int async) {
	return hl_memcpy(ctx, (void *)dst, (const void *)src, n, s, async);
}

int hl_memcpy_record(void *ctx, void *dst, const void *src, size_t n, uintptr_t s, uintptr_t e) {
	void *prev;
	int r = hl_enter_on(ctx, &prev, s);
	if (r != 0) return r;
	r = hl_uncaptured(s); // a captured record could not be waited for
	if (r == 0) r = DRV(cuMemcpyAsync)(DPTR(dst), DPTR(src), n, STREAM(s));
	if (r == 0) {
		r = DRV(cuEventRecord)(EVENT(e), STREAM(s));
		// The copy is queued but e does not follow it: the caller, which
		// waits for e before it reuses or frees the buffer, would do so
		// while the device still copies it. Wait for the stream instead.
		if (r != 0) DRV(cuStreamSynchronize)(STREAM(s));
	}
	hl_leave_on(ctx, prev, s);
	return r;
}

// hl_memcpy_peer copies from src, memory of context src_ctx, to dst, memory
// of ctx.
int hl_memcpy_peer(void *ctx, void *dst, const void *src, void *src_ctx, size_t n, uintptr_t s, int async) {
	int done_;
	if (async) {
		SCALL(ctx, s, DRV(cuMemcpyPeerAsync)(DPTR(dst), (CUcontext)ctx, DPTR(src), (CUcontext)src_ctx, n, STREAM(s)));
	}
	SCALL(ctx, 0, DONE(DRV(cuMemcpyPeer)(DPTR(dst), (CUcontext)ctx, DPTR(src), (CUcontext)src_ctx, n)));
}

// set_memory sets height rows of width elements of size bytes (1, 2 or 4;
// rows only of 4), pitch bytes apart, to v.
static CUresult set_memory(uintptr_t p, size_t pitch, unsigned v, int size, size_t width, size_t height, CUstream s, int async) {
	if (height > 1) {
		if (size != 4) {
			return CUDA_ERROR_INVALID_VALUE;
		}
		return async ? DRV(cuMemsetD2D32Async)(DPTR(p), pitch, v, width, height, s) : DRV(cuMemsetD2D32)(DPTR(p), pitch, v, width, height);
	}
	switch (size) {
	case 1:
		return async ? DRV(cuMemsetD8Async)(DPTR(p), (unsigned char)v, width, s) : DRV(cuMemsetD8)(DPTR(p), (unsigned char)v, width);
	case 2:
		return async ? DRV(cuMemsetD16Async)(DPTR(p), (unsigned short)v, width, s) : DRV(cuMemsetD16)(DPTR(p), (unsigned short)v, width);
	case 4:
		return async ? DRV(cuMemsetD32Async)(DPTR(p), v, width, s) : DRV(cuMemsetD32)(DPTR(p), v, width);
	}
	return CUDA_ERROR_INVALID_VALUE;
}

int hl_memset(uintptr_t ctxv, uintptr_t p, int v, size_t n, uintptr_t s, int async) {
	void *ctx = (void *)ctxv;
	int done_;
	if (async) {
		SCALL(ctx, s, DRV(cuMemsetD8Async)(DPTR(p), (unsigned char)v, n, STREAM(s)));
	}
	SCALL(ctx, 0, DONE(DRV(cuMemsetD8)(DPTR(p), (unsigned char)v, n)));
}

// hl_memset_rows is hl_memset of elements of 2 or 4 bytes, in rows
// (set_memory).
int hl_memset_rows(uintptr_t ctxv, uintptr_t p, size_t pitch, unsigned v, int size, size_t width, size_t height, uintptr_t s, int async) {
	void *ctx = (void *)ctxv;
	int done_;
	if (async) {
		SCALL(ctx, s, set_memory(p, pitch, v, size, width, height, STREAM(s), 1));
	}
	SCALL(ctx, 0, DONE(set_memory(p, pitch, v, size, width, height, NULL, 0)));
}

// Host memory is portable, pinned for every context whichever one ctx is,
// and mapped: with unified addressing, its device address is its host
// address in every context, as cudaHostAlloc and cudaHostRegister give it.
int hl_malloc_host(void *ctx, void **p, size_t n) {
	GATED(ctx, DRV(cuMemHostAlloc)(p, n, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP));
}
int hl_free_host(void *ctx, void *p) { GATED(ctx, DRV(cuMemFreeHost)(p)); }
int hl_host_register(void *ctx, void *p, size_t n) {
	GATED(ctx, DRV(cuMemHostRegister)(p, n, CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP));
}
int hl_host_unregister(void *ctx, void *p) { GATED(ctx, DRV(cuMemHostUnregister)(p)); }

int hl_mem_pool_create(void *ctx, uintptr_t *pool, int dev) {
	CUmemPoolProps props = {0};
	props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
	props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	props.location.id = dev;
	CALL(ctx, DRV(cuMemPoolCreate)((CUmemoryPool *)pool, &props));
}
int hl_default_mem_pool(void *ctx, uintptr_t *pool, int dev) {
	void *prev;
	int r = hl_enter(ctx, &prev);
	if (r != 0) return r;
	CUdevice d;
	r = DRV(cuDeviceGet)(&d, dev);
	if (r == 0) r = DRV(cuDeviceGetDefaultMemPool)((CUmemoryPool *)pool, d);
	hl_leave(ctx, prev);
	return r;
}
int hl_mem_pool_destroy(void *ctx, uintptr_t pool) {
	ENTERED(hl_enter_exclusive(ctx, &prev_), hl_leave_gated(ctx, prev_), DRV(cuMemPoolDestroy)((CUmemoryPool)pool));
}
int hl_mem_pool_set_attribute(void *ctx, uintptr_t pool, int attr, uint64_t v) {
	CALL(ctx, DRV(cuMemPoolSetAttribute)((CUmemoryPool)pool, (CUmemPool_attribute)attr, &v));
}
int hl_mem_pool_get_attribute(void *ctx, uintptr_t pool, int attr, uint64_t *v) {
	CALL(ctx, DRV(cuMemPoolGetAttribute)((CUmemoryPool)pool, (CUmemPool_attribute)attr, v));
}
int hl_mem_pool_trim(void *ctx, uintptr_t pool, size_t keep) {
	CALL(ctx, DRV(cuMemPoolTrimTo)((CUmemoryPool)pool, keep));
}

int hl_stream_create(void *ctx, uintptr_t *s, unsigned flags, int priority) {
	if (priority == 0) {
		CALL(ctx, DRV(cuStreamCreate)((CUstream *)s, flags));
	}
	CALL(ctx, DRV(cuStreamCreateWithPriority)((CUstream *)s, flags, priority));
}
int hl_stream_priority_range(void *ctx, int *least, int *greatest) {
	CALL(ctx, DRV(cuCtxGetStreamPriorityRange)(least, greatest));
}
// hl_stream_close waits for s's work when sync is set, then destroys s when
// destroy is set; while s is capturing (or a capture it was part of was
// invalidated and not yet ended) it returns HL_CAPTURING and does nothing:
// a stream destroyed inside a capture leaves the driver's capture a
// dangling stream, and waiting would spoil the capture. During a global
// capture it returns HL_CAPTURING too (hl_enter_gated).
int hl_stream_close(void *ctx, uintptr_t s, int sync, int destroy) {
	void *prev;
	int r = hl_gate(ctx, &prev, s == 0);
	if (r != 0) return r;
	r = hl_uncaptured(s);
	if (r == 0 && sync) r = DRV(cuStreamSynchronize)(STREAM(s));
	hl_leave_gated(ctx, prev);
	if (r == HL_CAPTURING || !destroy) return r;
	int d = hl_enter_exclusive(ctx, &prev);
	if (d != 0) return d;
	d = hl_uncaptured(s);
	if (d == 0) d = DRV(cuStreamDestroy)(STREAM(s));
	hl_leave_gated(ctx, prev);
	return r != 0 ? r : d;
}
// hl_stream_ask calls op, which waits for s's work or asks about it,
// unless s is capturing: then it returns HL_CAPTURING itself. CUDA refuses
// it too, but invalidates the capture, and the driver crashed where that
// raced the capture's work on other threads. A wait (gated 0) is refused
// by a capture elsewhere only on the legacy default stream; a question
// (gated 1) also during a global capture, which refuses it in CUDA.
static int hl_stream_ask(void *ctx, uintptr_t s, CUresult (*op)(CUstream), int gated) {
	void *prev;
	int r = gated ? hl_gate(ctx, &prev, s == 0) : hl_enter_on(ctx, &prev, s);
	if (r != 0) return r;
	r = hl_uncaptured(s);
	if (r == 0) r = op(STREAM(s));
	if (gated) {
		hl_leave_gated(ctx, prev);
	} else {
		hl_leave_on(ctx, prev, s);
	}
	return r;
}
int hl_stream_synchronize(void *ctx, uintptr_t s) { return hl_stream_ask(ctx, s, DRV(cuStreamSynchronize), 0); }
int hl_stream_query(void *ctx, uintptr_t s) { return hl_stream_ask(ctx, s, DRV(cuStreamQuery), 1); }
int hl_stream_wait_event(void *ctx, uintptr_t s, uintptr_t e) {
	SCALL(ctx, s, DRV(cuStreamWaitEvent)(STREAM(s), EVENT(e), 0));
}

// A callback's Go function does not run on the CUDA thread that calls the
// callback: Go cannot end a thread it did not create, so a runtime.Goexit
// there would kill the process. The CUDA thread hands the callback, a job,
// to a dispatcher, a goroutine of callback.go locked to a thread of Go's,
// and waits until it has run. keep says whether the callback may run again
// (it is a node of a graph), so that Go keeps its handle.
struct hl_job {
	uintptr_t h;
	int status, keep;
	int *in_callback; // the dispatcher thread's hl_in_callback
	sem_t done;
	struct hl_job *next;
};

static pthread_mutex_t hl_jobs_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t hl_jobs_cv = PTHREAD_COND_INITIALIZER;
static struct hl_job *hl_jobs, **hl_jobs_tail = &hl_jobs;
static int hl_idle; // dispatchers waiting for a job, or about to

static void hl_dispatch(uintptr_t h, int status, int keep) {
	struct hl_job j = {h, status, keep};
	sem_init(&j.done, 0, 0);
	pthread_mutex_lock(&hl_jobs_mu);
	*hl_jobs_tail = &j;
	hl_jobs_tail = &j.next;
	pthread_cond_signal(&hl_jobs_cv);
	pthread_mutex_unlock(&hl_jobs_mu);
	while (sem_wait(&j.done) != 0) {} // interrupted by a signal
	sem_destroy(&j.done);
}

static void CUDA_CB hl_host_fn(void *h) { hl_dispatch((uintptr_t)h, 0, 0); }
static void CUDA_CB hl_host_fn_node(void *h) { hl_dispatch((uintptr_t)h, 0, 1); }
static void CUDA_CB hl_stream_callback(CUstream s, CUresult status, void *h) {
	hl_dispatch((uintptr_t)h, (int)status, 0);
}

// hl_add_dispatcher counts a dispatcher about to wait for jobs: the first.
void hl_add_dispatcher(void) {
	pthread_mutex_lock(&hl_jobs_mu);
	hl_idle++;
	pthread_mutex_unlock(&hl_jobs_mu);
}

// hl_next_job waits for a job and returns it to a dispatcher, whose thread
// it marks as running a callback. more says that no other dispatcher waits:
// the caller starts one, counted already, so that a job never waits for
// another to end.
struct hl_next hl_next_job(void) {
	pthread_mutex_lock(&hl_jobs_mu);
	while (hl_jobs == NULL) pthread_cond_wait(&hl_jobs_cv, &hl_jobs_mu);
	struct hl_job *j = hl_jobs;
	if ((hl_jobs = j->next) == NULL) hl_jobs_tail = &hl_jobs;
	int more = hl_idle == 1;
	if (!more) hl_idle--;
	pthread_mutex_unlock(&hl_jobs_mu);
	j->in_callback = &hl_in_callback;
	__atomic_store_n(j->in_callback, 1, __ATOMIC_RELAXED);
	return (struct hl_next){j, j->h, j->status, j->keep, more};
}

// hl_job_done ends a job: it unmarks the thread that took it (the thread
// of the job's function, unless the function unlocked its goroutine from
// it) and lets the CUDA thread go on. again says that the dispatcher waits
// for another job; it does not after runtime.Goexit.
void hl_job_done(void *job, int again) {
	struct hl_job *j = job;
	__atomic_store_n(j->in_callback, 0, __ATOMIC_RELAXED);
	if (again) {
		pthread_mutex_lock(&hl_jobs_mu);
		hl_idle++;
		pthread_mutex_unlock(&hl_jobs_mu);
	}
	sem_post(&j->done); // j is the CUDA thread's again
}

int hl_in_callback_now(void) { return hl_in_callback; }

// The handles of graph host nodes whose graphs are gone. CUDA destroys a
// user object on a thread of its own, maybe inside another CUDA call, so
// the destructor only queues the handle here; Go deletes it later
// (hl_dead_handles).
static pthread_mutex_t hl_dead_mu = PTHREAD_MUTEX_INITIALIZER;
static uintptr_t *hl_dead;
static int hl_ndead, hl_capdead;

static void CUDA_CB hl_handle_destroy(void *h) {
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
	SCALL(ctx, s, DRV(cuStreamAddCallback)(STREAM(s), hl_stream_callback, (void *)h, 0));
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
	int r = hl_enter_on(ctx, &prev, s);
	if (r != 0) return r;
	CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
	CUgraph g = NULL;
	r = DRV(cuStreamGetCaptureInfo)(STREAM(s), &st, NULL, &g, NULL, NULL);
	if (r == 0 && st == CU_STREAM_CAPTURE_STATUS_ACTIVE) {
		CUuserObject obj;
		r = DRV(cuUserObjectCreate)(&obj, (void *)h, hl_handle_destroy, 1, CU_USER_OBJECT_NO_DESTRUCTOR_SYNC);
		if (r == 0) {
			*owned = 1; // the user object deletes it
			r = DRV(cuGraphRetainUserObject)(g, obj, 1, CU_GRAPH_USER_OBJECT_MOVE);
			if (r != 0) {
				DRV(cuUserObjectRelease)(obj, 1);
			} else {
				r = DRV(cuLaunchHostFunc)(STREAM(s), hl_host_fn_node, (void *)h);
			}
		}
	} else if (r == 0) {
		r = DRV(cuLaunchHostFunc)(STREAM(s), hl_host_fn, (void *)h);
		*owned = r == 0;
	}
	hl_leave_on(ctx, prev, s);
	return r;
}

// hl_stream_begin_capture begins a capture, which counts in hl_capture_n,
// and in global mode in hl_global_n, from when the gated calls in progress
// have ended, until hl_capture_end. While a global capture is in progress
// it returns HL_CAPTURING.
// begin_capture begins a capture on s in mode, into g after the n nodes of
// deps where g is not 0 (cuStreamBeginCaptureToGraph), else into a graph
// of its own; *tid is the calling thread.
static int begin_capture(void *ctx, uintptr_t s, int mode, long *tid, uintptr_t g, const uintptr_t *deps, size_t n) {
	*tid = syscall(SYS_gettid);
	if (hl_in_callback) {
		return HL_IN_CALLBACK;
	}
	if (s == 0) {
		// CUDA cannot capture the legacy default stream, and driver 580
		// crashed where cuStreamBeginCapture on it raced other threads'
		// work: refused as CUDA documents it.
		hl_calls++; // a status of no driver call's (hl_calls)
		return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	}
	int global = mode == CU_STREAM_CAPTURE_MODE_GLOBAL;
	pthread_rwlock_wrlock(&hl_global_mu);
	if (hl_global_n > 0) { // which CUDA refuses too, invalidating it
		pthread_rwlock_unlock(&hl_global_mu);
		return HL_CAPTURING;
	}
	hl_capture_n++;
	hl_global_n += global;
	pthread_rwlock_unlock(&hl_global_mu);
	void *prev;
	int r = hl_enter(ctx, &prev);
	if (r == 0) {
		int drv = global ? CU_STREAM_CAPTURE_MODE_THREAD_LOCAL : mode;
		if (g == 0) {
			r = DRV(cuStreamBeginCapture)(STREAM(s), (CUstreamCaptureMode)drv);
		} else if (DRV(cuStreamBeginCaptureToGraph) == NULL) {
			r = HL_MISSING_BASE - HL_I_cuStreamBeginCaptureToGraph;
		} else {
			r = DRV(cuStreamBeginCaptureToGraph)(STREAM(s), (CUgraph)g, DEPS(deps), NULL, n, (CUstreamCaptureMode)drv);
		}
		hl_leave(ctx, prev);
	}
	if (r != 0) {
		hl_capture_end(global);
	}
	return r;
}
int hl_stream_begin_capture(void *ctx, uintptr_t s, int mode, long *tid) {
	return begin_capture(ctx, s, mode, tid, 0, NULL, 0);
}

// hl_stream_begin_capture_to_graph is hl_stream_begin_capture into g,
// after the n nodes of deps.
int hl_stream_begin_capture_to_graph(void *ctx, uintptr_t s, int mode, long *tid, uintptr_t g, const uintptr_t *deps, size_t n) {
	return begin_capture(ctx, s, mode, tid, g, deps, n);
}

// hl_stream_capture_sinks writes the nodes the capture on s ends with so
// far, the dependencies of its next work, to nodes, up to max of them, and
// their number to *n.
int hl_stream_capture_sinks(void *ctx, uintptr_t s, uintptr_t *nodes, size_t max, size_t *n) {
	void *prev;
	int r = hl_enter_on(ctx, &prev, s);
	if (r != 0) return r;
	CUstreamCaptureStatus st;
	const CUgraphNode *deps = NULL;
	*n = 0;
	r = DRV(cuStreamGetCaptureInfo)(STREAM(s), &st, NULL, NULL, &deps, n);
	for (size_t i = 0; r == 0 && i < *n && i < max; i++) {
		nodes[i] = (uintptr_t)deps[i];
	}
	hl_leave_on(ctx, prev, s);
	return r;
}

// hl_stream_end_capture ends the capture on s, which the thread tid began
// in a strict mode (0: relaxed): from another thread it returns
// CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD itself, as CUDA would.
int hl_stream_end_capture(void *ctx, uintptr_t s, uintptr_t *g, long tid) {
	if (tid != 0 && tid != syscall(SYS_gettid)) {
		hl_calls++; // a status of no driver call's (hl_calls)
		return CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;
	}
	SCALL(ctx, s, DRV(cuStreamEndCapture)(STREAM(s), (CUgraph *)g));
}

int hl_event_create(void *ctx, uintptr_t *e, unsigned flags) { CALL(ctx, DRV(cuEventCreate)((CUevent *)e, flags)); }
int hl_event_destroy(void *ctx, uintptr_t e) { CALL(ctx, DRV(cuEventDestroy)(EVENT(e))); }
int hl_event_record(void *ctx, uintptr_t e, uintptr_t s) { SCALL(ctx, s, DRV(cuEventRecord)(EVENT(e), STREAM(s))); }

// hl_event_record_capture is hl_event_record that also reports whether s
// is capturing, so that the record is a point of the capture rather than
// of the stream's work.
int hl_event_record_capture(void *ctx, uintptr_t e, uintptr_t s, int *captured) {
	void *prev;
	int r = hl_enter_on(ctx, &prev, s);
	if (r != 0) return r;
	r = hl_capturing(s, captured);
	if (r == 0) r = DRV(cuEventRecord)(EVENT(e), STREAM(s));
	hl_leave_on(ctx, prev, s);
	return r;
}

// hl_stream_mark records e on s for a wait (Stream.Wait, Done), creating
// the event first where e is 0, and returns it, unless s is capturing: then
// its work runs only when the graph is launched, and it returns
// HL_CAPTURING. An event it created is returned also when the record
// failed.
hl_handle hl_stream_mark(void *ctx, uintptr_t s, uintptr_t e) {
	void *prev;
	hl_handle m = {hl_enter_on(ctx, &prev, s), e};
	if (m.r != 0) return m;
	m.r = hl_uncaptured(s);
	if (m.r == 0 && m.h == 0) m.r = DRV(cuEventCreate)((CUevent *)&m.h, CU_EVENT_DISABLE_TIMING);
	if (m.r == 0) m.r = DRV(cuEventRecord)(EVENT(m.h), STREAM(s));
	hl_leave_on(ctx, prev, s);
	return m;
}
// hl_event_synchronize is not gated: a wait ends when the event has
// happened, whatever captures other threads make (the driver's captures
// are thread-local, a global one being the shim's).
int hl_event_synchronize(void *ctx, uintptr_t e) { CALL(ctx, DRV(cuEventSynchronize)(EVENT(e))); }
int hl_event_query(void *ctx, uintptr_t e) { GATED(ctx, DRV(cuEventQuery)(EVENT(e))); }

// hl_event_spin waits for e by querying it, as cuEventSynchronize does
// for an event without CU_EVENT_BLOCKING_SYNC, but also while a global
// capture refuses that (the staging pipeline must not give back a buffer
// the device still copies).
int hl_event_spin(void *ctx, uintptr_t e) {
	void *prev;
	int r = hl_enter(ctx, &prev);
	if (r != 0) return r;
	while ((r = DRV(cuEventQuery)(EVENT(e))) == CUDA_ERROR_NOT_READY) {
	}
	hl_leave(ctx, prev);
	return r;
}
// hl_nap sleeps for ns nanoseconds with a timer slack of 1 ns (Linux's
// default, 50 µs, would add that much to every short sleep; Go's timers
// more), for the waits of wait.go.
void hl_nap(long ns) {
	struct timespec t = {ns / 1000000000, ns % 1000000000};
	prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
	while (clock_nanosleep(CLOCK_MONOTONIC, 0, &t, &t) == EINTR) {
	}
	prctl(PR_SET_TIMERSLACK, 0UL, 0UL, 0UL, 0UL); // the thread's default again
}

// hl_event_step is a step of a wait (wait.go): it sleeps for nap
// nanoseconds, then queries e until it has happened or spin nanoseconds
// have passed, and returns CUDA_ERROR_NOT_READY if it has not. The query
// is not gated: it touches no stream, and the driver's captures are
// thread-local (a global capture is the shim's).
int hl_event_step(void *ctx, uintptr_t e, long nap, long spin) {
	if (nap > 0) hl_nap(nap);
	void *prev;
	int r = hl_enter(ctx, &prev);
	if (r != 0) return r;
	struct timespec t0, t;
	if (spin > 0) clock_gettime(CLOCK_MONOTONIC, &t0);
	while ((r = DRV(cuEventQuery)(EVENT(e))) == CUDA_ERROR_NOT_READY && spin > 0) {
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) >= spin) break;
	}
	hl_leave(ctx, prev);
	return r;
}
int hl_event_elapsed(void *ctx, float *ms, uintptr_t start, uintptr_t end) {
	CALL(ctx, DRV(cuEventElapsedTime)(ms, EVENT(start), EVENT(end)));
}

// The waiter's wake-ups (wait.go): a host function queued behind an event
// on a helper stream of the waiter's.
extern void hlWake(uintptr_t h);

static void CUDA_CB hl_wake_fn(void *h) {
	hl_in_callback = 1;
	hlWake((uintptr_t)h);
	hl_in_callback = 0;
}

// hl_wake_after queues on the helper stream s a wait for e, then a host
// function that wakes the request behind handle h. It is not gated: s is
// the waiter's own, and the driver's captures are thread-local (a global
// capture is the shim's).
int hl_wake_after(void *ctx, uintptr_t s, uintptr_t e, uintptr_t h) {
	void *prev;
	int r = hl_enter(ctx, &prev);
	if (r != 0) return r;
	r = DRV(cuStreamWaitEvent)(STREAM(s), EVENT(e), 0);
	if (r == 0) r = DRV(cuLaunchHostFunc)(STREAM(s), hl_wake_fn, (void *)h);
	hl_leave(ctx, prev);
	return r;
}

// hl_ctx_swap makes ctx current on the calling thread (NULL: none), unless
// it is already, and returns the context that was (NULL for none), in one
// call, for Device.Do and its putting back; hl_ctx_set makes ctx current,
// for Device.Use.
hl_ctx hl_ctx_swap(void *ctx) {
	hl_ctx c = {0, NULL};
	void *prev;
	if ((c.r = hl_enter(NULL, &prev)) != 0) return c;
	if ((c.r = DRV(cuCtxGetCurrent)((CUcontext *)&c.ctx)) != 0) return c;
	if (c.ctx != ctx) c.r = DRV(cuCtxSetCurrent)((CUcontext)ctx);
	return c;
}
int hl_ctx_set(void *ctx) {
	void *prev;
	int e = hl_enter(NULL, &prev);
	if (e != 0) return e;
	return DRV(cuCtxSetCurrent)((CUcontext)ctx);
}
int hl_ctx_synchronize(void *ctx) { GATED(ctx, DRV(cuCtxSynchronize)()); }
int hl_enable_peer_access(void *ctx, void *peer) { CALL(ctx, DRV(cuCtxEnablePeerAccess)((CUcontext)peer, 0)); }

// hl_primary_context_active reports whether dev's primary context is
// active, without making it.
int hl_primary_context_active(int dev, int *active) {
	void *prev;
	int e = hl_enter(NULL, &prev);
	if (e != 0) return e;
	CUdevice d;
	unsigned flags;
	int r = DRV(cuDeviceGet)(&d, dev);
	if (r == 0) r = DRV(cuDevicePrimaryCtxGetState)(d, &flags, active);
	return r;
}

// hl_stream_query_many queries n streams in one cgo call, for the
// waiter's poller.
void hl_stream_query_many(int n, void **ctxs, const uintptr_t *streams, int *status) {
	CUcontext prev = NULL;
	hl_calls++;
	if (hl_in_callback) {
		for (int i = 0; i < n; i++) status[i] = HL_IN_CALLBACK;
		return;
	}
	DRV(cuCtxGetCurrent)(&prev);
	CUcontext cur = prev;
	for (int i = 0; i < n; i++) {
		if ((CUcontext)ctxs[i] != cur) {
			DRV(cuCtxSetCurrent)((CUcontext)ctxs[i]);
			cur = (CUcontext)ctxs[i];
		}
		status[i] = DRV(cuStreamQuery)(STREAM(streams[i]));
	}
	if (cur != prev) DRV(cuCtxSetCurrent)(prev);
	hl_calls++; // which query a line was of, no stamp tells: none is attached
}

// hl_graph_instantiate instantiates g with CUgraphInstantiate_flags flags,
// uploading it on stream upload when flags has
// CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD; *result is the
// CUgraphInstantiateResult.
int hl_graph_instantiate(void *ctx, uintptr_t *exec, uintptr_t g, unsigned long long flags, uintptr_t upload,
		int *result) {
	CUDA_GRAPH_INSTANTIATE_PARAMS p = {.flags = flags, .hUploadStream = STREAM(upload)};
	void *prev;
	int r = hl_gate(ctx, &prev, (flags & CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD) && upload == 0);
	if (r != 0) return r;
	r = DRV(cuGraphInstantiateWithParams)((CUgraphExec *)exec, (CUgraph)g, &p);
	*result = (int)p.result_out;
	hl_leave_gated(ctx, prev);
	return r;
}
int hl_graph_launch(void *ctx, uintptr_t exec, uintptr_t s) {
	void *prev;
	int r = hl_gate(ctx, &prev, s == 0);
	if (r != 0) return r;
	r = DRV(cuGraphLaunch)((CUgraphExec)exec, STREAM(s));
	hl_leave_gated(ctx, prev);
	return r;
}
// hl_graph_launch_after launches exec on s as hl_graph_launch does, after
// (where wait) the work e was last recorded after, then records e on s:
// the launches of a device's graphs with conditional nodes take turns
// (highlevel's condTurns).
int hl_graph_launch_after(void *ctx, uintptr_t exec, uintptr_t s, uintptr_t e, int wait) {
	void *prev;
	int r = hl_gate(ctx, &prev, s == 0);
	if (r != 0) return r;
	if (wait) r = DRV(cuStreamWaitEvent)(STREAM(s), EVENT(e), 0);
	if (r == 0) r = DRV(cuGraphLaunch)((CUgraphExec)exec, STREAM(s));
	if (r == 0) r = DRV(cuEventRecord)(EVENT(e), STREAM(s));
	hl_leave_gated(ctx, prev);
	return r;
}
int hl_graph_upload(void *ctx, uintptr_t exec, uintptr_t s) {
	void *prev;
	int r = hl_gate(ctx, &prev, s == 0);
	if (r != 0) return r;
	r = DRV(cuGraphUpload)((CUgraphExec)exec, STREAM(s));
	hl_leave_gated(ctx, prev);
	return r;
}
int hl_graph_update(void *ctx, uintptr_t exec, uintptr_t g, int *result) {
	CUgraphExecUpdateResultInfo info = {0};
	void *prev;
	int r = hl_enter_gated(ctx, &prev);
	if (r != 0) return r;
	r = DRV(cuGraphExecUpdate)((CUgraphExec)exec, (CUgraph)g, &info);
	*result = info.result;
	hl_leave_gated(ctx, prev);
	return r;
}
int hl_graph_destroy(void *ctx, uintptr_t g) { GATED(ctx, DRV(cuGraphDestroy)((CUgraph)g)); }
int hl_graph_exec_destroy(void *ctx, uintptr_t exec) { GATED(ctx, DRV(cuGraphExecDestroy)((CUgraphExec)exec)); }

int hl_profiler(void *ctx, int start) {
	if (start) {
		CALL(ctx, DRV(cuProfilerStart)());
	}
	CALL(ctx, DRV(cuProfilerStop)());
}

// Kernels go through the driver: a CUkernel of a context-independent
// CUlibrary, launched as a CUfunction in the stream's context.
#define KERNEL(k) ((CUkernel)(k))
#define FUNC(k) ((CUfunction)(k))

// hl_library_load loads a library, which needs no context: only an
// initialized driver.
int hl_library_load(void *ctx, uintptr_t *lib, const void *image) {
	void *prev;
	int r = hl_enter_gated(ctx, &prev);
	if (r != 0) return r;
	r = DRV(cuInit)(0);
	if (r == 0) r = DRV(cuLibraryLoadData)((CUlibrary *)lib, image, NULL, NULL, 0, NULL, NULL, 0);
	hl_leave_gated(ctx, prev);
	return r;
}
int hl_library_unload(void *ctx, uintptr_t lib) { GATED(ctx, DRV(cuLibraryUnload)((CUlibrary)lib)); }
int hl_library_get_kernel(void *ctx, uintptr_t *k, uintptr_t lib, const char *name) {
	CALL(ctx, DRV(cuLibraryGetKernel)((CUkernel *)k, (CUlibrary)lib, name));
}

// hl_kernel_function returns k's function in ctx, which launches take:
// launching the CUkernel itself makes the driver look that up each time.
int hl_kernel_function(void *ctx, uintptr_t *f, uintptr_t k) {
	CALL(ctx, DRV(cuKernelGetFunction)((CUfunction *)f, KERNEL(k)));
}

// hl_kernel_params stores the offset and size of each of k's parameters,
// at most max, and their number in *n.
int hl_kernel_params(void *ctx, uintptr_t k, uint32_t *offsets, uint32_t *sizes, int max, int *n) {
	*n = 0;
	NEED(cuKernelGetParamInfo);
	void *prev;
	int r = hl_enter(ctx, &prev);
	if (r != 0) return r;
	for (int i = 0; i < max; i++) {
		size_t off, size;
		hl_log_quiet = 1; // the probe past the last parameter fails, as asked
		CUresult e = DRV(cuKernelGetParamInfo)(KERNEL(k), i, &off, &size);
		hl_log_quiet = 0;
		if (e == CUDA_ERROR_INVALID_VALUE) {
			break; // no parameter i
		}
		if (e != CUDA_SUCCESS) {
			hl_leave(ctx, prev);
			return e;
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
	r = DRV(cuDeviceGet)(&d, dev);
	if (r == 0) {
		r = set ? DRV(cuKernelSetAttribute)((CUfunction_attribute)attr, *v, KERNEL(k), d)
			: DRV(cuKernelGetAttribute)(v, (CUfunction_attribute)attr, KERNEL(k), d);
	}
	hl_leave(ctx, prev);
	return r;
}

// hl_launch launches f, a kernel's function in context ctx (an integer, so
// that cgo need not check it for Go pointers at each launch), with the
// arguments packed in args, or in big when they do not fit there, at the
// parameters' offsets. A cluster of 0 and cooperative 0 take
// cuLaunchKernel, the rest cuLaunchKernelEx. dims and args come by value:
// the driver may call back into Go during the call (its logger), and then
// the goroutine's stack may move, so nothing passed here points into it.
int hl_launch(uintptr_t ctxv, uintptr_t f, hl_dims dims, uint32_t smem, uintptr_t s, int cooperative,
		hl_args args, char *big, const hl_param *p, int n) {
	void *ctx = (void *)ctxv;
	char *base = big != NULL ? big : (char *)args.w;
	void *params[n > 0 ? n : 1];
	for (int i = 0; i < n; i++) {
		params[i] = base + p[i].offset;
	}
	void *prev;
	int r = hl_enter_on(ctx, &prev, s);
	if (r != 0) return r;
	if (dims.cluster[0] == 0 && !cooperative) {
		r = DRV(cuLaunchKernel)(FUNC(f), dims.grid[0], dims.grid[1], dims.grid[2],
			dims.block[0], dims.block[1], dims.block[2], smem, STREAM(s), params, NULL);
	} else {
		CUlaunchAttribute attrs[2];
		CUlaunchConfig cfg = {
			.gridDimX = dims.grid[0], .gridDimY = dims.grid[1], .gridDimZ = dims.grid[2],
			.blockDimX = dims.block[0], .blockDimY = dims.block[1], .blockDimZ = dims.block[2],
			.sharedMemBytes = smem, .hStream = STREAM(s), .attrs = attrs,
		};
		if (dims.cluster[0] != 0) {
			attrs[cfg.numAttrs].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
			attrs[cfg.numAttrs].value.clusterDim.x = dims.cluster[0];
			attrs[cfg.numAttrs].value.clusterDim.y = dims.cluster[1];
			attrs[cfg.numAttrs].value.clusterDim.z = dims.cluster[2];
			cfg.numAttrs++;
		}
		if (cooperative) {
			attrs[cfg.numAttrs].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
			attrs[cfg.numAttrs].value.cooperative = 1;
			cfg.numAttrs++;
		}
		r = DRV(cuLaunchKernelEx)(&cfg, FUNC(f), params, NULL);
	}
	hl_leave_on(ctx, prev, s);
	return r;
}

// kernel_params fills p's kernel fields for a launch of f in ctx as hl_launch
// makes it, with args packed at params' offsets; kp has room for n pointers.
static void kernel_params(CUDA_KERNEL_NODE_PARAMS *p, void **kp, void *ctx, uintptr_t f, hl_dims dims, uint32_t smem,
		char *base, const hl_param *params, int n) {
	for (int i = 0; i < n; i++) {
		kp[i] = base + params[i].offset;
	}
	p->func = FUNC(f);
	p->gridDimX = dims.grid[0], p->gridDimY = dims.grid[1], p->gridDimZ = dims.grid[2];
	p->blockDimX = dims.block[0], p->blockDimY = dims.block[1], p->blockDimZ = dims.block[2];
	p->sharedMemBytes = smem;
	p->kernelParams = kp;
	p->ctx = (CUcontext)ctx; // a conditional node's body needs it named
}


int hl_graph_create(void *ctx, uintptr_t *g) {
	CALL(ctx, DRV(cuGraphCreate)((CUgraph *)g, 0));
}

int hl_graph_add_empty(void *ctx, uintptr_t *node, uintptr_t g, const uintptr_t *deps, size_t n) {
	CALL(ctx, DRV(cuGraphAddEmptyNode)(NODE(node), (CUgraph)g, DEPS(deps), n));
}

int hl_graph_add_kernel(uintptr_t ctxv, uintptr_t *node, uintptr_t g, const uintptr_t *deps, size_t ndeps,
		uintptr_t f, hl_dims dims, uint32_t smem, hl_args args, char *big, const hl_param *params, int n) {
	void *ctx = (void *)ctxv;
	void *kp[n > 0 ? n : 1];
	CUDA_KERNEL_NODE_PARAMS p = {0};
	kernel_params(&p, kp, ctx, f, dims, smem, big != NULL ? big : (char *)args.w, params, n);
	CALL(ctx, DRV(cuGraphAddKernelNode)(NODE(node), (CUgraph)g, DEPS(deps), ndeps, &p));
}

int hl_graph_add_memset(void *ctx, uintptr_t *node, uintptr_t g, const uintptr_t *deps, size_t ndeps,
		uintptr_t ptr, size_t pitch, unsigned v, int size, size_t width, size_t height) {
	CUDA_MEMSET_NODE_PARAMS p = {.dst = DPTR(ptr), .pitch = pitch, .value = v, .elementSize = size,
		.width = width, .height = height};
	CALL(ctx, DRV(cuGraphAddMemsetNode)(NODE(node), (CUgraph)g, DEPS(deps), ndeps, &p, (CUcontext)ctx));
}

// hl_graph_exec_set_memset makes node, a memset node, of exec's set
// what hl_graph_add_memset's parameters say.
int hl_graph_exec_set_memset(void *ctx, uintptr_t exec, uintptr_t node, uintptr_t ptr, size_t pitch, unsigned v,
		int size, size_t width, size_t height) {
	CUDA_MEMSET_NODE_PARAMS p = {.dst = DPTR(ptr), .pitch = pitch, .value = v, .elementSize = size,
		.width = width, .height = height};
	CALL(ctx, DRV(cuGraphExecMemsetNodeSetParams)((CUgraphExec)exec, (CUgraphNode)node, &p, (CUcontext)ctx));
}

// copy_params sets *p to a copy of n bytes from src to dst, addresses of
// the unified address space, as cuMemcpy takes them.
static void copy_params(CUDA_MEMCPY3D *p, uintptr_t dst, uintptr_t src, size_t n) {
	memset(p, 0, sizeof *p);
	p->srcMemoryType = CU_MEMORYTYPE_UNIFIED;
	p->srcDevice = DPTR(src);
	p->dstMemoryType = CU_MEMORYTYPE_UNIFIED;
	p->dstDevice = DPTR(dst);
	p->WidthInBytes = n;
	p->Height = 1;
	p->Depth = 1;
}

// hl_graph_add_copy adds a copy of n bytes from src to dst (copy_params).
int hl_graph_add_copy(void *ctx, uintptr_t *node, uintptr_t g, const uintptr_t *deps, size_t ndeps,
		uintptr_t dst, uintptr_t src, size_t n) {
	CUDA_MEMCPY3D p;
	copy_params(&p, dst, src, n);
	CALL(ctx, DRV(cuGraphAddMemcpyNode)(NODE(node), (CUgraph)g, DEPS(deps), ndeps, &p, (CUcontext)ctx));
}

// hl_graph_exec_set_copy makes node, a copy node, of exec's copy n bytes
// from src to dst.
int hl_graph_exec_set_copy(void *ctx, uintptr_t exec, uintptr_t node, uintptr_t dst, uintptr_t src, size_t n) {
	CUDA_MEMCPY3D p;
	copy_params(&p, dst, src, n);
	CALL(ctx, DRV(cuGraphExecMemcpyNodeSetParams)((CUgraphExec)exec, (CUgraphNode)node, &p, (CUcontext)ctx));
}

// hl_graph_add_host adds a host node to g that calls the Go function
// behind h at each of its runs: the handle belongs to a CUDA user object
// that g owns, as a captured host function's belongs to the capture's
// graph (hl_launch_host_func); *owned as there.
int hl_graph_add_host(void *ctx, uintptr_t *node, uintptr_t g, const uintptr_t *deps, size_t ndeps, uintptr_t h,
		int *owned) {
	*owned = 0;
	void *prev;
	int r = hl_enter(ctx, &prev);
	if (r != 0) return r;
	CUuserObject obj;
	r = DRV(cuUserObjectCreate)(&obj, (void *)h, hl_handle_destroy, 1, CU_USER_OBJECT_NO_DESTRUCTOR_SYNC);
	if (r == 0) {
		*owned = 1; // the user object deletes it
		r = DRV(cuGraphRetainUserObject)((CUgraph)g, obj, 1, CU_GRAPH_USER_OBJECT_MOVE);
		if (r != 0) {
			DRV(cuUserObjectRelease)(obj, 1);
		} else {
			CUDA_HOST_NODE_PARAMS p = {.fn = hl_host_fn_node, .userData = (void *)h};
			r = DRV(cuGraphAddHostNode)(NODE(node), (CUgraph)g, DEPS(deps), ndeps, &p);
		}
	}
	hl_leave(ctx, prev);
	return r;
}

int hl_graph_add_child(void *ctx, uintptr_t *node, uintptr_t g, const uintptr_t *deps, size_t ndeps, uintptr_t child) {
	CALL(ctx, DRV(cuGraphAddChildGraphNode)(NODE(node), (CUgraph)g, DEPS(deps), ndeps, (CUgraph)child));
}

// hl_graph_add_event adds a node to g that records the event e (record)
// or waits for it.
int hl_graph_add_event(void *ctx, uintptr_t *node, uintptr_t g, const uintptr_t *deps, size_t ndeps, uintptr_t e,
		int record) {
	if (record) {
		CALL(ctx, DRV(cuGraphAddEventRecordNode)(NODE(node), (CUgraph)g, DEPS(deps), ndeps, EVENT(e)));
	}
	CALL(ctx, DRV(cuGraphAddEventWaitNode)(NODE(node), (CUgraph)g, DEPS(deps), ndeps, EVENT(e)));
}

// hl_graph_add_alloc adds a node to g that allocates n bytes of device
// dev's memory at each run, at the address it writes to *p, the same at
// every run.
int hl_graph_add_alloc(void *ctx, uintptr_t *node, uintptr_t g, const uintptr_t *deps, size_t ndeps, int dev, size_t n,
		void **p) {
	CUDA_MEM_ALLOC_NODE_PARAMS a;
	memset(&a, 0, sizeof a);
	a.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
	a.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	a.poolProps.location.id = dev;
	a.bytesize = n;
	*p = NULL;
	void *prev;
	int r = hl_enter(ctx, &prev);
	if (r != 0) return r;
	r = DRV(cuGraphAddMemAllocNode)(NODE(node), (CUgraph)g, DEPS(deps), ndeps, &a);
	hl_leave(ctx, prev);
	if (r == 0) *p = (void *)(uintptr_t)a.dptr;
	return r;
}

// hl_graph_add_free adds a node to g that frees p, the memory of an
// allocation node of g.
int hl_graph_add_free(void *ctx, uintptr_t *node, uintptr_t g, const uintptr_t *deps, size_t ndeps, uintptr_t p) {
	CALL(ctx, DRV(cuGraphAddMemFreeNode)(NODE(node), (CUgraph)g, DEPS(deps), ndeps, DPTR(p)));
}

// hl_graph_add_conditional adds a conditional node of type
// (CUgraphConditionalNodeType) on handle, with size bodies, whose graphs it
// writes to bodies: CUDA makes them, and points the parameters'
// phGraph_out at its array of them.
int hl_graph_add_conditional(void *ctx, uintptr_t *node, uintptr_t g, const uintptr_t *deps, size_t ndeps,
		uint64_t handle, int type, unsigned size, uintptr_t *bodies) {
	if (DRV(cuGraphAddNode) == NULL) return HL_MISSING_BASE - HL_I_cuGraphAddNode; // NEED would expand CUDA 13's #define
	CUgraphNodeParams p;
	memset(&p, 0, sizeof p);
	p.type = CU_GRAPH_NODE_TYPE_CONDITIONAL;
	p.conditional.handle = (CUgraphConditionalHandle)handle;
	p.conditional.type = (CUgraphConditionalNodeType)type;
	p.conditional.size = size;
	p.conditional.ctx = (CUcontext)ctx;
	void *prev;
	int r = hl_enter(ctx, &prev);
	if (r != 0) return r;
	r = DRV(cuGraphAddNode)(NODE(node), (CUgraph)g, DEPS(deps), ndeps, &p);
	hl_leave(ctx, prev);
	for (unsigned i = 0; r == 0 && i < size; i++) {
		bodies[i] = (uintptr_t)p.conditional.phGraph_out[i];
	}
	return r;
}

int hl_graph_conditional(void *ctx, uint64_t *handle, uintptr_t g, unsigned value, unsigned flags) {
	NEED(cuGraphConditionalHandleCreate);
	CALL(ctx, DRV(cuGraphConditionalHandleCreate)((CUgraphConditionalHandle *)handle, (CUgraph)g, (CUcontext)ctx, value, flags));
}

int hl_graph_exec_set_kernel(uintptr_t ctxv, uintptr_t exec, uintptr_t node,
		uintptr_t f, hl_dims dims, uint32_t smem, hl_args args, char *big, const hl_param *params, int n) {
	void *ctx = (void *)ctxv;
	void *kp[n > 0 ? n : 1];
	CUDA_KERNEL_NODE_PARAMS p = {0};
	kernel_params(&p, kp, ctx, f, dims, smem, big != NULL ? big : (char *)args.w, params, n);
	CALL(ctx, DRV(cuGraphExecKernelNodeSetParams)((CUgraphExec)exec, (CUgraphNode)node, &p));
}

int hl_graph_dot(void *ctx, uintptr_t g, const char *path, unsigned flags) {
	CALL(ctx, DRV(cuGraphDebugDotPrint)((CUgraph)g, path, flags));
}

int hl_occupancy_blocks(void *ctx, int *n, uintptr_t k, int block, size_t smem) {
	CALL(ctx, DRV(cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags)(n, FUNC(k), block, smem, CU_OCCUPANCY_DEFAULT));
}
int hl_occupancy_block_size(void *ctx, int *grid, int *block, uintptr_t k, size_t smem, int limit) {
	CALL(ctx, DRV(cuOccupancyMaxPotentialBlockSizeWithFlags)(grid, block, FUNC(k), NULL, smem, limit,
		CU_OCCUPANCY_DEFAULT));
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

// Managed memory: prefetch and advice, to a device ordinal or, for -1
// (CPUDevice), to the host, in the form the functions have had since CUDA
// 8.0 (a CUdevice, CU_DEVICE_CPU for the host).
static int hl_location(int dev, CUdevice *d) {
	if (dev < 0) {
		*d = CU_DEVICE_CPU;
		return 0;
	}
	return DRV(cuDeviceGet)(d, dev);
}

int hl_mem_prefetch(void *ctx, const void *p, size_t n, int dev, uintptr_t s) {
	void *prev;
	int r = hl_enter_on(ctx, &prev, s);
	if (r != 0) return r;
	CUdevice d;
	r = hl_location(dev, &d);
	if (r == 0) r = DRV(cuMemPrefetchAsync)(DPTR(p), n, d, STREAM(s));
	hl_leave_on(ctx, prev, s);
	return r;
}
int hl_mem_advise(void *ctx, const void *p, size_t n, int advice, int dev) {
	void *prev;
	int r = hl_enter_gated(ctx, &prev);
	if (r != 0) return r;
	CUdevice d;
	r = hl_location(dev, &d);
	if (r == 0) r = DRV(cuMemAdvise)(DPTR(p), n, (CUmem_advise)advice, d);
	hl_leave_gated(ctx, prev);
	return r;
}

// Interprocess sharing (ipc.go): events and device memory exported as
// CU_IPC_HANDLE_SIZE bytes that another process opens.

int hl_ipc_event_handle(void *ctx, uintptr_t e, void *handle) {
	CALL(ctx, DRV(cuIpcGetEventHandle)((CUipcEventHandle *)handle, EVENT(e)));
}

int hl_ipc_open_event(void *ctx, uintptr_t *e, const void *handle) {
	CUipcEventHandle h;
	memcpy(&h, handle, sizeof h);
	CALL(ctx, DRV(cuIpcOpenEventHandle)((CUevent *)e, h));
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
	r = DRV(cuPointerGetAttributes)(2, attrs, data, DPTR(ptr));
	*capable = capable_ != 0;
	if (r == 0 && capable_ != 0) {
		*offset = (size_t)(DPTR(ptr) - base);
		r = DRV(cuIpcGetMemHandle)((CUipcMemHandle *)handle, base);
	}
	hl_leave(ctx, prev);
	return r;
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
	r = DRV(cuIpcOpenMemHandle)(&p, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
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
	return r;
}

int hl_ipc_close_mem(void *ctx, void *base) { GATED(ctx, DRV(cuIpcCloseMemHandle)(DPTR(base))); }

// ---- Logs ------------------------------------------------------------

// The driver's error log (CUDA 12.9, cuLogsRegisterCallback): the driver
// explains in a line why it refused a call, and calls the function
// registered for it with the line. On which thread, cuda.h does not say;
// the driver stamps its log file's lines with the thread of the call
// that failed, and highlevel attaches a line to a call's error only where
// the line came, during the call, on the thread that made it (driverlog.go),
// so a line the driver gives elsewhere goes to the program's logger only.
// hl_driver_log hands each line to Go (hlDriverLog), stamped with the
// calling thread and its count of the shim's calls, hl_calls; hl_log_now
// gives the same stamp for the thread that asks.

extern void hlDriverLog(int level, char *msg, size_t n, long tid, unsigned long long serial);
extern void hlLibraryLog(int lib, int level, char *fn, char *msg);

// hl_tid is the calling thread's id, once asked for.
static __thread long hl_tid;

static long hl_thread(void) {
	if (hl_tid == 0) hl_tid = syscall(SYS_gettid);
	return hl_tid;
}

static void CUDA_CB hl_driver_log(void *data, CUlogLevel level, char *msg, size_t n) {
	(void)data;
	if (hl_log_quiet || msg == NULL) return;
	hlDriverLog((int)level, msg, n, hl_thread(), hl_calls);
}

// hl_logs_init registers hl_driver_log with the driver, once, for the
// process's life; a driver without the log (before CUDA 12.9) returns
// HL_MISSING_BASE - i.
int hl_logs_init(void) {
	if (DRV(cuLogsRegisterCallback) == NULL) return HL_MISSING_BASE - HL_I_cuLogsRegisterCallback;
	CUlogsCallbackHandle h = NULL;
	return DRV(cuLogsRegisterCallback)(hl_driver_log, NULL, &h);
}

hl_log_stamp hl_log_now(void) { return (hl_log_stamp){hl_thread(), hl_calls}; }

// The loggers of the toolkit's libraries (linalg's SetLogger): cuBLAS's
// takes the message alone (cublasLogCallback), cuBLASLt's and cuSPARSE's
// a level, the function and the message (cublasLtLoggerCallback_t,
// cusparseLoggerCallback_t). Each hands the message to Go (hlLibraryLog)
// with its library, on whichever thread the library calls it.
static void hl_blas_log(const char *msg) {
	if (msg != NULL) hlLibraryLog(HL_LOG_BLAS, 0, NULL, (char *)msg);
}
static void hl_blas_lt_log(int level, const char *fn, const char *msg) {
	if (msg != NULL) hlLibraryLog(HL_LOG_BLAS_LT, level, (char *)fn, (char *)msg);
}
static void hl_sparse_log(int level, const char *fn, const char *msg) {
	if (msg != NULL) hlLibraryLog(HL_LOG_SPARSE, level, (char *)fn, (char *)msg);
}

uintptr_t hl_library_logger(int lib) {
	switch (lib) {
	case HL_LOG_BLAS:
		return (uintptr_t)hl_blas_log;
	case HL_LOG_BLAS_LT:
		return (uintptr_t)hl_blas_lt_log;
	case HL_LOG_SPARSE:
		return (uintptr_t)hl_sparse_log;
	}
	return 0;
}
