// The fake cuDNN (see driver.c): the legacy calls of cuDNN 9 that package
// cudnn makes, checked as the library checks them (a descriptor not made
// by its Create, or not yet set, a shape that does not agree, a work area
// smaller than the size reported: CUDNN_STATUS_BAD_PARAM; a type or an
// algorithm it has no kernel for: CUDNN_STATUS_NOT_SUPPORTED) and computed
// on the CPU by the stream's worker, later, in the stream's order: direct
// convolutions (forward, backward data, backward filter, with bias and
// activation), pooling and batch normalization, in double precision over
// float, double, half and bfloat16 tensors in NCHW and NHWC. The fake
// offers two algorithms of each convolution: 0, which needs no work area,
// and 1, which needs one (IMPLICIT_PRECOMP_GEMM forward, the only one the
// fused identity activation takes). The backend (graph) API's calls are
// at the end.

#include <math.h>

#include "fakecuda.h"

enum {
	DNN_SUCCESS = 0,
	DNN_NOT_INITIALIZED = 1001,
	DNN_BAD_PARAM = 2000,
	DNN_BAD_PARAM_NULL_POINTER = 2002,
	DNN_BAD_PARAM_SHAPE_MISMATCH = 2008,
	DNN_NOT_SUPPORTED = 3000,
	DNN_NOT_SUPPORTED_DATA_TYPE = 3003,
	DNN_INTERNAL_ERROR = 4000,
	DNN_EXECUTION_FAILED = 5000,
	DNN_EXECUTION_FAILED_CUDART = 5003,
};

long live_dnn;

static void dnn_counted(long d) {
	pthread_mutex_lock(&mu);
	live_dnn += d;
	pthread_mutex_unlock(&mu);
}

EXPORT const char *cudnnGetErrorString(int s) {
	switch (s) {
	case 0: return "CUDNN_STATUS_SUCCESS";
	case 1001: return "CUDNN_STATUS_NOT_INITIALIZED";
	case 2000: return "CUDNN_STATUS_BAD_PARAM";
	case 2002: return "CUDNN_STATUS_BAD_PARAM_NULL_POINTER";
	case 2003: return "CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER";
	case 2004: return "CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED";
	case 2008: return "CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH";
	case 2010: return "CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE";
	case 3001: return "CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN";
	case 3004: return "CUDNN_STATUS_NOT_SUPPORTED_LAYOUT";
	case 3000: return "CUDNN_STATUS_NOT_SUPPORTED";
	case 3003: return "CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE";
	case 4000: return "CUDNN_STATUS_INTERNAL_ERROR";
	case 4003: return "CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED";
	case 5000: return "CUDNN_STATUS_EXECUTION_FAILED";
	}
	return "CUDNN_STATUS_UNKNOWN";
}

// cudnnGetProperty answers as cuDNN 9.1.0.
EXPORT int cudnnGetProperty(int type, int *v) {
	FAULT("cudnnGetProperty");
	if (!v) return DNN_BAD_PARAM_NULL_POINTER;
	if (type < 0 || type > 2) return DNN_BAD_PARAM;
	*v = type == 0 ? 9 : type == 1 ? 1 : 0;
	return DNN_SUCCESS;
}

// ---- elements ---------------------------------------------------------------

enum { D_FLOAT = 0, D_DOUBLE = 1, D_HALF = 2, D_BF16 = 9 };

static size_t dsize(int t) {
	switch (t) {
	case D_FLOAT: return 4;
	case D_DOUBLE: return 8;
	case D_HALF: case D_BF16: return 2;
	}
	return 0;
}

static float f_of_bits(uint32_t b) { float f; memcpy(&f, &b, 4); return f; }
static uint32_t bits_of_f(float f) { uint32_t b; memcpy(&b, &f, 4); return b; }

// rne shifts m right by shift bits, rounding to nearest even.
static uint32_t rne(uint32_t m, unsigned shift) {
	uint32_t r = m >> shift, rem = m & ((1u << shift) - 1), mid = 1u << (shift - 1);
	if (rem > mid || (rem == mid && (r & 1))) r++;
	return r;
}

static float from_half(uint16_t h) {
	uint32_t sign = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff;
	if (e == 0) {
		if (!m) return f_of_bits(sign);
		uint32_t x = 113;
		while (!(m & 0x400)) { m <<= 1; x--; }
		return f_of_bits(sign | x << 23 | (m & 0x3ff) << 13);
	}
	if (e == 0x1f) return f_of_bits(sign | 0x7f800000 | m << 13);
	return f_of_bits(sign | (e + 112) << 23 | m << 13);
}

static uint16_t to_half(float f) {
	uint32_t b = bits_of_f(f), m = b & 0x7fffff;
	uint16_t sign = (b >> 16) & 0x8000;
	int e8 = (b >> 23) & 0xff;
	if (e8 == 0xff) return sign | (m ? 0x7e00 | (m >> 13) : 0x7c00);
	int e = e8 - 127 + 15;
	if (e >= 0x1f) return sign | 0x7c00;
	if (e <= 0) {
		if (e < -10) return sign;
		return sign | (uint16_t)rne(m | 0x800000, (unsigned)(14 - e));
	}
	return sign | (uint16_t)rne((uint32_t)e << 23 | m, 13);
}

static double ld(int t, const void *p, size_t i) {
	switch (t) {
	case D_FLOAT: return ((const float *)p)[i];
	case D_DOUBLE: return ((const double *)p)[i];
	case D_HALF: return from_half(((const uint16_t *)p)[i]);
	}
	return f_of_bits((uint32_t)((const uint16_t *)p)[i] << 16);
}

static void st(int t, void *p, size_t i, double v) {
	switch (t) {
	case D_FLOAT: ((float *)p)[i] = (float)v; return;
	case D_DOUBLE: ((double *)p)[i] = v; return;
	case D_HALF: ((uint16_t *)p)[i] = to_half((float)v); return;
	}
	uint32_t b = bits_of_f((float)v);
	((uint16_t *)p)[i] = (b & 0x7fffffff) > 0x7f800000 ? (uint16_t)(b >> 16 | 0x40) : (uint16_t)rne(b, 16);
}

// scal reads alpha or beta: a double for double tensors, else a float.
static double scal(int t, const void *p) { return t == D_DOUBLE ? *(const double *)p : *(const float *)p; }

static int dmem_ok(const void *p, size_t n) { return n == 0 || (p && range_ok((CUdeviceptr)(uintptr_t)p, n)); }

// ---- handles ----------------------------------------------------------------

struct fake_dnn {
	int magic;
	CUcontext ctx;
	CUstream stream;
};
#define DNN_MAGIC 0xd22a1e

static int dnn_live(struct fake_dnn *h) { return h && h->magic == DNN_MAGIC; }

// dnn_usable returns the status for a call on h: its context must be
// current and its stream live.
static int dnn_usable(struct fake_dnn *h) {
	if (!dnn_live(h)) return DNN_BAD_PARAM;
	pthread_mutex_lock(&mu);
	int ok = current == h->ctx && ctx_live(current) && (!h->stream || stream_live(h->stream));
	pthread_mutex_unlock(&mu);
	return ok ? DNN_SUCCESS : DNN_EXECUTION_FAILED;
}

EXPORT int cudnnCreate(struct fake_dnn **out) {
	FAULT("cudnnCreate");
	if (!out) return DNN_BAD_PARAM_NULL_POINTER;
	pthread_mutex_lock(&mu);
	int ok = initialized && ctx_live(current);
	pthread_mutex_unlock(&mu);
	if (!ok) return DNN_NOT_INITIALIZED;
	struct fake_dnn *h = calloc(1, sizeof *h);
	h->magic = DNN_MAGIC;
	h->ctx = current;
	dnn_counted(1);
	*out = h;
	return DNN_SUCCESS;
}

EXPORT int cudnnDestroy(struct fake_dnn *h) {
	FAULT("cudnnDestroy");
	if (!dnn_live(h)) return DNN_BAD_PARAM;
	drain_context(h->ctx); // as cuDNN, which synchronizes the device
	h->magic = 0;
	free(h);
	dnn_counted(-1);
	return DNN_SUCCESS;
}

EXPORT int cudnnSetStream(struct fake_dnn *h, CUstream s) {
	FAULT("cudnnSetStream");
	if (!dnn_live(h)) return DNN_BAD_PARAM;
	pthread_mutex_lock(&mu);
	int ok = !s || (stream_live(s) && s->ctx == h->ctx);
	pthread_mutex_unlock(&mu);
	if (!ok) return DNN_BAD_PARAM;
	h->stream = s;
	return DNN_SUCCESS;
}

// ---- descriptors -------------------------------------------------------------

// A tensor or a filter: its dimensions, its format (NCHW 0, NHWC 1) and
// type; set once a Set call succeeded.
struct dims {
	int n, c, h, w;
	int fmt, dt;
};
struct fake_tensor {
	int magic, set;
	struct dims d;
};
#define TENSOR_MAGIC 0xd2e501
#define FILTER_MAGIC 0xd2f117

static size_t elems(struct dims d) { return (size_t)d.n * d.c * d.h * d.w; }
static size_t bytes(struct dims d) { return elems(d) * dsize(d.dt); }

// at is the element (n, c, h, w) of d's layout.
static size_t at(const struct dims *d, int n, int c, int h, int w) {
	if (d->fmt == 1) return (((size_t)n * d->h + h) * d->w + w) * d->c + c;
	return (((size_t)n * d->c + c) * d->h + h) * d->w + w;
}

// Every descriptor's first field is its magic, the type it was made as.

// desc_new makes a zeroed descriptor of size bytes, of type magic.
static void *desc_new(size_t size, int magic) {
	int *d = calloc(1, size);
	*d = magic;
	dnn_counted(1);
	return d;
}

// NEW_DESC makes *out a new descriptor of type magic, out's pointee type.
#define NEW_DESC(out, magic) (!(out) ? DNN_BAD_PARAM_NULL_POINTER : (*(out) = desc_new(sizeof **(out), magic), DNN_SUCCESS))

// desc_free frees d, a descriptor of type magic.
static int desc_free(void *d, int magic) {
	if (!d) return DNN_SUCCESS; // as cuDNN: destroying NULL is a no-op
	int *m = d;
	if (*m != magic) return DNN_BAD_PARAM;
	*m = 0;
	free(d);
	dnn_counted(-1);
	return DNN_SUCCESS;
}

// is_a says whether d is a live descriptor of type magic (set or not).
static int is_a(const void *d, int magic) { return d && *(const int *)d == magic; }

static int same_dims(const struct dims *a, const struct dims *b) { return a->n == b->n && a->c == b->c && a->h == b->h && a->w == b->w; }

// per_channel says whether b is 1xCx1x1, one value per channel of c
// channels (a bias, batch normalization's parameters).
static int per_channel(const struct dims *b, int c) { return b->n == 1 && b->c == c && b->h == 1 && b->w == 1; }

// broadcasts says whether each dimension of a is c's or 1.
static int broadcasts(const struct dims *a, const struct dims *c) {
	return (a->n == 1 || a->n == c->n) && (a->c == 1 || a->c == c->c) && (a->h == 1 || a->h == c->h) && (a->w == 1 || a->w == c->w);
}

static int tensor_ok(struct fake_tensor *t) { return is_a(t, TENSOR_MAGIC) && t->set; }
static int filter_ok(struct fake_tensor *t) { return is_a(t, FILTER_MAGIC) && t->set; }

static int set_dims(struct fake_tensor *t, int magic, int fmt, int dt, int n, int c, int h, int w) {
	if (!is_a(t, magic)) return DNN_BAD_PARAM;
	if (fmt == 2) return DNN_NOT_SUPPORTED; // NCHW_VECT_C: no int8 here
	if (fmt < 0 || fmt > 2 || n <= 0 || c <= 0 || h <= 0 || w <= 0) return DNN_BAD_PARAM;
	if (!dsize(dt)) return dt >= 0 && dt <= 21 ? DNN_NOT_SUPPORTED_DATA_TYPE : DNN_BAD_PARAM;
	if ((int64_t)n * c * h * w > INT32_MAX) return DNN_BAD_PARAM;
	t->d = (struct dims){n, c, h, w, fmt, dt};
	t->set = 1;
	return DNN_SUCCESS;
}

