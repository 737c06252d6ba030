// kernelbench: the C reference for gocuda's kernel benchmarks
// (launch_bench_test.go): the same driver calls on the same kernels
// (testdata/kernels.ptx), timed as Go's testing.B does (mean over about
// 0.3 s after a warm-up). Prints one line per benchmark: name ns_per_op.
//
// Build on the GPU machine: nvcc -O2 -o kernelbench kernelbench.c -lcuda
// Run: kernelbench testdata/kernels.ptx
#include "cref.h"

static CUstream stream;
static CUfunction empty, saxpy;
static CUdeviceptr x, y, src, dst;
static const unsigned n = 16u << 20;
static const size_t copy_bytes = (size_t)256 << 20;
static long launches;

static void stream_query(void) { CHECK(cuStreamQuery(stream)); }

static void launch_sync(void) {
	CHECK(cuLaunchKernel(empty, 1, 1, 1, 1, 1, 1, 0, stream, NULL, NULL));
	CHECK(cuStreamSynchronize(stream));
}

static void launch_async(void) {
	CHECK(cuLaunchKernel(empty, 1, 1, 1, 1, 1, 1, 0, stream, NULL, NULL));
	if (++launches % 1024 == 0) CHECK(cuStreamSynchronize(stream));
}

static void run_saxpy(void) {
	float a = 0.5f;
	unsigned nn = n;
	void *args[] = {&a, &x, &y, &nn};
	CHECK(cuLaunchKernel(saxpy, n / 256, 1, 1, 256, 1, 1, 0, stream, args, NULL));
	CHECK(cuStreamSynchronize(stream));
}

// The 4-byte synchronous copies of BenchmarkCopy{From,To}Host/4B: the
// latency of the smallest pageable transfer.
static unsigned host4;
static void copy_up4(void) { CHECK(cuMemcpyHtoD_v2(x, &host4, 4)); }
static void copy_down4(void) { CHECK(cuMemcpyDtoH_v2(&host4, x, 4)); }

static void copy_dtod(void) {
	CHECK(cuMemcpyDtoDAsync_v2(dst, src, copy_bytes, stream));
	CHECK(cuStreamSynchronize(stream));
}

static double measure(void (*op)(void)) {
	op();
	long reps = 1;
	for (;;) {
		double t0 = now();
		for (long i = 0; i < reps; i++) op();
		double dt = now() - t0;
		if (dt > 0.3 || reps > 100000000) {
			CHECK(cuStreamSynchronize(stream));
			return dt / reps * 1e9;
		}
		reps = dt < 0.01 ? reps * 10 : (long)(reps * 0.36 / dt) + 1;
	}
}

int main(int argc, char **argv) {
	if (argc != 2) {
		fprintf(stderr, "usage: kernelbench kernels.ptx\n");
		return 2;
	}
	FILE *f = fopen(argv[1], "rb");
	if (!f) {
		perror(argv[1]);
		return 1;
	}
	static char ptx[1 << 20];
	size_t len = fread(ptx, 1, sizeof ptx - 1, f);
	fclose(f);
	ptx[len] = 0;
	CUdevice dev;
	CUcontext ctx;
	CUmodule mod;
	CHECK(cuInit(0));
	CHECK(cuDeviceGet(&dev, 0));
	CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
	CHECK(cuCtxSetCurrent(ctx));
	CHECK(cuStreamCreateWithPriority(&stream, CU_STREAM_NON_BLOCKING, 0));
	CHECK(cuModuleLoadData(&mod, ptx));
	CHECK(cuModuleGetFunction(&empty, mod, "empty"));
	CHECK(cuModuleGetFunction(&saxpy, mod, "saxpy"));
	CHECK(cuMemAlloc_v2(&x, (size_t)n * 4));
	CHECK(cuMemAlloc_v2(&y, (size_t)n * 4));
	CHECK(cuMemsetD32_v2(x, 0x3f800000, n));
	CHECK(cuMemsetD32_v2(y, 0, n));
	CHECK(cuMemAlloc_v2(&src, copy_bytes));
	CHECK(cuMemAlloc_v2(&dst, copy_bytes));
	CHECK(cuMemsetD8_v2(src, 0, copy_bytes));
	CHECK(cuCtxSynchronize());
	printf("StreamQuery %.1f\n", measure(stream_query));
	printf("LaunchSync %.1f\n", measure(launch_sync));
	printf("LaunchAsync %.1f\n", measure(launch_async));
	printf("Saxpy %.1f\n", measure(run_saxpy));
	printf("CopyDeviceToDevice %.1f\n", measure(copy_dtod));
	printf("CopyFromHost/4B %.1f\n", measure(copy_up4));
	printf("CopyToHost/4B %.1f\n", measure(copy_down4));
	return 0;
}
