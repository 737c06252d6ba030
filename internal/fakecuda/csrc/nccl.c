// The fake NCCL (see driver.c): communicators of ranks in one process.

#include "fakecuda.h"

// ---- NCCL ------------------------------------------------------------------

typedef struct { char internal[128]; } ncclUniqueId;
enum {
	NCCL_SUCCESS = 0,
	NCCL_INTERNAL = 3,
	NCCL_INVALID_ARGUMENT = 4,
	NCCL_INVALID_USAGE = 5,
	NCCL_REMOTE_ERROR = 6,
	NCCL_IN_PROGRESS = 7,
	NCCL_NUM_RESULTS = 9,
};
enum coll_kind { COLL_ALLREDUCE, COLL_BROADCAST, COLL_REDUCE, COLL_ALLGATHER, COLL_REDUCESCATTER, P2P_SEND, P2P_RECV };
#define MAX_RANKS MAX_DEVICES

// A clique is the ranks of one unique id (or of one ncclCommInitAll).
struct clique {
	uint64_t key;
	int nranks, joined, alive;
	int aborted; // a rank aborted: the others' collectives end, and they report a remote error
	struct fake_comm *ranks[MAX_RANKS];
	struct coll *colls; // collectives some rank has reached
	struct split *split; // the ncclCommSplit under way, if any
	struct clique *next;
};

// A split is one ncclCommSplit of a clique: each rank's color and key, and
// once every rank has come, each one's new communicator.
struct split {
	int color[MAX_RANKS], key[MAX_RANKS], arrived, left, done;
	struct fake_comm *made[MAX_RANKS];
};

struct fake_comm {
	struct clique *cl;
	int rank, device;
	long seq;                // collectives issued, which numbers them across ranks
	long sent[MAX_RANKS];    // sends issued to each peer, which number them
	long received[MAX_RANKS]; // receives issued from each peer
	int pending;              // its collectives, sends and receives queued and not yet run, under mu
	// A non-blocking communicator (made by ncclCommInitRankScalable with
	// config->blocking = 0, or split from one) leaves each collective,
	// send and receive in progress, as NCCL may: the call returns
	// ncclInProgress (or, in a group, ncclGroupEnd does), and the part is
	// queued on its stream only once ncclCommGetAsyncError has reported
	// ncclInProgress busy times. Until then NCCL refuses the next call.
	int nonblocking, busy, connected;
	struct deferred *deferred;
};

// A deferred part is one a non-blocking communicator holds until its call
// is no longer in progress.
struct deferred {
	struct coll_part *p;
	CUstream s;
	struct deferred *next;
};



// A coll is one collective: what each rank passed, and who has arrived.
struct coll_part {
	struct fake_comm *comm;
	long seq;
	enum coll_kind kind;
	const void *send;
	void *recv;
	size_t count;
	int dtype, op, root; // root: the peer of a send or a receive
	int grouped;         // a send or receive made inside a group
};
struct coll {
	long seq;
	struct coll_part parts[MAX_RANKS];
	int arrived, left, done;
	struct coll *next;
};

static struct clique *cliques;
static pthread_cond_t nccl_cond = PTHREAD_COND_INITIALIZER;
static __thread char nccl_last_error[256];
static __thread int nccl_group_depth;
// The non-blocking communicators the thread's group has held parts of,
// which ncclGroupEnd leaves in progress.
#define MAX_GROUPED 64
static __thread struct fake_comm *nccl_grouped[MAX_GROUPED];
static __thread int nccl_ngrouped;

static int nccl_fail(int code, const char *msg) {
	snprintf(nccl_last_error, sizeof nccl_last_error, "%s", msg);
	return code;
}

static size_t dtype_size(int t) {
	static const size_t sizes[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2};
	return t >= 0 && t < 10 ? sizes[t] : 0;
}

#define REDUCE(T)                                                                        \
	static void reduce_##T(T *acc, const T *in, size_t n, int op) {                     \
		for (size_t i = 0; i < n; i++) switch (op) {                                    \
			case 0: case 4: acc[i] += in[i]; break;                                     \
			case 1: acc[i] *= in[i]; break;                                             \
			case 2: if (in[i] > acc[i]) acc[i] = in[i]; break;                          \
			case 3: if (in[i] < acc[i]) acc[i] = in[i]; break;                          \
			}                                                                           \
	}                                                                                   \
	static void divide_##T(T *acc, size_t n, int by) {                                  \
		for (size_t i = 0; i < n; i++) acc[i] = (T)(acc[i] / by);                       \
	}
REDUCE(int8_t)
REDUCE(uint8_t)
REDUCE(int32_t)
REDUCE(uint32_t)
REDUCE(int64_t)
REDUCE(uint64_t)
REDUCE(float)
REDUCE(double)

