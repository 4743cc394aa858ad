// The C twin of the copy benchmarks (../copy_test.go): 256 MiB between the
// device and pinned memory, pageable (malloc'd) memory, and the device
// itself, and a memset, printed in Go benchmark format with MB/s.
//
//	nvcc -O2 -o copy copy.c -lcudart && ./copy
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

enum { SIZE = 256 << 20, N = 20 };

static void *dev, *dev2, *pinned, *pageable;

static void h2d_pinned(void) { check(cudaMemcpyAsync(dev, pinned, SIZE, cudaMemcpyHostToDevice, stream), "cudaMemcpyAsync"); }
static void d2h_pinned(void) { check(cudaMemcpyAsync(pinned, dev, SIZE, cudaMemcpyDeviceToHost, stream), "cudaMemcpyAsync"); }
static void h2d_pageable(void) { check(cudaMemcpy(dev, pageable, SIZE, cudaMemcpyHostToDevice), "cudaMemcpy"); }
static void d2h_pageable(void) { check(cudaMemcpy(pageable, dev, SIZE, cudaMemcpyDeviceToHost), "cudaMemcpy"); }
static void d2d(void) { check(cudaMemcpyAsync(dev, dev2, SIZE, cudaMemcpyDeviceToDevice, stream), "cudaMemcpyAsync"); }
static void memset_(void) { check(cudaMemsetAsync(dev, 0, SIZE, stream), "cudaMemsetAsync"); }

int main(void) {
	check(cudaSetDevice(0), "cudaSetDevice");
	check(cudaStreamCreate(&stream), "cudaStreamCreate");
	check(cudaMalloc(&dev, SIZE), "cudaMalloc");
	check(cudaMalloc(&dev2, SIZE), "cudaMalloc");
	check(cudaMallocHost(&pinned, SIZE), "cudaMallocHost");
	memset(pinned, 0, SIZE);
	pageable = malloc(SIZE);
	if (pageable == NULL) {
		fprintf(stderr, "out of memory\n");
		return 1;
	}
	memset(pageable, 1, SIZE); // touch the pages before the timing
	bench_bytes("BenchmarkH2DPinned", h2d_pinned, N, SIZE);
	bench_bytes("BenchmarkD2HPinned", d2h_pinned, N, SIZE);
	bench_bytes("BenchmarkH2DPageable", h2d_pageable, N, SIZE);
	bench_bytes("BenchmarkD2HPageable", d2h_pageable, N, SIZE);
	bench_bytes("BenchmarkD2D", d2d, N, SIZE);
	bench_bytes("BenchmarkMemset", memset_, N, SIZE);
	return 0;
}
