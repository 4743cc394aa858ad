// shim.h declares highlevel's C shim: each function makes its context
// current on the calling OS thread (when it is not already), calls the
// driver API through the entry point cuGetProcAddress gave for it, and
// puts the previous context back, all in one cgo call.

#ifndef HL_SHIM_H
#define HL_SHIM_H

#include <stddef.h>
#include <stdint.h>
#include <cuda.h>

// Status codes of the shim: 0, a CUresult, or one of these.
enum {
	HL_IN_CALLBACK = -1, // called from a stream callback or host function
	HL_CAPTURING = -2, // the stream is capturing, or joined another stream's capture
	HL_MISSING_BASE = -1000, // HL_MISSING_BASE - i: the driver lacks symbol i (hl_symbol)
};

// zsymbols.h, which gen generates (gen/packages.txt), lists the driver
// functions the shim calls (HL_SYMBOLS) and HL_BASE_VERSION, the version
// below which every one is required: the driver must have them all. A
// symbol of a later version may be missing (an older driver); the
// operations that call it return HL_MISSING_BASE - i.
#include "zsymbols.h"

const char *hl_symbol(int i);
int hl_symbol_version(int i);
int hl_nsymbols(void);
int hl_resolve(void *get_proc_address, int i, int *status);
int hl_driver_version(int *v);

int hl_primary_context(int dev, void **ctx);
int hl_current_device(int *dev);
int hl_device_count(int *n);
int hl_device_attributes(int dev, const int *attrs, int *values, int n);
int hl_device_name(int dev, char *name, int n);
int hl_mem_info(void *ctx, size_t *free, size_t *total);
int hl_pointer_device(void *ptr, int *dev, int *type, int *managed);
// hl_ctx is a context, returned by value with the status of the call.
typedef struct {
	int r;
	void *ctx;
} hl_ctx;
hl_ctx hl_ctx_swap(void *ctx);
int hl_ctx_set(void *ctx);
int hl_ctx_synchronize(void *ctx);
int hl_enable_peer_access(void *ctx, void *peer);
int hl_primary_context_active(int dev, int *active);

int hl_malloc(void *ctx, void **p, size_t n);
int hl_malloc_managed(void *ctx, void **p, size_t n);
int hl_free(void *ctx, void *p);
// hl_alloc is the result of an allocation: returned by value, it leaves
// no Go variable for the address to escape to the heap through.
typedef struct {
	int r;
	void *p;
} hl_alloc;

hl_alloc hl_malloc_async(uintptr_t ctx, size_t n, uintptr_t pool, uintptr_t s);
int hl_free_async(uintptr_t ctx, uintptr_t p, uintptr_t s);
int hl_memcpy(uintptr_t ctx, void *dst, const void *src, size_t n, uintptr_t s, int async);
int hl_memcpy_device(uintptr_t ctx, uintptr_t dst, uintptr_t src, size_t n, uintptr_t s, int async);
// hl_memcpy_record queues a copy on s and records e after it.
int hl_memcpy_record(void *ctx, void *dst, const void *src, size_t n, uintptr_t s, uintptr_t e);
int hl_memcpy_peer(void *ctx, void *dst, const void *src, void *src_ctx, size_t n, uintptr_t s, int async);
int hl_memset(uintptr_t ctx, uintptr_t p, int v, size_t n, uintptr_t s, int async);
int hl_memset_rows(uintptr_t ctx, uintptr_t p, size_t pitch, unsigned v, int size, size_t width, size_t height, uintptr_t s, int async);

int hl_malloc_host(void *ctx, void **p, size_t n);
int hl_free_host(void *ctx, void *p);
int hl_host_register(void *ctx, void *p, size_t n);
int hl_host_unregister(void *ctx, void *p);

int hl_mem_pool_create(void *ctx, uintptr_t *pool, int dev);
int hl_default_mem_pool(void *ctx, uintptr_t *pool, int dev);
int hl_mem_pool_destroy(void *ctx, uintptr_t pool);
int hl_mem_pool_set_attribute(void *ctx, uintptr_t pool, int attr, uint64_t v);
int hl_mem_pool_get_attribute(void *ctx, uintptr_t pool, int attr, uint64_t *v);
int hl_mem_pool_trim(void *ctx, uintptr_t pool, size_t keep);

