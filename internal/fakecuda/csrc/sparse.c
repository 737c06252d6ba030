// The fake cuSPARSE (see driver.c): the generic API's calls package
// cusparse makes, checked as the library checks them and computed on the
// CPU by the stream's worker, later, in the stream's order. The work
// buffers each call asks for are reported and checked: one smaller than
// the size reported, or outside every device allocation, is
// CUSPARSE_STATUS_INVALID_VALUE. What cuSPARSE hands back to the host
// (SpGEMM's and DenseToSparse's number of non-zeros) waits for the stream
// first, as cuSPARSE does. Values are real and complex float32 and
// float64, and the halves (CUDA_R_16F, CUDA_R_16BF) where cuSPARSE takes
// them: SpMV and SpMM of CSR and COO matrices, computing in CUDA_R_32F;
// elsewhere they are CUSPARSE_STATUS_NOT_SUPPORTED here.

#include <complex.h>

#include "fakecuda.h"

enum {
	SP_SUCCESS = 0,
	SP_NOT_INITIALIZED = 1,
	SP_ALLOC_FAILED = 2,
	SP_INVALID_VALUE = 3,
	SP_EXECUTION_FAILED = 6,
	SP_NOT_SUPPORTED = 10,
};

long live_sparse;

static const char *sp_status_name(int s) {
	switch (s) {
	case 0: return "CUSPARSE_STATUS_SUCCESS";
	case 1: return "CUSPARSE_STATUS_NOT_INITIALIZED";
	case 2: return "CUSPARSE_STATUS_ALLOC_FAILED";
	case 3: return "CUSPARSE_STATUS_INVALID_VALUE";
	case 4: return "CUSPARSE_STATUS_ARCH_MISMATCH";
	case 5: return "CUSPARSE_STATUS_MAPPING_ERROR";
	case 6: return "CUSPARSE_STATUS_EXECUTION_FAILED";
	case 7: return "CUSPARSE_STATUS_INTERNAL_ERROR";
	case 8: return "CUSPARSE_STATUS_MATRIX_TYPE_NOT_SUPPORTED";
	case 9: return "CUSPARSE_STATUS_ZERO_PIVOT";
	case 10: return "CUSPARSE_STATUS_NOT_SUPPORTED";
	case 11: return "CUSPARSE_STATUS_INSUFFICIENT_RESOURCES";
	}
	return "CUSPARSE_STATUS_UNKNOWN";
}

static const char *sp_status_text(int s) {
	switch (s) {
	case 0: return "success";
	case 1: return "initialization error";
	case 2: return "out of memory";
	case 3: return "invalid value";
	case 6: return "execution failed";
	case 7: return "internal error";
	case 10: return "operation not supported";
	}
	return "unknown error";
}

EXPORT const char *cusparseGetErrorName(int s) { return sp_status_name(s); }
EXPORT const char *cusparseGetErrorString(int s) { return sp_status_text(s); }

// cusparseGetProperty answers as cuSPARSE 12.5.0.
EXPORT int cusparseGetProperty(int type, int *v) {
	FAULT("cusparseGetProperty");
	if (!v || type < 0 || type > 2) return SP_INVALID_VALUE;
	*v = type == 0 ? 12 : type == 1 ? 5 : 0;
	return SP_SUCCESS;
}

// ---- elements and indices ---------------------------------------------------

enum { V_F32 = 0, V_F64 = 1, V_C32 = 4, V_C64 = 5, V_F16 = 2, V_BF16 = 14 };
enum { I_16U = 1, I_32I = 2, I_64I = 3 };

typedef double complex cplx;

static size_t vsize(int t) {
	switch (t) {
	case V_F32: return 4;
	case V_F64: return 8;
	case V_C32: return 8;
	case V_C64: return 16;
	}
	return 0;
}
static int is_half(int t) { return t == V_F16 || t == V_BF16; }
static int vtype_known(int t) { return vsize(t) || is_half(t); }
// esize is vsize with the halves, for the calls that take them.
static size_t esize(int t) { return is_half(t) ? 2 : vsize(t); }

// The halves' bits to and from float: IEEE binary16 (rounded to nearest,
// ties to even, as __float2half) and bfloat16 (float's upper half,
// rounded so).
static float f16_float(uint16_t h) {
	uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, frac = h & 0x3ff, bits;
	if (exp == 0x1f) bits = sign | 0x7f800000 | frac << 13;
	else if (exp) bits = sign | (exp + 112) << 23 | frac << 13;
	else if (!frac) bits = sign;
	else {
		int e = 113;
		while (!(frac & 0x400)) frac <<= 1, e--;
		bits = sign | (uint32_t)e << 23 | (frac & 0x3ff) << 13;
	}
	float f;
	memcpy(&f, &bits, 4);
	return f;
}
static uint16_t float_f16(float f) {
	uint32_t b;
	memcpy(&b, &f, 4);
	uint16_t sign = (b >> 16) & 0x8000;
	int exp = (b >> 23) & 0xff;
	uint32_t frac = b & 0x7fffff;
	if (exp == 0xff) return sign | 0x7c00 | (frac ? 0x200 | frac >> 13 : 0);
	int e = exp - 112;
	if (e >= 0x1f) return sign | 0x7c00;
	uint32_t m;
	int shift;
	if (e <= 0) {
		if (e < -10) return sign;
		m = frac | 0x800000, shift = 14 - e;
	} else m = (uint32_t)e << 23 | frac, shift = 13;
	uint32_t r = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
	if (rem > half || (rem == half && (r & 1))) r++;
	return sign | (uint16_t)r;
}
static float bf16_float(uint16_t h) {
	uint32_t bits = (uint32_t)h << 16;
	float f;
	memcpy(&f, &bits, 4);
	return f;
}
static uint16_t float_bf16(float f) {
	uint32_t b;
	memcpy(&b, &f, 4);
	if ((b & 0x7fffffff) > 0x7f800000) return (b >> 16) | 0x40;
	b += 0x7fff + ((b >> 16) & 1);
	return b >> 16;
}
static size_t isize(int t) { return t == I_32I ? 4 : t == I_64I ? 8 : 0; }

static cplx vload(int t, const void *p, int64_t i) {
	switch (t) {
	case V_F32: return ((const float *)p)[i];
	case V_F64: return ((const double *)p)[i];
	case V_C32: return ((const float complex *)p)[i];
	case V_C64: return ((const double complex *)p)[i];
	case V_F16: return f16_float(((const uint16_t *)p)[i]);
	case V_BF16: return bf16_float(((const uint16_t *)p)[i]);
	}
	return 0;
}
static void vstore(int t, void *p, int64_t i, cplx v) {
	switch (t) {
	case V_F32: ((float *)p)[i] = (float)creal(v); break;
	case V_F64: ((double *)p)[i] = creal(v); break;
	case V_C32: ((float complex *)p)[i] = (float complex)v; break;
	case V_C64: ((double complex *)p)[i] = v; break;
	case V_F16: ((uint16_t *)p)[i] = float_f16((float)creal(v)); break;
	case V_BF16: ((uint16_t *)p)[i] = float_bf16((float)creal(v)); break;
	}
}
static int64_t iload(int t, const void *p, int64_t i) {
	return t == I_32I ? ((const int32_t *)p)[i] : ((const int64_t *)p)[i];
}
static void istore(int t, void *p, int64_t i, int64_t v) {
	if (t == I_32I) ((int32_t *)p)[i] = (int32_t)v;
	else ((int64_t *)p)[i] = v;
}
// scalar reads alpha or beta, host memory of the compute type.
static cplx scalar(int t, const void *p) { return p ? vload(t, p, 0) : 0; }

static int mem_ok(const void *p, size_t n) { return n == 0 || (p && range_ok((CUdeviceptr)(uintptr_t)p, n)); }

// ---- handles ----------------------------------------------------------------

struct fake_sparse {
	int magic;
	CUcontext ctx;
	CUstream stream;
};
#define SP_MAGIC 0x5ba45e

static int sp_live(struct fake_sparse *h) { return h && h->magic == SP_MAGIC; }

// usable returns the status for a call on h: its context must be current
// and its stream live.
static int usable(struct fake_sparse *h) {
	if (!sp_live(h)) return SP_NOT_INITIALIZED;
	pthread_mutex_lock(&mu);
	int ok = current == h->ctx && ctx_live(current) && (!h->stream || stream_live(h->stream));
	pthread_mutex_unlock(&mu);
	return ok ? SP_SUCCESS : SP_EXECUTION_FAILED;
}

static void counted(long d) {
	pthread_mutex_lock(&mu);
	live_sparse += d;
	pthread_mutex_unlock(&mu);
}

EXPORT int cusparseCreate(struct fake_sparse **out) {
	FAULT("cusparseCreate");
	if (!out) return SP_INVALID_VALUE;
	pthread_mutex_lock(&mu);
	int ok = initialized && ctx_live(current);
	pthread_mutex_unlock(&mu);
	if (!ok) return SP_NOT_INITIALIZED;
	struct fake_sparse *h = calloc(1, sizeof *h);
	h->magic = SP_MAGIC;
	h->ctx = current;
	counted(1);
	*out = h;
	return SP_SUCCESS;
}

EXPORT int cusparseDestroy(struct fake_sparse *h) {
	FAULT("cusparseDestroy");
	if (!sp_live(h)) return SP_NOT_INITIALIZED;
	drain_context(h->ctx); // as cuSPARSE, which synchronizes the device
	h->magic = 0;
	free(h);
	counted(-1);
	return SP_SUCCESS;
}

