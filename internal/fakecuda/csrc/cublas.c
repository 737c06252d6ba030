// The fake cuBLAS and cuBLASLt (see driver.c): the calls package cublas
// makes, checked as the libraries check them and computed on the CPU by
// the stream's worker, later, in the stream's order. Results that cuBLAS
// hands back to the host (dot, nrm2, asum, amax) wait for the stream first,
// as cuBLAS does.

#include <math.h>

#include "fakecuda.h"

enum {
	BLAS_SUCCESS = 0,
	BLAS_NOT_INITIALIZED = 1,
	BLAS_INVALID_VALUE = 7,
	BLAS_EXECUTION_FAILED = 13, // memory outside every device allocation: the real one would fault
	BLAS_NOT_SUPPORTED = 15,
};

long live_blas;

static const char *status_name(int s) {
	switch (s) {
	case 0: return "CUBLAS_STATUS_SUCCESS";
	case 1: return "CUBLAS_STATUS_NOT_INITIALIZED";
	case 3: return "CUBLAS_STATUS_ALLOC_FAILED";
	case 7: return "CUBLAS_STATUS_INVALID_VALUE";
	case 8: return "CUBLAS_STATUS_ARCH_MISMATCH";
	case 11: return "CUBLAS_STATUS_MAPPING_ERROR";
	case 13: return "CUBLAS_STATUS_EXECUTION_FAILED";
	case 14: return "CUBLAS_STATUS_INTERNAL_ERROR";
	case 15: return "CUBLAS_STATUS_NOT_SUPPORTED";
	}
	return "CUBLAS_STATUS_UNKNOWN";
}

static const char *status_text(int s) {
	switch (s) {
	case 0: return "success";
	case 1: return "the library was not initialized";
	case 3: return "the resource allocation failed";
	case 7: return "an invalid numeric value was used as an argument";
	case 13: return "the GPU program failed to execute";
	case 14: return "an internal operation failed";
	case 15: return "the functionality requested is not supported";
	}
	return "unknown error";
}

EXPORT const char *cublasGetStatusName(int s) { return status_name(s); }
EXPORT const char *cublasGetStatusString(int s) { return status_text(s); }
EXPORT const char *cublasLtGetStatusName(int s) { return status_name(s); }
EXPORT const char *cublasLtGetStatusString(int s) { return status_text(s); }

// ---- elements --------------------------------------------------------------

enum { T_F32 = 0, T_F64 = 1, T_F16 = 2, T_BF16 = 14 };

static size_t type_size(int t) {
	switch (t) {
	case T_F32: return 4;
	case T_F64: return 8;
	case T_F16: case T_BF16: return 2;
	}
	return 0;
}

// lt_type_size is type_size with the complex types cuBLASLt's layouts
// take (CUDA_C_32F, CUDA_C_64F), as the library's do; the fake's Matmul
// computes none of them.
enum { T_C32 = 4, T_C64 = 5 };
static size_t lt_type_size(int t) {
	switch (t) {
	case T_C32: return 8;
	case T_C64: return 16;
	}
	return type_size(t);
}

static float bits_float(uint32_t b) { float f; memcpy(&f, &b, 4); return f; }
static uint32_t float_bits(float f) { uint32_t b; memcpy(&b, &f, 4); return b; }

static uint32_t round_shift(uint32_t m, unsigned shift) {
	uint32_t r = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
	if (rem > half || (rem == half && (r & 1))) r++;
	return r;
}

static float half_float(uint16_t h) {
	uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, frac = h & 0x3ff;
	if (exp == 0) {
		if (!frac) return bits_float(sign);
		uint32_t e = 127 - 15 + 1;
		while (!(frac & 0x400)) { frac <<= 1; e--; }
		return bits_float(sign | e << 23 | (frac & 0x3ff) << 13);
	}
	if (exp == 0x1f) return bits_float(sign | 0x7f800000 | frac << 13);
	return bits_float(sign | (exp + 112) << 23 | frac << 13);
}

static uint16_t float_half(float f) {
	uint32_t b = float_bits(f), frac = b & 0x7fffff;
	uint16_t sign = (b >> 16) & 0x8000;
	int exp = (b >> 23) & 0xff;
	if (exp == 0xff) return sign | (frac ? 0x7e00 | (frac >> 13) : 0x7c00);
	int e = exp - 127 + 15;
	if (e >= 0x1f) return sign | 0x7c00;
	if (e <= 0) {
		if (e < -10) return sign;
		return sign | (uint16_t)round_shift(frac | 0x800000, (unsigned)(14 - e));
	}
	return sign | (uint16_t)round_shift((uint32_t)e << 23 | frac, 13);
}

