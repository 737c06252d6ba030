
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

typedef double gocuda_v;
// gocuda_better reports whether (bv, bi) beats (av, ai).
// An index of 0x7fff... is no element: it loses to any.
__device__ __forceinline__ bool gocuda_better(gocuda_v av, long long ai, gocuda_v bv, long long bi) {
	if (bi == 0x7fffffffffffffffLL) return false;
	if (ai == 0x7fffffffffffffffLL) return true;
	bool an = av != av, bn = bv != bv;
	if (an || bn) return bn && (!an || bi < ai);
	return bv > av || (bv == av && bi < ai);
}
// gocuda_warp leaves lane 0 the best of its warp's, in a fixed tree.
__device__ __forceinline__ void gocuda_warp(gocuda_v* v, long long* i) {
	#pragma unroll
	for (int k = 16; k > 0; k >>= 1) {
		const gocuda_v v2 = gocuda_down(*v, k);
		const long long i2 = gocuda_down(*i, k);
		if (gocuda_better(*v, *i, v2, i2)) { *v = v2; *i = i2; }
	}
}
// gocuda_block leaves thread 0 the best of its block's (blockDim.x a
// multiple of 32).
__device__ __forceinline__ void gocuda_block(gocuda_v* v, long long* i) {
	__shared__ gocuda_v sv[32];
	__shared__ long long si[32];
	gocuda_warp(v, i);
	if (threadIdx.x % 32 == 0) { sv[threadIdx.x / 32] = *v; si[threadIdx.x / 32] = *i; }
	__syncthreads();
	if (threadIdx.x < 32) {
		const bool w = threadIdx.x < blockDim.x / 32;
		*v = w ? sv[threadIdx.x] : 0;
		*i = w ? si[threadIdx.x] : 0x7fffffffffffffffLL;
		gocuda_warp(v, i);
	}
}
// gocuda_take reports whether x, at a later index than v's, beats v
// (best is v's index): the loops' test, each thread's indices rising.
__device__ __forceinline__ bool gocuda_take(gocuda_v v, long long best, gocuda_v x) {
	return best == 0x7fffffffffffffffLL || x > v || (x != x && v == v);
}
// The first pass: each thread the best of its elements, 16 bytes at a
// time where src is aligned for it, four loads in flight; a block's best
// into pi (and pv, unless null: a single block writes the index alone,
// into the output).
extern "C" __global__ __launch_bounds__(1024) void argmax_float64_partial(const double* __restrict__ src, long long n, gocuda_v* pv, long long* pi, unsigned int* counter, long long* out) {
	typedef gocuda_vec<double, 16 / sizeof(double)> vec;
	const int V = 16 / sizeof(double);
	gocuda_v v = 0;
	long long best = 0x7fffffffffffffffLL, start = 0;
	const long long stride = (long long)blockDim.x * gridDim.x, t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
	if ((unsigned long long)src % 16 == 0) {
		const long long vectors = n / V;
		for (long long j = t; j < vectors; j += 4 * stride) {
			vec xs[4];
			#pragma unroll
			for (int u = 0; u < 4; u++)
				if (j + u * stride < vectors) xs[u] = ((const vec*)src)[j + u * stride];
			#pragma unroll
			for (int u = 0; u < 4; u++) {
				if (j + u * stride >= vectors) break;
				#pragma unroll
				for (int k = 0; k < V; k++) {
					const gocuda_v x = xs[u].v[k];
					if (gocuda_take(v, best, x)) { v = x; best = (j + u * stride) * V + k; }
				}
			}
		}
		start = vectors * V;
	}
	for (long long i = start + t; i < n; i += stride) {
		const gocuda_v x = src[i];
		if (gocuda_take(v, best, x)) { v = x; best = i; }
	}
	gocuda_block(&v, &best);
	if (threadIdx.x == 0) {
		if (pv) pv[blockIdx.x] = v;
		pi[blockIdx.x] = best;
	}
	if (!counter) return; // _final folds the blocks'
	// The last block to finish folds the blocks' bests, as _final does,
	// and sets the counter back to zero.
	__shared__ bool last;
	__threadfence();
	__syncthreads();
	if (threadIdx.x == 0) last = atomicAdd(counter, 1u) == gridDim.x - 1;
	__syncthreads();
	if (!last) return;
	v = 0;
	best = 0x7fffffffffffffffLL;
	for (long long j = threadIdx.x; j < gridDim.x; j += blockDim.x) {
		const gocuda_v pvj = *(const volatile gocuda_v*)&pv[j];
		const long long pij = *(const volatile long long*)&pi[j];
		if (gocuda_better(v, best, pvj, pij)) { v = pvj; best = pij; }
	}
	gocuda_block(&v, &best);
	if (threadIdx.x == 0) {
		out[0] = best;
		*counter = 0;
	}
}
extern "C" __global__ void argmax_float64_final(const gocuda_v* pv, const long long* pi, long long m, long long* out) {
	gocuda_v v = 0;
	long long best = 0x7fffffffffffffffLL;
	for (long long j = threadIdx.x; j < m; j += blockDim.x)
		if (gocuda_better(v, best, pv[j], pi[j])) { v = pv[j]; best = pi[j]; }
	gocuda_block(&v, &best);
	if (threadIdx.x == 0) out[0] = best;
}
