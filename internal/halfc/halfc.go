// Package halfc holds the CUDA C that converts float16 and bfloat16, kept
// as their bits in an unsigned short, to and from float: one text that
// the generated kernels of compute and the kernels of nn (its layers and
// attention) all start with, so that every kernel rounds the same way.
//
// Source defines, each __device__ __forceinline__:
//
//   - gocuda_f16_to_f32(h) and gocuda_bf16_to_f32(h): h as a float,
//     exactly (every half is a float), a NaN with its sign and payload as
//     they are, as cuda.Float16.Float32 and cuda.BFloat16.Float32 give;
//   - gocuda_f32_to_f16(f) and gocuda_f32_to_bf16(f): f rounded to the
//     nearest half, ties to even, as cuda.NewFloat16 and cuda.NewBFloat16
//     give: past the largest finite half an infinity, below half the
//     smallest float16 subnormal (2^-25, itself a tie, to even) a zero of
//     f's sign, and a NaN quiet with its sign and the top of its payload;
//   - their parts, for the vector conversions that test a whole vector for
//     NaNs at once (compute's gocuda_load_f16 and its kin): _num, the
//     conversion of any value but a NaN (gocuda_f32_to_f16_num,
//     gocuda_f32_to_bf16_num, gocuda_f16_to_f32_num, which leaves a NaN a
//     NaN but not its bits), and _nan, the bits of a NaN
//     (gocuda_f32_to_f16_nan, gocuda_f32_to_bf16_nan,
//     gocuda_f16_to_f32_nan). A whole conversion tests for a NaN with one
//     float comparison, v != v, cheaper than a test of the bits, and takes
//     _nan's bits for one.
//
// Each _num has two branches. Compiled for a device (__CUDA_ARCH__
// defined), it is the device's conversion instruction (cvt.rn.f16.f32,
// cvt.f32.f16; cvt.rn.bf16.f32 from sm_80 on, integer arithmetic before
// it). Compiled for the host (the fake driver's tests, which run kernels
// on the CPU through internal/hostcc and internal/kernelhook), it is
// integer arithmetic. Both round to nearest, ties to even, and give the
// same bits, subnormals included; the package's tests hold the host's
// branch to Go's conversions for every half and for floats around every
// rounding boundary, and compute's (TestCastBits) the device's.
//
// No CUDA header is included (NVRTC does not always find them, and the
// host's compile has none): the text needs only __float_as_uint and
// __uint_as_float, which NVRTC and internal/hostcc's shim both define.
package halfc

// Source is the conversions' CUDA C, to start a kernel's source with.
const Source = `
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
`
