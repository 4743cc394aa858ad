// Package cudart binds the CUDA runtime API (cuda_runtime_api.h and
// cuda_profiler_api.h): every function, enum, struct, union, handle and
// constant, generated from the CUDA headers by ../gen.
//
// Most programs should use package github.com/gocuda/cuda/highlevel, built
// on the driver API, which holds each device's context for its calls, checks
// sizes, keeps memory alive while the GPU may use it and closes safely. This
// package is the CUDA runtime API as C has it, for what highlevel does not offer.
//
// Names follow the C names without their prefix (cudaMalloc -> Malloc,
// cudaStream_t -> Stream, cudaMemcpyHostToDevice -> MemcpyHostToDevice); gen's
// package documentation gives the whole rule. A function returns nil or the
// status as an Error, which works with errors.Is:
//
//	var p unsafe.Pointer
//	if err := cudart.Malloc(&p, 1<<20); errors.Is(err, cudart.ErrorMemoryAllocation) {
//		// out of device memory
//	}
//
// # Loading
//
// Nothing links against CUDA at build time. The library, libcudart.so of the
// CUDA major the package is built for (Load's documentation names the file), is
// opened on the first call. If $GOCUDA_CUDART is set, only the file it names,
// an absolute path, is tried, and failing to open it is the error: no other
// copy of the library is looked for. Otherwise it is looked for by the system
// loader (LD_LIBRARY_PATH, the ldconfig cache), then in the active virtualenv's
// and conda environment's NVIDIA wheels and libraries, the toolkits of that
// major ($CUDA_PATH, $CUDA_HOME, /usr/local/cuda, /usr/local/cuda-X.Y) and the
// user's and the system's Python wheels, in the order the README's "How the
// libraries are found" gives, never in the working directory; LibraryPath
// reports the file opened. Each function's symbol is looked up on its first
// call. If the library cannot be opened, every function returns a *LibraryError
// that lists the paths tried; if the library lacks a function (it is older than
// the headers), that function returns a *SymbolError naming it, and the rest
// keep working.
//
// # An old driver
//
// Before the first function that needs the driver, the package asks the
// runtime for the device count. If the runtime answers that the driver is
// older than it needs, or missing (cudaErrorInsufficientDriver), that
// function and every later one return a *DriverVersionError that says which
// driver release the runtime needs and which CUDA version the installed
// driver supports (for CUDA 13, driver 580 or newer). DriverGetVersion,
// RuntimeGetVersion, GetErrorName and GetErrorString work without a driver.
//
// # Per-thread default stream
//
// UsePerThreadDefaultStream, called before any other function of the
// package, makes the functions that have per-thread default stream variants
// (cudaMemcpy_ptds, cudaLaunchKernel_ptsz) call them, as a C program built
// with CUDA_API_PER_THREAD_DEFAULT_STREAM does.
package cudart

//go:generate go run ../gen -pkg cudart
