// What the fake driver's parts (driver.c, kernels.c, nccl.c) share.
#ifndef FAKECUDA_H
#define FAKECUDA_H

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


#include "zenums.h"

#define EXPORT __attribute__((visibility("default")))
#define MAX_DEVICES 8

// ---- driver.c: the state every part reads, under mu -------------------------

extern pthread_mutex_t mu;
extern int initialized;
extern int ndevices;

struct fake_stream;
struct fake_ctx {
	int device;
	int refs;
	size_t used;
	int sticky; // an error a kernel caused, returned by every later synchronize
	struct fake_stream *legacy; // the legacy default stream, made on first use
};
extern struct fake_ctx primary[MAX_DEVICES];
extern __thread CUcontext current;
int ctx_live(CUcontext c);
int device_attribute(int attr, CUdevice d); // cuDeviceGetAttribute's answer, d valid

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

// Fault injection: fault_check counts a call of name and returns the code
// it should fail with, or 0.
int fault_check(const char *name);
#define FAULT(name)                                  \
	do {                                             \
		int fault_code_ = fault_check(name);         \
		if (fault_code_) return fault_code_;         \
	} while (0)

// Allocation records.
enum kind { KIND_DEVICE, KIND_HOST, KIND_REGISTERED };
struct record {
	uintptr_t base;
	size_t size;
	enum kind kind;
	CUcontext ctx;
	int ordered; // allocated stream-ordered (cuMemAllocAsync)
	int freeing; // a stream-ordered free of it is queued
	struct fake_pool *pool; // the pool it came from (stream-ordered memory)
	size_t capacity;        // the pool block's size, at least size
	int managed;            // cuMemAllocManaged's, with its advice: read mostly, the
	int read_mostly, preferred, last_prefetch; // preferred and last prefetch locations (-2 none, -1 host)
	struct fake_phys *vmm;  // a mapping of virtual memory: the physical allocation mapped (driver.c)
	int no_access;          // a mapping not yet made accessible (cuMemSetAccess): no copy or kernel may touch it
	struct record *next;
};
struct record *find_base(uintptr_t base, enum kind k);
int event_live(CUevent e); // mu held
int range_ok(CUdeviceptr p, size_t n);
void add_record(uintptr_t base, size_t size, enum kind k, CUcontext ctx);
void remove_record(struct record *dead);
extern long live_comms;
extern long live_regs; // NCCL buffer registrations (nccl.c)
extern long live_libraries;
extern long live_vmm;

// Memory pools (pools.c). Called with mu held, except where noted.
typedef struct fake_pool *CUmemoryPool;
CUresult pool_alloc(CUmemoryPool p, CUdeviceptr *out, size_t n);
void pool_free(struct record *r); // r is removed
void pools_release_over_threshold(int device); // mu not held
void pools_reset(int device);
extern long live_pools;
CUresult alloc_async(CUdeviceptr *out, size_t n, CUstream s);
size_t device_memory_of(int device);
int peer_possible(int from, int to);
struct record *records_head(void); // the record add_record made last

// Streams and the work they run later.

// The most streams one capture takes (its own and those joined to it).
#define CAPTURE_STREAMS 16

struct fake_event {
	CUcontext ctx;
	unsigned flags;
	long recorded;  // how many records were issued
	long completed; // how many have run
	struct timespec when;
	// The capture its last record was queued in (graphs.c): 0 where it was
	// recorded outside one; a wait on it joins the waiting stream to that
	// capture while it runs. capture_vc: the nodes of each of the
	// capture's streams (by cap_index) that the record follows.
	long capture_id;
	long capture_vc[CAPTURE_STREAMS];
};
enum op_kind { OP_COPY, OP_COPY_STAGED, OP_SET8, OP_SET16, OP_SET32, OP_RECORD, OP_WAIT, OP_KERNEL, OP_NCCL, OP_FREE, OP_BLAS, OP_LIB, OP_COND, OP_CONDRESET, OP_HOST };
struct launch;
struct coll_part;
struct blas_op;
struct lib_job;
// What a copy or memset checks when it runs (struct op's checks).
enum { OP_CHECK_DST = 1, OP_CHECK_SRC = 2, OP_CHECK_LOCKED = 4 };

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
	struct blas_op *blas;
	struct lib_job *job;
	struct fake_cond *cond;  // OP_COND, OP_CONDRESET: the condition
	struct fake_graph *body; // OP_COND: the body run while (or if) it holds
	int loop;                // OP_COND: a while node, not an if
	// A copy's or memset's context, whose sticky error it sets instead of
	// running when memory it touches is gone by the time it runs, as a
	// GPU's copy engine faults: device memory freed (a stream-ordered free
	// that overtook it: CUDA_ERROR_ILLEGAL_ADDRESS), page-locked host
	// memory unregistered or freed under a DMA (CUDA_ERROR_LAUNCH_FAILED
	// on an H100). checks says what to check (OP_CHECK_*).
	CUcontext ctx;
	unsigned checks;
	const void *host; // OP_CHECK_LOCKED: the host memory of the DMA
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
	struct fake_graph *capture; // the graph being captured, if capturing (graphs.c)
	// A stream of a capture (its own, cap_index 0, or joined to it by a
	// wait on an event recorded in it): the nodes it captured, and the
	// nodes of each of the capture's streams (by cap_index) its next node
	// follows, through the waits (a vector clock). At the capture's end
	// the capturing stream's must cover every node of every stream joined
	// to it (else CUDA_ERROR_STREAM_CAPTURE_UNJOINED).
	int cap_index;
	long cap_nodes;
	long cap_vc[CAPTURE_STREAMS];
	struct fake_stream *next_in_list;
};
int stream_live(CUstream s);
CUresult enqueue(CUstream s, struct op o);
void drain_stream(CUstream s);   // waits until s is idle, if it is live
void drain_context(CUcontext c); // waits until every stream of c is idle

