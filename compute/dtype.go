package compute

import (
	"reflect"
	"strings"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/halfc"
)

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

// dtypePtr returns T's entry of dtypes: a type switch for Go's own types,
// cheap enough for every launch's arguments; a type defined on one of them
// (type Celsius float32) by its kind. Float16 and BFloat16 are told by
// identity: their kind is uint16's, and a type defined on them is an
// integer of 16 bits, as cuda.Integer has it.
func dtypePtr[T cuda.Number]() *dtype {
	var i int
	switch any(*new(T)).(type) {
	case int8:
		i = 0
	case int16:
		i = 1
	case int32:
		i = 2
	case int64:
		i = 3
	case uint8:
		i = 4
	case uint16:
		i = 5
	case uint32:
		i = 6
	case uint64:
		i = 7
	case float32:
		i = 8
	case float64:
		i = 9
	case cuda.Float16:
		i = 10
	case cuda.BFloat16:
		i = 11
	default:
		d, _ := dtypeFor(reflect.TypeFor[T]())
		return d // every Number has one
	}
	return &dtypes[i]
}

// dtypeFor returns the entry of dtypes of Go type t: Float16 and BFloat16
// by identity, any other type by its kind; false for a type of no entry.
func dtypeFor(t reflect.Type) (*dtype, bool) {
	for i := range dtypes {
		if dtypes[i].goType == t {
			return &dtypes[i], true
		}
	}
	if t == nil {
		return nil, false
	}
	for i := range dtypes {
		if dtypes[i].half == "" && dtypes[i].goType.Kind() == t.Kind() {
			return &dtypes[i], true
		}
	}
	return nil, false
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
// the halves (halfc.Source), which give bit for bit what cuda.NewFloat16,
// Float16.Float32, cuda.NewBFloat16 and BFloat16.Float32 give in Go, then
// the vector type of the kernels' wide loads and stores and the vectors'
// conversions.
//
// A whole conversion of halfc's (gocuda_f32_to_f16 and the others) costs
// a NaN's bits, a select and their making, on every element, as many
// instructions as the conversion: the vectors' loads and stores
// (gocuda_load_f16 and the others, which the elementwise kernels use)
// test their whole vector for NaNs at once instead, and convert element by
// element only a vector with a NaN in it. The common vector is converted
// by the instructions alone (halfc's _num parts), and on sm_80 and later
// two floats to a pair of halves by one (cvt.rn.f16x2.f32,
// cvt.rn.bf16x2.f32), so that an elementwise kernel of halves does about
// as much per element as one of float32s. Compiled for the host, the
// pairs are two _num conversions, and TestCastBits holds both branches to
// Go's.
const prelude = halfc.Source + `
// gocuda_vec is V elements of T loaded or stored at once (a 16-byte
// access at most): the pointer must be aligned to its size.
template <typename T, int V> struct alignas(sizeof(T) * V) gocuda_vec { T v[V]; };
// gocuda_pdl_trigger lets the kernel queued next on the stream, launched
// as a programmatic dependent, start its blocks now; gocuda_pdl_wait
// waits, in such a kernel, until the kernel before it has finished and
// its writes are seen: a dependent calls it before it reads anything
// that kernel wrote. Both do nothing before sm_90, in a kernel launched
// without the attribute, and compiled for the host (the fake runs
// kernels in order).
__device__ __forceinline__ void gocuda_pdl_trigger() {
#if __CUDA_ARCH__ >= 900
	asm volatile("griddepcontrol.launch_dependents;");
#endif
}
__device__ __forceinline__ void gocuda_pdl_wait() {
#if __CUDA_ARCH__ >= 900
	asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
// gocuda_cluster_sync waits, with every thread of the block's thread
// block cluster, until all have come (barrier.cluster: their writes to
// shared memory before it are seen after it); gocuda_cluster_map is the
// address of p, in the block's shared memory, in block rank of the
// cluster (mapa: a generic address, read as any). A kernel calls them
// only in a launch in clusters, which needs sm_90 (before, they trap);
// compiled for the host, the fake's (internal/hostcc's shim).
#if defined(__CUDA_ARCH__)
__device__ __forceinline__ void gocuda_cluster_sync() {
#if __CUDA_ARCH__ >= 900
	asm volatile("barrier.cluster.arrive;\n\tbarrier.cluster.wait;" ::: "memory");
#else
	__trap();
#endif
}
template <typename T> __device__ __forceinline__ T* gocuda_cluster_map(T* p, unsigned int rank) {
#if __CUDA_ARCH__ >= 900
	unsigned long long q;
	asm volatile("mapa.u64 %0, %1, %2;" : "=l"(q) : "l"(p), "r"(rank));
	return (T*)q;
#else
	__trap();
	return p;
#endif
}
#else
__device__ __forceinline__ void gocuda_cluster_sync() { gocuda_hostcc_cluster_sync(); }
template <typename T> __device__ __forceinline__ T* gocuda_cluster_map(T* p, unsigned int rank) { return gocuda_hostcc_map_shared(p, rank); }
#endif
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
`

// ident reports whether s is a C identifier a parameter may be named. The
// generated code's own names start with gocuda_, and it names parameter
// x's pointer or scalar gocudap_x, its vector gocudav_x and, for a half,
// that vector's floats gocudaf_x: none of these can be a user's name,
// which may not start with gocuda, nor each other. A keyword of C++ (the
// language NVRTC compiles) is no identifier: a parameter or kernel named
// "int" or "float" would only fail at the first Launch, in NVRTC's log,
// where the declaration's check can name the field.
func ident(s string) bool {
	if s == "" || strings.HasPrefix(s, "gocuda") || strings.HasPrefix(s, "_") || keywords[s] {
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

// keywords are C++17's keywords and alternative tokens (and C++20's, which
// a later -std may turn on), none of which may name a parameter or a
// kernel.
var keywords = func() map[string]bool {
	m := map[string]bool{}
	for _, k := range strings.Fields(`alignas alignof and and_eq asm auto bitand bitor bool break case catch char
		char8_t char16_t char32_t class compl concept const consteval constexpr constinit const_cast continue
		co_await co_return co_yield decltype default delete do double dynamic_cast else enum explicit export
		extern false float for friend goto if inline int long mutable namespace new noexcept not not_eq nullptr
		operator or or_eq private protected public register reinterpret_cast requires return short signed
		sizeof static static_assert static_cast struct switch template this thread_local throw true try typedef
		typeid typename union unsigned using virtual void volatile wchar_t while xor xor_eq`) {
		m[k] = true
	}
	return m
}()