EXPORT int cusparseSetStream(struct fake_sparse *h, CUstream s) {
	FAULT("cusparseSetStream");
	if (!sp_live(h)) return SP_NOT_INITIALIZED;
	pthread_mutex_lock(&mu);
	int ok = !s || (stream_live(s) && s->ctx == h->ctx);
	pthread_mutex_unlock(&mu);
	if (!ok) return SP_INVALID_VALUE;
	h->stream = s;
	return SP_SUCCESS;
}

// wait waits for h's stream, for what the host must read now; refused
// while the stream captures (nothing has run to read).
static int wait_stream(struct fake_sparse *h) {
	if (h->stream) {
		pthread_mutex_lock(&mu);
		int capturing = h->stream->capture != NULL;
		pthread_mutex_unlock(&mu);
		if (capturing) return SP_NOT_SUPPORTED;
		drain_stream(h->stream);
	} else drain_context(h->ctx);
	return SP_SUCCESS;
}

// ---- descriptors ------------------------------------------------------------

enum { F_CSR = 1, F_CSC, F_COO, F_ELL, F_BSR };

// spm is what a sparse descriptor says, copied whole into the work that
// reads it: for CSR and CSC, a the offsets (of rows or columns) and b the
// indices; for COO, a the rows and b the columns.
struct spm {
	int fmt;
	int64_t rows, cols, nnz;
	void *a, *b, *v;
	int ta, tb, base, vt;
	int fill, diag; // CUSPARSE_FILL_MODE_LOWER 0, UPPER 1; NON_UNIT 0, UNIT 1
	// The blocked formats: BSR's block rows and columns and the order of
	// a block's elements (CUSPARSE_ORDER_COL 1, ROW 2), nnz its blocks;
	// Blocked-ELL's block size (rbs) and stored columns, nnz its values.
	int64_t rbs, cbs, ellcols;
	int order;
};
struct fake_spmat {
	int magic;
	struct spm m;
};
#define SPMAT_MAGIC 0x5ba3a7
static int spmat_live(struct fake_spmat *d) { return d && d->magic == SPMAT_MAGIC; }

struct dnm {
	int64_t rows, cols, ld;
	void *v;
	int vt, order; // CUSPARSE_ORDER_COL 1, ROW 2
};
struct fake_dnmat {
	int magic;
	struct dnm m;
};
#define DNMAT_MAGIC 0x5bad3a
static int dnmat_live(struct fake_dnmat *d) { return d && d->magic == DNMAT_MAGIC; }

struct fake_dnvec {
	int magic;
	int64_t n;
	void *v;
	int vt;
};
#define DNVEC_MAGIC 0x5bad7e
static int dnvec_live(struct fake_dnvec *d) { return d && d->magic == DNVEC_MAGIC; }

static int new_spmat(struct fake_spmat **out, struct spm m) {
	if (!out) return SP_INVALID_VALUE;
	if (m.rows < 0 || m.cols < 0 || m.nnz < 0 || (m.base != 0 && m.base != 1) || !vtype_known(m.vt)) return SP_INVALID_VALUE;
	if (m.ta != I_16U && m.ta != I_32I && m.ta != I_64I) return SP_INVALID_VALUE;
	if (m.tb != I_16U && m.tb != I_32I && m.tb != I_64I) return SP_INVALID_VALUE;
	if ((m.ta == I_32I || m.tb == I_32I) && (m.rows > INT32_MAX || m.cols > INT32_MAX || m.nnz > INT32_MAX))
		return SP_INVALID_VALUE;
	struct fake_spmat *d = calloc(1, sizeof *d);
	d->magic = SPMAT_MAGIC;
	d->m = m;
	counted(1);
	*out = d;
	return SP_SUCCESS;
}

EXPORT int cusparseCreateCsr(struct fake_spmat **out, int64_t rows, int64_t cols, int64_t nnz, void *off, void *ind, void *val,
                             int toff, int tind, int base, int vt) {
	FAULT("cusparseCreateCsr");
	return new_spmat(out, (struct spm){.fmt = F_CSR, rows, cols, nnz, off, ind, val, toff, tind, base, vt});
}

EXPORT int cusparseCreateCsc(struct fake_spmat **out, int64_t rows, int64_t cols, int64_t nnz, void *off, void *ind, void *val,
                             int toff, int tind, int base, int vt) {
	FAULT("cusparseCreateCsc");
	return new_spmat(out, (struct spm){.fmt = F_CSC, rows, cols, nnz, off, ind, val, toff, tind, base, vt});
}

EXPORT int cusparseCreateCoo(struct fake_spmat **out, int64_t rows, int64_t cols, int64_t nnz, void *ri, void *ci, void *val,
                             int tind, int base, int vt) {
	FAULT("cusparseCreateCoo");
	return new_spmat(out, (struct spm){.fmt = F_COO, rows, cols, nnz, ri, ci, val, tind, tind, base, vt});
}

// The blocked formats: SpMV takes BSR, SpMM BSR and Blocked-ELL, both
// untransposed (else CUSPARSE_STATUS_NOT_SUPPORTED); the other operations
// take neither.
EXPORT int cusparseCreateBlockedEll(struct fake_spmat **out, int64_t rows, int64_t cols, int64_t bs, int64_t ellCols, void *ci,
                                    void *val, int tind, int base, int vt) {
	FAULT("cusparseCreateBlockedEll");
	if (bs <= 0 || ellCols < 0 || ellCols % bs || rows % bs || cols % bs || ellCols > cols) return SP_INVALID_VALUE;
	struct spm m = {.fmt = F_ELL, rows, cols, ellCols * rows, NULL, ci, val, tind, tind, base, vt};
	m.rbs = m.cbs = bs, m.ellcols = ellCols;
	return new_spmat(out, m);
}

EXPORT int cusparseCreateBsr(struct fake_spmat **out, int64_t brows, int64_t bcols, int64_t bnnz, int64_t rbs, int64_t cbs,
                             void *off, void *ind, void *val, int toff, int tind, int base, int vt, int order) {
	FAULT("cusparseCreateBsr");
	if (rbs <= 0 || cbs <= 0 || brows < 0 || bcols < 0 || (order != 1 && order != 2)) return SP_INVALID_VALUE;
	struct spm m = {.fmt = F_BSR, brows * rbs, bcols * cbs, bnnz, off, ind, val, toff, tind, base, vt};
	m.rbs = rbs, m.cbs = cbs, m.order = order;
	return new_spmat(out, m);
}

EXPORT int cusparseDestroySpMat(struct fake_spmat *d) {
	FAULT("cusparseDestroySpMat");
	if (!d) return SP_SUCCESS; // cuSPARSE accepts NULL
	if (!spmat_live(d)) return SP_INVALID_VALUE;
	d->magic = 0;
	free(d);
	counted(-1);
	return SP_SUCCESS;
}

EXPORT int cusparseSpMatGetSize(struct fake_spmat *d, int64_t *rows, int64_t *cols, int64_t *nnz) {
	FAULT("cusparseSpMatGetSize");
	if (!spmat_live(d) || !rows || !cols || !nnz) return SP_INVALID_VALUE;
	*rows = d->m.rows, *cols = d->m.cols, *nnz = d->m.nnz;
	return SP_SUCCESS;
}

EXPORT int cusparseSpMatSetAttribute(struct fake_spmat *d, int attr, void *data, size_t n) {
	FAULT("cusparseSpMatSetAttribute");
	if (!spmat_live(d) || !data || n != sizeof(int)) return SP_INVALID_VALUE;
	int v = *(int *)data;
	if (v != 0 && v != 1) return SP_INVALID_VALUE;
	switch (attr) {
	case 0: d->m.fill = v; break;
	case 1: d->m.diag = v; break;
	default: return SP_INVALID_VALUE;
	}
	return SP_SUCCESS;
}

EXPORT int cusparseCsrSetPointers(struct fake_spmat *d, void *off, void *ind, void *val) {
	FAULT("cusparseCsrSetPointers");
	if (!spmat_live(d) || d->m.fmt != F_CSR || !off) return SP_INVALID_VALUE;
	d->m.a = off, d->m.b = ind, d->m.v = val;
	return SP_SUCCESS;
}

EXPORT int cusparseCreateDnVec(struct fake_dnvec **out, int64_t n, void *v, int vt) {
	FAULT("cusparseCreateDnVec");
	if (!out || n < 0 || !vtype_known(vt)) return SP_INVALID_VALUE;
	struct fake_dnvec *d = calloc(1, sizeof *d);
	*d = (struct fake_dnvec){DNVEC_MAGIC, n, v, vt};
	counted(1);
	*out = d;
	return SP_SUCCESS;
}

EXPORT int cusparseDestroyDnVec(struct fake_dnvec *d) {
	FAULT("cusparseDestroyDnVec");
	if (!d) return SP_SUCCESS;
	if (!dnvec_live(d)) return SP_INVALID_VALUE;
	d->magic = 0;
	free(d);
	counted(-1);
	return SP_SUCCESS;
}

