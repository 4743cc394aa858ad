// The C twin of the launch benchmarks (../launch_test.go): the same kernels
// launched with <<<>>> and with cudaLaunchKernel, printed in Go benchmark
// format.
//
//	nvcc -O2 -arch=native -o launch launch.cu && ./launch
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench.h"

extern "C" __global__ void empty() {}
extern "C" __global__ void args4(float a, const float *x, float *y, int n) {
	if (n > 0 && threadIdx.x == 0) y[0] = a * x[0];
}

static void check(cudaError_t r, const char *what) {
	if (r != cudaSuccess) {
		fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(r));
		exit(1);
	}
}

static cudaStream_t stream;
static float *x;

static void launch_chevron(void) { empty<<<1, 1, 0, stream>>>(); }

static void launch_runtime(void) {
	check(cudaLaunchKernel((const void *)empty, dim3(1), dim3(1), NULL, 0, stream), "cudaLaunchKernel");
}

static void launch_args_chevron(void) { args4<<<1, 1, 0, stream>>>(2.0f, x, x, 0); }

static void launch_args_runtime(void) {
	float a = 2;
	int n = 0;
	void *args[] = {&a, &x, &x, &n};
	check(cudaLaunchKernel((const void *)args4, dim3(1), dim3(1), args, 0, stream), "cudaLaunchKernel");
}

static void launch_sync(void) {
	empty<<<1, 1, 0, stream>>>();
	check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
}

// run prints the median over RUNS of the ns per call of fn, n calls a run,
// the stream synchronized at the end of each run.
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
	check(cudaMalloc(&x, sizeof *x), "cudaMalloc");
	launch_chevron(); // load the module before timing
	check(cudaStreamSynchronize(stream), "warm-up");
	run("BenchmarkCLaunchEmptyChevron", launch_chevron, 200000);
	run("BenchmarkCLaunchEmptyRuntime", launch_runtime, 200000);
	run("BenchmarkCLaunchArgsChevron", launch_args_chevron, 200000);
	run("BenchmarkCLaunchArgsRuntime", launch_args_runtime, 200000);
	run("BenchmarkCLaunchSync", launch_sync, 50000);
	return 0;
}
