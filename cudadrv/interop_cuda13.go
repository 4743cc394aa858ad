//go:build !cuda12

package cudadrv

// The runtime's libraries are the driver's, as the package doc says; CUDA
// 12's runtime has none.

// #include "cuda.h"
// #include "cuda_runtime_api.h"
// _Static_assert(__builtin_types_compatible_p(CUlibrary, cudaLibrary_t), "CUlibrary is not cudaLibrary_t");
import "C"
