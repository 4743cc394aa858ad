// The C twin of BenchmarkSgemm8192 (../sgemm_test.go): an 8192×8192 SGEMM
// with cublasSgemm on a stream, the same call highlevel.MatMul makes, queued
// n times and synchronized at the end, printed in Go benchmark format.
//
//	nvcc -O2 -arch=native -o sgemm sgemm.cu -lcublas && ./sgemm
#include <cublas_v2.h>

#include "bench.h"

enum { N = 8192 };

static cublasHandle_t handle;
static float *a, *b, *c;

static void sgemm(void) {
	const float alpha = 1, beta = 0;
	cublasStatus_t r = cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, N, N, N, &alpha, b, N, a, N, &beta, c, N);
	if (r != CUBLAS_STATUS_SUCCESS) {
		fprintf(stderr, "cublasSgemm: %d\n", (int)r);
		exit(1);
	}
}

int main(void) {
	size_t bytes = (size_t)N * N * sizeof(float);
	check(cudaSetDevice(0), "cudaSetDevice");
	check(cudaStreamCreate(&stream), "cudaStreamCreate");
	check(cudaMalloc((void **)&a, bytes), "cudaMalloc");
	check(cudaMalloc((void **)&b, bytes), "cudaMalloc");
	check(cudaMalloc((void **)&c, bytes), "cudaMalloc");
	float *h = (float *)malloc(bytes);
	for (size_t i = 0; i < (size_t)N * N; i++) {
		h[i] = (float)(i % 17) / 17 - 0.5f;
	}
	check(cudaMemcpy(a, h, bytes, cudaMemcpyHostToDevice), "cudaMemcpy");
	check(cudaMemcpy(b, h, bytes, cudaMemcpyHostToDevice), "cudaMemcpy");
	free(h);
	if (cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS || cublasSetStream(handle, stream) != CUBLAS_STATUS_SUCCESS) {
		fprintf(stderr, "cublasCreate failed\n");
		return 1;
	}
	sgemm(); // warm up: cuBLAS loads its kernels
	check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
	bench("BenchmarkSgemm8192", sgemm, 30);
	cublasDestroy(handle);
	return 0;
}