EXPORT int cudnnCreateTensorDescriptor(struct fake_tensor **out) {
	FAULT("cudnnCreateTensorDescriptor");
	return NEW_DESC(out, TENSOR_MAGIC);
}
EXPORT int cudnnDestroyTensorDescriptor(struct fake_tensor *t) {
	FAULT("cudnnDestroyTensorDescriptor");
	return desc_free(t, TENSOR_MAGIC);
}
EXPORT int cudnnSetTensor4dDescriptor(struct fake_tensor *t, int fmt, int dt, int n, int c, int h, int w) {
	FAULT("cudnnSetTensor4dDescriptor");
	return set_dims(t, TENSOR_MAGIC, fmt, dt, n, c, h, w);
}
EXPORT int cudnnCreateFilterDescriptor(struct fake_tensor **out) {
	FAULT("cudnnCreateFilterDescriptor");
	return NEW_DESC(out, FILTER_MAGIC);
}
EXPORT int cudnnDestroyFilterDescriptor(struct fake_tensor *t) {
	FAULT("cudnnDestroyFilterDescriptor");
	return desc_free(t, FILTER_MAGIC);
}
EXPORT int cudnnSetFilter4dDescriptor(struct fake_tensor *t, int dt, int fmt, int k, int c, int h, int w) {
	FAULT("cudnnSetFilter4dDescriptor");
	return set_dims(t, FILTER_MAGIC, fmt, dt, k, c, h, w);
}

struct fake_conv {
	int magic, set;
	int ph, pw, u, v, dh, dw, mode, ct, groups, math;
};
#define CONV_MAGIC 0xd2c0a7
static int conv_ok(struct fake_conv *c) { return is_a(c, CONV_MAGIC) && c->set; }

EXPORT int cudnnCreateConvolutionDescriptor(struct fake_conv **out) {
	FAULT("cudnnCreateConvolutionDescriptor");
	int r = NEW_DESC(out, CONV_MAGIC);
	if (!r) (*out)->groups = 1;
	return r;
}
EXPORT int cudnnDestroyConvolutionDescriptor(struct fake_conv *c) {
	FAULT("cudnnDestroyConvolutionDescriptor");
	return desc_free(c, CONV_MAGIC);
}
EXPORT int cudnnSetConvolution2dDescriptor(struct fake_conv *c, int ph, int pw, int u, int v, int dh, int dw, int mode, int ct) {
	FAULT("cudnnSetConvolution2dDescriptor");
	if (!is_a(c, CONV_MAGIC)) return DNN_BAD_PARAM;
	if (ph < 0 || pw < 0 || u <= 0 || v <= 0 || dh <= 0 || dw <= 0 || (mode != 0 && mode != 1)) return DNN_BAD_PARAM;
	if (!dsize(ct)) return DNN_BAD_PARAM;
	c->ph = ph, c->pw = pw, c->u = u, c->v = v, c->dh = dh, c->dw = dw, c->mode = mode, c->ct = ct;
	c->set = 1;
	return DNN_SUCCESS;
}
EXPORT int cudnnSetConvolutionGroupCount(struct fake_conv *c, int g) {
	FAULT("cudnnSetConvolutionGroupCount");
	if (!is_a(c, CONV_MAGIC) || g < 1) return DNN_BAD_PARAM;
	c->groups = g;
	return DNN_SUCCESS;
}
EXPORT int cudnnSetConvolutionMathType(struct fake_conv *c, int m) {
	FAULT("cudnnSetConvolutionMathType");
	if (!is_a(c, CONV_MAGIC) || m < 0 || m > 3) return DNN_BAD_PARAM;
	c->math = m;
	return DNN_SUCCESS;
}

// conv_out returns the output dimensions of x convolved with w under c,
// or a status: the channels must agree with the groups, the output must
// not be empty.
static int conv_out(struct fake_conv *c, const struct dims *x, const struct dims *w, struct dims *y) {
	if (x->c != w->c * c->groups || w->n % c->groups) return DNN_BAD_PARAM;
	int eh = c->dh * (w->h - 1) + 1, ew = c->dw * (w->w - 1) + 1;
	int oh = (x->h + 2 * c->ph - eh) / c->u + 1, ow = (x->w + 2 * c->pw - ew) / c->v + 1;
	if (x->h + 2 * c->ph < eh || x->w + 2 * c->pw < ew || oh <= 0 || ow <= 0) return DNN_BAD_PARAM;
	*y = (struct dims){x->n, w->n, oh, ow, x->fmt, x->dt};
	return DNN_SUCCESS;
}

EXPORT int cudnnGetConvolution2dForwardOutputDim(struct fake_conv *c, struct fake_tensor *x, struct fake_tensor *w, int *n, int *ch, int *h,
                                                 int *wd) {
	FAULT("cudnnGetConvolution2dForwardOutputDim");
	if (!conv_ok(c) || !tensor_ok(x) || !filter_ok(w)) return DNN_BAD_PARAM;
	if (!n || !ch || !h || !wd) return DNN_BAD_PARAM_NULL_POINTER;
	struct dims y;
	int r = conv_out(c, &x->d, &w->d, &y);
	if (r) return r;
	*n = y.n, *ch = y.c, *h = y.h, *wd = y.w;
	return DNN_SUCCESS;
}

// conv_check checks a convolution's descriptors: x (the input), w, y (the
// output) set, of one type, y of the output's dimensions, the compute type
// float for the halves (cuDNN's pseudo-half configurations: their true-half
// ones are refused here) and the tensors' type otherwise.
static int conv_check(struct fake_dnn *h, struct fake_tensor *x, struct fake_tensor *w, struct fake_conv *c, struct fake_tensor *y) {
	int r = dnn_usable(h);
	if (r) return r;
	if (!tensor_ok(x) || !filter_ok(w) || !conv_ok(c) || !tensor_ok(y)) return DNN_BAD_PARAM;
	if (x->d.dt != w->d.dt || x->d.dt != y->d.dt) return DNN_BAD_PARAM;
	int want = x->d.dt == D_DOUBLE ? D_DOUBLE : D_FLOAT;
	if (c->ct != want) return DNN_NOT_SUPPORTED;
	struct dims o;
	if ((r = conv_out(c, &x->d, &w->d, &o))) return r;
	if (!same_dims(&o, &y->d)) return DNN_BAD_PARAM;
	return DNN_SUCCESS;
}

// conv_need is the work area algorithm algo of a convolution needs: none
// for 0, a size that varies with the filter for 1; -1 for an algorithm the
// fake has not.
static long conv_need(int algo, const struct dims *w) {
	if (algo == 0) return 0;
	if (algo == 1) return 4096 + (long)elems(*w) % 13 * 256;
	return -1;
}

// work_size answers a convolution's work area query for algo, one of
// max + 1 that cuDNN names for it.
static int work_size(int algo, int max, const struct dims *w, size_t *size) {
	if (!size) return DNN_BAD_PARAM_NULL_POINTER;
	if (algo < 0 || algo > max) return DNN_BAD_PARAM;
	long need = conv_need(algo, w);
	if (need < 0) return DNN_NOT_SUPPORTED;
	*size = (size_t)need;
	return DNN_SUCCESS;
}

// perf is cudnnConvolution*AlgoPerf_t.
struct perf {
	int algo, status;
	float time;
	size_t memory;
	int determinism, math;
	int reserved[3];
};

static int algos(int requested, int *returned, struct perf *out, const struct dims *w, int math, int timed) {
	if (requested < 1) return DNN_BAD_PARAM;
	if (!returned || !out) return DNN_BAD_PARAM_NULL_POINTER;
	int n = 0;
	// The fake's order: the one with a work area first, as cuDNN's
	// heuristics most often rank one (a caller that skips the first
	// result is caught), unless timed.
	int order[2] = {1, 0};
	if (timed) order[0] = 0, order[1] = 1;
	for (int i = 0; i < 2 && n < requested; i++) {
		out[n] = (struct perf){.algo = order[i], .status = 0, .time = timed ? 0.01f * (float)(i + 1) : -1,
		                       .memory = (size_t)conv_need(order[i], w), .determinism = 1, .math = math};
		n++;
	}
	*returned = n;
	return DNN_SUCCESS;
}

// wait_dnn waits for h's stream, as cuDNN's Find calls do; refused while
// the stream captures.
static int wait_dnn(struct fake_dnn *h) {
	if (h->stream) {
		pthread_mutex_lock(&mu);
		int capturing = h->stream->capture != NULL;
		pthread_mutex_unlock(&mu);
		if (capturing) return DNN_NOT_SUPPORTED;
		drain_stream(h->stream);
	} else drain_context(h->ctx);
	return DNN_SUCCESS;
}

// conv_algos answers a convolution's algorithm query: cuDNN's heuristics
// (Get) or, once h's stream's work is done, its timings (Find).
static int conv_algos(struct fake_dnn *h, struct fake_tensor *x, struct fake_tensor *w, struct fake_conv *c, struct fake_tensor *y,
                      int requested, int *returned, struct perf *out, int find) {
	int r = conv_check(h, x, w, c, y);
	if (!r && find) r = wait_dnn(h);
	return r ? r : algos(requested, returned, out, &w->d, c->math, find);
}

EXPORT int cudnnGetConvolutionForwardAlgorithm_v7(struct fake_dnn *h, struct fake_tensor *x, struct fake_tensor *w, struct fake_conv *c,
                                                  struct fake_tensor *y, int requested, int *returned, struct perf *out) {
	FAULT("cudnnGetConvolutionForwardAlgorithm_v7");
	return conv_algos(h, x, w, c, y, requested, returned, out, 0);
}
EXPORT int cudnnFindConvolutionForwardAlgorithm(struct fake_dnn *h, struct fake_tensor *x, struct fake_tensor *w, struct fake_conv *c,
                                                struct fake_tensor *y, int requested, int *returned, struct perf *out) {
	FAULT("cudnnFindConvolutionForwardAlgorithm");
	return conv_algos(h, x, w, c, y, requested, returned, out, 1);
}
EXPORT int cudnnGetConvolutionForwardWorkspaceSize(struct fake_dnn *h, struct fake_tensor *x, struct fake_tensor *w, struct fake_conv *c,
                                                   struct fake_tensor *y, int algo, size_t *size) {
	FAULT("cudnnGetConvolutionForwardWorkspaceSize");
	int r = conv_check(h, x, w, c, y);
	return r ? r : work_size(algo, 7, &w->d, size);
}

// ---- the convolutions' work --------------------------------------------------

enum { J_FWD, J_BWD_DATA, J_BWD_FILTER };

struct conv_job {
	struct lib_job job;
	int kind;
	struct dims x, w, y;       // the forward convolution's input, filter, output
	struct fake_conv c;        // copied whole
	const void *src0, *src1;   // forward: x, w; backward data: w, dy; backward filter: x, dy
	void *dst;                 // y, dx or dw
	double alpha, beta;
	// the fused forward: z (alpha2) and the bias, then the activation
	const void *z, *bias;
	int fused, act;
	double alpha2;
	int bias_dt;
};

// each visits every product term of the forward convolution: output
// (n, k, oh, ow) gathers input (n, ci, ih, iw) times filter (k, cf, r, s).
#define EACH_TERM(o, BODY)                                                                                             \
	do {                                                                                                           \
		int kpg_ = (o)->w.n / (o)->c.groups, cpg_ = (o)->w.c;                                                  \
		for (int n = 0; n < (o)->y.n; n++)                                                                     \
			for (int k = 0; k < (o)->y.c; k++) {                                                           \
				int g_ = k / kpg_;                                                                     \
				for (int oh = 0; oh < (o)->y.h; oh++)                                                  \
					for (int ow = 0; ow < (o)->y.w; ow++)                                          \
						for (int cf = 0; cf < cpg_; cf++)                                      \
							for (int r = 0; r < (o)->w.h; r++)                             \
								for (int s = 0; s < (o)->w.w; s++) {                   \
									int rr = (o)->c.mode == 0 ? (o)->w.h - 1 - r : r; \
									int ss = (o)->c.mode == 0 ? (o)->w.w - 1 - s : s; \
									int ih = oh * (o)->c.u - (o)->c.ph + rr * (o)->c.dh; \
									int iw = ow * (o)->c.v - (o)->c.pw + ss * (o)->c.dw; \
									if (ih < 0 || ih >= (o)->x.h || iw < 0 || iw >= (o)->x.w) continue; \
									int ci = g_ * cpg_ + cf;                         \
									size_t xi = at(&(o)->x, n, ci, ih, iw);          \
									size_t wi = at(&(o)->w, k, cf, r, s);            \
									size_t yi = at(&(o)->y, n, k, oh, ow);           \
									BODY;                                            \
								}                                                        \
			}                                                                                              \
	} while (0)

