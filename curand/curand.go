// Package curand binds cuRAND's host API, CUDA's random number generators
// (curand.h): every function, enum and handle, generated from the headers by
// ../gen.
//
// Names follow the C names without their prefix (curandGenerateUniform ->
// GenerateUniform, curandGenerator_t -> Generator, CURAND_RNG_PSEUDO_DEFAULT
// -> RNG_PSEUDO_DEFAULT); gen's package documentation gives the whole rule.
// A function returns nil or the status as a Status, which works with
// errors.Is.
//
// # Loading
//
// Nothing links against CUDA at build time. libcurand.so.10 is opened on the
// first call. If $GOCUDA_CURAND is set, only the file it names is tried, and
// failing to open it is the error: no other copy of the library is looked for.
// Otherwise libcurand.so.10 is looked for in the system loader's path
// (LD_LIBRARY_PATH, the ldconfig cache), then in the lib64 and lib directories
// of $CUDA_PATH, $CUDA_HOME and /usr/local/cuda; LibraryPath reports the file
// opened. Each function's symbol is looked up on its first call. If the
// library cannot be opened, every function returns a *LibraryError that lists
// the paths tried; if the library lacks a function, that function returns a
// *SymbolError naming it, and the rest keep working.
package curand

//go:generate go run ../gen -headers ../headers/cuda-13.0 -use ../cudart -out . -pkg curand -include curand.h -prefix curand,CURAND_ -error curandStatus_t -lib GOCUDA_CURAND=libcurand.so.10