static double load(int t, const void *p, size_t i) {
	switch (t) {
	case T_F32: return ((const float *)p)[i];
	case T_F64: return ((const double *)p)[i];
	case T_F16: return half_float(((const uint16_t *)p)[i]);
	default: return bits_float((uint32_t)((const uint16_t *)p)[i] << 16);
	}
}

static void store(int t, void *p, size_t i, double v) {
	switch (t) {
	case T_F32: ((float *)p)[i] = (float)v; break;
	case T_F64: ((double *)p)[i] = v; break;
	case T_F16: ((uint16_t *)p)[i] = float_half((float)v); break;
	default: {
		uint32_t b = float_bits((float)v);
		((uint16_t *)p)[i] = (b & 0x7fffffff) > 0x7f800000 ? (uint16_t)(b >> 16 | 0x40) : (uint16_t)round_shift(b, 16);
	}
	}
}

// span returns the bytes a column-major matrix of rows x cols with leading
// dimension ld covers.
static size_t span(long rows, long cols, long ld, int t) {
	if (rows <= 0 || cols <= 0) return 0;
	return ((size_t)(cols - 1) * (size_t)ld + (size_t)rows) * type_size(t);
}

static int mem_ok(const void *p, size_t n) { return n == 0 || range_ok((CUdeviceptr)(uintptr_t)p, n); }

// ---- handles ---------------------------------------------------------------

struct fake_blas {
	int magic;
	CUcontext ctx;
	CUstream stream;
	int pointer_mode;
};
#define BLAS_MAGIC 0x0b1a5

static int blas_live(struct fake_blas *h) { return h && h->magic == BLAS_MAGIC; }

EXPORT int cublasCreate_v2(struct fake_blas **out) {
	FAULT("cublasCreate_v2");
	if (!out) return BLAS_INVALID_VALUE;
	pthread_mutex_lock(&mu);
	int ok = initialized && ctx_live(current);
	pthread_mutex_unlock(&mu);
	if (!ok) return BLAS_NOT_INITIALIZED;
	struct fake_blas *h = calloc(1, sizeof *h);
	h->magic = BLAS_MAGIC;
	h->ctx = current;
	pthread_mutex_lock(&mu);
	live_blas++;
	pthread_mutex_unlock(&mu);
	*out = h;
	return BLAS_SUCCESS;
}

EXPORT int cublasDestroy_v2(struct fake_blas *h) {
	FAULT("cublasDestroy_v2");
	if (!blas_live(h)) return BLAS_NOT_INITIALIZED;
	drain_context(h->ctx); // as cuBLAS, which synchronizes the device
	h->magic = 0;
	free(h);
	pthread_mutex_lock(&mu);
	live_blas--;
	pthread_mutex_unlock(&mu);
	return BLAS_SUCCESS;
}

EXPORT int cublasGetVersion_v2(struct fake_blas *h, int *v) {
	FAULT("cublasGetVersion_v2");
	if (!blas_live(h)) return BLAS_NOT_INITIALIZED;
	if (!v) return BLAS_INVALID_VALUE;
	*v = 130000;
	return BLAS_SUCCESS;
}

// cublasGetProperty answers as cuBLAS 13.0.0 (libraryPropertyType:
// 0 major, 1 minor, 2 patch level).
EXPORT int cublasGetProperty(int type, int *v) {
	FAULT("cublasGetProperty");
	if (!v || type < 0 || type > 2) return BLAS_INVALID_VALUE;
	*v = type == 0 ? 13 : 0;
	return BLAS_SUCCESS;
}

EXPORT int cublasSetStream_v2(struct fake_blas *h, CUstream s) {
	FAULT("cublasSetStream_v2");
	if (!blas_live(h)) return BLAS_NOT_INITIALIZED;
	pthread_mutex_lock(&mu);
	int ok = !s || (stream_live(s) && s->ctx == h->ctx);
	pthread_mutex_unlock(&mu);
	if (!ok) return BLAS_INVALID_VALUE;
	h->stream = s;
	return BLAS_SUCCESS;
}

EXPORT int cublasSetWorkspace_v2(struct fake_blas *h, void *ws, size_t n) {
	FAULT("cublasSetWorkspace_v2");
	if (!blas_live(h)) return BLAS_NOT_INITIALIZED;
	if (!mem_ok(ws, n)) return BLAS_INVALID_VALUE;
	return BLAS_SUCCESS;
}

EXPORT int cublasSetPointerMode_v2(struct fake_blas *h, int mode) {
	FAULT("cublasSetPointerMode_v2");
	if (!blas_live(h)) return BLAS_NOT_INITIALIZED;
	if (mode != 0 && mode != 1) return BLAS_INVALID_VALUE;
	h->pointer_mode = mode;
	return BLAS_SUCCESS;
}

