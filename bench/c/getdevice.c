// The C twin of BenchmarkGetDevice, BenchmarkCtxGetDevice and
// BenchmarkDeviceAttribute: cudaGetDevice, cuCtxGetDevice and
// cudaDeviceGetAttribute in a loop, called through a pointer from dlsym, as
// the Go bindings call them, and the first two also directly (linked against
// the library):
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
typedef int (*attribute_fn)(int *, int, int);

// run reports RUNS runs of N calls of fn.
static void run(const char *name, getdevice_fn fn) {
	int d;
	for (int r = 0; r < RUNS; r++) {
		double t0 = now();
		for (int i = 0; i < N; i++) {
			if (fn(&d) != 0) {
				fprintf(stderr, "%s: call failed\n", name);
				exit(1);
			}
		}
		report(name, N, (now() - t0) / N, 0);
	}
}

// run_attribute reports RUNS runs of N calls of fn for the multiprocessor
// count of device 0.
static void run_attribute(const char *name, attribute_fn fn) {
	int v;
	for (int r = 0; r < RUNS; r++) {
		double t0 = now();
		for (int i = 0; i < N; i++) {
			if (fn(&v, cudaDevAttrMultiProcessorCount, 0) != 0) {
				fprintf(stderr, "%s: call failed\n", name);
				exit(1);
			}
		}
		report(name, N, (now() - t0) / N, 0);
	}
}

int main(void) {
	if (cudaSetDevice(0) != cudaSuccess || cudaFree(0) != cudaSuccess) {
		fprintf(stderr, "no CUDA device\n");
		return 1;
	}
	void *rt = dlopen("libcudart.so.13", RTLD_NOW), *drv = dlopen("libcuda.so.1", RTLD_NOW);
	getdevice_fn p = rt ? (getdevice_fn)dlsym(rt, "cudaGetDevice") : NULL;
	getdevice_fn q = drv ? (getdevice_fn)dlsym(drv, "cuCtxGetDevice") : NULL;
	attribute_fn a = rt ? (attribute_fn)dlsym(rt, "cudaDeviceGetAttribute") : NULL;
	if (p == NULL || q == NULL || a == NULL) {
		fprintf(stderr, "dlopen/dlsym: %s\n", dlerror());
		return 1;
	}
	run("BenchmarkGetDevice", p);
	run("BenchmarkGetDeviceLinked", (getdevice_fn)cudaGetDevice);
	run("BenchmarkCtxGetDevice", q);
	run("BenchmarkCtxGetDeviceLinked", (getdevice_fn)cuCtxGetDevice);
	run_attribute("BenchmarkDeviceAttribute", a);
	return 0;
}
