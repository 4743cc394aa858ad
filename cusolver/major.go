package cusolver

import "github.com/gocuda/cuda/internal/dl"

// MajorError reports that the libcusolver loaded is of another CUDA major
// than the package is built for ($GOCUDA_CUSOLVER naming CUDA 12's in a CUDA 13
// build): every function but GetProperty and GetVersion returns it. It names the file, its
// path, the version found and the major wanted.
type MajorError = dl.MajorError

// cuSOLVER is numbered otherwise than CUDA, and CUDA 11 and 12 both ship
// libcusolver.so.11: 11.4.2 to 11.7.x are CUDA 12's (11.7.1 in 12.6), 12.0 on
// CUDA 13's (12.0.4 in 13.0), 11.4.1 and older CUDA 11's. cusolverGetProperty's
// version must be one the build's major ships, as the versions line of its
// data file (headers/cuda13.txt) gives them.
func init() {
	lib.CheckMajor("cusolverGetProperty", dl.LibraryProperty, "cusolverGetVersion")
}
