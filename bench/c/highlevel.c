// The C twin of the highlevel benchmarks (../highlevel_test.go): the same
// loops through the CUDA runtime, printed in Go benchmark format.
//
//	nvcc -O2 -o highlevel highlevel.c -lcudart && ./highlevel
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench.h"

static void check(cudaError_t r, const char *what) {
	if (r != cudaSuccess) {
		fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(r));
		exit(1);
	}
}

static cudaStream_t stream;
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

// run prints the median over RUNS of the ns per call of fn, n calls a run.
static void run(const char *name, void (*fn)(void), int n) {
	double t[RUNS];
	for (int r = 0; r < RUNS; r++) {
		double t0 = now();
		for (int i = 0; i < n; i++) {
			fn();
		}
		check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
		t[r] = (now() - t0) / n;
	}
	printf("%-32s\t%d\t%.2f ns/op\n", name, n, median(t));
}

int main(void) {
	check(cudaSetDevice(0), "cudaSetDevice");
	check(cudaFree(0), "cudaFree");
	check(cudaStreamCreate(&stream), "cudaStreamCreate");
	check(cudaEventCreate(&event), "cudaEventCreate");
	run("BenchmarkCEventRecord", event_record, 200000);
	run("BenchmarkCStreamCreateDestroy", stream_create_destroy, 200000);
	run("BenchmarkCMallocAsyncFree", malloc_async_free, 200000);
	return 0;
}
