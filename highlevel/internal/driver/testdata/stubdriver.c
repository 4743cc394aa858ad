// stubdriver.c is a stand-in for libcuda, so that highlevel's tests and
// benchmarks run on a machine without a GPU (highlevel's stub_test.go and
// bench's stub_test.go build it, with stubprocs.c, and load it through
// $GOCUDA_CUDA).
//
// What it implements it does, on host memory, at the call, and it checks
// what it is given as the driver does; what it does not implement it
// refuses, with CUDA_ERROR_NOT_SUPPORTED, as a driver refuses a call it
// does not support: each function of highlevel's shim that is not defined
// here is stubprocs.c's, which returns that, and a function defined here
// returns it too for a case it does not model (said where). Nothing
// returns success without doing the work it was asked for.
//
// It has one device (compute capability 9.0, an H200's limits), or
// $STUB_DEVICES, each with a primary context, a context current per thread
// as the driver keeps it, and:
//
//   - memory from malloc, in a table of allocations (device, managed,
//     pinned host and registered host memory) against which copies,
//     memsets, kernels, frees and pointer questions are checked: a range
//     past the end of its allocation, a free of what is no allocation and
//     a memset of memory that is not the device's are errors;
//   - copies (cuMemcpy*) that copy and memsets (cuMemsetD*) that set, at
//     the call, which is in order on every stream; host functions and
//     stream callbacks run later, on a thread of the stand-in's, in the
//     order they were queued, whatever their stream (so work queued after
//     a host function that has not run yet is done before it: the one way
//     the stand-in's order differs from a stream's); stream-ordered frees
//     wait for the host functions queued before them;
//   - kernels whose parameters it knows by name (stubKernels), which it
//     runs, as their CUDA source (bench's kernels) says: a launch that
//     would use memory that is not the device's does nothing and returns
//     CUDA_ERROR_ILLEGAL_ADDRESS; a launch of another kernel is refused;
//   - stream captures: a stream captures the work queued on it (copies,
//     memsets, host functions, kernels, graph launches) into a graph of
//     its own, or into a graph given after nodes of it
//     (cuStreamBeginCaptureToGraph), instead of doing it, each piece after
//     the nodes the stream's work came to, and reports its capture and
//     those nodes (cuStreamGetCaptureInfo); other streams join it by
//     waiting for an event recorded in it, and the capture ends with
//     CUDA_ERROR_STREAM_CAPTURE_UNJOINED where one did not rejoin; what
//     CUDA refuses in a capture is refused, and
//     invalidates it where CUDA's does; work on the legacy default stream
//     while a blocking stream captures is CUDA_ERROR_STREAM_CAPTURE_IMPLICIT.
//     The capture modes are kept but refuse no call (the shim itself
//     refuses what a global capture forbids);
//   - graphs, as the captured work in order, or built node by node (empty,
//     kernel, memset, copy, child graph and conditional nodes, with their
//     dependencies), instantiated as a copy and launched by doing the work
//     in an order its dependencies allow (a launch first checks that the
//     memory its work names is still allocated: CUDA_ERROR_ILLEGAL_ADDRESS,
//     doing nothing, where it is not); the kernel nodes of an instantiation
//     take new arguments, and a graph is written in DOT; with CUDA
//     user objects that graphs, their instantiations and the launches in
//     flight hold, destroyed on the stand-in's thread once the last
//     reference is gone (the section "Graphs" says what it refuses);
//   - streams, events, memory pools, graphs, graph nodes, conditional
//     handles and libraries as objects of the stand-in's, never freed, so
//     that a handle used after its destroy is CUDA_ERROR_INVALID_HANDLE
//     (or CUDA_ERROR_INVALID_VALUE, as the driver says of some) rather
//     than memory reused.
//
// Its functions are what cuGetProcAddress_v2 returns, from stub_procs
// (stubprocs.c): each symbol of highlevel's shim, introduced at the version
// the shim requests it at. Like a real driver, it returns a symbol at any
// version from the one that introduced it on, as long as the driver is that
// recent. Each function here is STUB(name), in the section of its area;
// a function added to the shim is refused until it is defined in its
// section. The environment sets:
//
//	STUB_DRIVER_VERSION  the CUDA version of the driver (cuDriverGetVersion),
//	                     CUDA_VERSION of the headers if unset
//	STUB_INIT            the status cuInit returns, CUDA_SUCCESS if unset
//	STUB_DEVICES         the number of devices, 1 if unset
//	STUB_LATE            NAME=VERSION: the version that introduced NAME instead
//	STUB_LOG             a file where each request is appended: "NAME VERSION FLAGS"
//	STUB_COPY_US         copies (cuMemcpy, cuMemcpyAsync) take this many
//	                     microseconds each, so that what races them is met
//
// A stream or pool destroyed during a copy on the legacy default stream,
// which crashed driver 580, fails with CUDA_ERROR_ILLEGAL_STATE.
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
// Its parameters are those of the form the shim requests (zsymbols.h),
// which for some functions is older than cuda.h's.
#define STUB(name) CUresult stub_##name

// STUB_UNMODELLED is the answer to a case the stand-in does not model:
// CUDA_ERROR_NOT_SUPPORTED, as for the functions it does not implement.
#define STUB_UNMODELLED CUDA_ERROR_NOT_SUPPORTED

// The lock order is stub_mu (streams, captures, events, graphs, user
// objects, pools, libraries), then stub_mem_mu (the allocations), then
// stub_host_mu (the host thread's queue).
static pthread_mutex_t stub_mu = PTHREAD_MUTEX_INITIALIZER;

// ---- Versions and entry points ----------------------------------------

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
static const struct stub_proc *stub_logs_procs(void); // the section "Logs"

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
	const struct stub_proc *tables[] = {stub_procs, stub_logs_procs()};
	for (int t = 0; t < 2; t++) {
		for (const struct stub_proc *p = tables[t]; p->name != NULL; p++) {
			if (strcmp(p->name, symbol) != 0 || stub_since(p) > stub_driver_version()) {
				continue; // an older driver does not know the function
			}
			if (stub_since(p) > version) {
				*status = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
				return CUDA_ERROR_NOT_FOUND;
			}
			*fn = p->fn;
			*status = CU_GET_PROC_ADDRESS_SUCCESS;
			return CUDA_SUCCESS;
		}
	}
	return CUDA_ERROR_NOT_FOUND;
}
#endif

// ---- Devices and contexts ---------------------------------------------

enum { STUB_MAX_DEVICES = 64 };

static __thread CUcontext current;
// Device d's primary context is the address of stub_primary[d]: an address
// inside one is no context.
static char stub_primary[STUB_MAX_DEVICES][16];

// The functions that need an initialized driver fail before cuInit, as
// the driver's do.
static int initialized;

STUB(cuInit)(unsigned flags) {
	const char *r = getenv("STUB_INIT");
	if (r != NULL && atoi(r) != CUDA_SUCCESS) return atoi(r);
	if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
	initialized = 1;
	return CUDA_SUCCESS;
}
// The stand-in has $STUB_DEVICES devices, 1 unless set.
static int stub_devices(void) {
	const char *v = getenv("STUB_DEVICES");
	int n = v != NULL ? atoi(v) : 1;
	return n < STUB_MAX_DEVICES ? n : STUB_MAX_DEVICES;
}
static int stub_device_ok(CUdevice d) { return d >= 0 && d < stub_devices(); }

// stub_ctx_device returns the device of context c, or -1 where c is none.
static int stub_ctx_device(CUcontext c) {
	uintptr_t p = (uintptr_t)c, base = (uintptr_t)stub_primary;
	if (p < base || (p - base) % sizeof stub_primary[0] != 0) return -1;
	int d = (int)((p - base) / sizeof stub_primary[0]);
	return stub_device_ok(d) ? d : -1;
}

// stub_current_device returns the device of the calling thread's context,
// or -1 where it has none (CUDA_ERROR_INVALID_CONTEXT).
static int stub_current_device(void) { return current != NULL ? stub_ctx_device(current) : -1; }

STUB(cuDeviceGet)(CUdevice *d, int ordinal) {
	if (!initialized) return CUDA_ERROR_NOT_INITIALIZED;
	*d = ordinal;
	return stub_device_ok(ordinal) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}
STUB(cuDeviceGetCount)(int *n) {
	*n = stub_devices();
	return CUDA_SUCCESS;
}
STUB(cuDeviceGetName)(char *name, int n, CUdevice d) {
	if (!stub_device_ok(d)) return CUDA_ERROR_INVALID_DEVICE;
	strncpy(name, "stub", n);
	return CUDA_SUCCESS;
}
STUB(cuDeviceGetAttribute)(int *v, CUdevice_attribute attr, CUdevice d) {
	if (!stub_device_ok(d)) return CUDA_ERROR_INVALID_DEVICE;
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
	if (!initialized) return CUDA_ERROR_NOT_INITIALIZED;
	if (!stub_device_ok(d)) return CUDA_ERROR_INVALID_DEVICE;
	*ctx = (CUcontext)stub_primary[d];
	return CUDA_SUCCESS;
}
STUB(cuDevicePrimaryCtxGetState)(CUdevice d, unsigned *flags, int *active) {
	if (!stub_device_ok(d)) return CUDA_ERROR_INVALID_DEVICE;
	*flags = 0;
	*active = 1;
	return CUDA_SUCCESS;
}
STUB(cuCtxGetCurrent)(CUcontext *ctx) {
	if (!initialized) return CUDA_ERROR_NOT_INITIALIZED;
	*ctx = current;
	return CUDA_SUCCESS;
}
// cuCtxSetCurrent takes any pointer, as the driver takes any context
// handle without looking into it: the tests make others current.
STUB(cuCtxSetCurrent)(CUcontext ctx) {
	current = ctx;
	return CUDA_SUCCESS;
}
STUB(cuCtxGetDevice)(CUdevice *d) {
	int dev = stub_current_device();
	if (dev < 0) return CUDA_ERROR_INVALID_CONTEXT;
	*d = dev;
	return CUDA_SUCCESS;
}
STUB(cuCtxGetStreamPriorityRange)(int *least, int *greatest) {
	*least = 0;
	*greatest = -5;
	return CUDA_SUCCESS;
}
STUB(cuMemGetInfo)(size_t *free, size_t *total) {
	if (stub_current_device() < 0) return CUDA_ERROR_INVALID_CONTEXT;
	*free = *total = (size_t)140 << 30;
	return CUDA_SUCCESS;
}

// ---- Objects ----------------------------------------------------------

// Each object the stand-in hands out (stream, event, memory pool, graph,
// instantiated graph, user object, library, graph node, conditional
// handle) is a struct that begins with its kind's magic number, set to
// STUB_DEAD when it is destroyed; it is never freed. stub_objects is the
// set of them all, so that a handle is looked into only once it is known
// to be one.
enum {
	STUB_STREAM = 0x57e4a1,
	STUB_EVENT,
	STUB_POOL,
	STUB_GRAPH,
	STUB_EXEC,
	STUB_UOBJ,
	STUB_LIBRARY,
	STUB_NODE,
	STUB_COND,
	STUB_DEAD = 0xdead,
};

static void **stub_objects; // open addressing; stub_mu is held
static size_t stub_nobjects, stub_capobjects;

static size_t stub_object_slot(void *const *set, size_t cap, const void *p) {
	size_t i = ((uintptr_t)p >> 4) * 0x9e3779b97f4a7c15ull % cap;
	while (set[i] != NULL && set[i] != p) i = (i + 1) % cap;
	return i;
}

// stub_new returns a zeroed object of size n with the magic number magic,
// or NULL where memory is short; stub_mu is held.
static void *stub_new(size_t n, unsigned magic) {
	if (2 * (stub_nobjects + 1) > stub_capobjects) {
		size_t cap = stub_capobjects ? 2 * stub_capobjects : 1024;
		void **set = calloc(cap, sizeof *set);
		if (set == NULL) return NULL;
		for (size_t i = 0; i < stub_capobjects; i++) {
			if (stub_objects[i] != NULL) set[stub_object_slot(set, cap, stub_objects[i])] = stub_objects[i];
		}
		free(stub_objects);
		stub_objects = set;
		stub_capobjects = cap;
	}
	unsigned *o = calloc(1, n);
	if (o == NULL) return NULL;
	*o = magic;
	stub_objects[stub_object_slot(stub_objects, stub_capobjects, o)] = o;
	stub_nobjects++;
	return o;
}

// stub_object returns h where it is a live object of kind magic, else
// NULL; stub_mu is held.
static void *stub_object(const void *h, unsigned magic) {
	if (h == NULL || stub_capobjects == 0) return NULL;
	unsigned *o = stub_objects[stub_object_slot(stub_objects, stub_capobjects, h)];
	return o != NULL && *o == magic ? o : NULL;
}

// ---- Memory -----------------------------------------------------------

// The allocations, by address: device memory (cuMemAlloc, a pool's),
// managed memory, pinned host memory (cuMemHostAlloc) and registered host
// memory (cuMemHostRegister), all host memory. Host memory is portable and
// mapped, with unified addressing, so the device uses every kind at its
// address; an address in none is pageable host memory, which only copies
// take.
enum { MEM_DEVICE, MEM_MANAGED, MEM_HOST, MEM_REGISTERED, MEM_GRAPH };

struct stub_pool {
	unsigned magic;
	int device, reuse[3]; // the CU_MEMPOOL_ATTR_REUSE_* attributes
	cuuint64_t threshold; // CU_MEMPOOL_ATTR_RELEASE_THRESHOLD
	size_t used, used_high; // stub_mem_mu is held
};

struct stub_alloc {
	uintptr_t base;
	size_t size;
	int kind, device;
	struct stub_pool *pool; // of a pool's memory
	struct stub_galloc *galloc; // of a graph's allocation (MEM_GRAPH)
};

// A graph's allocation (cuGraphAddMemAllocNode): its memory, reserved as
// the node is added at an address of its own (a MEM_GRAPH allocation), is
// there (live) from a run of the node to a run of its free node: a node
// that uses it outside runs, or any other work, finds no memory there
// (stub_usable), but the nodes being added or changed (stub_adding) do.
// The graph's nodes and their copies (instantiations) share it, refs of
// them, and the last frees it. A launch of a graph whose allocation is
// live, not freed by its last launch, is refused.
struct stub_galloc {
	unsigned refs;
	int live, freed; // freed: a free node of the graph frees it
	uintptr_t base;
	size_t size;
};

// stub_adding is set while a graph node's parameters are checked: the
// memory of graphs' allocations counts as there.
static __thread int stub_adding;

// stub_usable reports whether the memory of allocation a is there for the
// device's work; stub_mem_mu is held.
static int stub_usable(const struct stub_alloc *a) { return a->galloc == NULL || a->galloc->live || stub_adding; }

static pthread_mutex_t stub_mem_mu = PTHREAD_MUTEX_INITIALIZER;
static struct stub_alloc *stub_allocs; // sorted by base
static size_t stub_nallocs, stub_capallocs;

// stub_above returns the index of the first allocation above p; stub_mem_mu
// is held, as for the functions below that look at the allocations.
static size_t stub_above(uintptr_t p) {
	size_t lo = 0, hi = stub_nallocs;
	while (lo < hi) {
		size_t m = lo + (hi - lo) / 2;
		if (stub_allocs[m].base <= p) {
			lo = m + 1;
		} else {
			hi = m;
		}
	}
	return lo;
}

// stub_find returns the allocation that holds address p, or NULL.
static struct stub_alloc *stub_find(uintptr_t p) {
	size_t i = stub_above(p);
	return i > 0 && p - stub_allocs[i - 1].base < stub_allocs[i - 1].size ? &stub_allocs[i - 1] : NULL;
}

// Where n bytes at p lie (stub_range): inside one allocation, outside all
// of them (pageable memory), or across an allocation's end or beginning.
enum { RANGE_IN, RANGE_OUTSIDE, RANGE_ACROSS };

static int stub_range(uintptr_t p, size_t n, struct stub_alloc **in) {
	struct stub_alloc *a = stub_find(p);
	if (in != NULL) *in = a;
	if (p + n < p) return RANGE_ACROSS;
	if (a != NULL) return n <= a->size - (p - a->base) ? RANGE_IN : RANGE_ACROSS;
	size_t i = stub_above(p);
	return i < stub_nallocs && stub_allocs[i].base < p + n ? RANGE_ACROSS : RANGE_OUTSIDE;
}

