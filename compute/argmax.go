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
__device__ __forceinline__ void gocuda_block(gocuda_v* v, long long* i) {
	__shared__ gocuda_v sv[256];
	__shared__ long long si[256];
	sv[threadIdx.x] = *v;
	si[threadIdx.x] = *i;
	__syncthreads();
	for (unsigned int k = blockDim.x / 2; k > 0; k >>= 1) {
		if (threadIdx.x < k && gocuda_better(sv[threadIdx.x], si[threadIdx.x], sv[threadIdx.x + k], si[threadIdx.x + k])) {
			sv[threadIdx.x] = sv[threadIdx.x + k];
			si[threadIdx.x] = si[threadIdx.x + k];
		}
		__syncthreads();
	}
	*v = sv[0];
	*i = si[0];
}
extern "C" __global__ void %[1]s_partial(const %[3]s* __restrict__ src, long long n, gocuda_v* pv, long long* pi) {
	gocuda_v v = 0;
	long long best = 0x7fffffffffffffffLL;
	for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)blockDim.x * gridDim.x) {
		gocuda_v x = %[4]s;
		if (gocuda_better(v, best, x, i)) { v = x; best = i; }
	}
	gocuda_block(&v, &best);
	if (threadIdx.x == 0) { pv[blockIdx.x] = v; pi[blockIdx.x] = best; }
}
extern "C" __global__ void %[1]s_final(const gocuda_v* pv, const long long* pi, long long m, long long* out) {
	gocuda_v v = 0;
	long long best = 0x7fffffffffffffffLL;
	for (long long j = threadIdx.x; j < m; j += blockDim.x)
		if (gocuda_better(v, best, pv[j], pi[j])) { v = pv[j]; best = pi[j]; }
	gocuda_block(&v, &best);
	if (threadIdx.x == 0) out[0] = best;
}
`, name, t.value, t.storage, t.load("src[i]"), cmp)
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
	cfg, err := linearConfig(s, src.Len())
	if err != nil {
		return wrap(op, err, "sizing the launch")
	}
	blocks := min(cfg.Grid.X, maxPartial)
	// One allocation: the blocks' indices, then their values (8-byte
	// aligned either way).
	n := int64(src.Len())
	return withScratch(op, name, s, as[:], 2*blocks, func(scratch *cuda.DeviceBuffer[int64]) error {
		pi, _ := scratch.Slice(0, blocks)
		pv, _ := scratch.Slice(blocks, blocks)
		err := partial.Launch(cuda.LaunchConfig{Grid: cuda.Dim3{X: blocks}, Block: cuda.Dim3{X: blockSize}, Stream: s}, src, n, pv, pi)
		if err != nil {
			return err
		}
		return final.Launch(cuda.LaunchConfig{Grid: cuda.Dim3{X: 1}, Block: cuda.Dim3{X: blockSize}, Stream: s}, pv, pi, int64(blocks), dst)
	})
}
