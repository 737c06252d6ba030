// The fake driver's modules and kernels (see driver.c).

#include <math.h>

#include "fakecuda.h"

// ---- modules and kernels ---------------------------------------------------
//
// The fake cannot run device code. A module is PTX text; its entries are
// matched against built-in C versions of the kernels in gocuda's
// testdata/kernels.ptx, by name and by a hash of the entry's text, so that
// a kernel of the same name with another body is not one the fake can run
// (cuModuleGetFunction fails with CUDA_ERROR_NOT_SUPPORTED, as for any
// other kernel): the fake never reports success for a kernel it did not
// execute. Its .global variables get memory. An image internal/hostcc
// compiled names a library of the kernels compiled for the host: its
// entries are those (hostkernels.c), which the fake runs on the CPU.

#define P(l, i, T) (*(T *)((l)->params + (l)->k->offset[i]))
#define DEVP(p) ((void *)(uintptr_t)(p))

static void fault(struct launch *l) { launch_fault(l, ILLEGAL_ADDRESS); }

void launch_fault(struct launch *l, int code) {
	pthread_mutex_lock(&mu);
	l->ctx->sticky = code;
	pthread_mutex_unlock(&mu);
}

static size_t threads(struct launch *l) { return (size_t)l->grid[0] * l->block[0]; }

#define VADD(NAME, T)                                                               \
	static void NAME(struct launch *l) {                                            \
		CUdeviceptr a = P(l, 0, CUdeviceptr), b = P(l, 1, CUdeviceptr), c = P(l, 2, CUdeviceptr); \
		size_t n = P(l, 3, unsigned), m = threads(l) < n ? threads(l) : n;          \
		if (!range_ok(a, m * sizeof(T)) || !range_ok(b, m * sizeof(T)) || !range_ok(c, m * sizeof(T))) { \
			if (m) fault(l);                                                        \
			return;                                                                 \
		}                                                                           \
		for (size_t i = 0; i < m; i++) ((T *)DEVP(c))[i] = ((T *)DEVP(a))[i] + ((T *)DEVP(b))[i]; \
	}
VADD(vadd_f32, float)
VADD(vadd_f64, double)
VADD(vadd_s32, int32_t)

static void k_empty(struct launch *l) { (void)l; }

static void k_saxpy(struct launch *l) {
	float a = P(l, 0, float);
	CUdeviceptr x = P(l, 1, CUdeviceptr), y = P(l, 2, CUdeviceptr);
	size_t n = P(l, 3, unsigned), m = threads(l) < n ? threads(l) : n;
	if (m && (!range_ok(x, m * 4) || !range_ok(y, m * 4))) return fault(l);
	for (size_t i = 0; i < m; i++) ((float *)DEVP(y))[i] = a * ((float *)DEVP(x))[i] + ((float *)DEVP(y))[i];
}

static void k_affine(struct launch *l) {
	float scale = P(l, 0, float);
	int32_t offset = *(int32_t *)(l->params + l->k->offset[0] + 4);
	CUdeviceptr x = P(l, 1, CUdeviceptr), y = P(l, 2, CUdeviceptr);
	size_t n = P(l, 3, unsigned), m = threads(l) < n ? threads(l) : n;
	if (m && (!range_ok(x, m * 4) || !range_ok(y, m * 4))) return fault(l);
	for (size_t i = 0; i < m; i++) ((float *)DEVP(y))[i] = ((float *)DEVP(x))[i] * scale + (float)offset;
}

static void k_reverse(struct launch *l) {
	CUdeviceptr d = P(l, 0, CUdeviceptr);
	size_t n = l->block[0];
	if (l->shared < n * 4 || !range_ok(d, n * 4)) return fault(l);
	int32_t *v = DEVP(d);
	for (unsigned g = 0; g < l->grid[0]; g++)
		for (size_t i = 0; i < n / 2; i++) {
			int32_t t = v[i];
			v[i] = v[n - 1 - i];
			v[n - 1 - i] = t;
		}
}

static void k_oob_write(struct launch *l) { fault(l); }

// Package compute's kernels that the fake runs, as its tests' stand-in
// compiler emits them (compute/testdata/standin.ptx): a grid-stride loop
// covers every element whatever the grid.
static void k_add_float32(struct launch *l) {
	CUdeviceptr a = P(l, 0, CUdeviceptr), b = P(l, 1, CUdeviceptr), y = P(l, 2, CUdeviceptr);
	long long n = P(l, 3, long long);
	if (n < 0) return fault(l);
	if (n && (!range_ok(a, n * 4) || !range_ok(b, n * 4) || !range_ok(y, n * 4))) return fault(l);
	for (long long i = 0; i < n; i++) ((float *)DEVP(y))[i] = ((float *)DEVP(a))[i] + ((float *)DEVP(b))[i];
}

// compute's reduction layouts (compute/layout.go), each run as the
// generated kernel folds, in the order the C loops here take: a launch
// whose grid misses elements gives a result that misses them too.

// rows_ok checks a rows launch: group lanes of a warp a row (a power of
// two to 32, dividing the block) or 0 (a block a row, a multiple of 32
// threads); it returns the rows a step of the grid takes.
static long long rows_step(struct launch *l, int group) {
	unsigned t = l->block[0];
	if (l->block[1] != 1 || t == 0 || t > 1024 || t % 32) return 0;
	if (group == 0) return l->grid[0];
	if (group < 1 || group > 32 || (group & (group - 1))) return 0;
	return (long long)l->grid[0] * (t / group);
}

// k_sum_float32_rows folds each row of x into out (the grid-stride loop
// over rows covers every row whatever the grid).
static void k_sum_float32_rows(struct launch *l) {
	CUdeviceptr x = P(l, 0, CUdeviceptr), out = P(l, 1, CUdeviceptr);
	long long rows = P(l, 2, long long), cols = P(l, 3, long long);
	if (rows < 0 || cols < 0 || !rows_step(l, P(l, 4, int)) || (rows && cols && !range_ok(x, rows * cols * 4)) || (rows && !range_ok(out, rows * 4)))
		return fault(l);
	for (long long r = 0; r < rows; r++) {
		float v = 0;
		for (long long c = 0; c < cols; c++) v += ((float *)DEVP(x))[r * cols + c];
		((float *)DEVP(out))[r] = v;
	}
}

// counters_ok checks the counters a kernel that folds its partial
// results itself is given (0: none): in range, and zero, as the generated
// kernels need them (each last block sets its own back to zero).
static int counters_ok(CUdeviceptr counters, long long n) {
	if (!counters) return 1;
	if (!range_ok(counters, n * 4)) return 0;
	for (long long i = 0; i < n; i++)
		if (((uint32_t *)DEVP(counters))[i]) return 0;
	return 1;
}

// k_sum_float32_split: block (k, r) sums chunk k of row r into
// partial[k * rows + r]; gridDim.y must be the rows. With counters, the
// last block of each row sums its chunks into out[r].
static void k_sum_float32_split(struct launch *l) {
	CUdeviceptr x = P(l, 0, CUdeviceptr), partial = P(l, 1, CUdeviceptr), out = P(l, 5, CUdeviceptr), counters = P(l, 6, CUdeviceptr);
	long long rows = P(l, 2, long long), cols = P(l, 3, long long), chunk = P(l, 4, long long), chunks = l->grid[0];
	if (rows != l->grid[1] || cols < 0 || chunk < 1 || l->block[0] % 32 || !range_ok(x, rows * cols * 4) || !range_ok(partial, chunks * rows * 4))
		return fault(l);
	if (!counters_ok(counters, rows) || (counters && !range_ok(out, rows * 4))) return fault(l);
	for (long long r = 0; r < rows; r++) {
		float total = 0;
		for (long long k = 0; k < chunks; k++) {
			float v = 0;
			for (long long c = k * chunk; c < (k + 1) * chunk && c < cols; c++) v += ((float *)DEVP(x))[r * cols + c];
			((float *)DEVP(partial))[k * rows + r] = v;
			total += v;
		}
		if (counters) ((float *)DEVP(out))[r] = total;
	}
}