EXPORT int cusparseCreateDnMat(struct fake_dnmat **out, int64_t rows, int64_t cols, int64_t ld, void *v, int vt, int order) {
	FAULT("cusparseCreateDnMat");
	if (!out || rows < 0 || cols < 0 || !vtype_known(vt) || (order != 1 && order != 2)) return SP_INVALID_VALUE;
	if (ld < (order == 2 ? cols : rows) || ld < 1) return SP_INVALID_VALUE;
	struct fake_dnmat *d = calloc(1, sizeof *d);
	d->magic = DNMAT_MAGIC;
	d->m = (struct dnm){rows, cols, ld, v, vt, order};
	counted(1);
	*out = d;
	return SP_SUCCESS;
}

EXPORT int cusparseDestroyDnMat(struct fake_dnmat *d) {
	FAULT("cusparseDestroyDnMat");
	if (!d) return SP_SUCCESS;
	if (!dnmat_live(d)) return SP_INVALID_VALUE;
	d->magic = 0;
	free(d);
	counted(-1);
	return SP_SUCCESS;
}

// ---- reading the formats ---------------------------------------------------

// spm_ok checks that a matrix's arrays lie in device memory, for the
// operations the fake computes (CSR, CSC, COO of real or complex values).
// blocks says which blocked formats a call takes: B_BSR, B_ELL.
enum { B_BSR = 1, B_ELL = 2 };
static int spm_okx(const struct spm *m, int need_values, int halves, int blocks) {
	size_t es = halves ? esize(m->vt) : vsize(m->vt);
	if ((m->fmt == F_ELL && !(blocks & B_ELL)) || (m->fmt == F_BSR && !(blocks & B_BSR)) || !es) return SP_NOT_SUPPORTED;
	if (!isize(m->tb) || (m->fmt != F_ELL && !isize(m->ta))) return SP_NOT_SUPPORTED;
	if (m->fmt == F_BSR) {
		int64_t brows = m->rows / m->rbs;
		if (!mem_ok(m->a, (brows + 1) * isize(m->ta)) || !mem_ok(m->b, m->nnz * isize(m->tb))) return SP_INVALID_VALUE;
		if (need_values && !mem_ok(m->v, m->nnz * m->rbs * m->cbs * es)) return SP_INVALID_VALUE;
		return SP_SUCCESS;
	}
	if (m->fmt == F_ELL) {
		if (!mem_ok(m->b, (m->rows / m->rbs) * (m->ellcols / m->rbs) * isize(m->tb))) return SP_INVALID_VALUE;
		if (need_values && !mem_ok(m->v, m->nnz * es)) return SP_INVALID_VALUE;
		return SP_SUCCESS;
	}
	int64_t n_off = m->fmt == F_CSR ? m->rows + 1 : m->fmt == F_CSC ? m->cols + 1 : m->nnz;
	if (!mem_ok(m->a, n_off * isize(m->ta)) || !mem_ok(m->b, m->nnz * isize(m->tb))) return SP_INVALID_VALUE;
	if (need_values && !mem_ok(m->v, m->nnz * es)) return SP_INVALID_VALUE;
	return SP_SUCCESS;
}
static int spm_ok(const struct spm *m, int need_values) { return spm_okx(m, need_values, 0, 0); }
static int is_blocked(const struct spm *m) { return m->fmt == F_BSR || m->fmt == F_ELL; }

// dn_bytes sets *n to the bytes a dense matrix spans, of es bytes an
// element; 0 where that overflows (a matrix past any memory: what the
// real library would read or write is out of bounds).
static int dn_bytes(const struct dnm *d, size_t es, size_t *n) {
	int64_t major = d->order == 2 ? d->rows : d->cols, minor = d->order == 2 ? d->cols : d->rows, elems;
	if (major == 0 || minor == 0) return *n = 0, 1;
	if (__builtin_mul_overflow(major - 1, d->ld, &elems) || __builtin_add_overflow(elems, minor, &elems)) return 0;
	return !__builtin_mul_overflow((size_t)elems, es, n);
}
static int dnm_okx(const struct dnm *d, int halves) {
	size_t es = halves ? esize(d->vt) : vsize(d->vt), n;
	if (!es) return SP_NOT_SUPPORTED;
	return dn_bytes(d, es, &n) && mem_ok(d->v, n) ? SP_SUCCESS : SP_INVALID_VALUE;
}
static int dnm_ok(const struct dnm *d) { return dnm_okx(d, 0); }

// mixed_ok returns the status for the value types of SpMV's and SpMM's
// operands (A and X or B, then Y or C) and compute type: all the compute
// type (real or complex, single or double), or A and X in one half type
// with Y in it or in float32, computing in float32 (cuSPARSE's mixed
// precision); halves_used says the second was taken.
static int mixed_ok(int at, int xt, int yt, int ct, int *halves_used) {
	*halves_used = 0;
	if (at == ct && xt == ct && yt == ct && vsize(ct)) return SP_SUCCESS;
	if (is_half(at) && xt == at && (yt == at || yt == V_F32) && ct == V_F32) {
		*halves_used = 1;
		return SP_SUCCESS;
	}
	return SP_NOT_SUPPORTED;
}
static int64_t dn_at(const struct dnm *d, int64_t i, int64_t j) { return d->order == 2 ? i * d->ld + j : j * d->ld + i; }

// each calls f on each stored element (row, column, value) of m, in the
// order stored; an index outside the matrix is skipped (the real library
// would read or write past its arrays).
typedef void (*visit)(void *ctx, int64_t r, int64_t c, cplx v);
static void each(const struct spm *m, visit f, void *ctx) {
	int64_t base = m->base;
	if (m->fmt == F_BSR) {
		int64_t rb = m->rbs, cb = m->cbs, bb = rb * cb;
		for (int64_t br = 0; br < m->rows / rb; br++) {
			int64_t lo = iload(m->ta, m->a, br) - base, hi = iload(m->ta, m->a, br + 1) - base;
			if (lo < 0) lo = 0;
			if (hi > m->nnz) hi = m->nnz;
			for (int64_t k = lo; k < hi; k++) {
				int64_t bc = iload(m->tb, m->b, k) - base;
				if (bc < 0 || bc >= m->cols / cb) continue;
				for (int64_t e = 0; e < bb; e++) {
					int64_t r = m->order == 2 ? e / cb : e % rb, c = m->order == 2 ? e % cb : e / rb;
					f(ctx, br * rb + r, bc * cb + c, m->v ? vload(m->vt, m->v, k * bb + e) : 0);
				}
			}
		}
		return;
	}
	if (m->fmt == F_ELL) {
		int64_t bs = m->rbs, width = m->ellcols / bs;
		for (int64_t br = 0; br < m->rows / bs; br++)
			for (int64_t k = 0; k < width; k++) {
				int64_t bc = iload(m->tb, m->b, br * width + k);
				if (bc < 0) continue; // -1: no block
				bc -= base;
				if (bc < 0 || bc >= m->cols / bs) continue;
				for (int64_t i = 0; i < bs; i++)
					for (int64_t j = 0; j < bs; j++) {
						int64_t r = br * bs + i;
						f(ctx, r, bc * bs + j, m->v ? vload(m->vt, m->v, r * m->ellcols + k * bs + j) : 0);
					}
			}
		return;
	}
	if (m->fmt == F_COO) {
		for (int64_t k = 0; k < m->nnz; k++) {
			int64_t r = iload(m->ta, m->a, k) - base, c = iload(m->tb, m->b, k) - base;
			if (r >= 0 && r < m->rows && c >= 0 && c < m->cols) f(ctx, r, c, m->v ? vload(m->vt, m->v, k) : 0);
		}
		return;
	}
	int64_t outer = m->fmt == F_CSR ? m->rows : m->cols, inner = m->fmt == F_CSR ? m->cols : m->rows;
	for (int64_t o = 0; o < outer; o++) {
		int64_t lo = iload(m->ta, m->a, o) - base, hi = iload(m->ta, m->a, o + 1) - base;
		if (lo < 0) lo = 0;
		if (hi > m->nnz) hi = m->nnz;
		for (int64_t k = lo; k < hi; k++) {
			int64_t i = iload(m->tb, m->b, k) - base;
			if (i < 0 || i >= inner) continue;
			cplx v = m->v ? vload(m->vt, m->v, k) : 0;
			if (m->fmt == F_CSR) f(ctx, o, i, v);
			else f(ctx, i, o, v);
		}
	}
}

// op applies cusparseOperation_t to an element: 0 as is, 1 transposed,
// 2 conjugate transposed.
static void apply_op(int op, int64_t *r, int64_t *c, cplx *v) {
	if (op != 0) {
		int64_t t = *r;
		*r = *c, *c = t;
	}
	if (op == 2) *v = conj(*v);
}

static int op_ok(int op) { return op >= 0 && op <= 2; }

// buffer_ok checks a work buffer against the size the fake reported.
static int buffer_ok(const void *buf, size_t need) { return need == 0 || (buf && mem_ok(buf, need)); }

// ---- SpMV -------------------------------------------------------------------

struct spmv_job {
	struct lib_job job;
	struct spm a;
	int op, ct;
	cplx alpha, beta;
	void *x, *y;
	int64_t nx, ny;
	int xt, yt;
};

struct acc_ctx {
	int op;
	const void *x;
	int xt;
	cplx *acc;
};
static void spmv_visit(void *p, int64_t r, int64_t c, cplx v) {
	struct acc_ctx *a = p;
	apply_op(a->op, &r, &c, &v);
	a->acc[r] += v * vload(a->xt, a->x, c);
}

