// The C twin of the waiting benchmarks (../wait_test.go): how long a thread
// takes to learn that a kernel of 10 µs, 100 µs or 1 ms has run, and the
// serving workload, in which workers that each own a stream repeat a request
// (64 KiB in from pinned memory, a kernel, 64 KiB back, wait). Printed in Go
// benchmark format; ns/op is the median latency (for the serving rows the
// wall time per request of all workers together), and each line also gives
// the 99th percentile (p99-ns) and the CPU time of the whole process per
// wait (cpu-ns/op), CUDA's own threads included.
//
// Each wait is timed in several ways: spinning in cudaEventSynchronize
// (Sync), sleeping in it on an event made with cudaEventBlockingSync
// (SyncBlocking), and the designs a library that must not hold a thread
// per waiter could use: a host function that wakes the waiter
// (HostFunc), a thread that sleeps in cudaEventSynchronize on the waiter's
// behalf (Handoff), and a blocking-sync event recorded on a helper stream
// behind the waited one (Relay).
//
//	nvcc -O2 -arch=native -o wait wait.cu -lcuda && ./wait [ROUNDS [latency|serve]]
#include <pthread.h>
#include <string.h>

#include "bench.h"

// spin runs for ns nanoseconds of the GPU's global timer.
extern "C" __global__ void spin(long long ns) {
	unsigned long long t0, t;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
	do {
		asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	} while ((long long)(t - t0) < ns);
}

static double cpu_now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

// percentile returns the p-th percentile of the n sorted values v.
static double percentile(double *v, long n, double p) {
	long i = (long)(p / 100 * (n - 1) + 0.5);
	return v[i];
}

// A waiter is a thread that waits on another's behalf (Handoff): it sleeps
// until given an event, waits for it, and wakes its client.
struct waiter {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	cudaEvent_t ev; // to wait for; 0 when there is none
	int done;
};

static struct waiter helper = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0};

static void *waiter_loop(void *arg) {
	struct waiter *w = (struct waiter *)arg;
	for (;;) {
		pthread_mutex_lock(&w->mu);
		while (w->ev == 0) pthread_cond_wait(&w->cv, &w->mu);
		cudaEvent_t ev = w->ev;
		pthread_mutex_unlock(&w->mu);
		check(cudaEventSynchronize(ev), "cudaEventSynchronize");
		pthread_mutex_lock(&w->mu);
		w->ev = 0;
		w->done = 1;
		pthread_cond_broadcast(&w->cv);
		pthread_mutex_unlock(&w->mu);
	}
	return NULL;
}

static void handoff(cudaEvent_t ev) {
	pthread_mutex_lock(&helper.mu);
	helper.ev = ev;
	helper.done = 0;
	pthread_cond_broadcast(&helper.cv);
	while (!helper.done) pthread_cond_wait(&helper.cv, &helper.mu);
	pthread_mutex_unlock(&helper.mu);
}

static pthread_mutex_t host_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t host_cv = PTHREAD_COND_INITIALIZER;
static int host_done;

static void CUDART_CB wake(void *) {
	pthread_mutex_lock(&host_mu);
	host_done = 1;
	pthread_cond_signal(&host_cv);
	pthread_mutex_unlock(&host_mu);
}

enum mode { SYNC, SYNC_BLOCKING, HOST_FUNC, HANDOFF, RELAY, NMODES };
static const char *mode_names[] = {"Sync", "SyncBlocking", "HostFunc", "Handoff", "Relay"};

static cudaEvent_t spin_ev, blocking_ev;
static cudaStream_t relay;

// wait_once launches a kernel of ns nanoseconds on s, then waits for it in
// the way m says.
static void wait_once(cudaStream_t s, long long ns, enum mode m) {
	spin<<<1, 1, 0, s>>>(ns);
	switch (m) {
	case SYNC:
		check(cudaEventRecord(spin_ev, s), "cudaEventRecord");
		check(cudaEventSynchronize(spin_ev), "cudaEventSynchronize");
		break;
	case SYNC_BLOCKING:
		check(cudaEventRecord(blocking_ev, s), "cudaEventRecord");
		check(cudaEventSynchronize(blocking_ev), "cudaEventSynchronize");
		break;
	case HOST_FUNC:
		host_done = 0;
		check(cudaLaunchHostFunc(s, wake, NULL), "cudaLaunchHostFunc");
		pthread_mutex_lock(&host_mu);
		while (!host_done) pthread_cond_wait(&host_cv, &host_mu);
		pthread_mutex_unlock(&host_mu);
		break;
	case HANDOFF:
		check(cudaEventRecord(blocking_ev, s), "cudaEventRecord");
		handoff(blocking_ev);
		break;
	case RELAY:
		check(cudaEventRecord(spin_ev, s), "cudaEventRecord");
		check(cudaStreamWaitEvent(relay, spin_ev, 0), "cudaStreamWaitEvent");
		check(cudaEventRecord(blocking_ev, relay), "cudaEventRecord");
		check(cudaEventSynchronize(blocking_ev), "cudaEventSynchronize");
		break;
	default:
		break;
	}
}

