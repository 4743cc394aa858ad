/* A library header that uses the base package's types. */
#include "base.h"

/** The library's status. */
typedef enum libStatus_t {
    LIB_STATUS_SUCCESS = 0, /**< Success. */
    LIB_STATUS_INVALID = 7  /**< An invalid value. */
} libStatus_t;

/** A library handle. */
typedef struct libContext *libHandle_t;

/** A struct with a field of the base package's type. */
typedef struct libWrapped {
    char tag;
    cudaPair pair; /**< At offset 8 in C and Go. */
    cudaKind kind;
} libWrapped;

/** An alias of the base's enum: a Go alias of base.Kind. */
typedef cudaKind libKind;

/** An alias of the base's struct. */
typedef cudaPairAlias libPair;

/** Sets the stream. The header declares it with its version; the macro below is what C callers write. */
libStatus_t libSetStream_v2(libHandle_t handle, cudaStream_t stream);
/** The 64-bit integer variant keeps its suffix. */
libStatus_t libScale_v2_64(libHandle_t handle, long long n, const cudaPair *alpha);
libStatus_t libScale_v2(libHandle_t handle, int n, const cudaPair *alpha);

#define libSetStream libSetStream_v2
#define libScale libScale_v2
#define libScale_64 libScale_v2_64

/** Returns a pair by value. */
cudaPair libMakePair(double x, cudaKind kind);

/** A profiling alias, omitted. */
libStatus_t plibMakePair(double x);

/* A type declared only to take its size, omitted with its enumerator; the
 * other enum's value that uses its size stays (as nccl.h's ncclRedOp_dummy_t). */
typedef enum { plibNumOps_dummy = 5 } plibOp_dummy_t;
typedef enum { libSum = 0, libMaxOp = 0x7fffffff >> (32 - 8 * sizeof(plibOp_dummy_t)) } libOp_t;
/** A constant, omitted. */
#define plibVersion 3
