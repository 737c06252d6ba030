// Kernels compiled for the host by internal/hostcc (the tests' stand-in
// for NVRTC): the fake runs them, on the CPU, as a GPU would.
//
// Such a module is PTX-looking text whose entries name functions of a
// shared library, named on a line of the text (hostcc.LibraryLine). A
// launch runs later on its stream's worker, as any: its blocks one after
// another, each block's threads as fibers (fiber.c) in the order of their
// index, each until it returns or waits at a barrier: __syncthreads (the
// block's) or a warp shuffle (its warp's, where every lane deposits its
// value before any reads); a barrier opens once every thread it waits for
// has come (run_block). So block- and
// warp-synchronous code gives the GPU's results; threads that have
// returned count as arrived, as on the GPU. Threads that wait at barriers
// that can never open (some at a block's, the others at a warp's) are a
// kernel's bug: the launch fails (CUDA_ERROR_LAUNCH_FAILED), where a GPU
// would hang.
//
// A launch in thread block clusters runs each cluster's blocks together,
// each on an OS thread of its own (so that a kernel's static shared
// memory, thread-local in the shim, is each block's), and the blocks of a
// cluster wait for each other at the cluster's barrier
// (gocuda_hostcc_cluster_sync, barrier.cluster on a GPU) and reach each
// other's dynamic shared memory (gocuda_hostcc_map_shared, mapa). A
// block whose threads have all returned counts as arrived at its
// cluster's barriers; its shared memory stays until the whole cluster
// has run (a GPU's does not: a kernel must not let a block leave while
// another reads its memory, which the fake cannot see).

#include <dlfcn.h>

#include "fakecuda.h"

// ---- the ABI of internal/hostcc/shim.h ------------------------------------------

struct hc_dim3 {
	unsigned x, y, z;
};
struct hc_thread {
	struct hc_dim3 threadIdx, blockIdx, blockDim, gridDim;
	void *dynamic_shared;
	struct hc_dim3 clusterDim; // {1, 1, 1} without clusters
};
struct hc_ops {
	int abi;
	void (*syncthreads)(void);
	unsigned long long (*warp)(unsigned mask, unsigned long long v, int kind, int arg, int width);
	void (*trap)(const char *why);
	void (*cluster_sync)(void);
	void *(*map_shared)(const void *p, unsigned rank);
};
enum { SHFL_IDX, SHFL_UP, SHFL_DOWN, SHFL_XOR, BALLOT, SYNCWARP };
enum { HOSTCC_ABI = 2 };

static const char library_line[] = "// gocuda hostcc library: ";

// ---- the kernels, by library and name ---------------------------------------------

struct host_kernel {
	struct kernel k; // first: a launch's k is this
	char name[256];
	void (*entry)(const struct hc_thread *self, void **args);
	unsigned char pointer[KERNEL_PARAMS]; // parameter i is a pointer: checked at launch
	struct host_kernel *next;
	char lib[4096];
};

// Never freed, nor their libraries closed: a launch queued before its
// module's unload still runs, as the driver's does.
static pthread_mutex_t host_mu = PTHREAD_MUTEX_INITIALIZER;
static struct host_kernel *host_kernels;

static void host_run(struct launch *l);
static const struct hc_ops ops;

// describe reads a kernel's parameters from its library: sizes,
// alignments and which are pointers, laid out as cuLaunchKernel's.
static int describe(struct host_kernel *h, unsigned (*params)(unsigned *, unsigned)) {
	unsigned d[3 * KERNEL_PARAMS];
	unsigned n = params(d, 3 * KERNEL_PARAMS);
	if (n > KERNEL_PARAMS) return 0;
	size_t off = 0;
	for (unsigned i = 0; i < n; i++) {
		size_t size = d[3 * i], align = d[3 * i + 1] ? d[3 * i + 1] : 1;
		off = (off + align - 1) / align * align;
		h->k.size[i] = size;
		h->k.offset[i] = off;
		h->pointer[i] = (unsigned char)d[3 * i + 2];
		off += size;
	}
	h->k.nparams = (int)n;
	return off <= PARAM_BYTES;
}

