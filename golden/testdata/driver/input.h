/* Constructs of the driver header: versioned and per-thread entry points,
 * tags named by their typedefs, tags nested in a union, and a type that an
 * enumerator's name pushes aside. */

#if defined(CUDA_API_PER_THREAD_DEFAULT_STREAM)
    #define __CUDA_API_PER_THREAD_DEFAULT_STREAM
    #define __CUDA_API_PTDS(api) api ## _ptds
    #define __CUDA_API_PTSZ(api) api ## _ptsz
#else
    #define __CUDA_API_PTDS(api) api
    #define __CUDA_API_PTSZ(api) api
#endif

#define cudaCopy        __CUDA_API_PTDS(cudaCopy_v2)
#define cudaGetProc     cudaGetProc_v2
#if defined(__CUDA_API_PER_THREAD_DEFAULT_STREAM)
    #define cudaSync    __CUDA_API_PTSZ(cudaSync)
#endif

typedef enum cudaError_enum {
    CUDA_SUCCESS = 0,
    CUDA_ERROR_INVALID_VALUE = 1
} cudaError_t;

typedef struct CUstream_st *cudaStream_t;

/** Kinds of attribute; one enumerator has the Go name of a typedef (C would refuse the same name). */
typedef enum cudaAttr_enum {
    cudaAttrTokens = 1, /**< The tokens */
    cudaAttrFlags = 2
} cudaAttr;

/** Tokens, version 1 */
typedef struct cudaAttrTokens_st {
    unsigned long long p2pToken;
} cudaAttrTokens_v1;
typedef cudaAttrTokens_v1 CUDA_AttrTokens;

/** Parameters, version 1 */
typedef struct cudaParams_st {
    int x;
} cudaParams_v1;

/** Parameters, version 2: what cudaParams means now */
typedef struct cudaParams_v2_st {
    int x;
    int y;
} cudaParams_v2;
typedef cudaParams_v2 cudaParams;

/** One operation of a batch */
typedef union cudaBatchOp_union {
    int operation;
    /** Wait for a value */
    struct cudaWaitOp_st {
        int operation;
        union {
            unsigned int value;
            unsigned long long value64;
        };
    } waitValue;
    unsigned long long pad[3];
} cudaBatchOp_v1;
typedef cudaBatchOp_v1 cudaBatchOp;

/** Copies memory; per-thread as cudaCopy_v2_ptds. */
cudaError_t cudaCopy(void *dst, const void *src, unsigned long long n);
/** Waits for a stream; per-thread as cudaSync_ptsz. */
cudaError_t cudaSync(cudaStream_t s);
/** An explicitly versioned name. */
cudaError_t cudaSync_v2(cudaStream_t s, unsigned int flags);
/** Finds a function; the per-thread header wraps it inline. */
cudaError_t cudaGetProc(const char *name, void **fn, unsigned long long flags);

#if defined(__CUDA_API_PER_THREAD_DEFAULT_STREAM)
static inline cudaError_t cudaGetProc_v2_ptsz(const char *name, void **fn, unsigned long long flags) {
    return cudaGetProc_v2(name, fn, flags | 1);
}
#define cudaGetProc_v2 cudaGetProc_v2_ptsz
#endif