// k_sum_float32_chunks: out[o] = the sum of partial[k * outs + o].
static void k_sum_float32_chunks(struct launch *l) {
	CUdeviceptr partial = P(l, 0, CUdeviceptr), out = P(l, 2, CUdeviceptr);
	long long chunks = P(l, 1, long long), outs = P(l, 3, long long);
	if (chunks < 1 || outs < 1 || l->block[0] % 32 || !range_ok(partial, chunks * outs * 4) || !range_ok(out, outs * 4)) return fault(l);
	for (long long o = 0; o < outs; o++) {
		float v = 0;
		for (long long k = 0; k < chunks; k++) v += ((float *)DEVP(partial))[k * outs + o];
		((float *)DEVP(out))[o] = v;
	}
}

// k_sum_float32_cols folds each column of each chunk of rows as the
// generated kernel does: 8 lanes of rows, lane y of chunk k taking rows
// 8k+y, 8k+y + 8·chunks, ..., the lanes folded in order.
static void k_sum_float32_cols(struct launch *l) {
	CUdeviceptr x = P(l, 0, CUdeviceptr), out = P(l, 1, CUdeviceptr), partial = P(l, 2, CUdeviceptr), counters = P(l, 5, CUdeviceptr);
	long long rows = P(l, 3, long long), cols = P(l, 4, long long), chunks = l->grid[1];
	if (rows < 0 || cols < 0 || l->block[0] != 32 || l->block[1] != 8) return fault(l);
	if ((rows && cols && !range_ok(x, rows * cols * 4)) || (chunks == 1 ? !range_ok(out, cols * 4) : !range_ok(partial, chunks * cols * 4)))
		return fault(l);
	if (chunks > 1 && (!counters_ok(counters, (cols + 31) / 32) || (counters && !range_ok(out, cols * 4)))) return fault(l);
	const float *px = DEVP(x);
	for (long long c = 0; c < cols; c++) {
		float total = 0;
		for (long long k = 0; k < chunks; k++) {
			float v = 0;
			for (int y = 0; y < 8; y++) {
				float lane = 0;
				for (long long r = k * 8 + y; r < rows; r += 8 * chunks) lane += px[r * cols + c];
				v = y ? v + lane : lane;
			}
			if (chunks == 1) ((float *)DEVP(out))[c] = v;
			else ((float *)DEVP(partial))[k * cols + c] = v;
			total += v;
		}
		if (chunks > 1 && counters) ((float *)DEVP(out))[c] = total;
	}
}

// k_sum_float32_short: a thread down each column (the grid-stride loop
// over columns covers every one whatever the grid).
static void k_sum_float32_short(struct launch *l) {
	CUdeviceptr x = P(l, 0, CUdeviceptr), out = P(l, 1, CUdeviceptr);
	long long rows = P(l, 2, long long), cols = P(l, 3, long long);
	if (rows < 0 || cols < 1 || l->block[0] % 32 || !range_ok(x, rows * cols * 4) || !range_ok(out, cols * 4)) return fault(l);
	for (long long c = 0; c < cols; c++) {
		float v = 0;
		for (long long r = 0; r < rows; r++) v += ((float *)DEVP(x))[r * cols + c];
		((float *)DEVP(out))[c] = v;
	}
}

// k_sum_float32_narrow: block b takes rows b*per + g, + blocks*per, ...
// (per = blockDim.x / cols row groups g), into out with one block, else
// into partial[b * cols + c].
static void k_sum_float32_narrow(struct launch *l) {
	CUdeviceptr x = P(l, 0, CUdeviceptr), out = P(l, 1, CUdeviceptr), partial = P(l, 2, CUdeviceptr), counters = P(l, 5, CUdeviceptr);
	long long rows = P(l, 3, long long), cols = P(l, 4, long long), blocks = l->grid[0];
	if (rows < 0 || cols < 1 || l->block[0] > 1024 || cols > l->block[0] || l->block[1] != 1 || l->grid[1] != 1) return fault(l);
	long long per = l->block[0] / cols;
	if (!range_ok(x, rows * cols * 4) || (blocks == 1 ? !range_ok(out, cols * 4) : !range_ok(partial, blocks * cols * 4))) return fault(l);
	if (blocks > 1 && (!counters_ok(counters, 1) || (counters && !range_ok(out, cols * 4)))) return fault(l);
	for (long long c = 0; c < cols; c++) {
		float total = 0;
		for (long long b = 0; b < blocks; b++) {
			float v = 0;
			for (long long g = 0; g < per; g++)
				for (long long r = b * per + g; r < rows; r += blocks * per) v += ((float *)DEVP(x))[r * cols + c];
			if (blocks == 1) ((float *)DEVP(out))[c] = v;
			else ((float *)DEVP(partial))[b * cols + c] = v;
			total += v;
		}
		if (blocks > 1 && counters) ((float *)DEVP(out))[c] = total;
	}
}

// compute's Examples' kernels (compute/testdata/standin.ptx).
static void k_axpy(struct launch *l) {
	float a = P(l, 0, float);
	CUdeviceptr x = P(l, 1, CUdeviceptr), y = P(l, 2, CUdeviceptr);
	long long n = P(l, 3, long long);
	if (n < 0 || (n && (!range_ok(x, n * 4) || !range_ok(y, n * 4)))) return fault(l);
	for (long long i = 0; i < n; i++) ((float *)DEVP(y))[i] = a * ((float *)DEVP(x))[i] + ((float *)DEVP(y))[i];
}

// k_sumsq_rows: out[r] = the sum, in double, of the squares of row r.
static void k_sumsq_rows(struct launch *l) {
	CUdeviceptr x = P(l, 0, CUdeviceptr), out = P(l, 1, CUdeviceptr);
	long long rows = P(l, 2, long long), cols = P(l, 3, long long);
	if (rows < 0 || cols < 0 || !rows_step(l, P(l, 4, int)) || (rows && cols && !range_ok(x, rows * cols * 4)) || (rows && !range_ok(out, rows * 8)))
		return fault(l);
	for (long long r = 0; r < rows; r++) {
		double v = 0;
		for (long long c = 0; c < cols; c++) v += (double)((float *)DEVP(x))[r * cols + c] * ((float *)DEVP(x))[r * cols + c];
		((double *)DEVP(out))[r] = v;
	}
}

// k_row_sums is ExampleNewRawKernel's kernel: block b sums row b of
// cols elements, lane t of its 32 threads the elements t, t + 32, ...,
// and lane 0 adds the others' sums to its own in order. Its shared
// memory holds a sum a lane: a block of other than 32 threads would
// write past it or read sums no lane wrote.
static void k_row_sums(struct launch *l) {
	CUdeviceptr x = P(l, 0, CUdeviceptr), out = P(l, 1, CUdeviceptr);
	long long cols = P(l, 2, int), rows = l->grid[0];
	if (l->block[0] != 32 || l->block[1] != 1 || l->block[2] != 1) return fault(l);
	if ((cols > 0 && (rows * cols > INT32_MAX || !range_ok(x, rows * cols * 4))) || !range_ok(out, rows * 4)) return fault(l);
	const float *px = DEVP(x);
	for (long long b = 0; b < rows; b++) {
		float total = 0;
		for (int t = 0; t < 32; t++) {
			float v = 0;
			for (long long j = t; j < cols; j += 32) v += px[b * cols + j];
			total = t ? total + v : v;
		}
		((float *)DEVP(out))[b] = total;
	}
}