// Graphs (graphs.c).
CUresult capture_op(CUstream s, struct op o); // s is capturing
void capture_alloc(CUstream s, uintptr_t base); // mu held
int capture_forbids(void);          // an unsafe call now fails (and ends the captures that forbid it)
void *capture_abandon(CUstream s); // the stream is destroyed while capturing (mu held)
int capture_join(CUstream s, CUevent e); // s waits on e: 1 if that joined s to e's capture, -1 if it has too many streams (mu held)
int capture_detach(struct fake_graph *g, CUstream origin); // g's joined streams leave it: 1 if one was unjoined (mu held)
int capture_event_live(CUevent e); // e's last record was captured in a capture under way (mu held)
void capture_free(void *capture);   // then (mu not held)
struct launch *launch_clone(const struct launch *l);
int launch_same_kernel(const struct launch *a, const struct launch *b);
extern long live_graphs, live_execs;
extern pthread_mutex_t record_mu; // taken before mu (driver.c)
int set_condition(uint64_t handle, unsigned value); // 0: no such handle
void run_op(struct op *o);         // runs o and frees what it owns (driver.c)
void run_conditional(struct op *o); // OP_COND, OP_CONDRESET (graphs.c)
// A conditional handle's value: set at each launch of its graph when it
// has a default to assign, and by the set-condition kernel (kernels.c).
struct fake_cond {
	unsigned value, initial;
	int assign;
	struct fake_cond *next;
};
CUresult alloc_device(CUdeviceptr *p, size_t n); // current's memory
void free_device(void *base); // a device allocation, released now

// ---- kernels.c ---------------------------------------------------------------

// A kernel the fake runs: a built-in C version (kernels.c), or one
// compiled for the host (hostkernels.c). Its parameters lie in a launch's
// params at their offsets.
#define KERNEL_PARAMS 512 // parameters of a kernel, at most (PARAM_BYTES of pointers)
#define PARAM_BYTES 4096  // their bytes, at most (the driver's old limit)
struct kernel {
	const char *name;
	uint64_t hash; // entry_hash of the entry in testdata/kernels.ptx
	int nparams;
	size_t size[KERNEL_PARAMS], offset[KERNEL_PARAMS];
	void (*run)(struct launch *);
};

struct launch {
	CUcontext ctx;
	const struct kernel *k;
	unsigned grid[3], block[3], shared;
	unsigned cluster[3]; // {1, 1, 1} without clusters
	int cooperative;
	unsigned char params[PARAM_BYTES];
};
void launch_fault(struct launch *l, int code); // the context's sticky error, as a kernel's fault

void run_kernel(struct launch *l);
CUresult make_launch(CUfunction f, const unsigned grid[3], const unsigned block[3], unsigned shared, void **params,
                     const unsigned cluster[3], int cooperative, struct launch **out); // checked, not queued
CUresult launch_set_attribute(struct launch *l, int attr, const void *value); // a kernel node's attribute
CUresult launch_keep_attributes(struct launch *to, const struct launch *from);   // an instance's node set again
void unload_modules(CUcontext c);

// ---- hostkernels.c: kernels compiled for the host (internal/hostcc) -------------

// host_kernel returns entry name of a module's text that internal/hostcc
// compiled, its library loaded; NULL for any other entry.
const struct kernel *host_kernel(const char *text, const char *name);
int host_image_ok(const char *text); // 0: it names a host-compiled library that cannot be loaded

// ---- fiber.c: the threads of a block, switched by hand ---------------------------

struct fiber;
struct fiber *fiber_new(void);                                  // NULL: out of memory
void fiber_start(struct fiber *f, void (*fn)(void *), void *arg); // f runs fn(arg) from its next resume
int fiber_resume(struct fiber *f); // runs f until it yields or fn returns (then 1)
void fiber_yield(struct fiber *f); // from inside f: back to its resume

// ---- nccl.c ------------------------------------------------------------------

void run_collective(struct coll_part *p);

// ---- ipc.c --------------------------------------------------------------------

extern long live_ipc; // IPC mappings opened and not closed, under mu

// ---- cublas.c ----------------------------------------------------------------

void run_blas(struct blas_op *o);
struct blas_op *blas_clone(const struct blas_op *o);
extern long live_blas; // cuBLAS and cuBLASLt handles and descriptors, under mu

// ---- library work: rand.c (cuRAND), fft.c (cuFFT) ----------------------------

// A lib_job is work a library queues on a stream (an OP_LIB): a job's
// struct starts with it, and is copied whole (size bytes) for a graph.
struct lib_job {
	void (*run)(struct lib_job *);
	size_t size;
};
CUresult enqueue_job(CUstream s, struct lib_job *job); // takes job, freed once run or refused
extern long live_rand; // cuRAND generators, under mu
extern long live_fft;  // cuFFT plans, under mu
extern long live_sparse; // cuSPARSE handles and descriptors, under mu (sparse.c)
extern long live_dnn;    // cuDNN handles and descriptors, under mu (dnn.c)

#endif
