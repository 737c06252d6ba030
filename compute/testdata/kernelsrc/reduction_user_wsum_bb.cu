
// gocuda_f32_to_f16_nan is NaN f as a float16: its sign, quiet, and the
// top of its payload.
__device__ __forceinline__ unsigned short gocuda_f32_to_f16_nan(float f) {
	unsigned int b = __float_as_uint(f);
	return (unsigned short)(((b >> 16) & 0x8000u) | 0x7e00u | ((b & 0x7fffffu) >> 13));
}
// gocuda_f32_to_f16_num is f, not a NaN, rounded to a float16.
__device__ __forceinline__ unsigned short gocuda_f32_to_f16_num(float f) {
#ifdef __CUDA_ARCH__
	unsigned short h;
	asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
	return h;
#else
	unsigned int b = __float_as_uint(f);
	unsigned int sign = (b >> 16) & 0x8000u, a = b & 0x7fffffffu;
	if (a <= 0x33000000u) return (unsigned short)sign; // 2^-25 or less: to zero (2^-25 a tie, to even)
	if (a < 0x38800000u) { // below 2^-14: a subnormal, in units of 2^-24
		unsigned int shift = 126u - (a >> 23), m = (a & 0x7fffffu) | 0x800000u;
		unsigned int q = m >> shift, rem = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);
		if (rem > half || (rem == half && (q & 1u))) q++;
		return (unsigned short)(sign | q);
	}
	unsigned int q = (a >> 13) - (112u << 10), rem = a & 0x1fffu;
	if (rem > 0x1000u || (rem == 0x1000u && (q & 1u))) q++;
	if (q >= 0x7c00u) q = 0x7c00u; // past the largest: infinity
	return (unsigned short)(sign | q);
#endif
}
__device__ __forceinline__ unsigned short gocuda_f32_to_f16(float f) {
	return f != f ? gocuda_f32_to_f16_nan(f) : gocuda_f32_to_f16_num(f);
}
// gocuda_f16_to_f32_nan is NaN h as a float: its sign and payload, as
// they are (Float16.Float32 keeps a signaling NaN signaling). Shifted up
// 13, h's payload is the float's, its exponent (a NaN's, all ones) bits
// 27-23 and its sign bit 28; sign-extended first, the sign fills bits
// 31-29 too, so that with the float's exponent set (bits 30-23) bit 31
// alone is left of it, in three instructions rather than six.
__device__ __forceinline__ float gocuda_f16_to_f32_nan(unsigned short h) {
	return __uint_as_float((unsigned int)(int)(short)h << 13 | 0x7f800000u);
}
// gocuda_f16_to_f32_num is h as a float, exactly, for any h but a NaN,
// and a NaN for a NaN.
__device__ __forceinline__ float gocuda_f16_to_f32_num(unsigned short h) {
#ifdef __CUDA_ARCH__
	float f;
	asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
	return f;
#else
	unsigned int sign = (unsigned int)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
	if (e == 0x1fu) return __uint_as_float(sign | 0x7f800000u | (m << 13)); // an infinity, or a NaN (gocuda_f16_to_f32_nan's bits)
	if (e == 0) {
		float v = (float)m * 5.9604644775390625e-08f; // m * 2^-24, exact
		return sign ? -v : v;
	}
	return __uint_as_float(sign | ((e + 112u) << 23) | (m << 13));
#endif
}
__device__ __forceinline__ float gocuda_f16_to_f32(unsigned short h) {
	const float f = gocuda_f16_to_f32_num(h);
	return f != f ? gocuda_f16_to_f32_nan(h) : f;
}
// gocuda_f32_to_bf16_nan is NaN f as a bfloat16: its sign, quiet, and the
// top of its payload.
__device__ __forceinline__ unsigned short gocuda_f32_to_bf16_nan(float f) { return (unsigned short)((__float_as_uint(f) >> 16) | 0x40u); }
// gocuda_f32_to_bf16_num is f, not a NaN, rounded to a bfloat16.
__device__ __forceinline__ unsigned short gocuda_f32_to_bf16_num(float f) {
#if __CUDA_ARCH__ >= 800
	unsigned short h;
	asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
	return h;
#else
	unsigned int b = __float_as_uint(f), r = b >> 16, rem = b & 0xffffu;
	if (rem > 0x8000u || (rem == 0x8000u && (r & 1u))) r++;
	return (unsigned short)r;
#endif
}
__device__ __forceinline__ unsigned short gocuda_f32_to_bf16(float f) {
	return f != f ? gocuda_f32_to_bf16_nan(f) : gocuda_f32_to_bf16_num(f);
}
__device__ __forceinline__ float gocuda_bf16_to_f32(unsigned short h) { return __uint_as_float((unsigned int)h << 16); }