// reduce folds in into acc, n elements of type t, with op; last divides for
// ncclAvg.
static void reduce(void *acc, const void *in, size_t n, int t, int op, int nranks, int last) {
	switch (t) {
#define CASE(id, T)                                          \
	case id:                                                 \
		reduce_##T(acc, in, n, op);                          \
		if (last && op == 4) divide_##T(acc, n, nranks);     \
		break;
	CASE(0, int8_t) CASE(1, uint8_t) CASE(2, int32_t) CASE(3, uint32_t)
	CASE(4, int64_t) CASE(5, uint64_t) CASE(7, float) CASE(8, double)
#undef CASE
	}
}

static void *xmalloc(size_t n) { return malloc(n ? n : 1); }

// reduce_all reduces every rank's n elements at offset off of its send
// buffer into out.
static void reduce_all(struct coll *c, int nranks, void *out, size_t off, size_t n) {
	struct coll_part *p0 = &c->parts[0];
	size_t es = dtype_size(p0->dtype);
	void *acc = xmalloc(n * es);
	memcpy(acc, (const char *)p0->send + off * es, n * es);
	for (int r = 1; r < nranks; r++)
		reduce(acc, (const char *)c->parts[r].send + off * es, n, p0->dtype, p0->op, nranks, r == nranks - 1);
	memcpy(out, acc, n * es);
	free(acc);
}

// compute runs a collective once every rank has arrived. Inputs are all
// read before any output is written, so in-place calls work.
static void compute(struct coll *c, int nranks) {
	struct coll_part *p0 = &c->parts[0];
	size_t es = dtype_size(p0->dtype), n = p0->count;
	switch (p0->kind) {
	case COLL_ALLREDUCE: {
		void *tmp = xmalloc(n * es);
		reduce_all(c, nranks, tmp, 0, n);
		for (int r = 0; r < nranks; r++) memcpy(c->parts[r].recv, tmp, n * es);
		free(tmp);
		break;
	}
	case COLL_REDUCE: {
		void *tmp = xmalloc(n * es);
		reduce_all(c, nranks, tmp, 0, n);
		memcpy(c->parts[p0->root].recv, tmp, n * es);
		free(tmp);
		break;
	}
	case COLL_BROADCAST: {
		void *tmp = xmalloc(n * es);
		memcpy(tmp, c->parts[p0->root].send, n * es);
		for (int r = 0; r < nranks; r++) memcpy(c->parts[r].recv, tmp, n * es);
		free(tmp);
		break;
	}
	case COLL_ALLGATHER: {
		char *tmp = xmalloc(nranks * n * es);
		for (int r = 0; r < nranks; r++) memcpy(tmp + r * n * es, c->parts[r].send, n * es);
		for (int r = 0; r < nranks; r++) memcpy(c->parts[r].recv, tmp, nranks * n * es);
		free(tmp);
		break;
	}
	case COLL_REDUCESCATTER: {
		char *tmp = xmalloc(nranks * n * es);
		for (int r = 0; r < nranks; r++) reduce_all(c, nranks, tmp + r * n * es, r * n, n);
		for (int r = 0; r < nranks; r++) memcpy(c->parts[r].recv, tmp + r * n * es, n * es);
		free(tmp);
		break;
	}
	default: // sends and receives: run_p2p
		break;
	}
}

// run_collective is a rank's part of a collective, on its stream's worker:
// it waits there until every rank has arrived, and the last computes.
static void run_p2p(struct coll_part *p);

// part_done ends a queued part of c's work (mu held).
static void part_done(struct fake_comm *c) {
	c->pending--;
	pthread_cond_broadcast(&nccl_cond);
}

// queue_part queues p on s, counted as pending on its communicator.
static int queue_part(struct coll_part *p, CUstream s) {
	pthread_mutex_lock(&mu);
	p->comm->pending++;
	pthread_mutex_unlock(&mu);
	struct op o = {.kind = OP_NCCL, .coll = p};
	if (enqueue(s, o) != SUCCESS) {
		pthread_mutex_lock(&mu);
		part_done(p->comm);
		pthread_mutex_unlock(&mu);
		free(p);
		return nccl_fail(NCCL_INVALID_ARGUMENT, "stream is not live");
	}
	return NCCL_SUCCESS;
}

// submit queues p on s; a non-blocking communicator holds it instead,
// until its call is no longer in progress (see fake_comm).
static int submit(struct fake_comm *c, struct coll_part *p, CUstream s) {
	if (!c->nonblocking) return queue_part(p, s);
	struct deferred *d = malloc(sizeof *d);
	*d = (struct deferred){p, s, NULL};
	pthread_mutex_lock(&mu);
	struct deferred **pp = &c->deferred;
	while (*pp) pp = &(*pp)->next;
	*pp = d;
	int grouped = nccl_group_depth > 0;
	if (grouped) {
		int seen = 0;
		for (int i = 0; i < nccl_ngrouped; i++) seen |= nccl_grouped[i] == c;
		if (!seen && nccl_ngrouped < MAX_GROUPED) nccl_grouped[nccl_ngrouped++] = c;
	} else {
		c->busy = 2;
	}
	pthread_mutex_unlock(&mu);
	return grouped ? NCCL_SUCCESS : NCCL_IN_PROGRESS;
}

