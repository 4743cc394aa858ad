// symbols.h lists the driver functions highlevel's shim calls (shim.c),
// for the shim and for the stand-in drivers of the tests
// (testdata/stubdriver.c).

#ifndef HL_SYMBOLS_H
#define HL_SYMBOLS_H

// HL_SYMBOLS lists the driver functions the shim calls, each with the CUDA
// version it is requested at through cuGetProcAddress: the version of the
// typedef in cudaTypedefs.h (PFN_cuMemAlloc_v3020) that the shim calls it
// through. So the entry point, and its ABI, are the same whatever driver
// runs the program and whichever CUDA headers the shim was compiled with.
// Each is the form the function has at CUDA 12.0 (HL_BASE_VERSION), the
// oldest driver highlevel supports, except cuKernelGetParamInfo, which came
// with CUDA 12.4: on an older driver the operations that need it fail and
// the rest work. cuDriverGetVersion comes first: load asks it before the
// others, to say which driver lacks a function.
#define HL_SYMBOLS(X) \
	X(cuDriverGetVersion, 2020) \
	X(cuInit, 2000) \
	X(cuDeviceGet, 2000) \
	X(cuDeviceGetCount, 2000) \
	X(cuDeviceGetAttribute, 2000) \
	X(cuDeviceGetName, 2000) \
	X(cuDevicePrimaryCtxRetain, 7000) \
	X(cuDevicePrimaryCtxGetState, 7000) \
	X(cuDeviceGetDefaultMemPool, 11020) \
	X(cuCtxGetCurrent, 4000) \
	X(cuCtxSetCurrent, 4000) \
	X(cuCtxGetDevice, 2000) \
	X(cuCtxSynchronize, 2000) \
	X(cuCtxEnablePeerAccess, 4000) \
	X(cuCtxGetStreamPriorityRange, 5050) \
	X(cuMemGetInfo, 3020) \
	X(cuMemAlloc, 3020) \
	X(cuMemAllocManaged, 6000) \
	X(cuMemFree, 3020) \
	X(cuMemPrefetchAsync, 8000) \
	X(cuMemAdvise, 8000) \
	X(cuMemAllocFromPoolAsync, 11020) \
	X(cuMemFreeAsync, 11020) \
	X(cuMemcpy, 4000) \
	X(cuMemcpyAsync, 4000) \
	X(cuMemcpyPeer, 4000) \
	X(cuMemcpyPeerAsync, 4000) \
	X(cuMemsetD8, 3020) \
	X(cuMemsetD8Async, 3020) \
	X(cuMemHostAlloc, 2020) \
	X(cuMemFreeHost, 2000) \
	X(cuMemHostRegister, 6050) \
	X(cuMemHostUnregister, 4000) \
	X(cuMemPoolCreate, 11020) \
	X(cuMemPoolDestroy, 11020) \
	X(cuMemPoolSetAttribute, 11020) \
	X(cuMemPoolGetAttribute, 11020) \
	X(cuMemPoolTrimTo, 11020) \
	X(cuPointerGetAttributes, 7000) \
	X(cuStreamCreate, 2000) \
	X(cuStreamCreateWithPriority, 5050) \
	X(cuStreamDestroy, 4000) \
	X(cuStreamSynchronize, 2000) \
	X(cuStreamQuery, 2000) \
	X(cuStreamWaitEvent, 3020) \
	X(cuStreamAddCallback, 5000) \
	X(cuLaunchHostFunc, 10000) \
	X(cuStreamGetCaptureInfo, 11030) \
	X(cuStreamBeginCapture, 10010) \
	X(cuStreamEndCapture, 10000) \
	X(cuUserObjectCreate, 11030) \
	X(cuUserObjectRelease, 11030) \
	X(cuGraphRetainUserObject, 11030) \
	X(cuEventCreate, 2000) \
	X(cuEventDestroy, 4000) \
	X(cuEventRecord, 2000) \
	X(cuEventSynchronize, 2000) \
	X(cuEventQuery, 2000) \
	X(cuEventElapsedTime, 2000) \
	X(cuGraphInstantiateWithParams, 12000) \
	X(cuGraphLaunch, 10000) \
	X(cuGraphUpload, 11010) \
	X(cuGraphExecUpdate, 12000) \
	X(cuGraphDestroy, 10000) \
	X(cuGraphExecDestroy, 10000) \
	X(cuProfilerStart, 4000) \
	X(cuProfilerStop, 4000) \
	X(cuLibraryLoadData, 12000) \
	X(cuLibraryUnload, 12000) \
	X(cuLibraryGetKernel, 12000) \
	X(cuKernelGetFunction, 12000) \
	X(cuKernelGetParamInfo, 12040) \
	X(cuKernelGetAttribute, 12000) \
	X(cuKernelSetAttribute, 12000) \
	X(cuLaunchKernel, 4000) \
	X(cuLaunchKernelEx, 11060) \
	X(cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags, 7000) \
	X(cuOccupancyMaxPotentialBlockSizeWithFlags, 7000) \
	X(cuIpcGetEventHandle, 4010) \
	X(cuIpcOpenEventHandle, 4010) \
	X(cuIpcGetMemHandle, 4010) \
	X(cuIpcOpenMemHandle, 11000) \
	X(cuIpcCloseMemHandle, 4010)

#endif
