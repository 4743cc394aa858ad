// Package cudadrv binds the CUDA driver API (cuda.h and cudaProfiler.h):
// every function, enum, struct, union, handle and constant, generated from
// the CUDA headers by ../gen.
//
// Most programs should use package github.com/gocuda/cuda/highlevel, built
// on the driver API, which holds each device's context for its calls, checks
// sizes, keeps memory alive while the GPU may use it and closes safely. This
// package is the CUDA driver API as C has it, for what highlevel does not offer.
//
// Names follow the C names without their prefix (cuMemAlloc -> MemAlloc,
// CUstream -> Stream, CUDA_MEMCPY3D -> MEMCPY3D,
// CU_DEVICE_ATTRIBUTE_WARP_SIZE -> DEVICE_ATTRIBUTE_WARP_SIZE); gen's package
// documentation gives the whole rule. A function returns nil or the status as
// a Result, which works with errors.Is:
//
//	var p cudadrv.Deviceptr
//	if err := cudadrv.MemAlloc(&p, 1<<20); errors.Is(err, cudadrv.ERROR_OUT_OF_MEMORY) {
//		// out of device memory
//	}
//
// # Versioned entry points
//
// Each function calls the symbol that a C program compiled against the same
// headers calls: MemAlloc calls cuMemAlloc_v2, CtxCreate cuCtxCreate_v4,
// StreamGetCaptureInfo cuStreamGetCaptureInfo_v3. The headers' macros decide
// this, so the table is generated, and a test compares it with what the C
// preprocessor makes of each name. Explicitly versioned names that the
// headers declare stay callable under their own names (CtxGetDevice_v2).
//
// # Per-thread default stream
//
// A C program built with CUDA_API_PER_THREAD_DEFAULT_STREAM (nvcc
// --default-stream per-thread) calls per-thread variants of the functions
// that use the default stream: cuMemcpyHtoD_v2_ptds, cuLaunchKernel_ptsz.
// Call UsePerThreadDefaultStream before any other function of the package to
// do the same. Goroutines move between OS threads, so the per-thread default
// stream is only predictable on a goroutine locked to its thread
// (runtime.LockOSThread); explicit streams are the portable choice.
// GetProcAddress is the one exception: the headers wrap it inline to add
// GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM to its flags, and here the
// caller passes that flag itself.
//
// # Loading
//
// Nothing links against CUDA at build time. libcuda.so.1 is opened on the first
// call. If $GOCUDA_CUDA is set, only the file it names, an absolute path, is
// tried, and failing to open it is the error: no other copy of the library is
// looked for. Otherwise libcuda.so.1 is looked for by the system loader
// (LD_LIBRARY_PATH, the ldconfig cache), then in WSL's /usr/lib/wsl/lib, never
// in the working directory or a toolkit (whose libcuda is a stub to link
// against); LibraryPath reports the file opened. Each function's symbol is
// looked up on its first call. If the library cannot be opened, every function
// returns a *LibraryError that lists the paths tried; if the driver lacks a
// function (it is older than the headers), that function returns a *SymbolError
// naming the symbol, and the rest keep working.
//
// Unlike the other libraries, the driver is not refused for its CUDA
// major: one libcuda.so.1 serves every major, a driver runs the programs of
// its own and of older majors (driver 580, CUDA 13.0, runs CUDA 12's), and
// the driver API keeps its ABI by versioned symbols (cuMemAdvise_v2), so
// the version cuDriverGetVersion reports only bounds which functions the
// driver has: one older than the headers lacks some (a *SymbolError) or
// answers them with an error. Where the build's major needs a newer driver
// is the runtime: cudart's functions return a *cudart.DriverVersionError.
//
// # The runtime API
//
// The runtime's handles are the driver's: a cudart.Stream and a
// cudadrv.Stream hold the same CUstream_st pointer, and so do events, graphs,
// graph nodes, executable graphs, memory pools, user objects, functions,
// kernels and, in CUDA 13, libraries (interop.go has the compiler check each
// pair). A Go
// conversion turns one into the other: cudadrv.Stream(s), cudart.Stream(s).
// Device pointers differ in type only; DeviceptrOf and Deviceptr.Pointer
// convert them. Arrays, mipmapped arrays, graphics resources and external
// memory and semaphores are distinct C types in the two APIs, so no
// conversion is offered for them.
package cudadrv

//go:generate go run ../gen -pkg cudadrv
