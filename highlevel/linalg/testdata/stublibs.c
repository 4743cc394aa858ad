// stublibs.c stands in for the cuBLAS, cuSOLVER and cuSPARSE functions
// that linalg calls, and watches how they are called. stub_test.go builds
// it into one library with highlevel's stand-in driver
// (../../internal/driver/testdata/stubdriver.c, whose device memory is the
// host's) and loads that library as libcuda, libcublas, libcusolver and
// libcusparse at once ($GOCUDA_CUDA, $GOCUDA_CUBLAS, ...).
//
// It counts, per library, the handles created and destroyed and the calls
// in progress (on any handle), and asks the stand-in driver how many stream
// captures are in progress (stub_captures_in_progress). What the
// libraries forbid it records as violations rather than crashing:
//
//   - a destroy while a call of the library is in progress, on any handle
//     of it (cuBLAS's handles are not safe for concurrent use, and the
//     destroy synchronizes the device), or a call while a destroy is;
//   - a destroy while a stream capture is in progress (the device's
//     synchronization would invalidate it);
//   - a call on a destroyed handle, or on no handle of the library;
//   - two calls on one handle at once;
//   - a call with no context current.
//
// cublasGetProperty(100 + 16*lib + field, &v) reads them back: lib 0 is
// cuBLAS, 1 cuSOLVER, 2 cuSPARSE; the fields are below (enum stub_field).
// The BLAS functions compute their results, column-major, in host memory.
#include <cuda.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>

CUresult stub_cuCtxGetCurrent(CUcontext *ctx); // stubdriver.c's
int stub_captures_in_progress(void);           // stubdriver.c's

enum { STUB_BLAS, STUB_SOLVER, STUB_SPARSE, STUB_NLIBS };

enum stub_field {
	STUB_CREATES,              // handles created
	STUB_DESTROYS,             // handles destroyed
	STUB_VIOLATIONS,           // all the violations below
	STUB_DESTROY_DURING_CALL,  // destroys while calls were in progress, and calls while a destroy was
	STUB_DESTROY_IN_CAPTURE,   // destroys while a capture was in progress
	STUB_USE_AFTER_DESTROY,    // calls on a destroyed handle, or on none of the library
	STUB_CONCURRENT_USE,       // calls on a handle another call was using
	STUB_NO_CONTEXT,           // calls with no context current
	STUB_CALLS,                // calls made
	STUB_NFIELDS,
	STUB_CAPTURES = 15,        // of lib 0: the captures in progress
};

static long stub_counts[STUB_NLIBS][STUB_NFIELDS];
static int stub_in_call[STUB_NLIBS];    // calls in progress
static int stub_destroying[STUB_NLIBS]; // destroys in progress

static void stub_add(int lib, int field) { __atomic_add_fetch(&stub_counts[lib][field], 1, __ATOMIC_SEQ_CST); }

static void stub_violation(int lib, int field) {
	stub_add(lib, field);
	stub_add(lib, STUB_VIOLATIONS);
}

// stub_pause gives other threads a moment, so that calls and destroys
// that overlap are seen to.
static void stub_pause(void) {
	for (int i = 0; i < 20; i++) sched_yield();
}

static void stub_check_context(int lib) {
	CUcontext c = NULL;
	if (stub_cuCtxGetCurrent(&c) != CUDA_SUCCESS || c == NULL) stub_violation(lib, STUB_NO_CONTEXT);
}

#define STUB_MAGIC 0x57ab1e

struct stub_handle {
	int magic;
	int lib;
	int dead;
	int in_use;
	CUstream stream;
	int pointer_mode; // cuBLAS's: 0 host, 1 device
};

static int stub_create(int lib, struct stub_handle **h) {
	stub_check_context(lib);
	struct stub_handle *p = calloc(1, sizeof *p);
	if (p == NULL) return 3; // ALLOC_FAILED in each library
	p->magic = STUB_MAGIC;
	p->lib = lib;
	*h = p;
	stub_add(lib, STUB_CREATES);
	return 0;
}

