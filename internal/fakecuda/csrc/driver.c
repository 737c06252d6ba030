// A fake libcuda for gocuda's tests on machines without a GPU.
//
// It behaves like the real driver where a test can tell:
//   - the current context is per thread; calls that need one return
//     CUDA_ERROR_INVALID_CONTEXT (201) when none is current;
//   - every allocation is recorded, so an out-of-range copy, a double free or
//     a leak is seen (the fake doubles as a memory checker);
//   - each stream has a worker thread that runs its work later, after a
//     delay, so a missing synchronize shows up as a wrong result; so has
//     each context's legacy default stream, which runs what the real
//     driver may finish after a synchronous call returns: a copy from
//     pageable memory (staged first, as the driver does), a
//     device-to-device copy, a memset;
//   - any function can be made to fail on its Nth call (fakecu_fail).
// "Device memory" is host memory from malloc.
//
// It also answers NCCL's calls (point GOCUDA_LIBNCCL at it): communicators
// of ranks in one process, whose collectives run on the streams' workers and
// wait there for every rank, as NCCL's kernels do.
//
// Environment: FAKECUDA_DEVICES (default 1), FAKECUDA_MEMORY (bytes per
// device, default 8 GiB), FAKECUDA_STREAM_DELAY_US (default 100),
// FAKECUDA_PEER (1, the default: devices can access each other's memory),
// FAKECUDA_DRIVER_VERSION (default 13000).


#include "fakecuda.h"

#include <sys/mman.h>


pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
int initialized;
int ndevices = 1;
static size_t device_memory = (size_t)8 << 30;
static long stream_delay_us = 100;
static int peer_capable = 1;
static int peer_enabled[8][8]; // [from context's device][peer's device]; 8 is MAX_DEVICES

// ---- fault injection -------------------------------------------------------

struct fault {
	char name[64];
	long remaining; // calls left before the failing one
	int code;
	int active;
};
static struct fault faults[16];

static long calls; // driver calls made, every function counted (fakecu_calls)

// Calls of each function since fakecu_count_reset, for the fault sweep.
static struct {
	const char *name; // the literal FAULT was given
	long n;
} counts[256];
static int ncounts;

static void count_call(const char *name) {
	for (int i = 0; i < ncounts; i++) {
		if (counts[i].name == name || !strcmp(counts[i].name, name)) {
			counts[i].n++;
			return;
		}
	}
	if (ncounts < 256) {
		counts[ncounts].name = name;
		counts[ncounts++].n = 1;
	}
}

int fault_check(const char *name) {
	__atomic_add_fetch(&calls, 1, __ATOMIC_RELAXED);
	int code = 0;
	pthread_mutex_lock(&mu);
	count_call(name);
	for (int i = 0; i < 16; i++) {
		struct fault *f = &faults[i];
		if (!f->active || strcmp(f->name, name) != 0) continue;
		if (--f->remaining == 0) {
			f->active = 0;
			code = f->code;
		}
	}
	pthread_mutex_unlock(&mu);
	return code;
}


// fakecu_fail makes the nth call from now (1 = the next) of the named
// function return code. It returns 0, or -1 when the table is full.
EXPORT int fakecu_fail(const char *name, int nth, int code) {
	int rc = -1;
	pthread_mutex_lock(&mu);
	for (int i = 0; i < 16; i++) {
		if (faults[i].active) continue;
		snprintf(faults[i].name, sizeof faults[i].name, "%s", name);
		faults[i].remaining = nth;
		faults[i].code = code;
		faults[i].active = 1;
		rc = 0;
		break;
	}
	pthread_mutex_unlock(&mu);
	return rc;
}

// fakecu_calls returns how many calls of the fake's CUDA and NCCL
// functions were made so far.
EXPORT long fakecu_calls(void) { return __atomic_load_n(&calls, __ATOMIC_RELAXED); }

// fakecu_counts writes "name count" lines, one for each function called
// since the last fakecu_count_reset, into buf (NUL-terminated); it returns
// the length the whole text needs.
EXPORT long fakecu_counts(char *buf, long size) {
	long n = 0;
	pthread_mutex_lock(&mu);
	for (int i = 0; i < ncounts; i++) {
		if (!counts[i].n) continue;
		int w = snprintf(n < size ? buf + n : NULL, n < size ? (size_t)(size - n) : 0, "%s %ld\n", counts[i].name, counts[i].n);
		n += w;
	}
	pthread_mutex_unlock(&mu);
	return n;
}

EXPORT void fakecu_count_reset(void) {
	pthread_mutex_lock(&mu);
	for (int i = 0; i < ncounts; i++) counts[i].n = 0;
	pthread_mutex_unlock(&mu);
}

// fakecu_pending returns how many faults asked for have not fired yet.
EXPORT int fakecu_pending(void) {
	int n = 0;
	pthread_mutex_lock(&mu);
	for (int i = 0; i < 16; i++) n += faults[i].active;
	pthread_mutex_unlock(&mu);
	return n;
}

EXPORT void fakecu_reset_faults(void) {
	pthread_mutex_lock(&mu);
	memset(faults, 0, sizeof faults);
	pthread_mutex_unlock(&mu);
}

// ---- contexts --------------------------------------------------------------

struct fake_ctx primary[MAX_DEVICES];
__thread CUcontext current;

int ctx_live(CUcontext c) { return c && c >= primary && c < primary + ndevices && c->refs > 0; }


// ---- allocation records ----------------------------------------------------


static struct record *records;
static long live[3];

struct record *records_head(void) { return records; }

struct record *find_base(uintptr_t base, enum kind k) {
	for (struct record *r = records; r; r = r->next)
		if (r->kind == k && r->base == base) return r;
	return NULL;
}

// range_ok reports whether [p, p+n) lies inside one live device allocation.
int range_ok(CUdeviceptr p, size_t n) {
	int ok = 0;
	pthread_mutex_lock(&mu);
	// A range may span records that adjoin (mappings of virtual memory
	// next to each other): each part must lie in an accessible one.
	for (int more = 1; more;) {
		more = 0;
		for (struct record *r = records; r; r = r->next) {
			if (r->kind != KIND_DEVICE || r->no_access) continue;
			if (p >= r->base && p - r->base <= r->size && n <= r->size - (p - r->base)) {
				ok = 1;
				break;
			}
			if (r->vmm && p >= r->base && p - r->base < r->size) {
				size_t part = r->size - (p - r->base);
				p += part, n -= part, more = 1;
				break;
			}
		}
	}
	pthread_mutex_unlock(&mu);
	return ok;
}

void add_record(uintptr_t base, size_t size, enum kind k, CUcontext ctx) {
	struct record *r = calloc(1, sizeof *r);
	r->base = base;
	r->size = size;
	r->kind = k;
	r->ctx = ctx;
	r->next = records;
	records = r;
	live[k]++;
}

void remove_record(struct record *dead) {
	for (struct record **pp = &records; *pp; pp = &(*pp)->next) {
		if (*pp == dead) {
			*pp = dead->next;
			live[dead->kind]--;
			free(dead);
			return;
		}
	}
}

// fakecu_live returns how many objects of a kind are alive: "device",
// "host" (page-locked allocations), "registered", "stream", "event", "comm"
// (NCCL communicators), "library", "vmm" (reservations and physical
// allocations of virtual memory).
static long live_streams, live_events;
long live_comms;
EXPORT long fakecu_live(const char *kind) {
	long n = -1;
	pthread_mutex_lock(&mu);
	if (!strcmp(kind, "device")) n = live[KIND_DEVICE];
	else if (!strcmp(kind, "host")) n = live[KIND_HOST];
	else if (!strcmp(kind, "registered")) n = live[KIND_REGISTERED];
	else if (!strcmp(kind, "stream")) n = live_streams;
	else if (!strcmp(kind, "event")) n = live_events;
	else if (!strcmp(kind, "comm")) n = live_comms;
	else if (!strcmp(kind, "ncclreg")) n = live_regs;
	else if (!strcmp(kind, "pool")) n = live_pools;
	else if (!strcmp(kind, "graph")) n = live_graphs;
	else if (!strcmp(kind, "graphexec")) n = live_execs;
	else if (!strcmp(kind, "blas")) n = live_blas;
	else if (!strcmp(kind, "rand")) n = live_rand;
	else if (!strcmp(kind, "fft")) n = live_fft;
	else if (!strcmp(kind, "sparse")) n = live_sparse;
	else if (!strcmp(kind, "dnn")) n = live_dnn;
	else if (!strcmp(kind, "ipc")) n = live_ipc;
	else if (!strcmp(kind, "library")) n = live_libraries;
	else if (!strcmp(kind, "vmm")) n = live_vmm;
	pthread_mutex_unlock(&mu);
	return n;
}

