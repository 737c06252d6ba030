// The shim every host-compiled kernel starts with: CUDA C's device
// vocabulary in plain C++, for the fake driver, which runs each thread of
// a block as a fiber (internal/fakecuda/csrc/hostkernels.c). No system
// header is included: <math.h> alone would triple the compile time of a
// kernel, and the tests compile hundreds. What a kernel may call is
// declared here.

// ---- the ABI with the fake driver (hostkernels.c has its twin) ------------

struct gocuda_dim3 {
	unsigned int x, y, z;
};
typedef gocuda_dim3 dim3;
typedef gocuda_dim3 uint3;

// The thread the fake runs: its indices, the block's dynamic shared
// memory (extern __shared__), and its launch's cluster shape ({1, 1, 1}
// without clusters).
struct gocuda_hostcc_thread {
	gocuda_dim3 threadIdx, blockIdx, blockDim, gridDim;
	void *dynamic_shared;
	gocuda_dim3 clusterDim;
};

// What a kernel asks of the fake: a block barrier, a warp exchange
// (every live lane of the warp deposits v, then each gets the value the
// op names; kind is one of gocuda_warp_op), a trap, the cluster's
// barrier, and the address of p (in the block's dynamic shared memory)
// in block rank of the cluster.
struct gocuda_hostcc_ops {
	int abi;
	void (*syncthreads)(void);
	unsigned long long (*warp)(unsigned int mask, unsigned long long v, int kind, int arg, int width);
	void (*trap)(const char *why);
	void (*cluster_sync)(void);
	void *(*map_shared)(const void *p, unsigned int rank);
};
enum gocuda_warp_op { GOCUDA_SHFL_IDX, GOCUDA_SHFL_UP, GOCUDA_SHFL_DOWN, GOCUDA_SHFL_XOR, GOCUDA_BALLOT, GOCUDA_SYNCWARP };
#define GOCUDA_HOSTCC_ABI 2

static const gocuda_hostcc_ops *gocuda_ops;
// The thread running: each fiber sets it when it starts and again after
// each switch (a barrier), since the fibers of a block share an OS thread.
static thread_local const gocuda_hostcc_thread *gocuda_self;

extern "C" __attribute__((visibility("default"))) int gocuda_hostcc_bind(const gocuda_hostcc_ops *ops) {
	gocuda_ops = ops;
	return GOCUDA_HOSTCC_ABI;
}

// ---- CUDA's keywords ---------------------------------------------------------

#define __global__
#define __device__
#define __host__
#define __constant__
#define __noinline__ __attribute__((noinline))
#define __forceinline__ inline __attribute__((always_inline))
#define __restrict__ __restrict
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
// Static shared memory is the block's: blocks run one after another on a
// stream's thread, and streams on threads of their own.
#define __shared__ static thread_local
#define threadIdx (gocuda_self->threadIdx)
#define blockIdx (gocuda_self->blockIdx)
#define blockDim (gocuda_self->blockDim)
#define gridDim (gocuda_self->gridDim)
#define warpSize 32
#define gocuda_dynamic_shared() (gocuda_self->dynamic_shared)

// ---- barriers and warps ------------------------------------------------------

inline void __syncthreads() {
	const gocuda_hostcc_thread *me = gocuda_self;
	gocuda_ops->syncthreads();
	gocuda_self = me;
}

inline unsigned long long gocuda_warp(unsigned int mask, unsigned long long v, int kind, int arg, int width) {
	const gocuda_hostcc_thread *me = gocuda_self;
	unsigned long long r = gocuda_ops->warp(mask, v, kind, arg, width);
	gocuda_self = me;
	return r;
}