// bf16 and bf16_float are compute's gocuda_f32_to_bf16 and
// gocuda_bf16_to_f32: to nearest, ties to even, a NaN made quiet.
static uint16_t bf16(float f) {
	uint32_t b;
	memcpy(&b, &f, 4);
	if ((b & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((b >> 16) | 0x40u);
	uint32_t r = b >> 16, rem = b & 0xffffu;
	if (rem > 0x8000u || (rem == 0x8000u && (r & 1u))) r++;
	return (uint16_t)r;
}

static float bf16_float(uint16_t h) {
	uint32_t b = (uint32_t)h << 16;
	float f;
	memcpy(&f, &b, 4);
	return f;
}

static void k_cast_float32_bfloat16(struct launch *l) {
	CUdeviceptr x = P(l, 0, CUdeviceptr), y = P(l, 1, CUdeviceptr);
	long long n = P(l, 2, long long);
	if (n < 0 || (n && (!range_ok(x, n * 4) || !range_ok(y, n * 2)))) return fault(l);
	for (long long i = 0; i < n; i++) ((uint16_t *)DEVP(y))[i] = bf16(((float *)DEVP(x))[i]);
}

// k_softmax_bfloat16 takes each row's largest element, then e^(x - max)
// over the row's sum of them, in float; a NaN in a row makes it all NaN.
// dst may be src: a row is read whole before it is written.
static void k_softmax_bfloat16(struct launch *l) {
	CUdeviceptr src = P(l, 0, CUdeviceptr), dst = P(l, 1, CUdeviceptr);
	long long rows = P(l, 2, long long), cols = P(l, 3, long long);
	int group = P(l, 4, int), cached = P(l, 5, int);
	// cached: a block per row keeps its row (bfloat16), a thread per row
	// stages the block's rows (in float).
	if (!rows_step(l, group) || (cached && (group > 1 || (group == 0 && l->shared < cols * 2) || (group == 1 && l->shared < l->block[0] * cols * 4))))
		return fault(l);
	if (rows < 0 || cols < 0 || (rows && cols && (!range_ok(src, rows * cols * 2) || !range_ok(dst, rows * cols * 2)))) return fault(l);
	for (long long r = 0; r < rows; r++) {
		const uint16_t *in = (const uint16_t *)DEVP(src) + r * cols;
		uint16_t *out = (uint16_t *)DEVP(dst) + r * cols;
		float m = -INFINITY, sum = 0;
		for (long long c = 0; c < cols; c++) {
			float v = bf16_float(in[c]);
			if (v != v || m != m) m = NAN;
			else if (v > m) m = v;
		}
		for (long long c = 0; c < cols; c++) sum += expf(bf16_float(in[c]) - m);
		for (long long c = 0; c < cols; c++) out[c] = bf16(expf(bf16_float(in[c]) - m) / sum);
	}
}

// k_softmax_bfloat16_staged is Softmax's kernel of rows of 1 to 16
// elements, a thread a row (NAME_staged): each block stages span rows at
// a time in shared memory (the span's elements, as far past a 16-byte
// boundary as src's span, which the launch gives 16 bytes more for),
// grid-striding over the spans, so every row is covered whatever the
// grid. Its arithmetic is the generated kernel's: the largest (a NaN
// its own largest), the sum of e^(x - m) with 1 where x is m, and each
// e^(x - m) times the sum's reciprocal: a NaN in a row makes it all
// NaN, as does a row of only -Inf; a row whose largest is +Inf is NaN
// where +Inf and 0 elsewhere (Softmax's documented results). dst may be
// src: a row is read whole before it is written.
static void k_softmax_bfloat16_staged(struct launch *l) {
	CUdeviceptr src = P(l, 0, CUdeviceptr), dst = P(l, 1, CUdeviceptr);
	long long rows = P(l, 2, long long), cols = P(l, 3, long long), span = P(l, 4, long long);
	// cols past 16 (32 bytes) is the kernel's __trap; a span of no rows
	// would never end its grid-stride loop; rows past 2^56 would overflow
	// the byte counts below (and no memory holds them).
	if (rows < 0 || rows > (1LL << 56) || cols < 1 || cols > 16 || span < 1) return fault(l);
	if (rows && (!range_ok(src, rows * cols * 2) || !range_ok(dst, rows * cols * 2))) return fault(l);
	for (long long base = 0; base < rows; base += span) {
		long long nr = rows - base < span ? rows - base : span;
		if ((src + base * cols * 2) % 16 + nr * cols * 2 > l->shared) return fault(l);
	}
	for (long long r = 0; r < rows; r++) {
		const uint16_t *in = (const uint16_t *)DEVP(src) + r * cols;
		uint16_t *out = (uint16_t *)DEVP(dst) + r * cols;
		float xs[16], m = -INFINITY, sum = 0;
		for (long long c = 0; c < cols; c++) {
			xs[c] = bf16_float(in[c]);
			if (xs[c] != xs[c] || xs[c] > m) m = xs[c];
		}
		for (long long c = 0; c < cols; c++) {
			float e = expf(xs[c] - m);
			sum += xs[c] == m ? 1.0f : e;
			xs[c] = e;
		}
		float d = 1 / sum;
		for (long long c = 0; c < cols; c++) out[c] = bf16(xs[c] * d);
	}
}

static void k_sum_bfloat16_rows(struct launch *l) {
	CUdeviceptr x = P(l, 0, CUdeviceptr), out = P(l, 1, CUdeviceptr);
	long long rows = P(l, 2, long long), cols = P(l, 3, long long);
	if (!rows_step(l, P(l, 4, int)) || rows < 0 || cols < 0 || (rows && cols && !range_ok(x, rows * cols * 2)) || (rows && !range_ok(out, rows * 2))) return fault(l);
	for (long long r = 0; r < rows; r++) {
		float v = 0;
		for (long long c = 0; c < cols; c++) v += bf16_float(((uint16_t *)DEVP(x))[r * cols + c]);
		((uint16_t *)DEVP(out))[r] = bf16(v);
	}
}

// testdata/launch.ptx, one-dimensional grids: a block's rank in its
// cluster is its index modulo the cluster's width.
static void k_cluster_info(struct launch *l) {
	CUdeviceptr out = P(l, 0, CUdeviceptr);
	unsigned n = l->grid[0], c = l->cluster[0];
	if (!range_ok(out, (size_t)n * 16)) {
		fault(l);
		return;
	}
	uint32_t *o = DEVP(out);
	for (unsigned b = 0; b < n; b++) o[4 * b] = b % c, o[4 * b + 1] = b / c, o[4 * b + 2] = c, o[4 * b + 3] = b;
}

static void k_cluster_exchange(struct launch *l) {
	CUdeviceptr out = P(l, 0, CUdeviceptr);
	unsigned n = l->grid[0], c = l->cluster[0];
	if (!range_ok(out, (size_t)n * 4)) {
		fault(l);
		return;
	}
	uint32_t *o = DEVP(out);
	for (unsigned b = 0; b < n; b++) o[b] = (b / c * c + (b % c + 1) % c) * 1000 + 7;
}

static void k_grid_sync(struct launch *l) {
	CUdeviceptr flags = P(l, 0, CUdeviceptr), counter = P(l, 1, CUdeviceptr), out = P(l, 2, CUdeviceptr);
	unsigned n = l->grid[0];
	if (!range_ok(flags, (size_t)n * 4) || !range_ok(counter, 4) || !range_ok(out, (size_t)n * 4)) {
		fault(l);
		return;
	}
	uint32_t *f = DEVP(flags), *o = DEVP(out);
	for (unsigned b = 0; b < n; b++) f[b] = 1;
	*(uint32_t *)DEVP(counter) += n;
	for (unsigned b = 0; b < n; b++) {
		uint32_t sum = 0;
		for (unsigned i = 0; i < n; i++) sum += f[i];
		o[b] = sum;
	}
}

static void k_chain_step(struct launch *l) {
	CUdeviceptr x = P(l, 0, CUdeviceptr);
	size_t n = P(l, 1, unsigned), m = threads(l) < n ? threads(l) : n;
	if (m && !range_ok(x, m * 4)) return fault(l);
	for (size_t i = 0; i < m; i++) ((uint32_t *)DEVP(x))[i]++;
}

// gocuda's set-condition kernel (graphnode.go): sets a conditional
// handle from a word of device memory, which it first counts down by one
// (not below 0) when decrement is set.
static void k_set_condition(struct launch *l) {
	uint64_t handle = P(l, 0, uint64_t);
	CUdeviceptr word = P(l, 1, CUdeviceptr);
	unsigned decrement = P(l, 2, unsigned);
	if (!range_ok(word, 4)) return fault(l);
	uint32_t *w = DEVP(word);
	if (decrement && *w) --*w;
	if (!set_condition(handle, *w)) fault(l);
}

// package cusolver's batched transposes (cusolver/transpose.go's
// transposePTX): for each of count packed n×n matrices of esize bytes
// (4, 8 or 16; vec: a 16-byte element moves in one 16-byte load and
// store, else as two 8-byte halves), the elements (r, q) of one triangle
// of src read column-major, its upper (r <= q) where lower is 0, its
// lower (r >= q) where it is 1, go from src's q*n + r to dst's r*n + q;
// nothing else of dst is written. The matrices the grid reaches must lie
// in device memory, aligned to the kernel's loads (4 bytes; 8 for 8, and
// for 16 without vec; 16 for 16 with vec), src and dst must not overlap
// (the threads would race), and n must be 1 to 65535 (n*n fits 32 bits).
// transpose_args checks them for the mats first matrices (clipped to
// count), whole, and says whether to go on.
struct transpose_args {
	char *dst;
	const char *src;
	uint64_t n, nn, count, esize, lower;
};

static int transpose_args(struct launch *l, uint64_t mats, struct transpose_args *a) {
	CUdeviceptr dst = P(l, 0, CUdeviceptr), src = P(l, 1, CUdeviceptr);
	uint64_t n = P(l, 2, unsigned), count = P(l, 3, unsigned), esize = P(l, 4, unsigned), vec = P(l, 5, unsigned);
	a->lower = P(l, 6, unsigned);
	mats = mats < count ? mats : count;
	if (!n || !mats) return 0;
	uint64_t align = esize < 8 ? esize : esize == 16 && vec ? 16 : 8, bytes = mats * n * n * esize;
	if ((esize != 4 && esize != 8 && esize != 16) || n > 65535 || a->lower > 1 || src % align || dst % align) return fault(l), 0;
	if (!range_ok(src, bytes) || !range_ok(dst, bytes) || (src < dst + bytes && dst < src + bytes)) return fault(l), 0;
	a->dst = DEVP(dst), a->src = DEVP(src), a->n = n, a->nn = n * n, a->count = mats, a->esize = esize;
	return 1;
}

// transpose_move moves element (r, q) of matrix m, where it is in the
// triangle: the kernel's entries test each element they reach.
static void transpose_move(const struct transpose_args *a, uint64_t m, uint64_t r, uint64_t q) {
	if (r >= a->n || q >= a->n || (a->lower ? r < q : r > q)) return;
	memcpy(a->dst + (m * a->nn + r * a->n + q) * a->esize, a->src + (m * a->nn + q * a->n + r) * a->esize, a->esize);
}

// k_transpose_batch, a thread an element of the triangle: the thread of
// index t = ctaid.y*ntid.x + tid.x (below n(n+1)/2) of matrix m =
// ctaid.x*ntid.z + tid.z (below count) takes the triangle's element t
// row by row, (u, v) with t = u(u+1)/2 + v, v <= u: src's (v, u) for the
// upper triangle, (n-1-v, n-1-u) for the lower one. The grid's y and
// the block's x past 1 or y past 1 would be threads the kernel does not
// index, and fault.
static void k_transpose_batch(struct launch *l) {
	struct transpose_args a;
	if (l->grid[2] != 1 || l->block[1] != 1) return fault(l);
	if (!transpose_args(l, (uint64_t)l->grid[0] * l->block[2], &a)) return;
	uint64_t tri = a.n * (a.n + 1) / 2, ts = (uint64_t)l->grid[1] * l->block[0];
	ts = ts < tri ? ts : tri;
	for (uint64_t m = 0; m < a.count; m++)
		for (uint64_t t = 0, u = 0, v = 0; t < ts; t++) {
			if (a.lower)
				transpose_move(&a, m, a.n - 1 - v, a.n - 1 - u);
			else
				transpose_move(&a, m, v, u);
			if (++v > u) u++, v = 0;
		}
}

// k_transpose_tiled, a block of 32x8 threads a 32x32 tile of the
// triangle's t(t+1)/2, t = ceil(n/32): block (m, y, z) takes matrix m's
// tile idx = z*nctaid.y + y (below t(t+1)/2), (I, J) row by row as
// k_transpose_batch's elements, its rows from I*32 and columns from J*32
// for the lower triangle, rows from J*32 and columns from I*32 for the
// upper one, the elements in n and in the triangle. Its threads index
// the tile and its shared memory as 32x8: another block shape would
// leave elements unmoved or write past the tile, and faults here.
static void k_transpose_tiled(struct launch *l) {
	struct transpose_args a;
	if (l->block[0] != 32 || l->block[1] != 8 || l->block[2] != 1) return fault(l);
	if (!transpose_args(l, l->grid[0], &a)) return;
	uint64_t t = (a.n + 31) / 32, tiles = t * (t + 1) / 2, ts = (uint64_t)l->grid[1] * l->grid[2];
	ts = ts < tiles ? ts : tiles;
	for (uint64_t m = 0; m < a.count; m++)
		for (uint64_t idx = 0, I = 0, J = 0; idx < ts; idx++) {
			uint64_t r0 = (a.lower ? I : J) * 32, q0 = (a.lower ? J : I) * 32;
			for (uint64_t q = q0; q < q0 + 32; q++)
				for (uint64_t r = r0; r < r0 + 32; r++) transpose_move(&a, m, r, q);
			if (++J > I) I++, J = 0;
		}
}

// The hashes are entry_hash's of testdata/kernels.ptx (and of
// compute/testdata/standin.ptx): a change to a kernel
// there needs its C version and hash changed here (TestFakeRunsOnlyItsKernels
// says which hash it found).
static const struct kernel kernels[] = {
	{"empty", 0x74f83254863a21f7ull, 0, {0}, {0}, k_empty},
	{"vadd_f32", 0xb32353755978f392ull, 4, {8, 8, 8, 4}, {0, 8, 16, 24}, vadd_f32},
	{"vadd_f64", 0xe5865fd9ba3028baull, 4, {8, 8, 8, 4}, {0, 8, 16, 24}, vadd_f64},
	{"vadd_s32", 0x3d88673e9b17aaa0ull, 4, {8, 8, 8, 4}, {0, 8, 16, 24}, vadd_s32},
	{"saxpy", 0xe86a14d9d820939eull, 4, {4, 8, 8, 4}, {0, 8, 16, 24}, k_saxpy},
	{"affine", 0x7d7b4421a24517c2ull, 4, {8, 8, 8, 4}, {0, 8, 16, 24}, k_affine},
	{"reverse", 0x8719c7fe39ac8a03ull, 1, {8}, {0}, k_reverse},
	{"oob_write", 0x62bac678defec713ull, 1, {8}, {0}, k_oob_write},
	// compute/testdata/standin.ptx
	{"add_float32", 0x9be63b4d5e294918ull, 4, {8, 8, 8, 8}, {0, 8, 16, 24}, k_add_float32},
	{"reduce_sum_float32_rows", 0xd823f7bcace3acbbull, 5, {8, 8, 8, 8, 4}, {0, 8, 16, 24, 32}, k_sum_float32_rows},
	{"reduce_sum_float32_split", 0x2385ec1b062ae7aaull, 7, {8, 8, 8, 8, 8, 8, 8}, {0, 8, 16, 24, 32, 40, 48}, k_sum_float32_split},
	{"reduce_sum_float32_chunks", 0xa7c5c326fa83f563ull, 5, {8, 8, 8, 8, 8}, {0, 8, 16, 24, 32}, k_sum_float32_chunks},
	{"reduce_sum_float32_cols", 0x254a9f566bce4b22ull, 6, {8, 8, 8, 8, 8, 8}, {0, 8, 16, 24, 32, 40}, k_sum_float32_cols},
	{"reduce_sum_float32_short", 0x75489a119d6f51c2ull, 4, {8, 8, 8, 8}, {0, 8, 16, 24}, k_sum_float32_short},
	{"reduce_sum_float32_narrow", 0x3e83e51a3a2184caull, 6, {8, 8, 8, 8, 8, 8}, {0, 8, 16, 24, 32, 40}, k_sum_float32_narrow},
	{"axpy", 0x1a5389db0f2315faull, 4, {4, 8, 8, 8}, {0, 8, 16, 24}, k_axpy},
	{"sumsq_rows", 0xd8ebbcfcda4fe577ull, 5, {8, 8, 8, 8, 4}, {0, 8, 16, 24, 32}, k_sumsq_rows},
	{"row_sums", 0x284b67e09bef6cacull, 3, {8, 8, 4}, {0, 8, 16}, k_row_sums},
	{"cast_float32_bfloat16", 0x78ef5ed93b5957a6ull, 3, {8, 8, 8}, {0, 8, 16}, k_cast_float32_bfloat16},
	{"softmax_bfloat16", 0xdf4367bd4a43902cull, 6, {8, 8, 8, 8, 4, 4}, {0, 8, 16, 24, 32, 36}, k_softmax_bfloat16},
	{"softmax_bfloat16_staged", 0x15c027446726b5b9ull, 5, {8, 8, 8, 8, 8}, {0, 8, 16, 24, 32}, k_softmax_bfloat16_staged},
	{"reduce_sum_bfloat16_rows", 0x37c4989918f65980ull, 5, {8, 8, 8, 8, 4}, {0, 8, 16, 24, 32}, k_sum_bfloat16_rows},
	// testdata/launch.ptx
	{"cluster_info", 0x0d74ed981c005dffull, 1, {8}, {0}, k_cluster_info},
	{"cluster_exchange", 0x480599213be00a67ull, 1, {8}, {0}, k_cluster_exchange},
	{"grid_sync", 0x4276a76596a75091ull, 3, {8, 8, 8}, {0, 8, 16}, k_grid_sync},
	// graphnode.go's setConditionPTX
	{"gocuda_set_condition", 0xa7d32088704212daull, 3, {8, 8, 4}, {0, 8, 16}, k_set_condition},
	{"chain_step", 0x91c54bdfd84f3944ull, 2, {8, 4}, {0, 8}, k_chain_step},
	// cusolver/transpose.go's transposePTX
	{"gocuda_transpose_batch", 0x3448029c23c7ff58ull, 7, {8, 8, 4, 4, 4, 4, 4}, {0, 8, 16, 20, 24, 28, 32}, k_transpose_batch},
	{"gocuda_transpose_tiled", 0x90a7702699f3f602ull, 7, {8, 8, 4, 4, 4, 4, 4}, {0, 8, 16, 20, 24, 28, 32}, k_transpose_tiled},
};

void run_kernel(struct launch *l) { l->k->run(l); }

struct fake_function {
	char name[256]; // mangled C++ names run long
	const struct kernel *k; // NULL: in the module, but the fake has no C version of it
	uint64_t hash;          // entry_hash of its text
	int max_dynamic_shared;
	int non_portable_cluster; // CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED
};

// entry_hash is FNV-1a of an entry's text, from ".entry" to the "}" that
// starts a line, leaving out white space.
static uint64_t entry_hash(const char *p) {
	const char *end = strstr(p, "\n}");
	end = end ? end + 2 : p + strlen(p);
	uint64_t h = 0xcbf29ce484222325ull;
	for (; p < end; p++) {
		if (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n') continue;
		h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
	}
	return h;
}

struct global_var {
	char name[64];
	CUdeviceptr ptr;
	size_t size;
};

struct fake_module {
	CUcontext ctx;
	int nfuncs, nglobals;
	struct fake_function funcs[32];
	struct global_var globals[16];
	struct fake_module *next;
};
static struct fake_module *modules;

static void jit_log(unsigned n, const int *options, void **values, int which, const char *msg) {
	// which: 5 error log, 3 info log; sizes follow at which+1.
	char *buf = NULL;
	size_t size = 0;
	for (unsigned i = 0; i < n; i++) {
		if (options[i] == which) buf = values[i];
		if (options[i] == which + 1) size = (size_t)(uintptr_t)values[i];
	}
	if (buf && size) snprintf(buf, size, "%s", msg);
}

static size_t type_size(const char *t) {
	if (!strncmp(t, ".u64", 4) || !strncmp(t, ".s64", 4) || !strncmp(t, ".f64", 4) || !strncmp(t, ".b64", 4)) return 8;
	if (!strncmp(t, ".u16", 4) || !strncmp(t, ".s16", 4) || !strncmp(t, ".b16", 4) || !strncmp(t, ".f16", 4)) return 2;
	if (!strncmp(t, ".u8", 3) || !strncmp(t, ".s8", 3) || !strncmp(t, ".b8", 3)) return 1;
	return 4;
}

static struct fake_module *parse_module(const char *text);

// check_image refuses what the fake cannot load: binaries, and text
// without PTX's directives, with the JIT's log.
static CUresult check_image(const void *image, unsigned n, int *options, void **values) {
	const char *text = image;
	if (!memcmp(text, "\x7f" "ELF", 4) || *(const uint32_t *)image == 0xBA55ED50) {
		jit_log(n, options, values, CU_JIT_ERROR_LOG_BUFFER, "the fake driver runs no device code: only PTX of gocuda's test kernels");
		return INVALID_IMAGE;
	}
	if (!strstr(text, ".version") || !strstr(text, ".target")) {
		jit_log(n, options, values, CU_JIT_ERROR_LOG_BUFFER, "ptxas fatal   : (fake driver) not PTX: no .version or .target directive");
		return INVALID_PTX;
	}
	if (!host_image_ok(text)) {
		jit_log(n, options, values, CU_JIT_ERROR_LOG_BUFFER, "(fake driver) the host-compiled library this image names cannot be loaded");
		return INVALID_IMAGE;
	}
	return SUCCESS;
}

EXPORT CUresult cuModuleLoadDataEx(CUmodule *pm, const void *image, unsigned n, int *options, void **values) {
	FAULT("cuModuleLoadDataEx");
	REQUIRE_CTX();
	if (!pm || !image || (n && (!options || !values))) return INVALID_VALUE;
	const char *text = image;
	CUresult r = check_image(image, n, options, values);
	if (r != SUCCESS) return r;
	struct fake_module *m = parse_module(text);
	jit_log(n, options, values, CU_JIT_INFO_LOG_BUFFER, "fake JIT: loaded");
	pthread_mutex_lock(&mu);
	m->next = modules;
	modules = m;
	pthread_mutex_unlock(&mu);
	*pm = m;
	return SUCCESS;
}

// parse_module makes a module of PTX text in the current context: its
// entries, matched against the fake's C kernels, and its globals, given
// memory. The caller puts it on the list.
static struct fake_module *parse_module(const char *text) {
	struct fake_module *m = calloc(1, sizeof *m);
	m->ctx = current;
	for (const char *p = text; (p = strstr(p, ".entry")) != NULL && m->nfuncs < 32; p += 6) {
		const char *q = p + 6;
		while (*q == ' ' || *q == '\t') q++;
		size_t len = strcspn(q, " \t(\n");
		struct fake_function *f = &m->funcs[m->nfuncs++];
		snprintf(f->name, sizeof f->name, "%.*s", (int)len, q);
		f->max_dynamic_shared = 48 << 10;
		f->hash = entry_hash(p);
		for (size_t k = 0; k < sizeof kernels / sizeof kernels[0]; k++)
			if (!strcmp(kernels[k].name, f->name) && kernels[k].hash == f->hash) f->k = &kernels[k];
		if (!f->k) f->k = host_kernel(text, f->name); // compiled for the host (hostkernels.c)?
	}
	for (const char *p = text; (p = strstr(p, ".global")) != NULL && m->nglobals < 16; p += 7) {
		// A declaration's .global starts a word (".visible .global ...");
		// in code it follows an instruction: ld.global, cvta.to.global.
		if (p > text && p[-1] != ' ' && p[-1] != '\t' && p[-1] != '\n') continue;
		const char *end = strchr(p, ';');
		if (!end) break;
		// The last token before ';' is NAME or NAME[COUNT]; the type is the
		// last token starting with '.'.
		char decl[256];
		snprintf(decl, sizeof decl, "%.*s", (int)(end - p), p);
		// strtok_r: modules load on many threads at once, and strtok's
		// state is the process's (TestHammer once found a global under
		// another module's name).
		char *last = NULL, *type = ".b32", *save = NULL;
		for (char *t = strtok_r(decl, " \t\n", &save); t; t = strtok_r(NULL, " \t\n", &save)) {
			if (t[0] == '.' && strcmp(t, ".global") && strncmp(t, ".align", 6) && strcmp(t, ".visible")) type = t;
			last = t;
		}
		if (!last || last[0] == '.') continue;
		size_t count = 1;
		char *br = strchr(last, '[');
		if (br) {
			count = strtoull(br + 1, NULL, 10);
			*br = 0;
		}
		struct global_var *g = &m->globals[m->nglobals++];
		snprintf(g->name, sizeof g->name, "%s", last);
		g->size = count * type_size(type);
		void *mem = calloc(1, g->size ? g->size : 1);
		g->ptr = (CUdeviceptr)(uintptr_t)mem;
		pthread_mutex_lock(&mu);
		add_record((uintptr_t)mem, g->size, KIND_DEVICE, current);
		pthread_mutex_unlock(&mu);
	}
	return m;
}

static int module_live(CUmodule m) {
	for (struct fake_module *p = modules; p; p = p->next)
		if (p == m) return 1;
	return 0;
}

// free_module frees m and its globals. The caller holds mu and has taken
// m off the list.
static void free_module(struct fake_module *m) {
	for (int i = 0; i < m->nglobals; i++) {
		struct record *r = find_base((uintptr_t)m->globals[i].ptr, KIND_DEVICE);
		if (r) remove_record(r);
		free(DEVP(m->globals[i].ptr));
	}
	free(m); // functions die with their module, as on the real driver
}

// unload_modules unloads every module of c, as the driver does when it
// destroys a context. The caller holds mu.
void unload_modules(CUcontext c) {
	for (struct fake_module **pp = &modules; *pp;) {
		struct fake_module *m = *pp;
		if (m->ctx == c) {
			*pp = m->next;
			free_module(m);
		} else {
			pp = &m->next;
		}
	}
}

EXPORT CUresult cuModuleUnload(CUmodule m) {
	FAULT("cuModuleUnload");
	REQUIRE_CTX();
	pthread_mutex_lock(&mu);
	int found = 0;
	for (struct fake_module **pp = &modules; *pp; pp = &(*pp)->next) {
		if (*pp == m) {
			*pp = m->next;
			found = 1;
			break;
		}
	}
	if (found) free_module(m);
	pthread_mutex_unlock(&mu);
	return found ? SUCCESS : INVALID_HANDLE;
}

EXPORT CUresult cuModuleGetFunction(CUfunction *pf, CUmodule m, const char *name) {
	FAULT("cuModuleGetFunction");
	REQUIRE_CTX();
	if (!pf || !name || !*name) return INVALID_VALUE; // an empty name, as the driver
	pthread_mutex_lock(&mu);
	int live = module_live(m);
	pthread_mutex_unlock(&mu);
	if (!live) return INVALID_HANDLE;
	for (int i = 0; i < m->nfuncs; i++) {
		if (!strcmp(m->funcs[i].name, name)) {
			if (!m->funcs[i].k) return NOT_SUPPORTED;
			*pf = &m->funcs[i];
			return SUCCESS;
		}
	}
	return NOT_FOUND;
}

EXPORT CUresult cuModuleGetGlobal_v2(CUdeviceptr *dptr, size_t *bytes, CUmodule m, const char *name) {
	FAULT("cuModuleGetGlobal_v2");
	REQUIRE_CTX();
	if (!name || !*name) return INVALID_VALUE; // an empty name, as the driver
	pthread_mutex_lock(&mu);
	int live = module_live(m);
	pthread_mutex_unlock(&mu);
	if (!live) return INVALID_HANDLE;
	for (int i = 0; i < m->nglobals; i++) {
		if (!strcmp(m->globals[i].name, name)) {
			if (dptr) *dptr = m->globals[i].ptr;
			if (bytes) *bytes = m->globals[i].size;
			return SUCCESS;
		}
	}
	return NOT_FOUND;
}

// ---- libraries ----------------------------------------------------------------
//
// A library is PTX text loaded for no context; in each context that asks
// for one of its kernels it becomes a module of that context (a view),
// which the context's destruction unloads as any module, and the
// library's unload unloads everywhere.

struct fake_kernel {
	struct fake_library *lib;
	char name[256];
};
struct lib_view {
	CUcontext ctx;
	struct fake_module *m;
};
struct fake_library {
	char *text;
	int nkernels, nviews;
	struct fake_kernel kernels[32];
	struct lib_view views[4 * MAX_DEVICES];
	struct fake_library *next;
};
typedef struct fake_library *CUlibrary;
typedef struct fake_kernel *CUkernel;
static struct fake_library *libraries;
long live_libraries;

static int library_live(CUlibrary l) {
	for (struct fake_library *p = libraries; p; p = p->next)
		if (p == l) return 1;
	return 0;
}

EXPORT CUresult cuLibraryLoadData(CUlibrary *pl, const void *code, int *jit_options, void **jit_values, unsigned njit,
                                  int *lib_options, void **lib_values, unsigned nlib) {
	FAULT("cuLibraryLoadData");
	REQUIRE_INIT();
	if (!pl || !code || (njit && (!jit_options || !jit_values)) || (nlib && (!lib_options || !lib_values))) return INVALID_VALUE;
	// The driver reads the image lazily, when a kernel or global is first
	// asked for (CUDA_MODULE_LOADING=LAZY, its default): so does the fake.
	struct fake_library *l = calloc(1, sizeof *l);
	l->text = strdup(code);
	jit_log(njit, jit_options, jit_values, CU_JIT_INFO_LOG_BUFFER, "fake JIT: loaded");
	pthread_mutex_lock(&mu);
	l->next = libraries;
	libraries = l;
	live_libraries++;
	pthread_mutex_unlock(&mu);
	*pl = l;
	return SUCCESS;
}

// unlink_module takes m off the list of modules and frees it, if it is
// still there. The caller holds mu.
static void unlink_module(struct fake_module *m) {
	for (struct fake_module **pp = &modules; *pp; pp = &(*pp)->next) {
		if (*pp == m) {
			*pp = m->next;
			free_module(m);
			return;
		}
	}
}

EXPORT CUresult cuLibraryUnload(CUlibrary l) {
	FAULT("cuLibraryUnload");
	REQUIRE_INIT();
	pthread_mutex_lock(&mu);
	int found = 0;
	for (struct fake_library **pp = &libraries; *pp; pp = &(*pp)->next) {
		if (*pp == l) {
			*pp = l->next;
			found = 1;
			break;
		}
	}
	if (found) {
		for (int i = 0; i < l->nviews; i++) unlink_module(l->views[i].m);
		live_libraries--;
	}
	pthread_mutex_unlock(&mu);
	if (!found) return INVALID_HANDLE;
	free(l->text);
	free(l);
	return SUCCESS;
}

// has_entry reports whether text has an entry named name.
static int has_entry(const char *text, const char *name) {
	size_t n = strlen(name);
	for (const char *p = text; (p = strstr(p, ".entry")) != NULL; p += 6) {
		const char *q = p + 6;
		while (*q == ' ' || *q == '\t') q++;
		if (!strncmp(q, name, n) && strchr(" \t(\n", q[n])) return 1;
	}
	return 0;
}

EXPORT CUresult cuLibraryGetKernel(CUkernel *pk, CUlibrary l, const char *name) {
	FAULT("cuLibraryGetKernel");
	REQUIRE_INIT();
	if (!pk || !name || !*name) return INVALID_VALUE; // an empty name, as the driver
	CUresult r = NOT_FOUND;
	pthread_mutex_lock(&mu);
	if (library_live(l) && (r = check_image(l->text, 0, NULL, NULL)) != SUCCESS) {
		// an image the driver could not load, found at first use
	} else if (r = NOT_FOUND, !library_live(l)) {
		r = INVALID_HANDLE;
	} else {
		for (int i = 0; i < l->nkernels; i++)
			if (!strcmp(l->kernels[i].name, name)) *pk = &l->kernels[i], r = SUCCESS;
		if (r != SUCCESS && has_entry(l->text, name) && l->nkernels < 32) {
			struct fake_kernel *k = &l->kernels[l->nkernels++];
			k->lib = l;
			snprintf(k->name, sizeof k->name, "%s", name);
			*pk = k;
			r = SUCCESS;
		}
	}
	pthread_mutex_unlock(&mu);
	return r;
}

// view_of returns l's module in the current context, loading it there the
// first time; NULL if l is not loaded.
static struct fake_module *view_of(CUlibrary l) {
	pthread_mutex_lock(&mu);
	int live = library_live(l);
	struct fake_module *m = NULL;
	for (int i = 0; live && i < l->nviews; i++)
		if (l->views[i].ctx == current && module_live(l->views[i].m)) m = l->views[i].m;
	pthread_mutex_unlock(&mu);
	if (!live || m) return m;
	m = parse_module(l->text);
	pthread_mutex_lock(&mu);
	m->next = modules;
	modules = m;
	int slot = l->nviews;
	for (int i = 0; i < l->nviews; i++)
		if (!module_live(l->views[i].m)) slot = i;
	if (slot == l->nviews && l->nviews < (int)(sizeof l->views / sizeof l->views[0])) l->nviews++;
	l->views[slot].ctx = current, l->views[slot].m = m;
	pthread_mutex_unlock(&mu);
	return m;
}

EXPORT CUresult cuKernelGetFunction(CUfunction *pf, CUkernel k) {
	FAULT("cuKernelGetFunction");
	REQUIRE_CTX();
	if (!pf || !k) return INVALID_VALUE;
	struct fake_module *m = view_of(k->lib);
	if (!m) return INVALID_HANDLE;
	for (int i = 0; i < m->nfuncs; i++) {
		if (!strcmp(m->funcs[i].name, k->name)) {
			if (!m->funcs[i].k) return NOT_SUPPORTED;
			*pf = &m->funcs[i];
			return SUCCESS;
		}
	}
	return NOT_FOUND;
}

EXPORT CUresult cuLibraryGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUlibrary l, const char *name) {
	FAULT("cuLibraryGetGlobal");
	REQUIRE_CTX();
	if (!dptr || !bytes || !name) return INVALID_VALUE;
	pthread_mutex_lock(&mu);
	CUresult bad = library_live(l) ? check_image(l->text, 0, NULL, NULL) : SUCCESS;
	pthread_mutex_unlock(&mu);
	if (bad != SUCCESS) return bad;
	struct fake_module *m = view_of(l);
	if (!m) return INVALID_HANDLE;
	for (int i = 0; i < m->nglobals; i++) {
		if (!strcmp(m->globals[i].name, name)) {
			*dptr = m->globals[i].ptr;
			*bytes = m->globals[i].size;
			return SUCCESS;
		}
	}
	return NOT_FOUND;
}

// negative_attribute ends the process, as the driver does: it does not
// check a negative attribute (cuFuncSetAttribute of -1 crashed the process
// on an H100, driver 580; the getter, unobserved, is taken to be alike).
static void negative_attribute(const char *call, int attr) {
	if (attr >= 0) return;
	fprintf(stderr, "fakecuda: %s of attribute %d: the driver crashes on a negative attribute\n", call, attr);
	abort();
}

EXPORT CUresult cuFuncGetAttribute(int *v, int attr, CUfunction f) {
	FAULT("cuFuncGetAttribute");
	REQUIRE_CTX();
	negative_attribute("cuFuncGetAttribute", attr);
	if (!v || !f) return INVALID_VALUE;
	switch (attr) {
	case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *v = 1024; break;
	case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: case CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES: case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES: *v = 0; break;
	case CU_FUNC_ATTRIBUTE_NUM_REGS: *v = 16; break;
	case CU_FUNC_ATTRIBUTE_PTX_VERSION: *v = 70; break;
	case CU_FUNC_ATTRIBUTE_BINARY_VERSION: *v = 90; break;
	case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: *v = f->max_dynamic_shared; break;
	case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED: *v = f->non_portable_cluster; break;
	default:
		if (attr > 16) return INVALID_VALUE;
		*v = 0;
	}
	return SUCCESS;
}

EXPORT CUresult cuFuncSetAttribute(CUfunction f, int attr, int v) {
	FAULT("cuFuncSetAttribute");
	REQUIRE_CTX();
	negative_attribute("cuFuncSetAttribute", attr);
	if (!f) return INVALID_VALUE;
	if (attr == CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED) {
		if (v != 0 && v != 1) return INVALID_VALUE;
		f->non_portable_cluster = v;
		return SUCCESS;
	}
	// The settable attributes, as the driver's; the others are read-only,
	// which the driver refuses to set.
	switch (attr) {
	case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: break;
	case 9: return v >= -1 && v <= 100 ? SUCCESS : INVALID_VALUE; // carveout: percent, -1 no preference
	case 11: case 12: case 13: return v >= 0 ? SUCCESS : INVALID_VALUE; // the required cluster shape
	case 15: return v >= 0 && v <= 2 ? SUCCESS : INVALID_VALUE;         // cluster scheduling policy
	default: return INVALID_VALUE;
	}
	if (v < 0 || v > 227 << 10) return INVALID_VALUE;
	f->max_dynamic_shared = v;
	return SUCCESS;
}

// ---- occupancy ---------------------------------------------------------------
//
// A fake multiprocessor holds what an H100's or H200's does: 2048 threads,
// 32 blocks, 64 Ki registers (given out per warp, 256 at a time) and
// 228 KiB of shared memory, 1 KiB of it set aside per block. Every fake
// kernel has 16 registers a thread and no static shared memory.

enum { SM_THREADS = 2048, SM_BLOCKS = 32, SM_REGS = 65536, SM_SHARED = 228 << 10, BLOCK_RESERVED = 1024, FUNC_REGS = 16 };

// blocks_by_threads is how many blocks of n threads fit on a
// multiprocessor, shared memory aside.
static int blocks_by_threads(int n) {
	int warps = (n + 31) / 32, regs_per_warp = (FUNC_REGS * 32 + 255) / 256 * 256;
	int by_threads = SM_THREADS / (warps * 32), by_regs = SM_REGS / regs_per_warp / warps;
	int b = by_threads < by_regs ? by_threads : by_regs;
	return b < SM_BLOCKS ? b : SM_BLOCKS;
}

static int active_blocks(CUfunction f, int n, size_t dynamic) {
	if ((long long)dynamic > f->max_dynamic_shared) return 0;
	int by_shared = (int)(SM_SHARED / (dynamic + BLOCK_RESERVED)), b = blocks_by_threads(n);
	return b < by_shared ? b : by_shared;
}

EXPORT CUresult cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int *blocks, CUfunction f, int n, size_t dynamic, unsigned flags) {
	FAULT("cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags");
	REQUIRE_CTX();
	if (!blocks || !f || n <= 0 || n > 1024 || flags > 1) return INVALID_VALUE;
	*blocks = active_blocks(f, n, dynamic);
	return SUCCESS;
}

EXPORT CUresult cuOccupancyMaxPotentialBlockSizeWithFlags(int *grid, int *block, CUfunction f, size_t (*shared)(int), size_t dynamic,
                                                          int limit, unsigned flags) {
	FAULT("cuOccupancyMaxPotentialBlockSizeWithFlags");
	REQUIRE_CTX();
	if (!grid || !block || !f || limit < 0 || flags > 1) return INVALID_VALUE;
	if (limit == 0 || limit > 1024) limit = 1024;
	int best = 0, best_blocks = 0, best_threads = 0;
	for (int aligned = (limit + 31) / 32 * 32; aligned > 0; aligned -= 32) {
		int n = aligned < limit ? aligned : limit;
		int b = active_blocks(f, n, shared ? shared(n) : dynamic);
		if (b * n > best_threads) best = n, best_blocks = b, best_threads = b * n;
		if (best_threads == SM_THREADS) break;
	}
	*grid = best_blocks * 4; // the fake's multiprocessors
	*block = best;
	return SUCCESS;
}

EXPORT CUresult cuOccupancyAvailableDynamicSMemPerBlock(size_t *dynamic, CUfunction f, int blocks, int n) {
	FAULT("cuOccupancyAvailableDynamicSMemPerBlock");
	REQUIRE_CTX();
	if (!dynamic || !f || blocks <= 0 || n <= 0 || n > 1024) return INVALID_VALUE;
	// As the driver: refused where the blocks cannot fit at all, and no
	// more than the kernel may have.
	long long room = SM_SHARED / blocks - BLOCK_RESERVED;
	if (blocks > blocks_by_threads(n) || room < 0) return INVALID_VALUE;
	*dynamic = room < f->max_dynamic_shared ? (size_t)room : (size_t)f->max_dynamic_shared;
	return SUCCESS;
}

EXPORT CUresult cuFuncGetParamCount(CUfunction f, size_t *n) {
	FAULT("cuFuncGetParamCount");
	REQUIRE_CTX();
	if (!f || !n) return INVALID_VALUE;
	*n = (size_t)f->k->nparams;
	return SUCCESS;
}

EXPORT CUresult cuFuncGetParamInfo(CUfunction f, size_t i, size_t *off, size_t *size) {
	FAULT("cuFuncGetParamInfo");
	REQUIRE_CTX();
	if (!f || (int)i >= f->k->nparams) return INVALID_VALUE;
	if (off) *off = f->k->offset[i];
	if (size) *size = f->k->size[i];
	return SUCCESS;
}

int launch_same_kernel(const struct launch *a, const struct launch *b) { return a->k == b->k; }

struct launch *launch_clone(const struct launch *l) {
	struct launch *c = malloc(sizeof *c);
	*c = *l;
	return c;
}

// launch_set_attribute sets a kernel node's attribute (cuGraphKernelNodeSetAttribute):
// cooperative, cluster shape and policy, priority; the driver's others are refused.
// A cluster must divide the node's grid, on a device with clusters.
CUresult launch_set_attribute(struct launch *l, int attr, const void *value) {
	const int *v = value;
	switch (attr) {
	case 2: l->cooperative = *v != 0; return SUCCESS;
	case 4: {
		const unsigned *c = value;
		if (!device_attribute(CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH, l->ctx->device)) return NOT_SUPPORTED;
		for (int i = 0; i < 3; i++)
			if (!c[i] || l->grid[i] % c[i]) return INVALID_VALUE;
		memcpy(l->cluster, c, sizeof l->cluster);
		return SUCCESS;
	}
	case 5: return *v >= 0 && *v <= 2 ? SUCCESS : INVALID_VALUE;
	case 8: return SUCCESS; // the fake runs work in order whatever its priority
	}
	return INVALID_VALUE;
}

// launch_keep_attributes gives to, an instance's kernel node set again, the
// attributes from had: the node's, which setting its parameters keeps. Its
// grid must still be a whole number of clusters.
CUresult launch_keep_attributes(struct launch *to, const struct launch *from) {
	for (int i = 0; i < 3; i++)
		if (to->grid[i] % from->cluster[i]) return INVALID_VALUE;
	memcpy(to->cluster, from->cluster, sizeof to->cluster);
	to->cooperative = from->cooperative;
	return SUCCESS;
}

// launch_kernel queues f on s: cuLaunchKernel's and cuLaunchKernelEx's
// work, with their checks made.
CUresult make_launch(CUfunction f, const unsigned grid[3], const unsigned block[3], unsigned shared, void **params,
                     const unsigned cluster[3], int cooperative, struct launch **out) {
	const unsigned gx = grid[0], gy = grid[1], gz = grid[2], bx = block[0], by = block[1], bz = block[2];
	if (!gx || !gy || !gz || !bx || !by || !bz) return INVALID_VALUE;
	if (bx > 1024 || by > 1024 || bz > 64 || (size_t)bx * by * bz > 1024) return INVALID_VALUE;
	if (gy > 65535 || gz > 65535 || gx > 0x7fffffffu) return INVALID_VALUE;
	if (shared > (unsigned)f->max_dynamic_shared) return INVALID_VALUE;
	if (f->k->nparams && !params) return INVALID_VALUE;
	if (current->sticky) return current->sticky;
	struct launch *l = calloc(1, sizeof *l);
	l->ctx = current;
	l->k = f->k;
	memcpy(l->grid, grid, sizeof l->grid);
	memcpy(l->block, block, sizeof l->block);
	memcpy(l->cluster, cluster, sizeof l->cluster);
	l->cooperative = cooperative;
	l->shared = shared;
	for (int i = 0; i < f->k->nparams; i++) memcpy(l->params + f->k->offset[i], params[i], f->k->size[i]);
	*out = l;
	return SUCCESS;
}

static CUresult launch_kernel(CUfunction f, const unsigned grid[3], const unsigned block[3], unsigned shared, CUstream s,
                              void **params, const unsigned cluster[3], int cooperative) {
	struct op o = {.kind = OP_KERNEL};
	CUresult r = make_launch(f, grid, block, shared, params, cluster, cooperative, &o.launch);
	return r == SUCCESS ? enqueue(s, o) : r;
}

EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                               unsigned bz, unsigned shared, CUstream s, void **params, void **extra) {
	FAULT("cuLaunchKernel");
	REQUIRE_CTX();
	if (!f || extra) return INVALID_VALUE;
	const unsigned grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz}, none[3] = {1, 1, 1};
	return launch_kernel(f, grid, block, shared, s, params, none, 0);
}

