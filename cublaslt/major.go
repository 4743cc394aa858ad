package cublaslt

import "github.com/gocuda/cuda/internal/dl"

// MajorError reports that the libcublasLt loaded is of another CUDA major
// than the package is built for ($GOCUDA_CUBLASLT naming CUDA 12's in a CUDA 13
// build): every function but GetCudartVersion, GetVersion, GetProperty, GetStatusName and GetStatusString returns it. It names the file, its
// path, the version found and the major wanted.
type MajorError = dl.MajorError

// cuBLASLt reports the CUDA version it was built with
// (cublasLtGetCudartVersion): its major must be the build's.
func init() {
	lib.CheckMajor("cublasLtGetCudartVersion", dl.CUDAVersion, "cublasLtGetVersion", "cublasLtGetProperty", "cublasLtGetStatusName", "cublasLtGetStatusString")
}
