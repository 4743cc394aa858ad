// bench.h: the timing shared by the C twins: a monotonic clock, RUNS runs
// of a loop that times a function queueing work on a stream, and their
// results printed in Go's benchmark format, one line a run, as `go test
// -count RUNS` prints them, so that one tool reads both.
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

enum { RUNS = 5 };

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

// bench_bytes times RUNS runs of n calls of fn, the stream synchronized at
// the end of each run, and reports each; bytes is what one call moves.
static void bench_bytes(const char *name, void (*fn)(void), long n, double bytes) {
	fn(); // warm up
	check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
	for (int r = 0; r < RUNS; r++) {
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