// latency times n waits for a kernel of us microseconds in each mode,
// taking turns so that all see the same drift.
static void latency(int us, long n) {
	double *lat[NMODES], cpu[NMODES] = {0};
	for (int m = 0; m < NMODES; m++) {
		lat[m] = (double *)malloc(n * sizeof(double));
		wait_once(stream, us * 1000LL, (enum mode)m); // warm up
	}
	for (long i = 0; i < n; i++) {
		for (int m = 0; m < NMODES; m++) {
			double c0 = cpu_now(), t0 = now();
			wait_once(stream, us * 1000LL, (enum mode)m);
			lat[m][i] = now() - t0;
			cpu[m] += cpu_now() - c0;
		}
	}
	for (int m = 0; m < NMODES; m++) {
		qsort(lat[m], n, sizeof(double), cmp_double);
		char name[96];
		snprintf(name, sizeof name, "BenchmarkWait%s/kernel=%dus", mode_names[m], us);
		printf("%-40s\t%ld\t%.0f ns/op\t%.0f p99-ns\t%.0f cpu-ns/op\n", name, n, percentile(lat[m], n, 50),
				percentile(lat[m], n, 99), cpu[m] / n);
		free(lat[m]);
	}
	fflush(stdout);
}

// The serving workload.
enum { REQUEST = 64 << 10, MAX_LAT = 1 << 20 };

struct worker {
	pthread_t t;
	int blocking;
	long long ns;
	double stop; // now() at which to stop
	long n;
	double *lat;
};

static void *serve(void *arg) {
	struct worker *w = (struct worker *)arg;
	cudaStream_t s;
	cudaEvent_t ev;
	void *in, *out, *dev;
	check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
	check(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming | (w->blocking ? cudaEventBlockingSync : 0)), "cudaEventCreate");
	check(cudaMallocHost(&in, REQUEST), "cudaMallocHost");
	check(cudaMallocHost(&out, REQUEST), "cudaMallocHost");
	check(cudaMalloc(&dev, REQUEST), "cudaMalloc");
	memset(in, 1, REQUEST);
	while (w->n < MAX_LAT) {
		double t0 = now();
		if (t0 > w->stop) break;
		check(cudaMemcpyAsync(dev, in, REQUEST, cudaMemcpyHostToDevice, s), "cudaMemcpyAsync");
		spin<<<1, 1, 0, s>>>(w->ns);
		check(cudaMemcpyAsync(out, dev, REQUEST, cudaMemcpyDeviceToHost, s), "cudaMemcpyAsync");
		check(cudaEventRecord(ev, s), "cudaEventRecord");
		check(cudaEventSynchronize(ev), "cudaEventSynchronize");
		w->lat[w->n++] = now() - t0;
	}
	cudaFree(dev);
	cudaFreeHost(in);
	cudaFreeHost(out);
	cudaEventDestroy(ev);
	cudaStreamDestroy(s);
	return NULL;
}

// serving runs the serving workload for seconds with workers threads and
// kernels of us microseconds, spinning or sleeping in the wait.
static void serving(int workers, int us, int blocking, double seconds) {
	struct worker *w = (struct worker *)calloc(workers, sizeof(struct worker));
	double t0 = now(), c0 = cpu_now(), stop = t0 + seconds * 1e9;
	for (int i = 0; i < workers; i++) {
		w[i].blocking = blocking;
		w[i].ns = us * 1000LL;
		w[i].stop = stop;
		w[i].lat = (double *)malloc(MAX_LAT * sizeof(double));
		pthread_create(&w[i].t, NULL, serve, &w[i]);
	}
	long total = 0;
	for (int i = 0; i < workers; i++) {
		pthread_join(w[i].t, NULL);
		total += w[i].n;
	}
	double wall = now() - t0, cpu = cpu_now() - c0;
	double *all = (double *)malloc(total * sizeof(double));
	long k = 0;
	for (int i = 0; i < workers; i++) {
		memcpy(all + k, w[i].lat, w[i].n * sizeof(double));
		k += w[i].n;
		free(w[i].lat);
	}
	qsort(all, total, sizeof(double), cmp_double);
	char name[96];
	snprintf(name, sizeof name, "BenchmarkServe%s/workers=%d/kernel=%dus", blocking ? "Blocking" : "Spin", workers, us);
	printf("%-44s\t%ld\t%.0f ns/op\t%.0f req/s\t%.0f p50-ns\t%.0f p99-ns\t%.0f cpu-ns/op\n", name, total, wall / total,
			total / wall * 1e9, percentile(all, total, 50), percentile(all, total, 99), cpu / total);
	fflush(stdout);
	free(all);
	free(w);
}

// main runs ROUNDS rounds (argv[1], 1 if absent) of the latency rows, then
// of the serving rows; "latency" or "serve" as argv[2] runs only those.
int main(int argc, char **argv) {
	int rounds = argc > 1 ? atoi(argv[1]) : 1;
	const char *only = argc > 2 ? argv[2] : "";
	check(cudaSetDevice(0), "cudaSetDevice");
	check(cudaFree(0), "cudaFree");
	check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
	check(cudaStreamCreateWithFlags(&relay, cudaStreamNonBlocking), "cudaStreamCreate");
	check(cudaEventCreateWithFlags(&spin_ev, cudaEventDisableTiming), "cudaEventCreate");
	check(cudaEventCreateWithFlags(&blocking_ev, cudaEventDisableTiming | cudaEventBlockingSync), "cudaEventCreate");
	pthread_t t;
	pthread_create(&t, NULL, waiter_loop, &helper);
	for (int r = 0; r < rounds && strcmp(only, "serve") != 0; r++) {
		latency(10, 2000);
		latency(100, 1000);
		latency(1000, 200);
	}
	for (int r = 0; r < rounds && strcmp(only, "latency") != 0; r++) {
		int workers[] = {1, 16, 64}, kernels[] = {10, 100, 1000};
		for (int i = 0; i < 3; i++) {
			for (int j = 0; j < 3; j++) {
				serving(workers[i], kernels[j], 0, 1);
				serving(workers[i], kernels[j], 1, 1);
			}
		}
	}
	return 0;
}
