// The fake cuRAND: generators whose numbers the CPU computes when their
// work runs on the stream, as the library's kernels would. The numbers are
// not cuRAND's: number i of a sequence is a hash of the seed and i
// (splitmix64), so that seeds, offsets and the sequence's continuation
// behave as cuRAND's do, which is what gocuda's plumbing can get wrong.

#include "fakecuda.h"

#include <math.h>

enum {
	RAND_SUCCESS = 0, RAND_NOT_INITIALIZED = 101, RAND_TYPE_ERROR = 103, RAND_OUT_OF_RANGE = 104,
	RAND_LENGTH_NOT_MULTIPLE = 105, RAND_LAUNCH_FAILURE = 201,
};
enum { R_BITS, R_UNIFORM, R_NORMAL, R_LOGNORMAL, R_POISSON };

#define RAND_MAGIC 0x4a4d

struct fake_rand {
	int magic;
	int type;
	CUcontext ctx;
	CUstream stream;
	unsigned long long seed, pos; // the next number's index in the sequence
};
long live_rand;

struct rand_op {
	struct lib_job job;
	int dist, dbl;
	unsigned long long seed, pos;
	size_t n;
	double a, b; // mean and deviation, or lambda
	void *out;
};

static int rand_live(struct fake_rand *g) { return g && g->magic == RAND_MAGIC; }
static int quasi(int type) { return type == 201 || type == 202; }

