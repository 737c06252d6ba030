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

// embed: x[r] = wte[tok[r]] + wpe[*pos + r % t], for n = rows*c elements.
template <typename T> __device__ void embed(const long long *tok, const T *wte, const T *wpe, T *x, const int *pos, int t, int c, long long n) {
	long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n) return;
	long long r = i / c;
	int k = (int)(i % c), p = *pos + (int)(r % t);
	st(x, i, ld(wte, tok[r] * c + k) + ld(wpe, (long long)p * c + k));
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
extern "C" __global__ void argmax_S(const T *x, long long *out, int n) { argmax(x, out, n); }
`)
}

// kernels are the model's kernels for one element type.
type kernels struct {
	embed, argmax, advance *compute.RawKernel
}

func newKernels(suffix string) (*kernels, error) {
	var k kernels
	for _, x := range []struct {
		k    **compute.RawKernel
		name string
	}{
		{&k.embed, "embed_" + suffix},
		{&k.argmax, "argmax_" + suffix},
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