template <typename T> inline T gocuda_shfl(unsigned int mask, T v, int kind, int arg, int width) {
	static_assert(sizeof(T) <= 8, "a shuffle moves 8 bytes at most");
	unsigned long long u = 0;
	__builtin_memcpy(&u, &v, sizeof v);
	u = gocuda_warp(mask, u, kind, arg, width);
	T r;
	__builtin_memcpy(&r, &u, sizeof r);
	return r;
}
template <typename T> inline T __shfl_sync(unsigned int mask, T v, int lane, int width = 32) { return gocuda_shfl(mask, v, GOCUDA_SHFL_IDX, lane, width); }
template <typename T> inline T __shfl_up_sync(unsigned int mask, T v, unsigned int d, int width = 32) { return gocuda_shfl(mask, v, GOCUDA_SHFL_UP, (int)d, width); }
template <typename T> inline T __shfl_down_sync(unsigned int mask, T v, unsigned int d, int width = 32) { return gocuda_shfl(mask, v, GOCUDA_SHFL_DOWN, (int)d, width); }
template <typename T> inline T __shfl_xor_sync(unsigned int mask, T v, int m, int width = 32) { return gocuda_shfl(mask, v, GOCUDA_SHFL_XOR, m, width); }
inline unsigned int __ballot_sync(unsigned int mask, int p) { return (unsigned int)gocuda_warp(mask, p != 0, GOCUDA_BALLOT, 0, 32); }
inline int __any_sync(unsigned int mask, int p) { return __ballot_sync(mask, p) != 0; }
inline int __all_sync(unsigned int mask, int p) { return __ballot_sync(mask, p) == (unsigned int)gocuda_warp(mask, 1, GOCUDA_BALLOT, 0, 32); }
inline void __syncwarp(unsigned int mask = 0xffffffffu) { gocuda_warp(mask, 0, GOCUDA_SYNCWARP, 0, 32); }
// A thread block cluster's barrier (barrier.cluster's arrive and wait:
// every thread of the cluster's blocks comes, their writes to shared
// memory seen after it), and the address of p, in the block's dynamic
// shared memory, in the cluster's block rank (mapa; the rank is the
// block's index in the cluster, x first). Without clusters a block is a
// cluster of one.
inline void gocuda_hostcc_cluster_sync() {
	const gocuda_hostcc_thread *me = gocuda_self;
	gocuda_ops->cluster_sync();
	gocuda_self = me;
}
template <typename T> inline T *gocuda_hostcc_map_shared(T *p, unsigned int rank) { return (T *)gocuda_ops->map_shared(p, rank); }
inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
inline void __threadfence_block() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
inline void __trap() { gocuda_ops->trap("__trap()"); }

// ---- atomics: another stream's kernel may run at the same time -------------