// ---- streams and events ----------------------------------------------------




static struct fake_stream *streams;
#define MAX_EVENTS 4096
static CUevent events[MAX_EVENTS];
static pthread_rwlock_t streams_lock = PTHREAD_RWLOCK_INITIALIZER;
static pthread_cond_t event_cond = PTHREAD_COND_INITIALIZER;

static void fill(void *dst, enum op_kind k, unsigned v, size_t n) {
	switch (k) {
	case OP_SET8: memset(dst, (int)(v & 0xff), n); break;
	case OP_SET16: for (size_t i = 0; i < n; i++) ((uint16_t *)dst)[i] = (uint16_t)v; break;
	case OP_SET32: for (size_t i = 0; i < n; i++) ((uint32_t *)dst)[i] = (uint32_t)v; break;
	default: break;
	}
}

static void record_now(CUevent e) {
	pthread_mutex_lock(&mu);
	clock_gettime(CLOCK_MONOTONIC, &e->when);
	e->completed++;
	pthread_cond_broadcast(&event_cond);
	pthread_mutex_unlock(&mu);
}


// Host ranges of a copy, as the driver classes them: wholly outside
// page-locked memory (pageable), wholly inside one page-locked allocation
// or registration (locked), or neither (split).
enum host_range { HOST_PAGEABLE, HOST_LOCKED, HOST_SPLIT };
static enum host_range host_range(const void *p, size_t n);

// faulted reports whether o, a copy or memset, touches memory gone since
// it was queued, and sets its context's sticky error then (see struct op).
static int faulted(struct op *o) {
	if (!o->ctx || o->n == 0) return 0;
	size_t bytes = o->n * (o->kind == OP_SET16 ? 2 : o->kind == OP_SET32 ? 4 : 1);
	if ((o->checks & OP_CHECK_LOCKED) && host_range(o->host, bytes) != HOST_LOCKED) {
		o->ctx->sticky = LAUNCH_FAILED;
		return 1;
	}
	if (((o->checks & OP_CHECK_DST) && !range_ok((CUdeviceptr)(uintptr_t)o->dst, bytes)) ||
	    ((o->checks & OP_CHECK_SRC) && !range_ok((CUdeviceptr)(uintptr_t)o->src, bytes))) {
		o->ctx->sticky = ILLEGAL_ADDRESS;
		return 1;
	}
	return 0;
}

void run_op(struct op *o) {
	switch (o->kind) {
	case OP_COPY:
		if (!faulted(o)) memmove(o->dst, o->src, o->n);
		break;
	case OP_COPY_STAGED: // src is the fake's own staging copy
		if (!faulted(o)) memmove(o->dst, o->src, o->n);
		free((void *)o->src);
		break;
	case OP_SET8: case OP_SET16: case OP_SET32:
		if (!faulted(o)) fill(o->dst, o->kind, o->value, o->n);
		break;
	case OP_RECORD: record_now(o->event); break;
	case OP_WAIT:
		pthread_mutex_lock(&mu);
		while (o->event->completed < o->target) pthread_cond_wait(&event_cond, &mu);
		pthread_mutex_unlock(&mu);
		break;
	case OP_KERNEL:
		run_kernel(o->launch);
		free(o->launch);
		break;
	case OP_NCCL:
		run_collective(o->coll);
		break;
	case OP_FREE: free_device(o->dst); break;
	case OP_BLAS:
		run_blas(o->blas);
		free(o->blas);
		break;
	case OP_LIB:
		o->job->run(o->job);
		free(o->job);
		break;
	case OP_COND: case OP_CONDRESET: run_conditional(o); break;
	case OP_HOST: ((void (*)(void *))o->src)((void *)o->n); break; // a host node: fn(userData)
	}
}

static void *worker(void *arg) {
	struct fake_stream *s = arg;
	pthread_mutex_lock(&s->mu);
	for (;;) {
		while (!s->head && !s->stopping) pthread_cond_wait(&s->cond, &s->mu);
		if (!s->head && s->stopping) break;
		struct op *o = s->head;
		s->busy = 1;
		pthread_mutex_unlock(&s->mu);
		if (stream_delay_us > 0 && o->kind != OP_WAIT) usleep((useconds_t)stream_delay_us);
		run_op(o);
		pthread_mutex_lock(&s->mu);
		s->head = o->next;
		if (!s->head) s->tail = NULL;
		s->busy = 0;
		free(o);
		pthread_cond_broadcast(&s->cond);
	}
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

int stream_live(CUstream s) {
	for (struct fake_stream *p = streams; p; p = p->next_in_list)
		if (p == s) return 1;
	return 0;
}

// enqueue runs o on s later, or now when s is the NULL stream.
CUresult enqueue(CUstream s, struct op o) {
	if (!s) {
		run_op(&o);
		return SUCCESS;
	}
	pthread_mutex_lock(&mu);
	int ok = stream_live(s);
	pthread_mutex_unlock(&mu);
	if (!ok) return INVALID_HANDLE;
	if (s->capture) return capture_op(s, o);
	struct op *p = malloc(sizeof *p);
	*p = o;
	p->next = NULL;
	pthread_mutex_lock(&s->mu);
	if (s->tail) s->tail->next = p;
	else s->head = p;
	s->tail = p;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->mu);
	return SUCCESS;
}

CUresult enqueue_job(CUstream s, struct lib_job *job) {
	CUresult r = enqueue(s, (struct op){.kind = OP_LIB, .job = job});
	if (r != SUCCESS) free(job);
	return r;
}

static void drain(CUstream s) {
	pthread_mutex_lock(&s->mu);
	while (s->head) pthread_cond_wait(&s->cond, &s->mu);
	pthread_mutex_unlock(&s->mu);
}

// ---- initialization, versions, errors --------------------------------------

EXPORT CUresult cuInit(unsigned int flags) {
	FAULT("cuInit");
	if (flags != 0) return INVALID_VALUE;
	pthread_mutex_lock(&mu);
	if (!initialized) {
		const char *v;
		if ((v = getenv("FAKECUDA_DEVICES"))) ndevices = atoi(v);
		if (ndevices < 0) ndevices = 0;
		if (ndevices > MAX_DEVICES) ndevices = MAX_DEVICES;
		if ((v = getenv("FAKECUDA_MEMORY"))) device_memory = strtoull(v, NULL, 10);
		if ((v = getenv("FAKECUDA_STREAM_DELAY_US"))) stream_delay_us = atol(v);
		if ((v = getenv("FAKECUDA_PEER"))) peer_capable = atoi(v);
		for (int i = 0; i < MAX_DEVICES; i++) primary[i].device = i;
		initialized = 1;
	}
	int n = ndevices;
	pthread_mutex_unlock(&mu);
	return n == 0 ? NO_DEVICE : SUCCESS;
}

EXPORT CUresult cuDriverGetVersion(int *v) {
	FAULT("cuDriverGetVersion");
	if (!v) return INVALID_VALUE;
	// FAKECUDA_DRIVER_VERSION ("12030") plays an older driver.
	const char *e = getenv("FAKECUDA_DRIVER_VERSION");
	*v = e ? atoi(e) : 13000;
	return SUCCESS;
}


static CUresult error_lookup(CUresult e, const char **p, int text) {
	if (!p) return INVALID_VALUE;
	for (size_t i = 0; i < sizeof cu_results / sizeof cu_results[0]; i++) {
		if (cu_results[i].code == e) {
			*p = text ? cu_results[i].text : cu_results[i].name;
			return SUCCESS;
		}
	}
	*p = NULL;
	return INVALID_VALUE;
}

EXPORT CUresult cuGetErrorName(CUresult e, const char **p) { return error_lookup(e, p, 0); }
EXPORT CUresult cuGetErrorString(CUresult e, const char **p) { return error_lookup(e, p, 1); }

