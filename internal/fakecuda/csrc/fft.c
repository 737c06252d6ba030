// The fake cuFFT: plans of one to three dimensions, batched, of the six
// types, whose transforms the CPU computes when their work runs on the
// stream (a direct DFT along each dimension, in double: the fake's sizes
// are small). Plans are made without a work area of their own
// (cufftSetAutoAllocation(plan, 0), as gocuda makes them): an exec before
// cufftSetWorkArea fails, as the library's would reach no memory.

#include "fakecuda.h"

#include <complex.h>
#include <math.h>

enum {
	FFT_SUCCESS = 0, FFT_INVALID_PLAN = 1, FFT_ALLOC_FAILED = 2, FFT_INVALID_TYPE = 3, FFT_INVALID_VALUE = 4,
	FFT_EXEC_FAILED = 6, FFT_SETUP_FAILED = 7, FFT_INVALID_SIZE = 8,
};
enum { R2C = 0x2a, C2R = 0x2c, C2C = 0x29, D2Z = 0x6a, Z2D = 0x6c, Z2Z = 0x69 };
enum { MAX_PLANS = 256 };

struct fake_plan {
	int live, made, autoalloc;
	CUcontext ctx;
	CUstream stream;
	int rank, n[3], type, batch;
	size_t work_size;
	void *work;
};
static struct fake_plan plans[MAX_PLANS];
long live_fft;

struct fft_job {
	struct lib_job job;
	int rank, n[3], type, batch, dir;
	const void *in;
	void *out;
};

static int dbl(int type) { return type == D2Z || type == Z2D || type == Z2Z; }

static struct fake_plan *plan_of(int h) {
	if (h < 1 || h > MAX_PLANS || !plans[h - 1].live) return NULL;
	return &plans[h - 1];
}

// dft transforms the complex array a (dims n[0..rank-1], row-major) in
// place along every dimension; sign -1 forward, +1 inverse, no scaling.
static void dft(double complex *a, int rank, const int *n, int sign) {
	size_t total = 1;
	for (int d = 0; d < rank; d++) total *= (size_t)n[d];
	for (int d = 0; d < rank; d++) {
		size_t len = (size_t)n[d], stride = 1;
		for (int e = d + 1; e < rank; e++) stride *= (size_t)n[e];
		double complex *line = malloc(len * sizeof *line);
		for (size_t start = 0; start < total; start++) {
			if ((start / stride) % len) continue; // each line once, from its first element
			for (size_t k = 0; k < len; k++) {
				double complex s = 0;
				for (size_t j = 0; j < len; j++) s += a[start + j * stride] * cexp(sign * 2 * M_PI * I * (double)((j * k) % len) / (double)len);
				line[k] = s;
			}
			for (size_t k = 0; k < len; k++) a[start + k * stride] = line[k];
		}
		free(line);
	}
}

static void run_fft(struct lib_job *job) {
	struct fft_job *o = (struct fft_job *)job;
	int r = o->rank, last = o->n[r - 1], half = last / 2 + 1;
	size_t total = 1;
	for (int d = 0; d < r; d++) total *= (size_t)o->n[d];
	size_t outer = total / (size_t)last, packed = outer * (size_t)half;
	double complex *a = malloc(total * sizeof *a);
	for (int b = 0; b < o->batch; b++) {
		switch (o->type) {
		case C2C: case Z2Z: {
			for (size_t i = 0; i < total; i++)
				a[i] = o->type == C2C ? ((const float complex *)o->in)[b * total + i] : ((const double complex *)o->in)[b * total + i];
			dft(a, r, o->n, o->dir);
			for (size_t i = 0; i < total; i++) {
				if (o->type == C2C) ((float complex *)o->out)[b * total + i] = (float complex)a[i];
				else ((double complex *)o->out)[b * total + i] = a[i];
			}
			break;
		}
		case R2C: case D2Z:
			for (size_t i = 0; i < total; i++)
				a[i] = o->type == R2C ? ((const float *)o->in)[b * total + i] : ((const double *)o->in)[b * total + i];
			dft(a, r, o->n, -1);
			for (size_t row = 0; row < outer; row++)
				for (int k = 0; k < half; k++) {
					double complex v = a[row * last + k];
					if (o->type == R2C) ((float complex *)o->out)[b * packed + row * half + k] = (float complex)v;
					else ((double complex *)o->out)[b * packed + row * half + k] = v;
				}
			break;
		case C2R: case Z2D: {
			// The full spectrum from the half: X[k] = conj(X[-k]) past the
			// last dimension's half.
			for (size_t i = 0; i < total; i++) {
				size_t k = i % last, row = i / last;
				int conj_ = k >= (size_t)half;
				size_t src_row = row, src_k = k;
				if (conj_) {
					// -row in every outer dimension, n-k in the last.
					size_t rem = row, neg = 0, mul = 1;
					for (int d = r - 2; d >= 0; d--) {
						size_t idx = rem % (size_t)o->n[d];
						rem /= (size_t)o->n[d];
						neg += ((size_t)o->n[d] - idx) % (size_t)o->n[d] * mul;
						mul *= (size_t)o->n[d];
					}
					src_row = neg, src_k = (size_t)last - k;
				}
				size_t at = b * packed + src_row * half + src_k;
				double complex v = o->type == C2R ? ((const float complex *)o->in)[at] : ((const double complex *)o->in)[at];
				a[i] = conj_ ? conj(v) : v;
			}
			dft(a, r, o->n, 1);
			for (size_t i = 0; i < total; i++) {
				if (o->type == C2R) ((float *)o->out)[b * total + i] = (float)creal(a[i]);
				else ((double *)o->out)[b * total + i] = creal(a[i]);
			}
			break;
		}
		}
	}
	free(a);
}

