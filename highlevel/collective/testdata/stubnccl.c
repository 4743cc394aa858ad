// stubnccl.c is a stand-in for libnccl, so that collective's tests and
// bench's benchmarks run without a GPU and without NCCL (stub_test.go
// builds it and loads it through $GOCUDA_NCCL, beside highlevel's stand-in
// driver). It queues nothing.
//
// It keeps NCCL's contract for non-blocking communicators (config.blocking
// = 0): a call that makes, splits or finalizes one, or a group with one,
// returns ncclInProgress, and ncclCommGetAsyncError then reports
// ncclInProgress for one more call before ncclSuccess. A split of one
// writes its new communicator only when its work ends: once the parent's
// ncclCommGetAsyncError no longer reports it in progress, or at the
// parent's abort (then NCCL writes the failed one). A blocking
// communicator's calls return ncclSuccess. Blocking and non-blocking
// communicators in one group are an error, as in NCCL. Faults come from the
// environment, each a CALL:N naming a call as the log does ("init",
// "split", "allreduce", "finalize"):
//
//	STUB_NCCL_BUSY   ncclCommGetAsyncError reports ncclInProgress N times
//	                 after CALL, instead of once
//	STUB_NCCL_FAIL   CALL returns the ncclResult_t N
//	STUB_NCCL_ASYNC  ncclCommGetAsyncError reports N once CALL's work is
//	                 done (NCCL's failure in the background)
//	STUB_NCCL_HANG   CALL on a blocking communicator, outside a group,
//	                 waits as NCCL does for peers that never come, until
//	                 an ncclCommAbort from another thread; it then
//	                 returns ncclInternalError (N: any but 0)
//
// Each call that makes or ends a communicator is appended to the file
// $STUB_NCCL_LOG, if set, a line each: "init ID blocking=B", "split
// ID PARENT blocking=B", each with " name=NAME" where the configuration
// names it, "allreduce ID" (and "broadcast", "reduce", "allgather",
// "reducescatter", "send", "recv"), "finalize ID", "destroy ID", "abort ID"; IDs
// count from 1 in the order communicators are made. A
// communicator used after its destroy or abort aborts the process, and so
// does one called from two threads at once (but for ncclCommAbort, which
// may come at any time), which NCCL does not allow.
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef enum { ok = 0, internalError = 3, invalidArgument = 4, invalidUsage = 5, inProgress = 7 } result;

// config is the beginning of ncclConfig_t, which is all the stand-in reads.
typedef struct {
	size_t size;
	unsigned int magic;
	unsigned int version;
	int blocking;
	int cgaClusterSize, minCTAs, maxCTAs;
	const char *netName;
	int splitShare, trafficClass;
	const char *commName;
} config;

typedef struct {
	char internal[128];
} uniqueId;

typedef struct comm {
	int id, rank, nranks, blocking;
	const char *call; // the last call that has work in the background
	int busy;         // ncclCommGetAsyncError's ncclInProgress replies left
	int dead;         // destroyed or aborted
	int abortFlag;    // NCCL's: set first by ncclCommAbort
	int calling;      // threads in a call on it (alone)
	// A split of this communicator in the background: NCCL writes the new
	// one to *out once the split's work ends (done, failed or aborted).
	struct comm **out, *child;
} comm;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int comms; // made so far

static __thread int depth;        // ncclGroupStart's nesting
static __thread int groupBlocking; // -1: no communicator in the group yet
static __thread comm *group[64];   // the group's communicators
static __thread int ngroup;

// record appends a line to $STUB_NCCL_LOG.
static void record(const char *format, ...) {
	const char *path = getenv("STUB_NCCL_LOG");
	FILE *f = path != NULL ? fopen(path, "a") : NULL;
	if (f == NULL) {
		return;
	}
	va_list ap;
	va_start(ap, format);
	vfprintf(f, format, ap);
	va_end(ap);
	fputc('\n', f);
	fclose(f);
}