// ---- devices ---------------------------------------------------------------

EXPORT CUresult cuDeviceGetCount(int *n) {
	FAULT("cuDeviceGetCount");
	REQUIRE_INIT();
	if (!n) return INVALID_VALUE;
	*n = ndevices;
	return SUCCESS;
}

EXPORT CUresult cuDeviceGet(CUdevice *d, int ordinal) {
	FAULT("cuDeviceGet");
	REQUIRE_INIT();
	if (!d) return INVALID_VALUE;
	if (ordinal < 0 || ordinal >= ndevices) return INVALID_DEVICE;
	*d = ordinal;
	return SUCCESS;
}

#define REQUIRE_DEVICE(d) \
	do { REQUIRE_INIT(); if ((d) < 0 || (d) >= ndevices) return INVALID_DEVICE; } while (0)

EXPORT CUresult cuDeviceGetName(char *name, int len, CUdevice d) {
	FAULT("cuDeviceGetName");
	REQUIRE_DEVICE(d);
	if (!name || len <= 0) return INVALID_VALUE;
	snprintf(name, (size_t)len, "gocuda fake device %d", d);
	return SUCCESS;
}

EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice d) {
	FAULT("cuDeviceTotalMem_v2");
	REQUIRE_DEVICE(d);
	if (!bytes) return INVALID_VALUE;
	*bytes = device_memory;
	return SUCCESS;
}

// concurrent_managed is whether the devices have concurrent managed
// access (see the managed memory below).
static int concurrent_managed(void) {
	const char *v = getenv("FAKECUDA_CONCURRENT_MANAGED");
	return !v || strcmp(v, "0") != 0;
}

// compute_capability is the devices' major*10+minor: 9.0, or
// FAKECUDA_COMPUTE_CAPABILITY's ("8.0") to play an older device.
static int compute_capability(void) {
	const char *v = getenv("FAKECUDA_COMPUTE_CAPABILITY");
	int major, minor;
	if (v && sscanf(v, "%d.%d", &major, &minor) == 2) return major * 10 + minor;
	return 90;
}

int device_attribute(int attr, CUdevice d) {
	(void)d;
	switch (attr) {
	case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: return 1024;
	case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: return 1024;
	case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: return 64;
	case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: return 2147483647;
	case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: return 65535;
	case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: return 49152;
	case CU_DEVICE_ATTRIBUTE_WARP_SIZE: return 32;
	case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: return 4;
	case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: return 1 + d;
	case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: return 4 << 20;
	case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: return 2048;
	case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT: return 2;
	case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: return 1;
	case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: return compute_capability() / 10;
	case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: return compute_capability() % 10;
	case CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED: return 1;
	case CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED: return 1;
	case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY: return 1;
	case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS: return concurrent_managed();
	case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH: return 1;
	case CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH: return compute_capability() >= 90;
	}
	return 0;
}

EXPORT CUresult cuDeviceGetAttribute(int *v, int attr, CUdevice d) {
	FAULT("cuDeviceGetAttribute");
	REQUIRE_DEVICE(d);
	if (!v || attr <= 0 || attr > 140) return INVALID_VALUE;
	*v = device_attribute(attr, d);
	return SUCCESS;
}

EXPORT CUresult cuDeviceGetPCIBusId(char *id, int len, CUdevice d) {
	FAULT("cuDeviceGetPCIBusId");
	REQUIRE_DEVICE(d);
	if (!id || len <= 0) return INVALID_VALUE;
	snprintf(id, (size_t)len, "0000:%02x:00.0", 1 + d);
	return SUCCESS;
}

// ---- contexts --------------------------------------------------------------

static void stop_stream(struct fake_stream *s);


// reset_context frees everything a context held, as the real driver does
// when the last retain of a primary context is released.
static void reset_context(CUcontext c) {
	// Streams first: their queued work may still touch the memory freed below.
	struct fake_stream *dead = NULL;
	pthread_rwlock_wrlock(&streams_lock);
	pthread_mutex_lock(&mu);
	for (struct fake_stream **pp = &streams; *pp;) {
		struct fake_stream *s = *pp;
		if (s->ctx == c) {
			*pp = s->next_in_list;
			s->next_in_list = dead;
			dead = s;
			if (!s->legacy) live_streams--;
		} else {
			pp = &s->next_in_list;
		}
	}
	pthread_mutex_unlock(&mu);
	pthread_rwlock_unlock(&streams_lock);
	while (dead) {
		struct fake_stream *next = dead->next_in_list;
		stop_stream(dead);
		dead = next;
	}
	pthread_mutex_lock(&mu);
	unload_modules(c);
	for (int i = 0; i < MAX_EVENTS; i++) {
		if (events[i] && events[i]->ctx == c) {
			events[i] = NULL;
			live_events--;
		}
	}
	// Device memory and page-locked host memory allocated in c go with it;
	// host memory registered in c is unregistered (it is the caller's).
	for (struct record **pp = &records; *pp;) {
		struct record *r = *pp;
		if (r->ctx == c && !r->vmm) { // virtual memory belongs to no context
			*pp = r->next;
			live[r->kind]--;
			if (r->kind != KIND_REGISTERED) free((void *)r->base);
			free(r);
		} else {
			pp = &r->next;
		}
	}
	pools_reset(c->device);
	c->used = 0;
	c->sticky = 0;
	c->legacy = NULL;
	for (int i = 0; i < MAX_DEVICES; i++) peer_enabled[c->device][i] = peer_enabled[i][c->device] = 0;
	pthread_mutex_unlock(&mu);
}

EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice d) {
	FAULT("cuDevicePrimaryCtxRetain");
	REQUIRE_DEVICE(d);
	if (!pctx) return INVALID_VALUE;
	pthread_mutex_lock(&mu);
	primary[d].refs++;
	pthread_mutex_unlock(&mu);
	*pctx = &primary[d];
	return SUCCESS;
}

EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d) {
	FAULT("cuDevicePrimaryCtxRelease_v2");
	REQUIRE_DEVICE(d);
	CUresult rc = SUCCESS;
	int reset = 0;
	pthread_mutex_lock(&mu);
	if (primary[d].refs == 0) rc = INVALID_CONTEXT;
	else reset = --primary[d].refs == 0;
	pthread_mutex_unlock(&mu);
	if (reset) reset_context(&primary[d]);
	return rc;
}

EXPORT CUresult cuCtxGetCurrent(CUcontext *pctx) {
	FAULT("cuCtxGetCurrent");
	REQUIRE_INIT();
	if (!pctx) return INVALID_VALUE;
	*pctx = current;
	return SUCCESS;
}

EXPORT CUresult cuCtxSetCurrent(CUcontext c) {
	FAULT("cuCtxSetCurrent");
	REQUIRE_INIT();
	if (c) {
		pthread_mutex_lock(&mu);
		int ok = ctx_live(c);
		pthread_mutex_unlock(&mu);
		if (!ok) return INVALID_CONTEXT;
	}
	current = c;
	return SUCCESS;
}

// drain_context waits until every stream of c is idle. streams_lock keeps
// the streams alive while they drain without holding mu, which their
// workers need.
void drain_context(CUcontext c) {
	pthread_rwlock_rdlock(&streams_lock);
	pthread_mutex_lock(&mu);
	struct fake_stream *mine[256];
	int n = 0;
	for (struct fake_stream *s = streams; s && n < 256; s = s->next_in_list)
		if (s->ctx == c) mine[n++] = s;
	pthread_mutex_unlock(&mu);
	for (int i = 0; i < n; i++) drain(mine[i]);
	pthread_rwlock_unlock(&streams_lock);
}

void drain_stream(CUstream s) {
	pthread_rwlock_rdlock(&streams_lock);
	pthread_mutex_lock(&mu);
	int ok = stream_live(s);
	pthread_mutex_unlock(&mu);
	if (ok) drain(s);
	pthread_rwlock_unlock(&streams_lock);
}

EXPORT CUresult cuCtxSynchronize(void) {
	FAULT("cuCtxSynchronize");
	REQUIRE_CTX();
	drain_context(current);
	pools_release_over_threshold(current->device);
	return current->sticky;
}

EXPORT CUresult cuCtxGetStreamPriorityRange(int *least, int *greatest) {
	FAULT("cuCtxGetStreamPriorityRange");
	REQUIRE_CTX();
	if (least) *least = 0;
	if (greatest) *greatest = -5;
	return SUCCESS;
}