// take_deferred returns c's held parts and forgets them (mu held).
static struct deferred *take_deferred(struct fake_comm *c) {
	struct deferred *d = c->deferred;
	c->deferred = NULL;
	return d;
}

// free_deferred frees held parts that will never run.
static void free_deferred(struct deferred *d) {
	while (d) {
		struct deferred *next = d->next;
		free(d->p);
		free(d);
		d = next;
	}
}

void run_collective(struct coll_part *p) {
	if (p->kind == P2P_SEND || p->kind == P2P_RECV) {
		run_p2p(p);
		return;
	}
	struct clique *cl = p->comm->cl;
	pthread_mutex_lock(&mu);
	if (cl->aborted) { // queued before a rank aborted: abandoned
		part_done(p->comm);
		pthread_mutex_unlock(&mu);
		free(p);
		return;
	}
	struct coll *c = cl->colls;
	while (c && c->seq != p->seq) c = c->next;
	if (!c) {
		c = calloc(1, sizeof *c);
		c->seq = p->seq;
		c->next = cl->colls;
		cl->colls = c;
	}
	c->parts[p->comm->rank] = *p;
	if (++c->arrived == cl->nranks) {
		compute(c, cl->nranks);
		c->done = 1;
		pthread_cond_broadcast(&nccl_cond);
	}
	while (!c->done && !cl->aborted) pthread_cond_wait(&nccl_cond, &mu);
	if (!c->done) { // a rank aborted: the collective is abandoned
		part_done(p->comm);
		pthread_mutex_unlock(&mu);
		free(p);
		return;
	}
	if (++c->left == cl->nranks) {
		for (struct coll **pp = &cl->colls; *pp; pp = &(*pp)->next)
			if (*pp == c) {
				*pp = c->next;
				break;
			}
		free(c);
	}
	part_done(p->comm);
	pthread_mutex_unlock(&mu);
	free(p);
}

EXPORT int ncclGetVersion(int *v) {
	FAULT("ncclGetVersion");
	if (!v) return nccl_fail(NCCL_INVALID_ARGUMENT, "version is NULL");
	*v = 22803;
	return NCCL_SUCCESS;
}

EXPORT const char *ncclGetErrorString(int r) {
	static const char *text[] = {"no error", "unhandled cuda error (run with NCCL_DEBUG=INFO for details)",
		"unhandled system error", "internal error", "invalid argument", "invalid usage",
		"remote process exited or there was a network error", "NCCL operation in progress", "timeout"};
	return r >= 0 && r < NCCL_NUM_RESULTS ? text[r] : "unknown result code";
}

EXPORT const char *ncclGetLastError(void *comm) {
	(void)comm;
	return nccl_last_error;
}

EXPORT int ncclGetUniqueId(ncclUniqueId *id) {
	FAULT("ncclGetUniqueId");
	if (!id) return nccl_fail(NCCL_INVALID_ARGUMENT, "uniqueId is NULL");
	static uint64_t next = 0x5eed;
	memset(id, 0, sizeof *id);
	memcpy(id->internal, "fakenccl", 8);
	pthread_mutex_lock(&mu);
	uint64_t key = ++next ^ (uint64_t)getpid() << 32;
	pthread_mutex_unlock(&mu);
	memcpy(id->internal + 8, &key, 8);
	return NCCL_SUCCESS;
}

// join adds rank on device to the clique of key, under mu.
static int join(uint64_t key, int nranks, int rank, int device, struct fake_comm **out) {
	struct clique *cl = cliques;
	// An aborted clique is done with, though a rank not yet destroyed
	// keeps it: the same id makes a new one.
	while (cl && (cl->key != key || cl->aborted)) cl = cl->next;
	if (!cl) {
		cl = calloc(1, sizeof *cl);
		cl->key = key;
		cl->nranks = nranks;
		cl->next = cliques;
		cliques = cl;
	}
	if (cl->nranks != nranks) return nccl_fail(NCCL_INVALID_ARGUMENT, "nranks differs from the other ranks'");
	if (cl->ranks[rank]) return nccl_fail(NCCL_INVALID_USAGE, "rank already joined");
	for (int r = 0; r < nranks; r++)
		if (cl->ranks[r] && cl->ranks[r]->device == device)
			return nccl_fail(NCCL_INVALID_USAGE, "Duplicate GPU detected");
	struct fake_comm *c = calloc(1, sizeof *c);
	c->cl = cl;
	c->rank = rank;
	c->device = device;
	cl->ranks[rank] = c;
	cl->joined++;
	cl->alive++;
	live_comms++;
	pthread_cond_broadcast(&nccl_cond);
	*out = c;
	return NCCL_SUCCESS;
}

