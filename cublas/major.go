package cublas

import "github.com/gocuda/cuda/internal/dl"

// MajorError reports that the libcublas loaded is of another CUDA major
// than the package is built for ($GOCUDA_CUBLAS naming CUDA 12's in a CUDA 13
// build): every function but GetCudartVersion, GetVersion, GetProperty, GetStatusName and GetStatusString returns it. It names the file, its
// path, the version found and the major wanted.
type MajorError = dl.MajorError

// cuBLAS's own version follows CUDA's major (12.6.4 in CUDA 12.6, 13.1.0 in
// 13.0), but the exact rule is the CUDA version it was built with, which
// cublasGetCudartVersion reports: its major must be the build's.
func init() {
	lib.CheckMajor("cublasGetCudartVersion", dl.CUDAVersion, "cublasGetVersion_v2", "cublasGetProperty", "cublasGetStatusName", "cublasGetStatusString")
}
