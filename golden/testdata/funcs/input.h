/* Functions: status results, other results, versioned aliases, doc comments. */
#include <stddef.h>

/** Status codes. */
typedef enum cudaError {
    /** The call succeeded. */
    cudaSuccess = 0,
    /**
     * One or more of the parameters passed to the API call is not within an
     * acceptable range of values.
     */
    cudaErrorInvalidValue = 1,
    cudaErrorMemoryAllocation = 2, /**< Out of memory. And more. */
    cudaErrorNotReady = 600 /* undocumented: Error is its String */
} cudaError_t;

typedef struct CUstream_st *cudaStream_t;
typedef void (*cudaHostFn_t)(void *userData);

struct cudaExtent {
    size_t width, height, depth;
};

/**
 * \brief Allocate memory on the device
 *
 * Allocates \p size bytes and returns in \p *devPtr a pointer to it.
 * See ::cudaFree and ::cudaWidget.
 *
 * \param devPtr - Pointer to allocated device memory
 * \param size   - Requested allocation size in bytes
 *
 * \return
 * ::cudaSuccess,
 * ::cudaErrorMemoryAllocation
 * \notefnerr
 *
 * \sa ::cudaFree
 */
extern cudaError_t cudaMalloc(void **devPtr, size_t size);

/** \brief Frees memory */
extern cudaError_t cudaFree(void *devPtr);

/** Returns the description of \p error. */
extern const char *cudaGetErrorString(cudaError_t error);

/** Takes a struct by value and returns one. */
extern struct cudaExtent cudaMakeExtent(struct cudaExtent e, unsigned int scale);

/** Takes a string, a handle and a function pointer. */
extern cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, const char *name, void *userData);

/** Returns nothing. */
extern void cudaNothing(int type);

/** A function the header renames: callers write cudaWidget, the library exports cudaWidget_v2. */
#define cudaWidget cudaWidget_v2
extern cudaError_t cudaWidget(int *count);

/** A const pointer to const char is a string too; a pointer to char is not. */
extern cudaError_t cudaSetName(const char * const name, char *out);

/** Unnamed parameters are named by their position. */
extern cudaError_t cudaUnnamed(int, const char *, void *);

/** Sets \p *pStr to the name of \p error; a const char ** is a string the call sets. */
extern cudaError_t cudaGetErrorNameOut(cudaError_t error, const char **pStr);

/** Returns a count and sets two strings; an array of strings it reads stays a pointer. */
extern int cudaTwoNames(const char **first, const char * const *options, const char **second);

struct cudaPitched { void *ptr; size_t pitch; };

/**
 * \brief Takes pointers to pin: the docs say what
 *
 * \param args  - Array of pointers to the arguments
 * \param p     - A struct with a pointer field
 * \param devPtr - Returned device pointer (a single one: no note)
 */
extern cudaError_t cudaPinned(void **args, struct cudaPitched *p, void **devPtr);

/**
 * \brief Makes a cudaPitched of its arguments: an inline struct maker, which Go does itself
 *
 * \param d - Pointer
 * \param p - Pitch
 */
static __inline__ struct cudaPitched make_cudaPitched(void *d, size_t p)
{
    struct cudaPitched s;
    s.ptr = d;
    s.pitch = p;
    return s;
}

/** Not a maker: it computes, so it is not bound. */
static __inline__ struct cudaPitched make_cudaTwice(void *d, size_t p)
{
    struct cudaPitched s;
    s.ptr = d;
    s.pitch = 2 * p;
    return s;
}

/** Writes a name into a buffer of len bytes: a companion returns it as a string. */
extern cudaError_t cudaGetName(char *name, int len, int device);