static void run_spmv(struct lib_job *job) {
	struct spmv_job *o = (struct spmv_job *)job;
	cplx *acc = calloc(o->ny ? o->ny : 1, sizeof *acc);
	struct acc_ctx a = {o->op, o->x, o->xt, acc};
	each(&o->a, spmv_visit, &a);
	for (int64_t i = 0; i < o->ny; i++) {
		cplx y = o->alpha * acc[i];
		if (o->beta != 0) y += o->beta * vload(o->yt, o->y, i);
		vstore(o->yt, o->y, i, y);
	}
	free(acc);
}

static size_t spmv_need(const struct spm *a) { return 64 + (size_t)a->rows % 7 * 16; }

static int spmv_check(struct fake_sparse *h, int op, struct fake_spmat *A, struct fake_dnvec *X, struct fake_dnvec *Y, int ct,
                      int alg) {
	int r = usable(h);
	if (r) return r;
	if (!spmat_live(A) || !dnvec_live(X) || !dnvec_live(Y) || !op_ok(op)) return SP_INVALID_VALUE;
	if (alg < 0 || alg > 5) return SP_INVALID_VALUE;
	int64_t rows = op ? A->m.cols : A->m.rows, cols = op ? A->m.rows : A->m.cols;
	if (X->n != cols || Y->n != rows) return SP_INVALID_VALUE;
	int halves;
	if ((r = mixed_ok(A->m.vt, X->vt, Y->vt, ct, &halves))) return r;
	if (is_blocked(&A->m) && op) return SP_NOT_SUPPORTED;
	if ((r = spm_okx(&A->m, 1, halves, B_BSR))) return r;
	if (!mem_ok(X->v, X->n * esize(X->vt)) || !mem_ok(Y->v, Y->n * esize(Y->vt))) return SP_INVALID_VALUE;
	return SP_SUCCESS;
}

EXPORT int cusparseSpMV_bufferSize(struct fake_sparse *h, int op, const void *alpha, struct fake_spmat *A, struct fake_dnvec *X,
                                   const void *beta, struct fake_dnvec *Y, int ct, int alg, size_t *size) {
	FAULT("cusparseSpMV_bufferSize");
	int r = spmv_check(h, op, A, X, Y, ct, alg);
	if (r) return r;
	if (!alpha || !beta || !size) return SP_INVALID_VALUE;
	*size = spmv_need(&A->m);
	return SP_SUCCESS;
}

EXPORT int cusparseSpMV(struct fake_sparse *h, int op, const void *alpha, struct fake_spmat *A, struct fake_dnvec *X, const void *beta,
                        struct fake_dnvec *Y, int ct, int alg, void *buf) {
	FAULT("cusparseSpMV");
	int r = spmv_check(h, op, A, X, Y, ct, alg);
	if (r) return r;
	if (!alpha || !beta || !buffer_ok(buf, spmv_need(&A->m))) return SP_INVALID_VALUE;
	struct spmv_job *o = malloc(sizeof *o);
	*o = (struct spmv_job){.job = {run_spmv, sizeof *o}, .a = A->m, .op = op, .ct = ct, .alpha = scalar(ct, alpha),
	                       .beta = scalar(ct, beta), .x = X->v, .y = Y->v, .nx = X->n, .ny = Y->n, .xt = X->vt, .yt = Y->vt};
	return enqueue_job(h->stream, &o->job) == SUCCESS ? SP_SUCCESS : SP_EXECUTION_FAILED;
}

// ---- SpMM -------------------------------------------------------------------

struct spmm_job {
	struct lib_job job;
	struct spm a;
	struct dnm b, c;
	int opa, opb;
	cplx alpha, beta;
};

struct spmm_ctx {
	const struct spmm_job *o;
	cplx *acc; // rows of C by columns of C, row-major
};
static void spmm_visit(void *p, int64_t r, int64_t k, cplx v) {
	struct spmm_ctx *s = p;
	const struct spmm_job *o = s->o;
	apply_op(o->opa, &r, &k, &v);
	int64_t n = o->c.cols;
	for (int64_t j = 0; j < n; j++) {
		int64_t bi = o->opb ? j : k, bj = o->opb ? k : j;
		cplx b = vload(o->b.vt, o->b.v, dn_at(&o->b, bi, bj));
		if (o->opb == 2) b = conj(b);
		s->acc[r * n + j] += v * b;
	}
}

static void run_spmm(struct lib_job *job) {
	struct spmm_job *o = (struct spmm_job *)job;
	int64_t m = o->c.rows, n = o->c.cols;
	cplx *acc = calloc((m * n) != 0 ? m * n : 1, sizeof *acc);
	struct spmm_ctx s = {o, acc};
	each(&o->a, spmm_visit, &s);
	for (int64_t i = 0; i < m; i++)
		for (int64_t j = 0; j < n; j++) {
			int64_t at = dn_at(&o->c, i, j);
			cplx c = o->alpha * acc[i * n + j];
			if (o->beta != 0) c += o->beta * vload(o->c.vt, o->c.v, at);
			vstore(o->c.vt, o->c.v, at, c);
		}
	free(acc);
}

static size_t spmm_need(const struct dnm *c) { return 128 + (size_t)c->cols * 8; }

static int spmm_check(struct fake_sparse *h, int opa, int opb, struct fake_spmat *A, struct fake_dnmat *B, struct fake_dnmat *C, int ct,
                      int alg) {
	int r = usable(h);
	if (r) return r;
	if (!spmat_live(A) || !dnmat_live(B) || !dnmat_live(C) || !op_ok(opa) || !op_ok(opb)) return SP_INVALID_VALUE;
	if (alg < 0 || alg > 14) return SP_INVALID_VALUE;
	int64_t m = opa ? A->m.cols : A->m.rows, k = opa ? A->m.rows : A->m.cols;
	int64_t bk = opb ? B->m.cols : B->m.rows, bn = opb ? B->m.rows : B->m.cols;
	if (C->m.rows != m || bk != k || C->m.cols != bn) return SP_INVALID_VALUE;
	int halves;
	if ((r = mixed_ok(A->m.vt, B->m.vt, C->m.vt, ct, &halves))) return r;
	if (is_blocked(&A->m) && opa) return SP_NOT_SUPPORTED;
	// Blocked-ELL: int32 indices (CUSPARSE_INDEX_32I 2) and real or half
	// values only, as cuSPARSE 12 answers on an H100 (complex: CUDA_C_32F
	// 4, CUDA_C_64F 5).
	if (A->m.fmt == F_ELL && (A->m.tb != 2 || A->m.vt == 4 || A->m.vt == 5)) return SP_NOT_SUPPORTED;
	if ((r = spm_okx(&A->m, 1, halves, B_BSR | B_ELL)) || (r = dnm_okx(&B->m, halves)) || (r = dnm_okx(&C->m, halves))) return r;
	return SP_SUCCESS;
}

EXPORT int cusparseSpMM_bufferSize(struct fake_sparse *h, int opa, int opb, const void *alpha, struct fake_spmat *A, struct fake_dnmat *B,
                                   const void *beta, struct fake_dnmat *C, int ct, int alg, size_t *size) {
	FAULT("cusparseSpMM_bufferSize");
	int r = spmm_check(h, opa, opb, A, B, C, ct, alg);
	if (r) return r;
	if (!alpha || !beta || !size) return SP_INVALID_VALUE;
	*size = spmm_need(&C->m);
	return SP_SUCCESS;
}

EXPORT int cusparseSpMM_preprocess(struct fake_sparse *h, int opa, int opb, const void *alpha, struct fake_spmat *A, struct fake_dnmat *B,
                                   const void *beta, struct fake_dnmat *C, int ct, int alg, void *buf) {
	FAULT("cusparseSpMM_preprocess");
	int r = spmm_check(h, opa, opb, A, B, C, ct, alg);
	if (r) return r;
	if (!alpha || !beta || !buffer_ok(buf, spmm_need(&C->m))) return SP_INVALID_VALUE;
	return SP_SUCCESS;
}

EXPORT int cusparseSpMM(struct fake_sparse *h, int opa, int opb, const void *alpha, struct fake_spmat *A, struct fake_dnmat *B,
                        const void *beta, struct fake_dnmat *C, int ct, int alg, void *buf) {
	FAULT("cusparseSpMM");
	int r = spmm_check(h, opa, opb, A, B, C, ct, alg);
	if (r) return r;
	if (!alpha || !beta || !buffer_ok(buf, spmm_need(&C->m))) return SP_INVALID_VALUE;
	struct spmm_job *o = malloc(sizeof *o);
	*o = (struct spmm_job){.job = {run_spmm, sizeof *o}, .a = A->m, .b = B->m, .c = C->m, .opa = opa, .opb = opb,
	                       .alpha = scalar(ct, alpha), .beta = scalar(ct, beta)};
	return enqueue_job(h->stream, &o->job) == SUCCESS ? SP_SUCCESS : SP_EXECUTION_FAILED;
}

// ---- SpGEMM -----------------------------------------------------------------

// The product is computed by cusparseSpGEMM_compute, which waits for the
// stream (the host needs C's number of non-zeros), into the descriptor's
// host arrays; cusparseSpGEMM_copy queues their copy into C's arrays.
struct fake_spgemm {
	int magic;
	int stage; // 0 new, 1 estimated, 2 computed
	int64_t rows, nnz;
	int64_t *off, *col;
	cplx *val;
};
#define SPGEMM_MAGIC 0x5b6e33
static int spgemm_live(struct fake_spgemm *d) { return d && d->magic == SPGEMM_MAGIC; }

