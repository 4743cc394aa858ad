// Shim between package nvtx and the NVTX 3 header-only API.
//
// Each function takes a Go string as pointer and length, copies it into a
// NUL-terminated C buffer (on the C stack up to GOCUDA_NVTX_STACK-1 bytes,
// else from malloc) and makes one NVTX call, so a Go call costs one cgo
// transition and no Go allocation. None of them keeps the pointer it is
// given, and none calls into Go.
#ifndef GOCUDA_NVTX_SHIM_H
#define GOCUDA_NVTX_SHIM_H

#include <stddef.h>
#include <stdint.h>

#define GOCUDA_NVTX_STACK 256

void gocuda_nvtxMark(const char *msg, size_t n);
void gocuda_nvtxMarkC(const char *msg, size_t n, uint32_t argb);
int gocuda_nvtxRangePush(const char *msg, size_t n);
int gocuda_nvtxRangePushC(const char *msg, size_t n, uint32_t argb);
int gocuda_nvtxRangePop(void);

#endif