static void run_conv(struct lib_job *job) {
	struct conv_job *o = (struct conv_job *)job;
	struct dims out = o->kind == J_FWD ? o->y : o->kind == J_BWD_DATA ? o->x : o->w;
	size_t n = elems(out);
	double *acc = calloc(n ? n : 1, sizeof *acc);
	int dt = o->x.dt;
	switch (o->kind) {
	case J_FWD: EACH_TERM(o, acc[yi] += ld(dt, o->src0, xi) * ld(dt, o->src1, wi)); break;
	case J_BWD_DATA: EACH_TERM(o, acc[xi] += ld(dt, o->src1, yi) * ld(dt, o->src0, wi)); break;
	case J_BWD_FILTER: EACH_TERM(o, acc[wi] += ld(dt, o->src0, xi) * ld(dt, o->src1, yi)); break;
	}
	for (size_t i = 0; i < n; i++) {
		double v = o->alpha * acc[i];
		if (o->fused) {
			// i is y's element: its channel says which bias.
			int k = out.fmt == 1 ? (int)(i % out.c) : (int)(i / ((size_t)out.h * out.w) % out.c);
			if (o->alpha2 != 0) v += o->alpha2 * ld(dt, o->z, i);
			v += ld(o->bias_dt, o->bias, (size_t)k);
			if (o->act == 1 && v < 0) v = 0;
		} else if (o->beta != 0) v += o->beta * ld(dt, o->dst, i);
		st(dt, o->dst, i, v);
	}
	free(acc);
}

// dnn_queue queues job, of size bytes, to run on h's stream.
static int dnn_queue(struct fake_dnn *h, struct lib_job *job, void (*run)(struct lib_job *), size_t size) {
	*job = (struct lib_job){run, size};
	return enqueue_job(h->stream, job) == SUCCESS ? DNN_SUCCESS : DNN_EXECUTION_FAILED;
}

static int queue_conv(struct fake_dnn *h, struct conv_job *o) { return dnn_queue(h, &o->job, run_conv, sizeof *o); }

// work_ok checks a work area against what algo needs.
static int work_ok(int algo, const struct dims *w, const void *ws, size_t size) {
	long need = conv_need(algo, w);
	if (need < 0) return DNN_NOT_SUPPORTED;
	if (size < (size_t)need) return DNN_BAD_PARAM;
	if (size && !dmem_ok(ws, size)) return DNN_BAD_PARAM;
	return DNN_SUCCESS;
}

EXPORT int cudnnConvolutionForward(struct fake_dnn *h, const void *alpha, struct fake_tensor *xd, const void *x, struct fake_tensor *wd,
                                   const void *w, struct fake_conv *c, int algo, void *ws, size_t wsize, const void *beta,
                                   struct fake_tensor *yd, void *y) {
	FAULT("cudnnConvolutionForward");
	int r = conv_check(h, xd, wd, c, yd);
	if (r) return r;
	if (!alpha || !beta) return DNN_BAD_PARAM_NULL_POINTER;
	if (algo < 0 || algo > 7) return DNN_BAD_PARAM;
	if ((r = work_ok(algo, &wd->d, ws, wsize))) return r;
	if (!dmem_ok(x, bytes(xd->d)) || !dmem_ok(w, bytes(wd->d)) || !dmem_ok(y, bytes(yd->d))) return DNN_BAD_PARAM;
	struct conv_job *o = calloc(1, sizeof *o);
	*o = (struct conv_job){.kind = J_FWD, .x = xd->d, .w = wd->d, .y = yd->d, .c = *c, .src0 = x, .src1 = w, .dst = y,
	                       .alpha = scal(xd->d.dt, alpha), .beta = scal(xd->d.dt, beta)};
	return queue_conv(h, o);
}

struct fake_act {
	int magic, set, mode, nan;
	double coef;
};
#define ACT_MAGIC 0xd2ac71
static int act_ok(struct fake_act *a) { return is_a(a, ACT_MAGIC) && a->set; }

EXPORT int cudnnCreateActivationDescriptor(struct fake_act **out) {
	FAULT("cudnnCreateActivationDescriptor");
	return NEW_DESC(out, ACT_MAGIC);
}
EXPORT int cudnnDestroyActivationDescriptor(struct fake_act *a) {
	FAULT("cudnnDestroyActivationDescriptor");
	return desc_free(a, ACT_MAGIC);
}
EXPORT int cudnnSetActivationDescriptor(struct fake_act *a, int mode, int nan, double coef) {
	FAULT("cudnnSetActivationDescriptor");
	if (!is_a(a, ACT_MAGIC) || mode < 0 || mode > 6 || (nan != 0 && nan != 1)) return DNN_BAD_PARAM;
	a->mode = mode, a->nan = nan, a->coef = coef, a->set = 1;
	return DNN_SUCCESS;
}

EXPORT int cudnnConvolutionBiasActivationForward(struct fake_dnn *h, const void *alpha1, struct fake_tensor *xd, const void *x,
                                                 struct fake_tensor *wd, const void *w, struct fake_conv *c, int algo, void *ws,
                                                 size_t wsize, const void *alpha2, struct fake_tensor *zd, const void *z,
                                                 struct fake_tensor *bd, const void *bias, struct fake_act *act, struct fake_tensor *yd,
                                                 void *y) {
	FAULT("cudnnConvolutionBiasActivationForward");
	int r = conv_check(h, xd, wd, c, yd);
	if (r) return r;
	if (!alpha1 || !alpha2) return DNN_BAD_PARAM_NULL_POINTER;
	if (!tensor_ok(zd) || !tensor_ok(bd) || !act_ok(act)) return DNN_BAD_PARAM;
	struct dims zz = zd->d, yy = yd->d, bb = bd->d;
	if (!same_dims(&zz, &yy) || zz.dt != yy.dt || zz.fmt != yy.fmt) return DNN_BAD_PARAM;
	if (!per_channel(&bb, yy.c)) return DNN_BAD_PARAM;
	if (bb.dt != yy.dt) return DNN_NOT_SUPPORTED;
	// Only ReLU and identity; identity only with IMPLICIT_PRECOMP_GEMM.
	if (act->mode != 1 && act->mode != 5) return DNN_NOT_SUPPORTED;
	if (act->mode == 5 && algo != 1) return DNN_NOT_SUPPORTED;
	if (algo < 0 || algo > 7) return DNN_BAD_PARAM;
	if ((r = work_ok(algo, &wd->d, ws, wsize))) return r;
	if (!dmem_ok(x, bytes(xd->d)) || !dmem_ok(w, bytes(wd->d)) || !dmem_ok(y, bytes(yy)) || !dmem_ok(z, bytes(zz)) ||
	    !dmem_ok(bias, bytes(bb)))
		return DNN_BAD_PARAM;
	struct conv_job *o = calloc(1, sizeof *o);
	*o = (struct conv_job){.kind = J_FWD, .x = xd->d, .w = wd->d, .y = yy, .c = *c, .src0 = x, .src1 = w, .dst = y,
	                       .alpha = scal(xd->d.dt, alpha1), .fused = 1, .act = act->mode, .alpha2 = scal(xd->d.dt, alpha2),
	                       .z = z, .bias = bias, .bias_dt = bb.dt};
	return queue_conv(h, o);
}

// Backward data: dy (the forward's output) and w give dx (its input).
EXPORT int cudnnGetConvolutionBackwardDataAlgorithm_v7(struct fake_dnn *h, struct fake_tensor *w, struct fake_tensor *dy,
                                                       struct fake_conv *c, struct fake_tensor *dx, int requested, int *returned,
                                                       struct perf *out) {
	FAULT("cudnnGetConvolutionBackwardDataAlgorithm_v7");
	return conv_algos(h, dx, w, c, dy, requested, returned, out, 0);
}
EXPORT int cudnnFindConvolutionBackwardDataAlgorithm(struct fake_dnn *h, struct fake_tensor *w, struct fake_tensor *dy,
                                                     struct fake_conv *c, struct fake_tensor *dx, int requested, int *returned,
                                                     struct perf *out) {
	FAULT("cudnnFindConvolutionBackwardDataAlgorithm");
	return conv_algos(h, dx, w, c, dy, requested, returned, out, 1);
}
EXPORT int cudnnGetConvolutionBackwardDataWorkspaceSize(struct fake_dnn *h, struct fake_tensor *w, struct fake_tensor *dy,
                                                        struct fake_conv *c, struct fake_tensor *dx, int algo, size_t *size) {
	FAULT("cudnnGetConvolutionBackwardDataWorkspaceSize");
	int r = conv_check(h, dx, w, c, dy);
	return r ? r : work_size(algo, 5, &w->d, size);
}
EXPORT int cudnnConvolutionBackwardData(struct fake_dnn *h, const void *alpha, struct fake_tensor *wd, const void *w, struct fake_tensor *dyd,
                                        const void *dy, struct fake_conv *c, int algo, void *ws, size_t wsize, const void *beta,
                                        struct fake_tensor *dxd, void *dx) {
	FAULT("cudnnConvolutionBackwardData");
	int r = conv_check(h, dxd, wd, c, dyd);
	if (r) return r;
	if (!alpha || !beta) return DNN_BAD_PARAM_NULL_POINTER;
	if (algo < 0 || algo > 5) return DNN_BAD_PARAM;
	if ((r = work_ok(algo, &wd->d, ws, wsize))) return r;
	if (!dmem_ok(dx, bytes(dxd->d)) || !dmem_ok(w, bytes(wd->d)) || !dmem_ok(dy, bytes(dyd->d))) return DNN_BAD_PARAM;
	struct conv_job *o = calloc(1, sizeof *o);
	*o = (struct conv_job){.kind = J_BWD_DATA, .x = dxd->d, .w = wd->d, .y = dyd->d, .c = *c, .src0 = w, .src1 = dy, .dst = dx,
	                       .alpha = scal(wd->d.dt, alpha), .beta = scal(wd->d.dt, beta)};
	return queue_conv(h, o);
}

// Backward filter: x and dy give dw.
EXPORT int cudnnGetConvolutionBackwardFilterAlgorithm_v7(struct fake_dnn *h, struct fake_tensor *x, struct fake_tensor *dy,
                                                         struct fake_conv *c, struct fake_tensor *dw, int requested, int *returned,
                                                         struct perf *out) {
	FAULT("cudnnGetConvolutionBackwardFilterAlgorithm_v7");
	return conv_algos(h, x, dw, c, dy, requested, returned, out, 0);
}
EXPORT int cudnnFindConvolutionBackwardFilterAlgorithm(struct fake_dnn *h, struct fake_tensor *x, struct fake_tensor *dy,
                                                       struct fake_conv *c, struct fake_tensor *dw, int requested, int *returned,
                                                       struct perf *out) {
	FAULT("cudnnFindConvolutionBackwardFilterAlgorithm");
	return conv_algos(h, x, dw, c, dy, requested, returned, out, 1);
}
EXPORT int cudnnGetConvolutionBackwardFilterWorkspaceSize(struct fake_dnn *h, struct fake_tensor *x, struct fake_tensor *dy,
                                                          struct fake_conv *c, struct fake_tensor *dw, int algo, size_t *size) {
	FAULT("cudnnGetConvolutionBackwardFilterWorkspaceSize");
	int r = conv_check(h, x, dw, c, dy);
	return r ? r : work_size(algo, 6, &dw->d, size);
}
EXPORT int cudnnConvolutionBackwardFilter(struct fake_dnn *h, const void *alpha, struct fake_tensor *xd, const void *x,
                                          struct fake_tensor *dyd, const void *dy, struct fake_conv *c, int algo, void *ws, size_t wsize,
                                          const void *beta, struct fake_tensor *dwd, void *dw) {
	FAULT("cudnnConvolutionBackwardFilter");
	int r = conv_check(h, xd, dwd, c, dyd);
	if (r) return r;
	if (!alpha || !beta) return DNN_BAD_PARAM_NULL_POINTER;
	if (algo < 0 || algo > 6) return DNN_BAD_PARAM;
	if ((r = work_ok(algo, &dwd->d, ws, wsize))) return r;
	if (!dmem_ok(x, bytes(xd->d)) || !dmem_ok(dy, bytes(dyd->d)) || !dmem_ok(dw, bytes(dwd->d))) return DNN_BAD_PARAM;
	struct conv_job *o = calloc(1, sizeof *o);
	*o = (struct conv_job){.kind = J_BWD_FILTER, .x = xd->d, .w = dwd->d, .y = dyd->d, .c = *c, .src0 = x, .src1 = dy, .dst = dw,
	                       .alpha = scal(xd->d.dt, alpha), .beta = scal(xd->d.dt, beta)};
	return queue_conv(h, o);
}

