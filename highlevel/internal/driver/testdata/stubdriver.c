// stubdriver.c is a stand-in for libcuda, so that highlevel's tests and
// benchmarks run on a machine without a GPU (highlevel's stub_test.go and
// bench's stub_test.go build it, with stubprocs.c, and load it through
// $GOCUDA_CUDA). Each function returns at once.
//
// It has one device (compute capability 9.0, an H200's limits), a context
// current per thread as the driver keeps it, memory from malloc, kernels
// whose parameters it knows by name (stubKernels), and host functions and
// stream callbacks run on a thread of its own (stub_queue). Its functions are what
// cuGetProcAddress_v2 returns, from stub_procs (stubprocs.c): each symbol
// of highlevel's shim, introduced at the version the shim requests it at.
// Like a real driver, it returns a symbol at any version from the one that
// introduced it on, as long as the driver is that recent. The environment
// sets:
//
//	STUB_DRIVER_VERSION  the CUDA version of the driver (cuDriverGetVersion),
//	                     CUDA_VERSION of the headers if unset
//	STUB_INIT            the status cuInit returns, CUDA_SUCCESS if unset
//	STUB_LATE            NAME=VERSION: the version that introduced NAME instead
//	STUB_LOG             a file where each request is appended: "NAME VERSION FLAGS"
//	STUB_COPY_US         copies (cuMemcpy, cuMemcpyAsync) copy, taking this many
//	                     microseconds each; unset, they copy nothing. Then a
//	                     stream or pool destroyed during a copy on the legacy
//	                     default stream, which crashed driver 580, fails with
//	                     CUDA_ERROR_ILLEGAL_STATE
//
// Built with -DSTUB_NO_GET_PROC_ADDRESS, it lacks cuGetProcAddress_v2, as a
// driver older than CUDA 12.0 does, and has cuDriverGetVersion by name.
#include <cuda.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

// STUB names the stand-in of a driver function: STUB(cuMemAlloc) is
// stub_cuMemAlloc, whatever versioned symbol cuda.h makes of cuMemAlloc.
#define STUB(name) CUresult stub_##name

static int stub_driver_version(void) {
	const char *v = getenv("STUB_DRIVER_VERSION");
	return v != NULL ? atoi(v) : CUDA_VERSION;
}

STUB(cuDriverGetVersion)(int *v) {
	*v = stub_driver_version();
	return CUDA_SUCCESS;
}

#ifdef STUB_NO_GET_PROC_ADDRESS
CUresult cuDriverGetVersion(int *v) { return stub_cuDriverGetVersion(v); }
#else
struct stub_proc {
	const char *name;
	int version;
	void *fn;
};
extern const struct stub_proc stub_procs[]; // ends with a NULL name

// stub_since returns the version that introduced p: $STUB_LATE's, if it
// names p.
static int stub_since(const struct stub_proc *p) {
	const char *late = getenv("STUB_LATE");
	size_t n = strlen(p->name);
	if (late != NULL && strncmp(late, p->name, n) == 0 && late[n] == '=') {
		return atoi(late + n + 1);
	}
	return p->version;
}

CUresult cuGetProcAddress_v2(const char *symbol, void **fn, int version, cuuint64_t flags,
		CUdriverProcAddressQueryResult *status) {
	const char *log = getenv("STUB_LOG");
	FILE *f;
	if (log != NULL && (f = fopen(log, "a")) != NULL) {
		fprintf(f, "%s %d %llu\n", symbol, version, (unsigned long long)flags);
		fclose(f);
	}
	*fn = NULL;
	*status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
	for (const struct stub_proc *p = stub_procs; p->name != NULL; p++) {
		if (strcmp(p->name, symbol) != 0 || stub_since(p) > stub_driver_version()) {
			continue; // an older driver does not know the function
		}
		if (stub_since(p) > version) {
			*status = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
			break;
		}
		*fn = p->fn;
		*status = CU_GET_PROC_ADDRESS_SUCCESS;
		return CUDA_SUCCESS;
	}
	return CUDA_ERROR_NOT_FOUND;
}
#endif

static __thread CUcontext current;
static char primary; // the device's primary context is its address
static uintptr_t handles = 0x1000; // streams, events, libraries: distinct values