// fault returns N where the variable env is CALL:N for call, else def.
static int fault(const char *env, const char *call, int def) {
	const char *v = getenv(env);
	size_t n = strlen(call);
	if (v != NULL && strncmp(v, call, n) == 0 && v[n] == ':') {
		return atoi(v + n + 1);
	}
	return def;
}

static void live(comm *c) {
	if (c == NULL || c->dead) {
		fprintf(stderr, "stubnccl: communicator %d used after its end\n", c != NULL ? c->id : 0);
		abort();
	}
}

// alone checks that no other thread is in a call on c: it stays in the
// call for a yield of the processor, so that a call of another thread's
// that overlaps is likely seen.
static void alone(comm *c) {
	if (__atomic_fetch_add(&c->calling, 1, __ATOMIC_SEQ_CST) != 0) {
		fprintf(stderr, "stubnccl: communicator %d called from two threads at once\n", c->id);
		abort();
	}
	sched_yield();
	__atomic_fetch_sub(&c->calling, 1, __ATOMIC_SEQ_CST);
}

// use is call on c: its fault, or ncclInProgress where c is non-blocking,
// unless in a group, which ncclGroupEnd ends.
static result use(comm *c, const char *call) {
	live(c);
	alone(c);
	result r = fault("STUB_NCCL_FAIL", call, ok);
	if (r != ok) {
		return r;
	}
	c->call = call;
	if (depth > 0) {
		if (groupBlocking == -1) {
			groupBlocking = c->blocking;
		} else if (groupBlocking != c->blocking) {
			return invalidArgument;
		}
		if (ngroup < 64) {
			group[ngroup++] = c;
		}
		return ok;
	}
	if (c->blocking && fault("STUB_NCCL_HANG", call, 0) != 0) {
		// In the call, for alone's check, until the abort; c may be freed
		// once the flag is set, as NCCL's may.
		__atomic_fetch_add(&c->calling, 1, __ATOMIC_SEQ_CST);
		while (!__atomic_load_n(&c->abortFlag, __ATOMIC_SEQ_CST)) {
			usleep(100);
		}
		return internalError;
	}
	if (c->blocking) {
		return ok;
	}
	pthread_mutex_lock(&mu);
	c->busy = fault("STUB_NCCL_BUSY", call, 1);
	pthread_mutex_unlock(&mu);
	return inProgress;
}

// publish ends c's split in the background, if any: it writes the new
// communicator.
static void publish(comm *c) {
	if (c->out != NULL) {
		*c->out = c->child;
		c->out = NULL;
	}
}

static comm *newComm(int rank, int nranks, const config *cfg) {
	comm *c = calloc(1, sizeof *c);
	pthread_mutex_lock(&mu);
	c->id = ++comms;
	pthread_mutex_unlock(&mu);
	c->rank = rank;
	c->nranks = nranks;
	c->blocking = cfg == NULL || cfg->blocking != 0; // NCCL's default is blocking
	return c;
}

// named is the " name=NAME" of a log line, "" for none.
static void named(char *buf, size_t n, const config *cfg) {
	buf[0] = 0;
	if (cfg != NULL && cfg->commName != NULL) {
		snprintf(buf, n, " name=%s", cfg->commName);
	}
}

result ncclGetVersion(int *v) {
	*v = 22803;
	return ok;
}

result ncclGetUniqueId(uniqueId *id) {
	memset(id, 1, sizeof *id);
	return ok;
}

const char *ncclGetErrorString(result r) { return r == ok ? "no error" : "stub error"; }
const char *ncclGetLastError(comm *c) { return ""; }

result ncclCommInitRankConfig(comm **out, int nranks, uniqueId id, int rank, config *cfg) {
	if (nranks < 1 || rank < 0 || rank >= nranks) {
		return invalidArgument;
	}
	comm *c = newComm(rank, nranks, cfg);
	*out = c;
	char name[64];
	named(name, sizeof name, cfg);
	record("init %d blocking=%d%s", c->id, c->blocking, name);
	return use(c, "init");
}