// gocuda_vec is V elements of T loaded or stored at once (a 16-byte
// access at most): the pointer must be aligned to its size.
template <typename T, int V> struct alignas(sizeof(T) * V) gocuda_vec { T v[V]; };
// gocuda_any_nan is whether any of f is a NaN: one test and one branch
// for a vector, not one for each element. Two floats at a time, which
// the compiler tests for NaNs in one instruction.
template <int W> __device__ __forceinline__ bool gocuda_any_nan(const float (&f)[W]) {
	bool nan = W % 2 && f[W - 1] != f[W - 1];
#pragma unroll
	for (int k = 0; k + 1 < W; k += 2) nan |= (f[k] != f[k]) | (f[k + 1] != f[k + 1]);
	return nan;
}
// gocuda_load_f16 and gocuda_load_bf16 set f to v's elements as floats,
// as gocuda_f16_to_f32 and gocuda_bf16_to_f32 do: by the instruction
// alone, then element by element only if that made a NaN, of a NaN in v.
template <int W> __device__ __forceinline__ void gocuda_load_f16(float (&f)[W], const gocuda_vec<unsigned short, W>& v) {
#pragma unroll
	for (int k = 0; k < W; k++) f[k] = gocuda_f16_to_f32_num(v.v[k]);
	if (gocuda_any_nan(f)) {
#pragma unroll
		for (int k = 0; k < W; k++) f[k] = gocuda_f16_to_f32(v.v[k]);
	}
}
template <int W> __device__ __forceinline__ void gocuda_load_bf16(float (&f)[W], const gocuda_vec<unsigned short, W>& v) {
#pragma unroll
	for (int k = 0; k < W; k++) f[k] = gocuda_bf16_to_f32(v.v[k]);
}
// gocuda_store_f16 and gocuda_store_bf16 set v's elements to f's rounded,
// as gocuda_f32_to_f16 and gocuda_f32_to_bf16 do: element by element if
// one of f is a NaN, else by the instruction alone, which from sm_80 on
// rounds two floats to a pair of halves at once, the first float given
// to the upper half (element k + 1 of a little-endian pair: the device
// and the hosts the fake runs on are little-endian). Either way each
// pair is made a 32-bit word, as the vector is stored: the pairs are not
// split into halves and joined again. W is even: a vector of halves has
// 2, 4 or 8 elements.
template <int W> __device__ __forceinline__ void gocuda_store_f16(gocuda_vec<unsigned short, W>& v, const float (&f)[W]) {
	static_assert(W % 2 == 0, "halves come in pairs");
	union { unsigned int pair[W / 2]; gocuda_vec<unsigned short, W> v; } u; // as gocuda_down's
	unsigned int (&pair)[W / 2] = u.pair;
	if (gocuda_any_nan(f)) {
#pragma unroll
		for (int k = 0; k < W / 2; k++) pair[k] = gocuda_f32_to_f16(f[2 * k]) | (unsigned int)gocuda_f32_to_f16(f[2 * k + 1]) << 16;
	} else {
#pragma unroll
		for (int k = 0; k < W / 2; k++) {
#if __CUDA_ARCH__ >= 800
			asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(pair[k]) : "f"(f[2 * k + 1]), "f"(f[2 * k]));
#else
			pair[k] = gocuda_f32_to_f16_num(f[2 * k]) | (unsigned int)gocuda_f32_to_f16_num(f[2 * k + 1]) << 16;
#endif
		}
	}
	v = u.v;
}
template <int W> __device__ __forceinline__ void gocuda_store_bf16(gocuda_vec<unsigned short, W>& v, const float (&f)[W]) {
	static_assert(W % 2 == 0, "halves come in pairs");
	union { unsigned int pair[W / 2]; gocuda_vec<unsigned short, W> v; } u; // as gocuda_down's
	unsigned int (&pair)[W / 2] = u.pair;
	if (gocuda_any_nan(f)) {
#pragma unroll
		for (int k = 0; k < W / 2; k++) pair[k] = gocuda_f32_to_bf16(f[2 * k]) | (unsigned int)gocuda_f32_to_bf16(f[2 * k + 1]) << 16;
	} else {
#pragma unroll
		for (int k = 0; k < W / 2; k++) {
#if __CUDA_ARCH__ >= 800
			asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(pair[k]) : "f"(f[2 * k + 1]), "f"(f[2 * k]));
#else
			pair[k] = gocuda_f32_to_bf16_num(f[2 * k]) | (unsigned int)gocuda_f32_to_bf16_num(f[2 * k + 1]) << 16;
#endif
		}
	}
	v = u.v;
}
// gocuda_down is lane l + k's v (__shfl_down_sync of every lane) for a v
// of any type of 8 bytes or fewer.
template <typename T> __device__ __forceinline__ T gocuda_down(T v, unsigned int k) {
	if constexpr (sizeof(T) <= 4) {
		union { T t; unsigned int u; } x;
		x.u = 0;
		x.t = v;
		x.u = __shfl_down_sync(0xffffffffu, x.u, k);
		return x.t;
	} else {
		union { T t; unsigned long long u; } x;
		x.u = 0;
		x.t = v;
		x.u = __shfl_down_sync(0xffffffffu, x.u, k);
		return x.t;
	}
}