EXPORT int ncclCommInitRankScalable(struct fake_comm **comm, int nranks, int rank, int nId, ncclUniqueId *ids, void *config) {
	FAULT("ncclCommInitRankScalable");
	if (!comm || !ids || nId < 1) return nccl_fail(NCCL_INVALID_ARGUMENT, "NULL argument");
	// ncclConfig_t starts with size, magic and version, then blocking.
	int nonblocking = 0;
	if (config) {
		const char *cf = config;
		unsigned magic;
		int blocking;
		memcpy(&magic, cf + 8, 4);
		memcpy(&blocking, cf + 16, 4);
		if (magic != 0xcafebeef) return nccl_fail(NCCL_INVALID_ARGUMENT, "config not initialized");
		nonblocking = blocking == 0;
	}
	if (nranks < 1 || nranks > MAX_RANKS || rank < 0 || rank >= nranks)
		return nccl_fail(NCCL_INVALID_ARGUMENT, "rank or nranks out of range");
	if (memcmp(ids[0].internal, "fakenccl", 8)) return nccl_fail(NCCL_INVALID_ARGUMENT, "not a unique id of this library");
	uint64_t key;
	memcpy(&key, ids[0].internal + 8, 8);
	int device = current ? current->device : 0;
	pthread_mutex_lock(&mu);
	struct fake_comm *c;
	int r = join(key, nranks, rank, device, &c);
	if (r == NCCL_SUCCESS && nonblocking) {
		// Non-blocking: the communicator is there at once, in progress
		// until every rank has joined (ncclCommGetAsyncError).
		c->nonblocking = 1;
		int done = c->cl->joined == nranks;
		pthread_mutex_unlock(&mu);
		*comm = c;
		return done ? NCCL_SUCCESS : NCCL_IN_PROGRESS;
	}
	if (r == NCCL_SUCCESS && nccl_group_depth == 0) {
		// Like NCCL, wait for every rank (with a bound, so that a test
		// fails instead of hanging).
		struct timespec deadline;
		clock_gettime(CLOCK_REALTIME, &deadline);
		deadline.tv_sec += 20;
		while (c->cl->joined < nranks)
			if (pthread_cond_timedwait(&nccl_cond, &mu, &deadline)) {
				pthread_mutex_unlock(&mu);
				return nccl_fail(NCCL_INTERNAL, "timed out waiting for the other ranks");
			}
	}
	pthread_mutex_unlock(&mu);
	if (r == NCCL_SUCCESS) *comm = c;
	return r;
}

EXPORT int ncclCommInitAll(struct fake_comm **comms, int ndev, const int *devlist) {
	FAULT("ncclCommInitAll");
	if (!comms || ndev < 1 || ndev > MAX_RANKS) return nccl_fail(NCCL_INVALID_ARGUMENT, "ndev out of range");
	pthread_mutex_lock(&mu);
	static uint64_t all_keys = 1;
	uint64_t key = ++all_keys;
	int r = NCCL_SUCCESS;
	for (int i = 0; i < ndev && r == NCCL_SUCCESS; i++) {
		int dev = devlist ? devlist[i] : i;
		if (dev < 0 || dev >= ndevices) r = nccl_fail(NCCL_INVALID_ARGUMENT, "invalid device");
		else r = join(key, ndev, i, dev, &comms[i]);
	}
	pthread_mutex_unlock(&mu);
	return r;
}

static int comm_live(struct fake_comm *c) {
	for (struct clique *cl = cliques; cl; cl = cl->next)
		for (int r = 0; r < cl->nranks; r++)
			if (cl->ranks[r] == c) return 1;
	return 0;
}

// Buffer registration: a registration is the range, kept until
// deregistered or its communicator ends (NCCL frees a communicator's
// registrations with it); live_regs counts them for the leak checks.
long live_regs;
struct fake_reg {
	struct fake_comm *comm;
	CUdeviceptr p;
	size_t n;
	struct fake_reg *next;
};
static struct fake_reg *regs;

static int comm_destroy(struct fake_comm *c, int abort);

EXPORT int ncclCommDestroy(struct fake_comm *c) {
	FAULT("ncclCommDestroy");
	return comm_destroy(c, 0);
}

// comm_destroy ends c; an abort ends the collectives of c's clique under
// way, on every rank, and the others report a remote error from then on.
static int comm_destroy(struct fake_comm *c, int abort) {
	pthread_mutex_lock(&mu);
	if (!comm_live(c)) {
		pthread_mutex_unlock(&mu);
		return nccl_fail(NCCL_INVALID_ARGUMENT, "not a live communicator");
	}
	struct clique *cl = c->cl;
	if (abort) {
		cl->aborted = 1;
		pthread_cond_broadcast(&nccl_cond);
	}
	// As NCCL's, the end waits for the rank's queued work, which an abort
	// ends at once; none of it may touch c or its clique afterwards. Parts
	// still held for a call in progress never run.
	while (c->pending) pthread_cond_wait(&nccl_cond, &mu);
	struct deferred *dropped = take_deferred(c);
	for (struct fake_reg **pp = &regs; *pp;) {
		struct fake_reg *r = *pp;
		if (r->comm != c) {
			pp = &r->next;
			continue;
		}
		*pp = r->next;
		live_regs--;
		free(r);
	}
	cl->ranks[c->rank] = NULL;
	live_comms--;
	if (--cl->alive == 0) {
		for (struct clique **pp = &cliques; *pp; pp = &(*pp)->next)
			if (*pp == cl) {
				*pp = cl->next;
				break;
			}
		while (cl->colls) { // abandoned by an abort
			struct coll *next = cl->colls->next;
			free(cl->colls);
			cl->colls = next;
		}
		free(cl);
	}
	pthread_mutex_unlock(&mu);
	free_deferred(dropped);
	free(c);
	return NCCL_SUCCESS;
}