#define GOCUDA_ATOMIC_INT(T)                                                                          \
	inline T atomicAdd(T *p, T v) { return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }             \
	inline T atomicSub(T *p, T v) { return __atomic_fetch_sub(p, v, __ATOMIC_SEQ_CST); }             \
	inline T atomicAnd(T *p, T v) { return __atomic_fetch_and(p, v, __ATOMIC_SEQ_CST); }             \
	inline T atomicOr(T *p, T v) { return __atomic_fetch_or(p, v, __ATOMIC_SEQ_CST); }               \
	inline T atomicXor(T *p, T v) { return __atomic_fetch_xor(p, v, __ATOMIC_SEQ_CST); }             \
	inline T atomicExch(T *p, T v) { return __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST); }           \
	inline T atomicCAS(T *p, T c, T v) {                                                            \
		__atomic_compare_exchange_n(p, &c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);             \
		return c;                                                                                   \
	}                                                                                               \
	inline T atomicMax(T *p, T v) {                                                                 \
		T o = __atomic_load_n(p, __ATOMIC_SEQ_CST);                                                 \
		while (o < v && !__atomic_compare_exchange_n(p, &o, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {} \
		return o;                                                                                   \
	}                                                                                               \
	inline T atomicMin(T *p, T v) {                                                                 \
		T o = __atomic_load_n(p, __ATOMIC_SEQ_CST);                                                 \
		while (o > v && !__atomic_compare_exchange_n(p, &o, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {} \
		return o;                                                                                   \
	}
GOCUDA_ATOMIC_INT(int)
GOCUDA_ATOMIC_INT(unsigned int)
GOCUDA_ATOMIC_INT(long long)
GOCUDA_ATOMIC_INT(unsigned long long)
#define GOCUDA_ATOMIC_FLOAT(T, U)                                                                   \
	inline T atomicAdd(T *p, T v) {                                                                 \
		U o = __atomic_load_n((U *)p, __ATOMIC_SEQ_CST), n;                                         \
		T f;                                                                                        \
		do {                                                                                        \
			__builtin_memcpy(&f, &o, sizeof f);                                                     \
			f += v;                                                                                 \
			__builtin_memcpy(&n, &f, sizeof n);                                                     \
		} while (!__atomic_compare_exchange_n((U *)p, &o, n, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)); \
		__builtin_memcpy(&f, &o, sizeof f);                                                         \
		return f;                                                                                   \
	}
GOCUDA_ATOMIC_FLOAT(float, unsigned int)
GOCUDA_ATOMIC_FLOAT(double, unsigned long long)
inline unsigned int atomicInc(unsigned int *p, unsigned int limit) {
	unsigned int o = __atomic_load_n(p, __ATOMIC_SEQ_CST);
	while (!__atomic_compare_exchange_n(p, &o, o >= limit ? 0 : o + 1, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {}
	return o;
}

// ---- bits ----------------------------------------------------------------------

inline unsigned int __float_as_uint(float f) { unsigned int u; __builtin_memcpy(&u, &f, 4); return u; }
inline int __float_as_int(float f) { int u; __builtin_memcpy(&u, &f, 4); return u; }
inline float __uint_as_float(unsigned int u) { float f; __builtin_memcpy(&f, &u, 4); return f; }
inline float __int_as_float(int u) { float f; __builtin_memcpy(&f, &u, 4); return f; }
inline long long __double_as_longlong(double d) { long long u; __builtin_memcpy(&u, &d, 8); return u; }
inline double __longlong_as_double(long long u) { double d; __builtin_memcpy(&d, &u, 8); return d; }
inline int __popc(unsigned int x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __clz(int x) { return x ? __builtin_clz((unsigned int)x) : 32; }
inline int __clzll(long long x) { return x ? __builtin_clzll((unsigned long long)x) : 64; }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __ffsll(long long x) { return __builtin_ffsll(x); }
inline unsigned int __brev(unsigned int x) {
	unsigned int r = 0;
	for (int i = 0; i < 32; i++, x >>= 1) r = r << 1 | (x & 1u);
	return r;
}

// ---- math: libm's, with CUDA's overloads for float --------------------------

#define GOCUDA_MATH1(fn)                             \
	extern "C" double fn(double) noexcept;           \
	extern "C" float fn##f(float) noexcept;          \
	inline float fn(float x) { return fn##f(x); }
#define GOCUDA_MATH2(fn)                             \
	extern "C" double fn(double, double) noexcept;   \
	extern "C" float fn##f(float, float) noexcept;   \
	inline float fn(float x, float y) { return fn##f(x, y); }
GOCUDA_MATH1(exp) GOCUDA_MATH1(exp2) GOCUDA_MATH1(expm1) GOCUDA_MATH1(log) GOCUDA_MATH1(log2) GOCUDA_MATH1(log10)
GOCUDA_MATH1(log1p) GOCUDA_MATH1(sqrt) GOCUDA_MATH1(cbrt) GOCUDA_MATH1(sin) GOCUDA_MATH1(cos) GOCUDA_MATH1(tan)
GOCUDA_MATH1(asin) GOCUDA_MATH1(acos) GOCUDA_MATH1(atan) GOCUDA_MATH1(sinh) GOCUDA_MATH1(cosh) GOCUDA_MATH1(tanh)
GOCUDA_MATH1(asinh) GOCUDA_MATH1(acosh) GOCUDA_MATH1(atanh) GOCUDA_MATH1(erf) GOCUDA_MATH1(erfc) GOCUDA_MATH1(lgamma)
GOCUDA_MATH1(tgamma) GOCUDA_MATH1(fabs) GOCUDA_MATH1(floor) GOCUDA_MATH1(ceil) GOCUDA_MATH1(round) GOCUDA_MATH1(trunc)
GOCUDA_MATH1(rint) GOCUDA_MATH1(nearbyint)
GOCUDA_MATH2(pow) GOCUDA_MATH2(atan2) GOCUDA_MATH2(fmod) GOCUDA_MATH2(fmin) GOCUDA_MATH2(fmax) GOCUDA_MATH2(hypot)
GOCUDA_MATH2(copysign) GOCUDA_MATH2(remainder)
extern "C" double fma(double, double, double) noexcept;
extern "C" float fmaf(float, float, float) noexcept;
inline float fma(float x, float y, float z) { return fmaf(x, y, z); }
extern "C" double exp10(double) noexcept;
extern "C" float exp10f(float) noexcept;
extern "C" void sincosf(float, float *, float *) noexcept;
extern "C" void sincos(double, double *, double *) noexcept;
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline double rsqrt(double x) { return 1.0 / sqrt(x); }
inline float __expf(float x) { return expf(x); }
inline float __exp10f(float x) { return exp10f(x); }
inline float __logf(float x) { return logf(x); }
inline float __log2f(float x) { return log2f(x); }
inline float __log10f(float x) { return log10f(x); }
inline float __sinf(float x) { return sinf(x); }
inline float __cosf(float x) { return cosf(x); }
inline float __tanf(float x) { return tanf(x); }
inline float __powf(float x, float y) { return powf(x, y); }
inline float __fdividef(float x, float y) { return x / y; }
inline float __frcp_rn(float x) { return 1.0f / x; }
inline float __fsqrt_rn(float x) { return sqrtf(x); }
inline float __saturatef(float x) { return x != x ? 0.0f : x < 0.0f ? 0.0f : x > 1.0f ? 1.0f : x; }
inline bool isnan(float x) { return __builtin_isnan(x); }
inline bool isnan(double x) { return __builtin_isnan(x); }
inline bool isinf(float x) { return __builtin_isinf(x); }
inline bool isinf(double x) { return __builtin_isinf(x); }
inline bool isfinite(float x) { return __builtin_isfinite(x); }
inline bool isfinite(double x) { return __builtin_isfinite(x); }
inline bool signbit(float x) { return __builtin_signbit(x); }
inline bool signbit(double x) { return __builtin_signbit(x); }
inline int abs(int x) { return x < 0 ? -x : x; }
inline long long llabs(long long x) { return x < 0 ? -x : x; }
inline long long abs(long long x) { return x < 0 ? -x : x; }
inline float abs(float x) { return fabsf(x); }
inline double abs(double x) { return fabs(x); }
// CUDA's min and max, of two values of one type (as its overloads).
template <typename T> inline T min(T a, T b) { return a < b ? a : b; }
template <typename T> inline T max(T a, T b) { return a > b ? a : b; }
inline float min(float a, float b) { return fminf(a, b); }
inline float max(float a, float b) { return fmaxf(a, b); }
inline double min(double a, double b) { return fmin(a, b); }
inline double max(double a, double b) { return fmax(a, b); }
extern "C" int printf(const char *, ...);

// ---- the entries' wrappers, which the generated tail instantiates ----------

template <unsigned int... I> struct gocuda_idx {};
template <unsigned int N, unsigned int... I> struct gocuda_mkidx : gocuda_mkidx<N - 1, N - 1, I...> {};
template <unsigned int... I> struct gocuda_mkidx<0, I...> { typedef gocuda_idx<I...> type; };
template <typename T> struct gocuda_isptr { enum { v = 0 }; };
template <typename T> struct gocuda_isptr<T *> { enum { v = 1 }; };

template <typename... A, unsigned int... I> inline void gocuda_call(void (*f)(A...), void **p, gocuda_idx<I...>) { f(*(A *)p[I]...); }

// gocuda_run calls kernel f as thread self, its arguments at p (one
// pointer each, as cuLaunchKernel's kernelParams).
template <typename... A> inline void gocuda_run(void (*f)(A...), const gocuda_hostcc_thread *self, void **p) {
	gocuda_self = self;
	gocuda_call(f, p, typename gocuda_mkidx<sizeof...(A)>::type());
}

// gocuda_params describes f's parameters to the fake: their count, then
// size, alignment and whether it is a pointer, each.
template <typename... A> inline unsigned int gocuda_params(void (*)(A...), unsigned int *out, unsigned int room) {
	unsigned int n = sizeof...(A), i = 0;
	if (3 * n > room) return n;
	((out[i++] = sizeof(A), out[i++] = alignof(A), out[i++] = gocuda_isptr<A>::v), ...);
	return n;
}
#define GOCUDA_ENTRY(name)                                                                                   \
	extern "C" __attribute__((visibility("default"))) void gocuda_hostcc_run_##name(const gocuda_hostcc_thread *self, void **p) { \
		gocuda_run(name, self, p);                                                                       \
	}                                                                                                    \
	extern "C" __attribute__((visibility("default"))) unsigned int gocuda_hostcc_params_##name(unsigned int *out, unsigned int room) { \
		return gocuda_params(name, out, room);                                                           \
	}

