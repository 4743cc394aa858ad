package nvrtc

import "github.com/gocuda/cuda/internal/dl"

// MajorError reports that the libnvrtc loaded is of an older CUDA major
// than the package is built for ($GOCUDA_NVRTC naming CUDA 12's in a CUDA
// 13 build): every function but Version and GetErrorString returns it. It
// names the file, its path, the version found and the major wanted.
type MajorError = dl.MajorError

// NVRTC is numbered as CUDA is (nvrtcVersion sets 12.6 for CUDA 12.6): its
// major must be the build's or a later one. Its functions take no
// structures, so a later major's serves the build function by function (one
// it dropped is a *SymbolError), and the driver checks the code it makes
// when it loads it; the CUDA 12 build compiles with CUDA 13's NVRTC where
// that is the only one installed.
func init() {
	lib.CheckMajor("nvrtcVersion", dl.CUDAMajorMinorOrNewer, "nvrtcGetErrorString")
}