// library_of copies the path of the library text names into lib; 0 if
// it names none.
static int library_of(const char *text, char lib[4096]) {
	const char *at = strstr(text, library_line);
	if (!at) return 0;
	at += sizeof library_line - 1;
	snprintf(lib, 4096, "%.*s", (int)strcspn(at, "\r\n"), at);
	return 1;
}

// A module whose library is gone (a kernel cache's image outliving the
// compiled library) is refused as a damaged image is, which a cache
// compiles again. The library stays open for host_kernel.
int host_image_ok(const char *text) {
	char lib[4096];
	return !library_of(text, lib) || dlopen(lib, RTLD_NOW | RTLD_LOCAL) != NULL;
}

const struct kernel *host_kernel(const char *text, const char *name) {
	char lib[4096];
	if (!library_of(text, lib)) return NULL;
	pthread_mutex_lock(&host_mu);
	struct host_kernel *h;
	for (h = host_kernels; h; h = h->next)
		if (!strcmp(h->lib, lib) && !strcmp(h->name, name)) break;
	if (h) goto out;
	void *so = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (!so) {
		fprintf(stderr, "fakecuda: loading a host-compiled kernel: %s\n", dlerror());
		goto out;
	}
	int (*bind)(const struct hc_ops *) = (int (*)(const struct hc_ops *))dlsym(so, "gocuda_hostcc_bind");
	char sym[192];
	snprintf(sym, sizeof sym, "gocuda_hostcc_run_%s", name);
	void (*entry)(const struct hc_thread *, void **) = (void (*)(const struct hc_thread *, void **))dlsym(so, sym);
	snprintf(sym, sizeof sym, "gocuda_hostcc_params_%s", name);
	unsigned (*params)(unsigned *, unsigned) = (unsigned (*)(unsigned *, unsigned))dlsym(so, sym);
	if (!bind || !entry || !params || bind(&ops) != HOSTCC_ABI) {
		fprintf(stderr, "fakecuda: %s: no host kernel %s of this fake's ABI\n", lib, name);
		goto out;
	}
	h = calloc(1, sizeof *h);
	snprintf(h->name, sizeof h->name, "%s", name);
	snprintf(h->lib, sizeof h->lib, "%s", lib);
	h->k.name = h->name;
	h->k.run = host_run;
	h->entry = entry;
	if (!describe(h, params)) {
		fprintf(stderr, "fakecuda: host kernel %s: too many parameters\n", name);
		free(h);
		h = NULL;
		goto out;
	}
	h->next = host_kernels;
	host_kernels = h;
out:
	pthread_mutex_unlock(&host_mu);
	return h ? &h->k : NULL;
}

// ---- fibers, kept for the next launch ---------------------------------------------

static pthread_mutex_t pool_mu = PTHREAD_MUTEX_INITIALIZER;
static struct fiber **pool;
static size_t npool, pool_cap;

static struct fiber *take_fiber(void) {
	struct fiber *f = NULL;
	pthread_mutex_lock(&pool_mu);
	if (npool) f = pool[--npool];
	pthread_mutex_unlock(&pool_mu);
	return f ? f : fiber_new();
}

static void give_fiber(struct fiber *f) {
	pthread_mutex_lock(&pool_mu);
	if (npool == pool_cap) {
		pool_cap = pool_cap ? 2 * pool_cap : 1024;
		pool = realloc(pool, pool_cap * sizeof *pool);
	}
	pool[npool++] = f;
	pthread_mutex_unlock(&pool_mu);
}

// ---- a block's threads -----------------------------------------------------------

enum state { T_RUN, T_BLOCK, T_WARP, T_CLUSTER, T_DONE, T_TRAPPED };

struct emu_thread {
	struct hc_thread abi; // the kernel's view of it
	struct fiber *fiber;  // while it has started and not returned
	enum state state;
	// A warp exchange it waits at: its op, and its value and result.
	unsigned mask;
	int kind, arg, width;
	unsigned long long value, result;
};

