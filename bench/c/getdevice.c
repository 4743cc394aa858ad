// The C twin of BenchmarkGetDevice and BenchmarkCtxGetDevice: cudaGetDevice
// and cuCtxGetDevice in a loop, each called directly (linked against the
// library) and through a pointer from dlsym, as the Go bindings call them.
// Prints one line per way in Go benchmark format, so that both read alike:
//
//	nvcc -O2 -o getdevice getdevice.c -lcudart -lcuda -ldl && ./getdevice
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench.h"

enum { N = 20000000 };

// Both functions take an int * and return 0 on success.
typedef int (*getdevice_fn)(int *);

// run returns the median over RUNS of the ns per call of fn.
static double run(getdevice_fn fn) {
	double t[RUNS];
	int d;
	for (int r = 0; r < RUNS; r++) {
		double t0 = now();
		for (int i = 0; i < N; i++) {
			if (fn(&d) != 0) {
				fprintf(stderr, "call failed\n");
				exit(1);
			}
		}
		t[r] = (now() - t0) / N;
	}
	return median(t);
}

int main(void) {
	if (cudaSetDevice(0) != cudaSuccess || cudaFree(0) != cudaSuccess) {
		fprintf(stderr, "no CUDA device\n");
		return 1;
	}
	void *rt = dlopen("libcudart.so.13", RTLD_NOW), *drv = dlopen("libcuda.so.1", RTLD_NOW);
	getdevice_fn p = rt ? (getdevice_fn)dlsym(rt, "cudaGetDevice") : NULL;
	getdevice_fn q = drv ? (getdevice_fn)dlsym(drv, "cuCtxGetDevice") : NULL;
	if (p == NULL || q == NULL) {
		fprintf(stderr, "dlopen/dlsym: %s\n", dlerror());
		return 1;
	}
	printf("BenchmarkCGetDeviceLinked    \t%d\t%.2f ns/op\n", N, run((getdevice_fn)cudaGetDevice));
	printf("BenchmarkCGetDeviceDlsym     \t%d\t%.2f ns/op\n", N, run(p));
	printf("BenchmarkCCtxGetDeviceLinked \t%d\t%.2f ns/op\n", N, run((getdevice_fn)cuCtxGetDevice));
	printf("BenchmarkCCtxGetDeviceDlsym  \t%d\t%.2f ns/op\n", N, run(q));
	return 0;
}