int hl_stream_create(void *ctx, uintptr_t *s, unsigned flags, int priority);
int hl_stream_priority_range(void *ctx, int *least, int *greatest);
int hl_stream_close(void *ctx, uintptr_t s, int sync, int destroy);
void hl_capture_end(int global);
int hl_stream_synchronize(void *ctx, uintptr_t s);
int hl_stream_query(void *ctx, uintptr_t s);
int hl_stream_wait_event(void *ctx, uintptr_t s, uintptr_t e);
int hl_stream_add_callback(void *ctx, uintptr_t s, uintptr_t h);
int hl_launch_host_func(void *ctx, uintptr_t s, uintptr_t h, int *owned);
int hl_in_callback_now(void);
// An hl_next is a callback for a dispatcher (callback.go): its job, for
// hl_job_done, and the job's fields.
struct hl_next {
	void *job;
	uintptr_t h;
	int status, keep, more;
};
void hl_add_dispatcher(void);
struct hl_next hl_next_job(void);
void hl_job_done(void *job, int again);
int hl_dead_handles(uintptr_t *out, int max);
int hl_stream_begin_capture(void *ctx, uintptr_t s, int mode, long *tid);
int hl_stream_begin_capture_to_graph(void *ctx, uintptr_t s, int mode, long *tid, uintptr_t g, const uintptr_t *deps, size_t n);
int hl_stream_capture_sinks(void *ctx, uintptr_t s, uintptr_t *nodes, size_t max, size_t *n);
int hl_stream_end_capture(void *ctx, uintptr_t s, uintptr_t *g, long tid);

int hl_event_create(void *ctx, uintptr_t *e, unsigned flags);
int hl_event_destroy(void *ctx, uintptr_t e);
int hl_event_record(void *ctx, uintptr_t e, uintptr_t s);
int hl_event_spin(void *ctx, uintptr_t e);
int hl_event_record_capture(void *ctx, uintptr_t e, uintptr_t s, int *captured);
// hl_handle is the result of a call that may make a handle, returned by
// value as hl_alloc is.
typedef struct {
	int r;
	uintptr_t h;
} hl_handle;
hl_handle hl_stream_mark(void *ctx, uintptr_t s, uintptr_t e);
int hl_event_synchronize(void *ctx, uintptr_t e);
int hl_event_query(void *ctx, uintptr_t e);
void hl_nap(long ns);
int hl_event_step(void *ctx, uintptr_t e, long nap, long spin);
int hl_event_elapsed(void *ctx, float *ms, uintptr_t start, uintptr_t end);
void hl_stream_query_many(int n, void **ctxs, const uintptr_t *streams, int *status);

int hl_graph_instantiate(void *ctx, uintptr_t *exec, uintptr_t g, unsigned long long flags, uintptr_t upload,
	int *result);
int hl_graph_launch(void *ctx, uintptr_t exec, uintptr_t s);
int hl_graph_launch_after(void *ctx, uintptr_t exec, uintptr_t s, uintptr_t e, int wait);
int hl_graph_upload(void *ctx, uintptr_t exec, uintptr_t s);
int hl_graph_update(void *ctx, uintptr_t exec, uintptr_t g, int *result);
int hl_graph_destroy(void *ctx, uintptr_t g);
int hl_graph_exec_destroy(void *ctx, uintptr_t exec);

int hl_profiler(void *ctx, int start);

int hl_library_load(void *ctx, uintptr_t *lib, const void *image);
int hl_library_unload(void *ctx, uintptr_t lib);
int hl_library_get_kernel(void *ctx, uintptr_t *k, uintptr_t lib, const char *name);
int hl_kernel_function(void *ctx, uintptr_t *f, uintptr_t k);
int hl_kernel_params(void *ctx, uintptr_t k, uint32_t *offsets, uint32_t *sizes, int max, int *n);
int hl_kernel_attribute(void *ctx, int set, int *v, int attr, uintptr_t k, int dev);
// hl_dims are a launch's grid, block and cluster dimensions; a cluster of 0
// launches without clusters.
typedef struct {
	uint32_t grid[3], block[3], cluster[3];
} hl_dims;
// hl_args holds the packed arguments of a launch whose parameters fit, as
// most kernels' do: 64 bytes, which cost little to pass by value.
enum { HL_ARGS_SIZE = 64 };
typedef struct {
	uint64_t w[HL_ARGS_SIZE / 8];
} hl_args;
// hl_param is a kernel's parameter: its offset in the packed arguments, its
// size, and the class of its type that Go checks arguments against (the
// layout of kernel.go's param).
typedef struct {
	uint32_t offset, size;
	uint8_t class_;
} hl_param;
// Graphs built node by node (graph.go's build): each adds a node to g
// after the n nodes of deps and returns it in *node.
int hl_graph_create(void *ctx, uintptr_t *g);
int hl_graph_add_empty(void *ctx, uintptr_t *node, uintptr_t g, const uintptr_t *deps, size_t n);
int hl_graph_add_kernel(uintptr_t ctx, uintptr_t *node, uintptr_t g, const uintptr_t *deps, size_t ndeps,
	uintptr_t f, hl_dims dims, uint32_t smem, hl_args args, char *big, const hl_param *params, int n);
