/* The base package's header: what a runtime header declares. */
typedef enum cudaError_enum { cudaSuccess = 0, cudaErrorInvalidValue = 1 } cudaError_t;

/** A stream. */
typedef struct CUstream_st *cudaStream_t;

/** What a pair holds. */
typedef enum cudaKind_t { cudaKindA = 1, cudaKindB = 2 } cudaKind;

/** A pair; C aligns it to 8 bytes. */
typedef struct cudaPair { double x; int y; } cudaPair;

typedef cudaPair cudaPairAlias;

#define CUDA_BASE_VERSION 3

cudaError_t cudaBaseVersion(int *v);
