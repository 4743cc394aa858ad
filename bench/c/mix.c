// The C twin of the mix benchmarks (../mix_test.go): a stream carrying a
// memset of 4 KiB, 20 launches of axpy over 1024 floats and a copy of
// 4 KiB from device to device, round after round, and each operation alone,
// made with the calls highlevel makes: cuMemsetD8Async, cuLaunchKernel of
// the kernel compiled by NVRTC and loaded with cuLibraryLoadData, and
// cuMemcpyAsync. Printed in Go benchmark format.
//
//	nvcc -O2 -o mix mix.c -lcudart -lcuda -lnvrtc && ./mix [runs]
//
// With an argument it times that many runs of each benchmark rather than
// RUNS, so that a script can alternate its runs with Go's.
#include "bench.h"

static const char source[] =
	"extern \"C\" __global__ void axpy(float a, const float *x, float *y, int n) {\n"
	"	int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
	"	if (i < n) y[i] += a * x[i];\n"
	"}\n";

enum { N = 1024, BYTES = N * 4, LAUNCHES = 20 };

static CUfunction axpy;
static float *x, *y;

static void mix_memset(void) { drvcheck(cuMemsetD8Async((CUdeviceptr)y, 0, BYTES, (CUstream)stream), "cuMemsetD8Async"); }

static void mix_launch(void) {
	float a = 2;
	int n = N;
	void *args[] = {&a, &x, &y, &n};
	drvcheck(cuLaunchKernel(axpy, N / 256, 1, 1, 256, 1, 1, 0, (CUstream)stream, args, NULL), "cuLaunchKernel");
}

static void mix_d2d(void) {
	drvcheck(cuMemcpyAsync((CUdeviceptr)x, (CUdeviceptr)y, BYTES, (CUstream)stream), "cuMemcpyAsync");
}

static void mix(void) {
	mix_memset();
	for (int i = 0; i < LAUNCHES; i++) {
		mix_launch();
	}
	mix_d2d();
}

int main(int argc, char **argv) {
	if (argc > 1 && (runs = atoi(argv[1])) < 1) {
		fprintf(stderr, "usage: mix [runs]\n");
		return 2;
	}
	check(cudaSetDevice(0), "cudaSetDevice");
	check(cudaFree(0), "cudaFree");
	check(cudaStreamCreate(&stream), "cudaStreamCreate");
	check(cudaMalloc((void **)&x, BYTES), "cudaMalloc");
	check(cudaMalloc((void **)&y, BYTES), "cudaMalloc");
	axpy = load_kernel(source, "axpy");
	bench("BenchmarkMix", mix, 20000);
	bench("BenchmarkMixMemset", mix_memset, 200000);
	bench("BenchmarkMixLaunch", mix_launch, 200000);
	bench("BenchmarkMixD2D", mix_d2d, 200000);
	return 0;
}
