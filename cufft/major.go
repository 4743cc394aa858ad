package cufft

import "github.com/gocuda/cuda/internal/dl"

// MajorError reports that the libcufft loaded is of another CUDA major
// than the package is built for ($GOCUDA_CUFFT naming CUDA 12's in a CUDA 13
// build): every function but GetProperty and GetVersion returns it. It names the file, its
// path, the version found and the major wanted.
type MajorError = dl.MajorError

// cuFFT is numbered otherwise than CUDA: 11.x is CUDA 12's (11.3.0 in 12.6),
// 12.x CUDA 13's (12.0.0 in 13.0), 10.x CUDA 11's. cufftGetProperty's
// version must be one the build's major ships, as the versions line of its
// data file (headers/cuda13.txt) gives them.
func init() {
	lib.CheckMajor("cufftGetProperty", dl.LibraryProperty, "cufftGetVersion")
}
