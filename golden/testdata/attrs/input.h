/*
 * Typed attribute values: attribute enums whose value types the comments
 * state, or gen's data (valueTypes) for cudart's memory range attributes,
 * and the functions packages.txt names, getting and setting through void
 * *, one with the value's size.
 */
#include <stddef.h>

typedef enum cudaError { cudaSuccess = 0, cudaErrorInvalidValue = 1 } cudaError_t;
typedef struct CUmemPoolHandle_st *cudaMemPool_t;

/** Memory pool attributes. */
enum cudaMemPoolAttr {
    /** (value type = int) Reuse opportunistically. */
    cudaMemPoolReuseAllowOpportunistic = 2,
    /** (value type = cuuint64_t) The release threshold. */
    cudaMemPoolAttrReleaseThreshold = 4,
    /** A value the headers do not type: ValueType is nil. */
    cudaMemPoolAttrUntyped = 9
};

/** Where memory lives. */
enum cudaMemLocationType { cudaMemLocationTypeInvalid = 0, cudaMemLocationTypeDevice = 1 };

/** Memory range attributes, typed in the prose of cudaMemRangeGetAttribute. */
enum cudaMemRangeAttribute {
    cudaMemRangeAttributeReadMostly = 1,
    cudaMemRangeAttributeAccessedBy = 3,
    cudaMemRangeAttributePreferredLocationType = 5
};

/** Gets a pool attribute. */
extern cudaError_t cudaMemPoolGetAttribute(cudaMemPool_t memPool, enum cudaMemPoolAttr attr, void *value);

/** Sets a pool attribute. */
extern cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t memPool, enum cudaMemPoolAttr attr, void *value);

/** Gets a range attribute of dataSize bytes. */
extern cudaError_t cudaMemRangeGetAttribute(void *data, size_t dataSize, enum cudaMemRangeAttribute attribute, const void *devPtr, size_t count);

/**
 * \brief Gets several range attributes: its doc names the typed way to get one
 *
 * \param data - A two-dimensional array containing pointers to memory locations where the result of each attribute query will be written to.
 */
extern cudaError_t cudaMemRangeGetAttributes(void **data, size_t *dataSizes, enum cudaMemRangeAttribute *attributes, size_t numAttributes, const void *devPtr, size_t count);

/** Registers a logger: gen's facts name it for cudart, so the package declares it. */
extern cudaError_t cudaLogsRegisterCallback(void (*callback)(void *), void *userData);