static void spgemm_clear(struct fake_spgemm *d) {
	free(d->off), free(d->col), free(d->val);
	d->off = NULL, d->col = NULL, d->val = NULL;
	d->nnz = 0, d->rows = 0;
}

EXPORT int cusparseSpGEMM_createDescr(struct fake_spgemm **out) {
	FAULT("cusparseSpGEMM_createDescr");
	if (!out) return SP_INVALID_VALUE;
	struct fake_spgemm *d = calloc(1, sizeof *d);
	d->magic = SPGEMM_MAGIC;
	counted(1);
	*out = d;
	return SP_SUCCESS;
}

EXPORT int cusparseSpGEMM_destroyDescr(struct fake_spgemm *d) {
	FAULT("cusparseSpGEMM_destroyDescr");
	if (!d) return SP_SUCCESS;
	if (!spgemm_live(d)) return SP_INVALID_VALUE;
	spgemm_clear(d);
	d->magic = 0;
	free(d);
	counted(-1);
	return SP_SUCCESS;
}

static int spgemm_check(struct fake_sparse *h, int opa, int opb, const void *alpha, struct fake_spmat *A, struct fake_spmat *B,
                        const void *beta, struct fake_spmat *C, int ct, int alg, struct fake_spgemm *d) {
	int r = usable(h);
	if (r) return r;
	if (!spmat_live(A) || !spmat_live(B) || !spmat_live(C) || !spgemm_live(d) || !alpha || !beta) return SP_INVALID_VALUE;
	if (opa != 0 || opb != 0) return SP_NOT_SUPPORTED; // cuSPARSE's SpGEMM: non-transposed only
	if (alg < 0 || alg > 5) return SP_INVALID_VALUE;
	if (A->m.fmt != F_CSR || B->m.fmt != F_CSR || C->m.fmt != F_CSR) return SP_NOT_SUPPORTED;
	// cuSPARSE's SpGEMM: 32-bit indices only.
	if (A->m.ta != I_32I || B->m.ta != I_32I || C->m.ta != I_32I || A->m.tb != I_32I || B->m.tb != I_32I || C->m.tb != I_32I)
		return SP_NOT_SUPPORTED;
	if (A->m.cols != B->m.rows || C->m.rows != A->m.rows || C->m.cols != B->m.cols) return SP_INVALID_VALUE;
	if (A->m.vt != ct || B->m.vt != ct || C->m.vt != ct) return SP_NOT_SUPPORTED;
	if ((r = spm_ok(&A->m, 1)) || (r = spm_ok(&B->m, 1))) return r;
	return SP_SUCCESS;
}

static size_t spgemm_need1(const struct spm *a) { return 256 + (size_t)a->nnz * 4; }
static size_t spgemm_need2(const struct spm *a, const struct spm *b) { return 512 + (size_t)(a->nnz + b->nnz) * 8; }

EXPORT int cusparseSpGEMM_workEstimation(struct fake_sparse *h, int opa, int opb, const void *alpha, struct fake_spmat *A,
                                         struct fake_spmat *B, const void *beta, struct fake_spmat *C, int ct, int alg,
                                         struct fake_spgemm *d, size_t *size1, void *buf1) {
	FAULT("cusparseSpGEMM_workEstimation");
	int r = spgemm_check(h, opa, opb, alpha, A, B, beta, C, ct, alg, d);
	if (r) return r;
	if (!size1) return SP_INVALID_VALUE;
	size_t need = spgemm_need1(&A->m);
	if (!buf1) {
		*size1 = need;
		return SP_SUCCESS;
	}
	if (*size1 < need || !buffer_ok(buf1, need)) return SP_INVALID_VALUE;
	d->stage = 1;
	return SP_SUCCESS;
}

// row_of is the dense accumulator of one row of the product.
struct gemm_row {
	int64_t n, cnt;
	cplx *acc;
	int64_t *mark, *cols;
};

EXPORT int cusparseSpGEMM_compute(struct fake_sparse *h, int opa, int opb, const void *alpha, struct fake_spmat *A, struct fake_spmat *B,
                                  const void *beta, struct fake_spmat *C, int ct, int alg, struct fake_spgemm *d, size_t *size2,
                                  void *buf2) {
	FAULT("cusparseSpGEMM_compute");
	int r = spgemm_check(h, opa, opb, alpha, A, B, beta, C, ct, alg, d);
	if (r) return r;
	if (!size2) return SP_INVALID_VALUE;
	if (d->stage < 1) return SP_INVALID_VALUE; // workEstimation first
	size_t need = spgemm_need2(&A->m, &B->m);
	if (!buf2) {
		*size2 = need;
		return SP_SUCCESS;
	}
	if (*size2 < need || !buffer_ok(buf2, need)) return SP_INVALID_VALUE;
	if ((r = wait_stream(h))) return r;
	const struct spm *a = &A->m, *b = &B->m;
	cplx al = scalar(ct, alpha);
	int64_t m = a->rows, n = b->cols, cap = 16, nnz = 0;
	int64_t *off = calloc(m + 1, sizeof *off), *col = malloc(cap * sizeof *col);
	cplx *val = malloc(cap * sizeof *val);
	cplx *acc = calloc(n ? n : 1, sizeof *acc);
	int64_t *mark = malloc((n ? n : 1) * sizeof *mark), *cols = malloc((n ? n : 1) * sizeof *cols);
	for (int64_t j = 0; j < n; j++) mark[j] = -1;
	for (int64_t i = 0; i < m; i++) {
		int64_t cnt = 0;
		int64_t lo = iload(a->ta, a->a, i) - a->base, hi = iload(a->ta, a->a, i + 1) - a->base;
		for (int64_t k = lo < 0 ? 0 : lo; k < hi && k < a->nnz; k++) {
			int64_t kk = iload(a->tb, a->b, k) - a->base;
			if (kk < 0 || kk >= a->cols) continue;
			cplx av = vload(a->vt, a->v, k);
			int64_t blo = iload(b->ta, b->a, kk) - b->base, bhi = iload(b->ta, b->a, kk + 1) - b->base;
			for (int64_t q = blo < 0 ? 0 : blo; q < bhi && q < b->nnz; q++) {
				int64_t j = iload(b->tb, b->b, q) - b->base;
				if (j < 0 || j >= n) continue;
				if (mark[j] != i) mark[j] = i, acc[j] = 0, cols[cnt++] = j;
				acc[j] += av * vload(b->vt, b->v, q);
			}
		}
		// Columns in increasing order, as cuSPARSE's default algorithm leaves them.
		for (int64_t x = 1; x < cnt; x++)
			for (int64_t y = x; y > 0 && cols[y - 1] > cols[y]; y--) {
				int64_t t = cols[y];
				cols[y] = cols[y - 1], cols[y - 1] = t;
			}
		for (int64_t x = 0; x < cnt; x++) {
			if (nnz == cap) {
				cap *= 2;
				col = realloc(col, cap * sizeof *col);
				val = realloc(val, cap * sizeof *val);
			}
			col[nnz] = cols[x], val[nnz] = al * acc[cols[x]];
			nnz++;
		}
		off[i + 1] = nnz;
	}
	free(acc), free(mark), free(cols);
	spgemm_clear(d);
	d->rows = m, d->nnz = nnz, d->off = off, d->col = col, d->val = val;
	d->stage = 2;
	C->m.nnz = nnz;
	return SP_SUCCESS;
}

struct spgemm_copy_job {
	struct lib_job job;
	struct spm c;
	int64_t *off, *col; // owned by the job, freed once run
	cplx *val;
};

static void run_spgemm_copy(struct lib_job *job) {
	struct spgemm_copy_job *o = (struct spgemm_copy_job *)job;
	for (int64_t i = 0; i <= o->c.rows; i++) istore(o->c.ta, o->c.a, i, o->off[i] + o->c.base);
	for (int64_t k = 0; k < o->c.nnz; k++) {
		istore(o->c.tb, o->c.b, k, o->col[k] + o->c.base);
		vstore(o->c.vt, o->c.v, k, o->val[k]);
	}
	free(o->off), free(o->col), free(o->val);
}

EXPORT int cusparseSpGEMM_copy(struct fake_sparse *h, int opa, int opb, const void *alpha, struct fake_spmat *A, struct fake_spmat *B,
                               const void *beta, struct fake_spmat *C, int ct, int alg, struct fake_spgemm *d) {
	FAULT("cusparseSpGEMM_copy");
	int r = spgemm_check(h, opa, opb, alpha, A, B, beta, C, ct, alg, d);
	if (r) return r;
	if (d->stage != 2 || C->m.nnz != d->nnz) return SP_INVALID_VALUE;
	if ((r = spm_ok(&C->m, 1))) return r;
	pthread_mutex_lock(&mu);
	int capturing = h->stream && h->stream->capture;
	pthread_mutex_unlock(&mu);
	if (capturing) return SP_NOT_SUPPORTED; // the job owns its arrays: not for a graph's copy
	struct spgemm_copy_job *o = malloc(sizeof *o);
	*o = (struct spgemm_copy_job){.job = {run_spgemm_copy, sizeof *o}, .c = C->m};
	size_t nn = d->nnz ? d->nnz : 1;
	o->off = malloc((d->rows + 1) * sizeof *o->off), o->col = malloc(nn * sizeof *o->col), o->val = malloc(nn * sizeof *o->val);
	memcpy(o->off, d->off, (d->rows + 1) * sizeof *o->off);
	memcpy(o->col, d->col, d->nnz * sizeof *o->col);
	memcpy(o->val, d->val, d->nnz * sizeof *o->val);
	int64_t *off = o->off, *col = o->col;
	cplx *val = o->val;
	if (enqueue_job(h->stream, &o->job) != SUCCESS) {
		// enqueue_job freed the job, not its arrays
		free(off), free(col), free(val);
		return SP_EXECUTION_FAILED;
	}
	return SP_SUCCESS;
}