static uintptr_t next_handle(void) { return __atomic_add_fetch(&handles, 16, __ATOMIC_RELAXED); }

// The functions that need an initialized driver fail before cuInit, as
// the driver's do.
static int initialized;

STUB(cuInit)(unsigned flags) {
	const char *r = getenv("STUB_INIT");
	if (r != NULL && atoi(r) != CUDA_SUCCESS) return atoi(r);
	initialized = 1;
	return CUDA_SUCCESS;
}
// The stand-in has $STUB_DEVICES devices, 1 unless set.
static int stub_devices(void) {
	const char *v = getenv("STUB_DEVICES");
	return v != NULL ? atoi(v) : 1;
}

STUB(cuDeviceGet)(CUdevice *d, int ordinal) {
	if (!initialized) return CUDA_ERROR_NOT_INITIALIZED;
	*d = ordinal;
	return ordinal >= 0 && ordinal < stub_devices() ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}
STUB(cuDeviceGetCount)(int *n) {
	*n = stub_devices();
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
	if (!initialized) return CUDA_ERROR_NOT_INITIALIZED;
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

// stub_copy_us is STUB_COPY_US, or -1 where it is unset; stub_legacy
// counts the copies in progress on the legacy default stream.
static long stub_copy_us = -2;
static int stub_legacy;

static CUresult stub_copy(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
	long us = __atomic_load_n(&stub_copy_us, __ATOMIC_RELAXED);
	if (us == -2) {
		const char *v = getenv("STUB_COPY_US");
		us = v != NULL ? atol(v) : -1;
		__atomic_store_n(&stub_copy_us, us, __ATOMIC_RELAXED);
	}
	if (us < 0) return CUDA_SUCCESS;
	if (s == NULL) __atomic_add_fetch(&stub_legacy, 1, __ATOMIC_SEQ_CST);
	struct timespec t = {us / 1000000, us % 1000000 * 1000};
	nanosleep(&t, NULL);
	memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n);
	if (s == NULL) __atomic_sub_fetch(&stub_legacy, 1, __ATOMIC_SEQ_CST);
	return CUDA_SUCCESS;
}
STUB(cuMemcpy)(CUdeviceptr dst, CUdeviceptr src, size_t n) { return stub_copy(dst, src, n, NULL); }
STUB(cuMemcpyAsync)(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) { return stub_copy(dst, src, n, s); }

// stub_destroyable refuses a destruction during a copy on the legacy
// default stream.
static CUresult stub_destroyable(void) {
	return __atomic_load_n(&stub_legacy, __ATOMIC_SEQ_CST) > 0 ? CUDA_ERROR_ILLEGAL_STATE : CUDA_SUCCESS;
}
STUB(cuStreamDestroy)(CUstream s) { return stub_destroyable(); }
STUB(cuMemPoolDestroy)(CUmemoryPool p) { return stub_destroyable(); }

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

// Host functions (cuLaunchHostFunc) and stream callbacks
// (cuStreamAddCallback) run in the order they were queued, whatever their
// stream, on a thread of the stub's, as the driver runs them on a thread of
// its own; cuStreamSynchronize and cuCtxSynchronize wait until those queued
// before them have run.
struct stub_host_fn {
	CUhostFn fn; // or cb
	CUstreamCallback cb;
	CUstream s;
	void *data;
	struct stub_host_fn *next;
};

static pthread_mutex_t stub_host_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t stub_host_cv = PTHREAD_COND_INITIALIZER; // one queued, or one run
static struct stub_host_fn *stub_host_head, **stub_host_tail = &stub_host_head;
static unsigned long stub_host_queued, stub_host_ran;
static int stub_host_started;

static void *stub_host_thread(void *arg) {
	pthread_mutex_lock(&stub_host_mu);
	for (;;) {
		while (stub_host_head == NULL) pthread_cond_wait(&stub_host_cv, &stub_host_mu);
		struct stub_host_fn *f = stub_host_head;
		if ((stub_host_head = f->next) == NULL) stub_host_tail = &stub_host_head;
		pthread_mutex_unlock(&stub_host_mu);
		if (f->fn != NULL) {
			f->fn(f->data);
		} else {
			f->cb(f->s, CUDA_SUCCESS, f->data);
		}
		free(f);
		pthread_mutex_lock(&stub_host_mu);
		stub_host_ran++;
		pthread_cond_broadcast(&stub_host_cv);
	}
	return NULL;
}

