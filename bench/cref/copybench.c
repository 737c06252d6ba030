// copybench: the C reference for gocuda's copy benchmarks. It makes the
// driver calls gocuda makes (cuMemcpyHtoD_v2 / cuMemcpyDtoH_v2 from ordinary
// malloc'd memory, from cuMemHostAlloc'd memory and from cuMemHostRegister'd
// memory) at the same sizes, timed the same way, and prints one line per
// measurement:
//
//	path direction bytes ns_per_op
//
// Like the Go benchmarks, each copy takes the next slice of a 256 MiB arena
// (or of one the size of the copy, if larger; at most 4096 slices), so that
// no cache holds what it moves.
//
// Arguments, if any, name the paths to run (pageable, pinned, registered).
// Build on the GPU machine: nvcc -O2 -o copybench copybench.c -lcuda
#include "cref.h"
#include <string.h>

// The sizes of the Go benchmarks (copySizes in buffer_bench_test.go).
static const size_t sizes[] = {4, 4 << 10, 16 << 10, 64 << 10, 150 << 10, 196 << 10, 256 << 10,
                               1 << 20, 4928307, 16 << 20, 64 << 20, 256 << 20, 1 << 30};
#define ARENA_MIN ((size_t)256 << 20)
#define MAX_SLOTS 4096 // as the Go benchmarks: the smallest copies measure latency, not page walks

static void copy_at(int up, CUdeviceptr d, char *h, size_t n, long i, size_t slots) {
	size_t off = (size_t)(i % (long)slots) * n;
	if (up) CHECK(cuMemcpyHtoD_v2(d + off, h + off, n));
	else CHECK(cuMemcpyDtoH_v2(h + off, d + off, n));
}

// measure runs copies until about 0.3 s have passed, after a warm-up, as
// Go's testing.B does, and returns the mean time per copy in ns.
static double measure(int up, CUdeviceptr d, char *h, size_t n, size_t arena) {
	size_t slots = arena / n < MAX_SLOTS ? arena / n : MAX_SLOTS;
	long i = 0;
	copy_at(up, d, h, n, i++, slots);
	long reps = 1;
	for (;;) {
		double t0 = now();
		for (long r = 0; r < reps; r++) copy_at(up, d, h, n, i++, slots);
		double dt = now() - t0;
		if (dt > 0.3 || reps > 100000000) return dt / reps * 1e9;
		reps = dt < 0.01 ? reps * 10 : (long)(reps * 0.36 / dt) + 1;
	}
}

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
	size_t arena = ARENA_MIN;
	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
		if (sizes[i] > arena) arena = sizes[i];
	CUdeviceptr d;
	CHECK(cuMemAlloc_v2(&d, arena));
	char *pageable = malloc(arena);
	memset(pageable, 7, arena);
	void *pinned;
	CHECK(cuMemHostAlloc(&pinned, arena, CU_MEMHOSTALLOC_PORTABLE));
	memset(pinned, 7, arena);
	char *reg = malloc(arena);
	memset(reg, 7, arena);
	CHECK(cuMemHostRegister_v2(reg, arena, CU_MEMHOSTREGISTER_PORTABLE));
	for (int up = 1; up >= 0; up--) {
		const char *dir = up ? "H2D" : "D2H";
		for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
			size_t n = sizes[i];
			if (wanted(argc, argv, "pageable")) printf("pageable %s %zu %.1f\n", dir, n, measure(up, d, pageable, n, arena));
			if (wanted(argc, argv, "pinned")) printf("pinned %s %zu %.1f\n", dir, n, measure(up, d, pinned, n, arena));
			if (wanted(argc, argv, "registered")) printf("registered %s %zu %.1f\n", dir, n, measure(up, d, reg, n, arena));
			fflush(stdout);
		}
	}
	CHECK(cuMemHostUnregister(reg));
	free(reg);
	CHECK(cuMemFreeHost(pinned));
	free(pageable);
	CHECK(cuMemFree_v2(d));
	return 0;
}