// A cluster's blocks, running together: its barrier (a generation
// count), the blocks still running, and each block's dynamic shared
// memory by its rank.
struct cluster {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	unsigned live, arrived, generation;
	int failed;
	unsigned n;    // blocks
	void **shared; // each block's dynamic shared memory, by rank
};

struct block {
	const struct host_kernel *h;
	struct cluster *cluster; // NULL: a launch without clusters
	unsigned rank;           // in its cluster
	size_t shared_bytes;     // its dynamic shared memory
	void **args;
	struct emu_thread *t;
	unsigned n;
	struct emu_thread *cur; // the thread running
	struct fiber **idle;    // fibers of threads that returned, for the next
	unsigned nidle;
	int failed; // a CUresult: the launch's error
};

// The block this OS thread runs (a stream's worker, one launch at a time).
static __thread struct block *running;

static void run_thread(void *arg) {
	struct emu_thread *t = arg;
	running->h->entry(&t->abi, running->args);
}

static void op_syncthreads(void) {
	struct emu_thread *me = running->cur;
	me->state = T_BLOCK;
	fiber_yield(me->fiber);
}

static unsigned long long op_warp(unsigned mask, unsigned long long v, int kind, int arg, int width) {
	struct emu_thread *me = running->cur;
	me->mask = mask, me->value = v, me->kind = kind, me->arg = arg;
	me->width = width > 0 && width <= 32 && !(width & (width - 1)) ? width : 32;
	me->state = T_WARP;
	fiber_yield(me->fiber);
	return me->result;
}

static void op_trap(const char *why) {
	struct emu_thread *me = running->cur;
	fprintf(stderr, "fakecuda: kernel %s: %s (block %u,%u,%u thread %u,%u,%u)\n", running->h->name, why, me->abi.blockIdx.x,
	        me->abi.blockIdx.y, me->abi.blockIdx.z, me->abi.threadIdx.x, me->abi.threadIdx.y, me->abi.threadIdx.z);
	me->state = T_TRAPPED;
	fiber_yield(me->fiber); // never resumed
}

static void op_cluster_sync(void) {
	struct emu_thread *me = running->cur;
	me->state = T_CLUSTER;
	fiber_yield(me->fiber);
}

// op_map_shared is the address in block rank of its cluster of p, an
// address in the caller's dynamic shared memory. The rest is a kernel's
// bug, as on a GPU: a trap.
static void *op_map_shared(const void *p, unsigned rank) {
	struct block *b = running;
	const char *base = b->cur->abi.dynamic_shared;
	const struct cluster *c = b->cluster;
	if (!base || (const char *)p < base || (const char *)p > base + b->shared_bytes) {
		op_trap("mapa of an address outside the block's dynamic shared memory");
		return NULL;
	}
	if (rank >= (c ? c->n : 1)) {
		op_trap("mapa to a rank outside the cluster");
		return NULL;
	}
	return c ? (char *)c->shared[rank] + ((const char *)p - base) : (void *)p;
}

static const struct hc_ops ops = {HOSTCC_ABI, op_syncthreads, op_warp, op_trap, op_cluster_sync, op_map_shared};

// cluster_arrive waits at c's barrier until every running block of c has
// come (or one failed); 0, or the launch's error.
static int cluster_arrive(struct cluster *c) {
	pthread_mutex_lock(&c->mu);
	const unsigned gen = c->generation;
	if (++c->arrived == c->live) {
		c->arrived = 0;
		c->generation++;
		pthread_cond_broadcast(&c->cv);
	}
	while (gen == c->generation && !c->failed) pthread_cond_wait(&c->cv, &c->mu);
	const int failed = c->failed;
	pthread_mutex_unlock(&c->mu);
	return failed ? LAUNCH_FAILED : 0;
}

// cluster_leave takes a block out of c's barriers, as finished (failed
// 0) or failed: a block that waits for it then goes on, or fails too.
static void cluster_leave(struct cluster *c, int failed) {
	pthread_mutex_lock(&c->mu);
	c->live--;
	if (failed) c->failed = 1;
	if (c->arrived && c->arrived == c->live) {
		c->arrived = 0;
		c->generation++;
	}
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->mu);
}