// usable returns the status for a call on h: its context must be current
// and its stream live.
static int usable(struct fake_blas *h) {
	if (!blas_live(h)) return BLAS_NOT_INITIALIZED;
	pthread_mutex_lock(&mu);
	int ok = current == h->ctx && ctx_live(current) && (!h->stream || stream_live(h->stream));
	pthread_mutex_unlock(&mu);
	return ok ? BLAS_SUCCESS : BLAS_EXECUTION_FAILED;
}

// ---- work ------------------------------------------------------------------

enum blas_kind { K_GEMM, K_AXPY, K_SCAL, K_GEMV };

struct blas_op {
	enum blas_kind kind;
	int ta, tb, t, epilogue;
	long m, n, k, lda, ldb, ldc, count;
	long long sa, sb, sc;
	double alpha, beta;
	const void *a, *b, *bias;
	void *c;
	const void *const *pa, *const *pb; // batched: device arrays of pointers, read when the work runs
	void *const *pc;
};

static double gelu(double x) { return 0.5 * x * (1 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))); }

// gemm1 computes one column-major product.
static void gemm1(const struct blas_op *o, const void *A, const void *B, void *C) {
	for (long j = 0; j < o->n; j++)
		for (long i = 0; i < o->m; i++) {
			double s = 0;
			for (long p = 0; p < o->k; p++) {
				double a = o->ta ? load(o->t, A, (size_t)(p + i * o->lda)) : load(o->t, A, (size_t)(i + p * o->lda));
				double b = o->tb ? load(o->t, B, (size_t)(j + p * o->ldb)) : load(o->t, B, (size_t)(p + j * o->ldb));
				s += a * b;
			}
			size_t at = (size_t)(i + j * o->ldc);
			double v = o->alpha * s;
			if (o->beta != 0) v += o->beta * load(o->t, C, at); // beta 0: C is not read
			if (o->bias) v += load(o->t, o->bias, (size_t)i);
			if (o->epilogue & 2) v = v > 0 ? v : 0;
			if (o->epilogue & 32) v = gelu(v);
			store(o->t, C, at, v);
		}
}

void run_blas(struct blas_op *o) {
	size_t es = type_size(o->t);
	switch (o->kind) {
	case K_GEMM:
		for (long i = 0; i < o->count; i++) {
			if (o->pa) gemm1(o, o->pa[i], o->pb[i], o->pc[i]);
			else gemm1(o, (const char *)o->a + (size_t)(i * o->sa) * es, (const char *)o->b + (size_t)(i * o->sb) * es,
				(char *)o->c + (size_t)(i * o->sc) * es);
		}
		break;
	case K_AXPY:
		for (long i = 0; i < o->n; i++) store(o->t, o->c, (size_t)i, load(o->t, o->c, (size_t)i) + o->alpha * load(o->t, o->a, (size_t)i));
		break;
	case K_SCAL:
		for (long i = 0; i < o->n; i++) store(o->t, o->c, (size_t)i, o->alpha * load(o->t, o->c, (size_t)i));
		break;
	case K_GEMV:
		// y = alpha op(A) x + beta y, A m x n column-major. An empty A
		// leaves y as it was: BLAS's gemv (and cuBLAS's) returns at once
		// when m or n is 0, reading and writing nothing.
		if (o->m == 0 || o->n == 0) break;
		for (long i = 0, rows = o->ta ? o->n : o->m; i < rows; i++) {
			double s = 0;
			for (long p = 0, cols = o->ta ? o->m : o->n; p < cols; p++) {
				double a = o->ta ? load(o->t, o->a, (size_t)(p + i * o->lda)) : load(o->t, o->a, (size_t)(i + p * o->lda));
				s += a * load(o->t, o->b, (size_t)p);
			}
			double v = o->alpha * s;
			if (o->beta != 0) v += o->beta * load(o->t, o->c, (size_t)i);
			store(o->t, o->c, (size_t)i, v);
		}
		break;
	}
}

struct blas_op *blas_clone(const struct blas_op *o) {
	struct blas_op *c = malloc(sizeof *c);
	*c = *o;
	return c;
}

// queue hands o to h's stream (or to the graph it captures), or returns
// the status for a dead one.
static int queue(struct fake_blas *h, struct blas_op o) {
	struct blas_op *p = malloc(sizeof *p);
	*p = o;
	if (enqueue(h->stream, (struct op){.kind = OP_BLAS, .blas = p}) != SUCCESS) {
		free(p);
		return BLAS_EXECUTION_FAILED;
	}
	return BLAS_SUCCESS;
}