// cudnnConvolutionBackwardBias sums dy over all but its channels into db
// (1xKx1x1).
struct bias_job {
	struct lib_job job;
	struct dims dy, db;
	const void *src;
	void *dst;
	double alpha, beta;
};

static void run_bias(struct lib_job *job) {
	struct bias_job *o = (struct bias_job *)job;
	for (int k = 0; k < o->dy.c; k++) {
		double s = 0;
		for (int n = 0; n < o->dy.n; n++)
			for (int h = 0; h < o->dy.h; h++)
				for (int w = 0; w < o->dy.w; w++) s += ld(o->dy.dt, o->src, at(&o->dy, n, k, h, w));
		double v = o->alpha * s;
		if (o->beta != 0) v += o->beta * ld(o->db.dt, o->dst, (size_t)k);
		st(o->db.dt, o->dst, (size_t)k, v);
	}
}

EXPORT int cudnnConvolutionBackwardBias(struct fake_dnn *h, const void *alpha, struct fake_tensor *dyd, const void *dy, const void *beta,
                                        struct fake_tensor *dbd, void *db) {
	FAULT("cudnnConvolutionBackwardBias");
	int r = dnn_usable(h);
	if (r) return r;
	if (!tensor_ok(dyd) || !tensor_ok(dbd)) return DNN_BAD_PARAM;
	if (!alpha || !beta) return DNN_BAD_PARAM_NULL_POINTER;
	struct dims a = dyd->d, b = dbd->d;
	if (!per_channel(&b, a.c)) return DNN_BAD_PARAM;
	// cuDNN 9's legacy bias gradient takes float32 and float16, and
	// answers NOT_SUPPORTED for bfloat16 (seen on an H100, cuDNN 9.19).
	if (b.dt != a.dt || a.dt == 9 /* CUDNN_DATA_BFLOAT16 */) return DNN_NOT_SUPPORTED;
	if (!dmem_ok(dy, bytes(a)) || !dmem_ok(db, bytes(b))) return DNN_BAD_PARAM;
	struct bias_job *o = calloc(1, sizeof *o);
	*o = (struct bias_job){.dy = a, .db = b, .src = dy, .dst = db, .alpha = scal(a.dt, alpha), .beta = scal(a.dt, beta)};
	return dnn_queue(h, &o->job, run_bias, sizeof *o);
}

// ---- tensor arithmetic: the bias and the activation apart -------------------------

struct pointwise_job {
	struct lib_job job;
	int kind; // 0: C = alpha·A (broadcast) + beta·C; 1: y = alpha·act(x) + beta·y
	struct dims a, c;
	const void *src;
	void *dst;
	double alpha, beta, coef;
	int mode;
};

static void run_pointwise(struct lib_job *job) {
	struct pointwise_job *o = (struct pointwise_job *)job;
	for (int n = 0; n < o->c.n; n++)
		for (int ch = 0; ch < o->c.c; ch++)
			for (int h = 0; h < o->c.h; h++)
				for (int w = 0; w < o->c.w; w++) {
					size_t ci = at(&o->c, n, ch, h, w);
					size_t ai = at(&o->a, o->a.n == 1 ? 0 : n, o->a.c == 1 ? 0 : ch, o->a.h == 1 ? 0 : h, o->a.w == 1 ? 0 : w);
					double v = ld(o->a.dt, o->src, ai);
					if (o->kind == 1) {
						switch (o->mode) {
						case 0: v = 1 / (1 + exp(-v)); break;
						case 1: v = v < 0 ? 0 : v; break;
						case 2: v = tanh(v); break;
						case 3: v = v < 0 ? 0 : v > o->coef ? o->coef : v; break;
						case 4: v = v < 0 ? o->coef * (exp(v) - 1) : v; break;
						case 6: v = v / (1 + exp(-o->coef * v)); break;
						}
					}
					v *= o->alpha;
					if (o->beta != 0) v += o->beta * ld(o->c.dt, o->dst, ci);
					st(o->c.dt, o->dst, ci, v);
				}
}

static int queue_pointwise(struct fake_dnn *h, struct pointwise_job *o) { return dnn_queue(h, &o->job, run_pointwise, sizeof *o); }

// cudnnAddTensor adds A, each of whose dimensions is C's or 1, to C.
EXPORT int cudnnAddTensor(struct fake_dnn *h, const void *alpha, struct fake_tensor *ad, const void *a, const void *beta,
                          struct fake_tensor *cd, void *c) {
	FAULT("cudnnAddTensor");
	int r = dnn_usable(h);
	if (r) return r;
	if (!tensor_ok(ad) || !tensor_ok(cd)) return DNN_BAD_PARAM;
	if (!alpha || !beta) return DNN_BAD_PARAM_NULL_POINTER;
	struct dims A = ad->d, C = cd->d;
	if (!broadcasts(&A, &C)) return DNN_BAD_PARAM;
	if (A.dt != C.dt) return DNN_NOT_SUPPORTED;
	if (!dmem_ok(a, bytes(A)) || !dmem_ok(c, bytes(C))) return DNN_BAD_PARAM;
	struct pointwise_job *o = calloc(1, sizeof *o);
	*o = (struct pointwise_job){.kind = 0, .a = A, .c = C, .src = a, .dst = c, .alpha = scal(C.dt, alpha), .beta = scal(C.dt, beta)};
	return queue_pointwise(h, o);
}

// cudnnActivationForward applies the activation to x into y (x's shape);
// y may be x.
EXPORT int cudnnActivationForward(struct fake_dnn *h, struct fake_act *act, const void *alpha, struct fake_tensor *xd, const void *x,
                                  const void *beta, struct fake_tensor *yd, void *y) {
	FAULT("cudnnActivationForward");
	int r = dnn_usable(h);
	if (r) return r;
	if (!act_ok(act) || !tensor_ok(xd) || !tensor_ok(yd)) return DNN_BAD_PARAM;
	if (act->mode == 5) return DNN_BAD_PARAM; // identity: cuDNN's ActivationForward refuses it
	if (!alpha || !beta) return DNN_BAD_PARAM_NULL_POINTER;
	struct dims X = xd->d, Y = yd->d;
	if (!same_dims(&X, &Y) || X.dt != Y.dt) return DNN_BAD_PARAM;
	if (!dmem_ok(x, bytes(X)) || !dmem_ok(y, bytes(Y))) return DNN_BAD_PARAM;
	struct pointwise_job *o = calloc(1, sizeof *o);
	*o = (struct pointwise_job){.kind = 1, .a = X, .c = Y, .src = x, .dst = y, .alpha = scal(X.dt, alpha), .beta = scal(X.dt, beta),
	                            .mode = act->mode, .coef = act->coef};
	return queue_pointwise(h, o);
}

// ---- pooling --------------------------------------------------------------------

struct fake_dnn_pool {
	int magic, set;
	int mode, nan, wh, ww, ph, pw, sh, sw;
};
#define POOL_MAGIC 0xd2b001
static int pool_ok(struct fake_dnn_pool *p) { return is_a(p, POOL_MAGIC) && p->set; }

EXPORT int cudnnCreatePoolingDescriptor(struct fake_dnn_pool **out) {
	FAULT("cudnnCreatePoolingDescriptor");
	return NEW_DESC(out, POOL_MAGIC);
}
EXPORT int cudnnDestroyPoolingDescriptor(struct fake_dnn_pool *p) {
	FAULT("cudnnDestroyPoolingDescriptor");
	return desc_free(p, POOL_MAGIC);
}
EXPORT int cudnnSetPooling2dDescriptor(struct fake_dnn_pool *p, int mode, int nan, int wh, int ww, int ph, int pw, int sh, int sw) {
	FAULT("cudnnSetPooling2dDescriptor");
	if (!is_a(p, POOL_MAGIC) || mode < 0 || mode > 3 || (nan != 0 && nan != 1)) return DNN_BAD_PARAM;
	if (wh <= 0 || ww <= 0 || ph < 0 || pw < 0 || sh <= 0 || sw <= 0) return DNN_BAD_PARAM;
	*p = (struct fake_dnn_pool){POOL_MAGIC, 1, mode, nan, wh, ww, ph, pw, sh, sw};
	return DNN_SUCCESS;
}

static int pool_out(struct fake_dnn_pool *p, const struct dims *x, struct dims *y) {
	if (x->h + 2 * p->ph < p->wh || x->w + 2 * p->pw < p->ww) return DNN_BAD_PARAM;
	*y = (struct dims){x->n, x->c, 1 + (x->h + 2 * p->ph - p->wh) / p->sh, 1 + (x->w + 2 * p->pw - p->ww) / p->sw, x->fmt, x->dt};
	return DNN_SUCCESS;
}

EXPORT int cudnnGetPooling2dForwardOutputDim(struct fake_dnn_pool *p, struct fake_tensor *x, int *n, int *c, int *h, int *w) {
	FAULT("cudnnGetPooling2dForwardOutputDim");
	if (!pool_ok(p) || !tensor_ok(x)) return DNN_BAD_PARAM;
	if (!n || !c || !h || !w) return DNN_BAD_PARAM_NULL_POINTER;
	struct dims y;
	int r = pool_out(p, &x->d, &y);
	if (r) return r;
	*n = y.n, *c = y.c, *h = y.h, *w = y.w;
	return DNN_SUCCESS;
}

struct pool_job {
	struct lib_job job;
	struct fake_dnn_pool p;
	struct dims x, y;
	const void *src;
	void *dst;
	double alpha, beta;
};

static void run_pool(struct lib_job *job) {
	struct pool_job *o = (struct pool_job *)job;
	int dt = o->x.dt;
	for (int n = 0; n < o->y.n; n++)
		for (int c = 0; c < o->y.c; c++)
			for (int oh = 0; oh < o->y.h; oh++)
				for (int ow = 0; ow < o->y.w; ow++) {
					double best = -INFINITY, sum = 0;
					int count = 0;
					for (int r = 0; r < o->p.wh; r++)
						for (int s = 0; s < o->p.ww; s++) {
							int ih = oh * o->p.sh - o->p.ph + r, iw = ow * o->p.sw - o->p.pw + s;
							if (ih < 0 || ih >= o->x.h || iw < 0 || iw >= o->x.w) continue;
							double v = ld(dt, o->src, at(&o->x, n, c, ih, iw));
							if (v > best) best = v;
							sum += v;
							count++;
						}
					double v;
					switch (o->p.mode) {
					case 1: v = sum / (o->p.wh * o->p.ww); break; // padding counted
					case 2: v = count ? sum / count : 0; break;
					default: v = count ? best : 0;
					}
					size_t yi = at(&o->y, n, c, oh, ow);
					v *= o->alpha;
					if (o->beta != 0) v += o->beta * ld(dt, o->dst, yi);
					st(dt, o->dst, yi, v);
				}
}

EXPORT int cudnnPoolingForward(struct fake_dnn *h, struct fake_dnn_pool *p, const void *alpha, struct fake_tensor *xd, const void *x,
                               const void *beta, struct fake_tensor *yd, void *y) {
	FAULT("cudnnPoolingForward");
	int r = dnn_usable(h);
	if (r) return r;
	if (!pool_ok(p) || !tensor_ok(xd) || !tensor_ok(yd)) return DNN_BAD_PARAM;
	if (!alpha || !beta) return DNN_BAD_PARAM_NULL_POINTER;
	if (xd->d.dt != yd->d.dt) return DNN_BAD_PARAM;
	struct dims o;
	if ((r = pool_out(p, &xd->d, &o))) return r;
	if (!same_dims(&o, &yd->d)) return DNN_BAD_PARAM;
	if (!dmem_ok(x, bytes(xd->d)) || !dmem_ok(y, bytes(yd->d))) return DNN_BAD_PARAM;
	struct pool_job *j = calloc(1, sizeof *j);
	*j = (struct pool_job){.p = *p, .x = xd->d, .y = yd->d, .src = x, .dst = y, .alpha = scal(xd->d.dt, alpha), .beta = scal(xd->d.dt, beta)};
	return dnn_queue(h, &j->job, run_pool, sizeof *j);
}

// cudnnPoolingBackward: dx from dy, x and y. A max window's gradient goes
// to its first largest element (row by row); an average's is shared by
// the elements it counted.
struct pool_bwd_job {
	struct lib_job job;
	struct fake_dnn_pool p;
	struct dims x, y, dx, dyd;
	const void *src, *dy;
	void *dst;
	double alpha, beta;
};

