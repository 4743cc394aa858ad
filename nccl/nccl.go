// Package nccl binds NCCL, NVIDIA's collective communication library for
// several GPUs and hosts (nccl.h of NCCL 2.28.3): every function, enum and
// handle, generated from the headers by ../gen.
//
// Names follow the C names without their prefix (ncclAllReduce -> AllReduce,
// ncclComm_t -> Comm, ncclFloat32 -> Float32); gen's package documentation
// gives the whole rule. A function returns nil or the status as a Result,
// which works with errors.Is.
//
// The pnccl profiling aliases of each function are not bound: they are
// the same functions under a second name, for profilers to intercept.
//
// CUDA's current device is per OS thread and goroutines move between
// threads: a goroutine that drives one GPU calls runtime.LockOSThread before
// cudart.SetDevice.
//
// # Loading
//
// Nothing links against CUDA at build time. libnccl.so.2 is opened on the first
// call. If $GOCUDA_NCCL is set, only the file it names, an absolute path, is
// tried, and failing to open it is the error: no other copy of the library is
// looked for. Otherwise libnccl.so.2 is looked for by the system loader
// (LD_LIBRARY_PATH, the ldconfig cache), then in the active virtualenv's and
// conda environment's NVIDIA wheels and libraries, the toolkits of the build's
// CUDA major ($CUDA_PATH, $CUDA_HOME, /usr/local/cuda, /usr/local/cuda-X.Y) and
// the user's and the system's Python wheels, in the order the README's "How the
// libraries are found" gives, never in the working directory; LibraryPath
// reports the file opened. Each function's symbol is looked up on its first
// call. If the library cannot be opened, every function returns a *LibraryError
// that lists the paths tried; if the library lacks a function, that function
// returns a *SymbolError naming it, and the rest keep working.
//
// Unlike the other libraries, NCCL is not refused for its CUDA major: it is
// numbered on its own (2.28.3), and the same release is built for CUDA 12
// and for CUDA 13 under the one file name libnccl.so.2 (the nvidia-nccl-cu12
// and nvidia-nccl-cu13 wheels), so ncclGetVersion cannot tell which major a
// copy is for. NCCL links its CUDA runtime statically and shares with the
// program only the driver's objects (streams, device memory); a copy built
// for a newer major than the driver runs fails in its own calls with its
// own error (ncclUnhandledCudaError).
package nccl

//go:generate go run ../gen -pkg nccl
