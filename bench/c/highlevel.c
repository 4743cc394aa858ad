// The C twin of the highlevel benchmarks (../highlevel_test.go): the same
// loops through the CUDA runtime, printed in Go benchmark format.
//
//	nvcc -O2 -o highlevel highlevel.c -lcudart && ./highlevel
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench.h"

static cudaEvent_t event;

static void event_record(void) { check(cudaEventRecord(event, stream), "cudaEventRecord"); }

static void stream_create_destroy(void) {
	cudaStream_t s;
	check(cudaStreamCreate(&s), "cudaStreamCreate");
	check(cudaStreamDestroy(s), "cudaStreamDestroy");
}

static void malloc_async_free(void) {
	void *p;
	check(cudaMallocAsync(&p, 1 << 20, stream), "cudaMallocAsync");
	check(cudaFreeAsync(p, stream), "cudaFreeAsync");
}

// pool is device 0's default memory pool, which highlevel.MallocAsync names
// explicitly: cudaMallocFromPoolAsync.
static cudaMemPool_t pool;

static void malloc_from_pool_async_free(void) {
	void *p;
	check(cudaMallocFromPoolAsync(&p, 1 << 20, pool, stream), "cudaMallocFromPoolAsync");
	check(cudaFreeAsync(p, stream), "cudaFreeAsync");
}

// The driver's calls under cudaMallocFromPoolAsync and cudaFreeAsync,
// which highlevel makes: alone, and with what highlevel's shim asks before
// each (whether the thread has the context current, whether the stream
// captures), to tell the driver's cost from Go's.
static void malloc_async_free_driver(void) {
	CUdeviceptr p;
	drvcheck(cuMemAllocFromPoolAsync(&p, 1 << 20, (CUmemoryPool)pool, (CUstream)stream), "cuMemAllocFromPoolAsync");
	drvcheck(cuMemFreeAsync(p, (CUstream)stream), "cuMemFreeAsync");
}

// capture_info is cuStreamGetCaptureInfo at the version the shim asks for.
static CUresult (*capture_info)(CUstream, CUstreamCaptureStatus *, cuuint64_t *, CUgraph *, const CUgraphNode **, size_t *);

static void shim_checks(void) {
	CUcontext ctx;
	CUstreamCaptureStatus st;
	drvcheck(cuCtxGetCurrent(&ctx), "cuCtxGetCurrent");
	drvcheck(capture_info((CUstream)stream, &st, NULL, NULL, NULL, NULL), "cuStreamGetCaptureInfo");
}

static void malloc_async_free_shim(void) {
	CUdeviceptr p;
	shim_checks();
	drvcheck(cuMemAllocFromPoolAsync(&p, 1 << 20, (CUmemoryPool)pool, (CUstream)stream), "cuMemAllocFromPoolAsync");
	shim_checks();
	drvcheck(cuMemFreeAsync(p, (CUstream)stream), "cuMemFreeAsync");
}

int main(void) {
	check(cudaSetDevice(0), "cudaSetDevice");
	check(cudaFree(0), "cudaFree");
	check(cudaStreamCreate(&stream), "cudaStreamCreate");
	check(cudaEventCreate(&event), "cudaEventCreate");
	bench("BenchmarkEventRecord", event_record, 200000);
	bench("BenchmarkStreamCreateDestroy", stream_create_destroy, 200000);
	bench("BenchmarkMallocAsyncFree", malloc_async_free, 200000);
	// C's pool of 1 MiB blocks is CUDA's stream-ordered one: the row that
	// BenchmarkPoolMallocFree, the Go side's caching pool, is compared with.
	bench("BenchmarkPoolMallocFree", malloc_async_free, 200000);
	check(cudaDeviceGetDefaultMemPool(&pool, 0), "cudaDeviceGetDefaultMemPool");
	bench("BenchmarkMallocFromPoolAsyncFree", malloc_from_pool_async_free, 200000);
	drvcheck(cuGetProcAddress("cuStreamGetCaptureInfo", (void **)&capture_info, 11030, CU_GET_PROC_ADDRESS_DEFAULT, NULL),
	         "cuGetProcAddress");
	bench("BenchmarkMallocAsyncFreeDriver", malloc_async_free_driver, 200000);
	bench("BenchmarkMallocAsyncFreeShim", malloc_async_free_shim, 200000);
	return 0;
}
