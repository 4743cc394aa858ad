// stubprocs.c is the table of the stand-in driver's functions
// (stubdriver.c): one entry for each function of highlevel's shim
// (zsymbols.h), at the version the shim requests it at, which is taken as
// the CUDA version that introduced it. Each is the stand-in stub_NAME that
// stubdriver.c defines or, for the others, the weak definition here, which
// does nothing and refuses, with CUDA_ERROR_NOT_SUPPORTED, as a driver
// refuses what it does not support: a test of an operation the stand-in
// does not implement fails, rather than passing without the work done.
#include <cuda.h>

#include "zsymbols.h"

#define STUB_WEAK(name, version) \
	__attribute__((weak)) CUresult stub_##name(void) { return CUDA_ERROR_NOT_SUPPORTED; }
HL_SYMBOLS(STUB_WEAK)

#define STUB_ENTRY(name, version) {#name, version, (void *)stub_##name},
const struct stub_proc {
	const char *name;
	int version;
	void *fn;
} stub_procs[] = {HL_SYMBOLS(STUB_ENTRY){0, 0, 0}};
