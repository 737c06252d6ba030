package compute

import (
	"reflect"
	"strings"

	cuda "github.com/gocuda/cuda"
)

// Number is the element types the operations take: gocuda's integer and
// floating-point types. Float16 and BFloat16 are computed in float32.
type Number interface {
	int8 | int16 | int32 | int64 | uint8 | uint16 | uint32 | uint64 | float32 | float64 | cuda.Float16 | cuda.BFloat16
}

// Float is the floating-point element types, for the operations that make
// sense only on them (Exp, Sqrt, Softmax, ...).
type Float interface {
	float32 | float64 | cuda.Float16 | cuda.BFloat16
}

// dtype describes an element type in the generated CUDA C.
type dtype struct {
	name    string // as a parameter list names it: "float32"
	storage string // the C type in memory: "float", "unsigned short" for the halves
	value   string // the C type a kernel body computes in: "float" for the halves
	float   bool
	signed  bool
	half    string // "f16" or "bf16" for the halves: loads and stores convert
	goType  reflect.Type
}

var dtypes = []dtype{
	{"int8", "signed char", "signed char", false, true, "", reflect.TypeFor[int8]()},
	{"int16", "short", "short", false, true, "", reflect.TypeFor[int16]()},
	{"int32", "int", "int", false, true, "", reflect.TypeFor[int32]()},
	{"int64", "long long", "long long", false, true, "", reflect.TypeFor[int64]()},
	{"uint8", "unsigned char", "unsigned char", false, false, "", reflect.TypeFor[uint8]()},
	{"uint16", "unsigned short", "unsigned short", false, false, "", reflect.TypeFor[uint16]()},
	{"uint32", "unsigned int", "unsigned int", false, false, "", reflect.TypeFor[uint32]()},
	{"uint64", "unsigned long long", "unsigned long long", false, false, "", reflect.TypeFor[uint64]()},
	{"float32", "float", "float", true, true, "", reflect.TypeFor[float32]()},
	{"float64", "double", "double", true, true, "", reflect.TypeFor[float64]()},
	{"float16", "unsigned short", "float", true, true, "f16", reflect.TypeFor[cuda.Float16]()},
	{"bfloat16", "unsigned short", "float", true, true, "bf16", reflect.TypeFor[cuda.BFloat16]()},
}

// dtypeNamed returns the type a parameter list names.
func dtypeNamed(name string) (dtype, bool) {
	for _, d := range dtypes {
		if d.name == name {
			return d, true
		}
	}
	return dtype{}, false
}

// dtypeOf returns T's description.
func dtypeOf[T Number]() dtype {
	d, ok := dtypeOfGo(reflect.TypeFor[T]())
	if !ok {
		panic("compute: no dtype for " + reflect.TypeFor[T]().String()) // Number admits only the types above
	}
	return d
}

// dtypeOfGo returns the description of a Go type, if it is one of Number's.
func dtypeOfGo(t reflect.Type) (dtype, bool) {
	for _, d := range dtypes {
		if d.goType == t {
			return d, true
		}
	}
	return dtype{}, false
}

// load returns the C expression that reads element expr of storage as the
// type a body computes in.
func (d dtype) load(expr string) string {
	switch d.half {
	case "f16":
		return "gocuda_f16_to_f32(" + expr + ")"
	case "bf16":
		return "gocuda_bf16_to_f32(" + expr + ")"
	}
	return expr
}

// store returns the C expression that turns value, of the type a body
// computes in, into storage.
func (d dtype) store(value string) string {
	switch d.half {
	case "f16":
		return "gocuda_f32_to_f16((float)(" + value + "))"
	case "bf16":
		return "gocuda_f32_to_bf16((float)(" + value + "))"
	}
	return "(" + d.storage + ")(" + value + ")"
}

// prelude is the C every generated kernel starts with: the conversions of
// the halves, written as cuda.NewFloat16, Float16.Float32, cuda.NewBFloat16
// and BFloat16.Float32 are in Go, so that the device rounds bit for bit as
// the host does (round to nearest, ties to even; NaNs quiet, payload kept),
// and without CUDA's headers, which NVRTC does not always find; and the
// vector type of the kernels' wide loads and stores.
const prelude = `
// gocuda_vec is V elements of T loaded or stored at once (a 16-byte
// access at most): the pointer must be aligned to its size.
template <typename T, int V> struct alignas(sizeof(T) * V) gocuda_vec { T v[V]; };
__device__ __forceinline__ unsigned int gocuda_round_shift(unsigned int m, unsigned int shift) {
	unsigned int r = m >> shift, rem = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);
	if (rem > half || (rem == half && (r & 1u))) r++;
	return r;
}
__device__ __forceinline__ unsigned short gocuda_f32_to_f16(float f) {
	unsigned int b = __float_as_uint(f);
	unsigned short sign = (unsigned short)((b >> 16) & 0x8000u);
	int exp = (int)((b >> 23) & 0xffu);
	unsigned int frac = b & 0x7fffffu;
	if (exp == 0xff) return frac ? (unsigned short)(sign | 0x7e00u | (frac >> 13)) : (unsigned short)(sign | 0x7c00u);
	int e = exp - 127 + 15;
	if (e >= 0x1f) return (unsigned short)(sign | 0x7c00u);
	if (e <= 0) {
		if (e < -10) return sign;
		return (unsigned short)(sign | gocuda_round_shift(frac | 0x800000u, (unsigned int)(14 - e)));
	}
	return (unsigned short)(sign | gocuda_round_shift(((unsigned int)e << 23) | frac, 13));
}
__device__ __forceinline__ float gocuda_f16_to_f32(unsigned short h) {
	unsigned int sign = (unsigned int)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, frac = h & 0x3ffu;
	if (exp == 0) {
		if (frac == 0) return __uint_as_float(sign);
		unsigned int e = 127 - 15 + 1;
		while ((frac & 0x400u) == 0) { frac <<= 1; e--; }
		return __uint_as_float(sign | (e << 23) | ((frac & 0x3ffu) << 13));
	}
	if (exp == 0x1f) return __uint_as_float(sign | 0x7f800000u | (frac << 13));
	return __uint_as_float(sign | ((exp + 127 - 15) << 23) | (frac << 13));
}
__device__ __forceinline__ unsigned short gocuda_f32_to_bf16(float f) {
	unsigned int b = __float_as_uint(f);
	if ((b & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((b >> 16) | 0x40u);
	return (unsigned short)gocuda_round_shift(b, 16);
}
__device__ __forceinline__ float gocuda_bf16_to_f32(unsigned short h) { return __uint_as_float((unsigned int)h << 16); }
`

// ident reports whether s is a C identifier a parameter may be named. The
// generated code's own names start with gocuda_, and it names parameter
// x's pointer or scalar gocudap_x and its vector gocudav_x: none of these
// can be a user's name, which may not start with gocuda, nor each other.
func ident(s string) bool {
	if s == "" || strings.HasPrefix(s, "gocuda") || strings.HasPrefix(s, "_") {
		return false
	}
	for i, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r == '_':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}
