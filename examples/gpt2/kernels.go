package main

import (
	"fmt"
	"strings"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/compute"
)

// source holds the model's own kernels, each a template over the element
// type (float, or bfloat16 held as its bits) with an extern "C" entry per
// type: what cuBLAS and package nd do not do in one pass. The decoding
// step's kernels read the position from device memory, so that one graph
// of the step serves every position.
var source = `
typedef unsigned short bf16_t;
__device__ __forceinline__ float ld(const float *p, long long i) { return p[i]; }
__device__ __forceinline__ float ld(const bf16_t *p, long long i) { return __uint_as_float(((unsigned int)p[i]) << 16); }
__device__ __forceinline__ void st(float *p, long long i, float v) { p[i] = v; }
__device__ __forceinline__ void st(bf16_t *p, long long i, float v) {
	unsigned int u = __float_as_uint(v);
	if ((u & 0x7fffffffu) > 0x7f800000u) { p[i] = (bf16_t)((u >> 16) | 0x40u); return; } // NaN stays quiet
	u += 0x7fffu + ((u >> 16) & 1u); // to nearest, ties to even
	p[i] = (bf16_t)(u >> 16);
}

// block_sum and block_max fold v over the block (a multiple of 32
// threads); every thread gets the result. sh holds 32 floats.
__device__ float block_sum(float v, float *sh) {
	for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
	__syncthreads();
	if ((threadIdx.x & 31) == 0) sh[threadIdx.x >> 5] = v;
	__syncthreads();
	v = (int)(threadIdx.x & 31) < (int)((blockDim.x + 31) >> 5) ? sh[threadIdx.x & 31] : 0.0f;
	for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
	return v;
}
__device__ float block_max(float v, float *sh) {
	for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
	__syncthreads();
	if ((threadIdx.x & 31) == 0) sh[threadIdx.x >> 5] = v;
	__syncthreads();
	v = (int)(threadIdx.x & 31) < (int)((blockDim.x + 31) >> 5) ? sh[threadIdx.x & 31] : -__int_as_float(0x7f800000);
	for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
	return v;
}

// embed: x[r] = wte[tok[r]] + wpe[*pos + r % t], for n = rows*c elements.
template <typename T> __device__ void embed(const long long *tok, const T *wte, const T *wpe, T *x, const int *pos, int t, int c, long long n) {
	long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n) return;
	long long r = i / c;
	int k = (int)(i % c), p = *pos + (int)(r % t);
	st(x, i, ld(wte, tok[r] * c + k) + ld(wpe, (long long)p * c + k));
}

// split: the rows of qkv ([b*t, 3c], heads of d) to q [b, h, t, d] and to
// the caches [b, h, l, d] at positions *pos ... *pos+t-1.
template <typename T> __device__ void split(const T *qkv, T *q, T *kc, T *vc, const int *pos, int t, int h, int d, int l, long long n) {
	long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n) return;
	int c = h * d;
	long long r = i / c;
	int k = (int)(i % c), hh = k / d, dd = k % d;
	long long b = r / t, tt = r % t, bh = b * h + hh, src = r * 3 * c + k;
	q[(bh * t + tt) * d + dd] = qkv[src];
	long long dst = (bh * l + *pos + tt) * d + dd;
	kc[dst] = qkv[src + c];
	vc[dst] = qkv[src + 2 * c];
}

// causal_softmax: a block per row of scores [rows, tk], the queries the
// last tq positions of tk: p = softmax(scale * s) over the keys up to the
// row's own position, 0 after it.
template <typename T> __device__ void causal_softmax(T *s, int tq, int tk, float scale) {
	__shared__ float sh[32];
	T *sr = s + (long long)blockIdx.x * tk;
	int n = tk - tq + (int)(blockIdx.x % tq) + 1;
	float m = -__int_as_float(0x7f800000);
	for (int j = threadIdx.x; j < n; j += blockDim.x) m = fmaxf(m, ld(sr, j) * scale);
	m = block_max(m, sh);
	float z = 0;
	for (int j = threadIdx.x; j < n; j += blockDim.x) z += expf(ld(sr, j) * scale - m);
	z = block_sum(z, sh);
	for (int j = threadIdx.x; j < tk; j += blockDim.x) st(sr, j, j < n ? expf(ld(sr, j) * scale - m) / z : 0.0f);
}

// decode_attn: one new token per sequence, a block per (sequence, head):
// writes the token's key and value into the caches at *pos, and y (the
// heads side by side, [b, c]) = softmax(scale * q k^T) v over positions
// 0 ... *pos. Dynamic shared memory: (d + l + 32 + blockDim) floats.
template <typename T> __device__ void decode_attn(const T *qkv, T *kc, T *vc, T *y, const int *pos, int h, int d, int l, float scale) {
	extern __shared__ float sm[];
	int bh = blockIdx.x, b = bh / h, hh = bh % h, c = h * d, p = *pos, n = p + 1;
	float *qs = sm, *ps = sm + d, *red = ps + l, *acc = red + 32;
	const T *row = qkv + (long long)b * 3 * c + hh * d;
	long long base = (long long)bh * l * d;
	for (int i = threadIdx.x; i < d; i += blockDim.x) {
		qs[i] = ld(row, i) * scale;
		kc[base + (long long)p * d + i] = row[c + i];
		vc[base + (long long)p * d + i] = row[2 * c + i];
	}
	__syncthreads();
	float m = -__int_as_float(0x7f800000);
	for (int j = threadIdx.x; j < n; j += blockDim.x) {
		const T *kr = kc + base + (long long)j * d;
		float s = 0;
		for (int i = 0; i < d; i++) s += qs[i] * ld(kr, i);
		ps[j] = s;
		m = fmaxf(m, s);
	}
	m = block_max(m, red);
	float z = 0;
	for (int j = threadIdx.x; j < n; j += blockDim.x) { float e = expf(ps[j] - m); ps[j] = e; z += e; }
	z = block_sum(z, red);
	int groups = blockDim.x / d, g = threadIdx.x / d, i = threadIdx.x % d;
	float a = 0;
	if (g < groups)
		for (int j = g; j < n; j += groups) a += ps[j] * ld(vc, base + (long long)j * d + i);
	acc[threadIdx.x] = a;
	__syncthreads();
	if (g == 0) {
		float t = 0;
		for (int k = 0; k < groups; k++) t += acc[k * d + i];
		st(y, (long long)b * c + hh * d + i, t / z);
	}
}

// argmax: a block per row of n values: out[row] = the index of the
// largest (the first of equals).
template <typename T> __device__ void argmax(const T *x, long long *out, int n) {
	__shared__ float sv[32];
	__shared__ int si[32];
	const T *xr = x + (long long)blockIdx.x * n;
	float bv = -__int_as_float(0x7f800000);
	int bi = 0x7fffffff;
	for (int j = threadIdx.x; j < n; j += blockDim.x) {
		float v = ld(xr, j);
		if (v > bv) bv = v, bi = j;
	}
	for (int o = 16; o > 0; o >>= 1) {
		float ov = __shfl_xor_sync(0xffffffffu, bv, o);
		int oi = __shfl_xor_sync(0xffffffffu, bi, o);
		if (ov > bv || (ov == bv && oi < bi)) bv = ov, bi = oi;
	}
	if ((threadIdx.x & 31) == 0) sv[threadIdx.x >> 5] = bv, si[threadIdx.x >> 5] = bi;
	__syncthreads();
	if (threadIdx.x == 0) {
		for (int w = 1; w < (int)(blockDim.x >> 5); w++)
			if (sv[w] > bv || (sv[w] == bv && si[w] < bi)) bv = sv[w], bi = si[w];
		out[blockIdx.x] = bi == 0x7fffffff ? 0 : bi;
	}
}

` + entries("f32", "float") + entries("bf16", "bf16_t") + `
// gpt2_advance (not advance: the host's C library has one, which the
// fake driver's host-compiled kernels would call): after a step, the new tokens tok [b] to out [b, count] at
// column *pos - base, and *pos moved on by one. One block of b or more threads.
extern "C" __global__ void gpt2_advance(const long long *tok, long long *out, int *pos, int base, int b, int count) {
	int k = *pos - base;
	if ((int)threadIdx.x < b && k >= 0 && k < count) out[(long long)threadIdx.x * count + k] = tok[threadIdx.x];
	__syncthreads();
	if (threadIdx.x == 0) *pos += 1;
}
`