// stub_device_range checks that n bytes at p are memory the device can
// use, all in one allocation, as a memset's or a kernel's: CUDA_ERROR_INVALID_VALUE
// where they are not.
static CUresult stub_device_range(CUdeviceptr p, size_t n) {
	if (n == 0) return CUDA_SUCCESS;
	pthread_mutex_lock(&stub_mem_mu);
	struct stub_alloc *in;
	int r = stub_range((uintptr_t)p, n, &in);
	int ok = r == RANGE_IN && stub_usable(in);
	pthread_mutex_unlock(&stub_mem_mu);
	return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

// stub_copy_range checks one side of a copy, which may be pageable host
// memory (*pageable is set then) but not part of an allocation and
// beyond it.
static CUresult stub_copy_range(CUdeviceptr p, size_t n, int *pageable) {
	if (n == 0) return CUDA_SUCCESS;
	if (p == 0) return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&stub_mem_mu);
	struct stub_alloc *in;
	int r = stub_range((uintptr_t)p, n, &in);
	if (r == RANGE_IN && !stub_usable(in)) r = RANGE_ACROSS;
	pthread_mutex_unlock(&stub_mem_mu);
	if (r == RANGE_OUTSIDE) *pageable = 1;
	return r == RANGE_ACROSS ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

// stub_list adds an allocation, which overlaps none.
static CUresult stub_list(struct stub_alloc a) {
	if (stub_nallocs == stub_capallocs) {
		size_t cap = stub_capallocs ? 2 * stub_capallocs : 256;
		struct stub_alloc *p = realloc(stub_allocs, cap * sizeof *p);
		if (p == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
		stub_allocs = p;
		stub_capallocs = cap;
	}
	size_t i = stub_above(a.base);
	memmove(&stub_allocs[i + 1], &stub_allocs[i], (stub_nallocs - i) * sizeof a);
	stub_allocs[i] = a;
	stub_nallocs++;
	if (a.pool != NULL) {
		a.pool->used += a.size;
		if (a.pool->used > a.pool->used_high) a.pool->used_high = a.pool->used;
	}
	return CUDA_SUCCESS;
}

// stub_unlist removes the allocation that begins at p, of one of the
// kinds in the bit mask kinds, into *out; it returns 0 where there is none.
static int stub_unlist(uintptr_t p, unsigned kinds, struct stub_alloc *out) {
	struct stub_alloc *a = stub_find(p);
	if (a == NULL || a->base != p || !(kinds & 1u << a->kind)) return 0;
	*out = *a;
	if (a->pool != NULL) a->pool->used -= a->size;
	size_t i = (size_t)(a - stub_allocs);
	memmove(&stub_allocs[i], &stub_allocs[i + 1], (stub_nallocs - i - 1) * sizeof *a);
	stub_nallocs--;
	return 1;
}

// stub_allocate allocates n bytes of memory of the kind given, on the
// device of the current context.
static CUresult stub_allocate(CUdeviceptr *p, size_t n, int kind, struct stub_pool *pool) {
	*p = 0;
	int dev = stub_current_device();
	if (dev < 0) return CUDA_ERROR_INVALID_CONTEXT;
	if (n == 0) return CUDA_ERROR_INVALID_VALUE;
	void *m = malloc(n);
	if (m == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
	pthread_mutex_lock(&stub_mem_mu);
	CUresult r = stub_list((struct stub_alloc){(uintptr_t)m, n, kind, dev, pool});
	pthread_mutex_unlock(&stub_mem_mu);
	if (r != CUDA_SUCCESS) {
		free(m);
		return r;
	}
	*p = (CUdeviceptr)(uintptr_t)m;
	return CUDA_SUCCESS;
}

// stub_deallocate frees the allocation at p, of one of kinds.
static CUresult stub_deallocate(uintptr_t p, unsigned kinds) {
	if (stub_current_device() < 0) return CUDA_ERROR_INVALID_CONTEXT;
	struct stub_alloc a;
	pthread_mutex_lock(&stub_mem_mu);
	int ok = stub_unlist(p, kinds, &a);
	pthread_mutex_unlock(&stub_mem_mu);
	if (!ok) return CUDA_ERROR_INVALID_VALUE;
	free((void *)a.base);
	return CUDA_SUCCESS;
}

STUB(cuMemAlloc)(CUdeviceptr *p, size_t n) { return stub_allocate(p, n, MEM_DEVICE, NULL); }
STUB(cuMemAllocManaged)(CUdeviceptr *p, size_t n, unsigned flags) {
	if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST) return CUDA_ERROR_INVALID_VALUE;
	return stub_allocate(p, n, MEM_MANAGED, NULL);
}
// cuMemFree frees device memory, a pool's too, and managed memory.
STUB(cuMemFree)(CUdeviceptr p) { return stub_deallocate((uintptr_t)p, 1u << MEM_DEVICE | 1u << MEM_MANAGED); }
STUB(cuMemHostAlloc)(void **p, size_t n, unsigned flags) {
	if (flags & ~(unsigned)(CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED)) {
		return CUDA_ERROR_INVALID_VALUE;
	}
	CUdeviceptr d;
	CUresult r = stub_allocate(&d, n, MEM_HOST, NULL);
	*p = (void *)(uintptr_t)d;
	return r;
}
STUB(cuMemFreeHost)(void *p) { return stub_deallocate((uintptr_t)p, 1u << MEM_HOST); }

STUB(cuMemHostRegister)(void *p, size_t n, unsigned flags) {
	if (stub_current_device() < 0) return CUDA_ERROR_INVALID_CONTEXT;
	if (p == NULL || n == 0 || (flags & ~(unsigned)(CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP |
			CU_MEMHOSTREGISTER_IOMEMORY | CU_MEMHOSTREGISTER_READ_ONLY))) {
		return CUDA_ERROR_INVALID_VALUE;
	}
	if (flags & (CU_MEMHOSTREGISTER_IOMEMORY | CU_MEMHOSTREGISTER_READ_ONLY)) return STUB_UNMODELLED;
	pthread_mutex_lock(&stub_mem_mu);
	struct stub_alloc *a;
	CUresult r = CUDA_SUCCESS;
	if (stub_range((uintptr_t)p, n, &a) != RANGE_OUTSIDE) {
		if (a == NULL) a = &stub_allocs[stub_above((uintptr_t)p)];
		r = a->kind == MEM_REGISTERED ? CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED : CUDA_ERROR_INVALID_VALUE;
	} else {
		r = stub_list((struct stub_alloc){(uintptr_t)p, n, MEM_REGISTERED, stub_current_device(), NULL});
	}
	pthread_mutex_unlock(&stub_mem_mu);
	return r;
}
STUB(cuMemHostUnregister)(void *p) {
	if (stub_current_device() < 0) return CUDA_ERROR_INVALID_CONTEXT;
	struct stub_alloc a;
	pthread_mutex_lock(&stub_mem_mu);
	int ok = stub_unlist((uintptr_t)p, 1u << MEM_REGISTERED, &a);
	pthread_mutex_unlock(&stub_mem_mu);
	return ok ? CUDA_SUCCESS : CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
}

// cuPointerGetAttributes answers from the allocations; an address in none
// has the answers CUDA gives for memory it does not know, with success.
STUB(cuPointerGetAttributes)(unsigned n, CUpointer_attribute *attrs, void **data, CUdeviceptr ptr) {
	pthread_mutex_lock(&stub_mem_mu);
	struct stub_alloc *found = stub_find((uintptr_t)ptr), a = found != NULL ? *found : (struct stub_alloc){0};
	pthread_mutex_unlock(&stub_mem_mu);
	int host = found != NULL && (a.kind == MEM_HOST || a.kind == MEM_REGISTERED);
	for (unsigned i = 0; i < n; i++) {
		switch (attrs[i]) {
		case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
			*(unsigned *)data[i] = found == NULL ? 0 : host ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
			break;
		case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: *(int *)data[i] = found != NULL ? a.device : -2; break;
		case CU_POINTER_ATTRIBUTE_IS_MANAGED: *(unsigned char *)data[i] = found != NULL && a.kind == MEM_MANAGED; break;
		case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
			*(unsigned char *)data[i] = found != NULL && a.kind == MEM_DEVICE && a.pool == NULL;
			break;
		case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: *(CUdeviceptr *)data[i] = (CUdeviceptr)a.base; break;
		case CU_POINTER_ATTRIBUTE_RANGE_SIZE: *(size_t *)data[i] = a.size; break;
		default: return STUB_UNMODELLED;
		}
	}
	return CUDA_SUCCESS;
}

// Managed memory lives where the stand-in's memory does: advice and
// prefetches (cuMemPrefetchAsync, with the work on streams) are checked,
// and have nothing to move.
static int stub_managed_range(CUdeviceptr p, size_t n) {
	struct stub_alloc *a;
	pthread_mutex_lock(&stub_mem_mu);
	int ok = stub_range((uintptr_t)p, n, &a) == RANGE_IN && a->kind == MEM_MANAGED;
	pthread_mutex_unlock(&stub_mem_mu);
	return ok;
}
STUB(cuMemAdvise)(CUdeviceptr p, size_t n, CUmem_advise advice, CUdevice d) {
	if (stub_current_device() < 0) return CUDA_ERROR_INVALID_CONTEXT;
	if (advice < CU_MEM_ADVISE_SET_READ_MOSTLY || advice > CU_MEM_ADVISE_UNSET_ACCESSED_BY) return CUDA_ERROR_INVALID_VALUE;
	if (advice != CU_MEM_ADVISE_SET_READ_MOSTLY && advice != CU_MEM_ADVISE_UNSET_READ_MOSTLY && d != CU_DEVICE_CPU &&
			!stub_device_ok(d)) {
		return CUDA_ERROR_INVALID_DEVICE;
	}
	return n == 0 || stub_managed_range(p, n) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

// Memory pools keep nothing: freed memory goes back to the system at once,
// so a pool's reserved memory is its used memory, and a trim has nothing to
// give back. Each device has its default pool.
static struct stub_pool *stub_default_pools[STUB_MAX_DEVICES];

static struct stub_pool *stub_new_pool(int dev) {
	struct stub_pool *p = stub_new(sizeof *p, STUB_POOL);
	if (p != NULL) *p = (struct stub_pool){STUB_POOL, dev, {1, 1, 1}, 0, 0, 0};
	return p;
}

STUB(cuDeviceGetDefaultMemPool)(CUmemoryPool *p, CUdevice d) {
	if (!stub_device_ok(d)) return CUDA_ERROR_INVALID_DEVICE;
	pthread_mutex_lock(&stub_mu);
	if (stub_default_pools[d] == NULL) stub_default_pools[d] = stub_new_pool(d);
	*p = (CUmemoryPool)stub_default_pools[d];
	pthread_mutex_unlock(&stub_mu);
	return *p != NULL ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
STUB(cuMemPoolCreate)(CUmemoryPool *p, const CUmemPoolProps *props) {
	if (props == NULL || props->allocType != CU_MEM_ALLOCATION_TYPE_PINNED) return CUDA_ERROR_INVALID_VALUE;
	if (props->location.type != CU_MEM_LOCATION_TYPE_DEVICE || props->handleTypes != CU_MEM_HANDLE_TYPE_NONE ||
			props->maxSize != 0 || props->usage != 0) {
		return STUB_UNMODELLED;
	}
	if (!stub_device_ok(props->location.id)) return CUDA_ERROR_INVALID_DEVICE;
	pthread_mutex_lock(&stub_mu);
	*p = (CUmemoryPool)stub_new_pool(props->location.id);
	pthread_mutex_unlock(&stub_mu);
	return *p != NULL ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

// stub_pool returns pool where it is a live pool, else NULL; stub_mu is
// held.
static struct stub_pool *stub_pool(CUmemoryPool pool) { return stub_object(pool, STUB_POOL); }

static CUresult stub_destroyable(void);

// cuMemPoolDestroy leaves the memory allocated from the pool to its frees,
// as CUDA does.
STUB(cuMemPoolDestroy)(CUmemoryPool pool) {
	CUresult r = stub_destroyable();
	if (r != CUDA_SUCCESS) return r;
	pthread_mutex_lock(&stub_mu);
	struct stub_pool *p = stub_pool(pool);
	int dflt = p != NULL && stub_default_pools[p->device] == p;
	if (p != NULL && !dflt) p->magic = STUB_DEAD;
	pthread_mutex_unlock(&stub_mu);
	return p != NULL && !dflt ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
STUB(cuMemPoolSetAttribute)(CUmemoryPool pool, CUmemPool_attribute attr, void *v) {
	CUresult r = CUDA_SUCCESS;
	pthread_mutex_lock(&stub_mu);
	struct stub_pool *p = stub_pool(pool);
	if (p == NULL) {
		r = CUDA_ERROR_INVALID_VALUE;
	} else {
		pthread_mutex_lock(&stub_mem_mu);
		switch (attr) {
		case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
		case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
		case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
			p->reuse[attr - CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES] = *(int *)v != 0;
			break;
		case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD: p->threshold = *(cuuint64_t *)v; break;
		case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
		case CU_MEMPOOL_ATTR_USED_MEM_HIGH: // only reset, to the current value
			if (*(cuuint64_t *)v != 0) {
				r = CUDA_ERROR_INVALID_VALUE;
			} else {
				p->used_high = p->used;
			}
			break;
		default: r = CUDA_ERROR_INVALID_VALUE;
		}
		pthread_mutex_unlock(&stub_mem_mu);
	}
	pthread_mutex_unlock(&stub_mu);
	return r;
}
STUB(cuMemPoolGetAttribute)(CUmemoryPool pool, CUmemPool_attribute attr, void *v) {
	CUresult r = CUDA_SUCCESS;
	pthread_mutex_lock(&stub_mu);
	struct stub_pool *p = stub_pool(pool);
	if (p == NULL) {
		r = CUDA_ERROR_INVALID_VALUE;
	} else {
		pthread_mutex_lock(&stub_mem_mu);
		switch (attr) {
		case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
		case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
		case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
			*(int *)v = p->reuse[attr - CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES];
			break;
		case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD: *(cuuint64_t *)v = p->threshold; break;
		case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT:
		case CU_MEMPOOL_ATTR_USED_MEM_CURRENT: *(cuuint64_t *)v = p->used; break;
		case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
		case CU_MEMPOOL_ATTR_USED_MEM_HIGH: *(cuuint64_t *)v = p->used_high; break;
		default: r = CUDA_ERROR_INVALID_VALUE;
		}
		pthread_mutex_unlock(&stub_mem_mu);
	}
	pthread_mutex_unlock(&stub_mu);
	return r;
}
STUB(cuMemPoolTrimTo)(CUmemoryPool pool, size_t keep) {
	pthread_mutex_lock(&stub_mu);
	struct stub_pool *p = stub_pool(pool);
	pthread_mutex_unlock(&stub_mu);
	return p != NULL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

// ---- The host thread --------------------------------------------------

// Host functions (cuLaunchHostFunc, graphs' host nodes) and stream
// callbacks (cuStreamAddCallback) run in the order they were queued,
// whatever their stream, on a thread of the stand-in's, as the driver runs
// them on a thread of its own; so do, behind them, the stand-in's own work
// that must wait for them: stream-ordered frees, the destruction of user
// objects. cuStreamSynchronize and cuCtxSynchronize wait until those
// queued before them have run.
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
static void stub_host_wait(void) {
	if (__atomic_load_n(&stub_host_queued, __ATOMIC_RELAXED) == 0) return;
	pthread_mutex_lock(&stub_host_mu);
	unsigned long n = stub_host_queued;
	while (stub_host_ran < n) pthread_cond_wait(&stub_host_cv, &stub_host_mu);
	pthread_mutex_unlock(&stub_host_mu);
}

// stub_host_busy reports whether host functions queued so far have not
// all run.
static int stub_host_busy(void) {
	pthread_mutex_lock(&stub_host_mu);
	int busy = stub_host_ran < stub_host_queued;
	pthread_mutex_unlock(&stub_host_mu);
	return busy;
}

// stub_after_host does fn(data) once the host functions queued so far have
// run: now, where they have.
static CUresult stub_after_host(CUhostFn fn, void *data) {
	if (stub_host_busy()) return stub_queue(fn, NULL, NULL, data);
	fn(data);
	return CUDA_SUCCESS;
}

// ---- Graphs' contents and user objects ----------------------------------

// A graph is its work in an order its dependencies allow: the work
// captured into it, in the order it was captured, after the nodes its
// stream's work came to, and the nodes added to it (cuGraphAdd*Node), each
// after the nodes it depends on; either way those exist already. An
// instantiation is a copy of it. Each holds references to CUDA user
// objects.
enum { NODE_COPY, NODE_SET, NODE_HOST, NODE_KERNEL, NODE_EMPTY, NODE_GRAPH, NODE_COND, NODE_RECORD, NODE_WAIT, NODE_ALLOC,
	NODE_FREE };

// A kernel's launch: the kernel (stubKernels' index), its dimensions and
// its arguments, packed at their parameters' offsets.
struct stub_launch {
	int k;
	unsigned grid[3], block[3], smem;
	unsigned char args[32];
};

struct stub_graph;

// A node added to a graph has a handle (CUgraphNode), an object that names
// its graph and its place there; captured work gets one once it is named
// (stub_node_handle).
struct stub_gnode {
	unsigned magic;
	struct stub_graph *g;
	size_t i;
};

// A conditional handle (CUgraphConditionalHandle) of graph g, whose value
// is value at the start of each launch where flags has
// CU_GRAPH_COND_ASSIGN_DEFAULT, and is not known otherwise.
struct stub_cond {
	unsigned magic;
	struct stub_graph *g;
	unsigned value, flags;
};

struct stub_node {
	int kind;
	CUdeviceptr dst, src; // a copy's; a memset's dst
	size_t n; // a copy's bytes; a memset's elements in a row
	// A memset's: the value, its size (1, 2 or 4 bytes), its rows and the
	// bytes from one row to the next.
	unsigned v, elem;
	size_t rows, pitch;
	CUhostFn fn; // a host function's
	void *data;
	CUevent event; // an event record or wait node's
	struct stub_galloc *galloc; // an allocation or free node's allocation
	struct stub_launch launch; // a kernel's
	// An added node's handle, in the graph it was added to and in that
	// graph's instantiations; and the nodes it comes after, by their place
	// in its graph.
	struct stub_gnode *id;
	size_t *deps, ndeps;
	// The graphs it runs, its own: a child graph node's copy of its child,
	// a conditional node's bodies. A conditional node's type
	// (CUgraphConditionalNodeType), and its handle's value and flags.
	struct stub_graph **subs;
	unsigned nsubs;
	int ctype;
	unsigned cvalue, cflags;
};

struct stub_uobj {
	unsigned magic;
	void *ptr;
	CUhostFn destroy;
	unsigned refs;
};

struct stub_ref {
	struct stub_uobj *o;
	unsigned n;
};

struct stub_graph {
	unsigned magic; // STUB_GRAPH; STUB_EXEC for an instantiation; 0 for a node's copy
	struct stub_node *nodes;
	size_t n, cap;
	struct stub_ref *refs;
	size_t nrefs, caprefs;
	// For a conditional node's body, a graph object of its own: the graph
	// the node is in, which owns it.
	struct stub_graph *owner;
	// captured is set while a capture is in progress into the graph (its
	// own, or cuStreamBeginCaptureToGraph's); captures counts those into
	// it and into its bodies, at every level, which keep it from being
	// instantiated, updated from or destroyed.
	int captured;
	unsigned captures;
};

// The functions below that take a graph are called with stub_mu held.

static CUresult stub_graph_add(struct stub_graph *g, const struct stub_node *nd) {
	if (g->n == g->cap) {
		size_t cap = g->cap ? 2 * g->cap : 16;
		struct stub_node *p = realloc(g->nodes, cap * sizeof *p);
		if (p == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
		g->nodes = p;
		g->cap = cap;
	}
	g->nodes[g->n++] = *nd;
	return CUDA_SUCCESS;
}

// stub_node_handle returns the handle of the node at place i of g in *h,
// making one for captured work, which has none until it is named
// (cuStreamGetCaptureInfo).
static CUresult stub_node_handle(struct stub_graph *g, size_t i, CUgraphNode *h) {
	struct stub_node *nd = &g->nodes[i];
	if (nd->id == NULL) {
		if ((nd->id = stub_new(sizeof *nd->id, STUB_NODE)) == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
		*nd->id = (struct stub_gnode){STUB_NODE, g, i};
	}
	*h = (CUgraphNode)nd->id;
	return CUDA_SUCCESS;
}

// stub_graph_ref gives g n references to o, which the caller has taken.
static CUresult stub_graph_ref(struct stub_graph *g, struct stub_uobj *o, unsigned n) {
	for (size_t i = 0; i < g->nrefs; i++) {
		if (g->refs[i].o == o) {
			g->refs[i].n += n;
			return CUDA_SUCCESS;
		}
	}
	if (g->nrefs == g->caprefs) {
		size_t cap = g->caprefs ? 2 * g->caprefs : 8;
		struct stub_ref *p = realloc(g->refs, cap * sizeof *p);
		if (p == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
		g->refs = p;
		g->caprefs = cap;
	}
	g->refs[g->nrefs++] = (struct stub_ref){o, n};
	return CUDA_SUCCESS;
}

// stub_uobj_release drops n references to o; the last one's destroy runs
// on the host thread, behind the host functions queued before.
static void stub_uobj_release(struct stub_uobj *o, unsigned n) {
	if ((o->refs -= n) == 0) {
		o->magic = STUB_DEAD;
		if (stub_queue(o->destroy, NULL, NULL, o->ptr) != CUDA_SUCCESS) o->destroy(o->ptr);
	}
}

static void stub_refs_release(struct stub_ref *refs, size_t n) {
	for (size_t i = 0; i < n; i++) stub_uobj_release(refs[i].o, refs[i].n);
}

static void stub_graph_clear(struct stub_graph *g);

// stub_node_free frees what node nd owns: its dependencies and the graphs
// it runs; a body, a graph object, is destroyed.
static void stub_node_free(struct stub_node *nd) {
	free(nd->deps);
	if (nd->kind == NODE_ALLOC && nd->galloc != NULL && --nd->galloc->refs == 0) {
		struct stub_alloc out;
		pthread_mutex_lock(&stub_mem_mu);
		stub_unlist(nd->galloc->base, 1u << MEM_GRAPH, &out);
		pthread_mutex_unlock(&stub_mem_mu);
		free((void *)nd->galloc->base);
		free(nd->galloc);
	}
	if (nd->kind == NODE_ALLOC) nd->galloc = NULL; // released, once
	for (unsigned i = 0; i < nd->nsubs; i++) {
		struct stub_graph *sub = nd->subs[i];
		if (sub == NULL) continue;
		int object = sub->owner != NULL;
		stub_graph_clear(sub);
		if (object) {
			sub->magic = STUB_DEAD;
		} else {
			free(sub);
		}
	}
	free(nd->subs);
	nd->deps = NULL, nd->ndeps = 0, nd->subs = NULL, nd->nsubs = 0;
}

static CUresult stub_graph_append(struct stub_graph *g, const struct stub_graph *src, int keep_ids);

// stub_graph_copy returns a copy of src, with copies of its nodes' graphs
// and references to its user objects, or NULL where memory is short.
static struct stub_graph *stub_graph_copy(const struct stub_graph *src) {
	struct stub_graph *g = calloc(1, sizeof *g);
	if (g != NULL && stub_graph_append(g, src, 0) != CUDA_SUCCESS) {
		stub_graph_clear(g);
		free(g);
		g = NULL;
	}
	return g;
}

// stub_node_copy copies nd into *dst, with copies of the graphs it runs;
// its handle, with keep_id, and its dependencies moved by base places.
static CUresult stub_node_copy(struct stub_node *dst, const struct stub_node *nd, int keep_id, size_t base) {
	*dst = *nd;
	if (!keep_id) dst->id = NULL;
	if (nd->kind == NODE_ALLOC) nd->galloc->refs++;
	dst->deps = NULL, dst->ndeps = 0, dst->subs = NULL, dst->nsubs = 0;
	if (nd->ndeps > 0) {
		if ((dst->deps = malloc(nd->ndeps * sizeof *dst->deps)) == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
		for (size_t i = 0; i < nd->ndeps; i++) dst->deps[i] = nd->deps[i] + base;
		dst->ndeps = nd->ndeps;
	}
	if (nd->nsubs > 0) {
		if ((dst->subs = calloc(nd->nsubs, sizeof *dst->subs)) == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
		dst->nsubs = nd->nsubs;
		for (unsigned i = 0; i < nd->nsubs; i++) {
			if ((dst->subs[i] = stub_graph_copy(nd->subs[i])) == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
		}
	}
	return CUDA_SUCCESS;
}

// stub_graph_append adds copies of src's work to g, and references to
// src's user objects; the nodes keep their handles where keep_ids is set
// (an instantiation).
static CUresult stub_graph_append(struct stub_graph *g, const struct stub_graph *src, int keep_ids) {
	CUresult r = CUDA_SUCCESS;
	size_t base = g->n;
	for (size_t i = 0; r == CUDA_SUCCESS && i < src->n; i++) {
		struct stub_node nd;
		if ((r = stub_node_copy(&nd, &src->nodes[i], keep_ids, base)) == CUDA_SUCCESS) r = stub_graph_add(g, &nd);
		if (r != CUDA_SUCCESS) stub_node_free(&nd);
	}
	for (size_t i = 0; r == CUDA_SUCCESS && i < src->nrefs; i++) {
		r = stub_graph_ref(g, src->refs[i].o, src->refs[i].n);
		if (r == CUDA_SUCCESS) src->refs[i].o->refs += src->refs[i].n;
	}
	return r;
}

// stub_graph_clear empties g, dropping its references; the handles of the
// nodes added to it, and its conditional nodes' bodies, are destroyed.
static void stub_graph_clear(struct stub_graph *g) {
	stub_refs_release(g->refs, g->nrefs);
	for (size_t i = 0; i < g->n; i++) {
		struct stub_node *nd = &g->nodes[i];
		if (nd->id != NULL && nd->id->g == g) nd->id->magic = STUB_DEAD;
		stub_node_free(nd);
	}
	free(g->nodes);
	free(g->refs);
	*g = (struct stub_graph){g->magic};
}

STUB(cuUserObjectCreate)(CUuserObject *obj, void *ptr, CUhostFn destroy, unsigned refs, unsigned flags) {
	if (destroy == NULL || refs == 0 || flags != CU_USER_OBJECT_NO_DESTRUCTOR_SYNC) return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&stub_mu);
	struct stub_uobj *o = stub_new(sizeof *o, STUB_UOBJ);
	if (o != NULL) *o = (struct stub_uobj){STUB_UOBJ, ptr, destroy, refs};
	pthread_mutex_unlock(&stub_mu);
	*obj = (CUuserObject)o;
	return o != NULL ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
STUB(cuUserObjectRelease)(CUuserObject obj, unsigned n) {
	pthread_mutex_lock(&stub_mu);
	struct stub_uobj *o = stub_object(obj, STUB_UOBJ);
	CUresult r = o == NULL || n == 0 || n > o->refs ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
	if (r == CUDA_SUCCESS) stub_uobj_release(o, n);
	pthread_mutex_unlock(&stub_mu);
	return r;
}
STUB(cuGraphRetainUserObject)(CUgraph graph, CUuserObject obj, unsigned n, unsigned flags) {
	pthread_mutex_lock(&stub_mu);
	struct stub_graph *g = stub_object(graph, STUB_GRAPH);
	struct stub_uobj *o = stub_object(obj, STUB_UOBJ);
	CUresult r = g == NULL || o == NULL || n == 0 || (flags & ~(unsigned)CU_GRAPH_USER_OBJECT_MOVE) ||
		((flags & CU_GRAPH_USER_OBJECT_MOVE) && n > o->refs) ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
	if (r == CUDA_SUCCESS) r = stub_graph_ref(g, o, n);
	if (r == CUDA_SUCCESS && !(flags & CU_GRAPH_USER_OBJECT_MOVE)) o->refs += n; // else the caller's move to g
	pthread_mutex_unlock(&stub_mu);
	return r;
}

// ---- Streams and captures ---------------------------------------------

// A capture in progress: the streams that take part in it (the one that
// began it and those that joined it), the graph of their work, and where
// each of them is in it: the nodes its next work comes after, the
// dependencies of what CUDA captures, which are the nodes the stream's
// work came to on that stream, or after it waited for an event recorded in
// the capture, those the recording stream's came to then too. It ends on
// the stream that began it.
struct stub_capture;

struct stub_stream {
	unsigned magic;
	unsigned flags; // CU_STREAM_NON_BLOCKING
	struct stub_capture *cap; // the capture it takes part in, or NULL
	// In cap: the position of its last work, and that of the last of its
	// work that another stream of cap waited for (joined, where equal).
	unsigned long seq, joined;
	// In cap: the nodes its next work comes after, by their places in
	// cap's graph (its capture's terminal nodes on it); and their handles
	// as cuStreamGetCaptureInfo last returned them, an array of the
	// stand-in's until the next such call or the capture's end.
	size_t *deps, ndeps;
	CUgraphNode *out;
	struct stub_stream *next; // in cap's streams
	// The last launch of a graph with conditional nodes that its next work
	// comes after (stub_cond_last's count), where no capture is.
	unsigned long cond;
};

struct stub_capture {
	unsigned long long id;
	int invalidated;
	// The graph its work is captured into: one of its own, or the
	// caller's where into is set (cuStreamBeginCaptureToGraph), which
	// cuStreamEndCapture gives back, and keeps, with what was captured
	// into it, where the capture fails.
	struct stub_graph *g;
	int into;
	struct stub_stream *origin, *streams;
	unsigned long seq; // the work captured so far
	struct stub_capture *next; // in stub_captures
};

// The legacy default stream (NULL, CU_STREAM_LEGACY) and the per-thread
// one (CU_STREAM_PER_THREAD) are built in; neither is captured here.
static struct stub_stream stub_legacy = {STUB_STREAM}, stub_per_thread = {STUB_STREAM, CU_STREAM_NON_BLOCKING};

// The functions below that take or return a stream or a capture are
// called with stub_mu held.
static struct stub_capture *stub_captures; // in progress
static unsigned long long stub_capture_ids;
static int stub_blocking_captured; // blocking streams in captures

// stub_stream returns s where it is a stream, else NULL
// (CUDA_ERROR_INVALID_HANDLE).
static struct stub_stream *stub_stream(CUstream s) {
	if (s == NULL || s == CU_STREAM_LEGACY) return &stub_legacy;
	if (s == CU_STREAM_PER_THREAD) return &stub_per_thread;
	return stub_object(s, STUB_STREAM);
}

static int stub_blocking(const struct stub_stream *st) { return !(st->flags & CU_STREAM_NON_BLOCKING); }

// stub_implicit checks work on st: on the legacy default stream, while a
// blocking stream captures, it would wait for the capture: CUDA refuses it,
// invalidating the captures it would wait for.
// Graphs with conditional nodes take turns: on driver 580, two running at
// once ended in CUDA_ERROR_LAUNCH_FAILED (highlevel's condTurns). The
// stand-in counts their launches outside captures (stub_cond_last), and
// refuses one with CUDA_ERROR_LAUNCH_FAILED unless the last one before it
// is known to have ended (stub_cond_done: a wait for it) or its stream's
// work comes after that one (stub_stream's cond: the same stream, or an
// event recorded after it and waited for). The legacy default stream and
// blocking streams are ordered with each other, as CUDA orders them; its
// work is the stand-in's at the call, so the model is coarse: it follows
// the launches, not the work. stub_mu is held.
static unsigned long stub_cond_last, stub_cond_done, stub_cond_blocking;

// stub_cond_after returns the last launch of a graph with conditional
// nodes that st's next work comes after.
static unsigned long stub_cond_after(struct stub_stream *st) {
	unsigned long c = st->cond;
	if (st == &stub_legacy) {
		if (stub_cond_blocking > c) c = stub_cond_blocking;
	} else if (stub_blocking(st) && stub_legacy.cond > c) {
		c = stub_legacy.cond;
	}
	return c;
}

// stub_cond_ended records that the launches up to n have ended.
static void stub_cond_ended(unsigned long n) {
	if (n > stub_cond_done) stub_cond_done = n;
}

// stub_has_cond reports whether g has a conditional node, at any level.
static int stub_has_cond(const struct stub_graph *g) {
	for (size_t i = 0; i < g->n; i++) {
		const struct stub_node *nd = &g->nodes[i];
		if (nd->kind == NODE_COND) return 1;
		for (unsigned j = 0; j < nd->nsubs; j++) {
			if (stub_has_cond(nd->subs[j])) return 1;
		}
	}
	return 0;
}

// stub_cond_turn counts a launch of x on st, or refuses it.
static CUresult stub_cond_turn(const struct stub_graph *x, struct stub_stream *st) {
	if (!stub_has_cond(x)) return CUDA_SUCCESS;
	if (stub_cond_last > stub_cond_done && stub_cond_after(st) < stub_cond_last) {
		return CUDA_ERROR_LAUNCH_FAILED; // another may be running
	}
	st->cond = ++stub_cond_last;
	if (st != &stub_legacy && stub_blocking(st)) stub_cond_blocking = st->cond;
	return CUDA_SUCCESS;
}

static CUresult stub_implicit(struct stub_stream *st) {
	if (st != &stub_legacy || stub_blocking_captured == 0) return CUDA_SUCCESS;
	for (struct stub_capture *c = stub_captures; c != NULL; c = c->next) {
		for (struct stub_stream *m = c->streams; m != NULL; m = m->next) {
			if (stub_blocking(m)) c->invalidated = 1;
		}
	}
	return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
}

// stub_places_copy makes *dst, of *ndst places of nodes in a graph, a
// copy of the n places src; stub_places_add adds those of src it lacks.
static CUresult stub_places_copy(size_t **dst, size_t *ndst, const size_t *src, size_t n) {
	size_t *p = NULL;
	if (n > 0 && (p = malloc(n * sizeof *p)) == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
	if (n > 0) memcpy(p, src, n * sizeof *p);
	free(*dst);
	*dst = p, *ndst = n;
	return CUDA_SUCCESS;
}
static CUresult stub_places_add(size_t **dst, size_t *ndst, const size_t *src, size_t n) {
	if (n == 0) return CUDA_SUCCESS;
	size_t *p = realloc(*dst, (*ndst + n) * sizeof *p);
	if (p == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
	*dst = p;
	for (size_t i = 0; i < n; i++) {
		size_t j = 0;
		while (j < *ndst && p[j] != src[i]) j++;
		if (j == *ndst) p[(*ndst)++] = src[i];
	}
	return CUDA_SUCCESS;
}

// stub_join makes st take part in c from position at, its next work
// after the n nodes at places deps of c's graph.
static CUresult stub_join(struct stub_capture *c, struct stub_stream *st, unsigned long at, const size_t *deps, size_t n) {
	CUresult r = stub_places_copy(&st->deps, &st->ndeps, deps, n);
	if (r != CUDA_SUCCESS) return r;
	st->cap = c;
	st->seq = st->joined = at;
	st->next = c->streams;
	c->streams = st;
	stub_blocking_captured += stub_blocking(st);
	return CUDA_SUCCESS;
}

// stub_capture_end ends c: its streams leave it, and it is freed; its
// graph, no longer captured into, is the caller's.
static void stub_capture_end(struct stub_capture *c) {
	for (struct stub_stream *m = c->streams, *next; m != NULL; m = next) {
		next = m->next;
		stub_blocking_captured -= stub_blocking(m);
		free(m->deps);
		free(m->out);
		m->deps = NULL, m->ndeps = 0, m->out = NULL;
		m->cap = NULL;
		m->next = NULL;
	}
	c->g->captured = 0;
	for (struct stub_graph *a = c->g; a != NULL; a = a->owner) a->captures--;
	struct stub_capture **p = &stub_captures;
	while (*p != c) p = &(*p)->next;
	*p = c->next;
	free(c);
}

// stub_capture_of returns the capture in progress with the given id, or
// NULL.
static struct stub_capture *stub_capture_of(unsigned long long id) {
	struct stub_capture *c = stub_captures;
	while (c != NULL && c->id != id) c = c->next;
	return c;
}

// stub_captures_in_progress returns the number of captures in progress,
// for the stand-ins of other libraries built with this one (linalg's
// stublibs.c).
int stub_captures_in_progress(void) {
	int n = 0;
	pthread_mutex_lock(&stub_mu);
	for (struct stub_capture *c = stub_captures; c != NULL; c = c->next) n++;
	pthread_mutex_unlock(&stub_mu);
	return n;
}

// stub_captured counts work of st's captured.
static void stub_captured(struct stub_stream *st) { st->seq = ++st->cap->seq; }

// stub_capture_add adds nd, work captured on st, to its capture's graph,
// after the nodes st's work comes after, and makes st's next work come
// after it. Where it fails, it frees what nd owns. A conditional node's
// body takes no host node (CUDA allows none there; its error is not
// modelled).
static CUresult stub_capture_add(struct stub_stream *st, struct stub_node *nd) {
	struct stub_graph *g = st->cap->g;
	size_t *one = NULL;
	CUresult r = g->owner != NULL && nd->kind == NODE_HOST ? STUB_UNMODELLED : CUDA_SUCCESS;
	nd->id = NULL, nd->deps = NULL, nd->ndeps = 0;
	if (r == CUDA_SUCCESS) r = stub_places_copy(&nd->deps, &nd->ndeps, st->deps, st->ndeps);
	if (r == CUDA_SUCCESS && (one = malloc(sizeof *one)) == NULL) r = CUDA_ERROR_OUT_OF_MEMORY;
	if (r == CUDA_SUCCESS) r = stub_graph_add(g, nd);
	if (r != CUDA_SUCCESS) {
		free(one);
		stub_node_free(nd);
		return r;
	}
	*one = g->n - 1;
	free(st->deps);
	st->deps = one, st->ndeps = 1;
	stub_captured(st);
	return CUDA_SUCCESS;
}

// stub_submit queues work (node) on stream s: in a capture, the node is
// added to its graph; otherwise *now is set, and the caller does the work.
// Work the stand-in does not capture (capturable 0) is refused in a
// capture, which goes on.
static CUresult stub_submit(CUstream s, const struct stub_node *node, int capturable, int *now) {
	*now = 0;
	CUresult r;
	pthread_mutex_lock(&stub_mu);
	struct stub_stream *st = stub_stream(s);
	if (st == NULL) {
		r = CUDA_ERROR_INVALID_HANDLE;
	} else if (st->cap == NULL) {
		r = stub_implicit(st);
		*now = r == CUDA_SUCCESS;
	} else if (st->cap->invalidated) {
		r = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
	} else if (!capturable) {
		r = STUB_UNMODELLED;
	} else {
		struct stub_node nd = *node;
		r = stub_capture_add(st, &nd);
	}
	pthread_mutex_unlock(&stub_mu);
	return r;
}

// stub_uncapturable checks a call that CUDA refuses on a capturing stream
// (waits, questions, stream callbacks, stream-ordered allocation here): it
// is refused with CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, invalidating the
// capture where invalidate is set, as CUDA does, and STUB_UNMODELLED
// where not (the stand-in's own refusal).
static CUresult stub_uncapturable(struct stub_stream *st, int invalidate) {
	if (st == NULL) return CUDA_ERROR_INVALID_HANDLE;
	if (st->cap != NULL) {
		if (!invalidate) return STUB_UNMODELLED;
		st->cap->invalidated = 1;
		return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	}
	return stub_implicit(st);
}

static CUresult stub_stream_new(CUstream *s, unsigned flags) {
	*s = NULL;
	if (stub_current_device() < 0) return CUDA_ERROR_INVALID_CONTEXT;
	if (flags & ~(unsigned)CU_STREAM_NON_BLOCKING) return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&stub_mu);
	struct stub_stream *st = stub_new(sizeof *st, STUB_STREAM);
	if (st != NULL) st->flags = flags;
	pthread_mutex_unlock(&stub_mu);
	*s = (CUstream)st;
	return st != NULL ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
STUB(cuStreamCreate)(CUstream *s, unsigned flags) { return stub_stream_new(s, flags); }
// Priorities are taken and order nothing: the work is done at the call.
STUB(cuStreamCreateWithPriority)(CUstream *s, unsigned flags, int priority) { return stub_stream_new(s, flags); }

// stub_copy_us is STUB_COPY_US, or -1 where it is unset; stub_legacy_copies
// counts the copies in progress on the legacy default stream.
static long stub_copy_us = -2;
static int stub_legacy_copies;

// stub_destroyable refuses a destruction during a copy on the legacy
// default stream.
static CUresult stub_destroyable(void) {
	return __atomic_load_n(&stub_legacy_copies, __ATOMIC_SEQ_CST) > 0 ? CUDA_ERROR_ILLEGAL_STATE : CUDA_SUCCESS;
}

// cuStreamDestroy refuses a stream that takes part in a capture, which
// would be left with a dangling stream (highlevel never does it; CUDA's
// answer is not documented): CUDA_ERROR_ILLEGAL_STATE.
STUB(cuStreamDestroy)(CUstream s) {
	CUresult r = stub_destroyable();
	if (r != CUDA_SUCCESS) return r;
	pthread_mutex_lock(&stub_mu);
	struct stub_stream *st = stub_object(s, STUB_STREAM);
	if (st == NULL) {
		r = CUDA_ERROR_INVALID_HANDLE;
	} else if (st->cap != NULL) {
		r = CUDA_ERROR_ILLEGAL_STATE;
	} else {
		st->magic = STUB_DEAD;
	}
	pthread_mutex_unlock(&stub_mu);
	return r;
}

// stub_begin_capture begins a capture on s in mode: into a graph of its
// own where graph is NULL, else into graph, after the n nodes deps, with
// the data of each edge from them (edges; NULL: the default). A graph is
// captured into by one capture at a time (two at once are not modelled),
// which may be a conditional node's body; an edge other than the default
// one is not modelled.
static CUresult stub_begin_capture(CUstream s, CUstreamCaptureMode mode, CUgraph graph, const CUgraphNode *deps,
		const CUgraphEdgeData *edges, size_t n) {
	CUresult r = CUDA_SUCCESS;
	pthread_mutex_lock(&stub_mu);
	struct stub_stream *st = stub_stream(s);
	struct stub_graph *g = graph != NULL ? stub_object(graph, STUB_GRAPH) : NULL;
	struct stub_capture *c = NULL;
	size_t *places = NULL;
	static const CUgraphEdgeData plain;
	if (st == NULL) {
		r = CUDA_ERROR_INVALID_HANDLE;
	} else if (st == &stub_legacy) {
		r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED; // as CUDA
	} else if (st == &stub_per_thread) {
		r = STUB_UNMODELLED;
	} else if (mode != CU_STREAM_CAPTURE_MODE_GLOBAL && mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
			mode != CU_STREAM_CAPTURE_MODE_RELAXED) {
		r = CUDA_ERROR_INVALID_VALUE;
	} else if (st->cap != NULL) {
		r = CUDA_ERROR_ILLEGAL_STATE;
	} else if (graph != NULL && (g == NULL || (n > 0 && deps == NULL))) {
		r = CUDA_ERROR_INVALID_VALUE;
	} else if (g != NULL && g->captured) {
		r = STUB_UNMODELLED;
	} else if (n > 0 && (places = malloc(n * sizeof *places)) == NULL) {
		r = CUDA_ERROR_OUT_OF_MEMORY;
	}
	// The dependencies: nodes of the graph, each once, as for a node added.
	for (size_t i = 0; r == CUDA_SUCCESS && i < n; i++) {
		struct stub_gnode *d = stub_object(deps[i], STUB_NODE);
		if (d == NULL || d->g != g) r = CUDA_ERROR_INVALID_VALUE;
		for (size_t j = 0; r == CUDA_SUCCESS && j < i; j++) {
			if (deps[j] == deps[i]) r = CUDA_ERROR_INVALID_VALUE;
		}
		if (r == CUDA_SUCCESS && edges != NULL && memcmp(&edges[i], &plain, sizeof plain) != 0) r = STUB_UNMODELLED;
		if (r == CUDA_SUCCESS) places[i] = d->i;
	}
	if (r == CUDA_SUCCESS && ((c = calloc(1, sizeof *c)) == NULL ||
			(g == NULL && (g = stub_new(sizeof *g, STUB_GRAPH)) == NULL))) {
		r = CUDA_ERROR_OUT_OF_MEMORY;
	}
	if (r == CUDA_SUCCESS && (r = stub_join(c, st, 0, places, n)) == CUDA_SUCCESS) {
		c->id = ++stub_capture_ids;
		c->g = g;
		c->into = graph != NULL;
		c->origin = st;
		c->next = stub_captures;
		stub_captures = c;
		g->captured = 1;
		for (struct stub_graph *a = g; a != NULL; a = a->owner) a->captures++;
	} else {
		if (c != NULL && graph == NULL && g != NULL) g->magic = STUB_DEAD;
		free(c);
	}
	free(places);
	pthread_mutex_unlock(&stub_mu);
	return r;
}
STUB(cuStreamBeginCapture)(CUstream s, CUstreamCaptureMode mode) {
	return stub_begin_capture(s, mode, NULL, NULL, NULL, 0);
}

// cuStreamBeginCaptureToGraph captures into graph, as cuStreamBeginCapture
// captures into a graph of its own: graph is not instantiable until the
// capture ends (its captures, which cuStreamEndCapture counts down), but
// takes nodes added meanwhile.
STUB(cuStreamBeginCaptureToGraph)(CUstream s, CUgraph graph, const CUgraphNode *deps, const CUgraphEdgeData *edges,
		size_t n, CUstreamCaptureMode mode) {
	if (graph == NULL) return CUDA_ERROR_INVALID_VALUE;
	return stub_begin_capture(s, mode, graph, deps, edges, n);
}

// cuStreamEndCapture ends the capture on the stream that began it: with
// its graph, or, where the capture was invalidated or a stream that joined
// it did not rejoin it, with the error and no graph. A graph of the
// capture's own is then destroyed; the caller's (cuStreamBeginCaptureToGraph)
// is not, and keeps what was captured into it.
STUB(cuStreamEndCapture)(CUstream s, CUgraph *g) {
	CUresult r = CUDA_SUCCESS;
	*g = NULL;
	pthread_mutex_lock(&stub_mu);
	struct stub_stream *st = stub_stream(s);
	struct stub_capture *c = st != NULL ? st->cap : NULL;
	if (st == NULL) {
		r = CUDA_ERROR_INVALID_HANDLE;
	} else if (c == NULL) {
		r = CUDA_ERROR_ILLEGAL_STATE;
	} else if (c->origin != st) {
		r = CUDA_ERROR_STREAM_CAPTURE_UNMATCHED; // the capture goes on
	} else {
		if (c->invalidated) r = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
		for (struct stub_stream *m = c->streams; r == CUDA_SUCCESS && m != NULL; m = m->next) {
			if (m != st && m->seq != m->joined) r = CUDA_ERROR_STREAM_CAPTURE_UNJOINED;
		}
		struct stub_graph *graph = c->g;
		int into = c->into;
		stub_capture_end(c);
		if (r == CUDA_SUCCESS) {
			*g = (CUgraph)graph;
		} else if (!into) {
			stub_graph_clear(graph);
			graph->magic = STUB_DEAD;
		}
	}
	pthread_mutex_unlock(&stub_mu);
	return r;
}

// cuStreamGetCaptureInfo reports the capture; its dependencies
// (dependencies_out) are the handles of the nodes the stream's next work
// would come after, in an array that is the stand-in's until the next
// such question about the stream or the capture's end; none where the
// stream does not capture, or its capture was invalidated. An array asked
// for without its length is not modelled.
STUB(cuStreamGetCaptureInfo)(CUstream s, CUstreamCaptureStatus *status, cuuint64_t *id, CUgraph *g,
		const CUgraphNode **deps, size_t *n) {
	if (deps != NULL && n == NULL) return STUB_UNMODELLED;
	CUresult r = CUDA_SUCCESS;
	pthread_mutex_lock(&stub_mu);
	struct stub_stream *st = stub_stream(s);
	if (st == NULL) {
		r = CUDA_ERROR_INVALID_HANDLE;
	} else if (st == &stub_legacy && stub_blocking_captured > 0) {
		r = CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
	} else {
		struct stub_capture *c = st->cap;
		int active = c != NULL && !c->invalidated;
		*status = c == NULL ? CU_STREAM_CAPTURE_STATUS_NONE
			: c->invalidated ? CU_STREAM_CAPTURE_STATUS_INVALIDATED : CU_STREAM_CAPTURE_STATUS_ACTIVE;
		if (id != NULL && c != NULL) *id = c->id;
		if (g != NULL) *g = active ? (CUgraph)c->g : NULL;
		if (n != NULL) *n = active ? st->ndeps : 0;
		if (deps != NULL) *deps = NULL;
		if (deps != NULL && active && st->ndeps > 0) {
			CUgraphNode *out = realloc(st->out, st->ndeps * sizeof *out);
			r = out == NULL ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_SUCCESS;
			if (out != NULL) st->out = out;
			for (size_t i = 0; r == CUDA_SUCCESS && i < st->ndeps; i++) {
				r = stub_node_handle(c->g, st->deps[i], &out[i]);
			}
			if (r == CUDA_SUCCESS) *deps = out;
		}
		if (r != CUDA_SUCCESS && n != NULL) *n = 0;
	}
	pthread_mutex_unlock(&stub_mu);
	return r;
}

// A wait for a stream, or a question about it, is for the host functions
// queued before, whatever their stream (the rest of its work is done).
STUB(cuStreamSynchronize)(CUstream s) {
	pthread_mutex_lock(&stub_mu);
	CUresult r = stub_uncapturable(stub_stream(s), 1);
	if (r == CUDA_SUCCESS) stub_cond_ended(stub_cond_after(stub_stream(s)));
	pthread_mutex_unlock(&stub_mu);
	if (r == CUDA_SUCCESS) stub_host_wait();
	return r;
}
STUB(cuStreamQuery)(CUstream s) {
	pthread_mutex_lock(&stub_mu);
	CUresult r = stub_uncapturable(stub_stream(s), 1);
	pthread_mutex_unlock(&stub_mu);
	return r != CUDA_SUCCESS ? r : stub_host_busy() ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
}
STUB(cuCtxSynchronize)(void) {
	if (stub_current_device() < 0) return CUDA_ERROR_INVALID_CONTEXT;
	pthread_mutex_lock(&stub_mu);
	stub_cond_ended(stub_cond_last);
	pthread_mutex_unlock(&stub_mu);
	stub_host_wait();
	return CUDA_SUCCESS;
}

// ---- Events -----------------------------------------------------------

// An event has happened, and a stream is idle, once the host functions
// queued before its last record, or before the query, have run, whatever
// their stream: a host function that blocks holds back the work queued
// after it. An event recorded in a capture is a point of the capture:
// CUDA refuses questions and waits on it (CUDA_ERROR_CAPTURED_EVENT), and a
// stream that waits for it joins the capture.
struct stub_event {
	unsigned magic, flags;
	unsigned long at; // the host functions queued before its record; stub_host_mu is held
	unsigned long long cap; // the capture it was last recorded in, or 0
	struct stub_stream *cap_stream; // and where in it
	unsigned long cap_seq;
	size_t *deps, ndeps; // the nodes cap_stream's next work came after then (stub_stream's deps)
	unsigned long cond; // the recording stream's cond then
};

// stub_event returns e where it is an event, else NULL; stub_mu is held.
static struct stub_event *stub_event(CUevent e) { return stub_object(e, STUB_EVENT); }

STUB(cuEventCreate)(CUevent *e, unsigned flags) {
	*e = NULL;
	if (stub_current_device() < 0) return CUDA_ERROR_INVALID_CONTEXT;
	if ((flags & ~(unsigned)(CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS)) ||
			((flags & CU_EVENT_INTERPROCESS) && !(flags & CU_EVENT_DISABLE_TIMING))) {
		return CUDA_ERROR_INVALID_VALUE;
	}
	pthread_mutex_lock(&stub_mu);
	struct stub_event *ev = stub_new(sizeof *ev, STUB_EVENT);
	if (ev != NULL) ev->flags = flags;
	pthread_mutex_unlock(&stub_mu);
	*e = (CUevent)ev;
	return ev != NULL ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
STUB(cuEventDestroy)(CUevent e) {
	pthread_mutex_lock(&stub_mu);
	struct stub_event *ev = stub_event(e);
	if (ev != NULL) {
		ev->magic = STUB_DEAD;
		free(ev->deps);
		ev->deps = NULL, ev->ndeps = 0;
	}
	pthread_mutex_unlock(&stub_mu);
	return ev != NULL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}
static void stub_event_recorded(struct stub_event *ev, struct stub_stream *st);
STUB(cuEventRecord)(CUevent e, CUstream s) {
	CUresult r = CUDA_SUCCESS;
	pthread_mutex_lock(&stub_mu);
	struct stub_event *ev = stub_event(e);
	struct stub_stream *st = stub_stream(s);
	if (ev == NULL || st == NULL) {
		r = CUDA_ERROR_INVALID_HANDLE;
	} else if (st->cap != NULL) {
		if (st->cap->invalidated) {
			r = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
		} else if ((r = stub_places_copy(&ev->deps, &ev->ndeps, st->deps, st->ndeps)) == CUDA_SUCCESS) {
			ev->cap = st->cap->id;
			ev->cap_stream = st;
			ev->cap_seq = st->seq;
		}
	} else if ((r = stub_implicit(st)) == CUDA_SUCCESS) {
		stub_event_recorded(ev, st);
	}
	pthread_mutex_unlock(&stub_mu);
	return r;
}

// stub_event_recorded records ev on st, a stream that does not capture,
// by cuEventRecord or an event record node: ev happens once the host
// functions queued until now have run; stub_mu is held.
static void stub_event_recorded(struct stub_event *ev, struct stub_stream *st) {
	ev->cap = 0;
	ev->cond = stub_cond_after(st);
	free(ev->deps);
	ev->deps = NULL, ev->ndeps = 0;
	pthread_mutex_lock(&stub_host_mu);
	ev->at = stub_host_queued;
	pthread_mutex_unlock(&stub_host_mu);
}

// stub_event_ask returns e, an event that is no point of a capture, in
// *ev; stub_mu is held.
static CUresult stub_event_ask(CUevent e, struct stub_event **ev) {
	*ev = stub_event(e);
	return *ev == NULL ? CUDA_ERROR_INVALID_HANDLE : (*ev)->cap != 0 ? CUDA_ERROR_CAPTURED_EVENT : CUDA_SUCCESS;
}

STUB(cuEventQuery)(CUevent e) {
	struct stub_event *ev;
	pthread_mutex_lock(&stub_mu);
	CUresult r = stub_event_ask(e, &ev);
	if (r == CUDA_SUCCESS) stub_cond_ended(ev->cond); // the host functions aside, done
	pthread_mutex_unlock(&stub_mu);
	if (r != CUDA_SUCCESS) return r;
	pthread_mutex_lock(&stub_host_mu);
	r = stub_host_ran < ev->at ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
	pthread_mutex_unlock(&stub_host_mu);
	return r;
}
STUB(cuEventSynchronize)(CUevent e) {
	struct stub_event *ev;
	pthread_mutex_lock(&stub_mu);
	CUresult r = stub_event_ask(e, &ev);
	if (r == CUDA_SUCCESS) stub_cond_ended(ev->cond);
	pthread_mutex_unlock(&stub_mu);
	if (r != CUDA_SUCCESS) return r;
	pthread_mutex_lock(&stub_host_mu);
	while (stub_host_ran < ev->at) pthread_cond_wait(&stub_host_cv, &stub_host_mu);
	pthread_mutex_unlock(&stub_host_mu);
	return CUDA_SUCCESS;
}

// cuStreamWaitEvent orders s's later work after e's record, which the
// stand-in's work done at the call is. With captures: a stream waiting for
// a point of a capture joins it, its next work after the nodes the
// recording stream's came after (or, in it already, has a stream of it
// rejoin it, its next work after those too); a capturing stream waiting
// for an event of no capture, or of another, is refused as CUDA refuses
// it.
STUB(cuStreamWaitEvent)(CUstream s, CUevent e, unsigned flags) {
	if (flags != 0) return STUB_UNMODELLED; // external waits
	CUresult r = CUDA_SUCCESS;
	pthread_mutex_lock(&stub_mu);
	struct stub_stream *st = stub_stream(s);
	struct stub_event *ev = stub_event(e);
	struct stub_capture *c = ev != NULL && ev->cap != 0 ? stub_capture_of(ev->cap) : NULL;
	if (st == NULL || ev == NULL) {
		r = CUDA_ERROR_INVALID_HANDLE;
	} else if (st->cap != NULL && st->cap->invalidated) {
		r = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
	} else if (ev->cap == 0) {
		if (st->cap != NULL) {
			st->cap->invalidated = 1;
			r = CUDA_ERROR_STREAM_CAPTURE_ISOLATION;
		} else if ((r = stub_implicit(st)) == CUDA_SUCCESS && ev->cond > st->cond) {
			st->cond = ev->cond;
		}
	} else if (c == NULL) {
		r = CUDA_ERROR_CAPTURED_EVENT; // of a capture that has ended
	} else if (st->cap == c) {
		r = stub_places_add(&st->deps, &st->ndeps, ev->deps, ev->ndeps);
		if (r == CUDA_SUCCESS && ev->cap_stream != st && ev->cap_seq > ev->cap_stream->joined) {
			ev->cap_stream->joined = ev->cap_seq;
		}
	} else if (st->cap != NULL) {
		r = CUDA_ERROR_STREAM_CAPTURE_MERGE;
	} else if (st == &stub_legacy || st == &stub_per_thread) {
		r = STUB_UNMODELLED;
	} else if (c->invalidated) {
		r = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
	} else {
		r = stub_join(c, st, ev->cap_seq, ev->deps, ev->ndeps);
	}
	pthread_mutex_unlock(&stub_mu);
	return r;
}

// ---- Logs -------------------------------------------------------------

// The driver's error log (CUDA 12.9): functions registered with
// cuLogsRegisterCallback, and removed with cuLogsUnregisterCallback, are
// called with a line of the log where the stand-in refuses a call it
// explains (stub_logs_say: a memset, stub_memset), on the thread of the
// refused call, before it returns. A line has the form of the driver's
// log file's, "[time][thread][CUDA][E][function] why". The functions come
// from cuGetProcAddress_v2 as the shim's do (stub_logs_procs), introduced
// in CUDA 12.9: a driver of $STUB_DRIVER_VERSION below 12090 has neither,
// and logs nothing.
#include <stdarg.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cudalogs.h"

enum { STUB_LOGGERS = 8 };

static pthread_mutex_t stub_logs_mu = PTHREAD_MUTEX_INITIALIZER;
static struct stub_logger {
	CUlogsCallback fn;
	void *data;
} stub_loggers[STUB_LOGGERS]; // a handle is the address of its entry

STUB(cuLogsRegisterCallback)(CUlogsCallback fn, void *data, CUlogsCallbackHandle *out) {
	if (fn == NULL) return CUDA_ERROR_INVALID_VALUE;
	CUresult r = CUDA_ERROR_OUT_OF_MEMORY;
	pthread_mutex_lock(&stub_logs_mu);
	for (int i = 0; i < STUB_LOGGERS; i++) {
		if (stub_loggers[i].fn == NULL) {
			stub_loggers[i] = (struct stub_logger){fn, data};
			if (out != NULL) *out = (CUlogsCallbackHandle)&stub_loggers[i];
			r = CUDA_SUCCESS;
			break;
		}
	}
	pthread_mutex_unlock(&stub_logs_mu);
	return r;
}

STUB(cuLogsUnregisterCallback)(CUlogsCallbackHandle h) {
	struct stub_logger *l = (struct stub_logger *)h;
	if (l < stub_loggers || l >= stub_loggers + STUB_LOGGERS || (uintptr_t)l % _Alignof(struct stub_logger) != 0) {
		return CUDA_ERROR_INVALID_VALUE;
	}
	pthread_mutex_lock(&stub_logs_mu);
	CUresult r = l->fn != NULL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
	l->fn = NULL;
	pthread_mutex_unlock(&stub_logs_mu);
	return r;
}

#ifndef STUB_NO_GET_PROC_ADDRESS
static const struct stub_proc stub_logs_table[] = {
	{"cuLogsRegisterCallback", 12090, (void *)stub_cuLogsRegisterCallback},
	{"cuLogsUnregisterCallback", 12090, (void *)stub_cuLogsUnregisterCallback},
	{0, 0, 0},
};
static const struct stub_proc *stub_logs_procs(void) { return stub_logs_table; }
#endif

// stub_logs_say logs, at level, why fn refused a call (printf's format),
// to each function registered, called outside the stand-in's locks.
static void stub_logs_say(CUlogLevel level, const char *fn, const char *format, ...) {
	struct stub_logger loggers[STUB_LOGGERS];
	pthread_mutex_lock(&stub_logs_mu);
	memcpy(loggers, stub_loggers, sizeof loggers);
	pthread_mutex_unlock(&stub_logs_mu);
	char line[512];
	struct timespec t;
	clock_gettime(CLOCK_REALTIME, &t);
	int n = snprintf(line, sizeof line, "[%02ld:%02ld:%02ld.%03ld][%ld][CUDA][%c][%s] ", t.tv_sec / 3600 % 24,
		t.tv_sec / 60 % 60, t.tv_sec % 60, t.tv_nsec / 1000000, (long)syscall(SYS_gettid),
		level == CU_LOG_LEVEL_WARNING ? 'W' : 'E', fn);
	va_list ap;
	va_start(ap, format);
	vsnprintf(line + n, sizeof line - n, format, ap);
	va_end(ap);
	for (int i = 0; i < STUB_LOGGERS; i++) {
		if (loggers[i].fn != NULL) loggers[i].fn(loggers[i].data, level, line, strlen(line));
	}
}

// ---- Copies, memsets, host functions, stream-ordered memory -------------

// stub_copy copies n bytes, taking $STUB_COPY_US each, and counts those on
// the legacy default stream (legacy) while they run.
static void stub_copy(CUdeviceptr dst, CUdeviceptr src, size_t n, int legacy) {
	long us = __atomic_load_n(&stub_copy_us, __ATOMIC_RELAXED);
	if (us == -2) {
		const char *v = getenv("STUB_COPY_US");
		us = v != NULL ? atol(v) : -1;
		__atomic_store_n(&stub_copy_us, us, __ATOMIC_RELAXED);
	}
	if (legacy) __atomic_add_fetch(&stub_legacy_copies, 1, __ATOMIC_SEQ_CST);
	if (us > 0) {
		struct timespec t = {us / 1000000, us % 1000000 * 1000};
		nanosleep(&t, NULL);
	}
	if (n > 0) memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n);
	if (legacy) __atomic_sub_fetch(&stub_legacy_copies, 1, __ATOMIC_SEQ_CST);
}

// stub_memcpy is every copy: between any two addresses, device memory or
// pinned, registered or pageable host memory, on stream s (async) or on
// the legacy default stream, done before it returns. A capture takes a
// copy of memory the stand-in knows, not of pageable memory.
static CUresult stub_memcpy(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s, int async) {
	if (stub_current_device() < 0) return CUDA_ERROR_INVALID_CONTEXT;
	int pageable = 0, now;
	CUresult r = stub_copy_range(dst, n, &pageable);
	if (r == CUDA_SUCCESS) r = stub_copy_range(src, n, &pageable);
	if (r != CUDA_SUCCESS) return r;
	struct stub_node node = {.kind = NODE_COPY, .dst = dst, .src = src, .n = n};
	if (!async) s = NULL;
	r = stub_submit(s, &node, !pageable, &now);
	if (now) stub_copy(dst, src, n, s == NULL || s == CU_STREAM_LEGACY);
	return r;
}
STUB(cuMemcpy)(CUdeviceptr dst, CUdeviceptr src, size_t n) { return stub_memcpy(dst, src, n, NULL, 0); }
STUB(cuMemcpyAsync)(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) { return stub_memcpy(dst, src, n, s, 1); }
STUB(cuMemcpyPeer)(CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx, size_t n) {
	if (stub_ctx_device(dctx) < 0 || stub_ctx_device(sctx) < 0) return CUDA_ERROR_INVALID_CONTEXT;
	return stub_memcpy(dst, src, n, NULL, 0);
}
STUB(cuMemcpyPeerAsync)(CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx, size_t n, CUstream s) {
	if (stub_ctx_device(dctx) < 0 || stub_ctx_device(sctx) < 0) return CUDA_ERROR_INVALID_CONTEXT;
	return stub_memcpy(dst, src, n, s, 1);
}

// stub_set_span returns the bytes from a memset's first to its last.
static size_t stub_set_span(const struct stub_node *nd) {
	return nd->n == 0 || nd->rows == 0 ? 0 : (nd->rows - 1) * nd->pitch + nd->n * nd->elem;
}

// stub_set does a memset.
static void stub_set(const struct stub_node *nd) {
	for (size_t r = 0; r < nd->rows; r++) {
		unsigned char *row = (unsigned char *)(uintptr_t)nd->dst + r * nd->pitch;
		if (nd->elem == 1) {
			memset(row, (int)nd->v, nd->n);
			continue;
		}
		for (size_t i = 0; i < nd->n; i++) {
			if (nd->elem == 2) {
				((uint16_t *)row)[i] = (uint16_t)nd->v;
			} else {
				((uint32_t *)row)[i] = (uint32_t)nd->v;
			}
		}
	}
}

// stub_set_of checks a memset of rows rows, pitch bytes apart, of n
// elements of elem bytes each at p, memory the device uses, aligned to
// elem, to v, and makes *node of it.
static CUresult stub_set_of(struct stub_node *node, CUdeviceptr p, unsigned v, unsigned elem, size_t n, size_t rows,
		size_t pitch) {
	if (n > SIZE_MAX / elem) return CUDA_ERROR_INVALID_VALUE;
	if (rows <= 1) pitch = n * elem; // unused
	if (p % elem != 0 || pitch % elem != 0 || pitch < n * elem ||
			(rows > 1 && pitch > (SIZE_MAX - n * elem) / (rows - 1))) {
		return CUDA_ERROR_INVALID_VALUE;
	}
	*node = (struct stub_node){.kind = NODE_SET, .dst = p, .n = n, .v = v, .elem = elem, .rows = rows, .pitch = pitch};
	return stub_device_range(p, stub_set_span(node));
}

// stub_memset sets rows rows, pitch bytes apart, of n elements of elem
// bytes each at p to v (stub_set_of).
static CUresult stub_memset(CUdeviceptr p, unsigned v, unsigned elem, size_t n, size_t rows, size_t pitch, CUstream s) {
	if (stub_current_device() < 0) return CUDA_ERROR_INVALID_CONTEXT;
	struct stub_node node;
	CUresult r = stub_set_of(&node, p, v, elem, n, rows, pitch);
	if (r != CUDA_SUCCESS) {
		static const char *const fns[] = {[1] = "cuMemsetD8", [2] = "cuMemsetD16", [4] = "cuMemsetD32"};
		stub_logs_say(CU_LOG_LEVEL_ERROR, rows > 1 ? "cuMemsetD2D32" : fns[elem],
			"%zu bytes at 0x%llx are not all in one allocation of the device's, or not aligned to %u bytes",
			n * elem, (unsigned long long)p, elem);
		return r;
	}
	int now;
	r = stub_submit(s, &node, 1, &now);
	if (now) stub_set(&node);
	return r;
}
STUB(cuMemsetD8)(CUdeviceptr p, unsigned char v, size_t n) { return stub_memset(p, v, 1, n, 1, 0, NULL); }
STUB(cuMemsetD8Async)(CUdeviceptr p, unsigned char v, size_t n, CUstream s) { return stub_memset(p, v, 1, n, 1, 0, s); }
STUB(cuMemsetD16)(CUdeviceptr p, unsigned short v, size_t n) { return stub_memset(p, v, 2, n, 1, 0, NULL); }
STUB(cuMemsetD16Async)(CUdeviceptr p, unsigned short v, size_t n, CUstream s) { return stub_memset(p, v, 2, n, 1, 0, s); }
STUB(cuMemsetD32)(CUdeviceptr p, unsigned v, size_t n) { return stub_memset(p, v, 4, n, 1, 0, NULL); }
STUB(cuMemsetD32Async)(CUdeviceptr p, unsigned v, size_t n, CUstream s) { return stub_memset(p, v, 4, n, 1, 0, s); }
STUB(cuMemsetD2D32)(CUdeviceptr p, size_t pitch, unsigned v, size_t width, size_t height) {
	return stub_memset(p, v, 4, width, height, pitch, NULL);
}
STUB(cuMemsetD2D32Async)(CUdeviceptr p, size_t pitch, unsigned v, size_t width, size_t height, CUstream s) {
	return stub_memset(p, v, 4, width, height, pitch, s);
}

STUB(cuLaunchHostFunc)(CUstream s, CUhostFn fn, void *data) {
	if (fn == NULL) return CUDA_ERROR_INVALID_VALUE;
	int now;
	struct stub_node node = {.kind = NODE_HOST, .fn = fn, .data = data};
	CUresult r = stub_submit(s, &node, 1, &now);
	return now ? stub_queue(fn, NULL, s, data) : r;
}
STUB(cuStreamAddCallback)(CUstream s, CUstreamCallback cb, void *data, unsigned flags) {
	if (cb == NULL || flags != 0) return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&stub_mu);
	CUresult r = stub_uncapturable(stub_stream(s), 1);
	pthread_mutex_unlock(&stub_mu);
	return r != CUDA_SUCCESS ? r : stub_queue(NULL, cb, s, data);
}

// Stream-ordered memory is allocated at the call, and freed once the host
// functions queued before the free have run; neither is captured here
// (CUDA makes nodes of them).
STUB(cuMemAllocFromPoolAsync)(CUdeviceptr *p, size_t n, CUmemoryPool pool, CUstream s) {
	*p = 0;
	pthread_mutex_lock(&stub_mu);
	struct stub_pool *pl = stub_pool(pool);
	CUresult r = pl == NULL ? CUDA_ERROR_INVALID_VALUE : stub_uncapturable(stub_stream(s), 0);
	pthread_mutex_unlock(&stub_mu);
	return r != CUDA_SUCCESS ? r : stub_allocate(p, n, MEM_DEVICE, pl);
}
STUB(cuMemFreeAsync)(CUdeviceptr p, CUstream s) {
	if (stub_current_device() < 0) return CUDA_ERROR_INVALID_CONTEXT;
	pthread_mutex_lock(&stub_mu);
	CUresult r = stub_uncapturable(stub_stream(s), 0);
	pthread_mutex_unlock(&stub_mu);
	if (r != CUDA_SUCCESS) return r;
	struct stub_alloc a;
	pthread_mutex_lock(&stub_mem_mu);
	int ok = stub_unlist((uintptr_t)p, 1u << MEM_DEVICE, &a);
	pthread_mutex_unlock(&stub_mem_mu);
	return ok ? stub_after_host(free, (void *)a.base) : CUDA_ERROR_INVALID_VALUE;
}
STUB(cuMemPrefetchAsync)(CUdeviceptr p, size_t n, CUdevice d, CUstream s) {
	if (stub_current_device() < 0) return CUDA_ERROR_INVALID_CONTEXT;
	if (d != CU_DEVICE_CPU && !stub_device_ok(d)) return CUDA_ERROR_INVALID_DEVICE;
	if (n == 0 || !stub_managed_range(p, n)) return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&stub_mu);
	struct stub_stream *st = stub_stream(s);
	CUresult r = st == NULL ? CUDA_ERROR_INVALID_HANDLE
		: st->cap != NULL ? (st->cap->invalidated ? CUDA_ERROR_STREAM_CAPTURE_INVALIDATED : CUDA_SUCCESS)
		: stub_implicit(st);
	pthread_mutex_unlock(&stub_mu);
	return r; // nothing to move, captured or not
}

// ---- Libraries and kernels --------------------------------------------

// stubKernels are the kernels the stand-in knows, by name: their
// parameters, and what they do, as bench's CUDA source of each says
// (run 0: only check the memory it would use); any other name has no
// parameters, and its launch is refused.
typedef CUresult (*stub_kernel_fn)(const struct stub_launch *l, int run);

static CUresult stub_empty(const struct stub_launch *l, int run) { return CUDA_SUCCESS; }

// stub_args4 reads the arguments (float a, const float *x, float *y, int n).
static void stub_args4(const struct stub_launch *l, float *a, float **x, float **y, int *n) {
	memcpy(a, l->args, sizeof *a);
	memcpy(x, l->args + 8, sizeof *x);
	memcpy(y, l->args + 16, sizeof *y);
	memcpy(n, l->args + 24, sizeof *n);
}

// if (n > 0 && threadIdx.x == 0) y[0] = a * x[0];
static CUresult stub_first(const struct stub_launch *l, int run) {
	float a, *x, *y;
	int n;
	stub_args4(l, &a, &x, &y, &n);
	if (n <= 0) return CUDA_SUCCESS;
	if (!run) {
		CUresult r = stub_device_range((CUdeviceptr)(uintptr_t)x, sizeof *x);
		return r != CUDA_SUCCESS ? r : stub_device_range((CUdeviceptr)(uintptr_t)y, sizeof *y);
	}
	y[0] = a * x[0];
	return CUDA_SUCCESS;
}

// int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] += a * x[i];
// each thread of the grid's y and z dimensions doing it again.
static CUresult stub_axpy(const struct stub_launch *l, int run) {
	float a, *x, *y;
	int n;
	stub_args4(l, &a, &x, &y, &n);
	unsigned long long threads = (unsigned long long)l->grid[0] * l->block[0];
	size_t m = n <= 0 ? 0 : threads < (unsigned long long)n ? (size_t)threads : (size_t)n;
	if (!run) {
		CUresult r = stub_device_range((CUdeviceptr)(uintptr_t)x, m * sizeof *x);
		return r != CUDA_SUCCESS ? r : stub_device_range((CUdeviceptr)(uintptr_t)y, m * sizeof *y);
	}
	unsigned long long again = (unsigned long long)l->grid[1] * l->grid[2] * l->block[1] * l->block[2];
	for (unsigned long long t = 0; t < again; t++) {
		for (size_t i = 0; i < m; i++) y[i] += a * x[i];
	}
	return CUDA_SUCCESS;
}

static const struct {
	const char *name;
	int n;
	size_t offsets[4], sizes[4];
	stub_kernel_fn fn;
} stubKernels[] = {
	{"empty", 0, {0}, {0}, stub_empty},
	// (float a, const float *x, float *y, int n)
	{"args4", 4, {0, 8, 16, 24}, {4, 8, 8, 4}, stub_first},
	{"axpy", 4, {0, 8, 16, 24}, {4, 8, 8, 4}, stub_axpy},
};
enum { NKERNELS = sizeof stubKernels / sizeof stubKernels[0] };

// A kernel's handle, and its function's, is its index in stubKernels plus
// 1; NKERNELS + 1 is any other name's.
static int stub_kernel_index(const void *k) {
	uintptr_t i = (uintptr_t)k;
	return i >= 1 && i <= NKERNELS + 1 ? (int)i - 1 : -1;
}

struct stub_library {
	unsigned magic;
};

STUB(cuLibraryLoadData)(CUlibrary *lib, const void *image, CUjit_option *jo, void **jv, unsigned nj,
		CUlibraryOption *lo, void **lv, unsigned nl) {
	*lib = NULL;
	if (image == NULL) return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&stub_mu);
	*lib = stub_new(sizeof(struct stub_library), STUB_LIBRARY);
	pthread_mutex_unlock(&stub_mu);
	return *lib != NULL ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
STUB(cuLibraryUnload)(CUlibrary lib) {
	pthread_mutex_lock(&stub_mu);
	struct stub_library *l = stub_object(lib, STUB_LIBRARY);
	if (l != NULL) l->magic = STUB_DEAD;
	pthread_mutex_unlock(&stub_mu);
	return l != NULL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}
STUB(cuLibraryGetKernel)(CUkernel *k, CUlibrary lib, const char *name) {
	pthread_mutex_lock(&stub_mu);
	int ok = stub_object(lib, STUB_LIBRARY) != NULL;
	pthread_mutex_unlock(&stub_mu);
	if (!ok) return CUDA_ERROR_INVALID_HANDLE;
	int i = 0;
	while (i < NKERNELS && strcmp(stubKernels[i].name, name) != 0) i++;
	*k = (CUkernel)(uintptr_t)(i + 1); // NKERNELS + 1: no parameters
	return CUDA_SUCCESS;
}
STUB(cuKernelGetFunction)(CUfunction *f, CUkernel k) {
	if (stub_kernel_index(k) < 0) return CUDA_ERROR_INVALID_HANDLE;
	*f = (CUfunction)k;
	return CUDA_SUCCESS;
}
STUB(cuKernelGetParamInfo)(CUkernel k, size_t i, size_t *offset, size_t *size) {
	int j = stub_kernel_index(k);
	if (j < 0 || j >= NKERNELS || i >= (size_t)stubKernels[j].n) {
		return CUDA_ERROR_INVALID_VALUE;
	}
	*offset = stubKernels[j].offsets[i];
	*size = stubKernels[j].sizes[i];
	return CUDA_SUCCESS;
}

// stub_launch_of checks a launch of f and packs it into *l: the dimensions
// within the device's limits, the dynamic shared memory within the default
// 48 KiB (a kernel's attributes are not modelled), arguments through params
// (extra is not modelled), a kernel the stand-in knows.
static CUresult stub_launch_of(struct stub_launch *l, CUfunction f, const unsigned grid[3], const unsigned block[3],
		unsigned smem, void **params, void **extra) {
	if (stub_current_device() < 0) return CUDA_ERROR_INVALID_CONTEXT;
	int k = stub_kernel_index(f);
	if (k < 0) return CUDA_ERROR_INVALID_HANDLE;
	if (grid[0] == 0 || grid[1] == 0 || grid[2] == 0 || block[0] == 0 || block[1] == 0 || block[2] == 0 ||
			grid[0] > 0x7fffffffu || grid[1] > 65535 || grid[2] > 65535 ||
			block[0] > 1024 || block[1] > 1024 || block[2] > 64 ||
			(unsigned long long)block[0] * block[1] * block[2] > 1024 || smem > 48 << 10) {
		return CUDA_ERROR_INVALID_VALUE;
	}
	if (extra != NULL || k == NKERNELS) return STUB_UNMODELLED;
	*l = (struct stub_launch){.k = k, .smem = smem};
	memcpy(l->grid, grid, sizeof l->grid);
	memcpy(l->block, block, sizeof l->block);
	if (stubKernels[k].n > 0 && params == NULL) return CUDA_ERROR_INVALID_VALUE;
	for (int i = 0; i < stubKernels[k].n; i++) {
		memcpy(l->args + stubKernels[k].offsets[i], params[i], stubKernels[k].sizes[i]);
	}
	return CUDA_SUCCESS;
}

// stub_run runs a launch: CUDA_ERROR_ILLEGAL_ADDRESS, and nothing done,
// where it would use memory that is not the device's.
static CUresult stub_run(const struct stub_launch *l) {
	if (stubKernels[l->k].fn(l, 0) != CUDA_SUCCESS) return CUDA_ERROR_ILLEGAL_ADDRESS;
	return stubKernels[l->k].fn(l, 1);
}

static CUresult stub_launch(const struct stub_launch *l, CUstream s) {
	int now;
	struct stub_node node = {.kind = NODE_KERNEL, .launch = *l};
	CUresult r = stub_submit(s, &node, 1, &now);
	return now ? stub_run(l) : r;
}

STUB(cuLaunchKernel)(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
		unsigned smem, CUstream s, void **params, void **extra) {
	struct stub_launch l;
	const unsigned grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz};
	CUresult r = stub_launch_of(&l, f, grid, block, smem, params, extra);
	return r != CUDA_SUCCESS ? r : stub_launch(&l, s);
}

// cuLaunchKernelEx takes a cluster, whose dimensions divide the grid's, at
// most 8 blocks (the portable size), and cooperative launches; no other
// attribute.
STUB(cuLaunchKernelEx)(const CUlaunchConfig *cfg, CUfunction f, void **params, void **extra) {
	if (cfg == NULL) return CUDA_ERROR_INVALID_VALUE;
	const unsigned grid[3] = {cfg->gridDimX, cfg->gridDimY, cfg->gridDimZ};
	const unsigned block[3] = {cfg->blockDimX, cfg->blockDimY, cfg->blockDimZ};
	struct stub_launch l;
	CUresult r = stub_launch_of(&l, f, grid, block, cfg->sharedMemBytes, params, extra);
	for (unsigned i = 0; r == CUDA_SUCCESS && i < cfg->numAttrs; i++) {
		const CUlaunchAttribute *a = &cfg->attrs[i];
		if (a->id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) {
			const unsigned c[3] = {a->value.clusterDim.x, a->value.clusterDim.y, a->value.clusterDim.z};
			if (c[0] == 0 || c[1] == 0 || c[2] == 0 || grid[0] % c[0] || grid[1] % c[1] || grid[2] % c[2] ||
					(unsigned long long)c[0] * c[1] * c[2] > 8) {
				r = CUDA_ERROR_INVALID_CLUSTER_SIZE;
			}
		} else if (a->id != CU_LAUNCH_ATTRIBUTE_COOPERATIVE) {
			r = STUB_UNMODELLED;
		}
	}
	return r != CUDA_SUCCESS ? r : stub_launch(&l, cfg->hStream);
}

// ---- Graphs -----------------------------------------------------------

// A graph's nodes are struct stub_node, done in the order they are in
// (stub_graph_add): captured work in the order it was captured (a
// captured graph launch as a copy of the graph's nodes), and each
// node added by a cuGraphAdd*Node after the nodes it depends on, which
// exist already, so that the order is one its dependencies allow, and the
// launch below does them in it. A dependency that is not a node of the
// graph, or one named twice, is CUDA_ERROR_INVALID_VALUE, as CUDA says. A
// node added gets a handle (struct stub_gnode), which its graph's
// instantiations know it by (cuGraphExecKernelNodeSetParams) and
// cuGraphDebugDotPrint names it by; a node of a kind the stand-in cannot
// do is refused where it is added. The stand-in adds empty, kernel,
// memset, copy, child graph and conditional nodes:
//
//   - a kernel node's launch is checked as cuLaunchKernel checks one, of a
//     kernel the stand-in knows;
//   - a memset node's memory, and a copy node's, must be allocated when
//     the node is added, as a memset's or a copy's when it is called;
//   - a child graph node runs a copy of its child made when it is added;
//   - a conditional node's bodies are graph objects of the stand-in's that
//     the node owns (cuGraphDestroy and instantiation refuse them) and that
//     take nodes as graphs do, but no host node (CUDA allows none there).
//     No kernel of the stand-in's sets a condition
//     (cudaGraphSetConditional): a conditional node's handle keeps through
//     a launch the value it starts it with, its default where it has
//     CU_GRAPH_COND_ASSIGN_DEFAULT. So an `if` runs its body once where
//     that is not 0, else its `else` body, if any; a `switch` runs the body
//     it names, if any; a `while` runs none where it is 0. What it cannot
//     run, instantiation (and cuGraphExecUpdate) refuses with
//     STUB_UNMODELLED: a conditional node that the launch would reach whose
//     handle has no default assigned at each launch (its value is then
//     whatever the device left, which the stand-in does not know), and a
//     `while` that starts non-zero, which with no kernel to set it to 0
//     would run forever.
//
// A capture into a graph (cuStreamBeginCaptureToGraph) adds its work to
// the graph as a capture of its own does to its graph, the first after
// the nodes it was given; the graph takes nodes added meanwhile, and
// keeps those captured where the capture fails. While a capture into a
// graph, or into a body of it, is in progress, the graph is refused to
// instantiation, update and destruction, as CUDA refuses it (with an
// error CUDA does not document: STUB_UNMODELLED).

// stub_node_sub returns the graph node nd runs, at its turn of a launch:
// a child graph node's child, or the body a conditional node's condition
// picks (a while node's none: it starts 0 where it can run); or NULL.
static const struct stub_graph *stub_node_sub(const struct stub_node *nd) {
	if (nd->kind == NODE_GRAPH) return nd->subs[0];
	if (nd->kind != NODE_COND) return NULL;
	switch ((int)nd->ctype) {
	case CU_GRAPH_COND_TYPE_IF:
		return nd->cvalue != 0 ? nd->subs[0] : nd->nsubs == 2 ? nd->subs[1] : NULL;
	case 2: // CU_GRAPH_COND_TYPE_SWITCH, which CUDA 12.6's headers lack
		return nd->cvalue < nd->nsubs ? nd->subs[nd->cvalue] : NULL;
	}
	return NULL;
}

// stub_graph_runnable returns STUB_UNMODELLED where a launch of g would
// reach a conditional node whose run the stand-in does not know (above).
static CUresult stub_graph_runnable(const struct stub_graph *g) {
	for (size_t i = 0; i < g->n; i++) {
		const struct stub_node *nd = &g->nodes[i];
		if (nd->kind == NODE_COND && (!(nd->cflags & CU_GRAPH_COND_ASSIGN_DEFAULT) ||
				(nd->ctype == CU_GRAPH_COND_TYPE_WHILE && nd->cvalue != 0))) {
			return STUB_UNMODELLED;
		}
		const struct stub_graph *sub = stub_node_sub(nd);
		CUresult r = sub != NULL ? stub_graph_runnable(sub) : CUDA_SUCCESS;
		if (r != CUDA_SUCCESS) return r;
	}
	return CUDA_SUCCESS;
}

// stub_graph_mem reports whether g has allocation or free nodes.
static int stub_graph_mem(const struct stub_graph *g) {
	for (size_t i = 0; i < g->n; i++) {
		if (g->nodes[i].kind == NODE_ALLOC || g->nodes[i].kind == NODE_FREE) return 1;
	}
	return 0;
}

// stub_graph_hosts reports whether g, or a graph its nodes run, has a host
// node.
static int stub_graph_hosts(const struct stub_graph *g) {
	for (size_t i = 0; i < g->n; i++) {
		if (g->nodes[i].kind == NODE_HOST) return 1;
		for (unsigned j = 0; j < g->nodes[i].nsubs; j++) {
			if (stub_graph_hosts(g->nodes[i].subs[j])) return 1;
		}
	}
	return 0;
}

// stub_node_check checks that the memory a node of a launched graph uses
// is still allocated, where the capture, or the node's addition, found it.
static CUresult stub_node_check(const struct stub_node *nd) {
	switch (nd->kind) {
	case NODE_COPY:
		return stub_device_range(nd->dst, nd->n) == CUDA_SUCCESS && stub_device_range(nd->src, nd->n) == CUDA_SUCCESS
			? CUDA_SUCCESS : CUDA_ERROR_ILLEGAL_ADDRESS;
	case NODE_SET:
		return stub_device_range(nd->dst, stub_set_span(nd)) == CUDA_SUCCESS ? CUDA_SUCCESS : CUDA_ERROR_ILLEGAL_ADDRESS;
	case NODE_KERNEL:
		return stubKernels[nd->launch.k].fn(&nd->launch, 0) == CUDA_SUCCESS ? CUDA_SUCCESS : CUDA_ERROR_ILLEGAL_ADDRESS;
	case NODE_RECORD: case NODE_WAIT: // an event destroyed meanwhile: undefined in CUDA
		return stub_event(nd->event) != NULL ? CUDA_SUCCESS : CUDA_ERROR_ILLEGAL_ADDRESS;
	}
	return CUDA_SUCCESS;
}

// stub_galloc_live makes a's memory there (on), where *r is
// CUDA_SUCCESS and it is not (else it sets *r to
// CUDA_ERROR_INVALID_VALUE: freed by no launch since the last), or not.
static void stub_galloc_live(struct stub_galloc *a, int on, CUresult *r) {
	pthread_mutex_lock(&stub_mem_mu);
	if (!on) {
		a->live = 0;
	} else if (*r == CUDA_SUCCESS && a->live) {
		*r = CUDA_ERROR_INVALID_VALUE;
	} else if (*r == CUDA_SUCCESS) {
		a->live = 1;
	}
	pthread_mutex_unlock(&stub_mem_mu);
}

// stub_graph_check checks the nodes a launch of g runs (stub_node_check),
// in their order, with its allocations there from their allocation nodes
// to their free nodes, as the run (stub_graph_do) makes them: it undoes
// what it made live.
static CUresult stub_graph_check(const struct stub_graph *g) {
	CUresult r = CUDA_SUCCESS;
	size_t i;
	for (i = 0; r == CUDA_SUCCESS && i < g->n; i++) {
		const struct stub_node *nd = &g->nodes[i];
		if (nd->kind == NODE_ALLOC || nd->kind == NODE_FREE) stub_galloc_live(nd->galloc, nd->kind == NODE_ALLOC, &r);
		if (r == CUDA_SUCCESS) r = stub_node_check(nd);
		const struct stub_graph *sub = stub_node_sub(nd);
		if (r == CUDA_SUCCESS && sub != NULL) r = stub_graph_check(sub);
	}
	// The allocations this check made live; one live before it failed it.
	size_t checked = r == CUDA_SUCCESS ? i : i - 1;
	for (size_t j = 0; j < checked; j++) {
		if (g->nodes[j].kind == NODE_ALLOC) stub_galloc_live(g->nodes[j].galloc, 0, NULL);
	}
	return r;
}

// stub_graph_do does g's work (a host node's is queued), on stream s, and
// reports whether it queued a host node.
static int stub_graph_do(const struct stub_graph *g, CUstream s) {
	int hosts = 0;
	for (size_t i = 0; i < g->n; i++) {
		const struct stub_node *nd = &g->nodes[i];
		switch (nd->kind) {
		case NODE_COPY: memmove((void *)(uintptr_t)nd->dst, (const void *)(uintptr_t)nd->src, nd->n); break;
		case NODE_SET: stub_set(nd); break;
		case NODE_HOST: stub_queue(nd->fn, NULL, s, nd->data), hosts = 1; break;
		case NODE_KERNEL: stubKernels[nd->launch.k].fn(&nd->launch, 1); break;
		case NODE_RECORD: stub_event_recorded(stub_event(nd->event), stub_stream(s)); break;
		case NODE_ALLOC: case NODE_FREE: { // checked: it may
			CUresult r = CUDA_SUCCESS;
			stub_galloc_live(nd->galloc, nd->kind == NODE_ALLOC, &r);
			break;
		}
		}
		const struct stub_graph *sub = stub_node_sub(nd);
		if (sub != NULL) hosts |= stub_graph_do(sub, s);
	}
	return hosts;
}

// A launch holds references to its graph's user objects, its child
// graphs' included, until its host nodes have run: a stub_launched,
// released on the host thread behind them.
struct stub_launched {
	size_t n;
	struct stub_ref refs[];
};

// stub_graph_nrefs returns the references g and the graphs its nodes run
// hold, which stub_graph_refs_to copies to refs, taking them.
static size_t stub_graph_nrefs(const struct stub_graph *g) {
	size_t n = g->nrefs;
	for (size_t i = 0; i < g->n; i++) {
		for (unsigned j = 0; j < g->nodes[i].nsubs; j++) n += stub_graph_nrefs(g->nodes[i].subs[j]);
	}
	return n;
}
static struct stub_ref *stub_graph_refs_to(const struct stub_graph *g, struct stub_ref *refs) {
	for (size_t i = 0; i < g->nrefs; i++) {
		*refs = g->refs[i];
		refs++->o->refs += g->refs[i].n;
	}
	for (size_t i = 0; i < g->n; i++) {
		for (unsigned j = 0; j < g->nodes[i].nsubs; j++) refs = stub_graph_refs_to(g->nodes[i].subs[j], refs);
	}
	return refs;
}

static void stub_launched_release(void *p) {
	struct stub_launched *l = p;
	pthread_mutex_lock(&stub_mu);
	stub_refs_release(l->refs, l->n);
	pthread_mutex_unlock(&stub_mu);
	free(l);
}

// stub_exec returns x where it is an instantiated graph, else NULL; stub_mu
// is held.
static struct stub_graph *stub_exec(CUgraphExec x) { return stub_object(x, STUB_EXEC); }

STUB(cuGraphInstantiateWithParams)(CUgraphExec *exec, CUgraph graph, CUDA_GRAPH_INSTANTIATE_PARAMS *p) {
	*exec = NULL;
	if (p == NULL) return CUDA_ERROR_INVALID_VALUE;
	if (p->flags & ~(cuuint64_t)(CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH | CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD |
			CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY)) {
		return STUB_UNMODELLED; // device launch
	}
	CUresult r = CUDA_SUCCESS;
	pthread_mutex_lock(&stub_mu);
	struct stub_graph *g = stub_object(graph, STUB_GRAPH), *x = NULL;
	if (g == NULL) {
		r = CUDA_ERROR_INVALID_VALUE;
	} else if (g->owner != NULL || g->captures > 0 || (r = stub_graph_runnable(g)) != CUDA_SUCCESS) {
		// A conditional node's body; a graph captured into (CUDA refuses it
		// without saying how); a conditional node the stand-in cannot run.
		r = STUB_UNMODELLED;
	} else if ((p->flags & CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD) &&
			(r = stub_uncapturable(stub_stream(p->hUploadStream), 0)) != CUDA_SUCCESS) {
		// refused
	} else if ((x = stub_new(sizeof *x, STUB_EXEC)) == NULL) {
		r = CUDA_ERROR_OUT_OF_MEMORY;
	} else if ((r = stub_graph_append(x, g, 1)) != CUDA_SUCCESS) {
		stub_graph_clear(x);
		x->magic = STUB_DEAD;
	} else {
		*exec = (CUgraphExec)x;
	}
	p->result_out = r == CUDA_SUCCESS ? CUDA_GRAPH_INSTANTIATE_SUCCESS : CUDA_GRAPH_INSTANTIATE_ERROR;
	pthread_mutex_unlock(&stub_mu);
	return r;
}

// stub_capture_graph captures the work of x, launched on st, which
// captures: a copy of x's nodes, those that depend on none after the nodes
// st's work comes after; st's next work comes after those of them that
// none depends on. Into a conditional node's body, a graph with host
// nodes is refused, as cuGraphAddChildGraphNode refuses it.
static CUresult stub_capture_graph(struct stub_stream *st, const struct stub_graph *x) {
	struct stub_graph *g = st->cap->g;
	if (g->owner != NULL && stub_graph_hosts(x)) return STUB_UNMODELLED;
	size_t base = g->n, *sinks = NULL, nsinks = 0;
	unsigned char *before = NULL; // the nodes of x that others of x come after
	if (x->n > 0 && ((sinks = malloc(x->n * sizeof *sinks)) == NULL || (before = calloc(x->n, 1)) == NULL)) {
		free(sinks);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	CUresult r = stub_graph_append(g, x, 0);
	for (size_t i = base; r == CUDA_SUCCESS && i < g->n; i++) {
		struct stub_node *nd = &g->nodes[i];
		for (size_t k = 0; k < nd->ndeps; k++) before[nd->deps[k] - base] = 1;
		if (nd->ndeps == 0) r = stub_places_copy(&nd->deps, &nd->ndeps, st->deps, st->ndeps);
	}
	for (size_t i = base; r == CUDA_SUCCESS && i < g->n; i++) {
		if (!before[i - base]) sinks[nsinks++] = i;
	}
	if (r == CUDA_SUCCESS && nsinks > 0) {
		free(st->deps);
		st->deps = sinks, st->ndeps = nsinks;
		sinks = NULL;
	}
	free(sinks);
	free(before);
	if (r == CUDA_SUCCESS) stub_captured(st);
	return r;
}

// cuGraphLaunch does the graph's work, on s, once it has found all its
// memory allocated; in a capture, the work is captured
// (stub_capture_graph).
STUB(cuGraphLaunch)(CUgraphExec exec, CUstream s) {
	CUresult r = CUDA_SUCCESS;
	pthread_mutex_lock(&stub_mu);
	struct stub_graph *x = stub_exec(exec);
	struct stub_stream *st = stub_stream(s);
	if (x == NULL || st == NULL) {
		r = CUDA_ERROR_INVALID_HANDLE;
	} else if (st->cap != NULL) {
		r = st->cap->invalidated ? CUDA_ERROR_STREAM_CAPTURE_INVALIDATED : stub_capture_graph(st, x);
	} else if ((r = stub_implicit(st)) == CUDA_SUCCESS && (r = stub_graph_check(x)) == CUDA_SUCCESS &&
			(r = stub_cond_turn(x, st)) == CUDA_SUCCESS) {
		int hosts = stub_graph_do(x, s);
		size_t n = stub_graph_nrefs(x);
		struct stub_launched *l;
		if (hosts && n > 0 && (l = malloc(sizeof *l + n * sizeof l->refs[0])) != NULL) {
			l->n = n;
			stub_graph_refs_to(x, l->refs);
			stub_queue(stub_launched_release, NULL, NULL, l);
		}
	}
	pthread_mutex_unlock(&stub_mu);
	return r;
}

// cuGraphUpload has nothing to upload: the graph's memory is the host's.
STUB(cuGraphUpload)(CUgraphExec exec, CUstream s) {
	pthread_mutex_lock(&stub_mu);
	CUresult r = stub_exec(exec) == NULL ? CUDA_ERROR_INVALID_HANDLE : stub_uncapturable(stub_stream(s), 0);
	pthread_mutex_unlock(&stub_mu);
	return r;
}

// stub_same_deps reports whether a and b depend on the same nodes.
static int stub_same_deps(const struct stub_node *a, const struct stub_node *b) {
	if (a->ndeps != b->ndeps) return 0;
	for (size_t i = 0; i < a->ndeps; i++) {
		size_t j = 0;
		while (j < b->ndeps && b->deps[j] != a->deps[i]) j++;
		if (j == b->ndeps) return 0;
	}
	return 1;
}

// stub_graph_same returns CU_GRAPH_EXEC_UPDATE_SUCCESS where b has a's
// nodes, of the same kinds, with the same dependencies, kernels of the
// same functions, conditional nodes of the same types and graphs of the
// same shapes, as CUDA requires of an update; else why not.
static CUgraphExecUpdateResult stub_graph_same(const struct stub_graph *a, const struct stub_graph *b) {
	if (a->n != b->n) return CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
	for (size_t i = 0; i < a->n; i++) {
		const struct stub_node *x = &a->nodes[i], *y = &b->nodes[i];
		if (x->kind != y->kind) return CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED;
		if (!stub_same_deps(x, y) || x->nsubs != y->nsubs) return CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
		if (x->kind == NODE_KERNEL && x->launch.k != y->launch.k) return CU_GRAPH_EXEC_UPDATE_ERROR_UNSUPPORTED_FUNCTION_CHANGE;
		if (x->kind == NODE_COND && x->ctype != y->ctype) return CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED;
		for (unsigned j = 0; j < x->nsubs; j++) {
			CUgraphExecUpdateResult r = stub_graph_same(x->subs[j], y->subs[j]);
			if (r != CU_GRAPH_EXEC_UPDATE_SUCCESS) return r;
		}
	}
	return CU_GRAPH_EXEC_UPDATE_SUCCESS;
}

// cuGraphExecUpdate takes g's work and user objects into exec where g has
// the shape of exec's (stub_graph_same); what the nodes do may change. The
// nodes keep their handles, those of the graph exec was instantiated from.
STUB(cuGraphExecUpdate)(CUgraphExec exec, CUgraph graph, CUgraphExecUpdateResultInfo *info) {
	CUresult r = CUDA_SUCCESS;
	*info = (CUgraphExecUpdateResultInfo){CU_GRAPH_EXEC_UPDATE_ERROR};
	pthread_mutex_lock(&stub_mu);
	struct stub_graph *x = stub_exec(exec), *g = stub_object(graph, STUB_GRAPH);
	if (x == NULL || g == NULL) {
		r = CUDA_ERROR_INVALID_VALUE;
	} else if (g->owner != NULL || g->captures > 0 || stub_graph_runnable(g) != CUDA_SUCCESS) {
		r = STUB_UNMODELLED; // as for cuGraphInstantiateWithParams
	} else {
		info->result = stub_graph_same(x, g);
	}
	if (r == CUDA_SUCCESS && info->result != CU_GRAPH_EXEC_UPDATE_SUCCESS) {
		r = CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
	} else if (r == CUDA_SUCCESS) {
		struct stub_graph next = {STUB_EXEC};
		if ((r = stub_graph_append(&next, g, 0)) != CUDA_SUCCESS) {
			stub_graph_clear(&next);
			info->result = CU_GRAPH_EXEC_UPDATE_ERROR;
		} else {
			for (size_t i = 0; i < x->n; i++) next.nodes[i].id = x->nodes[i].id;
			stub_graph_clear(x);
			*x = next;
		}
	}
	pthread_mutex_unlock(&stub_mu);
	return r;
}

// A graph captured into, or whose body is, cannot be destroyed (CUDA says
// so, without the error it returns); nor can a body, but with its graph.
static CUresult stub_graph_destroy(const void *h, unsigned magic) {
	pthread_mutex_lock(&stub_mu);
	struct stub_graph *g = stub_object(h, magic);
	CUresult r = g == NULL ? CUDA_ERROR_INVALID_VALUE : g->owner != NULL || g->captures > 0 ? STUB_UNMODELLED : CUDA_SUCCESS;
	if (r == CUDA_SUCCESS) {
		stub_graph_clear(g);
		g->magic = STUB_DEAD;
	}
	pthread_mutex_unlock(&stub_mu);
	return r;
}
STUB(cuGraphDestroy)(CUgraph g) { return stub_graph_destroy(g, STUB_GRAPH); }
STUB(cuGraphExecDestroy)(CUgraphExec x) { return stub_graph_destroy(x, STUB_EXEC); }

// ---- Graphs built node by node ----------------------------------------

STUB(cuGraphCreate)(CUgraph *graph, unsigned flags) {
	if (graph == NULL) return CUDA_ERROR_INVALID_VALUE;
	*graph = NULL;
	if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&stub_mu);
	*graph = stub_new(sizeof(struct stub_graph), STUB_GRAPH);
	pthread_mutex_unlock(&stub_mu);
	return *graph != NULL ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

// stub_graph_node_add adds nd to g after the n nodes deps, which must be
// nodes of g, each once, and returns its new handle in *node. Where it
// fails, it frees what nd owns. stub_mu is held.
static CUresult stub_graph_node_add(struct stub_graph *g, const CUgraphNode *deps, size_t n, struct stub_node *nd,
		CUgraphNode *node) {
	CUresult r = n > 0 && deps == NULL ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
	nd->id = NULL, nd->deps = NULL, nd->ndeps = 0;
	if (r == CUDA_SUCCESS && n > 0 && (nd->deps = malloc(n * sizeof *nd->deps)) == NULL) r = CUDA_ERROR_OUT_OF_MEMORY;
	for (size_t i = 0; r == CUDA_SUCCESS && i < n; i++) {
		struct stub_gnode *d = stub_object(deps[i], STUB_NODE);
		if (d == NULL || d->g != g) r = CUDA_ERROR_INVALID_VALUE;
		for (size_t j = 0; r == CUDA_SUCCESS && j < i; j++) {
			if (deps[j] == deps[i]) r = CUDA_ERROR_INVALID_VALUE;
		}
		if (r == CUDA_SUCCESS) nd->deps[nd->ndeps++] = d->i;
	}
	struct stub_gnode *id = NULL;
	if (r == CUDA_SUCCESS && (id = stub_new(sizeof *id, STUB_NODE)) == NULL) r = CUDA_ERROR_OUT_OF_MEMORY;
	if (r == CUDA_SUCCESS) {
		*id = (struct stub_gnode){STUB_NODE, g, g->n};
		nd->id = id;
		if ((r = stub_graph_add(g, nd)) != CUDA_SUCCESS) id->magic = STUB_DEAD;
	}
	if (r != CUDA_SUCCESS) {
		stub_node_free(nd);
		return r;
	}
	*node = (CUgraphNode)id;
	return CUDA_SUCCESS;
}

// stub_add adds nd, whose parameters' check returned r, to graph, as
// stub_graph_node_add does.
static CUresult stub_add(CUresult r, CUgraphNode *node, CUgraph graph, const CUgraphNode *deps, size_t n,
		struct stub_node *nd) {
	if (node == NULL) r = CUDA_ERROR_INVALID_VALUE;
	if (r != CUDA_SUCCESS) return r;
	*node = NULL;
	pthread_mutex_lock(&stub_mu);
	struct stub_graph *g = stub_object(graph, STUB_GRAPH);
	r = g == NULL ? CUDA_ERROR_INVALID_VALUE : stub_graph_node_add(g, deps, n, nd, node);
	pthread_mutex_unlock(&stub_mu);
	return r;
}

// stub_context_ok reports whether ctx is a context, or NULL, the current
// one, and there is one.
static int stub_context_ok(CUcontext ctx) { return ctx == NULL ? stub_current_device() >= 0 : stub_ctx_device(ctx) >= 0; }

STUB(cuGraphAddEmptyNode)(CUgraphNode *node, CUgraph graph, const CUgraphNode *deps, size_t n) {
	struct stub_node nd = {.kind = NODE_EMPTY};
	return stub_add(CUDA_SUCCESS, node, graph, deps, n, &nd);
}

// stub_kernel_node_of checks a kernel node's parameters as a launch's
// (stub_launch_of, stub_kernel_params_of), with graphs' allocations there
// (stub_adding), and packs them into *l.
static CUresult stub_kernel_params_of(struct stub_launch *l, const CUDA_KERNEL_NODE_PARAMS *p);
static CUresult stub_kernel_node_of(struct stub_launch *l, const CUDA_KERNEL_NODE_PARAMS *p) {
	if (p == NULL) return CUDA_ERROR_INVALID_VALUE;
	stub_adding++;
	CUresult r = stub_kernel_params_of(l, p);
	stub_adding--;
	return r;
}
static CUresult stub_kernel_params_of(struct stub_launch *l, const CUDA_KERNEL_NODE_PARAMS *p) {
	CUfunction f = p->func;
	if (f == NULL) { // the kernel, in ctx
		if (!stub_context_ok(p->ctx)) return CUDA_ERROR_INVALID_CONTEXT;
		f = (CUfunction)p->kern;
	}
	const unsigned grid[3] = {p->gridDimX, p->gridDimY, p->gridDimZ};
	const unsigned block[3] = {p->blockDimX, p->blockDimY, p->blockDimZ};
	return stub_launch_of(l, f, grid, block, p->sharedMemBytes, p->kernelParams, p->extra);
}

STUB(cuGraphAddKernelNode)(CUgraphNode *node, CUgraph graph, const CUgraphNode *deps, size_t n,
		const CUDA_KERNEL_NODE_PARAMS *p) {
	struct stub_node nd = {.kind = NODE_KERNEL};
	return stub_add(stub_kernel_node_of(&nd.launch, p), node, graph, deps, n, &nd);
}

// A memset node is checked as a memset (stub_set_of), with elements of 1,
// 2 or 4 bytes; one of no element is not modelled.
STUB(cuGraphAddMemsetNode)(CUgraphNode *node, CUgraph graph, const CUgraphNode *deps, size_t n,
		const CUDA_MEMSET_NODE_PARAMS *p, CUcontext ctx) {
	struct stub_node nd = {.kind = NODE_SET};
	CUresult r;
	if (!stub_context_ok(ctx)) {
		r = CUDA_ERROR_INVALID_CONTEXT;
	} else if (p == NULL || (p->elementSize != 1 && p->elementSize != 2 && p->elementSize != 4)) {
		r = CUDA_ERROR_INVALID_VALUE;
	} else if (p->width == 0 || p->height == 0) {
		r = STUB_UNMODELLED;
	} else {
		stub_adding++;
		r = stub_set_of(&nd, p->dst, p->value, p->elementSize, p->width, p->height, p->pitch);
		stub_adding--;
	}
	return stub_add(r, node, graph, deps, n, &nd);
}

// stub_copy_side returns the address of one side of a copy node, of
// memory type type at host or device, in *p: device memory (an address of
// the unified space, as the stand-in's memory all is) or pinned host
// memory; an array is not modelled.
static CUresult stub_copy_side(CUdeviceptr *p, CUmemorytype type, const void *host, CUdeviceptr device) {
	switch (type) {
	case CU_MEMORYTYPE_HOST: *p = (CUdeviceptr)(uintptr_t)host; return CUDA_SUCCESS;
	case CU_MEMORYTYPE_DEVICE: case CU_MEMORYTYPE_UNIFIED: *p = device; return CUDA_SUCCESS;
	case CU_MEMORYTYPE_ARRAY: return STUB_UNMODELLED;
	}
	return CUDA_ERROR_INVALID_VALUE;
}

// A copy node copies WidthInBytes bytes between two allocations, checked
// as a copy (stub_copy_range) when the node is added; pageable memory, as
// in a capture, and copies of rows, planes or arrays are not modelled.
static CUresult stub_copy_node_of(struct stub_node *nd, const CUDA_MEMCPY3D *p, CUcontext ctx);
STUB(cuGraphAddMemcpyNode)(CUgraphNode *node, CUgraph graph, const CUgraphNode *deps, size_t n,
		const CUDA_MEMCPY3D *p, CUcontext ctx) {
	struct stub_node nd = {.kind = NODE_COPY};
	return stub_add(stub_copy_node_of(&nd, p, ctx), node, graph, deps, n, &nd);
}

// stub_copy_node_of checks a copy node's parameters and sets nd's.
static CUresult stub_copy_node_of(struct stub_node *nd, const CUDA_MEMCPY3D *p, CUcontext ctx) {
	CUresult r = CUDA_SUCCESS;
	int pageable = 0;
	if (!stub_context_ok(ctx)) {
		r = CUDA_ERROR_INVALID_CONTEXT;
	} else if (p == NULL) {
		r = CUDA_ERROR_INVALID_VALUE;
	} else if (p->srcXInBytes || p->srcY || p->srcZ || p->srcLOD || p->dstXInBytes || p->dstY || p->dstZ || p->dstLOD ||
			p->Height != 1 || p->Depth != 1 || p->WidthInBytes == 0) {
		r = STUB_UNMODELLED;
	} else if ((r = stub_copy_side(&nd->src, p->srcMemoryType, p->srcHost, p->srcDevice)) == CUDA_SUCCESS &&
			(r = stub_copy_side(&nd->dst, p->dstMemoryType, p->dstHost, p->dstDevice)) == CUDA_SUCCESS) {
		nd->n = p->WidthInBytes;
		stub_adding++;
		if ((r = stub_copy_range(nd->dst, nd->n, &pageable)) == CUDA_SUCCESS) r = stub_copy_range(nd->src, nd->n, &pageable);
		stub_adding--;
		if (r == CUDA_SUCCESS && pageable) r = STUB_UNMODELLED;
	}
	return r;
}

// A host node calls its function at each run of the node; a conditional
// node's body takes none, as in a capture (stub_capture_add).
STUB(cuGraphAddHostNode)(CUgraphNode *node, CUgraph graph, const CUgraphNode *deps, size_t n,
		const CUDA_HOST_NODE_PARAMS *p) {
	if (p == NULL || p->fn == NULL) return CUDA_ERROR_INVALID_VALUE;
	struct stub_node nd = {.kind = NODE_HOST, .fn = p->fn, .data = p->userData};
	CUresult r = CUDA_SUCCESS;
	pthread_mutex_lock(&stub_mu);
	struct stub_graph *g = stub_object(graph, STUB_GRAPH);
	if (g != NULL && g->owner != NULL) r = STUB_UNMODELLED;
	pthread_mutex_unlock(&stub_mu);
	return stub_add(r, node, graph, deps, n, &nd);
}

// An event record node records its event at each run of the node, as
// cuEventRecord does (stub_event_recorded), and a wait node waits for it,
// which the stand-in's work, done at the launch, has nothing to do for; a
// conditional node's body takes neither. A launch checks that the event
// still exists (stub_node_check).
static CUresult stub_add_event(CUgraphNode *node, CUgraph graph, const CUgraphNode *deps, size_t n, CUevent e,
		int kind) {
	struct stub_node nd = {.kind = kind, .event = e};
	CUresult r = CUDA_SUCCESS;
	pthread_mutex_lock(&stub_mu);
	struct stub_graph *g = stub_object(graph, STUB_GRAPH);
	if (stub_event(e) == NULL) {
		r = CUDA_ERROR_INVALID_HANDLE;
	} else if (g != NULL && g->owner != NULL) {
		r = STUB_UNMODELLED;
	}
	pthread_mutex_unlock(&stub_mu);
	return stub_add(r, node, graph, deps, n, &nd);
}
STUB(cuGraphAddEventRecordNode)(CUgraphNode *node, CUgraph graph, const CUgraphNode *deps, size_t n, CUevent e) {
	return stub_add_event(node, graph, deps, n, e, NODE_RECORD);
}
STUB(cuGraphAddEventWaitNode)(CUgraphNode *node, CUgraph graph, const CUgraphNode *deps, size_t n, CUevent e) {
	return stub_add_event(node, graph, deps, n, e, NODE_WAIT);
}

// An allocation node reserves its memory now (struct stub_galloc), on the
// device of its location, which must be the current context's; a free
// node frees the memory of an allocation node of its graph, once. A
// conditional node's body takes neither.
STUB(cuGraphAddMemAllocNode)(CUgraphNode *node, CUgraph graph, const CUgraphNode *deps, size_t n,
		CUDA_MEM_ALLOC_NODE_PARAMS *p) {
	if (p == NULL || p->bytesize == 0 || p->poolProps.allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
			p->poolProps.location.type != CU_MEM_LOCATION_TYPE_DEVICE) {
		return CUDA_ERROR_INVALID_VALUE;
	}
	if (p->accessDescCount != 0 || p->poolProps.handleTypes != 0) return STUB_UNMODELLED;
	int dev = p->poolProps.location.id;
	if (dev != stub_current_device()) return STUB_UNMODELLED;
	struct stub_galloc *a = calloc(1, sizeof *a);
	void *m = malloc(p->bytesize);
	CUresult r = a == NULL || m == NULL ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_SUCCESS;
	if (r == CUDA_SUCCESS) {
		*a = (struct stub_galloc){.refs = 1, .base = (uintptr_t)m, .size = p->bytesize};
		pthread_mutex_lock(&stub_mem_mu);
		r = stub_list((struct stub_alloc){(uintptr_t)m, p->bytesize, MEM_GRAPH, dev, NULL, a});
		pthread_mutex_unlock(&stub_mem_mu);
	}
	if (r != CUDA_SUCCESS) {
		free(a), free(m);
		return r;
	}
	struct stub_node nd = {.kind = NODE_ALLOC, .galloc = a};
	pthread_mutex_lock(&stub_mu);
	struct stub_graph *g = stub_object(graph, STUB_GRAPH);
	if (g != NULL && g->owner != NULL) r = STUB_UNMODELLED;
	pthread_mutex_unlock(&stub_mu);
	r = stub_add(r, node, graph, deps, n, &nd);
	if (r != CUDA_SUCCESS) {
		stub_node_free(&nd);
		return r;
	}
	p->dptr = (CUdeviceptr)a->base;
	return CUDA_SUCCESS;
}
STUB(cuGraphAddMemFreeNode)(CUgraphNode *node, CUgraph graph, const CUgraphNode *deps, size_t n, CUdeviceptr dptr) {
	struct stub_node nd = {.kind = NODE_FREE};
	CUresult r = CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&stub_mu);
	struct stub_graph *g = stub_object(graph, STUB_GRAPH);
	for (size_t i = 0; g != NULL && i < g->n; i++) {
		struct stub_galloc *a = g->nodes[i].galloc;
		if (g->nodes[i].kind == NODE_ALLOC && a->base == (uintptr_t)dptr && !a->freed) {
			nd.galloc = a;
			r = CUDA_SUCCESS;
		}
	}
	if (g != NULL && g->owner != NULL) r = STUB_UNMODELLED;
	pthread_mutex_unlock(&stub_mu);
	r = stub_add(r, node, graph, deps, n, &nd);
	if (r == CUDA_SUCCESS) {
		pthread_mutex_lock(&stub_mu);
		nd.galloc->freed = 1;
		pthread_mutex_unlock(&stub_mu);
	}
	return r;
}

// A child graph node runs a copy of child, made now, with its references
// to user objects; in a conditional node's body, one with host nodes is
// refused, as CUDA refuses it (with an error the stand-in does not model).
STUB(cuGraphAddChildGraphNode)(CUgraphNode *node, CUgraph graph, const CUgraphNode *deps, size_t n, CUgraph child) {
	if (node == NULL) return CUDA_ERROR_INVALID_VALUE;
	*node = NULL;
	CUresult r = CUDA_SUCCESS;
	pthread_mutex_lock(&stub_mu);
	struct stub_graph *g = stub_object(graph, STUB_GRAPH), *c = stub_object(child, STUB_GRAPH);
	struct stub_node nd = {.kind = NODE_GRAPH};
	if (g == NULL || c == NULL) {
		r = CUDA_ERROR_INVALID_VALUE;
	} else if (stub_graph_mem(c)) {
		r = CUDA_ERROR_INVALID_VALUE; // CUDA moves such a child, which the stand-in does not model, or refuses it
	} else if (g->owner != NULL && stub_graph_hosts(c)) {
		r = STUB_UNMODELLED;
	} else if ((nd.subs = calloc(1, sizeof *nd.subs)) == NULL) {
		r = CUDA_ERROR_OUT_OF_MEMORY;
	} else {
		nd.nsubs = 1;
		r = (nd.subs[0] = stub_graph_copy(c)) == NULL ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_SUCCESS;
		r = r != CUDA_SUCCESS ? (stub_node_free(&nd), r) : stub_graph_node_add(g, deps, n, &nd, node);
	}
	pthread_mutex_unlock(&stub_mu);
	return r;
}

STUB(cuGraphConditionalHandleCreate)(CUgraphConditionalHandle *h, CUgraph graph, CUcontext ctx, unsigned value,
		unsigned flags) {
	if (h == NULL || (flags & ~(unsigned)CU_GRAPH_COND_ASSIGN_DEFAULT)) return CUDA_ERROR_INVALID_VALUE;
	*h = 0;
	if (!stub_context_ok(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
	CUresult r = CUDA_SUCCESS;
	pthread_mutex_lock(&stub_mu);
	struct stub_graph *g = stub_object(graph, STUB_GRAPH);
	struct stub_cond *c = NULL;
	if (g == NULL) {
		r = CUDA_ERROR_INVALID_VALUE;
	} else if ((c = stub_new(sizeof *c, STUB_COND)) == NULL) {
		r = CUDA_ERROR_OUT_OF_MEMORY;
	} else {
		*c = (struct stub_cond){STUB_COND, g, value, flags};
		*h = (CUgraphConditionalHandle)(uintptr_t)c;
	}
	pthread_mutex_unlock(&stub_mu);
	return r;
}

// cuGraphAddNode adds conditional nodes only, of a handle of the graph or
// of a graph that holds it (as a conditional node holds its bodies): an
// `if` of one body, or two from CUDA 12.8; a `while` of one; a `switch`
// of one or more, from CUDA 12.8. It makes their bodies, and points
// phGraph_out at the node's array of them.
STUB(cuGraphAddNode)(CUgraphNode *node, CUgraph graph, const CUgraphNode *deps, size_t n, CUgraphNodeParams *p) {
	if (node == NULL || p == NULL) return CUDA_ERROR_INVALID_VALUE;
	*node = NULL;
	if (p->type != CU_GRAPH_NODE_TYPE_CONDITIONAL) return STUB_UNMODELLED;
	CUDA_CONDITIONAL_NODE_PARAMS *c = &p->conditional;
	if (!stub_context_ok(c->ctx)) return CUDA_ERROR_INVALID_CONTEXT;
	int recent = stub_driver_version() >= 12080, type = (int)c->type;
	if (!((type == CU_GRAPH_COND_TYPE_IF && (c->size == 1 || (c->size == 2 && recent))) ||
			(type == CU_GRAPH_COND_TYPE_WHILE && c->size == 1) || (type == 2 && recent && c->size >= 1))) {
		return CUDA_ERROR_INVALID_VALUE;
	}
	CUresult r = CUDA_SUCCESS;
	pthread_mutex_lock(&stub_mu);
	struct stub_graph *g = stub_object(graph, STUB_GRAPH), *a = g;
	struct stub_cond *h = stub_object((void *)(uintptr_t)c->handle, STUB_COND);
	if (g != NULL && h != NULL) {
		while (a != NULL && a != h->g) a = a->owner;
	}
	struct stub_node nd = {.kind = NODE_COND, .ctype = type};
	if (g == NULL || h == NULL || a == NULL) {
		r = CUDA_ERROR_INVALID_VALUE;
	} else if ((nd.subs = calloc(c->size, sizeof *nd.subs)) == NULL) {
		r = CUDA_ERROR_OUT_OF_MEMORY;
	} else {
		nd.nsubs = c->size, nd.cvalue = h->value, nd.cflags = h->flags;
		for (unsigned i = 0; r == CUDA_SUCCESS && i < c->size; i++) {
			if ((nd.subs[i] = stub_new(sizeof(struct stub_graph), STUB_GRAPH)) == NULL) {
				r = CUDA_ERROR_OUT_OF_MEMORY;
			} else {
				nd.subs[i]->owner = g;
			}
		}
		r = r != CUDA_SUCCESS ? (stub_node_free(&nd), r) : stub_graph_node_add(g, deps, n, &nd, node);
		if (r == CUDA_SUCCESS) c->phGraph_out = (CUgraph *)nd.subs; // the node's, while it lives
	}
	pthread_mutex_unlock(&stub_mu);
	return r;
}

// cuGraphExecKernelNodeSetParams sets the launch of node, a kernel node of
// the graph exec was instantiated from, in exec. A node of a conditional
// node's body is not modelled.
// stub_exec_node returns exec's instance of node, a node of kind of the
// graph exec was made of and not of a body (not modelled), whose
// parameters are to change; else NULL, with the error in *r. stub_mu is
// held.
static struct stub_node *stub_exec_node(CUgraphExec exec, CUgraphNode node, int kind, CUresult *r) {
	struct stub_graph *x = stub_exec(exec);
	struct stub_gnode *id = stub_object(node, STUB_NODE);
	if (x == NULL || id == NULL) {
		*r = CUDA_ERROR_INVALID_VALUE;
	} else if (id->g->owner != NULL) {
		*r = STUB_UNMODELLED;
	} else if (id->i >= x->n || x->nodes[id->i].id != id || x->nodes[id->i].kind != kind) {
		*r = CUDA_ERROR_INVALID_VALUE; // of another graph, added after exec was made, or of another kind
	} else {
		return &x->nodes[id->i];
	}
	return NULL;
}

STUB(cuGraphExecKernelNodeSetParams)(CUgraphExec exec, CUgraphNode node, const CUDA_KERNEL_NODE_PARAMS *p) {
	struct stub_launch l;
	CUresult r = stub_kernel_node_of(&l, p);
	if (r != CUDA_SUCCESS) return r;
	pthread_mutex_lock(&stub_mu);
	struct stub_node *nd = stub_exec_node(exec, node, NODE_KERNEL, &r);
	if (nd != NULL) nd->launch = l;
	pthread_mutex_unlock(&stub_mu);
	return r;
}

// A memset node of an instantiation takes a new address and value; a new
// shape (elements, their size, rows, pitch), which CUDA may refuse, is
// refused.
STUB(cuGraphExecMemsetNodeSetParams)(CUgraphExec exec, CUgraphNode node, const CUDA_MEMSET_NODE_PARAMS *p,
		CUcontext ctx) {
	if (!stub_context_ok(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
	if (p == NULL || (p->elementSize != 1 && p->elementSize != 2 && p->elementSize != 4)) return CUDA_ERROR_INVALID_VALUE;
	struct stub_node set;
	stub_adding++;
	CUresult r = stub_set_of(&set, p->dst, p->value, p->elementSize, p->width, p->height, p->pitch);
	stub_adding--;
	if (r != CUDA_SUCCESS) return r;
	pthread_mutex_lock(&stub_mu);
	struct stub_node *nd = stub_exec_node(exec, node, NODE_SET, &r);
	if (nd != NULL) {
		if (nd->n != set.n || nd->elem != set.elem || nd->rows != set.rows || (set.rows > 1 && nd->pitch != set.pitch)) {
			r = CUDA_ERROR_INVALID_VALUE;
		} else {
			nd->dst = set.dst, nd->v = set.v;
		}
	}
	pthread_mutex_unlock(&stub_mu);
	return r;
}

// A copy node of an instantiation takes new addresses; a new size is
// refused.
STUB(cuGraphExecMemcpyNodeSetParams)(CUgraphExec exec, CUgraphNode node, const CUDA_MEMCPY3D *p, CUcontext ctx) {
	struct stub_node cp = {.kind = NODE_COPY};
	CUresult r = stub_copy_node_of(&cp, p, ctx);
	if (r != CUDA_SUCCESS) return r;
	pthread_mutex_lock(&stub_mu);
	struct stub_node *nd = stub_exec_node(exec, node, NODE_COPY, &r);
	if (nd != NULL) {
		if (nd->n != cp.n) {
			r = CUDA_ERROR_INVALID_VALUE;
		} else {
			nd->src = cp.src, nd->dst = cp.dst;
		}
	}
	pthread_mutex_unlock(&stub_mu);
	return r;
}

// stub_dot writes g's nodes, named prefix followed by their places (n0,
// n1, ...; n2.0.0 for the first node of node n2's first body), and their
// dependencies, in Graphviz's DOT language; a conditional node's bodies
// are clusters of their own, and a child graph node is one node.
static void stub_dot(FILE *f, const struct stub_graph *g, const char *prefix) {
	static const char *const types[] = {"IF", "WHILE", "SWITCH"};
	for (size_t i = 0; i < g->n; i++) {
		const struct stub_node *nd = &g->nodes[i];
		fprintf(f, "\t\"%s%zu\" [shape=box label=\"%s%zu ", prefix, i, prefix, i);
		switch (nd->kind) {
		case NODE_EMPTY:
			fprintf(f, "EMPTY");
			break;
		case NODE_KERNEL: {
			const struct stub_launch *l = &nd->launch;
			fprintf(f, "KERNEL\\n%s\\ngrid %u,%u,%u block %u,%u,%u shared %u", stubKernels[l->k].name,
				l->grid[0], l->grid[1], l->grid[2], l->block[0], l->block[1], l->block[2], l->smem);
			break;
		}
		case NODE_SET:
			fprintf(f, "MEMSET\\ndst 0x%llx value 0x%x elementSize %u\\nwidth %zu height %zu pitch %zu",
				(unsigned long long)nd->dst, nd->v, nd->elem, nd->n, nd->rows, nd->pitch);
			break;
		case NODE_COPY:
			fprintf(f, "MEMCPY\\ndst 0x%llx src 0x%llx\\n%zu bytes", (unsigned long long)nd->dst,
				(unsigned long long)nd->src, nd->n);
			break;
		case NODE_HOST:
			fprintf(f, "HOST\\nfn %p data %p", (void *)nd->fn, nd->data);
			break;
		case NODE_GRAPH:
			fprintf(f, "GRAPH\\n%zu nodes", nd->subs[0]->n);
			break;
		case NODE_RECORD: case NODE_WAIT:
			fprintf(f, "%s\\nevent %p", nd->kind == NODE_RECORD ? "EVENT_RECORD" : "EVENT_WAIT", (void *)nd->event);
			break;
		case NODE_ALLOC: case NODE_FREE:
			fprintf(f, "%s\\n0x%llx %zu bytes", nd->kind == NODE_ALLOC ? "MEM_ALLOC" : "MEM_FREE",
				(unsigned long long)nd->galloc->base, nd->galloc->size);
			break;
		case NODE_COND:
			fprintf(f, "CONDITIONAL\\n%s, %u bodies\\nvalue %u%s", types[nd->ctype % 3], nd->nsubs, nd->cvalue,
				nd->cflags & CU_GRAPH_COND_ASSIGN_DEFAULT ? " at each launch" : "");
			break;
		}
		fprintf(f, "\"];\n");
		for (size_t j = 0; j < nd->ndeps; j++) fprintf(f, "\t\"%s%zu\" -> \"%s%zu\";\n", prefix, nd->deps[j], prefix, i);
		for (unsigned j = 0; nd->kind == NODE_COND && j < nd->nsubs; j++) {
			char sub[512];
			snprintf(sub, sizeof sub, "%s%zu.%u.", prefix, i, j);
			fprintf(f, "\tsubgraph \"cluster_%s\" {\n\tlabel=\"%s%zu body %u\";\n", sub, prefix, i, j);
			stub_dot(f, nd->subs[j], sub);
			fprintf(f, "\t}\n");
		}
	}
}

// cuGraphDebugDotPrint writes a graph, built node by node or captured
// (stub_dot), with whatever flags.
STUB(cuGraphDebugDotPrint)(CUgraph graph, const char *path, unsigned flags) {
	if (path == NULL || flags >= (unsigned)CU_GRAPH_DEBUG_DOT_FLAGS_CONDITIONAL_NODE_PARAMS << 1) {
		return CUDA_ERROR_INVALID_VALUE;
	}
	CUresult r = CUDA_SUCCESS;
	pthread_mutex_lock(&stub_mu);
	struct stub_graph *g = stub_object(graph, STUB_GRAPH);
	FILE *f = NULL;
	if (g == NULL) {
		r = CUDA_ERROR_INVALID_VALUE;
	} else if ((f = fopen(path, "w")) == NULL) {
		r = CUDA_ERROR_OPERATING_SYSTEM;
	} else {
		fprintf(f, "digraph \"graph %p\" {\n", (void *)g);
		stub_dot(f, g, "n");
		fprintf(f, "}\n");
		if (ferror(f) | fclose(f)) r = CUDA_ERROR_OPERATING_SYSTEM;
	}
	pthread_mutex_unlock(&stub_mu);
	return r;
}
