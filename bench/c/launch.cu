// The C twin of the launch benchmarks (../launch_test.go): the same kernels
// launched with <<<>>> (the rows Go is compared with) and with
// cudaLaunchKernel; the empty kernel also as highlevel loads and launches
// it, compiled by NVRTC, loaded with cuLibraryLoadData and launched with
// cuLaunchKernel; and a graph of 100 empty kernels. Printed in Go benchmark
// format.
//
//	nvcc -O2 -arch=native -o launch launch.cu -lcuda -lnvrtc && ./launch
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

// library_empty is the empty kernel as highlevel has it (load_kernel).
static CUfunction library_empty;

static void launch_library(void) {
	drvcheck(cuLaunchKernel(library_empty, 1, 1, 1, 1, 1, 1, 0, (CUstream)stream, NULL, NULL), "cuLaunchKernel");
}

static cudaGraphExec_t graph100;

static void launch_graph(void) {
	check(cudaGraphLaunch(graph100, stream), "cudaGraphLaunch");
	check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
}

// capture_graph100 captures 100 launches of launch from the stream into
// graph100, as BenchmarkGraph100 does.
static void capture_graph100(void (*launch)(void)) {
	cudaGraph_t g;
	check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal), "cudaStreamBeginCapture");
	for (int i = 0; i < 100; i++) {
		launch();
	}
	check(cudaStreamEndCapture(stream, &g), "cudaStreamEndCapture");
	check(cudaGraphInstantiate(&graph100, g, 0), "cudaGraphInstantiate");
	check(cudaGraphDestroy(g), "cudaGraphDestroy");
}

int main(void) {
	check(cudaSetDevice(0), "cudaSetDevice");
	check(cudaFree(0), "cudaFree");
	check(cudaStreamCreate(&stream), "cudaStreamCreate");
	check(cudaMalloc(&x, sizeof *x), "cudaMalloc");
	launch_chevron(); // load the module before timing
	check(cudaStreamSynchronize(stream), "warm-up");
	bench("BenchmarkLaunchEmpty", launch_chevron, 200000);
	bench("BenchmarkLaunchEmptyRuntime", launch_runtime, 200000);
	library_empty = load_kernel("extern \"C\" __global__ void empty() {}\n", "empty");
	bench("BenchmarkLaunchEmptyLibrary", launch_library, 200000);
	bench("BenchmarkLaunchArgs", launch_args_chevron, 200000);
	bench("BenchmarkLaunchArgsRuntime", launch_args_runtime, 200000);
	bench("BenchmarkLaunchSync", launch_sync, 50000);
	capture_graph100(launch_chevron);
	bench("BenchmarkGraph100", launch_graph, 5000);
	check(cudaGraphExecDestroy(graph100), "cudaGraphExecDestroy");
	capture_graph100(launch_library);
	bench("BenchmarkGraph100Library", launch_graph, 5000);
	return 0;
}