// exchange lets warp w's exchange go, if every lane it needs has come:
// each waiting lane gets its op's value. It returns whether it did.
static int exchange(struct block *b, unsigned w) {
	struct emu_thread *lane = b->t + 32 * w;
	unsigned lanes = b->n - 32 * w < 32 ? b->n - 32 * w : 32;
	unsigned waiting = 0, live = 0, need = 0;
	for (unsigned i = 0; i < lanes; i++) {
		if (lane[i].state != T_DONE) live |= 1u << i;
		if (lane[i].state == T_WARP) waiting |= 1u << i, need |= lane[i].mask;
	}
	if (!waiting || (need & live & ~waiting)) return 0;
	for (unsigned i = 0; i < lanes; i++) {
		struct emu_thread *t = &lane[i];
		if (t->state != T_WARP) continue;
		unsigned width = (unsigned)t->width, base = i / width * width, src = i;
		switch (t->kind) {
		case SHFL_IDX: src = base + ((unsigned)t->arg & (width - 1)); break;
		case SHFL_UP: src = i - base >= (unsigned)t->arg ? i - (unsigned)t->arg : i; break;
		case SHFL_DOWN: src = i - base + (unsigned)t->arg < width ? i + (unsigned)t->arg : i; break;
		case SHFL_XOR: src = i ^ (unsigned)t->arg; src = src < base + width ? src : i; break;
		}
		if (t->kind == BALLOT) {
			unsigned bits = 0;
			for (unsigned j = 0; j < lanes; j++)
				if (lane[j].state == T_WARP && lane[j].value && (t->mask >> j & 1)) bits |= 1u << j;
			t->result = bits;
		} else {
			t->result = src < lanes && lane[src].state == T_WARP ? lane[src].value : t->value;
		}
	}
	for (unsigned i = 0; i < lanes; i++)
		if (lane[i].state == T_WARP) lane[i].state = T_RUN;
	return 1;
}

// FAKECUDA_HOST_SCHEDULE=reverse runs the blocks of a grid, the warps of
// a block and the lanes of a warp last first: a kernel whose result changes with it has
// a race (a shared memory read not behind the barrier after its write, a
// block that counts on another's having run), which a GPU's schedule may
// or may not show.
static int reverse_schedule(void) {
	static int v = -1;
	if (v < 0) {
		const char *e = getenv("FAKECUDA_HOST_SCHEDULE");
		v = e && !strcmp(e, "reverse");
	}
	return v;
}

// run_lanes runs warp w's lanes that can run, each until it returns or
// waits; 0, or the launch's error.
static int run_lanes(struct block *b, unsigned w) {
	unsigned end = 32 * w + 32 < b->n ? 32 * w + 32 : b->n;
	for (unsigned k = 32 * w; k < end; k++) {
		unsigned i = reverse_schedule() ? end - 1 - (k - 32 * w) : k;
		struct emu_thread *t = &b->t[i];
		if (t->state != T_RUN) continue;
		if (!t->fiber) {
			t->fiber = b->nidle ? b->idle[--b->nidle] : take_fiber();
			if (!t->fiber) return OUT_OF_MEMORY;
			fiber_start(t->fiber, run_thread, t);
		}
		b->cur = t;
		if (fiber_resume(t->fiber)) {
			t->state = T_DONE;
			b->idle[b->nidle++] = t->fiber;
			t->fiber = NULL;
		} else if (t->state == T_TRAPPED) {
			t->state = T_DONE;
			t->fiber = NULL; // stopped mid-kernel: not reusable
			return LAUNCH_FAILED;
		}
	}
	return 0;
}

