// The C twin of BenchmarkAllReduce (../nccl_test.go) and, with "procs",
// of BenchmarkAllReduceProcesses: ncclAllReduce of float32 sums, in place.
// By default over every GPU of one process from one thread, communicators
// from ncclCommInitAll. With "procs", in two processes, one GPU each, as a
// job of one process per GPU runs it: the program forks before any call to
// CUDA or NCCL (CUDA does not survive a fork, nor NCCL's threads), the
// parent is rank 0 on device 0 and the child rank 1 on device 1, the
// parent's ncclGetUniqueId reaches the child through a pipe, and the
// communicators come from ncclCommInitRank. For each size it queues a batch
// of all-reduces (grouped where a process has several GPUs) and then waits
// for every stream, timing both, `runs` times (argv[1], RUNS if absent),
// and prints each run in Go benchmark format under the Go benchmark's
// name, with nccl-tests' bus bandwidth. It is plain C, so that gcc
// -fsyntax-only -x c can check it without nvcc:
//
//	nvcc -O2 -arch=native -o nccl nccl.cu -lcudart -lnccl && ./nccl [runs [procs]]
#include <cuda_runtime_api.h>
#include <errno.h>
#include <nccl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

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

// TIMEOUT_S bounds each step of the two processes (the start, each size,
// the end), as procsTimeout does Go's: a rank that fails or hangs leaves
// the other waiting in NCCL for ever.
enum { TIMEOUT_S = 60 };

// The GPUs this process drives, devices dev0 to dev0+ndev-1, and the ranks
// of the communicator, in this process and others.
static int ndev, dev0, nranks;
static ncclComm_t *comms;
static cudaStream_t *streams;
static float **bufs;

static void ncclcheck(ncclResult_t r, const char *what) {
	if (r != ncclSuccess) {
		fprintf(stderr, "%s: %s\n", what, ncclGetErrorString(r));
		exit(1);
	}
}

