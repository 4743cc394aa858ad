// Package cusolver binds cuSOLVER's dense solvers (cusolverDn.h and
// cusolver_common.h): every function, enum and handle, generated from the
// headers by ../gen.
//
// Names follow the C names without their prefix (cusolverDnDgetrf -> Dgetrf,
// cusolverDnHandle_t -> Handle, CUSOLVER_STATUS_INVALID_VALUE ->
// STATUS_INVALID_VALUE); gen's package documentation gives the whole rule. A
// function returns nil or the status as a Status, which works with
// errors.Is.
//
// Types of cuBLAS (cublasFillMode_t) and of the runtime are those of packages
// cublas and cudart. cusolverDnLoggerSetFile is not bound: its parameter is a
// C FILE *.
//
// # Loading
//
// Nothing links against CUDA at build time. The library, libcusolver.so of the
// CUDA major the package is built for (Load's documentation names the file), is
// opened on the first call. If $GOCUDA_CUSOLVER is set, only the file it names,
// an absolute path, is tried, and failing to open it is the error: no other
// copy of the library is looked for. Otherwise it is looked for by the system
// loader (LD_LIBRARY_PATH, the ldconfig cache), then in the active virtualenv's
// and conda environment's NVIDIA wheels and libraries, the toolkits of that
// major ($CUDA_PATH, $CUDA_HOME, /usr/local/cuda, /usr/local/cuda-X.Y) and the
// user's and the system's Python wheels, in the order the README's "How the
// libraries are found" gives, never in the working directory; LibraryPath
// reports the file opened. Each function's symbol is looked up on its first
// call. If the library cannot be opened, every function returns a *LibraryError
// that lists the paths tried; if the library lacks a function, that function
// returns a *SymbolError naming it, and the rest keep working.
package cusolver

//go:generate go run ../gen -pkg cusolver