// ---- level 1 and 2 ---------------------------------------------------------

#define VEC_OK(x, n, t) mem_ok((x), (size_t)(n) * type_size(t))

static int axpy(const char *name, int t, struct fake_blas *h, int n, const void *alpha, const void *x, int incx, void *y, int incy) {
	int code = fault_check(name);
	if (code) return code;
	if ((code = usable(h))) return code;
	if (n < 0 || !alpha || incx != 1 || incy != 1) return n < 0 || !alpha ? BLAS_INVALID_VALUE : BLAS_NOT_SUPPORTED;
	if (!VEC_OK(x, n, t) || !VEC_OK(y, n, t)) return BLAS_EXECUTION_FAILED;
	return queue(h, (struct blas_op){.kind = K_AXPY, .t = t, .n = n, .alpha = load(t, alpha, 0), .a = x, .c = y});
}
EXPORT int cublasSaxpy_v2(struct fake_blas *h, int n, const float *a, const float *x, int ix, float *y, int iy) { return axpy("cublasSaxpy_v2", T_F32, h, n, a, x, ix, y, iy); }
EXPORT int cublasDaxpy_v2(struct fake_blas *h, int n, const double *a, const double *x, int ix, double *y, int iy) { return axpy("cublasDaxpy_v2", T_F64, h, n, a, x, ix, y, iy); }

static int scal(const char *name, int t, struct fake_blas *h, int n, const void *alpha, void *x, int incx) {
	int code = fault_check(name);
	if (code) return code;
	if ((code = usable(h))) return code;
	if (n < 0 || !alpha) return BLAS_INVALID_VALUE;
	if (incx != 1) return BLAS_NOT_SUPPORTED;
	if (!VEC_OK(x, n, t)) return BLAS_EXECUTION_FAILED;
	return queue(h, (struct blas_op){.kind = K_SCAL, .t = t, .n = n, .alpha = load(t, alpha, 0), .c = x});
}
EXPORT int cublasSscal_v2(struct fake_blas *h, int n, const float *a, float *x, int ix) { return scal("cublasSscal_v2", T_F32, h, n, a, x, ix); }
EXPORT int cublasDscal_v2(struct fake_blas *h, int n, const double *a, double *x, int ix) { return scal("cublasDscal_v2", T_F64, h, n, a, x, ix); }

// reduction computes one of the host-result reductions after the stream's
// work: 'd' dot, 'n' nrm2, 'a' asum, 'i' amax (1-based, 0 for n <= 0).
static int reduction(const char *name, char what, int t, struct fake_blas *h, int n, const void *x, int incx, const void *y, int incy, void *result) {
	int code = fault_check(name);
	if (code) return code;
	if ((code = usable(h))) return code;
	if (!result) return BLAS_INVALID_VALUE;
	if (incx != 1 || (y && incy != 1)) return BLAS_NOT_SUPPORTED;
	if (n > 0 && (!VEC_OK(x, n, t) || (y && !VEC_OK(y, n, t)))) return BLAS_EXECUTION_FAILED;
	pthread_mutex_lock(&mu);
	int capturing = h->stream && h->stream->capture;
	pthread_mutex_unlock(&mu);
	if (capturing) return BLAS_NOT_SUPPORTED; // a result on the host cannot wait for work that has not run
	if (h->stream) drain_stream(h->stream);
	double acc = 0, scale = 0;
	int best = 0;
	if (what == 'n')
		// nrm2 scales by the largest magnitude, as BLAS's does, so that
		// squares past the double range neither overflow nor underflow.
		for (int i = 0; i < n; i++) scale = fmax(scale, fabs(load(t, x, (size_t)i)));
	for (int i = 0; i < n; i++) {
		double v = load(t, x, (size_t)i);
		switch (what) {
		case 'd': acc += v * load(t, y, (size_t)i); break;
		case 'n':
			if (scale > 0) acc += (v / scale) * (v / scale);
			break;
		case 'a': acc += fabs(v); break;
		case 'i':
			if (fabs(v) > acc || best == 0) { acc = fabs(v); best = i + 1; }
			break;
		}
	}
	if (what == 'n') acc = isinf(scale) ? scale : scale * sqrt(acc);
	if (what == 'i') *(int *)result = best;
	else store(t, result, 0, acc);
	return BLAS_SUCCESS;
}
EXPORT int cublasSdot_v2(struct fake_blas *h, int n, const float *x, int ix, const float *y, int iy, float *r) { return reduction("cublasSdot_v2", 'd', T_F32, h, n, x, ix, y, iy, r); }
EXPORT int cublasDdot_v2(struct fake_blas *h, int n, const double *x, int ix, const double *y, int iy, double *r) { return reduction("cublasDdot_v2", 'd', T_F64, h, n, x, ix, y, iy, r); }
EXPORT int cublasSnrm2_v2(struct fake_blas *h, int n, const float *x, int ix, float *r) { return reduction("cublasSnrm2_v2", 'n', T_F32, h, n, x, ix, NULL, 1, r); }
EXPORT int cublasDnrm2_v2(struct fake_blas *h, int n, const double *x, int ix, double *r) { return reduction("cublasDnrm2_v2", 'n', T_F64, h, n, x, ix, NULL, 1, r); }
EXPORT int cublasSasum_v2(struct fake_blas *h, int n, const float *x, int ix, float *r) { return reduction("cublasSasum_v2", 'a', T_F32, h, n, x, ix, NULL, 1, r); }
EXPORT int cublasDasum_v2(struct fake_blas *h, int n, const double *x, int ix, double *r) { return reduction("cublasDasum_v2", 'a', T_F64, h, n, x, ix, NULL, 1, r); }
EXPORT int cublasIsamax_v2(struct fake_blas *h, int n, const float *x, int ix, int *r) { return reduction("cublasIsamax_v2", 'i', T_F32, h, n, x, ix, NULL, 1, r); }
EXPORT int cublasIdamax_v2(struct fake_blas *h, int n, const double *x, int ix, int *r) { return reduction("cublasIdamax_v2", 'i', T_F64, h, n, x, ix, NULL, 1, r); }