// ---- triangular solves --------------------------------------------------------

struct fake_spsv {
	int magic;
	int analyzed;
	int64_t n;
};
#define SPSV_MAGIC 0x5b5a5f
static int spsv_live(struct fake_spsv *d) { return d && d->magic == SPSV_MAGIC; }

static int new_spsv(struct fake_spsv **out) {
	if (!out) return SP_INVALID_VALUE;
	struct fake_spsv *d = calloc(1, sizeof *d);
	d->magic = SPSV_MAGIC;
	counted(1);
	*out = d;
	return SP_SUCCESS;
}
static int destroy_spsv(struct fake_spsv *d) {
	if (!d) return SP_SUCCESS;
	if (!spsv_live(d)) return SP_INVALID_VALUE;
	d->magic = 0;
	free(d);
	counted(-1);
	return SP_SUCCESS;
}

EXPORT int cusparseSpSV_createDescr(struct fake_spsv **out) {
	FAULT("cusparseSpSV_createDescr");
	return new_spsv(out);
}
EXPORT int cusparseSpSV_destroyDescr(struct fake_spsv *d) {
	FAULT("cusparseSpSV_destroyDescr");
	return destroy_spsv(d);
}
EXPORT int cusparseSpSM_createDescr(struct fake_spsv **out) {
	FAULT("cusparseSpSM_createDescr");
	return new_spsv(out);
}
EXPORT int cusparseSpSM_destroyDescr(struct fake_spsv *d) {
	FAULT("cusparseSpSM_destroyDescr");
	return destroy_spsv(d);
}

// tri is op(A)'s triangle, row by row (CSR on the host), with its diagonal
// apart: what a substitution reads.
struct tri {
	int64_t n;
	int lower, unit;
	int64_t *off, *col;
	cplx *val, *diag;
};
struct tri_ctx {
	struct tri *t;
	int op, pass; // pass 0 counts, 1 fills
	int64_t *fill;
};
static void tri_visit(void *p, int64_t r, int64_t c, cplx v) {
	struct tri_ctx *x = p;
	apply_op(x->op, &r, &c, &v);
	struct tri *t = x->t;
	if (r == c) {
		if (x->pass == 1) t->diag[r] += v;
		return;
	}
	if (t->lower ? c > r : c < r) return; // the other triangle: not read
	if (x->pass == 0) t->off[r + 1]++;
	else {
		int64_t k = x->fill[r]++;
		t->col[k] = c, t->val[k] = v;
	}
}

static void tri_build(struct tri *t, const struct spm *a, int op) {
	int64_t n = a->rows;
	t->n = n;
	// cuSPARSE's fill mode and diagonal type are A's; op(A) of a lower A is upper.
	t->lower = (a->fill == 0) != (op != 0);
	t->unit = a->diag == 1;
	t->off = calloc(n + 1, sizeof *t->off);
	t->diag = calloc(n ? n : 1, sizeof *t->diag);
	struct tri_ctx x = {t, op, 0, NULL};
	// The triangle is A's (before op): filter on A's fill mode by visiting
	// with op applied, then keeping op(A)'s triangle.
	each(a, tri_visit, &x);
	for (int64_t i = 0; i < n; i++) t->off[i + 1] += t->off[i];
	t->col = malloc((t->off[n] ? t->off[n] : 1) * sizeof *t->col);
	t->val = malloc((t->off[n] ? t->off[n] : 1) * sizeof *t->val);
	x.pass = 1;
	x.fill = malloc((n ? n : 1) * sizeof *x.fill);
	memcpy(x.fill, t->off, n * sizeof *x.fill);
	each(a, tri_visit, &x);
	free(x.fill);
}
static void tri_free(struct tri *t) { free(t->off), free(t->col), free(t->val), free(t->diag); }

// tri_solve solves op(A) y = alpha x for one right-hand side (strided
// reads and writes through get and put).
static void tri_solve(const struct tri *t, cplx alpha, cplx *y) {
	int64_t n = t->n;
	for (int64_t s = 0; s < n; s++) {
		int64_t i = t->lower ? s : n - 1 - s;
		cplx v = alpha * y[i];
		for (int64_t k = t->off[i]; k < t->off[i + 1]; k++) v -= t->val[k] * y[t->col[k]];
		y[i] = t->unit ? v : v / t->diag[i];
	}
}

struct spsv_job {
	struct lib_job job;
	struct spm a;
	int op;
	cplx alpha;
	void *x, *y;
	int xt, yt;
};

static void run_spsv(struct lib_job *job) {
	struct spsv_job *o = (struct spsv_job *)job;
	struct tri t;
	tri_build(&t, &o->a, o->op);
	cplx *y = malloc((t.n ? t.n : 1) * sizeof *y);
	for (int64_t i = 0; i < t.n; i++) y[i] = vload(o->xt, o->x, i);
	tri_solve(&t, o->alpha, y);
	for (int64_t i = 0; i < t.n; i++) vstore(o->yt, o->y, i, y[i]);
	free(y);
	tri_free(&t);
}

static size_t spsv_need(const struct spm *a) { return 256 + (size_t)a->rows * 8; }

static int spsv_check(struct fake_sparse *h, int op, const void *alpha, struct fake_spmat *A, struct fake_dnvec *X, struct fake_dnvec *Y,
                      int ct, int alg, struct fake_spsv *d) {
	int r = usable(h);
	if (r) return r;
	if (!spmat_live(A) || !dnvec_live(X) || !dnvec_live(Y) || !spsv_live(d) || !alpha || !op_ok(op) || alg != 0) return SP_INVALID_VALUE;
	if (A->m.fmt != F_CSR && A->m.fmt != F_COO) return SP_NOT_SUPPORTED; // cuSPARSE's SpSV: CSR and COO
	if (A->m.rows != A->m.cols || X->n != A->m.rows || Y->n != A->m.rows) return SP_INVALID_VALUE;
	if (A->m.vt != ct || X->vt != ct || Y->vt != ct) return SP_NOT_SUPPORTED;
	if ((r = spm_ok(&A->m, 1))) return r;
	if (!mem_ok(X->v, X->n * vsize(ct)) || !mem_ok(Y->v, Y->n * vsize(ct))) return SP_INVALID_VALUE;
	return SP_SUCCESS;
}

EXPORT int cusparseSpSV_bufferSize(struct fake_sparse *h, int op, const void *alpha, struct fake_spmat *A, struct fake_dnvec *X,
                                   struct fake_dnvec *Y, int ct, int alg, struct fake_spsv *d, size_t *size) {
	FAULT("cusparseSpSV_bufferSize");
	int r = spsv_check(h, op, alpha, A, X, Y, ct, alg, d);
	if (r) return r;
	if (!size) return SP_INVALID_VALUE;
	*size = spsv_need(&A->m);
	return SP_SUCCESS;
}

EXPORT int cusparseSpSV_analysis(struct fake_sparse *h, int op, const void *alpha, struct fake_spmat *A, struct fake_dnvec *X,
                                 struct fake_dnvec *Y, int ct, int alg, struct fake_spsv *d, void *buf) {
	FAULT("cusparseSpSV_analysis");
	int r = spsv_check(h, op, alpha, A, X, Y, ct, alg, d);
	if (r) return r;
	if (!buffer_ok(buf, spsv_need(&A->m))) return SP_INVALID_VALUE;
	d->analyzed = 1, d->n = A->m.rows;
	return SP_SUCCESS;
}

EXPORT int cusparseSpSV_solve(struct fake_sparse *h, int op, const void *alpha, struct fake_spmat *A, struct fake_dnvec *X,
                              struct fake_dnvec *Y, int ct, int alg, struct fake_spsv *d) {
	FAULT("cusparseSpSV_solve");
	int r = spsv_check(h, op, alpha, A, X, Y, ct, alg, d);
	if (r) return r;
	if (!d->analyzed || d->n != A->m.rows) return SP_INVALID_VALUE;
	struct spsv_job *o = malloc(sizeof *o);
	*o = (struct spsv_job){.job = {run_spsv, sizeof *o}, .a = A->m, .op = op, .alpha = scalar(ct, alpha), .x = X->v, .y = Y->v,
	                       .xt = X->vt, .yt = Y->vt};
	return enqueue_job(h->stream, &o->job) == SUCCESS ? SP_SUCCESS : SP_EXECUTION_FAILED;
}

struct spsm_job {
	struct lib_job job;
	struct spm a;
	struct dnm b, c;
	int opa, opb;
	cplx alpha;
};