int hl_graph_add_memset(void *ctx, uintptr_t *node, uintptr_t g, const uintptr_t *deps, size_t ndeps,
	uintptr_t p, size_t pitch, unsigned v, int size, size_t width, size_t height);
int hl_graph_add_copy(void *ctx, uintptr_t *node, uintptr_t g, const uintptr_t *deps, size_t ndeps,
	uintptr_t dst, uintptr_t src, size_t n);
int hl_graph_exec_set_memset(void *ctx, uintptr_t exec, uintptr_t node, uintptr_t ptr, size_t pitch, unsigned v,
	int size, size_t width, size_t height);
int hl_graph_exec_set_copy(void *ctx, uintptr_t exec, uintptr_t node, uintptr_t dst, uintptr_t src, size_t n);
int hl_graph_add_host(void *ctx, uintptr_t *node, uintptr_t g, const uintptr_t *deps, size_t ndeps, uintptr_t h,
	int *owned);
int hl_graph_add_child(void *ctx, uintptr_t *node, uintptr_t g, const uintptr_t *deps, size_t ndeps, uintptr_t child);
int hl_graph_add_event(void *ctx, uintptr_t *node, uintptr_t g, const uintptr_t *deps, size_t ndeps, uintptr_t e,
	int record);
int hl_graph_add_alloc(void *ctx, uintptr_t *node, uintptr_t g, const uintptr_t *deps, size_t ndeps, int dev, size_t n,
	void **p);
int hl_graph_add_free(void *ctx, uintptr_t *node, uintptr_t g, const uintptr_t *deps, size_t ndeps, uintptr_t p);
int hl_graph_add_conditional(void *ctx, uintptr_t *node, uintptr_t g, const uintptr_t *deps, size_t ndeps,
	uint64_t handle, int type, unsigned size, uintptr_t *bodies);
int hl_graph_conditional(void *ctx, uint64_t *handle, uintptr_t g, unsigned value, unsigned flags);
int hl_graph_exec_set_kernel(uintptr_t ctx, uintptr_t exec, uintptr_t node,
	uintptr_t f, hl_dims dims, uint32_t smem, hl_args args, char *big, const hl_param *params, int n);
int hl_graph_dot(void *ctx, uintptr_t g, const char *path, unsigned flags);
int hl_launch(uintptr_t ctx, uintptr_t f, hl_dims dims, uint32_t smem, uintptr_t s, int cooperative,
	hl_args args, char *big, const hl_param *params, int n);
int hl_occupancy_blocks(void *ctx, int *n, uintptr_t k, int block, size_t smem);
int hl_occupancy_block_size(void *ctx, int *grid, int *block, uintptr_t k, size_t smem, int limit);

int hl_wake_after(void *ctx, uintptr_t s, uintptr_t e, uintptr_t h);
void hl_poll_sleep(long ns);
void hl_poll_wake(void);

int hl_mem_prefetch(void *ctx, const void *p, size_t n, int dev, uintptr_t s);
int hl_mem_advise(void *ctx, const void *p, size_t n, int advice, int dev);
int hl_ipc_event_handle(void *ctx, uintptr_t e, void *handle);
int hl_ipc_open_event(void *ctx, uintptr_t *e, const void *handle);
int hl_ipc_mem_handle(void *ctx, void *ptr, void *handle, size_t *offset, int *capable);
int hl_ipc_open_mem(void *ctx, void **base, const void *handle, size_t *size);
int hl_ipc_close_mem(void *ctx, void *base);

// The driver's error log and the libraries' loggers (shim.c's section
// "Logs"): hl_logs_init registers the shim's logger with the driver;
// hl_log_now is the calling thread's stamp, its id and its count of the
// shim's calls, as the logger stamps the lines it hands to Go.
typedef struct {
	long tid;
	unsigned long long serial;
} hl_log_stamp;
int hl_logs_init(void);
hl_log_stamp hl_log_now(void);
// The libraries whose loggers the shim has, for hl_library_logger, which
// returns the C function to register as each one's logger.
enum {
	HL_LOG_BLAS = 1, // cublasSetLoggerCallback
	HL_LOG_BLAS_LT = 2, // cublasLtLoggerSetCallback
	HL_LOG_SPARSE = 3, // cusparseLoggerSetCallback
};
uintptr_t hl_library_logger(int lib);

#endif
