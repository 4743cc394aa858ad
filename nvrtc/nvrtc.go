// Package nvrtc binds NVRTC, CUDA's run-time compiler of CUDA C++ (nvrtc.h):
// every function, enum and handle, generated from the CUDA headers by ../gen.
//
// Names follow the C names without their prefix (nvrtcCreateProgram ->
// CreateProgram, nvrtcProgram -> Program, NVRTC_ERROR_COMPILATION ->
// ERROR_COMPILATION); gen's package documentation gives the whole rule. A
// function returns nil or the status as a Result, which works with errors.Is:
//
//	if err := nvrtc.CompileProgram(prog, 0, nil); errors.Is(err, nvrtc.ERROR_COMPILATION) {
//		// read the log with GetProgramLogSize and GetProgramLog
//	}
//
// # Loading
//
// Nothing links against CUDA at build time. The library, libnvrtc.so of the
// CUDA major the package is built for (Load's documentation names the file), is
// opened on the first call. If $GOCUDA_NVRTC is set, only the file it names, an
// absolute path, is tried, and failing to open it is the error: no other copy
// of the library is looked for. Otherwise it is looked for by the system loader
// (LD_LIBRARY_PATH, the ldconfig cache), then in the active virtualenv's and
// conda environment's NVIDIA wheels and libraries, the toolkits of that major
// ($CUDA_PATH, $CUDA_HOME, /usr/local/cuda, /usr/local/cuda-X.Y) and the user's
// and the system's Python wheels, in the order the README's "How the libraries
// are found" gives, never in the working directory; LibraryPath reports the
// file opened. Each function's symbol is looked up on its first call. If the
// library cannot be opened, every function returns a *LibraryError that lists
// the paths tried; if the library lacks a function, that function returns a
// *SymbolError naming it, and the rest keep working.
package nvrtc

//go:generate go run ../gen -pkg nvrtc
