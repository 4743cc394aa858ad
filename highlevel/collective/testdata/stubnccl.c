// stubnccl.c is a stand-in for libnccl, so that collective's tests and
// bench's benchmarks run without a GPU and without NCCL (stub_test.go
// builds it and loads it through $GOCUDA_NCCL, beside highlevel's stand-in
// driver). It queues nothing: it computes each collective, on the
// stand-in driver's memory (host memory), once every rank of its
// communicator has made it, and each Send and Recv once both have come
// (see clique).
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

struct clique;

typedef struct comm {
	int id, rank, nranks, blocking;
	struct clique *clique; // the ranks it computes with
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

// A clique is the ranks of one communicator, which compute its work
// together: those ncclCommInitRankConfig makes with one number of ranks,
// one of each rank, in the order they come (the stand-in's unique ids are
// all alike), or the ranks of a split: a rank's k-th split joins its
// parent's k-th child, of as many ranks, each keeping its rank (the
// stand-in takes every rank to pass one color). A rank's k-th collective waits
// in slot k%SLOTS for the k-th of every other rank; a Send from rank s to
// rank r waits in sends for the Recv of r from s, or that Recv in recvs.
// A clique whose rank has ended computes nothing more.
#define SLOTS 256
#define P2P 64

typedef struct {
	const char *kind; // NULL: empty
	const void *send;
	void *recv;
	size_t count;
	int type, op, root;
} work;

typedef struct {
	void *p; // the send's or the recv's
	size_t bytes;
} p2p;

typedef struct clique {
	int nranks, ended;
	char *has;      // per rank: joined
	long *splits;   // per rank: its splits so far
	struct clique **children; // by split
	long nchildren;
	long *posted;   // per rank: its collectives so far
	int *arrived;   // per slot
	work *slots;    // SLOTS × nranks
	p2p *sends, *recvs; // per (from, to) pair: P2P each, in order
	int *nsends, *nrecvs;
} clique;

static clique *forming; // the clique that ncclCommInitRankConfig fills

static clique *newClique(int nranks) {
	clique *q = calloc(1, sizeof *q);
	q->nranks = nranks;
	q->posted = calloc(nranks, sizeof *q->posted);
	q->has = calloc(nranks, 1);
	q->splits = calloc(nranks, sizeof *q->splits);
	q->arrived = calloc(SLOTS, sizeof *q->arrived);
	q->slots = calloc((size_t)SLOTS * nranks, sizeof *q->slots);
	q->sends = calloc((size_t)nranks * nranks * P2P, sizeof *q->sends);
	q->recvs = calloc((size_t)nranks * nranks * P2P, sizeof *q->recvs);
	q->nsends = calloc((size_t)nranks * nranks, sizeof *q->nsends);
	q->nrecvs = calloc((size_t)nranks * nranks, sizeof *q->nrecvs);
	return q;
}

static void die(const char *msg, int id) {
	fprintf(stderr, "stubnccl: communicator %d: %s\n", id, msg);
	abort();
}

static size_t typeSize(int t) {
	static const size_t sizes[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2};
	if (t < 0 || t > 9) die("no such type", 0);
	return sizes[t];
}

// REDUCE reduces element i of the n arrays in, of type T, with op into
// out; Avg divides the sum, integers as C does.
#define REDUCE(T)                                                           \
	{                                                                       \
		T acc = ((const T *)in[0])[i];                                      \
		for (int q = 1; q < n; q++) {                                       \
			T v = ((const T *)in[q])[i];                                    \
			switch (op) {                                                   \
			case 1: acc *= v; break;                                        \
			case 2: acc = v > acc ? v : acc; break;                         \
			case 3: acc = v < acc ? v : acc; break;                         \
			default: acc += v;                                              \
			}                                                               \
		}                                                                   \
		if (op == 4) acc /= (T)n;                                           \
		((T *)out)[i] = acc;                                                \
	}

// reduce reduces count elements of type t of the n arrays in into out.
static void reduce(void *out, const void **in, int n, size_t count, int t, int op, int id) {
	if (op < 0 || op > 4) die("no such reduction", id);
	for (size_t i = 0; i < count; i++) {
		switch (t) {
		case 0: REDUCE(signed char) break;
		case 1: REDUCE(unsigned char) break;
		case 2: REDUCE(int) break;
		case 3: REDUCE(unsigned) break;
		case 4: REDUCE(long long) break;
		case 5: REDUCE(unsigned long long) break;
		case 7: REDUCE(float) break;
		case 8: REDUCE(double) break;
		default: die("a type the stand-in does not reduce", id);
		}
	}
}

// compute does the collectives of slot, which every rank has made; mu is
// held. Inputs are read whole before any output is written: in place,
// the send of one rank is the recv of it.
static void compute(clique *q, work *w, int id) {
	int n = q->nranks;
	for (int r = 1; r < n; r++) {
		if (strcmp(w[r].kind, w[0].kind) != 0 || w[r].count != w[0].count || w[r].type != w[0].type ||
		    w[r].op != w[0].op || w[r].root != w[0].root) {
			die("ranks made different collectives (NCCL would hang or corrupt)", id);
		}
	}
	const char *k = w[0].kind;
	size_t count = w[0].count, size = typeSize(w[0].type), bytes = count * size;
	const void *in[n];
	char *tmp = malloc((size_t)n * bytes + 1);
	if (strcmp(k, "broadcast") == 0) {
		memcpy(tmp, w[w[0].root].send, bytes);
		for (int r = 0; r < n; r++) memmove(w[r].recv, tmp, bytes);
	} else if (strcmp(k, "allgather") == 0) {
		for (int r = 0; r < n; r++) memcpy(tmp + r * bytes, w[r].send, bytes);
		for (int r = 0; r < n; r++) memmove(w[r].recv, tmp, n * bytes);
	} else if (strcmp(k, "reducescatter") == 0) {
		// Rank r's block of the result: the reduction of block r of every send.
		char *sends = malloc((size_t)n * n * bytes + 1);
		for (int r = 0; r < n; r++) memcpy(sends + (size_t)r * n * bytes, w[r].send, n * bytes);
		for (int r = 0; r < n; r++) {
			for (int s = 0; s < n; s++) in[s] = sends + (size_t)s * n * bytes + r * bytes;
			reduce(tmp, in, n, count, w[0].type, w[0].op, id);
			memmove(w[r].recv, tmp, bytes);
		}
		free(sends);
	} else { // allreduce, reduce
		char *sends = malloc((size_t)n * bytes + 1);
		for (int r = 0; r < n; r++) {
			memcpy(sends + r * bytes, w[r].send, bytes);
			in[r] = sends + r * bytes;
		}
		reduce(tmp, in, n, count, w[0].type, w[0].op, id);
		for (int r = 0; r < n; r++) {
			if (strcmp(k, "allreduce") == 0 || r == w[0].root) memmove(w[r].recv, tmp, bytes);
		}
		free(sends);
	}
	free(tmp);
}

// post makes c's collective kind, of count elements of type t (for
// allgather: the send's; for reducescatter: the recv's).
static void post(comm *c, const char *kind, const void *send, void *recv, size_t count, int t, int op, int root) {
	pthread_mutex_lock(&mu);
	clique *q = c->clique;
	if (!q->ended) {
		long k = q->posted[c->rank]++;
		int slot = k % SLOTS;
		work *w = q->slots + (size_t)slot * q->nranks;
		if (w[c->rank].kind != NULL) die("a rank ran 256 collectives ahead of another", c->id);
		w[c->rank] = (work){kind, send, recv, count, t, op, root};
		if (++q->arrived[slot] == q->nranks) {
			compute(q, w, c->id);
			q->arrived[slot] = 0;
			for (int r = 0; r < q->nranks; r++) w[r].kind = NULL;
		}
	}
	pthread_mutex_unlock(&mu);
}

// pair makes c's Send to (or Recv from) peer: it copies once the other
// side has come, in the order they come.
static void pair(comm *c, int sending, void *p, size_t bytes, int peer) {
	pthread_mutex_lock(&mu);
	clique *q = c->clique;
	int n = q->nranks;
	if (peer < 0 || peer >= n) die("no such peer", c->id);
	int from = sending ? c->rank : peer, to = sending ? peer : c->rank;
	int pi = from * n + to;
	p2p *mine = (sending ? q->sends : q->recvs) + (size_t)pi * P2P, *theirs = (sending ? q->recvs : q->sends) + (size_t)pi * P2P;
	int *nmine = (sending ? q->nsends : q->nrecvs) + pi, *ntheirs = (sending ? q->nrecvs : q->nsends) + pi;
	if (q->ended) {
		// nothing more
	} else if (*ntheirs > 0) {
		p2p o = theirs[0];
		memmove(theirs, theirs + 1, (size_t)(--*ntheirs) * sizeof *theirs);
		if (o.bytes != bytes) die("a Send and its Recv of different sizes", c->id);
		memmove(sending ? o.p : p, sending ? p : o.p, bytes);
	} else {
		if (*nmine == P2P) die("64 Sends or Recvs wait for their other side", c->id);
		mine[(*nmine)++] = (p2p){p, bytes};
	}
	pthread_mutex_unlock(&mu);
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
	pthread_mutex_lock(&mu);
	if (forming == NULL || forming->nranks != nranks || forming->has[rank]) {
		forming = newClique(nranks);
	}
	forming->has[rank] = 1;
	c->clique = forming;
	pthread_mutex_unlock(&mu);
	return use(c, "init");
}

result ncclCommSplit(comm *parent, int color, int key, comm **out, config *cfg) {
	*out = NULL;
	// The split is the parent's work, as NCCL's.
	result r = use(parent, "split");
	if ((r != ok && r != inProgress) || color < 0) {
		return r;
	}
	comm *c = newComm(parent->rank, parent->nranks, cfg);
	pthread_mutex_lock(&mu);
	clique *q = parent->clique;
	long k = q->splits[parent->rank]++;
	if (k >= q->nchildren) {
		q->children = realloc(q->children, (k + 1) * sizeof *q->children);
		for (long i = q->nchildren; i <= k; i++) q->children[i] = newClique(q->nranks);
		q->nchildren = k + 1;
	}
	c->clique = q->children[k];
	pthread_mutex_unlock(&mu);
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
	result r = use(c, "allreduce");
	if (r == ok || r == inProgress) {
		post(c, "allreduce", send, recv, count, type, op, 0);
	}
	return r;
}

result ncclBroadcast(const void *send, void *recv, size_t count, int type, int root, comm *c, void *stream) {
	live(c);
	record("broadcast %d", c->id);
	result r = use(c, "broadcast");
	if (r == ok || r == inProgress) {
		post(c, "broadcast", send, recv, count, type, 0, root);
	}
	return r;
}

result ncclReduce(const void *send, void *recv, size_t count, int type, int op, int root, comm *c, void *stream) {
	live(c);
	record("reduce %d", c->id);
	result r = use(c, "reduce");
	if (r == ok || r == inProgress) {
		post(c, "reduce", send, recv, count, type, op, root);
	}
	return r;
}

result ncclAllGather(const void *send, void *recv, size_t count, int type, comm *c, void *stream) {
	live(c);
	record("allgather %d", c->id);
	result r = use(c, "allgather");
	if (r == ok || r == inProgress) {
		post(c, "allgather", send, recv, count, type, 0, 0);
	}
	return r;
}

result ncclReduceScatter(const void *send, void *recv, size_t count, int type, int op, comm *c, void *stream) {
	live(c);
	record("reducescatter %d", c->id);
	result r = use(c, "reducescatter");
	if (r == ok || r == inProgress) {
		post(c, "reducescatter", send, recv, count, type, op, 0);
	}
	return r;
}

result ncclSend(const void *send, size_t count, int type, int peer, comm *c, void *stream) {
	live(c);
	record("send %d", c->id);
	result r = use(c, "send");
	if (r == ok || r == inProgress) {
		pair(c, 1, (void *)send, count * typeSize(type), peer);
	}
	return r;
}

result ncclRecv(void *recv, size_t count, int type, int peer, comm *c, void *stream) {
	live(c);
	record("recv %d", c->id);
	result r = use(c, "recv");
	if (r == ok || r == inProgress) {
		pair(c, 0, recv, count * typeSize(type), peer);
	}
	return r;
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
	pthread_mutex_lock(&mu);
	c->clique->ended = 1;
	pthread_mutex_unlock(&mu);
	c->dead = 1; // kept, for live's check
	return ok;
}

result ncclCommAbort(comm *c) {
	live(c);
	__atomic_store_n(&c->abortFlag, 1, __ATOMIC_SEQ_CST);
	record("abort %d", c->id);
	pthread_mutex_lock(&mu);
	c->clique->ended = 1;
	pthread_mutex_unlock(&mu);
	publish(c);
	c->dead = 1;
	return ok;
}