static void run_pool_bwd(struct lib_job *job) {
	struct pool_bwd_job *o = (struct pool_bwd_job *)job;
	int dt = o->x.dt;
	size_t n = elems(o->x);
	double *acc = calloc(n ? n : 1, sizeof *acc);
	for (int b = 0; b < o->y.n; b++)
		for (int c = 0; c < o->y.c; c++)
			for (int oh = 0; oh < o->y.h; oh++)
				for (int ow = 0; ow < o->y.w; ow++) {
					double g = ld(dt, o->dy, at(&o->dyd, b, c, oh, ow)), best = -INFINITY;
					long arg = -1;
					int count = 0;
					for (int r = 0; r < o->p.wh; r++)
						for (int s = 0; s < o->p.ww; s++) {
							int ih = oh * o->p.sh - o->p.ph + r, iw = ow * o->p.sw - o->p.pw + s;
							if (ih < 0 || ih >= o->x.h || iw < 0 || iw >= o->x.w) continue;
							size_t xi = at(&o->x, b, c, ih, iw);
							double v = ld(dt, o->src, xi);
							if (v > best) best = v, arg = (long)xi;
							count++;
						}
					if (o->p.mode == 0 || o->p.mode == 3) {
						if (arg >= 0) acc[arg] += g;
						continue;
					}
					double share = o->p.mode == 1 ? g / (o->p.wh * o->p.ww) : count ? g / count : 0;
					for (int r = 0; r < o->p.wh; r++)
						for (int s = 0; s < o->p.ww; s++) {
							int ih = oh * o->p.sh - o->p.ph + r, iw = ow * o->p.sw - o->p.pw + s;
							if (ih < 0 || ih >= o->x.h || iw < 0 || iw >= o->x.w) continue;
							acc[at(&o->x, b, c, ih, iw)] += share;
						}
				}
	for (int b = 0; b < o->x.n; b++)
		for (int c = 0; c < o->x.c; c++)
			for (int ih = 0; ih < o->x.h; ih++)
				for (int iw = 0; iw < o->x.w; iw++) {
					size_t i = at(&o->dx, b, c, ih, iw);
					double v = o->alpha * acc[at(&o->x, b, c, ih, iw)];
					if (o->beta != 0) v += o->beta * ld(dt, o->dst, i);
					st(dt, o->dst, i, v);
				}
	free(acc);
}

EXPORT int cudnnPoolingBackward(struct fake_dnn *h, struct fake_dnn_pool *p, const void *alpha, struct fake_tensor *yd, const void *y,
                                struct fake_tensor *dyd, const void *dy, struct fake_tensor *xd, const void *x, const void *beta,
                                struct fake_tensor *dxd, void *dx) {
	FAULT("cudnnPoolingBackward");
	int r = dnn_usable(h);
	if (r) return r;
	if (!pool_ok(p) || !tensor_ok(yd) || !tensor_ok(dyd) || !tensor_ok(xd) || !tensor_ok(dxd)) return DNN_BAD_PARAM;
	if (!alpha || !beta) return DNN_BAD_PARAM_NULL_POINTER;
	struct dims X = xd->d, Y = yd->d, DY = dyd->d, DX = dxd->d, o;
	if ((r = pool_out(p, &X, &o))) return r;
	if (!same_dims(&o, &Y) || !same_dims(&DY, &Y) || !same_dims(&DX, &X)) return DNN_BAD_PARAM;
	if (X.dt != Y.dt || X.dt != DY.dt || X.dt != DX.dt) return DNN_BAD_PARAM;
	if (!dmem_ok(x, bytes(X)) || !dmem_ok(y, bytes(Y)) || !dmem_ok(dy, bytes(DY)) || !dmem_ok(dx, bytes(DX))) return DNN_BAD_PARAM;
	struct pool_bwd_job *j = calloc(1, sizeof *j);
	*j = (struct pool_bwd_job){.p = *p, .x = X, .y = Y, .dx = DX, .dyd = DY, .src = x, .dy = dy, .dst = dx, .alpha = scal(X.dt, alpha),
	                           .beta = scal(X.dt, beta)};
	return dnn_queue(h, &j->job, run_pool_bwd, sizeof *j);
}

// ---- batch normalization ------------------------------------------------------------

// The parameters' type: float for float and the halves, double for double.
static int bn_type(int dt) { return dt == D_DOUBLE ? D_DOUBLE : D_FLOAT; }

EXPORT int cudnnDeriveBNTensorDescriptor(struct fake_tensor *d, struct fake_tensor *x, int mode) {
	FAULT("cudnnDeriveBNTensorDescriptor");
	if (!is_a(d, TENSOR_MAGIC) || !tensor_ok(x)) return DNN_BAD_PARAM;
	if (mode != 0 && mode != 1 && mode != 2) return DNN_BAD_PARAM;
	int per = mode == 0;
	d->d = (struct dims){1, x->d.c, per ? x->d.h : 1, per ? x->d.w : 1, x->d.fmt, bn_type(x->d.dt)};
	d->set = 1;
	return DNN_SUCCESS;
}

struct bn_job {
	struct lib_job job;
	int kind; // 0 inference, 1 training, 2 backward
	struct dims x;
	const void *src, *dy;
	void *dst;
	double alpha, beta, alpha_p, beta_p, eps, factor;
	const void *scale, *bias, *mean, *var;
	void *rmean, *rvar, *smean, *sinv, *dscale, *dbias;
};

static void run_bn(struct lib_job *job) {
	struct bn_job *o = (struct bn_job *)job;
	int dt = o->x.dt, pt = bn_type(dt);
	size_t m = (size_t)o->x.n * o->x.h * o->x.w;
	for (int c = 0; c < o->x.c; c++) {
		double mean, inv;
		if (o->kind == 0) {
			mean = ld(pt, o->mean, c);
			inv = 1 / sqrt(ld(pt, o->var, c) + o->eps);
		} else if (o->kind == 1) {
			double s = 0, ss = 0;
			for (int n = 0; n < o->x.n; n++)
				for (int h = 0; h < o->x.h; h++)
					for (int w = 0; w < o->x.w; w++) s += ld(dt, o->src, at(&o->x, n, c, h, w));
			mean = s / m;
			for (int n = 0; n < o->x.n; n++)
				for (int h = 0; h < o->x.h; h++)
					for (int w = 0; w < o->x.w; w++) {
						double d = ld(dt, o->src, at(&o->x, n, c, h, w)) - mean;
						ss += d * d;
					}
			double var = ss / m;
			inv = 1 / sqrt(var + o->eps);
			if (o->rmean) {
				double unbiased = m > 1 ? ss / (m - 1) : var;
				st(pt, o->rmean, c, (1 - o->factor) * ld(pt, o->rmean, c) + o->factor * mean);
				st(pt, o->rvar, c, (1 - o->factor) * ld(pt, o->rvar, c) + o->factor * unbiased);
			}
			if (o->smean) {
				st(pt, o->smean, c, mean);
				st(pt, o->sinv, c, inv);
			}
		} else {
			// backward: the saved statistics, or those of x
			if (o->mean) {
				mean = ld(pt, o->mean, c);
				inv = ld(pt, o->var, c);
			} else {
				double s = 0, ss = 0;
				for (int n = 0; n < o->x.n; n++)
					for (int h = 0; h < o->x.h; h++)
						for (int w = 0; w < o->x.w; w++) s += ld(dt, o->src, at(&o->x, n, c, h, w));
				mean = s / m;
				for (int n = 0; n < o->x.n; n++)
					for (int h = 0; h < o->x.h; h++)
						for (int w = 0; w < o->x.w; w++) {
							double d = ld(dt, o->src, at(&o->x, n, c, h, w)) - mean;
							ss += d * d;
						}
				inv = 1 / sqrt(ss / m + o->eps);
			}
			double sdy = 0, sdyx = 0, g = ld(pt, o->scale, c);
			for (int n = 0; n < o->x.n; n++)
				for (int h = 0; h < o->x.h; h++)
					for (int w = 0; w < o->x.w; w++) {
						size_t i = at(&o->x, n, c, h, w);
						double dy = ld(dt, o->dy, i), xh = (ld(dt, o->src, i) - mean) * inv;
						sdy += dy;
						sdyx += dy * xh;
					}
			for (int n = 0; n < o->x.n; n++)
				for (int h = 0; h < o->x.h; h++)
					for (int w = 0; w < o->x.w; w++) {
						size_t i = at(&o->x, n, c, h, w);
						double dy = ld(dt, o->dy, i), xh = (ld(dt, o->src, i) - mean) * inv;
						double dx = g * inv * (dy - sdy / m - xh * sdyx / m);
						double v = o->alpha * dx;
						if (o->beta != 0) v += o->beta * ld(dt, o->dst, i);
						st(dt, o->dst, i, v);
					}
			double ds = o->alpha_p * sdyx, db = o->alpha_p * sdy;
			if (o->beta_p != 0) {
				ds += o->beta_p * ld(pt, o->dscale, c);
				db += o->beta_p * ld(pt, o->dbias, c);
			}
			st(pt, o->dscale, c, ds);
			st(pt, o->dbias, c, db);
			continue;
		}
		double g = ld(pt, o->scale, c), b = ld(pt, o->bias, c);
		for (int n = 0; n < o->x.n; n++)
			for (int h = 0; h < o->x.h; h++)
				for (int w = 0; w < o->x.w; w++) {
					size_t i = at(&o->x, n, c, h, w);
					double v = o->alpha * (g * (ld(dt, o->src, i) - mean) * inv + b);
					if (o->beta != 0) v += o->beta * ld(dt, o->dst, i);
					st(dt, o->dst, i, v);
				}
	}
}

// bn_check checks what every batch normalization call shares: spatial
// mode (the fake has no other), x and y alike, the parameters' descriptor
// 1xCx1x1 of the parameters' type.
static int bn_check(struct fake_dnn *h, int mode, struct fake_tensor *xd, struct fake_tensor *yd, struct fake_tensor *pd) {
	int r = dnn_usable(h);
	if (r) return r;
	if (mode < 0 || mode > 2) return DNN_BAD_PARAM;
	if (mode != 1) return DNN_NOT_SUPPORTED;
	if (!tensor_ok(xd) || !tensor_ok(yd) || !tensor_ok(pd)) return DNN_BAD_PARAM;
	struct dims x = xd->d, y = yd->d, p = pd->d;
	if (!same_dims(&x, &y) || x.dt != y.dt) return DNN_BAD_PARAM;
	if (!per_channel(&p, x.c) || p.dt != bn_type(x.dt)) return DNN_BAD_PARAM;
	return DNN_SUCCESS;
}

static int bn_queue(struct fake_dnn *h, struct bn_job *o) { return dnn_queue(h, &o->job, run_bn, sizeof *o); }

EXPORT int cudnnBatchNormalizationForwardInference(struct fake_dnn *h, int mode, const void *alpha, const void *beta, struct fake_tensor *xd,
                                                   const void *x, struct fake_tensor *yd, void *y, struct fake_tensor *pd,
                                                   const void *scale, const void *bias, const void *mean, const void *var, double eps) {
	FAULT("cudnnBatchNormalizationForwardInference");
	int r = bn_check(h, mode, xd, yd, pd);
	if (r) return r;
	if (!alpha || !beta) return DNN_BAD_PARAM_NULL_POINTER;
	if (eps < 0) return DNN_BAD_PARAM;
	size_t pb = bytes(pd->d);
	if (!dmem_ok(x, bytes(xd->d)) || !dmem_ok(y, bytes(yd->d)) || !dmem_ok(scale, pb) || !dmem_ok(bias, pb) || !dmem_ok(mean, pb) ||
	    !dmem_ok(var, pb))
		return DNN_BAD_PARAM;
	struct bn_job *o = calloc(1, sizeof *o);
	*o = (struct bn_job){.kind = 0, .x = xd->d, .src = x, .dst = y, .alpha = scal(xd->d.dt, alpha), .beta = scal(xd->d.dt, beta),
	                     .eps = eps, .scale = scale, .bias = bias, .mean = mean, .var = var};
	return bn_queue(h, o);
}