typedef float gocuda_acc;
__device__ __forceinline__ gocuda_acc gocuda_reduce(gocuda_acc a, gocuda_acc b) { return (gocuda_acc)(
a + b
); }
__device__ __forceinline__ gocuda_acc gocuda_identity() { return (gocuda_acc)(
0
); }
__device__ __forceinline__ gocuda_acc gocuda_map(const float x, const signed char w, const long long i) { return (gocuda_acc)(
x * w
); }
__device__ __forceinline__ void gocuda_post(float* gocuda_out, long long gocuda_at, gocuda_acc a, long long n) { float y; {
y = a
;
} gocuda_out[gocuda_at] = (float)(y); }
template <int G> __device__ __forceinline__ gocuda_acc gocuda_warp(gocuda_acc v) {
	#pragma unroll
	for (int k = G / 2; k > 0; k >>= 1) v = gocuda_reduce(v, gocuda_down(v, k));
	return v;
}
// gocuda_block folds a one-dimensional block's values (blockDim.x a
// multiple of 32) into thread 0's; every thread must call it.
__device__ __forceinline__ gocuda_acc gocuda_block(gocuda_acc v) {
	__shared__ gocuda_acc s[32];
	v = gocuda_warp<32>(v);
	if (threadIdx.x % 32 == 0) s[threadIdx.x / 32] = v;
	__syncthreads();
	if (threadIdx.x < 32) {
		v = threadIdx.x < blockDim.x / 32 ? s[threadIdx.x] : gocuda_identity();
		v = gocuda_warp<32>(v);
	}
	__syncthreads(); // s is the next call's
	return v;
}
__device__ __forceinline__ gocuda_acc gocuda_span(const unsigned short* __restrict__ gocudap_x, const signed char* __restrict__ gocudap_w, long long from, long long to, long long lane, long long lanes, bool wide) {
	gocuda_acc v = gocuda_identity();
	if (wide) {
		#pragma unroll 4
		for (long long gocuda_j = from / 8 + lane; gocuda_j < to / 8; gocuda_j += lanes) {
			const gocuda_vec<unsigned short, 8> gocudav_x = ((const gocuda_vec<unsigned short, 8>*)gocudap_x)[gocuda_j]; float gocudaf_x[8]; gocuda_load_f16(gocudaf_x, gocudav_x); const gocuda_vec<signed char, 8> gocudav_w = ((const gocuda_vec<signed char, 8>*)gocudap_w)[gocuda_j]; 
			#pragma unroll
			for (int gocuda_k = 0; gocuda_k < 8; gocuda_k++) v = gocuda_reduce(v, gocuda_map(gocudaf_x[gocuda_k], gocudav_w.v[gocuda_k], gocuda_j * 8 + gocuda_k));
		}
		return v;
	}
	#pragma unroll 4
	for (long long i = from + lane; i < to; i += lanes) v = gocuda_reduce(v, gocuda_map(gocuda_f16_to_f32(gocudap_x[i]), gocudap_w[i], i));
	return v;
}
// Rows: G lanes of a warp fold a row (G of 1 to 32), or the whole block
// (G = 0), a warp's or the block's rows each step.
template <int G>
__device__ __forceinline__ void gocuda_rows(const unsigned short* __restrict__ gocudap_x, const signed char* __restrict__ gocudap_w, float* gocuda_out, long long rows, long long cols) {
	const bool gocuda_wide = ((unsigned long long)gocudap_x % sizeof(gocuda_vec<unsigned short, 8>) == 0 && (unsigned long long)gocudap_w % sizeof(gocuda_vec<signed char, 8>) == 0) && cols % 8 == 0;
	const long long gocuda_per = G ? blockDim.x / G : 1, gocuda_lanes = G ? G : blockDim.x;
	const long long gocuda_lane = G ? threadIdx.x % G : threadIdx.x;
	for (long long gocuda_base = (long long)blockIdx.x * gocuda_per; gocuda_base < rows; gocuda_base += (long long)gridDim.x * gocuda_per) {
		const long long r = gocuda_base + (G ? threadIdx.x / G : 0);
		gocuda_acc v = gocuda_identity();
		if (r < rows) v = gocuda_span(gocudap_x, gocudap_w, r * cols, r * cols + cols, gocuda_lane, gocuda_lanes, gocuda_wide);
		if constexpr (G == 0) v = gocuda_block(v);
		else v = gocuda_warp<G>(v);
		if (gocuda_lane == 0 && r < rows) gocuda_post(gocuda_out, r, v, cols);
	}
}
extern "C" __global__ __launch_bounds__(1024) void wsum_rows(const unsigned short* __restrict__ gocudap_x, const signed char* __restrict__ gocudap_w, float* gocuda_out, long long rows, long long cols, int group) {
	switch (group) {
	case 1: gocuda_rows<1>(gocudap_x, gocudap_w, gocuda_out, rows, cols); break;
	case 2: gocuda_rows<2>(gocudap_x, gocudap_w, gocuda_out, rows, cols); break;
	case 4: gocuda_rows<4>(gocudap_x, gocudap_w, gocuda_out, rows, cols); break;
	case 8: gocuda_rows<8>(gocudap_x, gocudap_w, gocuda_out, rows, cols); break;
	case 16: gocuda_rows<16>(gocudap_x, gocudap_w, gocuda_out, rows, cols); break;
	case 32: gocuda_rows<32>(gocudap_x, gocudap_w, gocuda_out, rows, cols); break;
	default: gocuda_rows<0>(gocudap_x, gocudap_w, gocuda_out, rows, cols);
	}
}
// The kernels that leave partial results (_split, _cols, _narrow) fold
// them themselves where they are given counters (zero, in the stream's
// scratch): each block, its partial results written, counts itself in, and
// the last of a result's blocks folds its chunks as _chunks would, posts
// the result and sets the counter back to zero. Without counters (a
// capture, whose memory is stream-ordered), _chunks does it, in the same
// tree: the same bits either way.
//
// gocuda_fold folds result o's chunks (partial[k * outs + o]) in a warp,
// lane l taking chunks l, l + 32, ..., then the warp's tree; the reads
// skip the cache another block's writes may be stale in. A lane's reads
// are made eight at a time before they are folded, in the same order, so
// that eight are in flight, not one (volatile reads stay in program order).
__device__ __forceinline__ gocuda_acc gocuda_fold(const gocuda_acc* partial, long long chunks, long long outs, long long o, unsigned int lane) {
	gocuda_acc v = gocuda_identity();
	long long k = lane;
	for (; k + 7 * 32 < chunks; k += 8 * 32) {
		gocuda_acc p[8];
		#pragma unroll
		for (int u = 0; u < 8; u++) p[u] = *(const volatile gocuda_acc*)&partial[(k + u * 32) * outs + o];
		#pragma unroll
		for (int u = 0; u < 8; u++) v = gocuda_reduce(v, p[u]);
	}
	for (; k < chunks; k += 32) v = gocuda_reduce(v, *(const volatile gocuda_acc*)&partial[k * outs + o]);
	return gocuda_warp<32>(v);
}
// gocuda_arrive counts a block in at counter, once its partial results
// are written (every thread must call it), and reports to every thread
// whether it is the last of want.
__device__ __forceinline__ bool gocuda_arrive(unsigned int* counter, unsigned int want) {
	__shared__ bool gocuda_last;
	__threadfence();
	__syncthreads();
	if (threadIdx.x == 0 && threadIdx.y == 0) gocuda_last = atomicAdd(counter, 1u) == want - 1;
	__syncthreads();
	return gocuda_last;
}
// A few long rows: block (k, r) folds chunk k of row r (chunk elements, a
// multiple of the vector width) into partial[k * rows + r].
extern "C" __global__ __launch_bounds__(1024) void wsum_split(const unsigned short* __restrict__ gocudap_x, const signed char* __restrict__ gocudap_w, gocuda_acc* gocuda_partial, long long rows, long long cols, long long chunk, float* gocuda_out, unsigned int* gocuda_counters) {
	const long long r = blockIdx.y, gocuda_from = (long long)blockIdx.x * chunk;
	const long long gocuda_to = gocuda_from + chunk < cols ? gocuda_from + chunk : cols;
	gocuda_acc v = gocuda_span(gocudap_x, gocudap_w, r * cols + gocuda_from, r * cols + gocuda_to, threadIdx.x, blockDim.x, ((unsigned long long)gocudap_x % sizeof(gocuda_vec<unsigned short, 8>) == 0 && (unsigned long long)gocudap_w % sizeof(gocuda_vec<signed char, 8>) == 0) && cols % 8 == 0);
	v = gocuda_block(v);
	if (threadIdx.x == 0) gocuda_partial[(long long)blockIdx.x * rows + r] = v;
	if (gocuda_counters && gocuda_arrive(&gocuda_counters[r], gridDim.x) && threadIdx.x < 32) {
		v = gocuda_fold(gocuda_partial, gridDim.x, rows, r, threadIdx.x);
		if (threadIdx.x == 0) {
			gocuda_post(gocuda_out, r, v, cols);
			gocuda_counters[r] = 0;
		}
	}
}
// Partial results, chunks of them for each of outs results: a warp folds
// each result's (gocuda_fold) and posts it, of n elements.
extern "C" __global__ void wsum_chunks(const gocuda_acc* gocuda_partial, long long chunks, float* gocuda_out, long long outs, long long n) {
	const long long gocuda_warps = (long long)gridDim.x * (blockDim.x / 32);
	for (long long o = ((long long)blockIdx.x * blockDim.x + threadIdx.x) / 32; o < outs; o += gocuda_warps) {
		const gocuda_acc v = gocuda_fold(gocuda_partial, chunks, outs, o, threadIdx.x % 32);
		if (threadIdx.x % 32 == 0) gocuda_post(gocuda_out, o, v, n);
	}
}
// Columns, fewer than 32: a block's threads read blockDim.x / cols whole
// rows at a time, thread t column t % cols of row group t / cols, so that
// a step reads a run of the buffer; the groups fold in a fixed tree
// through shared memory; with one block the result is posted, else each
// block's is a partial result (partial[block * cols + c]).
extern "C" __global__ __launch_bounds__(1024) void wsum_narrow(const unsigned short* __restrict__ gocudap_x, const signed char* __restrict__ gocudap_w, float* gocuda_out, gocuda_acc* gocuda_partial, long long rows, long long cols, unsigned int* gocuda_counters) {
	__shared__ gocuda_acc gocuda_groups[1024];
	const long long gocuda_per = blockDim.x / cols, c = threadIdx.x % cols, gocuda_g = threadIdx.x / cols;
	gocuda_acc v = gocuda_identity();
	if (gocuda_g < gocuda_per) {
		#pragma unroll 4
		for (long long r = (long long)blockIdx.x * gocuda_per + gocuda_g; r < rows; r += (long long)gridDim.x * gocuda_per) v = gocuda_reduce(v, gocuda_map(gocuda_f16_to_f32(gocudap_x[r * cols + c]), gocudap_w[r * cols + c], r * cols + c));
	}
	gocuda_groups[threadIdx.x] = v;
	__syncthreads();
	long long gocuda_k = 1;
	while (gocuda_k < gocuda_per) gocuda_k <<= 1;
	for (gocuda_k >>= 1; gocuda_k > 0; gocuda_k >>= 1) {
		if (gocuda_g < gocuda_k && gocuda_g + gocuda_k < gocuda_per)
			gocuda_groups[threadIdx.x] = gocuda_reduce(gocuda_groups[threadIdx.x], gocuda_groups[threadIdx.x + gocuda_k * cols]);
		__syncthreads();
	}
	if (threadIdx.x < cols) {
		if (gridDim.x == 1) gocuda_post(gocuda_out, c, gocuda_groups[threadIdx.x], rows);
		else gocuda_partial[(long long)blockIdx.x * cols + c] = gocuda_groups[threadIdx.x];
	}
	if (gridDim.x > 1 && gocuda_counters && gocuda_arrive(gocuda_counters, gridDim.x)) {
		// A warp a column.
		for (long long o = threadIdx.x / 32; o < cols; o += blockDim.x / 32) {
			v = gocuda_fold(gocuda_partial, gridDim.x, cols, o, threadIdx.x % 32);
			if (threadIdx.x % 32 == 0) gocuda_post(gocuda_out, o, v, rows);
		}
		if (threadIdx.x == 0) *gocuda_counters = 0;
	}
}
// Columns, 32 or more: a block of 256 threads takes blockDim.x·V
// columns (V = 4), thread x the V from column x·V, with blockDim.y
// lanes of rows, lane y of row chunk k taking rows Yk+y, Yk+y + Y·chunks,
// ... (Y = blockDim.y). Where every buffer and every row start is aligned
// for them, the V columns are one load a row; else V loads, each column
// folded in the same order either way: the same bits from a view as from
// an aligned buffer. The lanes fold in order through shared memory; with
// one chunk the result is posted, else each chunk's is a partial result
// (partial[k * cols + c]).
extern "C" __global__ void wsum_cols(const unsigned short* __restrict__ gocudap_x, const signed char* __restrict__ gocudap_w, float* gocuda_out, gocuda_acc* gocuda_partial, long long rows, long long cols, unsigned int* gocuda_counters) {
	__shared__ gocuda_acc gocuda_lanes[256 * 4];
	const unsigned int gocuda_t = threadIdx.y * blockDim.x + threadIdx.x;
	const long long gocuda_span = (long long)blockDim.x * 4;
	const bool gocuda_wide = ((unsigned long long)gocudap_x % sizeof(gocuda_vec<unsigned short, 4>) == 0 && (unsigned long long)gocudap_w % sizeof(gocuda_vec<signed char, 4>) == 0) && cols % 4 == 0;
	for (long long gocuda_b = blockIdx.x; gocuda_b * gocuda_span < cols; gocuda_b += gridDim.x) {
		const long long c = gocuda_b * gocuda_span + threadIdx.x * 4;
		const long long gocuda_first = (long long)blockIdx.y * blockDim.y + threadIdx.y, gocuda_step = (long long)blockDim.y * gridDim.y;
		gocuda_acc v[4];
		#pragma unroll
		for (int gocuda_k = 0; gocuda_k < 4; gocuda_k++) v[gocuda_k] = gocuda_identity();
		if (c < cols && gocuda_wide) {
			#pragma unroll 4
			for (long long r = gocuda_first; r < rows; r += gocuda_step) {
				const long long gocuda_j = r * (cols / 4) + c / 4;
				const gocuda_vec<unsigned short, 4> gocudav_x = ((const gocuda_vec<unsigned short, 4>*)gocudap_x)[gocuda_j]; float gocudaf_x[4]; gocuda_load_f16(gocudaf_x, gocudav_x); const gocuda_vec<signed char, 4> gocudav_w = ((const gocuda_vec<signed char, 4>*)gocudap_w)[gocuda_j]; 
				#pragma unroll
				for (int gocuda_k = 0; gocuda_k < 4; gocuda_k++) v[gocuda_k] = gocuda_reduce(v[gocuda_k], gocuda_map(gocudaf_x[gocuda_k], gocudav_w.v[gocuda_k], gocuda_j * 4 + gocuda_k));
			}
		} else if (c < cols) {
			#pragma unroll 4
			for (long long r = gocuda_first; r < rows; r += gocuda_step) {
				#pragma unroll
				for (int gocuda_k = 0; gocuda_k < 4; gocuda_k++) {
					const long long gocuda_i = r * cols + c + gocuda_k;
					if (c + gocuda_k < cols) v[gocuda_k] = gocuda_reduce(v[gocuda_k], gocuda_map(gocuda_f16_to_f32(gocudap_x[gocuda_i]), gocudap_w[gocuda_i], gocuda_i));
				}
			}
		}
		#pragma unroll
		for (int gocuda_k = 0; gocuda_k < 4; gocuda_k++) gocuda_lanes[gocuda_t * 4 + gocuda_k] = v[gocuda_k];
		__syncthreads();
		if (threadIdx.y == 0 && c < cols) {
			for (unsigned int y = 1; y < blockDim.y; y++) {
				#pragma unroll
				for (int gocuda_k = 0; gocuda_k < 4; gocuda_k++) v[gocuda_k] = gocuda_reduce(v[gocuda_k], gocuda_lanes[(y * blockDim.x + threadIdx.x) * 4 + gocuda_k]);
			}
			#pragma unroll
			for (int gocuda_k = 0; gocuda_k < 4; gocuda_k++) {
				if (c + gocuda_k >= cols) break;
				if (gridDim.y == 1) gocuda_post(gocuda_out, c + gocuda_k, v[gocuda_k], rows);
				else gocuda_partial[blockIdx.y * cols + c + gocuda_k] = v[gocuda_k];
			}
		}
		if (gridDim.y > 1 && gocuda_counters && gocuda_arrive(&gocuda_counters[gocuda_b], gridDim.y)) {
			// The block's warps (of 256 threads) fold its columns, a warp a column.
			for (long long q = gocuda_t / 32; q < gocuda_span; q += 256 / 32) {
				const long long o = gocuda_b * gocuda_span + q;
				if (o >= cols) break;
				const gocuda_acc w = gocuda_fold(gocuda_partial, gridDim.y, cols, o, gocuda_t % 32);
				if (gocuda_t % 32 == 0) gocuda_post(gocuda_out, o, w, rows);
			}
			if (gocuda_t == 0) gocuda_counters[gocuda_b] = 0;
		}
		__syncthreads();
	}
}
// Columns, 32 or more: a block of 256 threads takes blockDim.x·V
// columns (V = 8), thread x the V from column x·V, with blockDim.y
// lanes of rows, lane y of row chunk k taking rows Yk+y, Yk+y + Y·chunks,
// ... (Y = blockDim.y). Where every buffer and every row start is aligned
// for them, the V columns are one load a row; else V loads, each column
// folded in the same order either way: the same bits from a view as from
// an aligned buffer. The lanes fold in order through shared memory; with
// one chunk the result is posted, else each chunk's is a partial result
// (partial[k * cols + c]).
extern "C" __global__ void wsum_colsv(const unsigned short* __restrict__ gocudap_x, const signed char* __restrict__ gocudap_w, float* gocuda_out, gocuda_acc* gocuda_partial, long long rows, long long cols, unsigned int* gocuda_counters) {
	__shared__ gocuda_acc gocuda_lanes[256 * 8];
	const unsigned int gocuda_t = threadIdx.y * blockDim.x + threadIdx.x;
	const long long gocuda_span = (long long)blockDim.x * 8;
	const bool gocuda_wide = ((unsigned long long)gocudap_x % sizeof(gocuda_vec<unsigned short, 8>) == 0 && (unsigned long long)gocudap_w % sizeof(gocuda_vec<signed char, 8>) == 0) && cols % 8 == 0;
	for (long long gocuda_b = blockIdx.x; gocuda_b * gocuda_span < cols; gocuda_b += gridDim.x) {
		const long long c = gocuda_b * gocuda_span + threadIdx.x * 8;
		const long long gocuda_first = (long long)blockIdx.y * blockDim.y + threadIdx.y, gocuda_step = (long long)blockDim.y * gridDim.y;
		gocuda_acc v[8];
		#pragma unroll
		for (int gocuda_k = 0; gocuda_k < 8; gocuda_k++) v[gocuda_k] = gocuda_identity();
		if (c < cols && gocuda_wide) {
			#pragma unroll 4
			for (long long r = gocuda_first; r < rows; r += gocuda_step) {
				const long long gocuda_j = r * (cols / 8) + c / 8;
				const gocuda_vec<unsigned short, 8> gocudav_x = ((const gocuda_vec<unsigned short, 8>*)gocudap_x)[gocuda_j]; float gocudaf_x[8]; gocuda_load_f16(gocudaf_x, gocudav_x); const gocuda_vec<signed char, 8> gocudav_w = ((const gocuda_vec<signed char, 8>*)gocudap_w)[gocuda_j]; 
				#pragma unroll
				for (int gocuda_k = 0; gocuda_k < 8; gocuda_k++) v[gocuda_k] = gocuda_reduce(v[gocuda_k], gocuda_map(gocudaf_x[gocuda_k], gocudav_w.v[gocuda_k], gocuda_j * 8 + gocuda_k));
			}
		} else if (c < cols) {
			#pragma unroll 4
			for (long long r = gocuda_first; r < rows; r += gocuda_step) {
				#pragma unroll
				for (int gocuda_k = 0; gocuda_k < 8; gocuda_k++) {
					const long long gocuda_i = r * cols + c + gocuda_k;
					if (c + gocuda_k < cols) v[gocuda_k] = gocuda_reduce(v[gocuda_k], gocuda_map(gocuda_f16_to_f32(gocudap_x[gocuda_i]), gocudap_w[gocuda_i], gocuda_i));
				}
			}
		}
		#pragma unroll
		for (int gocuda_k = 0; gocuda_k < 8; gocuda_k++) gocuda_lanes[gocuda_t * 8 + gocuda_k] = v[gocuda_k];
		__syncthreads();
		if (threadIdx.y == 0 && c < cols) {
			for (unsigned int y = 1; y < blockDim.y; y++) {
				#pragma unroll
				for (int gocuda_k = 0; gocuda_k < 8; gocuda_k++) v[gocuda_k] = gocuda_reduce(v[gocuda_k], gocuda_lanes[(y * blockDim.x + threadIdx.x) * 8 + gocuda_k]);
			}
			#pragma unroll
			for (int gocuda_k = 0; gocuda_k < 8; gocuda_k++) {
				if (c + gocuda_k >= cols) break;
				if (gridDim.y == 1) gocuda_post(gocuda_out, c + gocuda_k, v[gocuda_k], rows);
				else gocuda_partial[blockIdx.y * cols + c + gocuda_k] = v[gocuda_k];
			}
		}
		if (gridDim.y > 1 && gocuda_counters && gocuda_arrive(&gocuda_counters[gocuda_b], gridDim.y)) {
			// The block's warps (of 256 threads) fold its columns, a warp a column.
			for (long long q = gocuda_t / 32; q < gocuda_span; q += 256 / 32) {
				const long long o = gocuda_b * gocuda_span + q;
				if (o >= cols) break;
				const gocuda_acc w = gocuda_fold(gocuda_partial, gridDim.y, cols, o, gocuda_t % 32);
				if (gocuda_t % 32 == 0) gocuda_post(gocuda_out, o, w, rows);
			}
			if (gocuda_t == 0) gocuda_counters[gocuda_b] = 0;
		}
		__syncthreads();
	}
}
// Columns of a few rows: a thread folds width columns (one where the
// buffers or the rows are not aligned for vectors) down every row.
extern "C" __global__ void wsum_short(const unsigned short* __restrict__ gocudap_x, const signed char* __restrict__ gocudap_w, float* gocuda_out, long long rows, long long cols) {
	const long long gocuda_stride = (long long)blockDim.x * gridDim.x, gocuda_t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
	if (((unsigned long long)gocudap_x % sizeof(gocuda_vec<unsigned short, 8>) == 0 && (unsigned long long)gocudap_w % sizeof(gocuda_vec<signed char, 8>) == 0) && cols % 8 == 0) {
		for (long long gocuda_c = gocuda_t; gocuda_c < cols / 8; gocuda_c += gocuda_stride) {
			gocuda_acc v[8];
			#pragma unroll
			for (int gocuda_k = 0; gocuda_k < 8; gocuda_k++) v[gocuda_k] = gocuda_identity();
			#pragma unroll 4
			for (long long r = 0; r < rows; r++) {
				const long long gocuda_j = r * (cols / 8) + gocuda_c;
				const gocuda_vec<unsigned short, 8> gocudav_x = ((const gocuda_vec<unsigned short, 8>*)gocudap_x)[gocuda_j]; float gocudaf_x[8]; gocuda_load_f16(gocudaf_x, gocudav_x); const gocuda_vec<signed char, 8> gocudav_w = ((const gocuda_vec<signed char, 8>*)gocudap_w)[gocuda_j]; 
				#pragma unroll
				for (int gocuda_k = 0; gocuda_k < 8; gocuda_k++) v[gocuda_k] = gocuda_reduce(v[gocuda_k], gocuda_map(gocudaf_x[gocuda_k], gocudav_w.v[gocuda_k], gocuda_j * 8 + gocuda_k));
			}
			#pragma unroll
			for (int gocuda_k = 0; gocuda_k < 8; gocuda_k++) gocuda_post(gocuda_out, gocuda_c * 8 + gocuda_k, v[gocuda_k], rows);
		}
		return;
	}
	for (long long c = gocuda_t; c < cols; c += gocuda_stride) {
		gocuda_acc v = gocuda_identity();
		#pragma unroll 4
		for (long long r = 0; r < rows; r++) v = gocuda_reduce(v, gocuda_map(gocuda_f16_to_f32(gocudap_x[r * cols + c]), gocudap_w[r * cols + c], r * cols + c));
		gocuda_post(gocuda_out, c, v, rows);
	}
}
