// bench.h: the timing shared by the C twins: a monotonic clock and the
// median of RUNS runs.
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