EXPORT CUresult cuMemGetInfo_v2(size_t *free_, size_t *total) {
	FAULT("cuMemGetInfo_v2");
	REQUIRE_CTX();
	pthread_mutex_lock(&mu);
	if (free_) *free_ = device_memory - current->used;
	if (total) *total = device_memory;
	pthread_mutex_unlock(&mu);
	return SUCCESS;
}

// ---- streams ---------------------------------------------------------------

// new_stream makes a stream of c with its worker; legacy marks c's legacy
// default stream. The caller holds mu.
static struct fake_stream *new_stream(CUcontext c, int priority, int legacy) {
	struct fake_stream *s = calloc(1, sizeof *s);
	s->ctx = c;
	s->priority = priority;
	s->legacy = legacy;
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cond, NULL);
	if (pthread_create(&s->worker, NULL, worker, s) != 0) {
		free(s);
		return NULL;
	}
	s->next_in_list = streams;
	streams = s;
	if (!legacy) live_streams++;
	return s;
}

EXPORT CUresult cuStreamCreateWithPriority(CUstream *ps, unsigned int flags, int priority) {
	FAULT("cuStreamCreateWithPriority");
	REQUIRE_CTX();
	if (!ps || flags > 1) return INVALID_VALUE;
	pthread_mutex_lock(&mu);
	struct fake_stream *s = new_stream(current, priority < -5 ? -5 : priority > 0 ? 0 : priority, 0);
	pthread_mutex_unlock(&mu);
	if (!s) return OUT_OF_MEMORY;
	*ps = s;
	return SUCCESS;
}

// legacy_stream returns the current context's legacy default stream,
// making it on first use.
static struct fake_stream *legacy_stream(void) {
	pthread_mutex_lock(&mu);
	if (!current->legacy) current->legacy = new_stream(current, 0, 1);
	struct fake_stream *s = current->legacy;
	pthread_mutex_unlock(&mu);
	return s;
}

// drain_legacy waits for the work on the current context's legacy stream,
// as every synchronous call that the real driver orders after that work.
static void drain_legacy(void) {
	pthread_rwlock_rdlock(&streams_lock);
	pthread_mutex_lock(&mu);
	struct fake_stream *s = current->legacy;
	pthread_mutex_unlock(&mu);
	if (s) drain(s);
	pthread_rwlock_unlock(&streams_lock);
}

// host_range classes [p, p+n). The driver refuses a host range that is
// locked only in part or spans several registrations: on the H100,
// cuMemcpyDtoH_v2 over four adjacent registrations answered INVALID_VALUE
// where one registration of the whole worked (BenchmarkRegisterFresh).
// The fake is as strict as the driver may be: the copies answer
// INVALID_VALUE for every range that is neither wholly pageable nor
// wholly inside one page-locked allocation or registration.
static enum host_range host_range(const void *p, size_t n) {
	uintptr_t b = (uintptr_t)p;
	enum host_range c = HOST_PAGEABLE;
	pthread_mutex_lock(&mu);
	for (struct record *r = records; r; r = r->next) {
		if (r->kind == KIND_DEVICE) continue;
		if (b >= r->base && b - r->base <= r->size && n <= r->size - (b - r->base)) {
			c = HOST_LOCKED;
			break;
		}
		if (b < r->base + r->size && r->base < b + n) c = HOST_SPLIT;
	}
	pthread_mutex_unlock(&mu);
	return c;
}

EXPORT CUresult cuStreamDestroy_v2(CUstream s) {
	FAULT("cuStreamDestroy_v2");
	REQUIRE_CTX();
	pthread_rwlock_wrlock(&streams_lock);
	pthread_mutex_lock(&mu);
	int found = 0;
	void *abandoned = NULL;
	for (struct fake_stream **pp = &streams; *pp; pp = &(*pp)->next_in_list) {
		if (*pp == s) {
			*pp = s->next_in_list;
			found = 1;
			live_streams--;
			abandoned = capture_abandon(s);
			break;
		}
	}
	pthread_mutex_unlock(&mu);
	pthread_rwlock_unlock(&streams_lock);
	if (!found) return INVALID_HANDLE;
	capture_free(abandoned);
	stop_stream(s);
	return SUCCESS;
}

// stop_stream ends a stream's worker once its queue is drained (the real
// driver, too, lets queued work finish after destroy returns) and frees it.
static void stop_stream(struct fake_stream *s) {
	pthread_mutex_lock(&s->mu);
	s->stopping = 1;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->mu);
	pthread_join(s->worker, NULL);
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->cond);
	free(s);
}

EXPORT CUresult cuStreamSynchronize(CUstream s) {
	FAULT("cuStreamSynchronize");
	REQUIRE_CTX();
	if (!s) {
		drain_legacy();
		return current->sticky;
	}
	pthread_mutex_lock(&mu);
	int ok = stream_live(s), capturing = ok && s->capture;
	pthread_mutex_unlock(&mu);
	if (!ok) return INVALID_HANDLE;
	if (capturing || capture_forbids()) return STREAM_CAPTURE_UNSUPPORTED;
	drain(s);
	pools_release_over_threshold(current->device);
	return current->sticky;
}

EXPORT CUresult cuStreamQuery(CUstream s) {
	FAULT("cuStreamQuery");
	REQUIRE_CTX();
	if (!s) s = legacy_stream();
	pthread_mutex_lock(&mu);
	int ok = stream_live(s), capturing = ok && s->capture;
	pthread_mutex_unlock(&mu);
	if (!ok) return INVALID_HANDLE;
	if (capturing) return STREAM_CAPTURE_UNSUPPORTED;
	pthread_mutex_lock(&s->mu);
	int pending = s->head != NULL;
	pthread_mutex_unlock(&s->mu);
	return pending ? NOT_READY : SUCCESS;
}

int event_live(CUevent e);

// capture_detach takes the streams joined to g (other than origin) off it
// (mu held): 1 if one of them has captured nodes that origin's work does
// not follow (no chain of waits joined them back to it).
int capture_detach(struct fake_graph *g, CUstream origin) {
	int unjoined = 0;
	for (struct fake_stream *t = streams; t; t = t->next_in_list)
		if (t != origin && t->capture == g) {
			unjoined |= origin->cap_vc[t->cap_index] < t->cap_nodes;
			t->capture = NULL;
		}
	return unjoined;
}

// record_mu makes counting a record and queuing it one step, so that a wait
// queued meanwhile (on the same stream, say) waits for a record queued
// before it, never for one queued after it, which would wait for ever.
pthread_mutex_t record_mu = PTHREAD_MUTEX_INITIALIZER;

EXPORT CUresult cuStreamWaitEvent(CUstream s, CUevent e, unsigned int flags) {
	FAULT("cuStreamWaitEvent");
	REQUIRE_CTX();
	if (flags != 0) return INVALID_VALUE;
	pthread_mutex_lock(&record_mu);
	pthread_mutex_lock(&mu);
	int ok = event_live(e);
	long target = ok ? e->recorded : 0;
	// A wait on an event recorded in a capture under way joins a stream
	// that does not capture to it: its work from now on is the capture's.
	int joined = ok && s && stream_live(s) ? capture_join(s, e) : 0;
	pthread_mutex_unlock(&mu);
	CUresult rc = INVALID_HANDLE;
	if (joined < 0) rc = NOT_SUPPORTED; // more streams than the fake keeps
	else if (joined) rc = SUCCESS;
	else if (ok) {
		struct op o = {.kind = OP_WAIT, .event = e, .target = target};
		rc = enqueue(s, o);
	}
	pthread_mutex_unlock(&record_mu);
	return rc;
}

// ---- events ----------------------------------------------------------------


int event_live(CUevent e) {
	if (!e) return 0;
	for (int i = 0; i < MAX_EVENTS; i++)
		if (events[i] == e) return 1;
	return 0;
}