EXPORT int cufftCreate(int *h) {
	FAULT("cufftCreate");
	if (!h) return FFT_INVALID_VALUE;
	pthread_mutex_lock(&mu);
	int ok = initialized && ctx_live(current), i = 0;
	while (ok && i < MAX_PLANS && plans[i].live) i++;
	if (!ok || i == MAX_PLANS) {
		pthread_mutex_unlock(&mu);
		return ok ? FFT_ALLOC_FAILED : FFT_SETUP_FAILED;
	}
	plans[i] = (struct fake_plan){.live = 1, .autoalloc = 1, .ctx = current};
	live_fft++;
	pthread_mutex_unlock(&mu);
	*h = i + 1;
	return FFT_SUCCESS;
}

EXPORT int cufftDestroy(int h) {
	FAULT("cufftDestroy");
	pthread_mutex_lock(&mu);
	struct fake_plan *p = plan_of(h);
	if (p) {
		if (p->autoalloc) free(p->work);
		p->live = 0;
		live_fft--;
	}
	pthread_mutex_unlock(&mu);
	return p ? FFT_SUCCESS : FFT_INVALID_PLAN;
}

EXPORT int cufftSetAutoAllocation(int h, int on) {
	FAULT("cufftSetAutoAllocation");
	struct fake_plan *p = plan_of(h);
	if (!p) return FFT_INVALID_PLAN;
	p->autoalloc = on != 0;
	return FFT_SUCCESS;
}

EXPORT int cufftMakePlanMany(int h, int rank, int *n, int *inembed, int istride, int idist, int *onembed, int ostride, int odist,
                             int type, int batch, size_t *work) {
	FAULT("cufftMakePlanMany");
	struct fake_plan *p = plan_of(h);
	if (!p) return FFT_INVALID_PLAN;
	if (p->made) return FFT_INVALID_PLAN;
	if (rank < 1 || rank > 3 || !n || batch < 1 || !work) return FFT_INVALID_VALUE;
	if (inembed || onembed || istride != 1 || ostride != 1 || idist || odist) return FFT_INVALID_VALUE; // the basic layout only
	if (type != R2C && type != C2R && type != C2C && type != D2Z && type != Z2D && type != Z2Z) return FFT_INVALID_TYPE;
	for (int d = 0; d < rank; d++)
		if (n[d] < 1) return FFT_INVALID_SIZE;
	p->rank = rank, p->type = type, p->batch = batch;
	memcpy(p->n, n, (size_t)rank * sizeof *n);
	// Some scratch for the larger plans, so that the work area is asked
	// for and used; none for small ones, as cuFFT needs none there.
	size_t total = (size_t)batch;
	for (int d = 0; d < rank; d++) total *= (size_t)n[d];
	p->work_size = total < 64 ? 0 : 256 * (size_t)batch;
	if (p->autoalloc) p->work = malloc(p->work_size);
	p->made = 1;
	*work = p->work_size;
	return FFT_SUCCESS;
}