static void run_spsm(struct lib_job *job) {
	struct spsm_job *o = (struct spsm_job *)job;
	struct tri t;
	tri_build(&t, &o->a, o->opa);
	int64_t n = t.n, k = o->c.cols;
	cplx *y = malloc((n ? n : 1) * sizeof *y);
	for (int64_t j = 0; j < k; j++) {
		for (int64_t i = 0; i < n; i++) {
			cplx b = o->opb ? vload(o->b.vt, o->b.v, dn_at(&o->b, j, i)) : vload(o->b.vt, o->b.v, dn_at(&o->b, i, j));
			y[i] = o->opb == 2 ? conj(b) : b;
		}
		tri_solve(&t, o->alpha, y);
		for (int64_t i = 0; i < n; i++) vstore(o->c.vt, o->c.v, dn_at(&o->c, i, j), y[i]);
	}
	free(y);
	tri_free(&t);
}

static size_t spsm_need(const struct spm *a, const struct dnm *c) { return 256 + (size_t)a->rows * 8 + (size_t)c->cols * 4; }

static int spsm_check(struct fake_sparse *h, int opa, int opb, const void *alpha, struct fake_spmat *A, struct fake_dnmat *B,
                      struct fake_dnmat *C, int ct, int alg, struct fake_spsv *d) {
	int r = usable(h);
	if (r) return r;
	if (!spmat_live(A) || !dnmat_live(B) || !dnmat_live(C) || !spsv_live(d) || !alpha || !op_ok(opa) || !op_ok(opb) || alg != 0)
		return SP_INVALID_VALUE;
	if (A->m.fmt != F_CSR && A->m.fmt != F_COO) return SP_NOT_SUPPORTED;
	int64_t bn = opb ? B->m.rows : B->m.cols, bm = opb ? B->m.cols : B->m.rows;
	if (A->m.rows != A->m.cols || bm != A->m.rows || C->m.rows != A->m.rows || C->m.cols != bn) return SP_INVALID_VALUE;
	if (A->m.vt != ct || B->m.vt != ct || C->m.vt != ct) return SP_NOT_SUPPORTED;
	if ((r = spm_ok(&A->m, 1)) || (r = dnm_ok(&B->m)) || (r = dnm_ok(&C->m))) return r;
	return SP_SUCCESS;
}

EXPORT int cusparseSpSM_bufferSize(struct fake_sparse *h, int opa, int opb, const void *alpha, struct fake_spmat *A, struct fake_dnmat *B,
                                   struct fake_dnmat *C, int ct, int alg, struct fake_spsv *d, size_t *size) {
	FAULT("cusparseSpSM_bufferSize");
	int r = spsm_check(h, opa, opb, alpha, A, B, C, ct, alg, d);
	if (r) return r;
	if (!size) return SP_INVALID_VALUE;
	*size = spsm_need(&A->m, &C->m);
	return SP_SUCCESS;
}

EXPORT int cusparseSpSM_analysis(struct fake_sparse *h, int opa, int opb, const void *alpha, struct fake_spmat *A, struct fake_dnmat *B,
                                 struct fake_dnmat *C, int ct, int alg, struct fake_spsv *d, void *buf) {
	FAULT("cusparseSpSM_analysis");
	int r = spsm_check(h, opa, opb, alpha, A, B, C, ct, alg, d);
	if (r) return r;
	if (!buffer_ok(buf, spsm_need(&A->m, &C->m))) return SP_INVALID_VALUE;
	d->analyzed = 1, d->n = A->m.rows;
	return SP_SUCCESS;
}

EXPORT int cusparseSpSM_solve(struct fake_sparse *h, int opa, int opb, const void *alpha, struct fake_spmat *A, struct fake_dnmat *B,
                              struct fake_dnmat *C, int ct, int alg, struct fake_spsv *d) {
	FAULT("cusparseSpSM_solve");
	int r = spsm_check(h, opa, opb, alpha, A, B, C, ct, alg, d);
	if (r) return r;
	if (!d->analyzed || d->n != A->m.rows) return SP_INVALID_VALUE;
	struct spsm_job *o = malloc(sizeof *o);
	*o = (struct spsm_job){.job = {run_spsm, sizeof *o}, .a = A->m, .b = B->m, .c = C->m, .opa = opa, .opb = opb,
	                       .alpha = scalar(ct, alpha)};
	return enqueue_job(h->stream, &o->job) == SUCCESS ? SP_SUCCESS : SP_EXECUTION_FAILED;
}

// ---- to and from dense ------------------------------------------------------

struct s2d_job {
	struct lib_job job;
	struct spm a;
	struct dnm b;
};
static void s2d_visit(void *p, int64_t r, int64_t c, cplx v) {
	struct dnm *b = p;
	int64_t at = dn_at(b, r, c);
	vstore(b->vt, b->v, at, vload(b->vt, b->v, at) + v);
}
static void run_s2d(struct lib_job *job) {
	struct s2d_job *o = (struct s2d_job *)job;
	for (int64_t i = 0; i < o->b.rows; i++)
		for (int64_t j = 0; j < o->b.cols; j++) vstore(o->b.vt, o->b.v, dn_at(&o->b, i, j), 0);
	each(&o->a, s2d_visit, &o->b);
}

static int s2d_check(struct fake_sparse *h, struct fake_spmat *A, struct fake_dnmat *B, int alg) {
	int r = usable(h);
	if (r) return r;
	if (!spmat_live(A) || !dnmat_live(B) || alg != 0) return SP_INVALID_VALUE;
	if (A->m.rows != B->m.rows || A->m.cols != B->m.cols) return SP_INVALID_VALUE;
	if (A->m.vt != B->m.vt) return SP_NOT_SUPPORTED;
	if ((r = spm_ok(&A->m, 1)) || (r = dnm_ok(&B->m))) return r;
	return SP_SUCCESS;
}

static size_t s2d_need(const struct spm *a) { return 32 + (size_t)a->cols % 5 * 8; }

EXPORT int cusparseSparseToDense_bufferSize(struct fake_sparse *h, struct fake_spmat *A, struct fake_dnmat *B, int alg, size_t *size) {
	FAULT("cusparseSparseToDense_bufferSize");
	int r = s2d_check(h, A, B, alg);
	if (r) return r;
	if (!size) return SP_INVALID_VALUE;
	*size = s2d_need(&A->m);
	return SP_SUCCESS;
}

EXPORT int cusparseSparseToDense(struct fake_sparse *h, struct fake_spmat *A, struct fake_dnmat *B, int alg, void *buf) {
	FAULT("cusparseSparseToDense");
	int r = s2d_check(h, A, B, alg);
	if (r) return r;
	if (!buffer_ok(buf, s2d_need(&A->m))) return SP_INVALID_VALUE;
	struct s2d_job *o = malloc(sizeof *o);
	*o = (struct s2d_job){.job = {run_s2d, sizeof *o}, .a = A->m, .b = B->m};
	return enqueue_job(h->stream, &o->job) == SUCCESS ? SP_SUCCESS : SP_EXECUTION_FAILED;
}

// DenseToSparse: to CSR, CSC or COO. The analysis waits for the stream
// and counts the non-zeros into B's descriptor (and, for CSR and CSC,
// queues nothing: the conversion writes every array).
static int d2s_check(struct fake_sparse *h, struct fake_dnmat *A, struct fake_spmat *B, int alg) {
	int r = usable(h);
	if (r) return r;
	if (!dnmat_live(A) || !spmat_live(B) || alg != 0) return SP_INVALID_VALUE;
	if (A->m.rows != B->m.rows || A->m.cols != B->m.cols) return SP_INVALID_VALUE;
	if (B->m.fmt == F_ELL || B->m.fmt == F_BSR || !isize(B->m.ta) || !isize(B->m.tb)) return SP_NOT_SUPPORTED;
	if (A->m.vt != B->m.vt) return SP_NOT_SUPPORTED;
	return dnm_ok(&A->m);
}

static size_t d2s_need(const struct dnm *a) { return 64 + (size_t)a->rows * 4; }

EXPORT int cusparseDenseToSparse_bufferSize(struct fake_sparse *h, struct fake_dnmat *A, struct fake_spmat *B, int alg, size_t *size) {
	FAULT("cusparseDenseToSparse_bufferSize");
	int r = d2s_check(h, A, B, alg);
	if (r) return r;
	if (!size) return SP_INVALID_VALUE;
	*size = d2s_need(&A->m);
	return SP_SUCCESS;
}

EXPORT int cusparseDenseToSparse_analysis(struct fake_sparse *h, struct fake_dnmat *A, struct fake_spmat *B, int alg, void *buf) {
	FAULT("cusparseDenseToSparse_analysis");
	int r = d2s_check(h, A, B, alg);
	if (r) return r;
	if (!buffer_ok(buf, d2s_need(&A->m))) return SP_INVALID_VALUE;
	if ((r = wait_stream(h))) return r;
	int64_t nnz = 0;
	for (int64_t i = 0; i < A->m.rows; i++)
		for (int64_t j = 0; j < A->m.cols; j++) nnz += vload(A->m.vt, A->m.v, dn_at(&A->m, i, j)) != 0;
	B->m.nnz = nnz;
	return SP_SUCCESS;
}

