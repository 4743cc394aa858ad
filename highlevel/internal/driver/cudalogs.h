// cudalogs.h declares what CUDA 12.9's cuda.h and cudaTypedefs.h declare
// of the driver's error log (cuLogsRegisterCallback and its types) for
// headers older than that, such as the CUDA 12.6 ones of the cuda12 build:
// the shim (shim.c) calls the function where the driver has it, whatever
// headers it was built with, and the stand-in driver (testdata) models it.
// The declarations are CUDA 12.9's, whose ABI later releases keep.

#ifndef HL_CUDALOGS_H
#define HL_CUDALOGS_H

#include <stddef.h>
#include <cuda.h>

#if CUDA_VERSION < 12090
typedef enum CUlogLevel_enum {
	CU_LOG_LEVEL_ERROR = 0,
	CU_LOG_LEVEL_WARNING = 1
} CUlogLevel;

typedef struct CUlogsCallbackEntry_st *CUlogsCallbackHandle;
typedef void (CUDA_CB *CUlogsCallback)(void *data, CUlogLevel logLevel, char *message, size_t length);
typedef unsigned int CUlogIterator;

typedef CUresult (CUDAAPI *PFN_cuLogsRegisterCallback_v12090)(CUlogsCallback callbackFunc, void *userData,
	CUlogsCallbackHandle *callback);
typedef CUresult (CUDAAPI *PFN_cuLogsUnregisterCallback_v12090)(CUlogsCallbackHandle callback);
#endif

#endif