// ncclCommSplit: every rank of c's clique calls it; ranks of one color
// make a communicator, ordered by key (then by their old rank); a rank of
// NCCL_SPLIT_NOCOLOR (-1) gets none. The caller waits for the others, as
// with NCCL.
EXPORT int ncclCommSplit(struct fake_comm *c, int color, int key, struct fake_comm **newcomm, void *config) {
	FAULT("ncclCommSplit");
	(void)config;
	if (!newcomm) return nccl_fail(NCCL_INVALID_ARGUMENT, "newcomm is NULL");
	if (color < -1) return nccl_fail(NCCL_INVALID_ARGUMENT, "color must be non-negative or NCCL_SPLIT_NOCOLOR");
	pthread_mutex_lock(&mu);
	if (!comm_live(c)) {
		pthread_mutex_unlock(&mu);
		return nccl_fail(NCCL_INVALID_ARGUMENT, "not a live communicator");
	}
	if (c->busy) {
		pthread_mutex_unlock(&mu);
		return nccl_fail(NCCL_INVALID_ARGUMENT, "Attempt to use communicator before the previous operation returned ncclSuccess");
	}
	struct clique *cl = c->cl;
	if (!cl->split) cl->split = calloc(1, sizeof *cl->split);
	struct split *sp = cl->split;
	sp->color[c->rank] = color;
	sp->key[c->rank] = key;
	if (++sp->arrived == cl->nranks) {
		static uint64_t split_keys = 1;
		for (int r = 0; r < cl->nranks; r++) {
			if (sp->color[r] < 0 || sp->made[r]) continue;
			// The ranks of r's color, by key then old rank.
			int members[MAX_RANKS], n = 0;
			for (int q = 0; q < cl->nranks; q++)
				if (sp->color[q] == sp->color[r]) members[n++] = q;
			for (int i = 1; i < n; i++)
				for (int j = i; j > 0 && (sp->key[members[j]] < sp->key[members[j - 1]]); j--) {
					int t = members[j];
					members[j] = members[j - 1];
					members[j - 1] = t;
				}
			uint64_t k = ++split_keys ^ (uint64_t)0x5b17 << 48;
			for (int i = 0; i < n; i++) {
				struct fake_comm *m;
				join(k, n, i, cl->ranks[members[i]]->device, &m);
				sp->made[members[i]] = m;
			}
		}
		sp->done = 1;
		pthread_cond_broadcast(&nccl_cond);
	}
	struct timespec deadline;
	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += 20;
	while (!sp->done)
		if (pthread_cond_timedwait(&nccl_cond, &mu, &deadline)) {
			pthread_mutex_unlock(&mu);
			return nccl_fail(NCCL_INTERNAL, "timed out waiting for the other ranks to split");
		}
	*newcomm = sp->made[c->rank];
	// Without a config of its own, the new communicator has c's: split
	// from a non-blocking one, the split is in progress for a while, on c
	// (as NCCL 2.28 leaves it) and on the new one.
	int in_progress = 0;
	if (c->nonblocking && !config) {
		c->busy = 2;
		if (*newcomm) {
			(*newcomm)->nonblocking = 1;
			(*newcomm)->busy = 2;
		}
		in_progress = 1;
	}
	if (++sp->left == cl->nranks) {
		free(sp);
		cl->split = NULL;
	}
	pthread_mutex_unlock(&mu);
	return in_progress ? NCCL_IN_PROGRESS : NCCL_SUCCESS;
}

