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
// FAKECUDA_PEER (1, the default: devices can access each other's memory).

#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct fake_ctx *CUcontext;
typedef struct fake_stream *CUstream;
typedef struct fake_event *CUevent;
typedef struct fake_module *CUmodule;
typedef struct fake_function *CUfunction;

enum {
	SUCCESS = 0,
	INVALID_VALUE = 1,
	OUT_OF_MEMORY = 2,
	NOT_INITIALIZED = 3,
	NO_DEVICE = 100,
	INVALID_DEVICE = 101,
	INVALID_IMAGE = 200,
	INVALID_CONTEXT = 201,
	INVALID_PTX = 218,
	NOT_FOUND = 500,
	ILLEGAL_ADDRESS = 700,
	INVALID_HANDLE = 400,
	NOT_READY = 600,
	PEER_ACCESS_UNSUPPORTED = 217,
	PEER_ACCESS_ALREADY_ENABLED = 704,
	PEER_ACCESS_NOT_ENABLED = 705,
	HOST_MEMORY_ALREADY_REGISTERED = 712,
	HOST_MEMORY_NOT_REGISTERED = 713,
	NOT_SUPPORTED = 801,
};

#define EXPORT __attribute__((visibility("default")))
#define MAX_DEVICES 8

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int initialized;
static int ndevices = 1;
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

