/* cgo annotations from gen's facts (facts.go), here NVRTC's: no call of the
 * library reaches a logger, nvrtcSetFlowCallback registers a function that
 * nvrtcCompileProgram runs, and keeps its payload. */
#include <stddef.h>

typedef enum { NVRTC_SUCCESS = 0, NVRTC_ERROR_INVALID_INPUT = 3 } nvrtcResult;
typedef struct _nvrtcProgram *nvrtcProgram;

/* Both annotations: out parameters, nothing kept, nothing called. */
nvrtcResult nvrtcVersion(int *major, int *minor);
nvrtcResult nvrtcCreateProgram(nvrtcProgram *prog, const char *src, const char *name, int numHeaders, const char * const *headers, const char * const *includeNames);
/* None: runs the flow callback. */
nvrtcResult nvrtcCompileProgram(nvrtcProgram prog, int numOptions, const char * const *options);
/* None: takes a function pointer, and keeps payload. */
nvrtcResult nvrtcSetFlowCallback(nvrtcProgram prog, int (*callback)(void *, void *), void *payload);
/* None: no pointer to keep off the heap. */
nvrtcResult nvrtcSetPCHHeapSize(size_t size);