EXPORT int ncclCommGetAsyncError(struct fake_comm *c, int *state) {
	FAULT("ncclCommGetAsyncError");
	if (!state) return nccl_fail(NCCL_INVALID_ARGUMENT, "state is NULL");
	pthread_mutex_lock(&mu);
	int ok = comm_live(c);
	struct deferred *ready = NULL;
	if (ok) {
		*state = c->cl->aborted ? NCCL_REMOTE_ERROR : c->cl->joined < c->cl->nranks ? NCCL_IN_PROGRESS : NCCL_SUCCESS;
		if (*state == NCCL_SUCCESS && c->busy) {
			*state = NCCL_IN_PROGRESS;
			// The first collective stays in progress until every rank
			// has called it, as NCCL's may (it connects the ranks): a
			// rank that never comes leaves it so. Later ones do not
			// wait for the others. A rank gone (destroyed) holds
			// nothing up: it came, or its abort ended the clique.
			int all = 1;
			for (int r = 0; r < c->cl->nranks && !c->connected; r++)
				if (c->cl->ranks[r] && c->cl->ranks[r]->seq < c->seq) all = 0;
			if (all && --c->busy == 0) {
				ready = take_deferred(c);
				c->connected = c->seq > 0;
			}
		}
	}
	pthread_mutex_unlock(&mu);
	// The calls in progress are done: their parts go on their streams.
	while (ready) {
		struct deferred *next = ready->next;
		queue_part(ready->p, ready->s);
		free(ready);
		ready = next;
	}
	return ok ? NCCL_SUCCESS : nccl_fail(NCCL_INVALID_ARGUMENT, "not a live communicator");
}

EXPORT int ncclCommAbort(struct fake_comm *c) {
	FAULT("ncclCommAbort");
	return comm_destroy(c, 1);
}


EXPORT int ncclCommRegister(struct fake_comm *c, void *buff, size_t size, void **handle) {
	FAULT("ncclCommRegister");
	if (!handle || !buff || !size) return nccl_fail(NCCL_INVALID_ARGUMENT, "bad argument");
	pthread_mutex_lock(&mu);
	int ok = comm_live(c);
	pthread_mutex_unlock(&mu);
	if (!ok) return nccl_fail(NCCL_INVALID_ARGUMENT, "not a live communicator");
	if (!range_ok((CUdeviceptr)(uintptr_t)buff, size)) return nccl_fail(NCCL_INVALID_ARGUMENT, "not device memory");
	struct fake_reg *r = malloc(sizeof *r);
	*r = (struct fake_reg){c, (CUdeviceptr)(uintptr_t)buff, size, NULL};
	pthread_mutex_lock(&mu);
	r->next = regs;
	regs = r;
	live_regs++;
	pthread_mutex_unlock(&mu);
	*handle = r;
	return NCCL_SUCCESS;
}

EXPORT int ncclCommDeregister(struct fake_comm *c, struct fake_reg *r) {
	FAULT("ncclCommDeregister");
	pthread_mutex_lock(&mu);
	int ok = 0;
	if (comm_live(c))
		for (struct fake_reg **pp = &regs; *pp; pp = &(*pp)->next)
			if (*pp == r && r->comm == c) {
				*pp = r->next;
				live_regs--;
				ok = 1;
				break;
			}
	pthread_mutex_unlock(&mu);
	if (!ok) return nccl_fail(NCCL_INVALID_ARGUMENT, "not a registration of this communicator");
	free(r);
	return NCCL_SUCCESS;
}

EXPORT int ncclMemAlloc(void **ptr, size_t size) {
	FAULT("ncclMemAlloc");
	if (!ptr || !size) return nccl_fail(NCCL_INVALID_ARGUMENT, "bad argument");
	if (!current) return nccl_fail(NCCL_INVALID_USAGE, "no current context");
	CUdeviceptr p;
	if (alloc_device(&p, size) != SUCCESS) return nccl_fail(NCCL_INTERNAL, "out of device memory");
	*ptr = (void *)(uintptr_t)p;
	return NCCL_SUCCESS;
}

EXPORT int ncclMemFree(void *ptr) {
	FAULT("ncclMemFree");
	if (!ptr || !range_ok((CUdeviceptr)(uintptr_t)ptr, 1)) return nccl_fail(NCCL_INVALID_ARGUMENT, "not ncclMemAlloc's memory");
	free_device(ptr);
	return NCCL_SUCCESS;
}

