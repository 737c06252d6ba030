// memchurn makes, from C, the driver calls of gocuda's
// TestDeviceMemoryAfterChurn: goroutines (here threads), each with its own
// non-blocking stream, pinned staging memory (3 slots of 16 MiB, portable)
// and three events, making rounds of round trips of 1 B to 8 MiB through
// device buffers allocated and freed each time (synchronous pageable
// copies below 2 MiB, chunked asynchronous copies through the pinned slots
// from 2 MiB), then destroying everything. It prints the device's free
// memory before and after two such churns: what the driver itself keeps.
//
//   nvcc -O2 -o memchurn bench/cref/memchurn.c -lcuda -lpthread && ./memchurn [THREADS] [ROUNDS]
#include <pthread.h>
#include <string.h>

#include "cref.h"

static CUcontext ctx;
static int rounds = 50;
static const size_t sizes[] = {1, 4 << 10, 64 << 10, 1 << 20, 4 << 20, 8 << 20};
#define SLOT ((size_t)16 << 20)
#define CHUNK ((size_t)1 << 20)

static void *work(void *arg) {
	(void)arg;
	CHECK(cuCtxSetCurrent(ctx));
	CUstream s;
	CHECK(cuStreamCreateWithPriority(&s, CU_STREAM_NON_BLOCKING, 0));
	void *pinned;
	CHECK(cuMemHostAlloc(&pinned, 3 * SLOT, CU_MEMHOSTALLOC_PORTABLE));
	CUevent ev[3];
	for (int i = 0; i < 3; i++) CHECK(cuEventCreate(&ev[i], CU_EVENT_DISABLE_TIMING));
	char *host = malloc(8 << 20), *back = malloc(8 << 20);
	memset(host, 7, 8 << 20);
	for (int r = 0; r < rounds; r++) {
		for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
			size_t n = sizes[k];
			CUdeviceptr d;
			CHECK(cuMemAlloc(&d, n));
			if (n < (2 << 20)) {
				CHECK(cuMemcpyHtoD(d, host, n));
				CHECK(cuStreamSynchronize(0));
				CHECK(cuMemcpyDtoH(back, d, n));
			} else {
				for (size_t off = 0, i = 0; off < n; off += CHUNK, i++) {
					char *slot = (char *)pinned + (i % 3) * SLOT;
					if (i >= 3) CHECK(cuEventSynchronize(ev[i % 3]));
					memcpy(slot, host + off, CHUNK);
					CHECK(cuMemcpyHtoDAsync(d + off, slot, CHUNK, s));
					CHECK(cuEventRecord(ev[i % 3], s));
				}
				CHECK(cuStreamSynchronize(s));
				for (size_t off = 0, i = 0; off < n; off += CHUNK, i++) {
					char *slot = (char *)pinned + (i % 3) * SLOT;
					CHECK(cuMemcpyDtoHAsync(slot, d + off, CHUNK, s));
					CHECK(cuEventRecord(ev[i % 3], s));
					CHECK(cuEventSynchronize(ev[i % 3]));
					memcpy(back + off, slot, CHUNK);
				}
			}
			CHECK(cuMemFree(d));
		}
	}
	free(host);
	free(back);
	for (int i = 0; i < 3; i++) CHECK(cuEventDestroy(ev[i]));
	CHECK(cuMemFreeHost(pinned));
	CHECK(cuStreamSynchronize(s));
	CHECK(cuStreamDestroy(s));
	return NULL;
}

static size_t free_now(void) {
	size_t f, t;
	CHECK(cuCtxSynchronize());
	CHECK(cuMemGetInfo(&f, &t));
	return f;
}

static void churn(int threads) {
	pthread_t th[256];
	for (int i = 0; i < threads; i++) pthread_create(&th[i], NULL, work, NULL);
	for (int i = 0; i < threads; i++) pthread_join(th[i], NULL);
}

int main(int argc, char **argv) {
	int threads = argc > 1 ? atoi(argv[1]) : 64;
	if (argc > 2) rounds = atoi(argv[2]);
	if (threads < 1 || threads > 256) threads = 64;
	CUdevice dev;
	CHECK(cuInit(0));
	CHECK(cuDeviceGet(&dev, 0));
	CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
	CHECK(cuCtxSetCurrent(ctx));
	size_t before = free_now();
	churn(threads);
	size_t first = free_now();
	churn(threads);
	size_t second = free_now();
	printf("memchurn: %d threads, %d rounds: device memory free %zu MiB before, %ld MiB lower after a churn, %ld MiB lower after a second\n",
	       threads, rounds, before >> 20, ((long)before - (long)first) >> 20, ((long)before - (long)second) >> 20);
	CHECK(cuDevicePrimaryCtxRelease(dev));
	return 0;
}