EXPORT int cudnnBatchNormalizationForwardTraining(struct fake_dnn *h, int mode, const void *alpha, const void *beta, struct fake_tensor *xd,
                                                  const void *x, struct fake_tensor *yd, void *y, struct fake_tensor *pd,
                                                  const void *scale, const void *bias, double factor, void *rmean, void *rvar,
                                                  double eps, void *smean, void *sinv) {
	FAULT("cudnnBatchNormalizationForwardTraining");
	int r = bn_check(h, mode, xd, yd, pd);
	if (r) return r;
	if (!alpha || !beta) return DNN_BAD_PARAM_NULL_POINTER;
	if (eps < 0 || (!rmean) != (!rvar) || (!smean) != (!sinv)) return DNN_BAD_PARAM;
	size_t pb = bytes(pd->d);
	if (!dmem_ok(x, bytes(xd->d)) || !dmem_ok(y, bytes(yd->d)) || !dmem_ok(scale, pb) || !dmem_ok(bias, pb)) return DNN_BAD_PARAM;
	if ((rmean && (!dmem_ok(rmean, pb) || !dmem_ok(rvar, pb))) || (smean && (!dmem_ok(smean, pb) || !dmem_ok(sinv, pb))))
		return DNN_BAD_PARAM;
	struct bn_job *o = calloc(1, sizeof *o);
	*o = (struct bn_job){.kind = 1, .x = xd->d, .src = x, .dst = y, .alpha = scal(xd->d.dt, alpha), .beta = scal(xd->d.dt, beta),
	                     .eps = eps, .factor = factor, .scale = scale, .bias = bias, .rmean = rmean, .rvar = rvar, .smean = smean,
	                     .sinv = sinv};
	return bn_queue(h, o);
}

EXPORT int cudnnBatchNormalizationBackward(struct fake_dnn *h, int mode, const void *alpha, const void *beta, const void *alpha_p,
                                           const void *beta_p, struct fake_tensor *xd, const void *x, struct fake_tensor *dyd,
                                           const void *dy, struct fake_tensor *dxd, void *dx, struct fake_tensor *pd, const void *scale,
                                           void *dscale, void *dbias, double eps, const void *smean, const void *sinv) {
	FAULT("cudnnBatchNormalizationBackward");
	int r = bn_check(h, mode, xd, dxd, pd);
	if (r) return r;
	if (!tensor_ok(dyd)) return DNN_BAD_PARAM;
	struct dims a = xd->d, b = dyd->d;
	if (!same_dims(&a, &b) || a.dt != b.dt) return DNN_BAD_PARAM;
	if (!alpha || !beta || !alpha_p || !beta_p) return DNN_BAD_PARAM_NULL_POINTER;
	if (eps < 0 || (!smean) != (!sinv)) return DNN_BAD_PARAM;
	size_t pb = bytes(pd->d);
	if (!dmem_ok(x, bytes(a)) || !dmem_ok(dy, bytes(b)) || !dmem_ok(dx, bytes(dxd->d)) || !dmem_ok(scale, pb) ||
	    !dmem_ok(dscale, pb) || !dmem_ok(dbias, pb))
		return DNN_BAD_PARAM;
	if (smean && (!dmem_ok(smean, pb) || !dmem_ok(sinv, pb))) return DNN_BAD_PARAM;
	int dt = a.dt;
	struct bn_job *o = calloc(1, sizeof *o);
	*o = (struct bn_job){.kind = 2, .x = a, .src = x, .dy = dy, .dst = dx, .alpha = scal(dt, alpha), .beta = scal(dt, beta),
	                     .alpha_p = scal(dt, alpha_p), .beta_p = scal(dt, beta_p), .eps = eps, .scale = scale,
	                     .mean = smean, .var = sinv, .dscale = dscale, .dbias = dbias};
	return bn_queue(h, o);
}

// ---- the backend (graph) API -------------------------------------------------
//
// Descriptors made by type, their attributes set as arrays of typed
// elements (each name belongs to one descriptor type and one element
// type), finalized once all the required ones are set and every
// descriptor they name is finalized; nothing may be set once finalized.
// The graphs the fake runs are one convolution (forward, backward data or
// backward filter), the forward alone or followed by a pointwise add of a
// bias and optionally a pointwise ReLU, their results virtual. The
// heuristics rank four engines: 2 (flagged CUDNN_NUMERICAL_NOTE_TENSOR_CORE,
// with a work area), 1 (a work area; refuses graphs with pointwise
// operations at finalize, as engines refuse what they cannot run), 0
// (none) and 3 (flagged CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION, no work
// area, and failing when run, CUDNN_STATUS_EXECUTION_FAILED_CUDART: one
// such engine faulted on an H100, CUDA_ERROR_MISALIGNED_ADDRESS), in that
// order in CUDNN_HEUR_MODE_A, INSTANT and B; only 0 in FALLBACK. An execution plan runs with a variant pack that must name
// every non-virtual tensor of its graph by its id, with device pointers of
// the tensor's size, aligned as declared, and a work area of the size the
// plan reported; the work is the direct convolution of the legacy calls.

enum {
	BD_POINTWISE = 0, BD_CONV = 1, BD_ENGINE = 2, BD_ENGINECFG = 3, BD_ENGINEHEUR = 4, BD_PLAN = 5,
	BD_OP_FWD = 10, BD_OP_BWD_FILTER = 11, BD_OP_BWD_DATA = 12, BD_OP_PW = 13, BD_GRAPH = 15, BD_PACK = 16, BD_TENSOR = 17,
};
enum {
	AT_HANDLE = 0, AT_DATA_TYPE = 1, AT_BOOLEAN = 2, AT_INT64 = 3, AT_FLOAT = 4, AT_DOUBLE = 5, AT_VOID_PTR = 6,
	AT_CONV_MODE = 7, AT_HEUR_MODE = 8, AT_NUMERICAL_NOTE = 11, AT_POINTWISE_MODE = 14, AT_DESC = 15, AT_REDUCTION_OP = 18, AT_BEHAVIOR_NOTE = 19,
	AT_SCALAR = -1, // float or double
};
enum { DNN_BAD_PARAM_MISALIGNED = 2003, DNN_BAD_PARAM_NOT_FINALIZED = 2004, DNN_BAD_PARAM_ATTRIBUTE_TYPE = 2010,
       DNN_NOT_SUPPORTED_GRAPH_PATTERN = 3001, DNN_NOT_SUPPORTED_LAYOUT = 3004 };

static const struct {
	int dt, name, type, maxn;
} bd_attrs[] = {
	{BD_TENSOR, 900, AT_INT64, 1}, {BD_TENSOR, 901, AT_DATA_TYPE, 1}, {BD_TENSOR, 902, AT_INT64, 8},
	{BD_TENSOR, 903, AT_INT64, 8}, {BD_TENSOR, 906, AT_INT64, 1}, {BD_TENSOR, 907, AT_BOOLEAN, 1},
	{BD_CONV, 100, AT_DATA_TYPE, 1}, {BD_CONV, 101, AT_CONV_MODE, 1}, {BD_CONV, 102, AT_INT64, 3}, {BD_CONV, 103, AT_INT64, 3},
	{BD_CONV, 104, AT_INT64, 3}, {BD_CONV, 105, AT_INT64, 3}, {BD_CONV, 106, AT_INT64, 1},
	{BD_POINTWISE, 0, AT_POINTWISE_MODE, 1}, {BD_POINTWISE, 1, AT_DATA_TYPE, 1},
	{BD_OP_FWD, 700, AT_SCALAR, 1}, {BD_OP_FWD, 701, AT_SCALAR, 1}, {BD_OP_FWD, 702, AT_DESC, 1}, {BD_OP_FWD, 703, AT_DESC, 1},
	{BD_OP_FWD, 704, AT_DESC, 1}, {BD_OP_FWD, 705, AT_DESC, 1},
	{BD_OP_BWD_DATA, 706, AT_SCALAR, 1}, {BD_OP_BWD_DATA, 707, AT_SCALAR, 1}, {BD_OP_BWD_DATA, 708, AT_DESC, 1},
	{BD_OP_BWD_DATA, 709, AT_DESC, 1}, {BD_OP_BWD_DATA, 710, AT_DESC, 1}, {BD_OP_BWD_DATA, 711, AT_DESC, 1},
	{BD_OP_BWD_FILTER, 712, AT_SCALAR, 1}, {BD_OP_BWD_FILTER, 713, AT_SCALAR, 1}, {BD_OP_BWD_FILTER, 714, AT_DESC, 1},
	{BD_OP_BWD_FILTER, 715, AT_DESC, 1}, {BD_OP_BWD_FILTER, 716, AT_DESC, 1}, {BD_OP_BWD_FILTER, 717, AT_DESC, 1},
	{BD_OP_PW, 750, AT_DESC, 1}, {BD_OP_PW, 751, AT_DESC, 1}, {BD_OP_PW, 752, AT_DESC, 1}, {BD_OP_PW, 753, AT_DESC, 1},
	{BD_OP_PW, 754, AT_SCALAR, 1}, {BD_OP_PW, 755, AT_SCALAR, 1},
	{BD_GRAPH, 800, AT_HANDLE, 1}, {BD_GRAPH, 801, AT_DESC, 16},
	{BD_ENGINEHEUR, 200, AT_HEUR_MODE, 1}, {BD_ENGINEHEUR, 201, AT_DESC, 1},
	{BD_PLAN, 400, AT_HANDLE, 1}, {BD_PLAN, 401, AT_DESC, 1},
	{BD_PACK, 1000, AT_INT64, 16}, {BD_PACK, 1001, AT_VOID_PTR, 16}, {BD_PACK, 1003, AT_VOID_PTR, 1},
	// the attention graph's (dnn_sdpa.h): by value, the axis, the select's
	// predicate, matmuls and reductions
	{BD_TENSOR, 908, AT_BOOLEAN, 1}, {BD_POINTWISE, 9, AT_INT64, 1}, {BD_OP_PW, 758, AT_DESC, 1},
	{18, 1500, AT_DATA_TYPE, 1}, {19, 1520, AT_DESC, 1}, {19, 1521, AT_DESC, 1}, {19, 1522, AT_DESC, 1}, {19, 1523, AT_DESC, 1},
	{21, 1600, AT_REDUCTION_OP, 1}, {21, 1601, AT_DATA_TYPE, 1}, {22, 1610, AT_DESC, 1}, {22, 1611, AT_DESC, 1}, {22, 1612, AT_DESC, 1},
};

static size_t at_size(int t) {
	switch (t) {
	case AT_BOOLEAN: return 1;
	case AT_DATA_TYPE: case AT_FLOAT: case AT_REDUCTION_OP: case AT_CONV_MODE: case AT_HEUR_MODE: case AT_NUMERICAL_NOTE: case AT_POINTWISE_MODE: return 4;
	case AT_HANDLE: case AT_INT64: case AT_DOUBLE: case AT_VOID_PTR: case AT_DESC: return 8;
	}
	return 0;
}

// A tensor of a graph, as the graph copied it when finalized.
struct bd_tensor {
	struct dims d;
	int64_t uid, align;
	int virt;
};

// A graph's work, copied when finalized: the convolution (its kind,
// tensors by their forward roles x, w, y, parameters and scalars), the
// fused forward's bias and activation, and the non-virtual tensors.
struct bd_work {
	int kind; // J_FWD, J_BWD_DATA, J_BWD_FILTER
	struct bd_tensor x, w, y, bias;
	struct fake_conv c;
	double alpha, beta;
	int fused, act;
	int n;
	struct bd_tensor real[4];
};

#define BD_MAGIC 0xd2bd01
#define BD_MAX_ATTRS 12
struct fake_bd {
	int magic, type, final;
	int nattr;
	struct {
		int name, type;
		int64_t n;
		unsigned char v[16 * 8];
	} attr[BD_MAX_ATTRS];
	// finalized:
	struct bd_tensor t;       // a tensor
	struct fake_conv c;       // a convolution (groups from the op's tensors)
	int pw_mode;              // a pointwise descriptor
	struct bd_work work;      // an operation (its part), a graph, a heuristic, an engine (config), a plan
	struct fake_dnn *h;       // a graph, a plan
	int heur_mode, engine;    // a heuristic; an engine (config), a plan
	int64_t ws;               // a plan
	void *sdpa;               // the attention graph's part of an operation, graph, heuristic, engine (config), plan (dnn_sdpa.h)
};

static int bd_ok(struct fake_bd *d) { return is_a(d, BD_MAGIC); }

// bd_get returns attribute name of d, its element count in *n, or NULL.
static const void *bd_get(struct fake_bd *d, int name, int64_t *n) {
	for (int i = 0; i < d->nattr; i++)
		if (d->attr[i].name == name) {
			if (n) *n = d->attr[i].n;
			return d->attr[i].v;
		}
	return NULL;
}

static int64_t bd_i64(struct fake_bd *d, int name, int64_t dflt) {
	const int64_t *v = bd_get(d, name, NULL);
	return v ? v[0] : dflt;
}