// stub_destroy marks h destroyed; it is never freed, so that a later call
// on it is told apart.
static int stub_destroy(int lib, struct stub_handle *h) {
	if (h == NULL || h->magic != STUB_MAGIC || h->lib != lib || __atomic_exchange_n(&h->dead, 1, __ATOMIC_SEQ_CST)) {
		stub_violation(lib, STUB_USE_AFTER_DESTROY);
		return 1; // NOT_INITIALIZED
	}
	__atomic_add_fetch(&stub_destroying[lib], 1, __ATOMIC_SEQ_CST);
	stub_check_context(lib);
	int bad = 0;
	for (int i = 0; i < 2; i++) { // before and after a pause
		if (__atomic_load_n(&stub_in_call[lib], __ATOMIC_SEQ_CST) > 0) bad = 1;
		if (i == 0) stub_pause();
	}
	if (bad) stub_violation(lib, STUB_DESTROY_DURING_CALL);
	if (stub_captures_in_progress() > 0) stub_violation(lib, STUB_DESTROY_IN_CAPTURE);
	__atomic_sub_fetch(&stub_destroying[lib], 1, __ATOMIC_SEQ_CST);
	stub_add(lib, STUB_DESTROYS);
	return 0;
}

// stub_enter begins a call on h and returns nonzero for a handle that is
// none; stub_leave ends it.
static int stub_enter(int lib, struct stub_handle *h) {
	stub_add(lib, STUB_CALLS);
	if (h == NULL || h->magic != STUB_MAGIC || h->lib != lib || __atomic_load_n(&h->dead, __ATOMIC_SEQ_CST)) {
		stub_violation(lib, STUB_USE_AFTER_DESTROY);
		return 1;
	}
	if (__atomic_add_fetch(&h->in_use, 1, __ATOMIC_SEQ_CST) != 1) stub_violation(lib, STUB_CONCURRENT_USE);
	__atomic_add_fetch(&stub_in_call[lib], 1, __ATOMIC_SEQ_CST);
	stub_check_context(lib);
	stub_pause();
	if (__atomic_load_n(&stub_destroying[lib], __ATOMIC_SEQ_CST) > 0) stub_violation(lib, STUB_DESTROY_DURING_CALL);
	return 0;
}

static void stub_leave(int lib, struct stub_handle *h) {
	__atomic_sub_fetch(&stub_in_call[lib], 1, __ATOMIC_SEQ_CST);
	__atomic_sub_fetch(&h->in_use, 1, __ATOMIC_SEQ_CST);
}

// STUB_CALL makes a call of the library on handle h: the statements
// after h are its body.
#define STUB_CALL(lib, h, ...)                         \
	do {                                           \
		if (stub_enter(lib, h) != 0) return 1; \
		__VA_ARGS__;                           \
		stub_leave(lib, h);                    \
		return 0;                              \
	} while (0)

// cuBLAS.
typedef struct stub_handle *H;

int cublasGetProperty(int type, int *v) {
	int lib = (type - 100) / 16, field = (type - 100) % 16;
	if (type < 100 || lib >= STUB_NLIBS) return 7; // INVALID_VALUE
	if (field == STUB_CAPTURES) {
		*v = stub_captures_in_progress();
		return 0;
	}
	if (field >= STUB_NFIELDS) return 7;
	*v = (int)__atomic_load_n(&stub_counts[lib][field], __ATOMIC_SEQ_CST);
	return 0;
}

int cublasCreate_v2(H *h) { return stub_create(STUB_BLAS, h); }
int cublasDestroy_v2(H h) { return stub_destroy(STUB_BLAS, h); }
int cublasSetStream_v2(H h, CUstream s) { STUB_CALL(STUB_BLAS, h, h->stream = s); }
int cublasGetStream_v2(H h, CUstream *s) { STUB_CALL(STUB_BLAS, h, *s = h->stream); }
int cublasSetPointerMode_v2(H h, int mode) { STUB_CALL(STUB_BLAS, h, h->pointer_mode = mode); }
int cublasGetPointerMode_v2(H h, int *mode) { STUB_CALL(STUB_BLAS, h, *mode = h->pointer_mode); }