EXPORT CUresult cuEventCreate(CUevent *pe, unsigned int flags) {
	FAULT("cuEventCreate");
	REQUIRE_CTX();
	if (!pe || flags > 0xf) return INVALID_VALUE;
	CUevent e = calloc(1, sizeof *e);
	e->ctx = current;
	e->flags = flags;
	pthread_mutex_lock(&mu);
	int slot = -1;
	for (int i = 0; i < MAX_EVENTS && slot < 0; i++)
		if (!events[i]) slot = i;
	if (slot >= 0) {
		events[slot] = e;
		live_events++;
	}
	pthread_mutex_unlock(&mu);
	if (slot < 0) {
		free(e);
		return OUT_OF_MEMORY;
	}
	*pe = e;
	return SUCCESS;
}

EXPORT CUresult cuEventDestroy_v2(CUevent e) {
	FAULT("cuEventDestroy_v2");
	REQUIRE_CTX();
	int found = 0;
	pthread_mutex_lock(&mu);
	for (int i = 0; i < MAX_EVENTS; i++) {
		if (events[i] == e) {
			events[i] = NULL;
			found = 1;
			live_events--;
		}
	}
	pthread_mutex_unlock(&mu);
	// The event's memory is kept: a stream may still be waiting on it.
	return found ? SUCCESS : INVALID_HANDLE;
}

EXPORT CUresult cuEventRecord(CUevent e, CUstream s) {
	FAULT("cuEventRecord");
	REQUIRE_CTX();
	pthread_mutex_lock(&record_mu);
	pthread_mutex_lock(&mu);
	int ok = event_live(e);
	pthread_mutex_unlock(&mu);
	CUresult rc = INVALID_HANDLE;
	if (ok) {
		pthread_mutex_lock(&mu);
		int capturing = s && stream_live(s) && s->capture;
		pthread_mutex_unlock(&mu);
		struct op o = {.kind = OP_RECORD, .event = e};
		// A record in a capture marks the capture's work (capture_op), and
		// a record that runs leaves the capture's.
		if ((rc = enqueue(s, o)) == SUCCESS && !capturing) {
			pthread_mutex_lock(&mu);
			e->recorded++;
			e->capture_id = 0;
			pthread_mutex_unlock(&mu);
		}
	}
	pthread_mutex_unlock(&record_mu);
	return rc;
}

EXPORT CUresult cuEventQuery(CUevent e) {
	FAULT("cuEventQuery");
	REQUIRE_CTX();
	pthread_mutex_lock(&mu);
	int ok = event_live(e);
	int done = ok && e->completed >= e->recorded;
	pthread_mutex_unlock(&mu);
	if (!ok) return INVALID_HANDLE;
	return done ? SUCCESS : NOT_READY;
}

EXPORT CUresult cuEventSynchronize(CUevent e) {
	FAULT("cuEventSynchronize");
	REQUIRE_CTX();
	pthread_mutex_lock(&mu);
	if (!event_live(e)) {
		pthread_mutex_unlock(&mu);
		return INVALID_HANDLE;
	}
	long target = e->recorded;
	while (e->completed < target) pthread_cond_wait(&event_cond, &mu);
	pthread_mutex_unlock(&mu);
	pools_release_over_threshold(current->device);
	return SUCCESS;
}

EXPORT CUresult cuEventElapsedTime(float *ms, CUevent a, CUevent b) {
	FAULT("cuEventElapsedTime");
	REQUIRE_CTX();
	if (!ms) return INVALID_VALUE;
	CUresult rc = SUCCESS;
	pthread_mutex_lock(&mu);
	if (!event_live(a) || !event_live(b)) rc = INVALID_HANDLE;
	else if ((a->flags | b->flags) & 0x2) rc = INVALID_HANDLE; // timing disabled
	else if (a->recorded == 0 || b->recorded == 0) rc = INVALID_HANDLE;
	else if (a->completed < a->recorded || b->completed < b->recorded) rc = NOT_READY;
	else
		*ms = (float)((b->when.tv_sec - a->when.tv_sec) * 1e3 + (b->when.tv_nsec - a->when.tv_nsec) / 1e6);
	pthread_mutex_unlock(&mu);
	return rc;
}

// ---- device memory ---------------------------------------------------------

CUresult alloc_device(CUdeviceptr *p, size_t n) {
	if (!p || n == 0) return INVALID_VALUE;
	pthread_mutex_lock(&mu);
	if (n > device_memory - current->used) {
		pthread_mutex_unlock(&mu);
		return OUT_OF_MEMORY;
	}
	void *mem = NULL;
	if (posix_memalign(&mem, 256, n) != 0) {
		pthread_mutex_unlock(&mu);
		return OUT_OF_MEMORY;
	}
	current->used += n;
	add_record((uintptr_t)mem, n, KIND_DEVICE, current);
	pthread_mutex_unlock(&mu);
	*p = (CUdeviceptr)(uintptr_t)mem;
	return SUCCESS;
}

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) {
	FAULT("cuMemAlloc_v2");
	REQUIRE_CTX();
	if (capture_forbids()) return STREAM_CAPTURE_UNSUPPORTED;
	return alloc_device(p, n);
}

// ---- virtual memory ------------------------------------------------------------
//
// A reservation is address space mapped with no access; a physical
// allocation (cuMemCreate) is counted in its device's memory; cuMemMap
// makes a whole allocation's range of a reservation readable and
// writable, a device record no copy or kernel may touch until
// cuMemSetAccess; cuMemUnmap takes exactly one mapping back (its bytes
// are lost, as the driver's are once the allocation is released).

enum { VMM_GRANULARITY = 2 << 20 };

struct reservation {
	uintptr_t base, map_base; // base aligned; map_base as mmap gave it
	size_t size, map_size;
	struct reservation *next;
};
struct fake_phys {
	size_t size;
	CUcontext ctx; // whose used memory counts it
	int mapped, released;
	struct fake_phys *next;
};
static struct reservation *reservations;
static struct fake_phys *physes;
long live_vmm; // reservations and physical allocations not yet freed

typedef struct {
	int type, handle_types, loc_type, loc_id;
	void *win32;
	unsigned char flags[8];
} CUmemAllocationProp;
typedef struct {
	int loc_type, loc_id;
	int flags;
} CUmemAccessDesc;

static int prop_ok(const CUmemAllocationProp *prop) {
	return prop && prop->type == 1 && prop->loc_type == 1 && prop->loc_id >= 0 && prop->loc_id < ndevices && !(prop->handle_types & ~1);
}

EXPORT CUresult cuMemGetAllocationGranularity(size_t *g, const CUmemAllocationProp *prop, int option) {
	FAULT("cuMemGetAllocationGranularity");
	REQUIRE_INIT();
	if (!g || !prop_ok(prop) || (option != 0 && option != 1)) return INVALID_VALUE;
	*g = VMM_GRANULARITY;
	return SUCCESS;
}

EXPORT CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr, unsigned long long flags) {
	FAULT("cuMemAddressReserve");
	REQUIRE_INIT();
	if (!ptr || size == 0 || size % VMM_GRANULARITY || flags || (alignment & (alignment - 1))) return INVALID_VALUE;
	(void)addr; // a hint
	size_t align = alignment > VMM_GRANULARITY ? alignment : VMM_GRANULARITY;
	size_t map_size = size + align;
	void *m = mmap(NULL, map_size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m == MAP_FAILED) return OUT_OF_MEMORY;
	struct reservation *r = calloc(1, sizeof *r);
	r->map_base = (uintptr_t)m, r->map_size = map_size;
	r->base = ((uintptr_t)m + align - 1) & ~(uintptr_t)(align - 1);
	r->size = size;
	pthread_mutex_lock(&mu);
	r->next = reservations;
	reservations = r;
	live_vmm++;
	pthread_mutex_unlock(&mu);
	*ptr = r->base;
	return SUCCESS;
}

// mapping_in returns the first mapping record inside [p, p+n), mu held.
static struct record *mapping_in(uintptr_t p, size_t n) {
	for (struct record *r = records; r; r = r->next)
		if (r->vmm && r->base < p + n && p < r->base + r->size) return r;
	return NULL;
}

EXPORT CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size) {
	FAULT("cuMemAddressFree");
	REQUIRE_INIT();
	pthread_mutex_lock(&mu);
	struct reservation **pp = &reservations;
	while (*pp && ((*pp)->base != ptr || (*pp)->size != size)) pp = &(*pp)->next;
	struct reservation *r = *pp;
	if (!r || mapping_in(ptr, size)) { // the whole reservation, unmapped first
		pthread_mutex_unlock(&mu);
		return INVALID_VALUE;
	}
	*pp = r->next;
	live_vmm--;
	pthread_mutex_unlock(&mu);
	munmap((void *)r->map_base, r->map_size);
	free(r);
	return SUCCESS;
}

