// Package cublas binds cuBLAS, CUDA's dense linear algebra library
// (cublas_v2.h): every function, enum and handle, generated from the headers
// by ../gen.
//
// Names follow the C names without their prefix (cublasSgemm -> Sgemm,
// cublasHandle_t -> Handle, CUBLAS_OP_T -> OP_T); gen's package
// documentation gives the whole rule. A function returns nil or the status
// as a Status, which works with errors.Is.
//
// Functions take the names C code calls them by: cublas_v2.h defines
// cublasSgemm as cublasSgemm_v2, so Sgemm calls cublasSgemm_v2. The variants
// with 64-bit sizes keep their suffix (Sgemm_64). cuBLAS is column-major, as
// in C.
//
//	var h cublas.Handle
//	if err := cublas.Create(&h); err != nil {
//		return err
//	}
//	defer cublas.Destroy(h)
//	err := cublas.Sgemm(h, cublas.OP_N, cublas.OP_N, m, n, k, &alpha, a, m, b, k, &beta, c, m)
//	if errors.Is(err, cublas.STATUS_INVALID_VALUE) {
//		// a leading dimension is too small
//	}
//
// # Loading
//
// Nothing links against CUDA at build time. The library, libcublas.so of the
// CUDA major the package is built for (Load's documentation names the file), is
// opened on the first call. If $GOCUDA_CUBLAS is set, only the file it names,
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
package cublas

//go:generate go run ../gen -pkg cublas