static int gemv(const char *name, int t, struct fake_blas *h, int trans, int m, int n, const void *alpha, const void *a, int lda,
	const void *x, int incx, const void *beta, void *y, int incy) {
	int code = fault_check(name);
	if (code) return code;
	if ((code = usable(h))) return code;
	if ((trans != 0 && trans != 1) || m < 0 || n < 0 || lda < (m > 1 ? m : 1) || !alpha || !beta) return BLAS_INVALID_VALUE;
	if (incx != 1 || incy != 1) return BLAS_NOT_SUPPORTED;
	long xs = trans ? m : n, ys = trans ? n : m;
	if (!mem_ok(a, span(m, n, lda, t)) || !VEC_OK(x, xs, t) || !VEC_OK(y, ys, t)) return BLAS_EXECUTION_FAILED;
	return queue(h, (struct blas_op){.kind = K_GEMV, .t = t, .ta = trans, .m = m, .n = n, .lda = lda,
		.alpha = load(t, alpha, 0), .beta = load(t, beta, 0), .a = a, .b = x, .c = y});
}
EXPORT int cublasSgemv_v2(struct fake_blas *h, int tr, int m, int n, const float *al, const float *a, int lda, const float *x, int ix, const float *be, float *y, int iy) {
	return gemv("cublasSgemv_v2", T_F32, h, tr, m, n, al, a, lda, x, ix, be, y, iy);
}
EXPORT int cublasDgemv_v2(struct fake_blas *h, int tr, int m, int n, const double *al, const double *a, int lda, const double *x, int ix, const double *be, double *y, int iy) {
	return gemv("cublasDgemv_v2", T_F64, h, tr, m, n, al, a, lda, x, ix, be, y, iy);
}

// ---- level 3 ---------------------------------------------------------------

enum { C_32F = 68, C_64F = 70, C_32F_TF32 = 77 };

// scalar_type returns the type alpha and beta have for a compute type and
// data type, or -1 where the pair is not one cuBLAS computes.
static int scalar_type(int compute, int t) {
	switch (compute) {
	case C_64F: return t == T_F64 ? T_F64 : -1;
	case C_32F: return t == T_F32 || t == T_F16 || t == T_BF16 ? T_F32 : -1;
	case C_32F_TF32: return t == T_F32 ? T_F32 : -1;
	}
	return -1;
}

// gemm_check checks a product's arguments and fills o; A, B and C are
// checked for count matrices sa, sb, sc elements apart unless batched.
static int gemm_check(struct blas_op *o, struct fake_blas *h, int ta, int tb, int m, int n, int k, const void *alpha,
	int at, int lda, int bt, int ldb, const void *beta, int ct, int ldc, int compute, int count) {
	int code = usable(h);
	if (code) return code;
	if ((ta != 0 && ta != 1) || (tb != 0 && tb != 1) || m < 0 || n < 0 || k < 0 || count < 0 || !alpha || !beta) return BLAS_INVALID_VALUE;
	if (at != bt || at != ct || !type_size(at)) return BLAS_NOT_SUPPORTED;
	int st = scalar_type(compute, at);
	if (st < 0) return BLAS_NOT_SUPPORTED;
	long ar = ta ? k : m, br = tb ? n : k;
	if (lda < (ar > 1 ? ar : 1) || ldb < (br > 1 ? br : 1) || ldc < (m > 1 ? m : 1)) return BLAS_INVALID_VALUE;
	*o = (struct blas_op){.kind = K_GEMM, .t = at, .ta = ta, .tb = tb, .m = m, .n = n, .k = k, .lda = lda, .ldb = ldb, .ldc = ldc,
		.count = count, .alpha = load(st, alpha, 0), .beta = load(st, beta, 0), .epilogue = 1};
	return BLAS_SUCCESS;
}

