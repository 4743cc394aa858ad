// Package nvjitlink binds nvJitLink, CUDA's run-time linker of device code
// (nvJitLink.h): every function, enum and handle, generated from the CUDA
// headers by ../gen.
//
// Names follow the C names without their prefix (nvJitLinkCreate -> Create,
// nvJitLinkHandle -> Handle, NVJITLINK_INPUT_PTX -> INPUT_PTX). The header's
// public functions are static inline wrappers around symbols versioned for
// the toolkit: Create calls __nvJitLinkCreate_13_0, as C code calling
// nvJitLinkCreate does. A function returns nil or the status as a Result,
// which works with errors.Is.
//
// # Loading
//
// Nothing links against CUDA at build time. libnvJitLink.so.13 is opened on
// the first call. If $GOCUDA_NVJITLINK is set, only the file it names is
// tried, and failing to open it is the error: no other copy of the library is
// looked for. Otherwise libnvJitLink.so.13 is looked for in the system
// loader's path (LD_LIBRARY_PATH, the ldconfig cache), then in the lib64 and
// lib directories of $CUDA_PATH, $CUDA_HOME and /usr/local/cuda; LibraryPath
// reports the file opened. Each function's symbol is looked up on its first
// call. If the library cannot be opened, every function returns a
// *LibraryError that lists the paths tried; if the library lacks a function
// (it is older than the headers), that function returns a *SymbolError naming
// it, and the rest keep working.
package nvjitlink

//go:generate go run ../gen -headers ../headers/cuda-13.0 -out . -pkg nvjitlink -include nvJitLink.h -prefix nvJitLink,NVJITLINK_ -error nvJitLinkResult -lib GOCUDA_NVJITLINK=libnvJitLink.so.13
