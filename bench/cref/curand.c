// curand: the C reference for package curand's numbers. For each
// generator type, seeded with 1234 (the pseudo-random ones), one
// generator makes, one call after the other on one stream: 4096 raw
// numbers, 4096 uniform float, 4096 normal float (0, 1), 2048 uniform
// double, 2048 normal double (1, 2), 4096 log-normal float (0, 0.5),
// 4096 Poisson (5.5). A line each:
//
//	RNG DIST COUNT FNV64
//
// where FNV64 is the FNV-1a hash of the numbers' bytes. TestMatchesC asks
// gocuda for the same and compares, bit for bit.
//
// Build on the GPU machine: nvcc -O2 -o curand bench/cref/curand.c -lcurand -lcuda
#include "cref.h"
#include <curand.h>

#define CHECKR(x)                                                            \
	do {                                                                     \
		curandStatus_t r_ = (x);                                             \
		if (r_ != CURAND_STATUS_SUCCESS) {                                   \
			fprintf(stderr, "%s:%d: %s = %d\n", __FILE__, __LINE__, #x, r_); \
			exit(1);                                                         \
		}                                                                    \
	} while (0)

static unsigned long long fnv(const void *p, size_t n) {
	const unsigned char *b = p;
	unsigned long long h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

static void *buf;

static void report(int rng, const char *dist, size_t n, size_t size, CUstream s) {
	static unsigned char host[4096 * 8];
	CHECK(cuStreamSynchronize(s));
	CHECK(cuMemcpyDtoH(host, (CUdeviceptr)(uintptr_t)buf, n * size));
	printf("%d %s %zu %016llx\n", rng, dist, n, fnv(host, n * size));
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
	CUdeviceptr d;
	CHECK(cuMemAlloc(&d, 4096 * 8));
	buf = (void *)(uintptr_t)d;
	int rngs[] = {CURAND_RNG_PSEUDO_PHILOX4_32_10, CURAND_RNG_PSEUDO_XORWOW, CURAND_RNG_PSEUDO_MRG32K3A,
	              CURAND_RNG_PSEUDO_MTGP32, CURAND_RNG_PSEUDO_MT19937, CURAND_RNG_QUASI_SOBOL32,
	              CURAND_RNG_QUASI_SCRAMBLED_SOBOL32};
	for (size_t i = 0; i < sizeof rngs / sizeof rngs[0]; i++) {
		int rng = rngs[i];
		curandGenerator_t g;
		CHECKR(curandCreateGenerator(&g, (curandRngType_t)rng));
		CHECKR(curandSetStream(g, (cudaStream_t)s));
		if (rng < 200) CHECKR(curandSetPseudoRandomGeneratorSeed(g, 1234));
		CHECKR(curandGenerate(g, buf, 4096));
		report(rng, "bits", 4096, 4, s);
		CHECKR(curandGenerateUniform(g, buf, 4096));
		report(rng, "uniform32", 4096, 4, s);
		CHECKR(curandGenerateNormal(g, buf, 4096, 0, 1));
		report(rng, "normal32", 4096, 4, s);
		CHECKR(curandGenerateUniformDouble(g, buf, 2048));
		report(rng, "uniform64", 2048, 8, s);
		CHECKR(curandGenerateNormalDouble(g, buf, 2048, 1, 2));
		report(rng, "normal64", 2048, 8, s);
		CHECKR(curandGenerateLogNormal(g, buf, 4096, 0, 0.5f));
		report(rng, "lognormal32", 4096, 4, s);
		CHECKR(curandGeneratePoisson(g, buf, 4096, 5.5));
		report(rng, "poisson", 4096, 4, s);
		CHECKR(curandDestroyGenerator(g));
	}
	return 0;
}
