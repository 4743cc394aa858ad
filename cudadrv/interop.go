package cudadrv

/*
#include "cuda.h"
#include "cuda_runtime_api.h"

// The runtime's handle types are the driver's: the compiler checks each pair
// that the package doc lists, so that a Go conversion between them is sound
// (libraries, which CUDA 12's runtime lacks, in interop_cuda13.go). The
// headers are on the include path through the generated zfuncs_*.go, whose
// #cgo CFLAGS hold for the whole package.
#define GOCUDA_SAME(a, b) _Static_assert(__builtin_types_compatible_p(a, b), #a " is not " #b)
GOCUDA_SAME(CUstream, cudaStream_t);
GOCUDA_SAME(CUevent, cudaEvent_t);
GOCUDA_SAME(CUgraph, cudaGraph_t);
GOCUDA_SAME(CUgraphNode, cudaGraphNode_t);
GOCUDA_SAME(CUgraphExec, cudaGraphExec_t);
GOCUDA_SAME(CUmemoryPool, cudaMemPool_t);
GOCUDA_SAME(CUuserObject, cudaUserObject_t);
GOCUDA_SAME(CUfunction, cudaFunction_t);
GOCUDA_SAME(CUkernel, cudaKernel_t);
_Static_assert(sizeof(CUdeviceptr) == sizeof(void *), "CUdeviceptr is not pointer-sized");
*/
import "C"

import "unsafe"

// DeviceptrOf returns the driver's view of a device pointer that the runtime
// API returned, such as one from cudart.Malloc.
func DeviceptrOf(p unsafe.Pointer) Deviceptr { return Deviceptr(uintptr(p)) }

// Pointer returns d as the runtime API takes device pointers, for
// cudart.Memcpy and the like. Go never dereferences it.
func (d Deviceptr) Pointer() unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&d)) }
