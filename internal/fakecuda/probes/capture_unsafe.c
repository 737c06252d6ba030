// capture_unsafe asks the real driver which calls a stream capture forbids:
// the fake driver (internal/fakecuda/csrc) refuses the same ones, and no
// others, while a capture of the mode that forbids them is under way.
//
// For each call and each case it begins a capture on a stream of its own
// (a memset captured first), makes the call on a resource outside the
// capture, from the capturing thread or from another one, then ends the
// capture, and prints the call's result and the end's: 0 and 0 where the
// call is allowed; CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED (900) and
// CUDA_ERROR_STREAM_CAPTURE_INVALIDATED (901) where it is forbidden and
// the capture lost.
//
// Built and run by scripts/gpu-capture-probe.sh (plain C: the driver is
// opened with dlopen, so no toolkit is needed to build it).
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef void *H;
typedef unsigned long long P;

#define FN(name, ...) static CUresult (*name)(__VA_ARGS__)
FN(cuInit, unsigned);
FN(cuDeviceGet, int *, int);
FN(cuDevicePrimaryCtxRetain, H *, int);
FN(cuCtxSetCurrent, H);
FN(cuCtxSynchronize, void);
FN(cuStreamCreateWithPriority, H *, unsigned, int);
FN(cuStreamDestroy_v2, H);
FN(cuStreamSynchronize, H);
FN(cuStreamQuery, H);
FN(cuStreamWaitEvent, H, H, unsigned);
FN(cuStreamBeginCapture_v2, H, int);
FN(cuStreamEndCapture, H, H *);
FN(cuGraphDestroy, H);
FN(cuGraphInstantiateWithFlags, H *, H, unsigned long long);
FN(cuGraphExecDestroy, H);
FN(cuGraphLaunch, H, H);
FN(cuEventCreate, H *, unsigned);
FN(cuEventDestroy_v2, H);
FN(cuEventRecord, H, H);
FN(cuEventQuery, H);
FN(cuEventSynchronize, H);
FN(cuMemAlloc_v2, P *, size_t);
FN(cuMemFree_v2, P);
FN(cuMemAllocAsync, P *, size_t, H);
FN(cuMemFreeAsync, P, H);
FN(cuMemsetD32_v2, P, unsigned, size_t);
FN(cuMemsetD32Async, P, unsigned, size_t, H);
FN(cuMemcpyHtoD_v2, P, const void *, size_t);
FN(cuMemcpyDtoH_v2, void *, P, size_t);
FN(cuMemcpyHtoDAsync_v2, P, const void *, size_t, H);
FN(cuMemHostAlloc, void **, size_t, unsigned);
FN(cuMemFreeHost, void *);
FN(cuMemHostRegister_v2, void *, size_t, unsigned);
FN(cuMemHostUnregister, void *);
FN(cuMemGetInfo_v2, size_t *, size_t *);
FN(cuDeviceGetDefaultMemPool, H *, int);
FN(cuMemPoolTrimTo, H, size_t);

static H ctx, cap, other;
static P dev, dev2;
static H ev, exec_;
static char host[4096];

static void load(void) {
	void *l = dlopen("libcuda.so.1", RTLD_NOW);
	if (!l) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		exit(1);
	}
