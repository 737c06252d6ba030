// managed: the C reference for BenchmarkManagedPrefetch (managed.go):
// 1 GiB of managed memory, every page written by the host, prefetched to
// the device and back on one stream (cuMemPrefetchAsync_v2), beside the
// pinned copies of the same size both ways; then each direction alone.
// Prints GB/s (10^9 bytes a second, the bytes counted each way), the
// median of ROUNDS rounds:
//
//	managed roundtrip GBPS
//	managed to-device GBPS
//	managed to-host GBPS
//	pinned roundtrip GBPS
//	managed to-host-split K GBPS     (the move to the host in K parts on K streams)
//
// Build on the GPU machine: nvcc -O2 -o managed bench/cref/managed.c -lcuda
#include "cref.h"
#include <string.h>

enum { ROUNDS = 7 };
static const size_t N = (size_t)1 << 30;

static int cmp(const void *a, const void *b) {
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v) {
	qsort(v, ROUNDS, sizeof *v, cmp);
	return v[ROUNDS / 2];
}

static void touch(unsigned char *p) {
	for (size_t i = 0; i < N; i += 4096) p[i]++;
}

int main(void) {
	CUdevice dev;
	CUcontext ctx;
	CUstream s;
	CHECK(cuInit(0));
	CHECK(cuDeviceGet(&dev, 0));
	CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
	CHECK(cuCtxSetCurrent(ctx));
	CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CUdeviceptr m;
	CHECK(cuMemAllocManaged(&m, N, CU_MEM_ATTACH_GLOBAL));
	unsigned char *host = (unsigned char *)(uintptr_t)m;
	memset(host, 1, N);
	CUmemLocation onDev = {CU_MEM_LOCATION_TYPE_DEVICE, 0}, onHost = {CU_MEM_LOCATION_TYPE_HOST, 0};
	double rt[ROUNDS], up[ROUNDS], down[ROUNDS], pinned[ROUNDS];
	for (int r = 0; r < ROUNDS; r++) {
		touch(host);
		double t0 = now();
		CHECK(cuMemPrefetchAsync_v2(m, N, onDev, 0, s));
		CHECK(cuMemPrefetchAsync_v2(m, N, onHost, 0, s));
		CHECK(cuStreamSynchronize(s));
		rt[r] = 2 * N / (now() - t0) / 1e9;
		touch(host);
		t0 = now();
		CHECK(cuMemPrefetchAsync_v2(m, N, onDev, 0, s));
		CHECK(cuStreamSynchronize(s));
		double t1 = now();
		CHECK(cuMemPrefetchAsync_v2(m, N, onHost, 0, s));
		CHECK(cuStreamSynchronize(s));
		up[r] = N / (t1 - t0) / 1e9;
		down[r] = N / (now() - t1) / 1e9;
	}
	void *h;
	CUdeviceptr d;
	CHECK(cuMemHostAlloc(&h, N, 0));
	CHECK(cuMemAlloc(&d, N));
	memset(h, 1, N);
	for (int r = 0; r < ROUNDS; r++) {
		double t0 = now();
		CHECK(cuMemcpyHtoDAsync(d, h, N, s));
		CHECK(cuMemcpyDtoHAsync(h, d, N, s));
		CHECK(cuStreamSynchronize(s));
		pinned[r] = 2 * N / (now() - t0) / 1e9;
	}
	printf("managed roundtrip %.2f\nmanaged to-device %.2f\nmanaged to-host %.2f\npinned roundtrip %.2f\n", median(rt), median(up), median(down), median(pinned));
	// Does the driver move to the host faster in parts on several streams?
	enum { MAXK = 8 };
	CUstream ss[MAXK];
	for (int k = 0; k < MAXK; k++) CHECK(cuStreamCreate(&ss[k], CU_STREAM_NON_BLOCKING));
	for (int k = 2; k <= MAXK; k *= 2) {
		double split[ROUNDS];
		for (int r = 0; r < ROUNDS; r++) {
			touch(host);
			CHECK(cuMemPrefetchAsync_v2(m, N, onDev, 0, s));
			CHECK(cuStreamSynchronize(s));
			double t0 = now();
			for (int i = 0; i < k; i++) CHECK(cuMemPrefetchAsync_v2(m + i * (N / k), N / k, onHost, 0, ss[i]));
			for (int i = 0; i < k; i++) CHECK(cuStreamSynchronize(ss[i]));
			split[r] = N / (now() - t0) / 1e9;
		}
		printf("managed to-host-split %d %.2f\n", k, median(split));
	}
	return 0;
}