// strided_ok checks that count matrices, stride elements apart, of one
// operand lie in device memory.
static int strided_ok(const void *p, long rows, long cols, long ld, long long stride, long count, int t) {
	size_t one = span(rows, cols, ld, t);
	if (!one || !count) return 1;
	if (stride < 0) return 0;
	return mem_ok(p, one + (size_t)(count - 1) * (size_t)stride * type_size(t));
}

EXPORT int cublasGemmEx(struct fake_blas *h, int ta, int tb, int m, int n, int k, const void *alpha,
	const void *a, int at, int lda, const void *b, int bt, int ldb, const void *beta, void *c, int ct, int ldc, int compute, int algo) {
	FAULT("cublasGemmEx");
	(void)algo;
	struct blas_op o;
	int code = gemm_check(&o, h, ta, tb, m, n, k, alpha, at, lda, bt, ldb, beta, ct, ldc, compute, 1);
	if (code) return code;
	if (!strided_ok(a, ta ? k : m, ta ? m : k, lda, 0, 1, at) || !strided_ok(b, tb ? n : k, tb ? k : n, ldb, 0, 1, bt) ||
		!strided_ok(c, m, n, ldc, 0, 1, ct))
		return BLAS_EXECUTION_FAILED;
	o.a = a, o.b = b, o.c = c;
	return queue(h, o);
}

EXPORT int cublasGemmStridedBatchedEx(struct fake_blas *h, int ta, int tb, int m, int n, int k, const void *alpha,
	const void *a, int at, int lda, long long sa, const void *b, int bt, int ldb, long long sb, const void *beta,
	void *c, int ct, int ldc, long long sc, int count, int compute, int algo) {
	FAULT("cublasGemmStridedBatchedEx");
	(void)algo;
	struct blas_op o;
	int code = gemm_check(&o, h, ta, tb, m, n, k, alpha, at, lda, bt, ldb, beta, ct, ldc, compute, count);
	if (code) return code;
	if (!strided_ok(a, ta ? k : m, ta ? m : k, lda, sa, count, at) || !strided_ok(b, tb ? n : k, tb ? k : n, ldb, sb, count, bt) ||
		!strided_ok(c, m, n, ldc, sc, count, ct))
		return BLAS_EXECUTION_FAILED;
	o.a = a, o.b = b, o.c = c, o.sa = sa, o.sb = sb, o.sc = sc;
	return queue(h, o);
}

EXPORT int cublasGemmBatchedEx(struct fake_blas *h, int ta, int tb, int m, int n, int k, const void *alpha,
	const void *const *a, int at, int lda, const void *const *b, int bt, int ldb, const void *beta,
	void *const *c, int ct, int ldc, int count, int compute, int algo) {
	FAULT("cublasGemmBatchedEx");
	(void)algo;
	struct blas_op o;
	int code = gemm_check(&o, h, ta, tb, m, n, k, alpha, at, lda, bt, ldb, beta, ct, ldc, compute, count);
	if (code) return code;
	size_t arrays = (size_t)count * sizeof(void *);
	if (!mem_ok(a, arrays) || !mem_ok(b, arrays) || !mem_ok(c, arrays)) return BLAS_EXECUTION_FAILED;
	o.pa = a, o.pb = b, o.pc = c;
	return queue(h, o);
}

// ---- cuBLASLt --------------------------------------------------------------

struct fake_lt { int magic; };
struct lt_desc { int magic, compute, scale, transa, transb; uint32_t epilogue; const void *bias; };
struct lt_layout { int magic, type; uint64_t rows, cols; int64_t ld; };
struct lt_pref { int magic; uint64_t workspace; };
#define LT_MAGIC 0x17
#define DESC_MAGIC 0x18
#define LAYOUT_MAGIC 0x19
#define PREF_MAGIC 0x1a
#define ALGO_MAGIC 0x1b1b1b1bull

static void *lt_make(size_t size, int magic) {
	int *p = calloc(1, size);
	*p = magic;
	pthread_mutex_lock(&mu);
	live_blas++;
	pthread_mutex_unlock(&mu);
	return p;
}

