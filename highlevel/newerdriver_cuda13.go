//go:build !cuda12

package highlevel

import "github.com/gocuda/cuda/cudadrv"

// errCallRequiresNewerDriver is CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER.
const errCallRequiresNewerDriver = cudadrv.ERROR_CALL_REQUIRES_NEWER_DRIVER
