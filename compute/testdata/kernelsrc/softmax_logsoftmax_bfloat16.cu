
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

typedef float gocuda_v;
typedef unsigned short gocuda_s;
// gocuda_join folds (m2, s2) into (m, s): the largest, and the sum of
// exponentials rescaled to it; a sum of 0 is nothing folded yet. A NaN
// anywhere makes both NaN.
__device__ __forceinline__ void gocuda_join(gocuda_v* m, gocuda_v* s, gocuda_v m2, gocuda_v s2) {
	if (m2 != m2 || *m != *m) { *m = m2 + *m; *s = *m; return; }
	if (s2 == 0) return;
	if (*s == 0) { *m = m2; *s = s2; return; }
	if (m2 == *m) { *s += s2; return; } // infinities too, whose difference is NaN
	if (m2 > *m) { *s = *s * exp(*m - m2) + s2; *m = m2; }
	else *s += s2 * exp(m2 - *m);
}
// gocuda_warpjoin joins the pairs of G lanes into the first's, in a fixed
// tree, and gives it to all G.
template <int G> __device__ __forceinline__ void gocuda_warpjoin(gocuda_v* m, gocuda_v* s) {
	#pragma unroll
	for (int k = G / 2; k > 0; k >>= 1) {
		const gocuda_v m2 = __shfl_down_sync(0xffffffffu, *m, k), s2 = __shfl_down_sync(0xffffffffu, *s, k);
		gocuda_join(m, s, m2, s2);
	}
	*m = __shfl_sync(0xffffffffu, *m, 0, G);
	*s = __shfl_sync(0xffffffffu, *s, 0, G);
}
// gocuda_blockjoin joins a block's pairs, its warps' in its first warp,
// and gives the result to every thread; every thread must call it.
__device__ __forceinline__ void gocuda_blockjoin(gocuda_v* m, gocuda_v* s) {
	__shared__ gocuda_v sm[32], ss[32];
	gocuda_warpjoin<32>(m, s);
	if (threadIdx.x % 32 == 0) { sm[threadIdx.x / 32] = *m; ss[threadIdx.x / 32] = *s; }
	__syncthreads();
	if (threadIdx.x < 32) {
		const bool w = threadIdx.x < blockDim.x / 32;
		*m = w ? sm[threadIdx.x] : 0;
		*s = w ? ss[threadIdx.x] : 0;
		gocuda_warpjoin<32>(m, s);
		if (threadIdx.x == 0) { sm[0] = *m; ss[0] = *s; }
	}
	__syncthreads();
	*m = sm[0];
	*s = ss[0];
	__syncthreads(); // sm and ss are the next call's
}
// gocuda_stats folds vectors [from, to) of a row (V elements each), a
// thread every lanes-th from lane, into (m, s), keeping each in cache[j -
// from] when cache is not null. A vector's pair is made whole first, as
// gocuda_short makes a row's (its largest, a NaN its own largest; then
// the sum of e^(x - largest), 1 where x is the largest), and joined once:
// an exponential an element and one a vector, not one or two an element
// and a branch each. A thread's vectors are read GOCUDA_BATCH at a time,
// all of them before any is folded (in order: the same bits), so that a
// row that a few blocks take alone has that many reads in flight: the
// compiler does not move a read above the store into the cache before it,
// which may be the same memory for all it knows.
#define GOCUDA_BATCH 2
template <int V>
__device__ __forceinline__ void gocuda_stats(const gocuda_s* in, long long from, long long to, long long lane, long long lanes, gocuda_vec<gocuda_s, V>* cache, gocuda_v* m, gocuda_v* s) {
	typedef gocuda_vec<gocuda_s, V> vec;
	for (long long j0 = from + lane; j0 < to; j0 += GOCUDA_BATCH * lanes) {
		vec batch[GOCUDA_BATCH];
		#pragma unroll
		for (int u = 0; u < GOCUDA_BATCH; u++) if (j0 + u * lanes < to) batch[u] = ((const vec*)in)[j0 + u * lanes];
		#pragma unroll
		for (int u = 0; u < GOCUDA_BATCH; u++) {
			const long long j = j0 + u * lanes;
			if (j >= to) break;
			const vec xs = batch[u];
			if (cache) cache[j - from] = xs;
			gocuda_v x[V];
			#pragma unroll
			for (int k = 0; k < V; k++) x[k] = gocuda_bf16_to_f32(xs.v[k]);
			gocuda_v vm = x[0], vs = 0;
			#pragma unroll
			for (int k = 1; k < V; k++) vm = (x[k] != x[k] || x[k] > vm) ? x[k] : vm;
			#pragma unroll
			for (int k = 0; k < V; k++) vs += x[k] == vm ? (gocuda_v)1 : exp(x[k] - vm);
			gocuda_join(m, s, vm, vs);
		}
	}
}
// gocuda_write writes the results of vectors [from, to) of a row, read
// back from cache (only what this thread kept) or from in, GOCUDA_BATCH
// vectors at a time before any is written (out may be in: each thread
// reads its own vectors before it writes them).
template <int V>
__device__ __forceinline__ void gocuda_write(const gocuda_s* in, gocuda_s* out, long long from, long long to, long long lane, long long lanes, const gocuda_vec<gocuda_s, V>* cache, gocuda_v m, gocuda_v sum) {
	typedef gocuda_vec<gocuda_s, V> vec;
	for (long long j0 = from + lane; j0 < to; j0 += GOCUDA_BATCH * lanes) {
		vec batch[GOCUDA_BATCH];
		#pragma unroll
		for (int u = 0; u < GOCUDA_BATCH; u++) if (j0 + u * lanes < to) batch[u] = cache ? cache[j0 + u * lanes - from] : ((const vec*)in)[j0 + u * lanes];
		#pragma unroll
		for (int u = 0; u < GOCUDA_BATCH; u++) {
			const long long j = j0 + u * lanes;
			if (j >= to) break;
			const vec xs = batch[u];
			vec ys;
			#pragma unroll
			for (int k = 0; k < V; k++) { const gocuda_v x = gocuda_bf16_to_f32(xs.v[k]); ys.v[k] = gocuda_f32_to_bf16((float)(x - m - log(sum))); }
			((vec*)out)[j] = ys;
		}
	}
}
// gocuda_short takes a short row with G lanes of a warp in three passes
// over it (each lane's few elements stay in the cache): the largest
// (a NaN its own largest), the sum of e^(x - m) (1 where x is m, so that
// infinities count as the online join counts them), the results.
template <int V, int G>
__device__ __forceinline__ void gocuda_short(const gocuda_s* in, gocuda_s* out, long long vectors, long long lane, bool live) {
	typedef gocuda_vec<gocuda_s, V> vec;
	gocuda_v m = -__int_as_float(0x7f800000), sum = 0;
	if (live) {
		#pragma unroll 2
		for (long long j = lane; j < vectors; j += G) {
			const vec xs = ((const vec*)in)[j];
			#pragma unroll
			for (int k = 0; k < V; k++) { const gocuda_v x = gocuda_bf16_to_f32(xs.v[k]); m = (x != x || x > m) ? x : m; }
		}
	}
	#pragma unroll
	for (int k = G / 2; k > 0; k >>= 1) { const gocuda_v m2 = __shfl_down_sync(0xffffffffu, m, k); m = (m2 != m2 || m2 > m) ? m2 : m; }
	m = __shfl_sync(0xffffffffu, m, 0, G);
	if (live) {
		#pragma unroll 2
		for (long long j = lane; j < vectors; j += G) {
			const vec xs = ((const vec*)in)[j];
			#pragma unroll
			for (int k = 0; k < V; k++) { const gocuda_v x = gocuda_bf16_to_f32(xs.v[k]); sum += x == m ? (gocuda_v)1 : exp(x - m); }
		}
	}
	#pragma unroll
	for (int k = G / 2; k > 0; k >>= 1) sum += __shfl_down_sync(0xffffffffu, sum, k);
	sum = __shfl_sync(0xffffffffu, sum, 0, G);
	if (live) gocuda_write<V>(in, out, 0, vectors, lane, G, 0, m, sum);
}
// gocuda_rows: G lanes of a warp take a row (G of 1 to 32), or the whole
// block (G = 0), in one pass with the online join, the row kept in cache.
template <int V, int G>
__device__ __forceinline__ void gocuda_rows(const gocuda_s* src, gocuda_s* dst, long long rows, long long cols, gocuda_vec<gocuda_s, V>* cache) {
	const long long per = G ? blockDim.x / G : 1, lanes = G ? G : blockDim.x, lane = G ? threadIdx.x % G : threadIdx.x;
	for (long long base = (long long)blockIdx.x * per; base < rows; base += (long long)gridDim.x * per) {
		const long long r = base + (G ? threadIdx.x / G : 0);
		if constexpr (G > 0) {
			gocuda_short<V, G>(src + r * cols, dst + r * cols, cols / V, lane, r < rows);
		} else {
			gocuda_v m = 0, sum = 0;
			gocuda_stats<V>(src + r * cols, 0, cols / V, lane, lanes, cache, &m, &sum);
			gocuda_blockjoin(&m, &sum);
			gocuda_write<V>(src + r * cols, dst + r * cols, 0, cols / V, lane, lanes, cache, m, sum);
		}
	}
}
// gocuda_staged takes rows of a few elements a thread each (G = 1), the
// block's rows staged through shared memory (st, blockDim.x * cols values)
// so that they are read and written in runs, each thread's row in three
// passes as gocuda_short's, over registers where the row has
// GOCUDA_STAGED elements or fewer (planRows gives a thread no longer
// row), each exponential computed once.
#define GOCUDA_STAGED (32 / sizeof(gocuda_s))
__device__ __forceinline__ void gocuda_staged(const gocuda_s* src, gocuda_s* dst, long long rows, long long cols, gocuda_v* st) {
	for (long long base = (long long)blockIdx.x * blockDim.x; base < rows; base += (long long)gridDim.x * blockDim.x) {
		const long long n = (rows - base < blockDim.x ? rows - base : blockDim.x) * cols;
		const gocuda_s* in = src + base * cols;
		for (long long e = threadIdx.x; e < n; e += blockDim.x) st[e] = gocuda_bf16_to_f32(in[e]);
		__syncthreads();
		if ((long long)threadIdx.x * cols < n && cols <= (long long)GOCUDA_STAGED) {
			gocuda_v* row = st + threadIdx.x * cols;
			gocuda_v xs[GOCUDA_STAGED];
			gocuda_v m = -__int_as_float(0x7f800000), sum = 0;
			#pragma unroll
			for (int c = 0; c < (int)GOCUDA_STAGED; c++) if (c < cols) { xs[c] = row[c]; m = (xs[c] != xs[c] || xs[c] > m) ? xs[c] : m; }
			#pragma unroll
			for (int c = 0; c < (int)GOCUDA_STAGED; c++) if (c < cols) { const gocuda_v e = exp(xs[c] - m); sum += xs[c] == m ? (gocuda_v)1 : e;  }
			const gocuda_v ls = log(sum);
			#pragma unroll
			for (int c = 0; c < (int)GOCUDA_STAGED; c++) if (c < cols) { const gocuda_v x = xs[c]; row[c] = x - m - ls; }
		} else if ((long long)threadIdx.x * cols < n) {
			gocuda_v* row = st + threadIdx.x * cols;
			gocuda_v m = -__int_as_float(0x7f800000), sum = 0;
			for (long long c = 0; c < cols; c++) m = (row[c] != row[c] || row[c] > m) ? row[c] : m;
			for (long long c = 0; c < cols; c++) sum += row[c] == m ? (gocuda_v)1 : exp(row[c] - m);
			for (long long c = 0; c < cols; c++) { const gocuda_v x = row[c]; row[c] = x - m - log(sum); }
		}
		__syncthreads();
		gocuda_s* out = dst + base * cols;
		for (long long e = threadIdx.x; e < n; e += blockDim.x) out[e] = gocuda_f32_to_bf16((float)(st[e]));
		__syncthreads();
	}
}
template <int V>
__device__ __forceinline__ void gocuda_grouped(const gocuda_s* src, gocuda_s* dst, long long rows, long long cols, int group, gocuda_vec<gocuda_s, V>* cache) {
	// Rows of lanes of fewer than 32 are held in registers (_regsE), as
	// rows of 32 lanes are but float64's past 1024 elements (planRegs),
	// and a thread's rows are staged: this kernel has no other group.
	switch (group) {
	case 32: gocuda_rows<V, 32>(src, dst, rows, cols, 0); break;
	case 0: gocuda_rows<V, 0>(src, dst, rows, cols, cache); break;
	default: __trap();
	}
}
#define GOCUDA_V (16 / sizeof(gocuda_s))
#define GOCUDA_WIDE (cols % GOCUDA_V == 0 && (unsigned long long)gocuda_src % 16 == 0 && (unsigned long long)gocuda_dst % 16 == 0)
// gocuda_loadv sets f to the values of xs's elements, gocuda_storev ys's
// elements to f's: for the halves, a vector at a time (the prelude's,
// the same bits as element by element).
template <int V> __device__ __forceinline__ void gocuda_loadv(gocuda_v (&f)[V], const gocuda_vec<gocuda_s, V>& xs) {
	gocuda_load_bf16(f, xs);
}
template <int V> __device__ __forceinline__ void gocuda_storev(gocuda_vec<gocuda_s, V>& ys, const gocuda_v (&f)[V]) {
	if constexpr (V % 2 == 0) gocuda_store_bf16(ys, f);
	else {
	#pragma unroll
	for (int k = 0; k < V; k++) ys.v[k] = gocuda_f32_to_bf16((float)(f[k]));
	}
}
// gocuda_regs: G lanes of a warp take a row (rows of groupCols elements
// or fewer), each lane keeping its N vectors of V (vectors lane, lane +
// G, ...) in registers: the row is read from device memory once and
// written once, and each exponential computed once. The passes are
// gocuda_short's (the largest, then the sum of e^(x - m), then the
// results), in the same order: the same bits.
template <int V, int G, int N>
__device__ __forceinline__ void gocuda_regs(const gocuda_s* src, gocuda_s* dst, long long rows, long long cols) {
	typedef gocuda_vec<gocuda_s, V> vec;
	const int lane = threadIdx.x % G, vectors = (int)(cols / V);
	const long long per = blockDim.x / G;
	for (long long base = (long long)blockIdx.x * per; base < rows; base += (long long)gridDim.x * per) {
		const long long r = base + threadIdx.x / G;
		const bool live = r < rows;
		const vec* in = (const vec*)(src + r * cols);
		gocuda_v x[N][V];
		#pragma unroll
		for (int k = 0; k < N; k++) {
			if (live && lane + k * G < vectors) gocuda_loadv<V>(x[k], in[lane + k * G]);
		}
		gocuda_v m = -__int_as_float(0x7f800000), sum = 0;
		#pragma unroll
		for (int k = 0; k < N; k++) {
			if (live && lane + k * G < vectors) {
				#pragma unroll
				for (int i = 0; i < V; i++) m = (x[k][i] != x[k][i] || x[k][i] > m) ? x[k][i] : m;
			}
		}
		#pragma unroll
		for (int k = G / 2; k > 0; k >>= 1) { const gocuda_v m2 = __shfl_down_sync(0xffffffffu, m, k); m = (m2 != m2 || m2 > m) ? m2 : m; }
		m = __shfl_sync(0xffffffffu, m, 0, G);
		#pragma unroll
		for (int k = 0; k < N; k++) {
			if (live && lane + k * G < vectors) {
				#pragma unroll
				for (int i = 0; i < V; i++) { const gocuda_v e = exp(x[k][i] - m); sum += x[k][i] == m ? (gocuda_v)1 : e;  }
			}
		}
		#pragma unroll
		for (int k = G / 2; k > 0; k >>= 1) sum += __shfl_down_sync(0xffffffffu, sum, k);
		sum = __shfl_sync(0xffffffffu, sum, 0, G);
		const gocuda_v ls = log(sum);
		vec* out = (vec*)(dst + r * cols);
		#pragma unroll
		for (int k = 0; k < N; k++) {
			if (live && lane + k * G < vectors) {
				gocuda_v y[V];
				#pragma unroll
				for (int i = 0; i < V; i++) { const gocuda_v x_ = x[k][i]; y[i] = x_ - m - ls; }
				vec ys;
				gocuda_storev<V>(ys, y);
				out[lane + k * G] = ys;
			}
		}
	}
}
extern "C" __global__ __launch_bounds__(256, 1) void logsoftmax_bfloat16_regs16(const gocuda_s* gocuda_src, gocuda_s* gocuda_dst, long long rows, long long cols, int group) {
	if (GOCUDA_WIDE) {
		switch (group) {
		case 2: gocuda_regs<GOCUDA_V, 2, 2>(gocuda_src, gocuda_dst, rows, cols); return;
		case 4: gocuda_regs<GOCUDA_V, 4, 2>(gocuda_src, gocuda_dst, rows, cols); return;
		case 8: gocuda_regs<GOCUDA_V, 8, 2>(gocuda_src, gocuda_dst, rows, cols); return;
		case 16: gocuda_regs<GOCUDA_V, 16, 2>(gocuda_src, gocuda_dst, rows, cols); return;
		case 32: gocuda_regs<GOCUDA_V, 32, 2>(gocuda_src, gocuda_dst, rows, cols); return;
		}
	} else {
		switch (group) {
		case 2: gocuda_regs<1, 2, 16>(gocuda_src, gocuda_dst, rows, cols); return;
		case 4: gocuda_regs<1, 4, 16>(gocuda_src, gocuda_dst, rows, cols); return;
		case 8: gocuda_regs<1, 8, 16>(gocuda_src, gocuda_dst, rows, cols); return;
		case 16: gocuda_regs<1, 16, 16>(gocuda_src, gocuda_dst, rows, cols); return;
		case 32: gocuda_regs<1, 32, 16>(gocuda_src, gocuda_dst, rows, cols); return;
		}
	}
	__trap(); // planRegs asked for no such kernel
}
extern "C" __global__ __launch_bounds__(256, 1) void logsoftmax_bfloat16_regs32(const gocuda_s* gocuda_src, gocuda_s* gocuda_dst, long long rows, long long cols, int group) {
	if (GOCUDA_WIDE) {
		switch (group) {
		case 32: gocuda_regs<GOCUDA_V, 32, 4>(gocuda_src, gocuda_dst, rows, cols); return;
		}
	} else {
		switch (group) {
		case 32: gocuda_regs<1, 32, 32>(gocuda_src, gocuda_dst, rows, cols); return;
		}
	}
	__trap(); // planRegs asked for no such kernel
}
extern "C" __global__ __launch_bounds__(256, 1) void logsoftmax_bfloat16_regs64(const gocuda_s* gocuda_src, gocuda_s* gocuda_dst, long long rows, long long cols, int group) {
	if (GOCUDA_WIDE) {
		switch (group) {
		case 32: gocuda_regs<GOCUDA_V, 32, 8>(gocuda_src, gocuda_dst, rows, cols); return;
		}
	} else {
		switch (group) {
		case 32: gocuda_regs<1, 32, 64>(gocuda_src, gocuda_dst, rows, cols); return;
		}
	}
	__trap(); // planRegs asked for no such kernel
}
// The kernel: group as planRows says, cached that the launch's dynamic
// shared memory holds a row (a block per row) or the block's rows (a
// thread per row: staged).
extern "C" __global__ __launch_bounds__(1024) void logsoftmax_bfloat16(const gocuda_s* gocuda_src, gocuda_s* gocuda_dst, long long rows, long long cols, int group, int cached) { // dst may be src: no __restrict__
	extern __shared__ gocuda_vec<gocuda_s, GOCUDA_V> gocuda_cache[];
	if (group == 1 && cached) gocuda_staged(gocuda_src, gocuda_dst, rows, cols, (gocuda_v*)gocuda_cache);
	else if (GOCUDA_WIDE) gocuda_grouped<GOCUDA_V>(gocuda_src, gocuda_dst, rows, cols, group, cached ? gocuda_cache : 0);
	else gocuda_grouped<1>(gocuda_src, gocuda_dst, rows, cols, group, cached ? (gocuda_vec<gocuda_s, 1>*)gocuda_cache : 0);
}
// A few long rows: block (k, r) joins chunk k of row r (chunk elements, a
// multiple of the vector width) into stats[2 * (k * rows + r)] and the next.
extern "C" __global__ void logsoftmax_bfloat16_stats(const gocuda_s* gocuda_src, gocuda_v* gocuda_stats_out, long long rows, long long cols, long long chunk) {
	const long long r = blockIdx.y, from = (long long)blockIdx.x * chunk, to = from + chunk < cols ? from + chunk : cols;
	const gocuda_s* gocuda_dst = gocuda_src; // for GOCUDA_WIDE
	gocuda_v m = 0, sum = 0;
	if (GOCUDA_WIDE) gocuda_stats<GOCUDA_V>(gocuda_src + r * cols, from / GOCUDA_V, to / GOCUDA_V, threadIdx.x, blockDim.x, 0, &m, &sum);
	else gocuda_stats<1>(gocuda_src + r * cols, from, to, threadIdx.x, blockDim.x, 0, &m, &sum);
	gocuda_blockjoin(&m, &sum);
	if (threadIdx.x == 0) { gocuda_stats_out[2 * ((long long)blockIdx.x * rows + r)] = m; gocuda_stats_out[2 * ((long long)blockIdx.x * rows + r) + 1] = sum; }
}
// Then block (k, r) joins row r's chunks in order (each warp the same
// tree, so every block the same result) and writes chunk k.
extern "C" __global__ void logsoftmax_bfloat16_apply(const gocuda_s* gocuda_src, gocuda_s* gocuda_dst, const gocuda_v* gocuda_stats_in, long long rows, long long cols, long long chunk, long long chunks) {
	const long long r = blockIdx.y, from = (long long)blockIdx.x * chunk, to = from + chunk < cols ? from + chunk : cols;
	gocuda_v m = 0, sum = 0;
	for (long long k = threadIdx.x % 32; k < chunks; k += 32) gocuda_join(&m, &sum, gocuda_stats_in[2 * (k * rows + r)], gocuda_stats_in[2 * (k * rows + r) + 1]);
	gocuda_warpjoin<32>(&m, &sum);
	if (GOCUDA_WIDE) gocuda_write<GOCUDA_V>(gocuda_src + r * cols, gocuda_dst + r * cols, from / GOCUDA_V, to / GOCUDA_V, threadIdx.x, blockDim.x, 0, m, sum);
	else gocuda_write<1>(gocuda_src + r * cols, gocuda_dst + r * cols, from, to, threadIdx.x, blockDim.x, 0, m, sum);
}
