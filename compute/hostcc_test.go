package compute

import (
	"errors"
	"fmt"
	"strings"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/hostcc"
	"github.com/gocuda/cuda/nvrtc"
)

// On the fake driver, which has no NVRTC, the tests compile the generated
// kernels for the host (internal/hostcc), and the fake runs them on the
// CPU: block- and warp-synchronous code as a GPU runs it.

// hostVersion is the host compiler's "NVRTC version": part of every cache
// key, so that its images are never taken for NVRTC's or the stand-in's.
var hostVersion = cuda.Version{Major: 0, Minor: 0, Patch: 2}

// HostCompiles reports whether kernels can be compiled for the host here
// (a C++ compiler is found).
func HostCompiles() bool { return hostcc.Available() }

// hostCompile compiles a generated source for the host: prelude, whose
// conversions are the device's instructions, in host C++ (hostPrelude).
// A source that does not compile is an error of NVRTC's shape: wrapping
// ErrInvalidValue, the compiler's log in which the source is named as
// NVRTC would name it.
func hostCompile(source string, opts nvrtc.Options) ([]byte, error) {
	source = strings.Replace(source, prelude, hostPrelude, 1)
	image, err := hostcc.Compile(source, opts.Name)
	if ce := (*hostcc.CompileError)(nil); errors.As(err, &ce) {
		return nil, &nvrtc.Error{Op: "Compile", Err: cuda.ErrInvalidValue, Detail: fmt.Sprintf("compiling %s for the host (internal/hostcc):\n%s", ce.Name, ce.Log)}
	}
	return image, err
}

// hostPrelude is prelude for the host: the same functions, the halves'
// conversions in integer arithmetic that gives bit for bit what the
// device's cvt instructions give (round to nearest, ties to even;
// subnormals kept; overflow to infinity), NaNs as prelude makes them.
// TestCastBits checks them against cuda.NewFloat16 and cuda.NewBFloat16.
const hostPrelude = `
template <typename T, int V> struct alignas(sizeof(T) * V) gocuda_vec { T v[V]; };
__device__ __forceinline__ unsigned short gocuda_f32_to_f16(float f) {
	unsigned int b = __float_as_uint(f);
	if ((b & 0x7fffffffu) > 0x7f800000u) return (unsigned short)(((b >> 16) & 0x8000u) | 0x7e00u | ((b & 0x7fffffu) >> 13));
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
}
__device__ __forceinline__ float gocuda_f16_to_f32(unsigned short h) {
	if ((h & 0x7c00u) == 0x7c00u && (h & 0x3ffu)) return __uint_as_float(((unsigned int)(h & 0x8000u) << 16) | 0x7f800000u | ((unsigned int)(h & 0x3ffu) << 13));
	unsigned int sign = (unsigned int)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
	if (e == 0x1fu) return __uint_as_float(sign | 0x7f800000u);
	if (e == 0) {
		float v = (float)m * 5.9604644775390625e-08f; // m * 2^-24, exact
		return sign ? -v : v;
	}
	return __uint_as_float(sign | ((e + 112u) << 23) | (m << 13));
}
__device__ __forceinline__ unsigned short gocuda_f32_to_bf16(float f) {
	unsigned int b = __float_as_uint(f);
	if ((b & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((b >> 16) | 0x40u);
	unsigned int r = b >> 16, rem = b & 0xffffu;
	if (rem > 0x8000u || (rem == 0x8000u && (r & 1u))) r++;
	return (unsigned short)r;
}
__device__ __forceinline__ float gocuda_bf16_to_f32(unsigned short h) { return __uint_as_float((unsigned int)h << 16); }
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
`
