package compute

import (
	"fmt"

	cuda "github.com/gocuda/cuda"
)

// argSource is the two kernels of ArgMax (or ArgMin) of T: each thread
// keeps the best value of its run of elements and its index, then a block's
// threads, then the blocks', in fixed trees. A NaN beats every number, and
// of equals the first wins, as NumPy's argmax: deterministic.
func argSource(t dtype, name string, maximum bool) string {
	cmp := "<"
	if maximum {
		cmp = ">"
	}
	return prelude + fmt.Sprintf(`
typedef %[2]s gocuda_v;
// gocuda_better reports whether (bv, bi) beats (av, ai).
// An index of 0x7fff... is no element: it loses to any.
__device__ __forceinline__ bool gocuda_better(gocuda_v av, long long ai, gocuda_v bv, long long bi) {
	if (bi == 0x7fffffffffffffffLL) return false;
	if (ai == 0x7fffffffffffffffLL) return true;
	bool an = av != av, bn = bv != bv;
	if (an || bn) return bn && (!an || bi < ai);
	return bv %[5]s av || (bv == av && bi < ai);
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
	if (threadIdx.x %% 32 == 0) { sv[threadIdx.x / 32] = *v; si[threadIdx.x / 32] = *i; }
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
	return best == 0x7fffffffffffffffLL || x %[5]s v || (x != x && v == v);
}
// The first pass: each thread the best of its elements, 16 bytes at a
// time where src is aligned for it, four loads in flight; a block's best
// into pi (and pv, unless null: a single block writes the index alone,
// into the output).
extern "C" __global__ __launch_bounds__(1024) void %[1]s_partial(const %[3]s* __restrict__ src, long long n, gocuda_v* pv, long long* pi, unsigned int* counter, long long* out) {
	typedef gocuda_vec<%[3]s, 16 / sizeof(%[3]s)> vec;
	const int V = 16 / sizeof(%[3]s);
	gocuda_v v = 0;
	long long best = 0x7fffffffffffffffLL, start = 0;
	const long long stride = (long long)blockDim.x * gridDim.x, t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
	if ((unsigned long long)src %% 16 == 0) {
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
					const gocuda_v x = %[6]s;
					if (gocuda_take(v, best, x)) { v = x; best = (j + u * stride) * V + k; }
				}
			}
		}
		start = vectors * V;
	}
	for (long long i = start + t; i < n; i += stride) {
		const gocuda_v x = %[4]s;
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
extern "C" __global__ void %[1]s_final(const gocuda_v* pv, const long long* pi, long long m, long long* out) {
	gocuda_v v = 0;
	long long best = 0x7fffffffffffffffLL;
	for (long long j = threadIdx.x; j < m; j += blockDim.x)
		if (gocuda_better(v, best, pv[j], pi[j])) { v = pv[j]; best = pi[j]; }
	gocuda_block(&v, &best);
	if (threadIdx.x == 0) out[0] = best;
}
`, name, t.value, t.storage, t.load("src[i]"), cmp, t.load("xs[u].v[k]"))
}

// ArgMax sets dst, one int64, to the index of src's largest element: the
// first of equals, or the first NaN if src has one (as NumPy's argmax).
// src may not be empty.
func ArgMax[T cuda.Number](dst *cuda.DeviceBuffer[int64], src *cuda.DeviceBuffer[T], s *cuda.Stream) error {
	return argBest("ArgMax", dst, src, s, true)
}

// ArgMin sets dst, one int64, to the index of src's smallest element (the
// first of equals, or the first NaN).
func ArgMin[T cuda.Number](dst *cuda.DeviceBuffer[int64], src *cuda.DeviceBuffer[T], s *cuda.Stream) error {
	return argBest("ArgMin", dst, src, s, false)
}

func argBest[T cuda.Number](op string, dst *cuda.DeviceBuffer[int64], src *cuda.DeviceBuffer[T], s *cuda.Stream, maximum bool) error {
	as := [2]arg{bufArg("dst", dst), bufArg("src", src)}
	if err := checkBuffers(op, s, as[:]); err != nil {
		return err
	}
	switch {
	case dst.Len() != 1:
		return errorf(op, cuda.ErrInvalidValue, "dst has %d elements, want 1", dst.Len())
	case src.Len() == 0:
		return errorf(op, cuda.ErrInvalidValue, "src is empty: an empty buffer has no largest or smallest element")
	}
	t := dtypePtr[T]()
	name := "argmin_" + t.name
	if maximum {
		name = "argmax_" + t.name
	}
	v := namedVariant(name, func() string { return argSource(*t, name, maximum) })
	partial, err := kernel(op, s, v, name+"_partial", as[:])
	if err != nil {
		return err
	}
	final, err := kernel(op, s, v, name+"_final", as[:])
	if err != nil {
		return err
	}
	// A small src in one block, which writes dst itself; a larger one
	// in a block per 16 KiB or so, at most the blocks the device holds
	// at once, then a block folding theirs.
	n := src.Len()
	if n <= argSmall {
		cfg := cuda.LaunchConfig{Grid: cuda.Dim3{X: 1}, Block: cuda.Dim3{X: bigBlock}, Stream: s}
		return launchError(op, partial.Launch(cfg, src, int64(n), cuda.DevicePtr(0), dst, cuda.DevicePtr(0), dst), as[:], name)
	}
	d, err := sizeOf(s)
	if err != nil {
		return wrap(op, err, "sizing the launch")
	}
	blocks := max(1, min(ceilDiv(n*int(t.goType.Size()), 16<<10), d.resident))
	cfg := cuda.LaunchConfig{Grid: cuda.Dim3{X: blocks}, Block: cuda.Dim3{X: blockSize}, Stream: s}
	// The blocks' indices, then their values (8-byte aligned either way):
	// in the stream's scratch, where the last block folds them, or in
	// memory of the call's own, folded by _final.
	counter, scratch, ok, err := streamScratch(op, s, 1, 16*blocks)
	if err != nil {
		return err
	}
	if ok {
		pv := scratch + cuda.DevicePtr(8*blocks)
		return launchError(op, partial.Launch(cfg, src, int64(n), pv, scratch, counter, dst), as[:], name)
	}
	return withScratch(op, name, s, as[:], 2*blocks, func(scratch *cuda.DeviceBuffer[int64]) error {
		pi, _ := scratch.Slice(0, blocks)
		pv, _ := scratch.Slice(blocks, blocks)
		if err := partial.Launch(cfg, src, int64(n), pv, pi, cuda.DevicePtr(0), dst); err != nil {
			return err
		}
		return final.Launch(cuda.LaunchConfig{Grid: cuda.Dim3{X: 1}, Block: cuda.Dim3{X: blockSize}, Stream: s}, pv, pi, int64(blocks), dst)
	})
}

// argSmall is the most elements ArgMax and ArgMin take in one block.
const argSmall = 32768