static int lt_free(void *p, int magic) {
	if (!p || *(int *)p != magic) return BLAS_INVALID_VALUE;
	*(int *)p = 0;
	free(p);
	pthread_mutex_lock(&mu);
	live_blas--;
	pthread_mutex_unlock(&mu);
	return BLAS_SUCCESS;
}

EXPORT int cublasLtCreate(struct fake_lt **out) {
	FAULT("cublasLtCreate");
	if (!out) return BLAS_INVALID_VALUE;
	*out = lt_make(sizeof **out, LT_MAGIC);
	return BLAS_SUCCESS;
}
EXPORT int cublasLtDestroy(struct fake_lt *h) {
	FAULT("cublasLtDestroy");
	return lt_free(h, LT_MAGIC) ? BLAS_NOT_INITIALIZED : BLAS_SUCCESS;
}

EXPORT int cublasLtMatmulDescCreate(struct lt_desc **out, int compute, int scale) {
	FAULT("cublasLtMatmulDescCreate");
	if (!out || (compute != C_32F && compute != C_64F && compute != C_32F_TF32)) return BLAS_INVALID_VALUE;
	struct lt_desc *d = lt_make(sizeof *d, DESC_MAGIC);
	d->compute = compute, d->scale = scale, d->epilogue = 1;
	*out = d;
	return BLAS_SUCCESS;
}
EXPORT int cublasLtMatmulDescDestroy(struct lt_desc *d) {
	FAULT("cublasLtMatmulDescDestroy");
	return lt_free(d, DESC_MAGIC);
}
EXPORT int cublasLtMatmulDescSetAttribute(struct lt_desc *d, int attr, const void *buf, size_t size) {
	FAULT("cublasLtMatmulDescSetAttribute");
	if (!d || d->magic != DESC_MAGIC || !buf) return BLAS_INVALID_VALUE;
	switch (attr) {
	case 3: case 4:
		if (size != 4) return BLAS_INVALID_VALUE;
		*(attr == 3 ? &d->transa : &d->transb) = *(const int *)buf;
		return BLAS_SUCCESS;
	case 7:
		if (size != 4) return BLAS_INVALID_VALUE;
		d->epilogue = *(const uint32_t *)buf;
		return BLAS_SUCCESS;
	case 8:
		if (size != sizeof(void *)) return BLAS_INVALID_VALUE;
		d->bias = *(const void *const *)buf;
		return BLAS_SUCCESS;
	}
	return BLAS_INVALID_VALUE;
}

EXPORT int cublasLtMatrixLayoutCreate(struct lt_layout **out, int type, uint64_t rows, uint64_t cols, int64_t ld) {
	FAULT("cublasLtMatrixLayoutCreate");
	if (!out || !lt_type_size(type) || ld < 0 || (rows > 0 && (uint64_t)ld < rows)) return BLAS_INVALID_VALUE;
	struct lt_layout *l = lt_make(sizeof *l, LAYOUT_MAGIC);
	l->type = type, l->rows = rows, l->cols = cols, l->ld = ld;
	*out = l;
	return BLAS_SUCCESS;
}
EXPORT int cublasLtMatrixLayoutDestroy(struct lt_layout *l) {
	FAULT("cublasLtMatrixLayoutDestroy");
	return lt_free(l, LAYOUT_MAGIC);
}

EXPORT int cublasLtMatmulPreferenceCreate(struct lt_pref **out) {
	FAULT("cublasLtMatmulPreferenceCreate");
	if (!out) return BLAS_INVALID_VALUE;
	*out = lt_make(sizeof **out, PREF_MAGIC);
	return BLAS_SUCCESS;
}
EXPORT int cublasLtMatmulPreferenceDestroy(struct lt_pref *p) {
	FAULT("cublasLtMatmulPreferenceDestroy");
	return lt_free(p, PREF_MAGIC);
}
EXPORT int cublasLtMatmulPreferenceSetAttribute(struct lt_pref *p, int attr, const void *buf, size_t size) {
	FAULT("cublasLtMatmulPreferenceSetAttribute");
	if (!p || p->magic != PREF_MAGIC || !buf) return BLAS_INVALID_VALUE;
	if (attr == 1 && size == 8) {
		p->workspace = *(const uint64_t *)buf;
		return BLAS_SUCCESS;
	}
	if (attr >= 5 && attr <= 8 && size == 4) return BLAS_SUCCESS;
	return BLAS_INVALID_VALUE;
}