#define COMM_GETTER(name, expr)                                                   \
	EXPORT int name(struct fake_comm *c, int *out) {                              \
		FAULT(#name);                                                             \
		pthread_mutex_lock(&mu);                                                  \
		int ok = comm_live(c);                                                    \
		pthread_mutex_unlock(&mu);                                                \
		if (!ok || !out) return nccl_fail(NCCL_INVALID_ARGUMENT, "bad argument"); \
		*out = (expr);                                                            \
		return NCCL_SUCCESS;                                                      \
	}
COMM_GETTER(ncclCommCount, c->cl->nranks)
COMM_GETTER(ncclCommCuDevice, c->device)
COMM_GETTER(ncclCommUserRank, c->rank)

EXPORT int ncclGroupStart(void) {
	FAULT("ncclGroupStart");
	nccl_group_depth++;
	return NCCL_SUCCESS;
}

EXPORT int ncclGroupEnd(void) {
	if (nccl_group_depth == 0) return nccl_fail(NCCL_INVALID_USAGE, "ncclGroupEnd without ncclGroupStart");
	// The group ends even when ending it fails, as NCCL's does: a failed
	// end left counted would make this thread's later calls grouped.
	nccl_group_depth--;
	FAULT("ncclGroupEnd");
	if (nccl_group_depth > 0) return NCCL_SUCCESS;
	// The group's non-blocking communicators are in progress from here.
	int n = 0;
	pthread_mutex_lock(&mu);
	for (int i = 0; i < nccl_ngrouped; i++)
		if (comm_live(nccl_grouped[i]) && nccl_grouped[i]->deferred) {
			nccl_grouped[i]->busy = 2;
			n++;
		}
	pthread_mutex_unlock(&mu);
	nccl_ngrouped = 0;
	return n ? NCCL_IN_PROGRESS : NCCL_SUCCESS;
}

// collective checks a rank's call and queues its part on the stream.
static int collective(const char *name, enum coll_kind kind, const void *send, void *recv, size_t count,
	int dtype, int op, int root, struct fake_comm *c, CUstream s) {
	int code = fault_check(name);
	if (code) return code;
	size_t es = dtype_size(dtype);
	if (!es || dtype == 6 || dtype == 9) return nccl_fail(NCCL_INVALID_ARGUMENT, "unsupported data type");
	if (op < 0 || op > 4) return nccl_fail(NCCL_INVALID_ARGUMENT, "invalid reduction operation");
	pthread_mutex_lock(&mu);
	int ok = comm_live(c);
	int nranks = ok ? c->cl->nranks : 0, rank = ok ? c->rank : 0;
	int stream_ok = ok && s && stream_live(s) && s->ctx->device == c->device;
	int busy = ok && c->busy;
	int failed = ok && c->cl->aborted;
	pthread_mutex_unlock(&mu);
	if (!ok) return nccl_fail(NCCL_INVALID_ARGUMENT, "not a live communicator");
	// As NCCL's calls, which return the communicator's asynchronous error
	// (ncclCommGetAsyncError's) before queuing anything.
	if (failed) return nccl_fail(NCCL_REMOTE_ERROR, "a rank of the communicator aborted");
	if (busy) return nccl_fail(NCCL_INVALID_ARGUMENT, "Attempt to use communicator before the previous operation returned ncclSuccess");
	if (!stream_ok) return nccl_fail(NCCL_INVALID_ARGUMENT, "stream is not a live stream of the communicator's device");
	if (root < 0 || root >= nranks) return nccl_fail(NCCL_INVALID_ARGUMENT, "root out of range");
	// As NCCL's: a collective of no elements, its arguments checked, is
	// done; it queues nothing and looks at neither buffer.
	if (count == 0) return NCCL_SUCCESS;
	size_t in = count * es, out = count * es;
	if (kind == COLL_ALLGATHER) out *= nranks;
	if (kind == COLL_REDUCESCATTER) in *= nranks;
	int needs_send = kind != COLL_BROADCAST || rank == root;
	int needs_recv = kind != COLL_REDUCE || rank == root;
	if ((needs_send && !range_ok((CUdeviceptr)(uintptr_t)send, in)) || (needs_recv && !range_ok((CUdeviceptr)(uintptr_t)recv, out)))
		return nccl_fail(NCCL_INVALID_ARGUMENT, "buffer is not device memory of that size");
	struct coll_part *p = malloc(sizeof *p);
	*p = (struct coll_part){.comm = c, .seq = ++c->seq, .kind = kind, .send = send, .recv = recv,
		.count = count, .dtype = dtype, .op = op, .root = root};
	return submit(c, p, s);
}

// A message is the data of one send, taken when the send runs, until the
// matching receive (the same two ranks, the same number) copies it out.
struct message {
	struct clique *cl;
	int from, to;
	long seq;
	void *data;
	size_t bytes;
	int taken, waited; // waited: its sender waits until it is taken, then frees it
	struct message *next;
};
static struct message *messages;

// unlink_message takes m off the list and frees it, under mu.
static void unlink_message(struct message *m) {
	for (struct message **pp = &messages; *pp; pp = &(*pp)->next)
		if (*pp == m) {
			*pp = m->next;
			break;
		}
	free(m->data);
	free(m);
}

// run_p2p runs a send or a receive on its stream's worker. A send leaves
// its data and, outside a group, waits until it is received, as NCCL's
// does: two ranks that both send first, each before its receive and
// outside a group, wait for each other for ever, here as there. Inside a
// group the sends and receives progress together, so a send does not wait.
static void run_p2p(struct coll_part *p) {
	struct fake_comm *c = p->comm;
	size_t bytes = p->count * dtype_size(p->dtype);
	pthread_mutex_lock(&mu);
	if (p->kind == P2P_SEND) {
		struct message *m = calloc(1, sizeof *m);
		*m = (struct message){.cl = c->cl, .from = c->rank, .to = p->root, .seq = p->seq, .data = xmalloc(bytes),
			.bytes = bytes, .waited = !p->grouped};
		if (bytes) memcpy(m->data, p->send, bytes);
		m->next = messages;
		messages = m;
		pthread_cond_broadcast(&nccl_cond);
		if (m->waited) {
			while (!m->taken && !c->cl->aborted) pthread_cond_wait(&nccl_cond, &mu);
			unlink_message(m);
		}
	} else {
		struct message *m;
		for (;;) {
			for (m = messages; m; m = m->next)
				if (m->cl == c->cl && m->from == p->root && m->to == c->rank && m->seq == p->seq && !m->taken) break;
			if (m || c->cl->aborted) break;
			pthread_cond_wait(&nccl_cond, &mu);
		}
		if (m) {
			size_t n = m->bytes < bytes ? m->bytes : bytes;
			if (n) memcpy(p->recv, m->data, n);
			m->taken = 1;
			if (m->waited)
				pthread_cond_broadcast(&nccl_cond); // its sender frees it
			else
				unlink_message(m);
		}
	}
	part_done(c);
	pthread_mutex_unlock(&mu);
	free(p);
}

// p2p checks a rank's send or receive and queues it on the stream.
static int p2p(const char *name, enum coll_kind kind, const void *send, void *recv, size_t count, int dtype, int peer,
	struct fake_comm *c, CUstream s) {
	int code = fault_check(name);
	if (code) return code;
	size_t es = dtype_size(dtype);
	if (!es || dtype == 6 || dtype == 9) return nccl_fail(NCCL_INVALID_ARGUMENT, "unsupported data type");
	pthread_mutex_lock(&mu);
	int ok = comm_live(c);
	int nranks = ok ? c->cl->nranks : 0;
	int stream_ok = ok && s && stream_live(s) && s->ctx->device == c->device;
	int busy = ok && c->busy;
	int failed = ok && c->cl->aborted;
	pthread_mutex_unlock(&mu);
	if (!ok) return nccl_fail(NCCL_INVALID_ARGUMENT, "not a live communicator");
	// As NCCL's calls, which return the communicator's asynchronous error
	// (ncclCommGetAsyncError's) before queuing anything.
	if (failed) return nccl_fail(NCCL_REMOTE_ERROR, "a rank of the communicator aborted");
	if (busy) return nccl_fail(NCCL_INVALID_ARGUMENT, "Attempt to use communicator before the previous operation returned ncclSuccess");
	if (!stream_ok) return nccl_fail(NCCL_INVALID_ARGUMENT, "stream is not a live stream of the communicator's device");
	if (peer < 0 || peer >= nranks) return nccl_fail(NCCL_INVALID_ARGUMENT, "peer out of range");
	// A send or receive of no elements still meets its peer's, as NCCL's
	// does, but its buffer is not looked at.
	const void *buf = kind == P2P_SEND ? send : recv;
	if (count > 0 && !range_ok((CUdeviceptr)(uintptr_t)buf, count * es))
		return nccl_fail(NCCL_INVALID_ARGUMENT, "buffer is not device memory of that size");
	struct coll_part *p = malloc(sizeof *p);
	long seq = kind == P2P_SEND ? ++c->sent[peer] : ++c->received[peer];
	*p = (struct coll_part){.comm = c, .seq = seq, .kind = kind, .send = send, .recv = recv, .count = count,
		.dtype = dtype, .root = peer, .grouped = nccl_group_depth > 0};
	return submit(c, p, s);
}

EXPORT int ncclSend(const void *send, size_t count, int dtype, int peer, struct fake_comm *c, CUstream s) {
	return p2p("ncclSend", P2P_SEND, send, NULL, count, dtype, peer, c, s);
}

EXPORT int ncclRecv(void *recv, size_t count, int dtype, int peer, struct fake_comm *c, CUstream s) {
	return p2p("ncclRecv", P2P_RECV, NULL, recv, count, dtype, peer, c, s);
}

EXPORT int ncclAllReduce(const void *send, void *recv, size_t count, int dtype, int op, struct fake_comm *c, CUstream s) {
	return collective("ncclAllReduce", COLL_ALLREDUCE, send, recv, count, dtype, op, 0, c, s);
}

EXPORT int ncclBroadcast(const void *send, void *recv, size_t count, int dtype, int root, struct fake_comm *c, CUstream s) {
	return collective("ncclBroadcast", COLL_BROADCAST, send, recv, count, dtype, 0, root, c, s);
}

EXPORT int ncclReduce(const void *send, void *recv, size_t count, int dtype, int op, int root, struct fake_comm *c, CUstream s) {
	return collective("ncclReduce", COLL_REDUCE, send, recv, count, dtype, op, root, c, s);
}

EXPORT int ncclAllGather(const void *send, void *recv, size_t count, int dtype, struct fake_comm *c, CUstream s) {
	return collective("ncclAllGather", COLL_ALLGATHER, send, recv, count, dtype, 0, 0, c, s);
}

EXPORT int ncclReduceScatter(const void *send, void *recv, size_t count, int dtype, int op, struct fake_comm *c, CUstream s) {
	return collective("ncclReduceScatter", COLL_REDUCESCATTER, send, recv, count, dtype, op, 0, c, s);
}

