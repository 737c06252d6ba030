// copybench: the C reference for gocuda's copy benchmarks. It makes the
// driver calls gocuda makes (cuMemcpyHtoD_v2 / cuMemcpyDtoH_v2 from ordinary
// malloc'd memory, from cuMemHostAlloc'd memory and from cuMemHostRegister'd
// memory) at the same sizes, and prints one line per measurement:
//
//	path direction bytes ns_per_op
//
// Arguments, if any, name the paths to run (pageable, pinned, registered).
//
// Build on the GPU machine: nvcc -O2 -o copybench copybench.c -lcuda
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHECK(x)                                                            \
	do {                                                                    \
		CUresult r_ = (x);                                                  \
		if (r_ != CUDA_SUCCESS) {                                           \
			fprintf(stderr, "%s:%d: %s = %d\n", __FILE__, __LINE__, #x, r_); \
			exit(1);                                                        \
		}                                                                   \
	} while (0)

static double now(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

static const size_t sizes[] = {4, 4 << 10, 150 << 10, 196 << 10, 1 << 20, 4928307, 16 << 20, 64 << 20, 256 << 20, 1 << 30};

// measure runs one copy until about 0.3 s have passed, after a warm-up, as
// Go's testing.B does, and returns the mean time per copy in ns.
static double measure(int up, CUdeviceptr d, void *h, size_t n) {
	if (up) CHECK(cuMemcpyHtoD_v2(d, h, n));
	else CHECK(cuMemcpyDtoH_v2(h, d, n));
	long reps = 1;
	for (;;) {
		double t0 = now();
		for (long i = 0; i < reps; i++) {
			if (up) CHECK(cuMemcpyHtoD_v2(d, h, n));
			else CHECK(cuMemcpyDtoH_v2(h, d, n));
		}
		double dt = now() - t0;
		if (dt > 0.3 || reps > 100000000) return dt / reps * 1e9;
		reps = dt < 0.01 ? reps * 10 : (long)(reps * 0.36 / dt) + 1;
	}
}

// With arguments, only the paths named (pageable, pinned, registered) run.
static int wanted(int argc, char **argv, const char *path) {
	if (argc < 2) return 1;
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], path)) return 1;
	return 0;
}

int main(int argc, char **argv) {
	CUdevice dev;
	CUcontext ctx;
	CHECK(cuInit(0));
	CHECK(cuDeviceGet(&dev, 0));
	CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
	CHECK(cuCtxSetCurrent(ctx));
	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		size_t n = sizes[i];
		CUdeviceptr d;
		CHECK(cuMemAlloc_v2(&d, n));
		char *pageable = malloc(n);
		memset(pageable, 7, n);
		void *pinned;
		CHECK(cuMemHostAlloc(&pinned, n, CU_MEMHOSTALLOC_PORTABLE));
		memset(pinned, 7, n);
		char *reg = malloc(n);
		memset(reg, 7, n);
		CHECK(cuMemHostRegister_v2(reg, n, CU_MEMHOSTREGISTER_PORTABLE));
		for (int up = 1; up >= 0; up--) {
			const char *dir = up ? "H2D" : "D2H";
			if (wanted(argc, argv, "pageable")) printf("pageable %s %zu %.1f\n", dir, n, measure(up, d, pageable, n));
			if (wanted(argc, argv, "pinned")) printf("pinned %s %zu %.1f\n", dir, n, measure(up, d, pinned, n));
			if (wanted(argc, argv, "registered")) printf("registered %s %zu %.1f\n", dir, n, measure(up, d, reg, n));
			fflush(stdout);
		}
		CHECK(cuMemHostUnregister(reg));
		free(reg);
		CHECK(cuMemFreeHost(pinned));
		free(pageable);
		CHECK(cuMemFree_v2(d));
	}
	return 0;
}