result ncclCommSplit(comm *parent, int color, int key, comm **out, config *cfg) {
	*out = NULL;
	// The split is the parent's work, as NCCL's.
	result r = use(parent, "split");
	if ((r != ok && r != inProgress) || color < 0) {
		return r;
	}
	comm *c = newComm(0, 1, cfg);
	char name[64];
	named(name, sizeof name, cfg);
	record("split %d %d blocking=%d%s", c->id, parent->id, c->blocking, name);
	if (r == ok && depth == 0) {
		*out = c;
	} else {
		parent->out = out;
		parent->child = c;
	}
	return r;
}

result ncclCommUserRank(comm *c, int *rank) {
	live(c);
	alone(c);
	*rank = c->rank;
	return ok;
}

result ncclCommCount(comm *c, int *n) {
	live(c);
	alone(c);
	*n = c->nranks;
	return ok;
}

result ncclGroupStart(void) {
	if (depth++ == 0) {
		groupBlocking = -1;
		ngroup = 0;
	}
	return ok;
}

result ncclGroupEnd(void) {
	if (depth == 0) {
		return invalidUsage;
	}
	if (--depth > 0 || ngroup == 0) {
		return ok;
	}
	int n = ngroup;
	ngroup = 0;
	if (groupBlocking == 1) {
		for (int i = 0; i < n; i++) {
			publish(group[i]);
		}
		return ok;
	}
	pthread_mutex_lock(&mu);
	for (int i = 0; i < n; i++) {
		group[i]->busy = fault("STUB_NCCL_BUSY", group[i]->call, 1);
	}
	pthread_mutex_unlock(&mu);
	return inProgress;
}

result ncclAllReduce(const void *send, void *recv, size_t count, int type, int op, comm *c, void *stream) {
	live(c);
	record("allreduce %d", c->id);
	return use(c, "allreduce");
}

result ncclBroadcast(const void *send, void *recv, size_t count, int type, int root, comm *c, void *stream) {
	live(c);
	record("broadcast %d", c->id);
	return use(c, "broadcast");
}

result ncclReduce(const void *send, void *recv, size_t count, int type, int op, int root, comm *c, void *stream) {
	live(c);
	record("reduce %d", c->id);
	return use(c, "reduce");
}

result ncclAllGather(const void *send, void *recv, size_t count, int type, comm *c, void *stream) {
	live(c);
	record("allgather %d", c->id);
	return use(c, "allgather");
}

result ncclReduceScatter(const void *send, void *recv, size_t count, int type, int op, comm *c, void *stream) {
	live(c);
	record("reducescatter %d", c->id);
	return use(c, "reducescatter");
}

result ncclSend(const void *send, size_t count, int type, int peer, comm *c, void *stream) {
	live(c);
	record("send %d", c->id);
	return use(c, "send");
}

result ncclRecv(void *recv, size_t count, int type, int peer, comm *c, void *stream) {
	live(c);
	record("recv %d", c->id);
	return use(c, "recv");
}

result ncclCommGetAsyncError(comm *c, result *r) {
	live(c);
	alone(c);
	pthread_mutex_lock(&mu);
	*r = ok;
	if (c->busy > 0) {
		c->busy--;
		*r = inProgress;
	} else {
		publish(c);
		if (c->call != NULL) {
			*r = fault("STUB_NCCL_ASYNC", c->call, ok);
		}
	}
	pthread_mutex_unlock(&mu);
	return ok;
}

result ncclCommFinalize(comm *c) {
	live(c);
	record("finalize %d", c->id);
	return use(c, "finalize");
}

result ncclCommDestroy(comm *c) {
	live(c);
	alone(c);
	record("destroy %d", c->id);
	c->dead = 1; // kept, for live's check
	return ok;
}

result ncclCommAbort(comm *c) {
	live(c);
	__atomic_store_n(&c->abortFlag, 1, __ATOMIC_SEQ_CST);
	record("abort %d", c->id);
	publish(c);
	c->dead = 1;
	return ok;
}