EXPORT int cufftSetStream(int h, CUstream s) {
	FAULT("cufftSetStream");
	struct fake_plan *p = plan_of(h);
	if (!p) return FFT_INVALID_PLAN;
	pthread_mutex_lock(&mu);
	int ok = !s || (stream_live(s) && s->ctx == p->ctx);
	pthread_mutex_unlock(&mu);
	if (!ok) return FFT_INVALID_VALUE;
	p->stream = s;
	return FFT_SUCCESS;
}

EXPORT int cufftSetWorkArea(int h, void *work) {
	FAULT("cufftSetWorkArea");
	struct fake_plan *p = plan_of(h);
	if (!p) return FFT_INVALID_PLAN;
	if (work && !range_ok((CUdeviceptr)(uintptr_t)work, p->work_size)) return FFT_INVALID_VALUE;
	p->work = work;
	return FFT_SUCCESS;
}

EXPORT int cufftGetVersion(int *v) {
	FAULT("cufftGetVersion");
	if (!v) return FFT_INVALID_VALUE;
	*v = 12000;
	return FFT_SUCCESS;
}

// exec queues plan h's transform of in into out on its stream.
static int exec(int h, int type, const void *in, void *out, int dir) {
	struct fake_plan *p = plan_of(h);
	if (!p || !p->made) return FFT_INVALID_PLAN;
	if (p->type != type) return FFT_INVALID_TYPE;
	if (p->work_size && !p->work) return FFT_EXEC_FAILED;
	pthread_mutex_lock(&mu);
	int ok = current == p->ctx && ctx_live(current) && (!p->stream || stream_live(p->stream));
	pthread_mutex_unlock(&mu);
	if (!ok) return FFT_EXEC_FAILED;
	size_t total = 1, half = 1;
	for (int d = 0; d < p->rank; d++) total *= (size_t)p->n[d];
	half = total / (size_t)p->n[p->rank - 1] * (size_t)(p->n[p->rank - 1] / 2 + 1);
	size_t real = dbl(type) ? 8 : 4, cplx = 2 * real, b = (size_t)p->batch;
	// cuFFT refuses a real buffer not aligned as a complex number (a
	// float32 one element into its allocation, seen on the H100).
	if ((uintptr_t)in % cplx || (uintptr_t)out % cplx) return FFT_INVALID_VALUE;
	size_t in_bytes = type == C2C || type == Z2Z ? total * cplx : type == R2C || type == D2Z ? total * real : half * cplx;
	size_t out_bytes = type == C2C || type == Z2Z ? total * cplx : type == R2C || type == D2Z ? half * cplx : total * real;
	if (!range_ok((CUdeviceptr)(uintptr_t)in, b * in_bytes) || !range_ok((CUdeviceptr)(uintptr_t)out, b * out_bytes)) return FFT_EXEC_FAILED;
	struct fft_job *o = malloc(sizeof *o);
	*o = (struct fft_job){.job = {run_fft, sizeof *o}, .rank = p->rank, .type = type, .batch = p->batch, .dir = dir, .in = in, .out = out};
	memcpy(o->n, p->n, sizeof o->n);
	return enqueue_job(p->stream, &o->job) == SUCCESS ? FFT_SUCCESS : FFT_EXEC_FAILED;
}

EXPORT int cufftExecC2C(int h, void *in, void *out, int dir) {
	FAULT("cufftExecC2C");
	if (dir != -1 && dir != 1) return FFT_INVALID_VALUE;
	return exec(h, C2C, in, out, dir);
}
EXPORT int cufftExecZ2Z(int h, void *in, void *out, int dir) {
	FAULT("cufftExecZ2Z");
	if (dir != -1 && dir != 1) return FFT_INVALID_VALUE;
	return exec(h, Z2Z, in, out, dir);
}
EXPORT int cufftExecR2C(int h, void *in, void *out) {
	FAULT("cufftExecR2C");
	return exec(h, R2C, in, out, -1);
}
EXPORT int cufftExecD2Z(int h, void *in, void *out) {
	FAULT("cufftExecD2Z");
	return exec(h, D2Z, in, out, -1);
}
EXPORT int cufftExecC2R(int h, void *in, void *out) {
	FAULT("cufftExecC2R");
	return exec(h, C2R, in, out, 1);
}
EXPORT int cufftExecZ2D(int h, void *in, void *out) {
	FAULT("cufftExecZ2D");
	return exec(h, Z2D, in, out, 1);
}