// entries returns the extern "C" kernels of element type typ, named with
// suffix (a macro would hide the names from compute.NewRawKernel's check).
func entries(suffix, typ string) string {
	return strings.NewReplacer("S", suffix, "T", typ).Replace(`
extern "C" __global__ void embed_S(const long long *tok, const T *wte, const T *wpe, T *x, const int *pos, int t, int c, long long n) { embed(tok, wte, wpe, x, pos, t, c, n); }
extern "C" __global__ void split_S(const T *qkv, T *q, T *kc, T *vc, const int *pos, int t, int h, int d, int l, long long n) { split(qkv, q, kc, vc, pos, t, h, d, l, n); }
extern "C" __global__ void causal_softmax_S(T *s, int tq, int tk, float scale) { causal_softmax(s, tq, tk, scale); }
extern "C" __global__ void decode_attn_S(const T *qkv, T *kc, T *vc, T *y, const int *pos, int h, int d, int l, float scale) { decode_attn(qkv, kc, vc, y, pos, h, d, l, scale); }
extern "C" __global__ void argmax_S(const T *x, long long *out, int n) { argmax(x, out, n); }
`)
}

// kernels are the model's kernels for one element type.
type kernels struct {
	embed, split, softmax, attn, argmax, advance *compute.RawKernel
}

func newKernels(suffix string) (*kernels, error) {
	var k kernels
	for _, x := range []struct {
		k    **compute.RawKernel
		name string
	}{
		{&k.embed, "embed_" + suffix}, {&k.split, "split_" + suffix},
		{&k.softmax, "causal_softmax_" + suffix}, {&k.attn, "decode_attn_" + suffix}, {&k.argmax, "argmax_" + suffix},
		{&k.advance, "gpt2_advance"},
	} {
		var err error
		if *x.k, err = compute.NewRawKernel(source, x.name); err != nil {
			return nil, err
		}
	}
	return &k, nil
}

// rows is a launch of one block of threads per row.
func rows(n, threads int, s *cuda.Stream) cuda.LaunchConfig {
	return cuda.LaunchConfig{Grid: cuda.Dim3{X: n}, Block: cuda.Dim3{X: threads}, Stream: s}
}

// suffixOf names T's kernels.
func suffixOf[T Float]() string {
	switch any(*new(T)).(type) {
	case float32:
		return "f32"
	case cuda.BFloat16:
		return "bf16"
	}
	panic(fmt.Sprintf("gpt2: no kernels for %T", *new(T)))
}