// run_block runs b's threads to their end; 0, or the launch's error. A
// warp at a time: its lanes, then its exchange and its lanes again, until
// they wait at the block's barrier, have returned, or wait for a lane
// that never comes; then the next warp. Once every warp is so, the block
// barrier opens, if every thread that has not returned waits there.
static int run_block(struct block *b) {
	for (unsigned i = 0; i < b->n; i++) b->t[i].state = T_RUN, b->t[i].fiber = NULL;
	for (;;) {
		unsigned warps = (b->n + 31) / 32;
		for (unsigned k = 0; k < warps; k++) {
			unsigned w = reverse_schedule() ? warps - 1 - k : k;
			do {
				int err = run_lanes(b, w);
				if (err) return err;
			} while (exchange(b, w));
		}
		int done = 1, warp = 0, block = 0, cluster = 0;
		for (unsigned i = 0; i < b->n; i++) {
			if (b->t[i].state != T_DONE) done = 0;
			warp |= b->t[i].state == T_WARP;
			block |= b->t[i].state == T_BLOCK;
			cluster |= b->t[i].state == T_CLUSTER;
		}
		if (done) return 0;
		if (warp || (block && cluster)) {
			fprintf(stderr, "fakecuda: kernel %s: block %u,%u,%u: its threads wait at barriers that cannot open (%s)\n", b->h->name,
			        b->t[0].abi.blockIdx.x, b->t[0].abi.blockIdx.y, b->t[0].abi.blockIdx.z,
			        warp ? "a warp's and another" : "the block's and the cluster's");
			return LAUNCH_FAILED; // the waiting fibers are lost: a GPU would hang
		}
		// The block's barrier, or the cluster's (a block's own without
		// clusters: a cluster of one).
		if (cluster && b->cluster) {
			int err = cluster_arrive(b->cluster);
			if (err) return err;
		}
		const enum state waiting = cluster ? T_CLUSTER : T_BLOCK;
		for (unsigned i = 0; i < b->n; i++)
			if (b->t[i].state == waiting) b->t[i].state = T_RUN;
	}
}

// place sets b's threads' indices for block idx of launch l.
static void place(struct block *b, const struct launch *l, struct hc_dim3 idx, void *shared) {
	for (unsigned i = 0; i < b->n; i++) {
		struct hc_thread *t = &b->t[i].abi;
		t->threadIdx = (struct hc_dim3){i % l->block[0], i / l->block[0] % l->block[1], i / (l->block[0] * l->block[1])};
		t->blockIdx = idx;
		t->blockDim = (struct hc_dim3){l->block[0], l->block[1], l->block[2]};
		t->gridDim = (struct hc_dim3){l->grid[0], l->grid[1], l->grid[2]};
		t->dynamic_shared = shared;
		t->clusterDim = (struct hc_dim3){l->cluster[0], l->cluster[1], l->cluster[2]};
	}
}

// cluster_block runs one block of a cluster on its own OS thread.
static void *cluster_block(void *arg) {
	struct block *b = arg;
	running = b;
	b->failed = run_block(b);
	running = NULL;
	cluster_leave(b->cluster, b->failed);
	return NULL;
}