static int fault_check(const char *name) {
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

#define FAULT(name)                                  \
	do {                                             \
		int fault_code_ = fault_check(name);         \
		if (fault_code_) return fault_code_;         \
	} while (0)

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

struct fake_stream;
struct fake_ctx {
	int device;
	int refs;
	size_t used;
	int sticky; // an error a kernel caused, returned by every later synchronize
	struct fake_stream *legacy; // the legacy default stream, made on first use
};
static struct fake_ctx primary[MAX_DEVICES];
static __thread CUcontext current;

static int ctx_live(CUcontext c) { return c && c >= primary && c < primary + ndevices && c->refs > 0; }

#define REQUIRE_INIT() \
	do { if (!initialized) return NOT_INITIALIZED; } while (0)
#define REQUIRE_CTX()                                     \
	do {                                                  \
		REQUIRE_INIT();                                   \
		pthread_mutex_lock(&mu);                          \
		int live_ = ctx_live(current);                    \
		pthread_mutex_unlock(&mu);                        \
		if (!live_) return INVALID_CONTEXT;               \
	} while (0)

// ---- allocation records ----------------------------------------------------

enum kind { KIND_DEVICE, KIND_HOST, KIND_REGISTERED };

struct record {
	uintptr_t base;
	size_t size;
	enum kind kind;
	CUcontext ctx;
	struct record *next;
};
static struct record *records;
static long live[3];

static struct record *find_base(uintptr_t base, enum kind k) {
	for (struct record *r = records; r; r = r->next)
		if (r->kind == k && r->base == base) return r;
	return NULL;
}

// range_ok reports whether [p, p+n) lies inside one live device allocation.
static int range_ok(CUdeviceptr p, size_t n) {
	int ok = 0;
	pthread_mutex_lock(&mu);
	for (struct record *r = records; r; r = r->next) {
		if (r->kind != KIND_DEVICE) continue;
		if (p >= r->base && p - r->base <= r->size && n <= r->size - (p - r->base)) {
			ok = 1;
			break;
		}
	}
	pthread_mutex_unlock(&mu);
	return ok;
}

static void add_record(uintptr_t base, size_t size, enum kind k, CUcontext ctx) {
	struct record *r = calloc(1, sizeof *r);
	r->base = base;
	r->size = size;
	r->kind = k;
	r->ctx = ctx;
	r->next = records;
	records = r;
	live[k]++;
}

static void remove_record(struct record *dead) {
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
// (NCCL communicators).
static long live_streams, live_events, live_comms;
EXPORT long fakecu_live(const char *kind) {
	long n = -1;
	pthread_mutex_lock(&mu);
	if (!strcmp(kind, "device")) n = live[KIND_DEVICE];
	else if (!strcmp(kind, "host")) n = live[KIND_HOST];
	else if (!strcmp(kind, "registered")) n = live[KIND_REGISTERED];
	else if (!strcmp(kind, "stream")) n = live_streams;
	else if (!strcmp(kind, "event")) n = live_events;
	else if (!strcmp(kind, "comm")) n = live_comms;
	pthread_mutex_unlock(&mu);
	return n;
}

// ---- streams and events ----------------------------------------------------

struct fake_event {
	CUcontext ctx;
	unsigned flags;
	long recorded;  // how many records were issued
	long completed; // how many have run
	struct timespec when;
};

enum op_kind { OP_COPY, OP_COPY_STAGED, OP_SET8, OP_SET16, OP_SET32, OP_RECORD, OP_WAIT, OP_KERNEL, OP_NCCL };
struct launch;
static void run_kernel(struct launch *l);
struct coll_part;
static void run_collective(struct coll_part *p);

struct op {
	enum op_kind kind;
	void *dst;
	const void *src;
	size_t n;
	unsigned value;
	CUevent event;
	long target;
	struct launch *launch;
	struct coll_part *coll;
	struct op *next;
};

struct fake_stream {
	CUcontext ctx;
	int priority;
	pthread_t worker;
	pthread_mutex_t mu;
	pthread_cond_t cond;
	struct op *head, *tail;
	int busy;
	int stopping;
	int legacy; // a context's legacy default stream, never handed out
	struct fake_stream *next_in_list;
};
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

static void run_op(struct op *o) {
	switch (o->kind) {
	case OP_COPY: memmove(o->dst, o->src, o->n); break;
	case OP_COPY_STAGED: // src is the fake's own staging copy
		memmove(o->dst, o->src, o->n);
		free((void *)o->src);
		break;
	case OP_SET8: case OP_SET16: case OP_SET32: fill(o->dst, o->kind, o->value, o->n); break;
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

static int stream_live(CUstream s) {
	for (struct fake_stream *p = streams; p; p = p->next_in_list)
		if (p == s) return 1;
	return 0;
}

// enqueue runs o on s later, or now when s is the NULL stream.
static CUresult enqueue(CUstream s, struct op o) {
	if (!s) {
		run_op(&o);
		return SUCCESS;
	}
	pthread_mutex_lock(&mu);
	int ok = stream_live(s);
	pthread_mutex_unlock(&mu);
	if (!ok) return INVALID_HANDLE;
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
	*v = 13000;
	return SUCCESS;
}

static const struct {
	int code;
	const char *name, *text;
} errors[] = {
	{0, "CUDA_SUCCESS", "no error"},
	{1, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
	{2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
	{3, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
	{100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
	{101, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
	{200, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
	{201, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
	{218, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
	{500, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
	{400, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
	{600, "CUDA_ERROR_NOT_READY", "device not ready"},
	{217, "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED", "peer access is not supported between these two devices"},
	{700, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
	{704, "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED", "peer access is already enabled"},
	{705, "CUDA_ERROR_PEER_ACCESS_NOT_ENABLED", "peer access has not been enabled"},
	{712, "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED", "part or all of the requested memory range is already mapped"},
	{713, "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED", "pointer does not correspond to a registered memory region"},
	{801, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
	{999, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

static CUresult error_lookup(CUresult e, const char **p, int text) {
	if (!p) return INVALID_VALUE;
	for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++) {
		if (errors[i].code == e) {
			*p = text ? errors[i].text : errors[i].name;
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

EXPORT CUresult cuDeviceGetAttribute(int *v, int attr, CUdevice d) {
	FAULT("cuDeviceGetAttribute");
	REQUIRE_DEVICE(d);
	if (!v) return INVALID_VALUE;
	switch (attr) {
	case 1: *v = 1024; break;               // max threads per block
	case 2: case 3: *v = 1024; break;       // max block dim x, y
	case 4: *v = 64; break;                 // max block dim z
	case 5: *v = 2147483647; break;         // max grid dim x
	case 6: case 7: *v = 65535; break;      // max grid dim y, z
	case 8: *v = 49152; break;              // shared memory per block
	case 10: *v = 32; break;                // warp size
	case 16: *v = 4; break;                 // multiprocessors
	case 33: *v = 1 + d; break;             // PCI bus id
	case 34: *v = 0; break;                 // PCI device id
	case 38: *v = 4 << 20; break;           // L2 cache
	case 39: *v = 2048; break;              // threads per multiprocessor
	case 40: *v = 2; break;                 // async engines
	case 41: *v = 1; break;                 // unified addressing
	case 50: *v = 0; break;                 // PCI domain
	case 75: *v = 9; break;                 // compute capability major
	case 76: *v = 0; break;                 // compute capability minor
	case 78: *v = 1; break;                 // stream priorities
	case 99: *v = 1; break;                 // host register supported
	default:
		if (attr <= 0 || attr > 140) return INVALID_VALUE;
		*v = 0;
	}
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

static void unload_modules(CUcontext c);

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
		if (r->ctx == c) {
			*pp = r->next;
			live[r->kind]--;
			if (r->kind != KIND_REGISTERED) free((void *)r->base);
			free(r);
		} else {
			pp = &r->next;
		}
	}
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

EXPORT CUresult cuCtxGetDevice(CUdevice *d) {
	FAULT("cuCtxGetDevice");
	REQUIRE_CTX();
	if (!d) return INVALID_VALUE;
	*d = current->device;
	return SUCCESS;
}

// drain_context waits until every stream of c is idle. streams_lock keeps
// the streams alive while they drain without holding mu, which their
// workers need.
static void drain_context(CUcontext c) {
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

EXPORT CUresult cuCtxSynchronize(void) {
	FAULT("cuCtxSynchronize");
	REQUIRE_CTX();
	drain_context(current);
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

// host_locked reports whether [p, p+n) lies in page-locked host memory.
static int host_locked(const void *p, size_t n) {
	uintptr_t b = (uintptr_t)p;
	int ok = 0;
	pthread_mutex_lock(&mu);
	for (struct record *r = records; r; r = r->next)
		if (r->kind != KIND_DEVICE && b >= r->base && b - r->base <= r->size && n <= r->size - (b - r->base)) ok = 1;
	pthread_mutex_unlock(&mu);
	return ok;
}

EXPORT CUresult cuStreamDestroy_v2(CUstream s) {
	FAULT("cuStreamDestroy_v2");
	REQUIRE_CTX();
	pthread_rwlock_wrlock(&streams_lock);
	pthread_mutex_lock(&mu);
	int found = 0;
	for (struct fake_stream **pp = &streams; *pp; pp = &(*pp)->next_in_list) {
		if (*pp == s) {
			*pp = s->next_in_list;
			found = 1;
			live_streams--;
			break;
		}
	}
	pthread_mutex_unlock(&mu);
	pthread_rwlock_unlock(&streams_lock);
	if (!found) return INVALID_HANDLE;
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
	int ok = stream_live(s);
	pthread_mutex_unlock(&mu);
	if (!ok) return INVALID_HANDLE;
	drain(s);
	return current->sticky;
}

EXPORT CUresult cuStreamQuery(CUstream s) {
	FAULT("cuStreamQuery");
	REQUIRE_CTX();
	if (!s) s = legacy_stream();
	pthread_mutex_lock(&mu);
	int ok = stream_live(s);
	pthread_mutex_unlock(&mu);
	if (!ok) return INVALID_HANDLE;
	pthread_mutex_lock(&s->mu);
	int pending = s->head != NULL;
	pthread_mutex_unlock(&s->mu);
	return pending ? NOT_READY : SUCCESS;
}

static int event_live(CUevent e);

// record_mu makes counting a record and queuing it one step, so that a wait
// queued meanwhile (on the same stream, say) waits for a record queued
// before it, never for one queued after it, which would wait for ever.
static pthread_mutex_t record_mu = PTHREAD_MUTEX_INITIALIZER;

EXPORT CUresult cuStreamWaitEvent(CUstream s, CUevent e, unsigned int flags) {
	FAULT("cuStreamWaitEvent");
	REQUIRE_CTX();
	if (flags != 0) return INVALID_VALUE;
	pthread_mutex_lock(&record_mu);
	pthread_mutex_lock(&mu);
	int ok = event_live(e);
	long target = ok ? e->recorded : 0;
	pthread_mutex_unlock(&mu);
	CUresult rc = INVALID_HANDLE;
	if (ok) {
		struct op o = {.kind = OP_WAIT, .event = e, .target = target};
		rc = enqueue(s, o);
	}
	pthread_mutex_unlock(&record_mu);
	return rc;
}

// ---- events ----------------------------------------------------------------


static int event_live(CUevent e) {
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
		struct op o = {.kind = OP_RECORD, .event = e};
		if ((rc = enqueue(s, o)) == SUCCESS) {
			pthread_mutex_lock(&mu);
			e->recorded++;
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

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) {
	FAULT("cuMemAlloc_v2");
	REQUIRE_CTX();
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

EXPORT CUresult cuMemFree_v2(CUdeviceptr p) {
	FAULT("cuMemFree_v2");
	REQUIRE_CTX();
	// As the real driver's, freeing waits for the context's queued work.
	drain_context(current);
	pthread_mutex_lock(&mu);
	struct record *r = find_base((uintptr_t)p, KIND_DEVICE);
	if (!r) {
		pthread_mutex_unlock(&mu);
		return INVALID_VALUE;
	}
	r->ctx->used -= r->size;
	remove_record(r);
	pthread_mutex_unlock(&mu);
	free((void *)(uintptr_t)p);
	return SUCCESS;
}

#define DEV(p) ((void *)(uintptr_t)(p))

static CUresult copy(CUstream s, void *dst, const void *src, size_t n) {
	struct op o = {.kind = OP_COPY, .dst = dst, .src = src, .n = n};
	return enqueue(s, o);
}

// A synchronous copy to the device from pageable memory returns once the
// bytes are staged: the fake copies them aside and lets the legacy stream
// finish later. From page-locked memory it is synchronous.
EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n) {
	FAULT("cuMemcpyHtoD_v2");
	REQUIRE_CTX();
	if (!src || !range_ok(dst, n)) return INVALID_VALUE;
	if (host_locked(src, n)) {
		drain_legacy();
		return copy(NULL, DEV(dst), src, n);
	}
	void *staged = malloc(n ? n : 1);
	if (!staged) return OUT_OF_MEMORY;
	memcpy(staged, src, n);
	struct op o = {.kind = OP_COPY_STAGED, .dst = DEV(dst), .src = staged, .n = n};
	return enqueue(legacy_stream(), o);
}

// A synchronous copy to the host returns once it is done, after the
// legacy stream's earlier work.
EXPORT CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n) {
	FAULT("cuMemcpyDtoH_v2");
	REQUIRE_CTX();
	if (!dst || !range_ok(src, n)) return INVALID_VALUE;
	drain_legacy();
	return copy(NULL, dst, DEV(src), n);
}

// A device-to-device copy is queued on the legacy stream.
EXPORT CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t n) {
	FAULT("cuMemcpyDtoD_v2");
	REQUIRE_CTX();
	if (!range_ok(dst, n) || !range_ok(src, n)) return INVALID_VALUE;
	return copy(legacy_stream(), DEV(dst), DEV(src), n);
}

EXPORT CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, CUstream s) {
	FAULT("cuMemcpyHtoDAsync_v2");
	REQUIRE_CTX();
	if (!src || !range_ok(dst, n)) return INVALID_VALUE;
	return copy(s, DEV(dst), src, n);
}

EXPORT CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, CUstream s) {
	FAULT("cuMemcpyDtoHAsync_v2");
	REQUIRE_CTX();
	if (!dst || !range_ok(src, n)) return INVALID_VALUE;
	return copy(s, dst, DEV(src), n);
}

EXPORT CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
	FAULT("cuMemcpyDtoDAsync_v2");
	REQUIRE_CTX();
	if (!range_ok(dst, n) || !range_ok(src, n)) return INVALID_VALUE;
	return copy(s, DEV(dst), DEV(src), n);
}

static CUresult set(CUstream s, enum op_kind k, CUdeviceptr dst, unsigned v, size_t n, size_t width) {
	if (n > SIZE_MAX / width || !range_ok(dst, n * width)) return INVALID_VALUE;
	if (dst % width) return INVALID_VALUE;
	struct op o = {.kind = k, .dst = DEV(dst), .value = v, .n = n};
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

EXPORT CUresult cuMemHostAlloc(void **pp, size_t n, unsigned int flags) {
	FAULT("cuMemHostAlloc");
	REQUIRE_CTX();
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
	pthread_mutex_lock(&mu);
	struct record *r = find_base((uintptr_t)p, KIND_REGISTERED);
	if (r) remove_record(r);
	pthread_mutex_unlock(&mu);
	return r ? SUCCESS : HOST_MEMORY_NOT_REGISTERED;
}

// ---- modules and kernels ---------------------------------------------------
//
// The fake cannot run device code. A module is PTX text; its entries are
// matched by name against built-in C versions of the kernels in gocuda's
// testdata/kernels.ptx, and its .global variables get memory.

struct kernel {
	const char *name;
	int nparams;
	size_t size[4], offset[4];
	void (*run)(struct launch *);
};

struct launch {
	CUcontext ctx;
	const struct kernel *k;
	unsigned grid[3], block[3], shared;
	unsigned char params[256];
};

#define P(l, i, T) (*(T *)((l)->params + (l)->k->offset[i]))
#define DEVP(p) ((void *)(uintptr_t)(p))

static void fault(struct launch *l) {
	pthread_mutex_lock(&mu);
	l->ctx->sticky = ILLEGAL_ADDRESS;
	pthread_mutex_unlock(&mu);
}

static size_t threads(struct launch *l) { return (size_t)l->grid[0] * l->block[0]; }

#define VADD(NAME, T)                                                               \
	static void NAME(struct launch *l) {                                            \
		CUdeviceptr a = P(l, 0, CUdeviceptr), b = P(l, 1, CUdeviceptr), c = P(l, 2, CUdeviceptr); \
		size_t n = P(l, 3, unsigned), m = threads(l) < n ? threads(l) : n;          \
		if (!range_ok(a, m * sizeof(T)) || !range_ok(b, m * sizeof(T)) || !range_ok(c, m * sizeof(T))) { \
			if (m) fault(l);                                                        \
			return;                                                                 \
		}                                                                           \
		for (size_t i = 0; i < m; i++) ((T *)DEVP(c))[i] = ((T *)DEVP(a))[i] + ((T *)DEVP(b))[i]; \
	}
VADD(vadd_f32, float)
VADD(vadd_f64, double)
VADD(vadd_s32, int32_t)

static void k_empty(struct launch *l) { (void)l; }

static void k_saxpy(struct launch *l) {
	float a = P(l, 0, float);
	CUdeviceptr x = P(l, 1, CUdeviceptr), y = P(l, 2, CUdeviceptr);
	size_t n = P(l, 3, unsigned), m = threads(l) < n ? threads(l) : n;
	if (m && (!range_ok(x, m * 4) || !range_ok(y, m * 4))) return fault(l);
	for (size_t i = 0; i < m; i++) ((float *)DEVP(y))[i] = a * ((float *)DEVP(x))[i] + ((float *)DEVP(y))[i];
}

static void k_affine(struct launch *l) {
	float scale = P(l, 0, float);
	int32_t offset = *(int32_t *)(l->params + l->k->offset[0] + 4);
	CUdeviceptr x = P(l, 1, CUdeviceptr), y = P(l, 2, CUdeviceptr);
	size_t n = P(l, 3, unsigned), m = threads(l) < n ? threads(l) : n;
	if (m && (!range_ok(x, m * 4) || !range_ok(y, m * 4))) return fault(l);
	for (size_t i = 0; i < m; i++) ((float *)DEVP(y))[i] = ((float *)DEVP(x))[i] * scale + (float)offset;
}

static void k_reverse(struct launch *l) {
	CUdeviceptr d = P(l, 0, CUdeviceptr);
	size_t n = l->block[0];
	if (l->shared < n * 4 || !range_ok(d, n * 4)) return fault(l);
	int32_t *v = DEVP(d);
	for (unsigned g = 0; g < l->grid[0]; g++)
		for (size_t i = 0; i < n / 2; i++) {
			int32_t t = v[i];
			v[i] = v[n - 1 - i];
			v[n - 1 - i] = t;
		}
}

static void k_oob_write(struct launch *l) { fault(l); }

static const struct kernel kernels[] = {
	{"empty", 0, {0}, {0}, k_empty},
	{"vadd_f32", 4, {8, 8, 8, 4}, {0, 8, 16, 24}, vadd_f32},
	{"vadd_f64", 4, {8, 8, 8, 4}, {0, 8, 16, 24}, vadd_f64},
	{"vadd_s32", 4, {8, 8, 8, 4}, {0, 8, 16, 24}, vadd_s32},
	{"saxpy", 4, {4, 8, 8, 4}, {0, 8, 16, 24}, k_saxpy},
	{"affine", 4, {8, 8, 8, 4}, {0, 8, 16, 24}, k_affine},
	{"reverse", 1, {8}, {0}, k_reverse},
	{"oob_write", 1, {8}, {0}, k_oob_write},
};

static void run_kernel(struct launch *l) { l->k->run(l); }

struct fake_function {
	char name[64];
	const struct kernel *k; // NULL: in the module, but the fake has no C version
	int max_dynamic_shared;
};

struct global_var {
	char name[64];
	CUdeviceptr ptr;
	size_t size;
};

struct fake_module {
	CUcontext ctx;
	int nfuncs, nglobals;
	struct fake_function funcs[32];
	struct global_var globals[16];
	struct fake_module *next;
};
static struct fake_module *modules;

static void jit_log(unsigned n, const int *options, void **values, int which, const char *msg) {
	// which: 5 error log, 3 info log; sizes follow at which+1.
	char *buf = NULL;
	size_t size = 0;
	for (unsigned i = 0; i < n; i++) {
		if (options[i] == which) buf = values[i];
		if (options[i] == which + 1) size = (size_t)(uintptr_t)values[i];
	}
	if (buf && size) snprintf(buf, size, "%s", msg);
}

static size_t type_size(const char *t) {
	if (!strncmp(t, ".u64", 4) || !strncmp(t, ".s64", 4) || !strncmp(t, ".f64", 4) || !strncmp(t, ".b64", 4)) return 8;
	if (!strncmp(t, ".u16", 4) || !strncmp(t, ".s16", 4) || !strncmp(t, ".b16", 4) || !strncmp(t, ".f16", 4)) return 2;
	if (!strncmp(t, ".u8", 3) || !strncmp(t, ".s8", 3) || !strncmp(t, ".b8", 3)) return 1;
	return 4;
}

EXPORT CUresult cuModuleLoadDataEx(CUmodule *pm, const void *image, unsigned n, int *options, void **values) {
	FAULT("cuModuleLoadDataEx");
	REQUIRE_CTX();
	if (!pm || !image || (n && (!options || !values))) return INVALID_VALUE;
	const char *text = image;
	if (!memcmp(text, "\x7f" "ELF", 4) || *(const uint32_t *)image == 0xBA55ED50) {
		jit_log(n, options, values, 5, "the fake driver runs no device code: only PTX of gocuda's test kernels");
		return INVALID_IMAGE;
	}
	if (!strstr(text, ".version") || !strstr(text, ".target")) {
		jit_log(n, options, values, 5, "ptxas fatal   : (fake driver) not PTX: no .version or .target directive");
		return INVALID_PTX;
	}
	struct fake_module *m = calloc(1, sizeof *m);
	m->ctx = current;
	for (const char *p = text; (p = strstr(p, ".entry")) != NULL && m->nfuncs < 32; p += 6) {
		const char *q = p + 6;
		while (*q == ' ' || *q == '\t') q++;
		size_t len = strcspn(q, " \t(\n");
		struct fake_function *f = &m->funcs[m->nfuncs++];
		snprintf(f->name, sizeof f->name, "%.*s", (int)len, q);
		f->max_dynamic_shared = 48 << 10;
		for (size_t k = 0; k < sizeof kernels / sizeof kernels[0]; k++)
			if (!strcmp(kernels[k].name, f->name)) f->k = &kernels[k];
	}
	for (const char *p = text; (p = strstr(p, ".global")) != NULL && m->nglobals < 16; p += 7) {
		// A declaration's .global starts a word (".visible .global ...");
		// in code it follows an instruction: ld.global, cvta.to.global.
		if (p > text && p[-1] != ' ' && p[-1] != '\t' && p[-1] != '\n') continue;
		const char *end = strchr(p, ';');
		if (!end) break;
		// The last token before ';' is NAME or NAME[COUNT]; the type is the
		// last token starting with '.'.
		char decl[256];
		snprintf(decl, sizeof decl, "%.*s", (int)(end - p), p);
		char *last = NULL, *type = ".b32";
		for (char *t = strtok(decl, " \t\n"); t; t = strtok(NULL, " \t\n")) {
			if (t[0] == '.' && strcmp(t, ".global") && strncmp(t, ".align", 6) && strcmp(t, ".visible")) type = t;
			last = t;
		}
		if (!last || last[0] == '.') continue;
		size_t count = 1;
		char *br = strchr(last, '[');
		if (br) {
			count = strtoull(br + 1, NULL, 10);
			*br = 0;
		}
		struct global_var *g = &m->globals[m->nglobals++];
		snprintf(g->name, sizeof g->name, "%s", last);
		g->size = count * type_size(type);
		void *mem = calloc(1, g->size ? g->size : 1);
		g->ptr = (CUdeviceptr)(uintptr_t)mem;
		pthread_mutex_lock(&mu);
		add_record((uintptr_t)mem, g->size, KIND_DEVICE, current);
		pthread_mutex_unlock(&mu);
	}
	jit_log(n, options, values, 3, "fake JIT: loaded");
	pthread_mutex_lock(&mu);
	m->next = modules;
	modules = m;
	pthread_mutex_unlock(&mu);
	*pm = m;
	return SUCCESS;
}

static int module_live(CUmodule m) {
	for (struct fake_module *p = modules; p; p = p->next)
		if (p == m) return 1;
	return 0;
}

// free_module frees m and its globals. The caller holds mu and has taken
// m off the list.
static void free_module(struct fake_module *m) {
	for (int i = 0; i < m->nglobals; i++) {
		struct record *r = find_base((uintptr_t)m->globals[i].ptr, KIND_DEVICE);
		if (r) remove_record(r);
		free(DEVP(m->globals[i].ptr));
	}
	free(m); // functions die with their module, as on the real driver
}

// unload_modules unloads every module of c, as the driver does when it
// destroys a context. The caller holds mu.
static void unload_modules(CUcontext c) {
	for (struct fake_module **pp = &modules; *pp;) {
		struct fake_module *m = *pp;
		if (m->ctx == c) {
			*pp = m->next;
			free_module(m);
		} else {
			pp = &m->next;
		}
	}
}

EXPORT CUresult cuModuleUnload(CUmodule m) {
	FAULT("cuModuleUnload");
	REQUIRE_CTX();
	pthread_mutex_lock(&mu);
	int found = 0;
	for (struct fake_module **pp = &modules; *pp; pp = &(*pp)->next) {
		if (*pp == m) {
			*pp = m->next;
			found = 1;
			break;
		}
	}
	if (found) free_module(m);
	pthread_mutex_unlock(&mu);
	return found ? SUCCESS : INVALID_HANDLE;
}

EXPORT CUresult cuModuleGetFunction(CUfunction *pf, CUmodule m, const char *name) {
	FAULT("cuModuleGetFunction");
	REQUIRE_CTX();
	if (!pf || !name) return INVALID_VALUE;
	pthread_mutex_lock(&mu);
	int live = module_live(m);
	pthread_mutex_unlock(&mu);
	if (!live) return INVALID_HANDLE;
	for (int i = 0; i < m->nfuncs; i++) {
		if (!strcmp(m->funcs[i].name, name)) {
			if (!m->funcs[i].k) return NOT_SUPPORTED;
			*pf = &m->funcs[i];
			return SUCCESS;
		}
	}
	return NOT_FOUND;
}

EXPORT CUresult cuModuleGetGlobal_v2(CUdeviceptr *dptr, size_t *bytes, CUmodule m, const char *name) {
	FAULT("cuModuleGetGlobal_v2");
	REQUIRE_CTX();
	if (!name) return INVALID_VALUE;
	pthread_mutex_lock(&mu);
	int live = module_live(m);
	pthread_mutex_unlock(&mu);
	if (!live) return INVALID_HANDLE;
	for (int i = 0; i < m->nglobals; i++) {
		if (!strcmp(m->globals[i].name, name)) {
			if (dptr) *dptr = m->globals[i].ptr;
			if (bytes) *bytes = m->globals[i].size;
			return SUCCESS;
		}
	}
	return NOT_FOUND;
}

EXPORT CUresult cuFuncGetAttribute(int *v, int attr, CUfunction f) {
	FAULT("cuFuncGetAttribute");
	REQUIRE_CTX();
	if (!v || !f) return INVALID_VALUE;
	switch (attr) {
	case 0: *v = 1024; break;                    // max threads per block
	case 1: case 2: case 3: *v = 0; break;       // static shared, const, local bytes
	case 4: *v = 16; break;                      // registers
	case 5: *v = 70; break;                      // PTX version
	case 6: *v = 90; break;                      // binary version
	case 8: *v = f->max_dynamic_shared; break;   // max dynamic shared bytes
	default:
		if (attr < 0 || attr > 16) return INVALID_VALUE;
		*v = 0;
	}
	return SUCCESS;
}

EXPORT CUresult cuFuncSetAttribute(CUfunction f, int attr, int v) {
	FAULT("cuFuncSetAttribute");
	REQUIRE_CTX();
	if (!f) return INVALID_VALUE;
	if (attr != 8) return attr < 0 || attr > 16 ? INVALID_VALUE : SUCCESS;
	if (v < 0 || v > 227 << 10) return INVALID_VALUE;
	f->max_dynamic_shared = v;
	return SUCCESS;
}

EXPORT CUresult cuFuncGetParamCount(CUfunction f, size_t *n) {
	FAULT("cuFuncGetParamCount");
	REQUIRE_CTX();
	if (!f || !n) return INVALID_VALUE;
	*n = (size_t)f->k->nparams;
	return SUCCESS;
}

EXPORT CUresult cuFuncGetParamInfo(CUfunction f, size_t i, size_t *off, size_t *size) {
	FAULT("cuFuncGetParamInfo");
	REQUIRE_CTX();
	if (!f || (int)i >= f->k->nparams) return INVALID_VALUE;
	if (off) *off = f->k->offset[i];
	if (size) *size = f->k->size[i];
	return SUCCESS;
}

EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                               unsigned bz, unsigned shared, CUstream s, void **params, void **extra) {
	FAULT("cuLaunchKernel");
	REQUIRE_CTX();
	if (!f || extra) return INVALID_VALUE;
	if (!gx || !gy || !gz || !bx || !by || !bz) return INVALID_VALUE;
	if (bx > 1024 || by > 1024 || bz > 64 || (size_t)bx * by * bz > 1024) return INVALID_VALUE;
	if (gy > 65535 || gz > 65535 || gx > 0x7fffffffu) return INVALID_VALUE;
	if ((int)shared > f->max_dynamic_shared) return INVALID_VALUE;
	if (f->k->nparams && !params) return INVALID_VALUE;
	if (current->sticky) return current->sticky;
	struct launch *l = calloc(1, sizeof *l);
	l->ctx = current;
	l->k = f->k;
	l->grid[0] = gx, l->grid[1] = gy, l->grid[2] = gz;
	l->block[0] = bx, l->block[1] = by, l->block[2] = bz;
	l->shared = shared;
	for (int i = 0; i < f->k->nparams; i++) memcpy(l->params + f->k->offset[i], params[i], f->k->size[i]);
	struct op o = {.kind = OP_KERNEL, .launch = l};
	return enqueue(s, o);
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
	return copy(s, DEV(dst), DEV(src), n);
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

// ---- NCCL ------------------------------------------------------------------

typedef struct { char internal[128]; } ncclUniqueId;
enum {
	NCCL_SUCCESS = 0,
	NCCL_INTERNAL = 3,
	NCCL_INVALID_ARGUMENT = 4,
	NCCL_INVALID_USAGE = 5,
	NCCL_NUM_RESULTS = 9,
};
enum coll_kind { COLL_ALLREDUCE, COLL_BROADCAST, COLL_REDUCE, COLL_ALLGATHER, COLL_REDUCESCATTER };
#define MAX_RANKS MAX_DEVICES

// A clique is the ranks of one unique id (or of one ncclCommInitAll).
struct clique {
	uint64_t key;
	int nranks, joined, alive;
	struct fake_comm *ranks[MAX_RANKS];
	struct coll *colls; // collectives some rank has reached
	struct clique *next;
};

struct fake_comm {
	struct clique *cl;
	int rank, device;
	long seq; // collectives issued, which numbers them across ranks
};

// A coll is one collective: what each rank passed, and who has arrived.
struct coll_part {
	struct fake_comm *comm;
	long seq;
	enum coll_kind kind;
	const void *send;
	void *recv;
	size_t count;
	int dtype, op, root;
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
	}
}

// run_collective is a rank's part of a collective, on its stream's worker:
// it waits there until every rank has arrived, and the last computes.
static void run_collective(struct coll_part *p) {
	struct clique *cl = p->comm->cl;
	pthread_mutex_lock(&mu);
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
	while (!c->done) pthread_cond_wait(&nccl_cond, &mu);
	if (++c->left == cl->nranks) {
		for (struct coll **pp = &cl->colls; *pp; pp = &(*pp)->next)
			if (*pp == c) {
				*pp = c->next;
				break;
			}
		free(c);
	}
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
	while (cl && cl->key != key) cl = cl->next;
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
	(void)config;
	if (!comm || !ids || nId < 1) return nccl_fail(NCCL_INVALID_ARGUMENT, "NULL argument");
	if (nranks < 1 || nranks > MAX_RANKS || rank < 0 || rank >= nranks)
		return nccl_fail(NCCL_INVALID_ARGUMENT, "rank or nranks out of range");
	if (memcmp(ids[0].internal, "fakenccl", 8)) return nccl_fail(NCCL_INVALID_ARGUMENT, "not a unique id of this library");
	uint64_t key;
	memcpy(&key, ids[0].internal + 8, 8);
	int device = current ? current->device : 0;
	pthread_mutex_lock(&mu);
	struct fake_comm *c;
	int r = join(key, nranks, rank, device, &c);
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

static int comm_destroy(struct fake_comm *c);

EXPORT int ncclCommDestroy(struct fake_comm *c) {
	FAULT("ncclCommDestroy");
	return comm_destroy(c);
}

static int comm_destroy(struct fake_comm *c) {
	pthread_mutex_lock(&mu);
	if (!comm_live(c)) {
		pthread_mutex_unlock(&mu);
		return nccl_fail(NCCL_INVALID_ARGUMENT, "not a live communicator");
	}
	struct clique *cl = c->cl;
	cl->ranks[c->rank] = NULL;
	live_comms--;
	if (--cl->alive == 0) {
		for (struct clique **pp = &cliques; *pp; pp = &(*pp)->next)
			if (*pp == cl) {
				*pp = cl->next;
				break;
			}
		free(cl);
	}
	pthread_mutex_unlock(&mu);
	free(c);
	return NCCL_SUCCESS;
}

EXPORT int ncclCommAbort(struct fake_comm *c) {
	FAULT("ncclCommAbort");
	return comm_destroy(c);
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
	FAULT("ncclGroupEnd");
	if (nccl_group_depth == 0) return nccl_fail(NCCL_INVALID_USAGE, "ncclGroupEnd without ncclGroupStart");
	nccl_group_depth--;
	return NCCL_SUCCESS;
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
	pthread_mutex_unlock(&mu);
	if (!ok) return nccl_fail(NCCL_INVALID_ARGUMENT, "not a live communicator");
	if (!stream_ok) return nccl_fail(NCCL_INVALID_ARGUMENT, "stream is not a live stream of the communicator's device");
	if (root < 0 || root >= nranks) return nccl_fail(NCCL_INVALID_ARGUMENT, "root out of range");
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
	struct op o = {.kind = OP_NCCL, .coll = p};
	if (enqueue(s, o) != SUCCESS) {
		free(p);
		return nccl_fail(NCCL_INVALID_ARGUMENT, "stream is not live");
	}
	return NCCL_SUCCESS;
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
