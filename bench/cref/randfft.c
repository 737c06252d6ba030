// randfft: the C reference for packages curand and cufft's benchmarks
// (BenchmarkGenerate, BenchmarkFFT, BenchmarkExecRepeated): the same
// library calls from C on one non-blocking stream, timed the same way.
// Prints the median of 20 timed calls after 3 warm-up calls, in
// microseconds:
//
//	c.NAME MICROSECONDS
//
// for curand's uniform, normal, uniform-dynamic and normal-dynamic (256 Mi
// float32, each call then a synchronize), cufft's fft-2^24,
// fft-4096x4096-batched and rfft2-8192x8192 (each execution then a
// synchronize), and for a repeated small transform (64 complex64, batch 1):
// exec-64 (a call alone: 4096 executions, a synchronize after every 256,
// the time divided by 4096) and exec-64-sync (an execution then a
// synchronize).
//
// Build on the GPU machine:
//
//	nvcc -O2 -o randfft bench/cref/randfft.c -lcurand -lcufft -lcuda
#include "cref.h"
#include <cufft.h>
#include <curand.h>

#define CHECKR(x)                                                            \
	do {                                                                     \
		int r_ = (int)(x);                                                   \
		if (r_ != 0) {                                                       \
			fprintf(stderr, "%s:%d: %s = %d\n", __FILE__, __LINE__, #x, r_); \
			exit(1);                                                         \
		}                                                                    \
	} while (0)

enum { WARM = 3, TIMED = 20 };

static int cmp(const void *a, const void *b) {
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static CUstream s;

// timeit prints the median over TIMED calls of fn(arg) then a synchronize.
static void timeit(const char *name, void (*fn)(void *), void *arg) {
	double t[TIMED];
	for (int i = 0; i < WARM; i++) fn(arg);
	CHECK(cuStreamSynchronize(s));
	for (int i = 0; i < TIMED; i++) {
		double t0 = now();
		fn(arg);
		CHECK(cuStreamSynchronize(s));
		t[i] = now() - t0;
	}
	qsort(t, TIMED, sizeof *t, cmp);
	printf("c.%s %.1f\n", name, t[TIMED / 2] * 1e6);
	fflush(stdout);
}

static const size_t NRAND = (size_t)256 << 20;
static float *x;

static void uniform(void *g) { CHECKR(curandGenerateUniform((curandGenerator_t)g, x, NRAND)); }
static void normal(void *g) { CHECKR(curandGenerateNormal((curandGenerator_t)g, x, NRAND, 0, 1)); }

struct fft {
	cufftHandle plan;
	void *in, *out;
	int real;
};

static void exec(void *arg) {
	struct fft *f = arg;
	if (f->real)
		CHECKR(cufftExecR2C(f->plan, f->in, f->out));
	else
		CHECKR(cufftExecC2C(f->plan, f->in, f->out, CUFFT_FORWARD));
}

static void *alloc(size_t bytes) {
	CUdeviceptr d;
	CHECK(cuMemAlloc(&d, bytes));
	return (void *)(uintptr_t)d;
}

static void plan(struct fft *f, int rank, int *n, int batch, cufftType t) {
	size_t elems = batch, work;
	for (int i = 0; i < rank; i++) elems *= n[i];
	CHECKR(cufftCreate(&f->plan));
	CHECKR(cufftMakePlanMany(f->plan, rank, n, NULL, 1, 0, NULL, 1, 0, t, batch, &work));
	CHECKR(cufftSetStream(f->plan, (cudaStream_t)s));
	f->real = t == CUFFT_R2C;
	f->in = alloc(elems * (f->real ? 4 : 8));
	f->out = alloc(elems * 8);
}

static void release(struct fft *f) {
	CHECKR(cufftDestroy(f->plan));
	CHECK(cuMemFree((CUdeviceptr)(uintptr_t)f->in));
	CHECK(cuMemFree((CUdeviceptr)(uintptr_t)f->out));
}

int main(void) {
	CUdevice dev;
	CUcontext ctx;
	CHECK(cuInit(0));
	CHECK(cuDeviceGet(&dev, 0));
	CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
	CHECK(cuCtxSetCurrent(ctx));
	CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));

	x = alloc(NRAND * 4);
	curandGenerator_t g, gd;
	CHECKR(curandCreateGenerator(&g, CURAND_RNG_PSEUDO_PHILOX4_32_10));
	CHECKR(curandCreateGenerator(&gd, CURAND_RNG_PSEUDO_PHILOX4_32_10));
	CHECKR(curandSetGeneratorOrdering(gd, CURAND_ORDERING_PSEUDO_DYNAMIC));
	curandGenerator_t gens[] = {g, gd};
	for (int i = 0; i < 2; i++) {
		CHECKR(curandSetStream(gens[i], (cudaStream_t)s));
		CHECKR(curandSetPseudoRandomGeneratorSeed(gens[i], 1));
	}
	timeit("uniform", uniform, g);
	timeit("normal", normal, g);
	timeit("uniform-dynamic", uniform, gd);
	timeit("normal-dynamic", normal, gd);
	CHECKR(curandDestroyGenerator(g));
	CHECKR(curandDestroyGenerator(gd));
	CHECK(cuMemFree((CUdeviceptr)(uintptr_t)x));

	struct fft f;
	int n1[] = {1 << 24}, n2[] = {4096}, n3[] = {8192, 8192}, n4[] = {64};
	plan(&f, 1, n1, 1, CUFFT_C2C);
	timeit("fft-2^24", exec, &f);
	release(&f);
	plan(&f, 1, n2, 4096, CUFFT_C2C);
	timeit("fft-4096x4096-batched", exec, &f);
	release(&f);
	plan(&f, 2, n3, 1, CUFFT_R2C);
	timeit("rfft2-8192x8192", exec, &f);
	release(&f);

	plan(&f, 1, n4, 1, CUFFT_C2C);
	double t[TIMED];
	for (int r = 0; r < TIMED; r++) {
		double t0 = now();
		for (int i = 0; i < 4096; i++) {
			exec(&f);
			if (i % 256 == 255) CHECK(cuStreamSynchronize(s));
		}
		t[r] = (now() - t0) / 4096;
	}
	qsort(t, TIMED, sizeof *t, cmp);
	printf("c.exec-64 %.2f\n", t[TIMED / 2] * 1e6);
	timeit("exec-64-sync", exec, &f);
	release(&f);
	return 0;
}