// run_clusters runs l's clusters one after another, the blocks of each
// together, blocks[0] on this thread and the others on threads of their
// own; 0, or the launch's error.
static int run_clusters(const struct launch *l, struct block *blocks, void **shared, unsigned cn) {
	const unsigned cx = l->cluster[0], cy = l->cluster[1], cz = l->cluster[2];
	const unsigned long long clusters = (unsigned long long)(l->grid[0] / cx) * (l->grid[1] / cy) * (l->grid[2] / cz);
	pthread_t *th = calloc(cn, sizeof *th);
	if (!th) return OUT_OF_MEMORY;
	int err = 0;
	for (unsigned long long k = 0; k < clusters && !err; k++) {
		const unsigned long long q = reverse_schedule() ? clusters - 1 - k : k;
		const unsigned qx = (unsigned)(q % (l->grid[0] / cx)), qy = (unsigned)(q / (l->grid[0] / cx) % (l->grid[1] / cy)),
		               qz = (unsigned)(q / (l->grid[0] / cx) / (l->grid[1] / cy));
		struct cluster c = {.live = cn, .n = cn, .shared = shared};
		pthread_mutex_init(&c.mu, NULL);
		pthread_cond_init(&c.cv, NULL);
		for (unsigned r = 0; r < cn; r++) {
			const struct hc_dim3 idx = {qx * cx + r % cx, qy * cy + r / cx % cy, qz * cz + r / (cx * cy)};
			blocks[r].cluster = &c, blocks[r].rank = r, blocks[r].failed = 0;
			place(&blocks[r], l, idx, shared[r]);
		}
		unsigned started = 1;
		for (; started < cn; started++)
			if (pthread_create(&th[started], NULL, cluster_block, &blocks[started])) break;
		for (unsigned r = started; r < cn; r++) cluster_leave(&c, 1); // the others fail at their barrier
		if (started < cn) err = OUT_OF_MEMORY;
		cluster_block(&blocks[0]);
		running = &blocks[0]; // host_run's, again
		for (unsigned r = 1; r < started; r++) pthread_join(th[r], NULL);
		for (unsigned r = 0; r < started && !err; r++) err = blocks[r].failed;
		pthread_cond_destroy(&c.cv);
		pthread_mutex_destroy(&c.mu);
	}
	free(th);
	return err;
}

// host_run runs a launch of a host kernel, on its stream's worker.
static void host_run(struct launch *l) {
	const struct host_kernel *h = (const struct host_kernel *)l->k;
	void *args[KERNEL_PARAMS];
	for (int i = 0; i < h->k.nparams; i++) {
		args[i] = l->params + h->k.offset[i];
		// The cheap part of a GPU's memory protection: a pointer
		// argument, unless null, points into (or just past) an
		// allocation. What a kernel then touches is not checked.
		CUdeviceptr p;
		memcpy(&p, args[i], sizeof p);
		if (h->pointer[i] && p && !range_ok(p, 0)) {
			launch_fault(l, ILLEGAL_ADDRESS);
			return;
		}
	}
	const unsigned n = l->block[0] * l->block[1] * l->block[2];
	// A block at a time, or a cluster's blocks at once.
	const unsigned cn = l->cluster[0] * l->cluster[1] * l->cluster[2];
	struct block *blocks = calloc(cn, sizeof *blocks);
	void **shared = calloc(cn, sizeof *shared);
	int failed = blocks && shared ? 0 : OUT_OF_MEMORY;
	for (unsigned r = 0; r < cn && !failed; r++) {
		blocks[r] = (struct block){.h = h, .args = args, .n = n, .shared_bytes = l->shared};
		blocks[r].t = calloc(n, sizeof *blocks[r].t);
		blocks[r].idle = calloc(n, sizeof *blocks[r].idle);
		shared[r] = l->shared ? aligned_alloc(128, (l->shared + 127) / 128 * 128) : NULL;
		if (!blocks[r].t || !blocks[r].idle || (l->shared && !shared[r])) failed = OUT_OF_MEMORY;
	}
	running = blocks;
	if (!failed && cn > 1) failed = run_clusters(l, blocks, shared, cn);
	const unsigned long long grid = (unsigned long long)l->grid[0] * l->grid[1] * l->grid[2];
	for (unsigned long long k = 0; k < grid && !failed && cn == 1; k++) {
		const unsigned long long j = reverse_schedule() ? grid - 1 - k : k;
		place(&blocks[0], l, (struct hc_dim3){(unsigned)(j % l->grid[0]), (unsigned)(j / l->grid[0] % l->grid[1]), (unsigned)(j / l->grid[0] / l->grid[1])}, shared[0]);
		failed = run_block(&blocks[0]);
	}
	running = NULL;
	if (failed) launch_fault(l, failed);
	for (unsigned r = 0; blocks && r < cn; r++) {
		for (unsigned i = 0; i < blocks[r].nidle; i++) give_fiber(blocks[r].idle[i]);
		free(blocks[r].t);
		free(blocks[r].idle);
	}
	for (unsigned r = 0; shared && r < cn; r++) free(shared[r]);
	free(blocks);
	free(shared);
}
