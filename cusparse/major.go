package cusparse

import "github.com/gocuda/cuda/internal/dl"

// MajorError reports that the libcusparse loaded is of another CUDA major
// than the package is built for ($GOCUDA_CUSPARSE naming CUDA 12's in a CUDA 13
// build): every function but GetProperty, GetVersion, GetErrorName and GetErrorString returns it. It names the file, its
// path, the version found and the major wanted.
type MajorError = dl.MajorError

// cuSPARSE is numbered otherwise than CUDA, and CUDA 12 and 13 both ship
// libcusparse.so.12: 12.0 to 12.5.x are CUDA 12's (12.5.4 in 12.6), 12.6 on
// CUDA 13's (12.6.3 in 13.0). cusparseGetProperty's version must be one the
// build's major ships, as the versions line of its data file
// (headers/cuda13.txt) gives them.
func init() {
	lib.CheckMajor("cusparseGetProperty", dl.LibraryProperty, "cusparseGetVersion", "cusparseGetErrorName", "cusparseGetErrorString")
}
