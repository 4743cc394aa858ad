// The C twin of BenchmarkAllReduce (../nccl_test.go): ncclAllReduce of
// float32 sums, in place, over every GPU of one process from one thread,
// communicators from ncclCommInitAll. For each size it queues a batch of
// grouped all-reduces and then waits for every stream, timing both, RUNS
// times, and prints each run in Go benchmark format under the Go
// benchmark's name, with nccl-tests' bus bandwidth. It is plain C, so that
// gcc -fsyntax-only -x c can check it without nvcc:
//
//	nvcc -O2 -arch=native -o nccl nccl.cu -lcudart -lnccl && ./nccl
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench.h"

// sizes are the bytes of each device's buffer, as ../nccl_test.go has them.
static const size_t sizes[] = {
	8, 64, 512, (size_t)4 << 10, (size_t)32 << 10, (size_t)256 << 10, (size_t)2 << 20, (size_t)16 << 20,
	(size_t)64 << 20, (size_t)128 << 20, (size_t)256 << 20, (size_t)512 << 20, (size_t)1 << 30,
};
enum { NSIZES = sizeof sizes / sizeof sizes[0], WARMUP = 5, PROBE = 10 };

// A run's count of all-reduces is kept within these.
static const long MIN_ITERS = 10, MAX_ITERS = 1000000;

// TARGET_NS is about how long each timed run takes; Go's is -test.benchtime.
static const double TARGET_NS = 0.5e9;

static int ndev;
static ncclComm_t *comms;
static cudaStream_t *streams;
static float **bufs;

static void ncclcheck(ncclResult_t r, const char *what) {
	if (r != ncclSuccess) {
		fprintf(stderr, "%s: %s\n", what, ncclGetErrorString(r));
		exit(1);
	}
}

// all_reduce queues one in-place sum of count floats on every device,
// grouped.
static void all_reduce(size_t count) {
	ncclcheck(ncclGroupStart(), "ncclGroupStart");
	for (int g = 0; g < ndev; g++) {
		ncclcheck(ncclAllReduce(bufs[g], bufs[g], count, ncclFloat32, ncclSum, comms[g], streams[g]), "ncclAllReduce");
	}
	ncclcheck(ncclGroupEnd(), "ncclGroupEnd");
}

static void sync_all(void) {
	for (int g = 0; g < ndev; g++) {
		check(cudaStreamSynchronize(streams[g]), "cudaStreamSynchronize");
	}
}

// run queues n all-reduces of count floats, waits for them, and returns the
// ns per all-reduce.
static double run(size_t count, long n) {
	double t0 = now();
	for (long i = 0; i < n; i++) {
		all_reduce(count);
	}
	sync_all();
	return (now() - t0) / n;
}

// size_name writes bytes in the largest binary unit that divides it, as
// sizeName in ../nccl_test.go does: 8B, 4KiB, 1GiB.
static void size_name(char *s, size_t len, size_t bytes) {
	static const char *const units[] = {"B", "KiB", "MiB", "GiB"};
	int u = 0;
	while (u < 3 && bytes >= 1024 && bytes % 1024 == 0) {
		bytes /= 1024;
		u++;
	}
	snprintf(s, len, "BenchmarkAllReduce/size=%zu%s", bytes, units[u]);
}

int main(void) {
	int version;
	check(cudaGetDeviceCount(&ndev), "cudaGetDeviceCount");
	if (ndev < 2) {
		fprintf(stderr, "needs 2 CUDA devices, found %d\n", ndev);
		return 1;
	}
	ncclcheck(ncclGetVersion(&version), "ncclGetVersion");
	fprintf(stderr, "NCCL %d, %d devices\n", version, ndev);

	size_t max = sizes[NSIZES - 1];
	comms = (ncclComm_t *)calloc(ndev, sizeof *comms);
	streams = (cudaStream_t *)calloc(ndev, sizeof *streams);
	bufs = (float **)calloc(ndev, sizeof *bufs);
	if (comms == NULL || streams == NULL || bufs == NULL) {
		fprintf(stderr, "out of memory\n");
		return 1;
	}
	ncclcheck(ncclCommInitAll(comms, ndev, NULL), "ncclCommInitAll");
	for (int g = 0; g < ndev; g++) {
		check(cudaSetDevice(g), "cudaSetDevice");
		check(cudaStreamCreateWithFlags(&streams[g], cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
		check(cudaMalloc((void **)&bufs[g], max), "cudaMalloc");
		// Zeros stay zeros however often they are summed. The memset is on
		// the default stream, which the non-blocking stream ignores.
		check(cudaMemset(bufs[g], 0, max), "cudaMemset");
		check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
	}

	for (int k = 0; k < NSIZES; k++) {
		size_t bytes = sizes[k], count = bytes / sizeof(float);
		char name[64];
		size_name(name, sizeof name, bytes);
		for (int i = 0; i < WARMUP; i++) {
			all_reduce(count);
		}
		sync_all();
		// Pick the count of all-reduces a run from a probe, as Go does b.N.
		double per = run(count, PROBE);
		long n = per > 0 ? (long)(TARGET_NS / per) : MAX_ITERS;
		n = n < MIN_ITERS ? MIN_ITERS : n > MAX_ITERS ? MAX_ITERS : n;
		for (int r = 0; r < RUNS; r++) {
			double ns = run(count, n);
			// bytes per ns is GB/s.
			double busbw = 2.0 * (ndev - 1) / ndev * (double)bytes / ns;
			printf("%-40s\t%ld\t%.1f ns/op\t%.2f MB/s\t%.3f busbw-GB/s\n", name, n, ns, (double)bytes / ns * 1e3, busbw);
			fflush(stdout);
		}
	}

	for (int g = 0; g < ndev; g++) {
		check(cudaSetDevice(g), "cudaSetDevice");
		check(cudaFree(bufs[g]), "cudaFree");
		check(cudaStreamDestroy(streams[g]), "cudaStreamDestroy");
		ncclcheck(ncclCommDestroy(comms[g]), "ncclCommDestroy");
	}
	free(comms);
	free(streams);
	free(bufs);
	return 0;
}