static int bd_i32(struct fake_bd *d, int name, int dflt) {
	const int *v = bd_get(d, name, NULL);
	return v ? v[0] : dflt;
}

static double bd_scalar(struct fake_bd *d, int name, double dflt) {
	for (int i = 0; i < d->nattr; i++)
		if (d->attr[i].name == name) {
			if (d->attr[i].type == AT_DOUBLE) return *(const double *)d->attr[i].v;
			return *(const float *)d->attr[i].v;
		}
	return dflt;
}

// bd_ref returns the finalized descriptor of type type that attribute
// name of d names, or NULL with *r set (not set: BAD_PARAM; not
// finalized: NOT_FINALIZED; of another type: BAD_PARAM).
static struct fake_bd *bd_ref(struct fake_bd *d, int name, int type, int *r) {
	struct fake_bd *const *v = bd_get(d, name, NULL);
	if (!v || !bd_ok(*v) || (*v)->type != type) {
		*r = DNN_BAD_PARAM;
		return NULL;
	}
	if (!(*v)->final) {
		*r = DNN_BAD_PARAM_NOT_FINALIZED;
		return NULL;
	}
	return *v;
}

EXPORT int cudnnBackendCreateDescriptor(int type, struct fake_bd **out) {
	FAULT("cudnnBackendCreateDescriptor");
	if (!out) return DNN_BAD_PARAM_NULL_POINTER;
	switch (type) {
	case BD_POINTWISE: case BD_CONV: case BD_ENGINE: case BD_ENGINECFG: case BD_ENGINEHEUR: case BD_PLAN: case BD_OP_FWD:
	case BD_OP_BWD_FILTER: case BD_OP_BWD_DATA: case BD_OP_PW: case BD_GRAPH: case BD_PACK: case BD_TENSOR:
	case 18: case 19: case 21: case 22: break; // matmul and reduction descriptors and operations (dnn_sdpa.h)
	default: return type >= 0 && type < 64 ? DNN_NOT_SUPPORTED : DNN_BAD_PARAM;
	}
	*out = desc_new(sizeof **out, BD_MAGIC);
	(*out)->type = type;
	return DNN_SUCCESS;
}

EXPORT int cudnnBackendDestroyDescriptor(struct fake_bd *d) {
	FAULT("cudnnBackendDestroyDescriptor");
	if (!bd_ok(d)) return DNN_BAD_PARAM; // NULL too, unlike the legacy descriptors
	free(d->sdpa);
	return desc_free(d, BD_MAGIC);
}

EXPORT int cudnnBackendSetAttribute(struct fake_bd *d, int name, int type, int64_t n, const void *v) {
	FAULT("cudnnBackendSetAttribute");
	if (!bd_ok(d) || d->final) return DNN_BAD_PARAM;
	int i = 0, ni = (int)(sizeof bd_attrs / sizeof bd_attrs[0]);
	while (i < ni && (bd_attrs[i].dt != d->type || bd_attrs[i].name != name)) i++;
	if (i == ni) return DNN_BAD_PARAM;
	int want = bd_attrs[i].type;
	if (want == AT_SCALAR ? type != AT_FLOAT && type != AT_DOUBLE : type != want) return DNN_BAD_PARAM_ATTRIBUTE_TYPE;
	if (!v) return DNN_BAD_PARAM_NULL_POINTER;
	if (n < 1 || n > bd_attrs[i].maxn) return DNN_BAD_PARAM;
	int j = 0;
	while (j < d->nattr && d->attr[j].name != name) j++;
	if (j == d->nattr) d->nattr++;
	d->attr[j].name = name, d->attr[j].type = type, d->attr[j].n = n;
	memcpy(d->attr[j].v, v, (size_t)n * at_size(type));
	return DNN_SUCCESS;
}

// bd_tensor_of reads the tensor that attribute name of d names.
static int bd_tensor_of(struct fake_bd *d, int name, struct bd_tensor *t) {
	int r = 0;
	struct fake_bd *x = bd_ref(d, name, BD_TENSOR, &r);
	if (!x) return r;
	if (x->t.d.fmt < 0) return DNN_NOT_SUPPORTED_LAYOUT; // a tensor only the attention graph takes
	*t = x->t;
	return DNN_SUCCESS;
}

static int finalize_tensor(struct fake_bd *d) {
	int64_t nd = 0, ns = 0;
	const int64_t *dims = bd_get(d, 902, &nd), *strides = bd_get(d, 903, &ns);
	if (!bd_get(d, 901, NULL) || !dims || !strides || !bd_get(d, 906, NULL) || !bd_get(d, 900, NULL)) return DNN_BAD_PARAM;
	if (nd != ns) return DNN_BAD_PARAM;
	if (nd != 4) return DNN_NOT_SUPPORTED; // the fake's graphs are 4-D
	int dt = bd_i32(d, 901, -1);
	if (!dsize(dt)) return DNN_NOT_SUPPORTED_DATA_TYPE;
	for (int i = 0; i < 4; i++)
		if (dims[i] < 1 || dims[i] > INT32_MAX || strides[i] < 1) return DNN_BAD_PARAM;
	int64_t n = dims[0], c = dims[1], h = dims[2], w = dims[3];
	int fmt;
	if (strides[0] == c * h * w && strides[1] == h * w && strides[2] == w && strides[3] == 1) fmt = 0;
	else if (strides[0] == h * w * c && strides[1] == 1 && strides[2] == w * c && strides[3] == c) fmt = 1;
	else return DNN_NOT_SUPPORTED_LAYOUT;
	if (n * c * h * w > INT32_MAX) return DNN_BAD_PARAM;
	int64_t align = bd_i64(d, 900, 0);
	if (align < 1 || (align & (align - 1))) return DNN_BAD_PARAM;
	const unsigned char *virt = bd_get(d, 907, NULL);
	d->t = (struct bd_tensor){.d = {(int)n, (int)c, (int)h, (int)w, fmt, dt}, .uid = bd_i64(d, 906, 0), .align = align, .virt = virt && *virt};
	return DNN_SUCCESS;
}

static int finalize_conv(struct fake_bd *d) {
	int64_t n[5];
	const int64_t *dil = bd_get(d, 102, &n[0]), *str = bd_get(d, 103, &n[1]), *post = bd_get(d, 104, &n[2]),
	              *pre = bd_get(d, 105, &n[3]);
	if (!bd_get(d, 100, NULL) || !bd_get(d, 101, NULL) || !bd_get(d, 106, NULL) || !dil || !str || !post || !pre) return DNN_BAD_PARAM;
	int64_t sd = bd_i64(d, 106, 0);
	if (sd != 2) return sd == 3 ? DNN_NOT_SUPPORTED : DNN_BAD_PARAM;
	for (int i = 0; i < 4; i++)
		if (n[i] != sd) return DNN_BAD_PARAM;
	for (int i = 0; i < 2; i++) {
		if (dil[i] < 1 || str[i] < 1 || pre[i] < 0 || post[i] < 0) return DNN_BAD_PARAM;
		if (pre[i] != post[i]) return DNN_NOT_SUPPORTED; // asymmetric padding: not the fake's
	}
	int mode = bd_i32(d, 101, -1), ct = bd_i32(d, 100, -1);
	if (mode != 0 && mode != 1) return DNN_BAD_PARAM;
	if (ct != D_FLOAT && ct != D_DOUBLE) return DNN_NOT_SUPPORTED_DATA_TYPE;
	d->c = (struct fake_conv){.magic = CONV_MAGIC, .set = 1, .ph = (int)pre[0], .pw = (int)pre[1], .u = (int)str[0], .v = (int)str[1],
	                          .dh = (int)dil[0], .dw = (int)dil[1], .mode = mode, .ct = ct, .groups = 1};
	return DNN_SUCCESS;
}

// finalize_conv_op checks a convolution operation: x, w and y (by their
// forward roles) of one type (a virtual output: float), the filter's
// channels dividing the input's (the groups), y the output's dimensions.
static int finalize_conv_op(struct fake_bd *d) {
	static const int base[] = {[BD_OP_FWD] = 700, [BD_OP_BWD_DATA] = 706, [BD_OP_BWD_FILTER] = 712};
	int b = base[d->type], r;
	// The names after alpha and beta: the convolution, then w, x, y by
	// their forward roles (forward: w, x, y; backward data: w, dx, dy;
	// backward filter: dw, x, dy).
	int nconv = b + 2, nw = b + 3, nx = b + 4, ny = b + 5;
	struct fake_bd *c = bd_ref(d, nconv, BD_CONV, &r);
	if (!c) return r;
	struct bd_work *o = &d->work;
	*o = (struct bd_work){.kind = d->type == BD_OP_FWD ? J_FWD : d->type == BD_OP_BWD_DATA ? J_BWD_DATA : J_BWD_FILTER};
	if ((r = bd_tensor_of(d, nx, &o->x)) || (r = bd_tensor_of(d, nw, &o->w)) || (r = bd_tensor_of(d, ny, &o->y))) return r;
	if (!bd_get(d, b, NULL) || !bd_get(d, b + 1, NULL)) return DNN_BAD_PARAM; // alpha and beta
	o->alpha = bd_scalar(d, b, 1), o->beta = bd_scalar(d, b + 1, 0);
	if (o->x.virt || o->w.virt || (o->y.virt && o->kind != J_FWD)) return DNN_NOT_SUPPORTED_GRAPH_PATTERN;
	if (o->x.d.dt != o->w.d.dt || (o->y.virt ? o->y.d.dt != D_FLOAT : o->y.d.dt != o->x.d.dt)) return DNN_BAD_PARAM;
	if (c->c.ct != (o->x.d.dt == D_DOUBLE ? D_DOUBLE : D_FLOAT)) return DNN_NOT_SUPPORTED;
	// Each tensor keeps its own layout (strides that fit both, as of a
	// single channel, read the same either way).
	o->c = c->c;
	if (o->x.d.c % o->w.d.c) return DNN_BAD_PARAM_SHAPE_MISMATCH;
	o->c.groups = o->x.d.c / o->w.d.c;
	struct dims y;
	if (conv_out(&o->c, &o->x.d, &o->w.d, &y)) return DNN_BAD_PARAM_SHAPE_MISMATCH;
	if (!same_dims(&y, &o->y.d)) return DNN_BAD_PARAM_SHAPE_MISMATCH;
	return DNN_SUCCESS;
}

static int finalize_pw_op(struct fake_bd *d) {
	int r;
	struct fake_bd *pw = bd_ref(d, 750, BD_POINTWISE, &r);
	if (!pw) return r;
	struct bd_work *o = &d->work;
	*o = (struct bd_work){.act = pw->pw_mode};
	if ((r = bd_tensor_of(d, 751, &o->x)) || (r = bd_tensor_of(d, 753, &o->y))) return r;
	if (pw->pw_mode == 0) {
		if ((r = bd_tensor_of(d, 752, &o->bias))) return r;
		if (!broadcasts(&o->bias.d, &o->x.d)) return DNN_BAD_PARAM_SHAPE_MISMATCH;
	} else if (bd_get(d, 752, NULL)) return DNN_BAD_PARAM;
	if (!same_dims(&o->x.d, &o->y.d)) return DNN_BAD_PARAM_SHAPE_MISMATCH;
	return DNN_SUCCESS;
}

// add_real records a non-virtual tensor of a graph; two of one id: a bad
// parameter.
static int add_real(struct bd_work *w, struct bd_tensor t) {
	if (t.virt) return DNN_SUCCESS;
	for (int i = 0; i < w->n; i++)
		if (w->real[i].uid == t.uid) return DNN_BAD_PARAM;
	if (w->n == 4) return DNN_NOT_SUPPORTED_GRAPH_PATTERN;
	w->real[w->n++] = t;
	return DNN_SUCCESS;
}