#define LOAD(name)                                              \
	if (!(*(void **)&name = dlsym(l, #name))) {             \
		fprintf(stderr, "no symbol %s\n", #name);       \
		exit(1);                                        \
	}
	LOAD(cuInit) LOAD(cuDeviceGet) LOAD(cuDevicePrimaryCtxRetain) LOAD(cuCtxSetCurrent)
	LOAD(cuCtxSynchronize) LOAD(cuStreamCreateWithPriority) LOAD(cuStreamDestroy_v2) LOAD(cuStreamSynchronize)
	LOAD(cuStreamQuery) LOAD(cuStreamWaitEvent) LOAD(cuStreamBeginCapture_v2) LOAD(cuStreamEndCapture)
	LOAD(cuGraphDestroy) LOAD(cuGraphInstantiateWithFlags) LOAD(cuGraphExecDestroy) LOAD(cuGraphLaunch)
	LOAD(cuEventCreate) LOAD(cuEventDestroy_v2) LOAD(cuEventRecord) LOAD(cuEventQuery)
	LOAD(cuEventSynchronize) LOAD(cuMemAlloc_v2) LOAD(cuMemFree_v2) LOAD(cuMemAllocAsync)
	LOAD(cuMemFreeAsync) LOAD(cuMemsetD32_v2) LOAD(cuMemsetD32Async) LOAD(cuMemcpyHtoD_v2)
	LOAD(cuMemcpyDtoH_v2) LOAD(cuMemcpyHtoDAsync_v2) LOAD(cuMemHostAlloc) LOAD(cuMemFreeHost)
	LOAD(cuMemHostRegister_v2) LOAD(cuMemHostUnregister) LOAD(cuMemGetInfo_v2)
	LOAD(cuDeviceGetDefaultMemPool) LOAD(cuMemPoolTrimTo)
}

// Each probe makes one call on resources outside the capture; setup, run
// before the capture begins, makes what the call consumes.
struct probe {
	const char *name;
	void (*setup)(void);
	CUresult (*call)(void);
};

static P freeme;
static H streamme, eventme, execme;
static void *hostme;
static void mkalloc(void) { cuMemAlloc_v2(&freeme, 256); }
static void mkasync(void) {
	cuMemAllocAsync(&freeme, 256, other);
	cuStreamSynchronize(other);
}
static void mkstream(void) { cuStreamCreateWithPriority(&streamme, 1, 0); }
static void mkevent(void) { cuEventCreate(&eventme, 2); }
static void mkexec(void) {
	H g;
	cuStreamBeginCapture_v2(other, 2);
	cuMemsetD32Async(dev2, 1, 16, other);
	cuStreamEndCapture(other, &g);
	cuGraphInstantiateWithFlags(&execme, g, 0);
	cuGraphDestroy(g);
}
static void mkhost(void) { cuMemHostAlloc(&hostme, 4096, 0); }
static void mkreg(void) {
	hostme = aligned_alloc(4096, 4096);
	cuMemHostRegister_v2(hostme, 4096, 0);
}
static void none(void) {}

static CUresult c_alloc(void) {
	P p;
	CUresult r = cuMemAlloc_v2(&p, 256);
	if (r == 0) freeme = p;
	return r;
}
static CUresult c_free(void) { return cuMemFree_v2(freeme); }
static CUresult c_allocasync(void) {
	P p;
	CUresult r = cuMemAllocAsync(&p, 256, other);
	if (r == 0) cuMemFreeAsync(p, other);
	return r;
}
static CUresult c_freeasync(void) { return cuMemFreeAsync(freeme, other); }
static CUresult c_streamsync(void) { return cuStreamSynchronize(other); }
static CUresult c_streamquery(void) { return cuStreamQuery(other); }
static CUresult c_ctxsync(void) { return cuCtxSynchronize(); }
static CUresult c_eventrecord(void) { return cuEventRecord(ev, other); }
static CUresult c_eventquery(void) { return cuEventQuery(ev); }
static CUresult c_eventsync(void) { return cuEventSynchronize(ev); }
static CUresult c_waitevent(void) { return cuStreamWaitEvent(other, ev, 0); }
static CUresult c_memset(void) { return cuMemsetD32_v2(dev2, 3, 16); }
static CUresult c_memsetasync(void) { return cuMemsetD32Async(dev2, 3, 16, other); }
static CUresult c_htod(void) { return cuMemcpyHtoD_v2(dev2, host, 64); }
static CUresult c_dtoh(void) { return cuMemcpyDtoH_v2(host, dev2, 64); }
static CUresult c_htodasync(void) { return cuMemcpyHtoDAsync_v2(dev2, host, 64, other); }
static CUresult c_streamcreate(void) {
	H s;
	CUresult r = cuStreamCreateWithPriority(&s, 1, 0);
	if (r == 0) streamme = s;
	return r;
}
static CUresult c_streamdestroy(void) { return cuStreamDestroy_v2(streamme); }
static CUresult c_eventcreate(void) {
	H e;
	CUresult r = cuEventCreate(&e, 2);
	if (r == 0) eventme = e;
	return r;
}
static CUresult c_eventdestroy(void) { return cuEventDestroy_v2(eventme); }
static CUresult c_graphlaunch(void) { return cuGraphLaunch(exec_, other); }
static CUresult c_execdestroy(void) { return cuGraphExecDestroy(execme); }
static CUresult c_hostalloc(void) {
	void *p;
	CUresult r = cuMemHostAlloc(&p, 4096, 0);
	if (r == 0) hostme = p;
	return r;
}
static CUresult c_freehost(void) { return cuMemFreeHost(hostme); }
static CUresult c_register(void) {
	hostme = aligned_alloc(4096, 4096);
	return cuMemHostRegister_v2(hostme, 4096, 0);
}
static CUresult c_unregister(void) { return cuMemHostUnregister(hostme); }
static CUresult c_meminfo(void) {
	size_t f, t;
	return cuMemGetInfo_v2(&f, &t);
}
static CUresult c_trim(void) {
	H pool;
	cuDeviceGetDefaultMemPool(&pool, 0);
	return cuMemPoolTrimTo(pool, 0);
}

static struct probe probes[] = {
	{"cuMemAlloc", none, c_alloc},
	{"cuMemFree", mkalloc, c_free},
	{"cuMemAllocAsync", none, c_allocasync},
	{"cuMemFreeAsync", mkasync, c_freeasync},
	{"cuStreamSynchronize", none, c_streamsync},
	{"cuStreamQuery", none, c_streamquery},
	{"cuCtxSynchronize", none, c_ctxsync},
	{"cuEventRecord", none, c_eventrecord},
	{"cuEventQuery", none, c_eventquery},
	{"cuEventSynchronize", none, c_eventsync},
	{"cuStreamWaitEvent", none, c_waitevent},
	{"cuMemsetD32", none, c_memset},
	{"cuMemsetD32Async", none, c_memsetasync},
	{"cuMemcpyHtoD", none, c_htod},
	{"cuMemcpyDtoH", none, c_dtoh},
	{"cuMemcpyHtoDAsync", none, c_htodasync},
	{"cuStreamCreate", none, c_streamcreate},
	{"cuStreamDestroy", mkstream, c_streamdestroy},
	{"cuEventCreate", none, c_eventcreate},
	{"cuEventDestroy", mkevent, c_eventdestroy},
	{"cuGraphLaunch", none, c_graphlaunch},
	{"cuGraphExecDestroy", mkexec, c_execdestroy},
	{"cuMemHostAlloc", none, c_hostalloc},
	{"cuMemFreeHost", mkhost, c_freehost},
	{"cuMemHostRegister", none, c_register},
	{"cuMemHostUnregister", mkreg, c_unregister},
	{"cuMemGetInfo", none, c_meminfo},
	{"cuMemPoolTrimTo", none, c_trim},
};

static CUresult result;
static struct probe *current;
static void *on_thread(void *arg) {
	(void)arg;
	cuCtxSetCurrent(ctx);
	result = current->call();
	return NULL;
}

// run makes p's call inside a capture of mode (0 global, 1 thread-local,
// 2 relaxed), on this thread or another, and returns the call's result
// and the capture's end's.
static void run(struct probe *p, int mode, int thread, CUresult *call, CUresult *end) {
	cuCtxSynchronize();
	p->setup();
	cuCtxSynchronize();
	cuStreamBeginCapture_v2(cap, mode);
	cuMemsetD32Async(dev, 1, 16, cap);
	current = p;
	if (thread) {
		pthread_t t;
		pthread_create(&t, NULL, on_thread, NULL);
		pthread_join(t, NULL);
		*call = result;
	} else {
		*call = p->call();
	}
	H g = NULL;
	*end = cuStreamEndCapture(cap, &g);
	if (g) cuGraphDestroy(g);
	cuCtxSynchronize();
}

int main(void) {
	load();
	int d;
	if (cuInit(0) || cuDeviceGet(&d, 0) || cuDevicePrimaryCtxRetain(&ctx, d) || cuCtxSetCurrent(ctx)) {
		fprintf(stderr, "no device\n");
		return 1;
	}
	cuStreamCreateWithPriority(&cap, 1, 0);
	cuStreamCreateWithPriority(&other, 1, 0);
	cuMemAlloc_v2(&dev, 4096);
	cuMemAlloc_v2(&dev2, 4096);
	cuEventCreate(&ev, 2);
	cuEventRecord(ev, other);
	H g;
	cuStreamBeginCapture_v2(other, 2);
	cuMemsetD32Async(dev2, 1, 16, other);
	cuStreamEndCapture(other, &g);
	cuGraphInstantiateWithFlags(&exec_, g, 0);
	cuGraphDestroy(g);
	printf("%-22s %-13s %-13s %-13s %-13s\n", "call", "global,same", "global,other", "local,same", "local,other");
	for (size_t i = 0; i < sizeof probes / sizeof probes[0]; i++) {
		printf("%-22s", probes[i].name);
		for (int mode = 0; mode < 2; mode++)
			for (int thread = 0; thread < 2; thread++) {
				CUresult call, end;
				run(&probes[i], mode, thread, &call, &end);
				printf(" %4d/%-8d", call, end);
			}
		printf("\n");
		fflush(stdout);
	}
	return 0;
}