static CUresult stub_queue(CUhostFn fn, CUstreamCallback cb, CUstream s, void *data) {
	struct stub_host_fn *f = malloc(sizeof *f);
	if (f == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
	*f = (struct stub_host_fn){fn, cb, s, data, NULL};
	pthread_mutex_lock(&stub_host_mu);
	if (!stub_host_started) {
		pthread_t t;
		if (pthread_create(&t, NULL, stub_host_thread, NULL) != 0) {
			pthread_mutex_unlock(&stub_host_mu);
			free(f);
			return CUDA_ERROR_OUT_OF_MEMORY;
		}
		pthread_detach(t);
		stub_host_started = 1;
	}
	*stub_host_tail = f;
	stub_host_tail = &f->next;
	__atomic_store_n(&stub_host_queued, stub_host_queued + 1, __ATOMIC_RELAXED);
	pthread_cond_broadcast(&stub_host_cv);
	pthread_mutex_unlock(&stub_host_mu);
	return CUDA_SUCCESS;
}

// stub_host_wait returns once the host functions queued so far have run;
// at once when none was ever queued (the benchmarks' streams).
static CUresult stub_host_wait(void) {
	if (__atomic_load_n(&stub_host_queued, __ATOMIC_RELAXED) == 0) return CUDA_SUCCESS;
	pthread_mutex_lock(&stub_host_mu);
	unsigned long n = stub_host_queued;
	while (stub_host_ran < n) pthread_cond_wait(&stub_host_cv, &stub_host_mu);
	pthread_mutex_unlock(&stub_host_mu);
	return CUDA_SUCCESS;
}

STUB(cuLaunchHostFunc)(CUstream s, CUhostFn fn, void *data) { return stub_queue(fn, NULL, s, data); }
STUB(cuStreamAddCallback)(CUstream s, CUstreamCallback cb, void *data, unsigned flags) {
	return stub_queue(NULL, cb, s, data);
}
STUB(cuStreamSynchronize)(CUstream s) { return stub_host_wait(); }

// An event has happened, and a stream is idle, once the host functions
// queued before its last record, or before the query, have run, whatever
// their stream: a host function that blocks holds back the work queued
// after it. The records are kept by handle in a table, where one pushed
// out by another counts as happened.
#define STUB_EVENTS 4096
static struct {
	CUevent e;
	unsigned long at;
} stub_events[STUB_EVENTS];

static unsigned stub_event_slot(CUevent e) { return (uintptr_t)e / 16 % STUB_EVENTS; }

// stub_pending reports whether e waits for host functions; stub_host_mu is held.
static int stub_pending(CUevent e) {
	unsigned i = stub_event_slot(e);
	return stub_events[i].e == e && stub_host_ran < stub_events[i].at;
}

STUB(cuEventRecord)(CUevent e, CUstream s) {
	pthread_mutex_lock(&stub_host_mu);
	unsigned i = stub_event_slot(e);
	stub_events[i].e = e;
	stub_events[i].at = stub_host_queued;
	pthread_mutex_unlock(&stub_host_mu);
	return CUDA_SUCCESS;
}
STUB(cuEventQuery)(CUevent e) {
	pthread_mutex_lock(&stub_host_mu);
	CUresult r = stub_pending(e) ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
	pthread_mutex_unlock(&stub_host_mu);
	return r;
}
STUB(cuEventSynchronize)(CUevent e) {
	pthread_mutex_lock(&stub_host_mu);
	while (stub_pending(e)) pthread_cond_wait(&stub_host_cv, &stub_host_mu);
	pthread_mutex_unlock(&stub_host_mu);
	return CUDA_SUCCESS;
}
STUB(cuStreamQuery)(CUstream s) {
	pthread_mutex_lock(&stub_host_mu);
	CUresult r = stub_host_ran < stub_host_queued ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
	pthread_mutex_unlock(&stub_host_mu);
	return r;
}
STUB(cuCtxSynchronize)(void) { return stub_host_wait(); }