EXPORT CUresult cuMemCreate(unsigned long long *handle, size_t size, const CUmemAllocationProp *prop, unsigned long long flags) {
	FAULT("cuMemCreate");
	REQUIRE_CTX();
	if (!handle || size == 0 || size % VMM_GRANULARITY || !prop_ok(prop) || flags) return INVALID_VALUE;
	pthread_mutex_lock(&mu);
	if (size > device_memory - current->used) {
		pthread_mutex_unlock(&mu);
		return OUT_OF_MEMORY;
	}
	struct fake_phys *ph = calloc(1, sizeof *ph);
	ph->size = size, ph->ctx = current;
	current->used += size;
	ph->next = physes;
	physes = ph;
	live_vmm++;
	pthread_mutex_unlock(&mu);
	*handle = (unsigned long long)(uintptr_t)ph;
	return SUCCESS;
}

// phys_live reports whether h is a physical allocation not yet freed, mu held.
static struct fake_phys *phys_of(unsigned long long h) {
	for (struct fake_phys *p = physes; p; p = p->next)
		if ((unsigned long long)(uintptr_t)p == h) return p;
	return NULL;
}

// phys_free frees ph once it is released and unmapped, mu held.
static void phys_free(struct fake_phys *ph) {
	if (!ph->released || ph->mapped) return;
	for (struct fake_phys **pp = &physes; *pp; pp = &(*pp)->next) {
		if (*pp == ph) {
			*pp = ph->next;
			break;
		}
	}
	if (ctx_live(ph->ctx) && ph->ctx->used >= ph->size) ph->ctx->used -= ph->size;
	live_vmm--;
	free(ph);
}

EXPORT CUresult cuMemRelease(unsigned long long handle) {
	FAULT("cuMemRelease");
	REQUIRE_INIT();
	pthread_mutex_lock(&mu);
	struct fake_phys *ph = phys_of(handle);
	if (!ph || ph->released) {
		pthread_mutex_unlock(&mu);
		return INVALID_VALUE;
	}
	ph->released = 1;
	phys_free(ph);
	pthread_mutex_unlock(&mu);
	return SUCCESS;
}

EXPORT CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, unsigned long long handle, unsigned long long flags) {
	FAULT("cuMemMap");
	REQUIRE_INIT();
	pthread_mutex_lock(&mu);
	struct fake_phys *ph = phys_of(handle);
	struct reservation *r = reservations;
	while (r && !(ptr >= r->base && ptr - r->base < r->size)) r = r->next;
	CUresult res = SUCCESS;
	if (!ph || ph->released || ph->mapped || offset || flags || size != ph->size || ptr % VMM_GRANULARITY) res = INVALID_VALUE;
	else if (!r || size > r->size - (ptr - r->base) || mapping_in(ptr, size)) res = INVALID_VALUE;
	else if (mprotect((void *)(uintptr_t)ptr, size, PROT_READ | PROT_WRITE) != 0) res = OUT_OF_MEMORY;
	if (res == SUCCESS) {
		add_record((uintptr_t)ptr, size, KIND_DEVICE, ph->ctx);
		records->vmm = ph, records->no_access = 1;
		ph->mapped = 1;
	}
	pthread_mutex_unlock(&mu);
	return res;
}

EXPORT CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) {
	FAULT("cuMemUnmap");
	REQUIRE_INIT();
	pthread_mutex_lock(&mu);
	struct record *rec = mapping_in(ptr, size);
	if (!rec || rec->base != ptr || rec->size != size) { // exactly one whole mapping
		pthread_mutex_unlock(&mu);
		return INVALID_VALUE;
	}
	struct fake_phys *ph = rec->vmm;
	remove_record(rec);
	madvise((void *)(uintptr_t)ptr, size, MADV_DONTNEED);
	mprotect((void *)(uintptr_t)ptr, size, PROT_NONE);
	ph->mapped = 0;
	phys_free(ph);
	pthread_mutex_unlock(&mu);
	return SUCCESS;
}

EXPORT CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count) {
	FAULT("cuMemSetAccess");
	REQUIRE_INIT();
	if (!desc || !count || !size) return INVALID_VALUE;
	for (size_t i = 0; i < count; i++)
		if (desc[i].loc_type != 1 || desc[i].loc_id < 0 || desc[i].loc_id >= ndevices || (desc[i].flags != 1 && desc[i].flags != 3)) return INVALID_VALUE;
	pthread_mutex_lock(&mu);
	// Every byte of the range must be mapped.
	size_t covered = 0;
	for (struct record *r = records; r; r = r->next)
		if (r->vmm && r->base >= ptr && r->base + r->size <= ptr + size) covered += r->size;
	CUresult res = covered == size ? SUCCESS : INVALID_VALUE;
	for (struct record *r = records; res == SUCCESS && r; r = r->next)
		if (r->vmm && r->base >= ptr && r->base + r->size <= ptr + size) r->no_access = 0;
	pthread_mutex_unlock(&mu);
	return res;
}

// ---- managed memory ----------------------------------------------------------
//
// The fake's device memory is host memory already: managed memory is
// device memory whose record remembers the advice and the last prefetch.
// FAKECUDA_CONCURRENT_MANAGED=0 makes the devices lack concurrent managed
// access. A CUmemLocation comes by value as one word: the type in the low
// half (1 a device, 2 the host), the id in the high.

EXPORT CUresult cuMemAllocManaged(CUdeviceptr *p, size_t n, unsigned flags) {
	FAULT("cuMemAllocManaged");
	REQUIRE_CTX();
	if (flags != 1 && flags != 2) return INVALID_VALUE;
	CUresult r = alloc_device(p, n);
	if (r != SUCCESS) return r;
	pthread_mutex_lock(&mu);
	struct record *rec = find_base((uintptr_t)*p, KIND_DEVICE);
	rec->managed = 1, rec->read_mostly = 0, rec->preferred = rec->last_prefetch = -2;
	pthread_mutex_unlock(&mu);
	return SUCCESS;
}

// managed_range returns the managed record holding [p, p+n), mu held.
static struct record *managed_range(CUdeviceptr p, size_t n) {
	for (struct record *r = records_head(); r; r = r->next)
		if (r->kind == KIND_DEVICE && r->managed && p >= r->base && n <= r->size && p - r->base <= r->size - n) return r;
	return NULL;
}

// location_id reads a location word as a device id (-1 the host), or -3
// for one that is not valid.
static int location_id(unsigned long long loc) {
	int type = (int)(loc & 0xffffffffu), id = (int)(loc >> 32);
	if (type == 2) return -1;
	if (type == 1 && id >= 0 && id < ndevices) return id;
	return -3;
}

EXPORT CUresult cuMemPrefetchAsync_v2(CUdeviceptr p, size_t n, unsigned long long loc, unsigned flags, CUstream s) {
	FAULT("cuMemPrefetchAsync_v2");
	REQUIRE_CTX();
	int id = location_id(loc);
	if (flags || id == -3 || n == 0 || (id >= 0 && !concurrent_managed())) return INVALID_VALUE;
	pthread_mutex_lock(&mu);
	struct record *r = managed_range(p, n);
	if (r) r->last_prefetch = id;
	pthread_mutex_unlock(&mu);
	if (!r) return INVALID_VALUE;
	struct op o = {.kind = OP_SET8, .dst = (void *)(uintptr_t)p, .n = 0}; // a step of s's work that changes nothing
	return enqueue(s, o);
}

EXPORT CUresult cuMemAdvise_v2(CUdeviceptr p, size_t n, int advice, unsigned long long loc) {
	FAULT("cuMemAdvise_v2");
	REQUIRE_CTX();
	int id = location_id(loc);
	if (advice < 1 || advice > 6 || n == 0 || (advice > 2 && id == -3)) return INVALID_VALUE;
	pthread_mutex_lock(&mu);
	struct record *r = managed_range(p, n);
	if (r) {
		if (advice == 1 || advice == 2) r->read_mostly = advice == 1;
		if (advice == 3) r->preferred = id;
		if (advice == 4) r->preferred = -2;
	}
	pthread_mutex_unlock(&mu);
	return r ? SUCCESS : INVALID_VALUE;
}

