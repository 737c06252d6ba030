// occupancy: the C reference for gocuda's occupancy calls (occupancy.go):
// for each kernel of testdata/occupancy.ptx and testdata/kernels.ptx, the
// driver's answers to the occupancy calls, a line each:
//
//	KERNEL active BLOCKSIZE SHARED BLOCKS
//	KERNEL suggest SHARED LIMIT MINGRID BLOCKSIZE        (a fixed size)
//	KERNEL suggestfn PERTHREAD LIMIT MINGRID BLOCKSIZE   (PERTHREAD bytes a thread, through the driver's callback)
//	KERNEL available BLOCKS BLOCKSIZE SHARED                (-1: refused)
//
// TestOccupancyMatchesC reads the lines and asks gocuda the same.
//
// Build on the GPU machine: nvcc -O2 -o occupancy bench/cref/occupancy.c -lcuda
// Run: occupancy testdata/occupancy.ptx testdata/kernels.ptx > occupancy.txt
#include "cref.h"
#include <string.h>

static size_t per_thread;
static size_t shared_for(int block) { return per_thread * (size_t)block; }

static char *slurp(const char *path) {
	FILE *f = fopen(path, "rb");
	if (!f) {
		perror(path);
		exit(1);
	}
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *s = calloc(1, n + 1);
	if (fread(s, 1, n, f) != (size_t)n) exit(1);
	fclose(f);
	return s;
}

int main(int argc, char **argv) {
	CUdevice dev;
	CUcontext ctx;
	CHECK(cuInit(0));
	CHECK(cuDeviceGet(&dev, 0));
	CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
	CHECK(cuCtxSetCurrent(ctx));
	const char *kernels[] = {"occ_plain", "occ_shared12k", "occ_shared40k", "occ_reqntid", "occ_regs", "vadd_f32", "saxpy", "reverse"};
	for (int a = 1; a < argc; a++) {
		char *ptx = slurp(argv[a]);
		CUmodule m;
		CHECK(cuModuleLoadData(&m, ptx));
		for (size_t k = 0; k < sizeof kernels / sizeof kernels[0]; k++) {
			CUfunction f;
			if (cuModuleGetFunction(&f, m, kernels[k]) != CUDA_SUCCESS) continue;
			int limit;
			CHECK(cuFuncGetAttribute(&limit, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f));
			int sizes[] = {32, 96, 128, 256, 1000, 1024};
			size_t shared[] = {0, 1024, 20 << 10, 48 << 10};
			for (int i = 0; i < 6; i++)
				for (int j = 0; j < 4; j++) {
					if (sizes[i] > limit) continue;
					int n;
					CHECK(cuOccupancyMaxActiveBlocksPerMultiprocessor(&n, f, sizes[i], shared[j]));
					printf("%s active %d %zu %d\n", kernels[k], sizes[i], shared[j], n);
				}
			int limits[] = {0, 100, 512};
			for (int j = 0; j < 4; j++)
				for (int l = 0; l < 3; l++) {
					int grid, block;
					CHECK(cuOccupancyMaxPotentialBlockSize(&grid, &block, f, NULL, shared[j], limits[l]));
					printf("%s suggest %zu %d %d %d\n", kernels[k], shared[j], limits[l], grid, block);
				}
			size_t per[] = {4, 48, 200};
			for (int j = 0; j < 3; j++)
				for (int l = 0; l < 3; l++) {
					int grid, block;
					per_thread = per[j];
					CHECK(cuOccupancyMaxPotentialBlockSize(&grid, &block, f, shared_for, 0, limits[l]));
					printf("%s suggestfn %zu %d %d %d\n", kernels[k], per[j], limits[l], grid, block);
				}
			int counts[] = {1, 2, 5, 16};
			for (int j = 0; j < 4; j++) {
				size_t room;
				int block = limit < 128 ? limit : 128;
				// Refused where the blocks cannot fit at all: -1.
				if (cuOccupancyAvailableDynamicSMemPerBlock(&room, f, counts[j], block) != CUDA_SUCCESS)
					printf("%s available %d %d -1\n", kernels[k], counts[j], block);
				else
					printf("%s available %d %d %zu\n", kernels[k], counts[j], block, room);
			}
		}
		CHECK(cuModuleUnload(m));
		free(ptx);
	}
	CHECK(cuDevicePrimaryCtxRelease(dev));
	return 0;
}