#define AXPY(name, T)                                                                            \
	int name(H h, int n, const T *alpha, const T *x, int incx, T *y, int incy) {             \
		STUB_CALL(STUB_BLAS, h, for (int i = 0; i < n; i++) y[i * incy] += *alpha * x[i * incx]); \
	}
AXPY(cublasSaxpy_v2, float)
AXPY(cublasDaxpy_v2, double)

// Both pointer modes write the result through a pointer of the host's.
#define DOT(name, T)                                                              \
	int name(H h, int n, const T *x, int incx, const T *y, int incy, T *result) { \
		STUB_CALL(STUB_BLAS, h, {                                              \
			T sum = 0;                                                     \
			for (int i = 0; i < n; i++) sum += x[i * incx] * y[i * incy];  \
			*result = sum;                                                 \
		});                                                                    \
	}
DOT(cublasSdot_v2, float)
DOT(cublasDdot_v2, double)

// op(A) of column-major A (lda rows): element (i, j).
#define AT(a, lda, trans, i, j) ((trans) ? (a)[(j) + (size_t)(i) * (lda)] : (a)[(i) + (size_t)(j) * (lda)])

#define GEMV(name, T)                                                                                    \
	int name(H h, int trans, int m, int n, const T *alpha, const T *a, int lda, const T *x, int incx,   \
			const T *beta, T *y, int incy) {                                                     \
		STUB_CALL(STUB_BLAS, h, {                                                                \
			int rows = trans ? n : m, cols = trans ? m : n;                                  \
			for (int i = 0; i < rows; i++) {                                                 \
				T sum = 0;                                                               \
				for (int j = 0; j < cols; j++) sum += AT(a, lda, trans, i, j) * x[j * incx]; \
				y[i * incy] = *alpha * sum + *beta * y[i * incy];                        \
			}                                                                                \
		});                                                                                      \
	}
GEMV(cublasSgemv_v2, float)
GEMV(cublasDgemv_v2, double)

#define GEMM(name, T)                                                                                       \
	int name(H h, int ta, int tb, int m, int n, int k, const T *alpha, const T *a, int lda, const T *b,    \
			int ldb, const T *beta, T *c, int ldc) {                                                \
		STUB_CALL(STUB_BLAS, h, {                                                                   \
			for (int i = 0; i < m; i++)                                                         \
				for (int j = 0; j < n; j++) {                                               \
					T sum = 0;                                                          \
					for (int l = 0; l < k; l++) sum += AT(a, lda, ta, i, l) * AT(b, ldb, tb, l, j); \
					c[i + (size_t)j * ldc] = *alpha * sum + *beta * c[i + (size_t)j * ldc]; \
				}                                                                           \
		});                                                                                         \
	}
GEMM(cublasSgemm_v2, float)
GEMM(cublasDgemm_v2, double)

// cuSOLVER's dense handles.
int cusolverDnCreate(H *h) { return stub_create(STUB_SOLVER, h); }
int cusolverDnDestroy(H h) { return stub_destroy(STUB_SOLVER, h); }
int cusolverDnSetStream(H h, CUstream s) { STUB_CALL(STUB_SOLVER, h, h->stream = s); }
int cusolverDnGetStream(H h, CUstream *s) { STUB_CALL(STUB_SOLVER, h, *s = h->stream); }

// cuSPARSE.
int cusparseCreate(H *h) { return stub_create(STUB_SPARSE, h); }
int cusparseDestroy(H h) { return stub_destroy(STUB_SPARSE, h); }
int cusparseSetStream(H h, CUstream s) { STUB_CALL(STUB_SPARSE, h, h->stream = s); }
int cusparseGetStream(H h, CUstream *s) { STUB_CALL(STUB_SPARSE, h, *s = h->stream); }