EXPORT CUresult cuMemRangeGetAttribute(void *data, size_t size, int attr, CUdeviceptr p, size_t n) {
	FAULT("cuMemRangeGetAttribute");
	REQUIRE_CTX();
	if (!data || size != 4 || n == 0 || (attr != 1 && attr != 2 && attr != 4)) return INVALID_VALUE;
	pthread_mutex_lock(&mu);
	struct record *r = managed_range(p, n);
	if (r) *(int *)data = attr == 1 ? r->read_mostly : attr == 2 ? r->preferred : r->last_prefetch;
	pthread_mutex_unlock(&mu);
	return r ? SUCCESS : INVALID_VALUE;
}

EXPORT CUresult cuMemFree_v2(CUdeviceptr p) {
	FAULT("cuMemFree_v2");
	REQUIRE_CTX();
	if (capture_forbids()) return STREAM_CAPTURE_UNSUPPORTED;
	// As the real driver's, freeing waits for the context's queued work,
	// except for memory allocated stream-ordered: that is the caller's
	// duty.
	pthread_mutex_lock(&mu);
	struct record *found = find_base((uintptr_t)p, KIND_DEVICE);
	int ordered = found && found->ordered;
	pthread_mutex_unlock(&mu);
	if (!ordered) drain_context(current);
	pthread_mutex_lock(&mu);
	struct record *r = find_base((uintptr_t)p, KIND_DEVICE);
	if (!r || r->freeing) {
		pthread_mutex_unlock(&mu);
		return INVALID_VALUE;
	}
	if (r->pool) {
		pool_free(r);
		pthread_mutex_unlock(&mu);
		return SUCCESS;
	}
	r->ctx->used -= r->size;
	remove_record(r);
	pthread_mutex_unlock(&mu);
	free((void *)(uintptr_t)p);
	return SUCCESS;
}

// free_device releases the device allocation at base, if it is one.
void free_device(void *base) {
	pthread_mutex_lock(&mu);
	struct record *r = find_base((uintptr_t)base, KIND_DEVICE);
	if (r && r->pool) {
		pool_free(r);
		r = NULL;
	} else if (r) {
		r->ctx->used -= r->size;
		remove_record(r);
	}
	pthread_mutex_unlock(&mu);
	if (r) free(base);
}

size_t device_memory_of(int device) {
	(void)device;
	return device_memory;
}

int peer_possible(int from, int to) { return from != to && peer_capable; }

// Stream-ordered memory: the fake allocates at once (the memory is usable
// earlier than the driver promises, which no correct program can tell) and
// frees when the stream reaches the free, as the driver does: work queued
// before the free may still use the memory.
EXPORT CUresult cuMemAllocAsync(CUdeviceptr *p, size_t n, CUstream s) {
	FAULT("cuMemAllocAsync");
	REQUIRE_CTX();
	if (!p || n == 0) return INVALID_VALUE;
	pthread_mutex_lock(&mu);
	int ok = !s || stream_live(s);
	pthread_mutex_unlock(&mu);
	if (!ok) return INVALID_HANDLE;
	return alloc_async(p, n, s);
}

EXPORT CUresult cuMemFreeAsync(CUdeviceptr p, CUstream s) {
	FAULT("cuMemFreeAsync");
	REQUIRE_CTX();
	// On a capturing stream the free is a node of the graph; on any other
	// it is one of the calls a capture forbids (the driver refuses it).
	pthread_mutex_lock(&mu);
	int captured = s && stream_live(s) && s->capture;
	pthread_mutex_unlock(&mu);
	if (!captured && capture_forbids()) return STREAM_CAPTURE_UNSUPPORTED;
	pthread_mutex_lock(&mu);
	struct record *r = find_base((uintptr_t)p, KIND_DEVICE);
	int ok = r && !r->freeing;
	if (ok) r->freeing = 1;
	pthread_mutex_unlock(&mu);
	if (!ok) return INVALID_VALUE;
	struct op o = {.kind = OP_FREE, .dst = (void *)(uintptr_t)p};
	CUresult rc = enqueue(s, o);
	if (rc != SUCCESS) {
		pthread_mutex_lock(&mu);
		r->freeing = 0;
		pthread_mutex_unlock(&mu);
	}
	return rc;
}

#define DEV(p) ((void *)(uintptr_t)(p))

// copy queues a copy on s; checks says which of dst and src are device
// memory, to be checked when it runs (OP_CHECK_DST, OP_CHECK_SRC).
static CUresult copy(CUstream s, void *dst, const void *src, size_t n, unsigned checks) {
	struct op o = {.kind = OP_COPY, .dst = dst, .src = src, .n = n, .ctx = current, .checks = checks};
	return enqueue(s, o);
}

// A synchronous copy to the device from pageable memory returns once the
// bytes are staged: the fake copies them aside and lets the legacy stream
// finish later. From page-locked memory it is synchronous.
EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n) {
	FAULT("cuMemcpyHtoD_v2");
	REQUIRE_CTX();
	if (!src || !range_ok(dst, n)) return INVALID_VALUE;
	enum host_range c = host_range(src, n);
	if (c == HOST_SPLIT) return INVALID_VALUE;
	if (c == HOST_LOCKED) {
		drain_legacy();
		return copy(NULL, DEV(dst), src, n, OP_CHECK_DST);
	}
	void *staged = malloc(n ? n : 1);
	if (!staged) return OUT_OF_MEMORY;
	memcpy(staged, src, n);
	struct op o = {.kind = OP_COPY_STAGED, .dst = DEV(dst), .src = staged, .n = n, .ctx = current, .checks = OP_CHECK_DST};
	return enqueue(legacy_stream(), o);
}

// A synchronous copy to the host returns once it is done, after the
// legacy stream's earlier work.
EXPORT CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n) {
	FAULT("cuMemcpyDtoH_v2");
	REQUIRE_CTX();
	if (!dst || !range_ok(src, n)) return INVALID_VALUE;
	if (host_range(dst, n) == HOST_SPLIT) return INVALID_VALUE;
	drain_legacy();
	return copy(NULL, dst, DEV(src), n, OP_CHECK_SRC);
}

// A device-to-device copy is queued on the legacy stream.
EXPORT CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t n) {
	FAULT("cuMemcpyDtoD_v2");
	REQUIRE_CTX();
	if (!range_ok(dst, n) || !range_ok(src, n)) return INVALID_VALUE;
	return copy(legacy_stream(), DEV(dst), DEV(src), n, OP_CHECK_DST | OP_CHECK_SRC);
}

EXPORT CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, CUstream s) {
	FAULT("cuMemcpyHtoDAsync_v2");
	REQUIRE_CTX();
	if (!src || !range_ok(dst, n)) return INVALID_VALUE;
	enum host_range c = host_range(src, n);
	if (c == HOST_SPLIT) return INVALID_VALUE;
	struct op o = {.kind = OP_COPY, .dst = DEV(dst), .src = src, .n = n, .ctx = current, .checks = OP_CHECK_DST};
	if (c == HOST_LOCKED) o.checks |= OP_CHECK_LOCKED, o.host = src;
	return enqueue(s, o);
}

EXPORT CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, CUstream s) {
	FAULT("cuMemcpyDtoHAsync_v2");
	REQUIRE_CTX();
	if (!dst || !range_ok(src, n)) return INVALID_VALUE;
	enum host_range c = host_range(dst, n);
	if (c == HOST_SPLIT) return INVALID_VALUE;
	struct op o = {.kind = OP_COPY, .dst = dst, .src = DEV(src), .n = n, .ctx = current, .checks = OP_CHECK_SRC};
	if (c == HOST_LOCKED) o.checks |= OP_CHECK_LOCKED, o.host = dst;
	return enqueue(s, o);
}

EXPORT CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
	FAULT("cuMemcpyDtoDAsync_v2");
	REQUIRE_CTX();
	if (!range_ok(dst, n) || !range_ok(src, n)) return INVALID_VALUE;
	return copy(s, DEV(dst), DEV(src), n, OP_CHECK_DST | OP_CHECK_SRC);
}

