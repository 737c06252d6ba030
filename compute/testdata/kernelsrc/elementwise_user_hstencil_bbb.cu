
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

template <bool BF> __device__ __forceinline__ float gocuda_half_load(unsigned short h) { return BF ? gocuda_bf16_to_f32(h) : gocuda_f16_to_f32(h); }
template <bool BF> __device__ __forceinline__ unsigned short gocuda_half_store(float f) { return BF ? gocuda_f32_to_bf16(f) : gocuda_f32_to_f16(f); }
template <bool BF> struct gocuda_raw_in {
	const unsigned short* p;
	__device__ __forceinline__ float operator[](long long j) const { return gocuda_half_load<BF>(p[j]); }
};
template <bool BF> struct gocuda_half_ref {
	unsigned short* p;
	__device__ __forceinline__ operator float() const { return gocuda_half_load<BF>(*p); }
	__device__ __forceinline__ gocuda_half_ref& operator=(float v) { *p = gocuda_half_store<BF>(v); return *this; }
	__device__ __forceinline__ gocuda_half_ref& operator=(const gocuda_half_ref& o) { return *this = (float)o; }
	__device__ __forceinline__ gocuda_half_ref& operator+=(float v) { return *this = (float)*this + v; }
	__device__ __forceinline__ gocuda_half_ref& operator-=(float v) { return *this = (float)*this - v; }
	__device__ __forceinline__ gocuda_half_ref& operator*=(float v) { return *this = (float)*this * v; }
	__device__ __forceinline__ gocuda_half_ref& operator/=(float v) { return *this = (float)*this / v; }
};
template <bool BF> struct gocuda_raw_out {
	unsigned short* p;
	__device__ __forceinline__ gocuda_half_ref<BF> operator[](long long j) const { return gocuda_half_ref<BF>{p + j}; }
};

__device__ __forceinline__ void gocuda_body(const gocuda_raw_in<false> x, const gocuda_raw_out<true> acc, float& y, const long long i, const long long n) {
y = x[i] + x[i + 1]; acc[i] += y
;
}
extern "C" __global__ void hstencil(const unsigned short* __restrict__ gocudap_x, unsigned short* gocudap_acc, unsigned short* gocudap_y, long long n) {
	const long long gocuda_stride = (long long)blockDim.x * gridDim.x;
	long long gocuda_start = 0;
	if ((unsigned long long)gocudap_y % sizeof(gocuda_vec<unsigned short, 8>) == 0) {
		const long long gocuda_vectors = n / 8;
		for (long long gocuda_j = (long long)blockIdx.x * blockDim.x + threadIdx.x; gocuda_j < gocuda_vectors; gocuda_j += gocuda_stride) {
			gocuda_vec<unsigned short, 8> gocudav_y;
			float gocudaf_y[8];
			#pragma unroll
			for (int gocuda_k = 0; gocuda_k < 8; gocuda_k++) {
				const long long i = gocuda_j * 8 + gocuda_k;
				float y;
				gocuda_body(gocuda_raw_in<false>{gocudap_x}, gocuda_raw_out<true>{gocudap_acc}, y, i, n);
				gocudaf_y[gocuda_k] = (float)(y);
			}
			gocuda_store_f16(gocudav_y, gocudaf_y);
			((gocuda_vec<unsigned short, 8>*)gocudap_y)[gocuda_j] = gocudav_y;
		}
		gocuda_start = gocuda_vectors * 8;
	}
	for (long long i = gocuda_start + (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gocuda_stride) {
		float y;
		gocuda_body(gocuda_raw_in<false>{gocudap_x}, gocuda_raw_out<true>{gocudap_acc}, y, i, n);
		gocudap_y[i] = gocuda_f32_to_f16((float)(y));
	}
}
