/* Doc comments: plain comments right above a declaration document it, as
 * nccl.h's do, unless they head a group; a function the header does not
 * document names its section of the library's guide (the package is named
 * cublas for that); deprecation macros and attributes become Deprecated:
 * paragraphs. */

#if defined(__GNUC__)
#define CUBLAS_DEPRECATED __attribute__((deprecated))
#define CUBLAS_DEPRECATED_REPLACE_WITH(new_func) __attribute__((deprecated("please use " #new_func " instead")))
#else
#define CUBLAS_DEPRECATED
#define CUBLAS_DEPRECATED_REPLACE_WITH(new_func)
#endif

typedef enum { CUBLAS_STATUS_SUCCESS = 0, CUBLAS_STATUS_NOT_INITIALIZED = 1 } cublasStatus_t;
typedef struct cublasContext *cublasHandle_t;

/* A plan of the old API. */
typedef struct cublasOldPlan *cublasOldPlan_t CUBLAS_DEPRECATED;

/** Modes. */
typedef enum {
    /** The default. */
    CUBLAS_MODE_DEFAULT = 0,
    /**
     * \deprecated
     * The old mode, described below a bare \deprecated.
     */
    CUBLAS_MODE_OLD = 1,
    CUBLAS_MODE_OLDER = 2 /**< \deprecated Use CUBLAS_MODE_DEFAULT. */
} cublasMode_t;

/* Creates a handle.
 * The handle is freed by cublasDestroy. */
cublasStatus_t cublasCreate(cublasHandle_t *handle);

// Destroys a handle and frees its resources.
// Work queued with it must have finished.
cublasStatus_t cublasDestroy(cublasHandle_t handle);

/* The profiling alias is declared first, and the comment documents both. */
cublasStatus_t pcublasSetStream(cublasHandle_t handle, void *stream);
cublasStatus_t cublasSetStream(cublasHandle_t handle, void *stream);

cublasStatus_t cublasGetVersion(cublasHandle_t handle, int *version);

/* GEMM */
cublasStatus_t cublasSgemm(cublasHandle_t handle, int m, int n, const float *A, float *C);

cublasStatus_t cublasDgemm(cublasHandle_t handle, int m, int n, const double *A, double *C);

cublasStatus_t cublasSgemm_64(cublasHandle_t handle, long long m, long long n, const float *A, float *C);

/* ------------------ Helpers ------------------ */
cublasStatus_t cublasGetPointerMode(cublasHandle_t handle, int *mode);

/* scale: heads a group of three, so it documents none of them */
cublasStatus_t cublasSscal(cublasHandle_t handle, int n, float *x);

cublasStatus_t cublasDscal(cublasHandle_t handle, int n, double *x);

cublasStatus_t cublasCscal(cublasHandle_t handle, int n, float *x);

CUBLAS_DEPRECATED
cublasStatus_t cublasOldSync(cublasHandle_t handle);

/** \brief Copies a vector the old way. */
CUBLAS_DEPRECATED_REPLACE_WITH(cublasDgemm) // the replacement is named
cublasStatus_t cublasOldCopy(cublasHandle_t handle, int n);

/**
 * \brief Plans the old way.
 *
 * \deprecated
 *
 * The macro's paragraph replaces the bare \deprecated's.
 */
CUBLAS_DEPRECATED
cublasStatus_t cublasOldPlanCreate(cublasOldPlan_t *plan);

/* Reloads the environment. */
__attribute__((deprecated("cublasReload will be removed")))
void cublasReload(void);

/* The facts of package cublas (gen/facts.go) name its logger registry. */
typedef void (*cublasLogCallback)(const char *msg);
cublasStatus_t cublasSetLoggerCallback(cublasLogCallback userCallback);