static CUresult set(CUstream s, enum op_kind k, CUdeviceptr dst, unsigned v, size_t n, size_t width) {
	if (n > SIZE_MAX / width || !range_ok(dst, n * width)) return INVALID_VALUE;
	if (dst % width) return INVALID_VALUE;
	struct op o = {.kind = k, .dst = DEV(dst), .value = v, .n = n, .ctx = current, .checks = OP_CHECK_DST};
	return enqueue(s, o);
}

EXPORT CUresult cuMemsetD8_v2(CUdeviceptr d, unsigned char v, size_t n) {
	FAULT("cuMemsetD8_v2");
	REQUIRE_CTX();
	return set(legacy_stream(), OP_SET8, d, v, n, 1); // queued on the legacy stream
}
EXPORT CUresult cuMemsetD16_v2(CUdeviceptr d, unsigned short v, size_t n) {
	FAULT("cuMemsetD16_v2");
	REQUIRE_CTX();
	return set(legacy_stream(), OP_SET16, d, v, n, 2); // queued on the legacy stream
}
EXPORT CUresult cuMemsetD32_v2(CUdeviceptr d, unsigned int v, size_t n) {
	FAULT("cuMemsetD32_v2");
	REQUIRE_CTX();
	return set(legacy_stream(), OP_SET32, d, v, n, 4); // queued on the legacy stream
}
EXPORT CUresult cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, CUstream s) {
	FAULT("cuMemsetD8Async");
	REQUIRE_CTX();
	return set(s, OP_SET8, d, v, n, 1);
}
EXPORT CUresult cuMemsetD16Async(CUdeviceptr d, unsigned short v, size_t n, CUstream s) {
	FAULT("cuMemsetD16Async");
	REQUIRE_CTX();
	return set(s, OP_SET16, d, v, n, 2);
}
EXPORT CUresult cuMemsetD32Async(CUdeviceptr d, unsigned int v, size_t n, CUstream s) {
	FAULT("cuMemsetD32Async");
	REQUIRE_CTX();
	return set(s, OP_SET32, d, v, n, 4);
}

// ---- page-locked host memory -----------------------------------------------
//
// Page-locking and its release are unsafe in a capture, as cuMemAlloc is:
// an H100 refused cuMemHostUnregister on a thread-local capture's thread
// (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED), and the capture was invalidated.

EXPORT CUresult cuMemHostAlloc(void **pp, size_t n, unsigned int flags) {
	FAULT("cuMemHostAlloc");
	REQUIRE_CTX();
	if (capture_forbids()) return STREAM_CAPTURE_UNSUPPORTED;
	if (!pp || n == 0 || flags > 0xf) return INVALID_VALUE;
	// Page-locked memory is bounded as device memory is (FAKECUDA_MEMORY),
	// so that a test asking for too much gets OUT_OF_MEMORY, not the host's
	// memory.
	size_t held = 0;
	pthread_mutex_lock(&mu);
	for (struct record *r = records; r; r = r->next)
		if (r->kind == KIND_HOST) held += r->size;
	pthread_mutex_unlock(&mu);
	if (n > device_memory - held) return OUT_OF_MEMORY;
	void *mem = NULL;
	if (posix_memalign(&mem, 4096, n) != 0) return OUT_OF_MEMORY;
	memset(mem, 0, n);
	pthread_mutex_lock(&mu);
	add_record((uintptr_t)mem, n, KIND_HOST, current);
	pthread_mutex_unlock(&mu);
	*pp = mem;
	return SUCCESS;
}

EXPORT CUresult cuMemFreeHost(void *p) {
	FAULT("cuMemFreeHost");
	REQUIRE_CTX();
	if (capture_forbids()) return STREAM_CAPTURE_UNSUPPORTED;
	pthread_mutex_lock(&mu);
	struct record *r = find_base((uintptr_t)p, KIND_HOST);
	if (r) remove_record(r);
	pthread_mutex_unlock(&mu);
	if (!r) return INVALID_VALUE;
	free(p);
	return SUCCESS;
}

EXPORT CUresult cuMemHostRegister_v2(void *p, size_t n, unsigned int flags) {
	FAULT("cuMemHostRegister_v2");
	REQUIRE_CTX();
	if (capture_forbids()) return STREAM_CAPTURE_UNSUPPORTED;
	if (!p || n == 0 || flags > 0xf) return INVALID_VALUE;
	uintptr_t b = (uintptr_t)p;
	CUresult rc = SUCCESS;
	pthread_mutex_lock(&mu);
	for (struct record *r = records; r; r = r->next) {
		if (r->kind == KIND_DEVICE) continue;
		if (b < r->base + r->size && r->base < b + n) {
			rc = HOST_MEMORY_ALREADY_REGISTERED;
			break;
		}
	}
	if (rc == SUCCESS) add_record(b, n, KIND_REGISTERED, current);
	pthread_mutex_unlock(&mu);
	return rc;
}

EXPORT CUresult cuMemHostUnregister(void *p) {
	FAULT("cuMemHostUnregister");
	REQUIRE_CTX();
	if (capture_forbids()) return STREAM_CAPTURE_UNSUPPORTED;
	pthread_mutex_lock(&mu);
	struct record *r = find_base((uintptr_t)p, KIND_REGISTERED);
	if (r) remove_record(r);
	pthread_mutex_unlock(&mu);
	return r ? SUCCESS : HOST_MEMORY_NOT_REGISTERED;
}

// ---- several devices -------------------------------------------------------

// contexts_live reports, under mu, whether both contexts are retained.
static int contexts_live(CUcontext a, CUcontext b);

EXPORT CUresult cuDeviceCanAccessPeer(int *can, CUdevice d, CUdevice peer) {
	FAULT("cuDeviceCanAccessPeer");
	REQUIRE_DEVICE(d);
	REQUIRE_DEVICE(peer);
	if (!can) return INVALID_VALUE;
	*can = d != peer && peer_capable;
	return SUCCESS;
}

EXPORT CUresult cuCtxEnablePeerAccess(CUcontext peer, unsigned int flags) {
	FAULT("cuCtxEnablePeerAccess");
	REQUIRE_CTX();
	if (flags) return INVALID_VALUE;
	if (!contexts_live(current, peer)) return INVALID_CONTEXT;
	if (peer == current || !peer_capable) return PEER_ACCESS_UNSUPPORTED;
	int *e = &peer_enabled[current->device][peer->device];
	if (*e) return PEER_ACCESS_ALREADY_ENABLED;
	*e = 1;
	return SUCCESS;
}

EXPORT CUresult cuCtxDisablePeerAccess(CUcontext peer) {
	FAULT("cuCtxDisablePeerAccess");
	REQUIRE_CTX();
	if (!contexts_live(current, peer)) return INVALID_CONTEXT;
	int *e = &peer_enabled[current->device][peer->device];
	if (!*e) return PEER_ACCESS_NOT_ENABLED;
	*e = 0;
	return SUCCESS;
}

// contexts_live reports, under mu, whether both contexts are retained.
static int contexts_live(CUcontext a, CUcontext b) {
	pthread_mutex_lock(&mu);
	int ok = ctx_live(a) && ctx_live(b);
	pthread_mutex_unlock(&mu);
	return ok;
}

// peer_copy is cuMemcpyPeer and cuMemcpyPeerAsync (on s; NULL: now). It
// works with or without peer access, as the real driver's does (it then
// stages through host memory).
static CUresult peer_copy(CUstream s, CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx, size_t n) {
	if (!contexts_live(dctx, sctx)) return INVALID_CONTEXT;
	if (!range_ok(dst, n) || !range_ok(src, n)) return INVALID_VALUE;
	return copy(s, DEV(dst), DEV(src), n, OP_CHECK_DST | OP_CHECK_SRC);
}

EXPORT CUresult cuMemcpyPeer(CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx, size_t n) {
	FAULT("cuMemcpyPeer");
	REQUIRE_CTX();
	// Like any device-to-device copy, it may finish after returning: it
	// runs on the current context's legacy stream.
	return peer_copy(legacy_stream(), dst, dctx, src, sctx, n);
}

EXPORT CUresult cuMemcpyPeerAsync(CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx, size_t n, CUstream s) {
	FAULT("cuMemcpyPeerAsync");
	REQUIRE_CTX();
	return peer_copy(s, dst, dctx, src, sctx, n);
}