// finalize_graph accepts one convolution, and for the forward a chain of
// a pointwise add (the bias, one per channel) and a ReLU after it, each
// virtual tensor consumed by the next operation, the last output real.
static int finalize_graph(struct fake_bd *d) {
	struct fake_dnn *const *hp = bd_get(d, 800, NULL);
	int64_t nops = 0;
	struct fake_bd *const *ops = bd_get(d, 801, &nops);
	if (!hp || !ops) return DNN_BAD_PARAM;
	if (!dnn_live(*hp)) return DNN_BAD_PARAM;
	struct fake_bd *conv = NULL, *add = NULL, *relu = NULL;
	for (int i = 0; i < nops; i++) {
		struct fake_bd *op = ops[i];
		if (!bd_ok(op)) return DNN_BAD_PARAM;
		if (!op->final) return DNN_BAD_PARAM_NOT_FINALIZED;
		switch (op->type) {
		case BD_OP_FWD: case BD_OP_BWD_DATA: case BD_OP_BWD_FILTER:
			if (conv) return DNN_NOT_SUPPORTED_GRAPH_PATTERN;
			conv = op;
			break;
		case BD_OP_PW:
			if (op->work.act == 0 && !add) add = op;
			else if (op->work.act == 100 && !relu) relu = op;
			else return DNN_NOT_SUPPORTED_GRAPH_PATTERN;
			break;
		default: return DNN_BAD_PARAM;
		}
	}
	if (!conv) return DNN_NOT_SUPPORTED_GRAPH_PATTERN;
	struct bd_work w = conv->work;
	struct bd_tensor out = w.y;
	if (add) {
		if (w.kind != J_FWD || !out.virt || add->work.x.uid != out.uid) return DNN_NOT_SUPPORTED_GRAPH_PATTERN;
		struct bd_tensor b = add->work.bias;
		if (!per_channel(&b.d, out.d.c) || b.virt || b.d.dt != w.x.d.dt) return DNN_NOT_SUPPORTED_GRAPH_PATTERN;
		w.fused = 1, w.bias = b, out = add->work.y;
		if (relu) {
			if (!out.virt || relu->work.x.uid != out.uid) return DNN_NOT_SUPPORTED_GRAPH_PATTERN;
			w.act = 1, out = relu->work.y;
		}
	} else if (relu) return DNN_NOT_SUPPORTED_GRAPH_PATTERN;
	if (out.virt || out.d.dt != w.x.d.dt) return DNN_NOT_SUPPORTED_GRAPH_PATTERN;
	w.y = out;
	int r;
	if ((r = add_real(&w, w.x)) || (r = add_real(&w, w.w)) || (r = add_real(&w, w.y))) return r;
	if (w.fused && (r = add_real(&w, w.bias))) return r;
	d->work = w;
	d->h = *hp;
	return DNN_SUCCESS;
}

// engine_need is the work area engine e needs for w, or -1 where it
// refuses the graph.
static int64_t engine_need(int e, const struct bd_work *w) {
	switch (e) {
	case 0: return 0;
	case 1: return w->fused ? -1 : 2048 + (int64_t)elems(w->w.d) % 7 * 128;
	case 2: return 8192 + (int64_t)elems(w->w.d) % 5 * 512;
	case 3: return 0;
	}
	return -1;
}

#include "dnn_sdpa.h" // the attention graph

static const int heur_a[] = {2, 1, 0, 3}, heur_fallback[] = {0};

static int heur_count(int mode) { return mode == 2 ? 1 : 4; }
static int heur_engine(int mode, int i) { return mode == 2 ? heur_fallback[i] : heur_a[i]; }

EXPORT int cudnnBackendFinalize(struct fake_bd *d) {
	FAULT("cudnnBackendFinalize");
	if (!bd_ok(d) || d->final) return DNN_BAD_PARAM;
	int r = DNN_SUCCESS;
	switch (d->type) {
	case BD_TENSOR:
		if ((r = finalize_tensor(d))) r = sdpa_finalize_tensor(d, r);
		break;
	case BD_CONV: r = finalize_conv(d); break;
	case BD_POINTWISE: {
		if (!bd_get(d, 0, NULL) || !bd_get(d, 1, NULL)) return DNN_BAD_PARAM;
		int m = bd_i32(d, 0, -1);
		if (m != 0 && m != 100 && !sdpa_pw_mode(m)) return DNN_NOT_SUPPORTED;
		d->pw_mode = m;
		break;
	}
	case BD_OP_FWD: case BD_OP_BWD_DATA: case BD_OP_BWD_FILTER: r = finalize_conv_op(d); break;
	case BD_OP_PW: {
		// The convolutions' part, and the attention graph's: either may
		// take it; one only the attention graph's the convolutions refuse.
		r = finalize_pw_op(d);
		int rs = sdpa_finalize_pw(d);
		if (r) d->work = (struct bd_work){.act = -1}, r = rs ? r : DNN_SUCCESS;
		break;
	}
	case BD_MATMUL: case BD_OP_MATMUL: case BD_REDUCTION: case BD_OP_REDUCTION: r = sdpa_finalize(d); break;
	case BD_GRAPH: r = sdpa_is_graph(d) ? sdpa_finalize_graph(d) : finalize_graph(d); break;
	case BD_ENGINEHEUR: {
		struct fake_bd *g = bd_ref(d, 201, BD_GRAPH, &r);
		if (!g) return r;
		if (!bd_get(d, 200, NULL)) return DNN_BAD_PARAM;
		int m = bd_i32(d, 200, -1);
		if (m < 0 || m > 3) return DNN_BAD_PARAM;
		d->heur_mode = m, d->work = g->work, d->h = g->h;
		sdpa_copy(d, g);
		break;
	}
	case BD_PLAN: {
		struct fake_dnn *const *hp = bd_get(d, 400, NULL);
		struct fake_bd *cfg = bd_ref(d, 401, BD_ENGINECFG, &r);
		if (!cfg) return r;
		if (!hp || !dnn_live(*hp)) return DNN_BAD_PARAM;
		if ((r = dnn_usable(*hp))) return r;
		int64_t need = cfg->sdpa ? sdpa_engine_need(cfg->engine, cfg->sdpa) : engine_need(cfg->engine, &cfg->work);
		if (need < 0) return DNN_NOT_SUPPORTED;
		d->h = *hp, d->engine = cfg->engine, d->work = cfg->work, d->ws = need;
		sdpa_copy(d, cfg);
		break;
	}
	case BD_PACK: {
		int64_t nu = 0, np = 0;
		if (!bd_get(d, 1000, &nu) || !bd_get(d, 1001, &np)) return DNN_BAD_PARAM;
		if (nu != np) return DNN_BAD_PARAM;
		break;
	}
	default: return DNN_BAD_PARAM; // engines and their configurations come from the heuristics
	}
	if (r == DNN_SUCCESS) d->final = 1;
	return r;
}

EXPORT int cudnnBackendGetAttribute(struct fake_bd *d, int name, int type, int64_t req, int64_t *n, void *v) {
	FAULT("cudnnBackendGetAttribute");
	if (!bd_ok(d)) return DNN_BAD_PARAM;
	if (!d->final) return DNN_BAD_PARAM_NOT_FINALIZED;
	if (!n && !v) return DNN_BAD_PARAM_NULL_POINTER;
	if (req < 0) return DNN_BAD_PARAM;
	switch (d->type * 10000 + name) {
	case BD_ENGINEHEUR * 10000 + 202: { // the results: engine configurations the caller made
		if (type != AT_DESC) return DNN_BAD_PARAM_ATTRIBUTE_TYPE;
		int count = d->sdpa ? sdpa_heur_count(d->heur_mode) : heur_count(d->heur_mode);
		if (req == 0 || !v) {
			if (!n) return DNN_BAD_PARAM_NULL_POINTER;
			*n = count;
			return DNN_SUCCESS;
		}
		struct fake_bd **cfgs = v;
		int64_t k = req < count ? req : count;
		for (int64_t i = 0; i < k; i++)
			if (!bd_ok(cfgs[i]) || cfgs[i]->type != BD_ENGINECFG || cfgs[i]->final) return DNN_BAD_PARAM;
		for (int64_t i = 0; i < k; i++) {
			cfgs[i]->engine = d->sdpa ? sdpa_heur_engine((int)i) : heur_engine(d->heur_mode, (int)i);
			cfgs[i]->work = d->work;
			sdpa_copy(cfgs[i], d);
			cfgs[i]->final = 1;
		}
		if (n) *n = k;
		return DNN_SUCCESS;
	}
	case BD_ENGINECFG * 10000 + 300: { // the engine, into an engine descriptor the caller made
		if (type != AT_DESC) return DNN_BAD_PARAM_ATTRIBUTE_TYPE;
		if (req < 1 || !v) return DNN_BAD_PARAM;
		struct fake_bd *e = *(struct fake_bd **)v;
		if (!bd_ok(e) || e->type != BD_ENGINE || e->final) return DNN_BAD_PARAM;
		e->engine = d->engine, e->work = d->work, e->final = 1;
		sdpa_copy(e, d);
		if (n) *n = 1;
		return DNN_SUCCESS;
	}
	case BD_ENGINE * 10000 + 1301: // the engine's global index: its rank's number
		if (type != AT_INT64) return DNN_BAD_PARAM_ATTRIBUTE_TYPE;
		if (req < 1 || !v) return DNN_BAD_PARAM;
		*(int64_t *)v = d->engine;
		if (n) *n = 1;
		return DNN_SUCCESS;
	case BD_ENGINE * 10000 + 1303: { // numerical notes
		if (type != AT_NUMERICAL_NOTE) return DNN_BAD_PARAM_ATTRIBUTE_TYPE;
		int count = d->engine == 2 ? 1 : 0;
		if (n) *n = count;
		if (v && req >= 1 && count) ((int *)v)[0] = 0; // CUDNN_NUMERICAL_NOTE_TENSOR_CORE
		return DNN_SUCCESS;
	}
	case BD_ENGINE * 10000 + 1305: { // behaviour notes
		if (type != AT_BEHAVIOR_NOTE) return DNN_BAD_PARAM_ATTRIBUTE_TYPE;
		int count = !d->sdpa && d->engine == 3 ? 1 : 0;
		if (n) *n = count;
		if (v && req >= 1 && count) ((int *)v)[0] = 0; // CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION
		return DNN_SUCCESS;
	}
	case BD_PLAN * 10000 + 402: // the work area's size
		if (type != AT_INT64) return DNN_BAD_PARAM_ATTRIBUTE_TYPE;
		if (req < 1 || !v) return DNN_BAD_PARAM;
		*(int64_t *)v = d->ws;
		if (n) *n = 1;
		return DNN_SUCCESS;
	}
	return DNN_NOT_SUPPORTED; // the fake reads back nothing else
}

EXPORT int cudnnBackendExecute(struct fake_dnn *h, struct fake_bd *plan, struct fake_bd *pack) {
	FAULT("cudnnBackendExecute");
	int r = dnn_usable(h);
	if (r) return r;
	if (!bd_ok(plan) || plan->type != BD_PLAN || !bd_ok(pack) || pack->type != BD_PACK) return DNN_BAD_PARAM;
	if (!plan->final || !pack->final) return DNN_BAD_PARAM_NOT_FINALIZED;
	if (plan->h != h) return DNN_BAD_PARAM;
	int64_t np = 0;
	const int64_t *uids = bd_get(pack, 1000, &np);
	void *const *ptrs = bd_get(pack, 1001, NULL);
	void *const *wsp = bd_get(pack, 1003, NULL);
	void *ws = wsp ? *wsp : NULL;
	if (plan->ws > 0 && !dmem_ok(ws, (size_t)plan->ws)) return DNN_BAD_PARAM;
	if (plan->sdpa) return sdpa_execute(h, plan, pack);
	if (plan->engine == 3) return DNN_EXECUTION_FAILED_CUDART;
	struct bd_work *w = &plan->work;
	void *p[4];
	for (int i = 0; i < w->n; i++) {
		int j = 0;
		while (j < np && uids[j] != w->real[i].uid) j++;
		if (j == np) return DNN_BAD_PARAM; // a tensor of the graph without its pointer
		p[i] = ptrs[j];
		if ((uintptr_t)p[i] % (uintptr_t)w->real[i].align) return DNN_BAD_PARAM_MISALIGNED;
		if (!dmem_ok(p[i], bytes(w->real[i].d))) return DNN_BAD_PARAM;
	}
	// real[] is x, w, y, then the bias (finalize_graph's order).
	struct conv_job *o = calloc(1, sizeof *o);
	*o = (struct conv_job){.kind = w->kind, .x = w->x.d, .w = w->w.d, .y = w->y.d, .c = w->c, .alpha = w->alpha, .beta = w->beta};
	switch (w->kind) {
	case J_FWD: o->src0 = p[0], o->src1 = p[1], o->dst = p[2]; break;
	case J_BWD_DATA: o->src0 = p[1], o->src1 = p[2], o->dst = p[0]; break;
	case J_BWD_FILTER: o->src0 = p[0], o->src1 = p[2], o->dst = p[1]; break;
	}
	if (w->fused) o->fused = 1, o->act = w->act, o->bias = p[3], o->bias_dt = w->bias.d.dt;
	return queue_conv(h, o);
}
