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

int main(void) {
	check(cudaSetDevice(0), "cudaSetDevice");
	check(cudaFree(0), "cudaFree");
	check(cudaStreamCreate(&stream), "cudaStreamCreate");
	check(cudaMalloc(&x, sizeof *x), "cudaMalloc");
	launch_chevron(); // load the module before timing
	check(cudaStreamSynchronize(stream), "warm-up");
	bench("BenchmarkCLaunchEmptyChevron", launch_chevron, 200000);
	bench("BenchmarkCLaunchEmptyRuntime", launch_runtime, 200000);
	bench("BenchmarkCLaunchArgsChevron", launch_args_chevron, 200000);
	bench("BenchmarkCLaunchArgsRuntime", launch_args_runtime, 200000);
	bench("BenchmarkCLaunchSync", launch_sync, 50000);
	return 0;
}