static uint64_t mix(uint64_t seed, uint64_t i) {
	uint64_t z = seed * 0x9e3779b97f4a7c15ull + i + 1;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

// uniform is number i as cuRAND's uniforms are: in (0, 1].
static double uniform(uint64_t seed, uint64_t i) { return ((mix(seed, i) >> 11) + 1) * 0x1p-53; }

static void run_rand(struct lib_job *job) {
	struct rand_op *o = (struct rand_op *)job;
	for (size_t k = 0; k < o->n; k++) {
		uint64_t i = o->pos + k;
		double v = 0;
		switch (o->dist) {
		case R_BITS: ((uint32_t *)o->out)[k] = (uint32_t)mix(o->seed, i); continue;
		case R_UNIFORM: v = uniform(o->seed, i); break;
		case R_NORMAL:
		case R_LOGNORMAL: {
			// Box-Muller on the pair holding i, as cuRAND pairs them.
			uint64_t p = i & ~1ull;
			double r = sqrt(-2 * log(uniform(o->seed, p))), t = 2 * M_PI * uniform(o->seed, p + 1);
			v = o->a + o->b * ((i & 1) ? r * sin(t) : r * cos(t));
			if (o->dist == R_LOGNORMAL) v = exp(v);
			break;
		}
		case R_POISSON: {
			// Knuth's product of uniforms, or the normal's for large lambda.
			double l = o->a, x;
			if (l < 64) {
				double lim = exp(-l), prod = uniform(o->seed, i);
				unsigned c = 0;
				for (uint64_t j = 1; prod > lim; j++, c++) prod *= uniform(o->seed ^ 0x5bd1e995, i * 4096 + j);
				x = c;
			} else {
				double r = sqrt(-2 * log(uniform(o->seed, i))), t = 2 * M_PI * uniform(o->seed ^ 0x5bd1e995, i);
				x = floor(l + sqrt(l) * r * cos(t) + 0.5);
				if (x < 0) x = 0;
				if (x > 4294967295.0) x = 4294967295.0; // a lambda past uint32: no undefined conversion
			}
			((uint32_t *)o->out)[k] = (uint32_t)x;
			continue;
		}
		}
		if (o->dbl) ((double *)o->out)[k] = v;
		else ((float *)o->out)[k] = (float)v;
	}
}

// usable returns the status for a call on g: its context must be current
// and its stream live.
static int usable(struct fake_rand *g) {
	if (!rand_live(g)) return RAND_NOT_INITIALIZED;
	pthread_mutex_lock(&mu);
	int ok = current == g->ctx && ctx_live(current) && (!g->stream || stream_live(g->stream));
	pthread_mutex_unlock(&mu);
	return ok ? RAND_SUCCESS : RAND_LAUNCH_FAILURE;
}

EXPORT int curandCreateGenerator(struct fake_rand **out, int type) {
	FAULT("curandCreateGenerator");
	if (!out) return RAND_OUT_OF_RANGE;
	if (type != 101 && type != 121 && type != 141 && type != 142 && type != 161 && type != 201 && type != 202 && type != 100 && type != 200)
		return RAND_TYPE_ERROR;
	pthread_mutex_lock(&mu);
	int ok = initialized && ctx_live(current);
	pthread_mutex_unlock(&mu);
	if (!ok) return RAND_NOT_INITIALIZED;
	struct fake_rand *g = calloc(1, sizeof *g);
	g->magic = RAND_MAGIC, g->type = type, g->ctx = current;
	pthread_mutex_lock(&mu);
	live_rand++;
	pthread_mutex_unlock(&mu);
	*out = g;
	return RAND_SUCCESS;
}

EXPORT int curandDestroyGenerator(struct fake_rand *g) {
	FAULT("curandDestroyGenerator");
	if (!rand_live(g)) return RAND_NOT_INITIALIZED;
	g->magic = 0;
	pthread_mutex_lock(&mu);
	live_rand--;
	pthread_mutex_unlock(&mu);
	free(g);
	return RAND_SUCCESS;
}

EXPORT int curandSetStream(struct fake_rand *g, CUstream s) {
	FAULT("curandSetStream");
	if (!rand_live(g)) return RAND_NOT_INITIALIZED;
	pthread_mutex_lock(&mu);
	int ok = !s || (stream_live(s) && s->ctx == g->ctx);
	pthread_mutex_unlock(&mu);
	if (!ok) return RAND_LAUNCH_FAILURE;
	g->stream = s;
	return RAND_SUCCESS;
}

EXPORT int curandSetPseudoRandomGeneratorSeed(struct fake_rand *g, unsigned long long seed) {
	FAULT("curandSetPseudoRandomGeneratorSeed");
	if (!rand_live(g)) return RAND_NOT_INITIALIZED;
	if (quasi(g->type)) return RAND_TYPE_ERROR;
	g->seed = seed;
	g->pos = 0;
	return RAND_SUCCESS;
}

EXPORT int curandSetGeneratorOffset(struct fake_rand *g, unsigned long long offset) {
	FAULT("curandSetGeneratorOffset");
	if (!rand_live(g)) return RAND_NOT_INITIALIZED;
	if (g->type == 141 || g->type == 142) return RAND_TYPE_ERROR; // the Mersenne twisters have none
	g->pos = offset;
	return RAND_SUCCESS;
}

EXPORT int curandSetGeneratorOrdering(struct fake_rand *g, int order) {
	FAULT("curandSetGeneratorOrdering");
	if (!rand_live(g)) return RAND_NOT_INITIALIZED;
	if (order < 100 || order > 104 || quasi(g->type)) return RAND_OUT_OF_RANGE;
	g->pos = 0; // the sequence starts over
	return RAND_SUCCESS;
}

EXPORT int curandGetVersion(int *v) {
	FAULT("curandGetVersion");
	if (!v) return RAND_OUT_OF_RANGE;
	*v = 10400;
	return RAND_SUCCESS;
}

// generate queues n numbers of a distribution into out on g's stream (or
// the graph it captures).
static int generate(struct fake_rand *g, int dist, int dbl, void *out, size_t n, double a, double b) {
	int r = usable(g);
	if (r != RAND_SUCCESS) return r;
	size_t es = dist == R_BITS || dist == R_POISSON ? 4 : dbl ? 8 : 4;
	if (n == 0) return RAND_SUCCESS;
	if (!out || !range_ok((CUdeviceptr)(uintptr_t)out, n * es)) return RAND_LAUNCH_FAILURE;
	if ((dist == R_NORMAL || dist == R_LOGNORMAL) && !quasi(g->type) && n % 2) return RAND_LENGTH_NOT_MULTIPLE;
	// A pair is stored at once: XORWOW's normals into a float32 one
	// element into its allocation fail to launch on the H100 (and leave
	// the context unusable there).
	if ((dist == R_NORMAL || dist == R_LOGNORMAL) && !quasi(g->type) && (uintptr_t)out % (2 * es)) return RAND_LAUNCH_FAILURE;
	struct rand_op *o = malloc(sizeof *o);
	*o = (struct rand_op){.job = {run_rand, sizeof *o}, .dist = dist, .dbl = dbl, .seed = g->seed, .pos = g->pos, .n = n, .a = a, .b = b, .out = out};
	if (enqueue_job(g->stream, &o->job) != SUCCESS) return RAND_LAUNCH_FAILURE;
	g->pos += n;
	return RAND_SUCCESS;
}

EXPORT int curandGenerate(struct fake_rand *g, unsigned *out, size_t n) {
	FAULT("curandGenerate");
	return generate(g, R_BITS, 0, out, n, 0, 0);
}
EXPORT int curandGenerateUniform(struct fake_rand *g, float *out, size_t n) {
	FAULT("curandGenerateUniform");
	return generate(g, R_UNIFORM, 0, out, n, 0, 0);
}
EXPORT int curandGenerateUniformDouble(struct fake_rand *g, double *out, size_t n) {
	FAULT("curandGenerateUniformDouble");
	return generate(g, R_UNIFORM, 1, out, n, 0, 0);
}
EXPORT int curandGenerateNormal(struct fake_rand *g, float *out, size_t n, float mean, float sd) {
	FAULT("curandGenerateNormal");
	return generate(g, R_NORMAL, 0, out, n, mean, sd);
}
EXPORT int curandGenerateNormalDouble(struct fake_rand *g, double *out, size_t n, double mean, double sd) {
	FAULT("curandGenerateNormalDouble");
	return generate(g, R_NORMAL, 1, out, n, mean, sd);
}
EXPORT int curandGenerateLogNormal(struct fake_rand *g, float *out, size_t n, float mean, float sd) {
	FAULT("curandGenerateLogNormal");
	return generate(g, R_LOGNORMAL, 0, out, n, mean, sd);
}
EXPORT int curandGenerateLogNormalDouble(struct fake_rand *g, double *out, size_t n, double mean, double sd) {
	FAULT("curandGenerateLogNormalDouble");
	return generate(g, R_LOGNORMAL, 1, out, n, mean, sd);
}
EXPORT int curandGeneratePoisson(struct fake_rand *g, unsigned *out, size_t n, double lambda) {
	FAULT("curandGeneratePoisson");
	if (!(lambda > 0)) return RAND_OUT_OF_RANGE;
	return generate(g, R_POISSON, 0, out, n, lambda, 0);
}