struct d2s_job {
	struct lib_job job;
	struct dnm a;
	struct spm b;
};
// run_d2s writes B row after row (column after column for CSC), but not
// in the order of the inner index, as the real cuSPARSE does not (to CSR,
// cuSPARSE 12 on an H100 gave the non-zeros of rows of a few dozen and
// more in an order of its own, from a row-major and a column-major matrix
// alike, and NVIDIA calls that expected: cuSPARSE takes unsorted CSR as
// valid CSR): each slice's second half first, then its first half, so that a
// caller that takes the output as sorted is caught here too.
static void run_d2s(struct lib_job *job) {
	struct d2s_job *o = (struct d2s_job *)job;
	const struct dnm *a = &o->a;
	struct spm *b = &o->b;
	int64_t k = 0, base = b->base;
	int by_col = b->fmt == F_CSC;
	int64_t outer = by_col ? a->cols : a->rows, inner = by_col ? a->rows : a->cols;
	int64_t *at = malloc((size_t)(inner > 0 ? inner : 1) * sizeof *at);
	if (!at) return;
	if (b->fmt != F_COO) istore(b->ta, b->a, 0, base);
	for (int64_t o1 = 0; o1 < outer; o1++) {
		int64_t n = 0;
		for (int64_t i1 = 0; i1 < inner; i1++) {
			int64_t r = by_col ? i1 : o1, c = by_col ? o1 : i1;
			if (vload(a->vt, a->v, dn_at(a, r, c)) != 0) at[n++] = i1;
		}
		for (int64_t q = 0; q < n; q++) {
			int64_t i1 = at[(q + n / 2) % n];
			int64_t r = by_col ? i1 : o1, c = by_col ? o1 : i1;
			if (k >= b->nnz) goto out; // the matrix changed since the analysis
			if (b->fmt == F_COO) istore(b->ta, b->a, k, r + base), istore(b->tb, b->b, k, c + base);
			else istore(b->tb, b->b, k, i1 + base);
			vstore(b->vt, b->v, k, vload(a->vt, a->v, dn_at(a, r, c)));
			k++;
		}
		if (b->fmt != F_COO) istore(b->ta, b->a, o1 + 1, k + base);
	}
out:
	free(at);
}

EXPORT int cusparseDenseToSparse_convert(struct fake_sparse *h, struct fake_dnmat *A, struct fake_spmat *B, int alg, void *buf) {
	FAULT("cusparseDenseToSparse_convert");
	int r = d2s_check(h, A, B, alg);
	if (r) return r;
	if (!buffer_ok(buf, d2s_need(&A->m))) return SP_INVALID_VALUE;
	if ((r = spm_ok(&B->m, 1))) return r;
	struct d2s_job *o = malloc(sizeof *o);
	*o = (struct d2s_job){.job = {run_d2s, sizeof *o}, .a = A->m, .b = B->m};
	return enqueue_job(h->stream, &o->job) == SUCCESS ? SP_SUCCESS : SP_EXECUTION_FAILED;
}

// ---- the legacy conversions (32-bit indices) ----------------------------------

struct conv_job {
	struct lib_job job;
	int kind; // 0 coo2csr, 1 csr2coo, 2 csr2csc
	int m, n, nnz, base, vt, values;
	const int32_t *in_a, *in_b;
	const void *in_v;
	int32_t *out_a, *out_b;
	void *out_v;
};

static void run_conv(struct lib_job *job) {
	struct conv_job *o = (struct conv_job *)job;
	int base = o->base;
	switch (o->kind) {
	case 0: // sorted COO rows to CSR offsets
		for (int i = 0; i <= o->m; i++) o->out_a[i] = 0;
		for (int k = 0; k < o->nnz; k++) {
			int r = o->in_a[k] - base;
			if (r >= 0 && r < o->m) o->out_a[r + 1]++;
		}
		for (int i = 0; i < o->m; i++) o->out_a[i + 1] += o->out_a[i];
		for (int i = 0; i <= o->m; i++) o->out_a[i] += base;
		break;
	case 1: // CSR offsets to COO rows
		for (int i = 0; i < o->m; i++)
			for (int k = o->in_a[i] - base; k < o->in_a[i + 1] - base && k < o->nnz; k++)
				if (k >= 0) o->out_a[k] = i + base;
		break;
	case 2: { // CSR to CSC: a stable counting sort by column
		int32_t *next = calloc(o->n + 1, sizeof *next);
		for (int k = 0; k < o->nnz; k++) {
			int c = o->in_b[k] - base;
			if (c >= 0 && c < o->n) next[c + 1]++;
		}
		for (int c = 0; c < o->n; c++) next[c + 1] += next[c];
		for (int c = 0; c <= o->n; c++) o->out_a[c] = next[c] + base;
		for (int i = 0; i < o->m; i++)
			for (int k = o->in_a[i] - base; k < o->in_a[i + 1] - base && k < o->nnz; k++) {
				if (k < 0) continue;
				int c = o->in_b[k] - base;
				if (c < 0 || c >= o->n) continue;
				int at = next[c]++;
				o->out_b[at] = i + base;
				if (o->values) vstore(o->vt, o->out_v, at, vload(o->vt, o->in_v, k));
			}
		free(next);
		break;
	}
	}
}

EXPORT int cusparseXcoo2csr(struct fake_sparse *h, const int32_t *rows, int nnz, int m, int32_t *off, int base) {
	FAULT("cusparseXcoo2csr");
	int r = usable(h);
	if (r) return r;
	if (nnz < 0 || m < 0 || (base != 0 && base != 1)) return SP_INVALID_VALUE;
	if (!mem_ok(rows, (size_t)nnz * 4) || !mem_ok(off, (size_t)(m + 1) * 4)) return SP_INVALID_VALUE;
	struct conv_job *o = malloc(sizeof *o);
	*o = (struct conv_job){.job = {run_conv, sizeof *o}, .kind = 0, .m = m, .nnz = nnz, .base = base, .in_a = rows, .out_a = off};
	return enqueue_job(h->stream, &o->job) == SUCCESS ? SP_SUCCESS : SP_EXECUTION_FAILED;
}

EXPORT int cusparseXcsr2coo(struct fake_sparse *h, const int32_t *off, int nnz, int m, int32_t *rows, int base) {
	FAULT("cusparseXcsr2coo");
	int r = usable(h);
	if (r) return r;
	if (nnz < 0 || m < 0 || (base != 0 && base != 1)) return SP_INVALID_VALUE;
	if (!mem_ok(off, (size_t)(m + 1) * 4) || !mem_ok(rows, (size_t)nnz * 4)) return SP_INVALID_VALUE;
	struct conv_job *o = malloc(sizeof *o);
	*o = (struct conv_job){.job = {run_conv, sizeof *o}, .kind = 1, .m = m, .nnz = nnz, .base = base, .in_a = off, .out_a = rows};
	return enqueue_job(h->stream, &o->job) == SUCCESS ? SP_SUCCESS : SP_EXECUTION_FAILED;
}

static size_t csr2csc_need(int n) { return 64 + (size_t)n * 4; }

static int csr2csc_check(struct fake_sparse *h, int m, int n, int nnz, const void *val, const int32_t *off, const int32_t *ind,
                         void *cval, int32_t *coff, int32_t *cind, int vt, int action, int base, int alg) {
	int r = usable(h);
	if (r) return r;
	if (m < 0 || n < 0 || nnz < 0 || (base != 0 && base != 1) || (action != 0 && action != 1) || (alg != 1 && alg != 0))
		return SP_INVALID_VALUE;
	if (!vsize(vt)) return vtype_known(vt) ? SP_NOT_SUPPORTED : SP_INVALID_VALUE;
	if (!mem_ok(off, (size_t)(m + 1) * 4) || !mem_ok(ind, (size_t)nnz * 4) || !mem_ok(coff, (size_t)(n + 1) * 4) ||
	    !mem_ok(cind, (size_t)nnz * 4))
		return SP_INVALID_VALUE;
	if (action == 1 && (!mem_ok(val, nnz * vsize(vt)) || !mem_ok(cval, nnz * vsize(vt)))) return SP_INVALID_VALUE;
	return SP_SUCCESS;
}

EXPORT int cusparseCsr2cscEx2_bufferSize(struct fake_sparse *h, int m, int n, int nnz, const void *val, const int32_t *off,
                                         const int32_t *ind, void *cval, int32_t *coff, int32_t *cind, int vt, int action, int base,
                                         int alg, size_t *size) {
	FAULT("cusparseCsr2cscEx2_bufferSize");
	int r = csr2csc_check(h, m, n, nnz, val, off, ind, cval, coff, cind, vt, action, base, alg);
	if (r) return r;
	if (!size) return SP_INVALID_VALUE;
	*size = csr2csc_need(n);
	return SP_SUCCESS;
}

EXPORT int cusparseCsr2cscEx2(struct fake_sparse *h, int m, int n, int nnz, const void *val, const int32_t *off, const int32_t *ind,
                              void *cval, int32_t *coff, int32_t *cind, int vt, int action, int base, int alg, void *buf) {
	FAULT("cusparseCsr2cscEx2");
	int r = csr2csc_check(h, m, n, nnz, val, off, ind, cval, coff, cind, vt, action, base, alg);
	if (r) return r;
	if (!buffer_ok(buf, csr2csc_need(n))) return SP_INVALID_VALUE;
	struct conv_job *o = malloc(sizeof *o);
	*o = (struct conv_job){.job = {run_conv, sizeof *o}, .kind = 2, .m = m, .n = n, .nnz = nnz, .base = base, .vt = vt,
	                       .values = action == 1, .in_a = off, .in_b = ind, .in_v = val, .out_a = coff, .out_b = cind, .out_v = cval};
	return enqueue_job(h->stream, &o->job) == SUCCESS ? SP_SUCCESS : SP_EXECUTION_FAILED;
}
