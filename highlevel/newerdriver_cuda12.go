//go:build cuda12

package highlevel

import (
	"github.com/gocuda/cuda/cudadrv"
	"github.com/gocuda/cuda/cudart"
)

// errCallRequiresNewerDriver is CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER, which
// newer drivers return and CUDA 12.6's cuda.h does not name: the runtime's
// cudaErrorCallRequiresNewerDriver has its value, 36, in both majors.
const errCallRequiresNewerDriver = cudadrv.Result(cudart.ErrorCallRequiresNewerDriver)