// CUlaunchConfig and CUlaunchAttribute, as cuda.h lays them out.
typedef struct {
	int id;
	int pad;
	union {
		char bytes[64];
		unsigned dim[3];
		int value;
	};
} CUlaunchAttribute;
typedef struct {
	unsigned grid[3], block[3], shared;
	CUstream stream;
	CUlaunchAttribute *attrs;
	unsigned nattrs;
} CUlaunchConfig;

// launch_attributes reads cfg's attributes the fake knows (cooperative,
// cluster shape and policy, programmatic dependent launch, priority) and
// checks them against f.
static CUresult launch_attributes(const CUlaunchConfig *cfg, CUfunction f, unsigned cluster[3], int *cooperative) {
	cluster[0] = cluster[1] = cluster[2] = 1;
	*cooperative = 0;
	if (cfg->nattrs && !cfg->attrs) return INVALID_VALUE;
	int clustered = 0;
	for (unsigned i = 0; i < cfg->nattrs; i++) {
		const CUlaunchAttribute *a = &cfg->attrs[i];
		switch (a->id) {
		case 0: break; // CU_LAUNCH_ATTRIBUTE_IGNORE
		case 2: *cooperative = a->value != 0; break;
		case 4:
			memcpy(cluster, a->dim, sizeof a->dim);
			clustered = 1;
			break;
		case 5:
			if (a->value < 0 || a->value > 2) return INVALID_VALUE;
			break;
		case 6: // programmatic stream serialization: the fake runs a
			// stream's work in order anyway, which the attribute allows.
			if (device_attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, current->device) < 9) return NOT_SUPPORTED;
			break;
		case 8: break; // priority: clamped, as for streams
		default: return INVALID_VALUE;
		}
	}
	if (clustered) {
		if (!device_attribute(CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH, current->device)) return NOT_SUPPORTED;
		if (!cluster[0] || !cluster[1] || !cluster[2]) return INVALID_CLUSTER_SIZE;
		size_t n = (size_t)cluster[0] * cluster[1] * cluster[2];
		if (n > (f->non_portable_cluster ? 16u : 8u)) return INVALID_CLUSTER_SIZE;
		for (int d = 0; d < 3; d++)
			if (cfg->grid[d] % cluster[d]) return INVALID_CLUSTER_SIZE;
	}
	return SUCCESS;
}

EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig *cfg, CUfunction f, void **params, void **extra) {
	FAULT("cuLaunchKernelEx");
	REQUIRE_CTX();
	if (!cfg || !f || extra) return INVALID_VALUE;
	unsigned cluster[3];
	int cooperative;
	CUresult r = launch_attributes(cfg, f, cluster, &cooperative);
	if (r != SUCCESS) return r;
	if (cooperative) {
		unsigned long long threads = (unsigned long long)cfg->block[0] * cfg->block[1];
		if (!threads || threads > 1024 || !cfg->block[2] || threads * cfg->block[2] > 1024) return INVALID_VALUE;
		int per = active_blocks(f, (int)(threads * cfg->block[2]), cfg->shared);
		int sms = device_attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, current->device);
		if ((unsigned long long)cfg->grid[0] * cfg->grid[1] * cfg->grid[2] > (unsigned long long)per * sms) return COOPERATIVE_LAUNCH_TOO_LARGE;
	}
	return launch_kernel(f, cfg->grid, cfg->block, cfg->shared, cfg->stream, params, cluster, cooperative);
}

EXPORT CUresult cuOccupancyMaxActiveClusters(int *n, CUfunction f, const CUlaunchConfig *cfg) {
	FAULT("cuOccupancyMaxActiveClusters");
	REQUIRE_CTX();
	if (!n || !f || !cfg) return INVALID_VALUE;
	unsigned cluster[3];
	int cooperative;
	CUresult r = launch_attributes(cfg, f, cluster, &cooperative);
	if (r != SUCCESS) return r;
	int size = (int)(cluster[0] * cluster[1] * cluster[2]);
	int per = active_blocks(f, (int)(cfg->block[0] * cfg->block[1] * cfg->block[2]), cfg->shared);
	int sms = device_attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, current->device);
	// A cluster's blocks share one group of multiprocessors: the fake's
	// whole device.
	*n = per * sms / size;
	return SUCCESS;
}

