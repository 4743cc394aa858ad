// bench.h: the timing shared by the C twins: a monotonic clock, the median
// of RUNS runs, and a loop that times a function queueing work on a stream.
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

static int cmp(const void *a, const void *b) {
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

// median sorts t and returns its middle value.
static double median(double t[RUNS]) {
	qsort(t, RUNS, sizeof t[0], cmp);
	return t[RUNS / 2];
}

static void check(cudaError_t r, const char *what) {
	if (r != cudaSuccess) {
		fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(r));
		exit(1);
	}
}

// stream is where the functions that bench times queue their work.
static cudaStream_t stream;

// bench prints, in Go benchmark format, the median over RUNS of the ns per
// call of fn, n calls a run, the stream synchronized at the end of each run.
static void bench(const char *name, void (*fn)(void), int n) {
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
