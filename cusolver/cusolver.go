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
// Nothing links against CUDA at build time. libcusolver.so.12 is opened on the
// first call. If $GOCUDA_CUSOLVER is set, only the file it names is tried, and
// failing to open it is the error: no other copy of the library is looked for.
// Otherwise libcusolver.so.12 is looked for in the system loader's path
// (LD_LIBRARY_PATH, the ldconfig cache), then in the lib64 and lib directories
// of $CUDA_PATH, $CUDA_HOME and /usr/local/cuda; LibraryPath reports the file
// opened. Each function's symbol is looked up on its first call. If the
// library cannot be opened, every function returns a *LibraryError that lists
// the paths tried; if the library lacks a function, that function returns a
// *SymbolError naming it, and the rest keep working.
package cusolver

//go:generate go run ../gen -headers ../headers/cuda-13.0 -use ../cudart,../cublas -out . -pkg cusolver -include cusolverDn.h,cusolver_common.h -prefix cusolverDn,cusolver,CUSOLVERDN_,CUSOLVER_ -error cusolverStatus_t -lib GOCUDA_CUSOLVER=libcusolver.so.12