// lt_shape checks that the layouts make a product under d and returns its
// m, n and k.
static int lt_shape(const struct lt_desc *d, const struct lt_layout *a, const struct lt_layout *b, const struct lt_layout *c,
	const struct lt_layout *dd, long *m, long *n, long *k) {
	if (!d || d->magic != DESC_MAGIC || !a || a->magic != LAYOUT_MAGIC || !b || b->magic != LAYOUT_MAGIC || !c ||
		c->magic != LAYOUT_MAGIC || !dd || dd->magic != LAYOUT_MAGIC)
		return BLAS_INVALID_VALUE;
	*m = (long)dd->rows, *n = (long)dd->cols;
	*k = (long)(d->transa ? a->rows : a->cols);
	long am = (long)(d->transa ? a->cols : a->rows);
	long bk = (long)(d->transb ? b->cols : b->rows), bn = (long)(d->transb ? b->rows : b->cols);
	if (am != *m || bk != *k || bn != *n || c->rows != dd->rows || c->cols != dd->cols) return BLAS_INVALID_VALUE;
	if (a->type != b->type || a->type != c->type || c->type != dd->type || scalar_type(d->compute, a->type) < 0) return BLAS_NOT_SUPPORTED;
	uint32_t e = d->epilogue;
	if (e != 1 && e != 2 && e != 4 && e != 6 && e != 32 && e != 36) return BLAS_NOT_SUPPORTED;
	return BLAS_SUCCESS;
}

EXPORT int cublasLtMatmulAlgoGetHeuristic(struct fake_lt *h, struct lt_desc *d, struct lt_layout *a, struct lt_layout *b,
	struct lt_layout *c, struct lt_layout *dd, struct lt_pref *p, int requested, uint64_t *results, int *returned) {
	FAULT("cublasLtMatmulAlgoGetHeuristic");
	if (!h || h->magic != LT_MAGIC) return BLAS_NOT_INITIALIZED;
	if (!p || p->magic != PREF_MAGIC || requested < 1 || !results || !returned) return BLAS_INVALID_VALUE;
	long m, n, k;
	int code = lt_shape(d, a, b, c, dd, &m, &n, &k);
	if (code) return code;
	memset(results, 0, 96);
	results[0] = ALGO_MAGIC; // the algorithm
	*returned = 1;
	return BLAS_SUCCESS;
}

EXPORT int cublasLtMatmul(struct fake_lt *h, struct lt_desc *d, const void *alpha, const void *a, struct lt_layout *la,
	const void *b, struct lt_layout *lb, const void *beta, const void *c, struct lt_layout *lc, void *dp, struct lt_layout *ld,
	const uint64_t *algo, void *ws, size_t wsn, CUstream s) {
	FAULT("cublasLtMatmul");
	if (!h || h->magic != LT_MAGIC) return BLAS_NOT_INITIALIZED;
	if (!alpha || !beta || (algo && algo[0] != ALGO_MAGIC)) return BLAS_INVALID_VALUE;
	long m, n, k;
	int code = lt_shape(d, la, lb, lc, ld, &m, &n, &k);
	if (code) return code;
	if (c != dp) return BLAS_NOT_SUPPORTED; // the fake computes in place only
	// An empty D fails to launch on the H100 (m or n 0, whatever k).
	if (m == 0 || n == 0) return BLAS_EXECUTION_FAILED;
	pthread_mutex_lock(&mu);
	int ok = ctx_live(current) && s && stream_live(s) && s->ctx == current;
	pthread_mutex_unlock(&mu);
	if (!ok) return BLAS_EXECUTION_FAILED;
	int t = la->type;
	if (!mem_ok(a, span((long)la->rows, (long)la->cols, la->ld, t)) || !mem_ok(b, span((long)lb->rows, (long)lb->cols, lb->ld, t)) ||
		!mem_ok(dp, span((long)ld->rows, (long)ld->cols, ld->ld, t)) || !mem_ok(ws, wsn) ||
		((d->epilogue & 4) && (!d->bias || !mem_ok(d->bias, (size_t)m * type_size(t)))))
		return BLAS_EXECUTION_FAILED;
	int st = scalar_type(d->compute, t);
	struct blas_op o = {.kind = K_GEMM, .t = t, .ta = d->transa, .tb = d->transb, .m = m, .n = n, .k = k, .lda = (long)la->ld,
		.ldb = (long)lb->ld, .ldc = (long)ld->ld, .count = 1, .alpha = load(st, alpha, 0), .beta = load(st, beta, 0),
		.a = a, .b = b, .c = dp, .epilogue = (int)d->epilogue, .bias = (d->epilogue & 4) ? d->bias : NULL};
	struct fake_blas q = {.magic = BLAS_MAGIC, .ctx = current, .stream = s};
	return queue(&q, o);
}

