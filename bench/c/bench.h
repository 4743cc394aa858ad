// bench.h: the timing shared by the C twins: a monotonic clock, RUNS runs
// of a loop that times a function queueing work on a stream, and their
// results printed in Go's benchmark format, one line a run, as `go test
// -count RUNS` prints them, so that one tool reads both; and kernels loaded
// as highlevel loads them (load_kernel, load_kernel_include).
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <nvrtc.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

enum { RUNS = 5 };

// runs is how many runs bench_bytes times: RUNS, unless a twin's main sets
// it from its command line.
static int runs = RUNS;

static double now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void check(cudaError_t r, const char *what) {
	if (r != cudaSuccess) {
		fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(r));
		exit(1);
	}
}

// report prints one run of n operations that took ns nanoseconds each, and
// with bytes > 0 the bandwidth, MB/s as Go's SetBytes reports it.
static void report(const char *name, long n, double ns, double bytes) {
	printf("%-32s\t%ld\t%.2f ns/op", name, n, ns);
	if (bytes > 0) {
		printf("\t%.2f MB/s", bytes / ns * 1e3);
	}
	printf("\n");
	fflush(stdout);
}

// stream is where the functions that bench times queue their work.
static cudaStream_t stream;

// bench_bytes times `runs` runs of n calls of fn, the stream synchronized at
// the end of each run, and reports each; bytes is what one call moves.
static void bench_bytes(const char *name, void (*fn)(void), long n, double bytes) {
	fn(); // warm up
	check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
	for (int r = 0; r < runs; r++) {
		double t0 = now();
		for (long i = 0; i < n; i++) {
			fn();
		}
		check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
		report(name, n, (now() - t0) / n, bytes);
	}
}

// bench is bench_bytes for work that moves no bytes.
static void bench(const char *name, void (*fn)(void), long n) { bench_bytes(name, fn, n, 0); }

static void drvcheck(CUresult r, const char *what) {
	if (r != CUDA_SUCCESS) {
		fprintf(stderr, "%s: CUresult %d\n", what, (int)r);
		exit(1);
	}
}

// load_kernel_include returns the kernel named name of the CUDA C++ source
// src as highlevel has it: compiled by NVRTC for device 0, with the headers
// of the directory include, when not NULL, found by #include (-I, Compile's
// IncludePaths), loaded as a CUlibrary, its CUfunction for the current
// context.
static CUfunction load_kernel_include(const char *src, const char *name, const char *include) {
	int major, minor;
	check(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0), "cudaDeviceGetAttribute");
	check(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0), "cudaDeviceGetAttribute");
	char arch[64], inc[4096];
	snprintf(arch, sizeof arch, "--gpu-architecture=sm_%d%d", major, minor);
	const char *opts[] = {arch, inc};
	int nopts = 1;
	if (include != NULL) {
		snprintf(inc, sizeof inc, "-I%s", include);
		nopts = 2;
	}
	nvrtcProgram p;
	size_t n;
	if (nvrtcCreateProgram(&p, src, "kernel.cu", 0, NULL, NULL) != NVRTC_SUCCESS) {
		fprintf(stderr, "NVRTC failed\n");
		exit(1);
	}
	if (nvrtcCompileProgram(p, nopts, opts) != NVRTC_SUCCESS || nvrtcGetCUBINSize(p, &n) != NVRTC_SUCCESS) {
		size_t size = 0;
		char *log = NULL;
		if (nvrtcGetProgramLogSize(p, &size) == NVRTC_SUCCESS && (log = (char *)malloc(size + 1)) != NULL &&
				nvrtcGetProgramLog(p, log) == NVRTC_SUCCESS) {
			log[size] = 0;
			fprintf(stderr, "%s", log);
		}
		fprintf(stderr, "NVRTC failed\n");
		exit(1);
	}
	char *cubin = (char *)malloc(n);
	if (cubin == NULL || nvrtcGetCUBIN(p, cubin) != NVRTC_SUCCESS) {
		fprintf(stderr, "NVRTC failed\n");
		exit(1);
	}
	CUlibrary lib;
	CUkernel k;
	CUfunction f;
	drvcheck(cuLibraryLoadData(&lib, cubin, NULL, NULL, 0, NULL, NULL, 0), "cuLibraryLoadData");
	drvcheck(cuLibraryGetKernel(&k, lib, name), "cuLibraryGetKernel");
	drvcheck(cuKernelGetFunction(&f, k), "cuKernelGetFunction");
	free(cubin);
	nvrtcDestroyProgram(&p);
	return f;
}

// load_kernel is load_kernel_include without an include directory.
static CUfunction load_kernel(const char *src, const char *name) { return load_kernel_include(src, name, NULL); }
