package curand

import "github.com/gocuda/cuda/internal/dl"

// MajorError reports that the libcurand loaded is of another CUDA major
// than the package is built for ($GOCUDA_CURAND naming CUDA 12's in a CUDA 13
// build): every function but GetProperty and GetVersion returns it. It names the file, its
// path, the version found and the major wanted.
type MajorError = dl.MajorError

// cuRAND is numbered otherwise than CUDA, and CUDA 11, 12 and 13 all ship
// libcurand.so.10: 10.3.1 to 10.3.x are CUDA 12's (10.3.7 in 12.6), 10.4 on
// CUDA 13's (10.4.0 in 13.0), 10.3.0 and older CUDA 11's. curandGetProperty's
// version must be one the build's major ships, as the versions line of its
// data file (headers/cuda13.txt) gives them.
func init() {
	lib.CheckMajor("curandGetProperty", dl.LibraryProperty, "curandGetVersion")
}