// all_reduce queues one in-place sum of count floats on every device of the
// process, grouped where there are several, as nccl-tests does.
static void all_reduce(size_t count) {
	if (ndev > 1) {
		ncclcheck(ncclGroupStart(), "ncclGroupStart");
	}
	for (int g = 0; g < ndev; g++) {
		ncclcheck(ncclAllReduce(bufs[g], bufs[g], count, ncclFloat32, ncclSum, comms[g], streams[g]), "ncclAllReduce");
	}
	if (ndev > 1) {
		ncclcheck(ncclGroupEnd(), "ncclGroupEnd");
	}
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

// size_name writes the benchmark bench's name for bytes, in the largest
// binary unit that divides it, as sizeName in ../nccl_test.go does: 8B,
// 4KiB, 1GiB.
static void size_name(char *s, size_t len, const char *bench, size_t bytes) {
	static const char *const units[] = {"B", "KiB", "MiB", "GiB"};
	int u = 0;
	while (u < 3 && bytes >= 1024 && bytes % 1024 == 0) {
		bytes /= 1024;
		u++;
	}
	snprintf(s, len, "%s/size=%zu%s", bench, bytes, units[u]);
}

// alloc_ranks makes room for n ranks in this process, on devices first to
// first+n-1, of a communicator of size ranks.
static void alloc_ranks(int n, int first, int size) {
	ndev = n;
	dev0 = first;
	nranks = size;
	comms = (ncclComm_t *)calloc(n, sizeof *comms);
	streams = (cudaStream_t *)calloc(n, sizeof *streams);
	bufs = (float **)calloc(n, sizeof *bufs);
	if (comms == NULL || streams == NULL || bufs == NULL) {
		fprintf(stderr, "out of memory\n");
		exit(1);
	}
}

// setup makes each device's non-blocking stream and zeroed buffer of the
// largest size.
static void setup(void) {
	size_t max = sizes[NSIZES - 1];
	for (int g = 0; g < ndev; g++) {
		check(cudaSetDevice(dev0 + g), "cudaSetDevice");
		check(cudaStreamCreateWithFlags(&streams[g], cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
		check(cudaMalloc((void **)&bufs[g], max), "cudaMalloc");
		// Zeros stay zeros however often they are summed. The memset is on
		// the default stream, which the non-blocking stream ignores.
		check(cudaMemset(bufs[g], 0, max), "cudaMemset");
		check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
	}
}

static void teardown(void) {
	for (int g = 0; g < ndev; g++) {
		check(cudaSetDevice(dev0 + g), "cudaSetDevice");
		check(cudaFree(bufs[g]), "cudaFree");
		check(cudaStreamDestroy(streams[g]), "cudaStreamDestroy");
		ncclcheck(ncclCommDestroy(comms[g]), "ncclCommDestroy");
	}
	free(comms);
	free(streams);
	free(bufs);
}

// write_all writes the n bytes at p to fd.
static void write_all(int fd, const void *p, size_t n) {
	for (const char *b = (const char *)p; n > 0;) {
		ssize_t k = write(fd, b, n);
		if (k < 0 && errno == EINTR) {
			continue;
		}
		if (k <= 0) {
			perror("nccl: writing to rank 1");
			exit(1);
		}
		b += k;
		n -= (size_t)k;
	}
}

// read_all reads n bytes from fd into p.
static void read_all(int fd, void *p, size_t n) {
	for (char *b = (char *)p; n > 0;) {
		ssize_t k = read(fd, b, n);
		if (k < 0 && errno == EINTR) {
			continue;
		}
		if (k <= 0) {
			fprintf(stderr, "nccl: rank 1: rank 0 is gone (%s)\n", k < 0 ? strerror(errno) : "end of file");
			exit(1);
		}
		b += k;
		n -= (size_t)k;
	}
}

// bench_sizes times `runs` runs of every size, and rank 0 prints them under
// the benchmark bench's name. In two processes the ranks must queue the
// same all-reduces: rank 0 writes each size's count of all-reduces a run to
// fd, where rank 1 reads it, and each size is a step that TIMEOUT_S bounds;
// in one process fd is -1.
static void bench_sizes(const char *bench, int rank, int fd) {
	for (int k = 0; k < NSIZES; k++) {
		size_t bytes = sizes[k], count = bytes / sizeof(float);
		char name[64];
		size_name(name, sizeof name, bench, bytes);
		if (fd >= 0) {
			alarm(TIMEOUT_S);
		}
		for (int i = 0; i < WARMUP; i++) {
			all_reduce(count);
		}
		sync_all();
		// Pick the count of all-reduces a run from a probe, as Go does b.N.
		double per = run(count, PROBE);
		long n;
		if (rank == 0) {
			n = per > 0 ? (long)(TARGET_NS / per) : MAX_ITERS;
			n = n < MIN_ITERS ? MIN_ITERS : n > MAX_ITERS ? MAX_ITERS : n;
			if (fd >= 0) {
				write_all(fd, &n, sizeof n);
			}
		} else {
			read_all(fd, &n, sizeof n);
		}
		for (int r = 0; r < runs; r++) {
			double ns = run(count, n);
			if (rank == 0) {
				// bytes per ns is GB/s.
				double busbw = 2.0 * (nranks - 1) / nranks * (double)bytes / ns;
				printf("%-40s\t%ld\t%.1f ns/op\t%.2f MB/s\t%.3f busbw-GB/s\n", name, n, ns, (double)bytes / ns * 1e3, busbw);
				fflush(stdout);
			}
		}
	}
}

// devices returns the number of CUDA devices, after logging NCCL's
// version and form, the run's; 0 where there are fewer than 2.
static int devices(const char *form) {
	int n, version;
	check(cudaGetDeviceCount(&n), "cudaGetDeviceCount");
	if (n < 2) {
		fprintf(stderr, "needs 2 CUDA devices, found %d\n", n);
		return 0;
	}
	ncclcheck(ncclGetVersion(&version), "ncclGetVersion");
	fprintf(stderr, "NCCL %d, %d devices%s\n", version, n, form);
	return n;
}

// one_process is the all-reduce over every GPU of this process.
static int one_process(void) {
	int n = devices("");
	if (n == 0) {
		return 1;
	}
	alloc_ranks(n, 0, n);
	ncclcheck(ncclCommInitAll(comms, ndev, NULL), "ncclCommInitAll");
	setup();
	bench_sizes("BenchmarkAllReduce", 0, -1);
	teardown();
	return 0;
}

// rank1 is rank 1 of the two processes, forked by rank 0.
static pid_t rank1;

// on_alarm ends rank 0, and rank 1 with it, once a step took over
// TIMEOUT_S seconds.
static void on_alarm(int sig) {
	static const char msg[] = "nccl: a step of the two processes took over TIMEOUT_S seconds\n";
	(void)sig;
	if (rank1 > 0) {
		kill(rank1, SIGKILL);
	}
	(void)!write(2, msg, sizeof msg - 1);
	_exit(1);
}

// watch_rank1 waits for rank 1 to exit, and ends rank 0 at once if it
// failed, rather than leave it waiting in NCCL until the alarm.
static void *watch_rank1(void *arg) {
	int status;
	(void)arg;
	while (waitpid(rank1, &status, 0) < 0) {
		if (errno != EINTR) {
			perror("nccl: waitpid");
			_exit(1);
		}
	}
	if (WIFSIGNALED(status)) {
		fprintf(stderr, "nccl: rank 1 was killed by signal %d\n", WTERMSIG(status));
		_exit(1);
	}
	if (WEXITSTATUS(status) != 0) {
		fprintf(stderr, "nccl: rank 1 exited with status %d\n", WEXITSTATUS(status));
		_exit(1);
	}
	return NULL;
}

// be_rank1 is rank 1, on device 1: it reads the unique id from fd, and then
// each size's count of all-reduces a run.
static void be_rank1(int fd, pid_t parent) {
	// Rank 1 dies with rank 0, even one that died before this call.
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) {
		_exit(1);
	}
	ncclUniqueId id;
	read_all(fd, &id, sizeof id);
	alloc_ranks(1, 1, 2);
	check(cudaSetDevice(1), "cudaSetDevice");
	ncclcheck(ncclCommInitRank(&comms[0], 2, id, 1), "ncclCommInitRank");
	setup();
	bench_sizes("BenchmarkAllReduceProcesses", 1, fd);
	teardown();
	exit(0);
}

// two_processes is the all-reduce in two processes, this one rank 0.
static int two_processes(void) {
	int fds[2];
	pid_t parent = getpid();
	if (pipe(fds) != 0) {
		perror("nccl: pipe");
		return 1;
	}
	fflush(NULL);
	// Nothing of CUDA's or NCCL's has run yet, in either process.
	if ((rank1 = fork()) < 0) {
		perror("nccl: fork");
		return 1;
	}
	if (rank1 == 0) {
		close(fds[1]);
		be_rank1(fds[0], parent);
	}
	close(fds[0]);
	// A failed write to a rank 1 that is gone is reported, not a SIGPIPE.
	signal(SIGPIPE, SIG_IGN);
	signal(SIGALRM, on_alarm);
	alarm(TIMEOUT_S);
	pthread_t watcher;
	if (pthread_create(&watcher, NULL, watch_rank1, NULL) != 0) {
		fprintf(stderr, "nccl: pthread_create failed\n");
		return 1;
	}
	if (devices(", two processes") == 0) {
		return 1;
	}
	ncclUniqueId id;
	ncclcheck(ncclGetUniqueId(&id), "ncclGetUniqueId");
	write_all(fds[1], &id, sizeof id);
	alloc_ranks(1, 0, 2);
	check(cudaSetDevice(0), "cudaSetDevice");
	ncclcheck(ncclCommInitRank(&comms[0], 2, id, 0), "ncclCommInitRank");
	setup();
	bench_sizes("BenchmarkAllReduceProcesses", 0, fds[1]);
	alarm(TIMEOUT_S);
	teardown();
	close(fds[1]);
	// The watcher returns once rank 1 exited well.
	pthread_join(watcher, NULL);
	return 0;
}

int main(int argc, char **argv) {
	if (argc > 3 || (argc > 1 && (runs = atoi(argv[1])) < 1) || (argc > 2 && strcmp(argv[2], "procs") != 0)) {
		fprintf(stderr, "usage: nccl [runs [procs]]\n");
		return 1;
	}
	return argc > 2 ? two_processes() : one_process();
}
