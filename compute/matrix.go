package compute

import (
	"fmt"

	cuda "github.com/gocuda/cuda"
)

// checkMatrix checks the buffers of a matrix operation, as checkBuffers,
// and that each has shape's elements.
func checkMatrix(op string, s *cuda.Stream, shape Shape, as []arg) error {
	if err := checkBuffers(op, s, as); err != nil {
		return err
	}
	if err := checkShape(op, shape); err != nil {
		return err
	}
	for _, a := range as {
		if a.n != shape.Rows*shape.Cols {
			return errorf(op, cuda.ErrInvalidValue, "%s has %d elements, want %d: a %d×%d matrix", a.name, a.n, shape.Rows*shape.Cols, shape.Rows, shape.Cols)
		}
	}
	return nil
}

// softmaxSource is the kernel of Softmax and LogSoftmax over rows of T: a
// block per row. One pass finds the row's largest element and the sum of
// the exponentials of the differences from it together (each thread keeps
// its largest so far and rescales its sum when that grows, then the
// threads' pairs combine in a fixed tree), a second writes the results.
// The first pass keeps the row in shared memory when the launch gives it
// room (cached), so that the row is read from device memory once; the
// passes take 16 bytes of the row at a time when its length and both
// matrices allow (gocuda_pass<V>). Computed in T's value type (float for
// the halves, double for float64).
func softmaxSource(t dtype, name string, logarithm bool) string {
	out := "exp(x - m) / sum"
	if logarithm {
		out = "x - m - log(sum)"
	}
	return prelude + fmt.Sprintf(`
typedef %[2]s gocuda_v;
typedef %[3]s gocuda_s;
// gocuda_join folds (m2, s2) into (m, s): the largest, and the sum of
// exponentials rescaled to it. A NaN anywhere makes both NaN.
__device__ __forceinline__ void gocuda_join(gocuda_v* m, gocuda_v* s, gocuda_v m2, gocuda_v s2) {
	if (m2 != m2 || *m != *m) { *m = m2 + *m; *s = *m; return; }
	if (s2 == 0) return; // nothing folded yet
	if (*s == 0) { *m = m2; *s = s2; return; }
	if (m2 == *m) { *s += s2; return; } // infinities too, whose difference is NaN
	if (m2 > *m) { *s = *s * exp(*m - m2) + s2; *m = m2; }
	else *s += s2 * exp(m2 - *m);
}
// gocuda_pass runs both passes over a row of cols elements, V at a time
// (cols a multiple of V, in and out aligned to V elements), keeping the
// row in cache when it is not null.
template <int V>
__device__ __forceinline__ void gocuda_pass(const gocuda_s* in, gocuda_s* out, long long cols, gocuda_vec<gocuda_s, V>* cache, gocuda_v* sm, gocuda_v* ss) {
	typedef gocuda_vec<gocuda_s, V> vec;
	const long long vectors = cols / V;
	gocuda_v m = 0, sum = 0;
	for (long long j = threadIdx.x; j < vectors; j += blockDim.x) {
		const vec xs = ((const vec*)in)[j];
		if (cache) cache[j] = xs;
		#pragma unroll
		for (int k = 0; k < V; k++) gocuda_join(&m, &sum, %[4]s, 1);
	}
	sm[threadIdx.x] = m;
	ss[threadIdx.x] = sum;
	__syncthreads();
	for (unsigned int k = blockDim.x / 2; k > 0; k >>= 1) {
		if (threadIdx.x < k) {
			gocuda_v a = sm[threadIdx.x], b = ss[threadIdx.x];
			gocuda_join(&a, &b, sm[threadIdx.x + k], ss[threadIdx.x + k]);
			sm[threadIdx.x] = a;
			ss[threadIdx.x] = b;
		}
		__syncthreads();
	}
	m = sm[0];
	sum = ss[0];
	__syncthreads(); // sm and ss are the next row's
	const vec* row = cache ? cache : (const vec*)in; // a thread reads back only what it cached
	for (long long j = threadIdx.x; j < vectors; j += blockDim.x) {
		const vec xs = row[j];
		vec ys;
		#pragma unroll
		for (int k = 0; k < V; k++) { const gocuda_v x = %[4]s; ys.v[k] = %[5]s; }
		((vec*)out)[j] = ys;
	}
}
// The kernel: cached says the launch's dynamic shared memory holds a row.
extern "C" __global__ void %[1]s(const gocuda_s* gocuda_src, gocuda_s* gocuda_dst, long long rows, long long cols, int cached) { // dst may be src: no __restrict__
	__shared__ gocuda_v sm[256], ss[256];
	extern __shared__ gocuda_vec<gocuda_s, 16 / sizeof(gocuda_s)> gocuda_cache[];
	const int V = 16 / sizeof(gocuda_s);
	const bool wide = cols %% V == 0 && (unsigned long long)gocuda_src %% 16 == 0 && (unsigned long long)gocuda_dst %% 16 == 0;
	for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
		const gocuda_s* in = gocuda_src + r * cols;
		gocuda_s* out = gocuda_dst + r * cols;
		if (wide) gocuda_pass<V>(in, out, cols, cached ? gocuda_cache : 0, sm, ss);
		else gocuda_pass<1>(in, out, cols, cached ? (gocuda_vec<gocuda_s, 1>*)gocuda_cache : 0, sm, ss);
	}
}
`, name, t.value, t.storage, t.load("xs.v[k]"), t.store(out))
}

// Softmax sets each row of dst to the softmax of src's row: e^(x-max) over
// the row's sum of them. src and dst are row-major matrices of shape (dst
// may be src).
func Softmax[T cuda.AnyFloat](dst, src *cuda.DeviceBuffer[T], shape Shape, s *cuda.Stream) error {
	return softmax("Softmax", dst, src, shape, s, false)
}

// LogSoftmax sets each row of dst to the log of the softmax of src's row,
// computed as x - max - log(sum of e^(x-max)).
func LogSoftmax[T cuda.AnyFloat](dst, src *cuda.DeviceBuffer[T], shape Shape, s *cuda.Stream) error {
	return softmax("LogSoftmax", dst, src, shape, s, true)
}

// softmaxCache is the longest row, in bytes, Softmax keeps in shared
// memory: 48 KiB (what a block may have without asking), less the kernel's
// own 4 KiB for float64 (11264 float32, 5632 float64).
const softmaxCache = 44 << 10

func softmax[T cuda.AnyFloat](op string, dst, src *cuda.DeviceBuffer[T], shape Shape, s *cuda.Stream, logarithm bool) error {
	as := [2]arg{bufArg("dst", dst), bufArg("src", src)}
	if err := checkMatrix(op, s, shape, as[:]); err != nil {
		return err
	}
	if shape.Rows == 0 || shape.Cols == 0 {
		return nil
	}
	t := dtypePtr[T]()
	name := "softmax_" + t.name
	if logarithm {
		name = "log" + name
	}
	f, err := kernel(op, s, namedVariant(name, func() string { return softmaxSource(*t, name, logarithm) }), name, as[:])
	if err != nil {
		return err
	}
	// A block per row, each with room for its row in shared memory where
	// the row fits in what every device gives a block without asking.
	cfg := cuda.LaunchConfig{Grid: cuda.Dim3{X: min(shape.Rows, maxGrid)}, Block: cuda.Dim3{X: blockSize}, Stream: s}
	cached := int32(0)
	if bytes := shape.Cols * int(t.goType.Size()); bytes <= softmaxCache {
		cfg.SharedMemBytes, cached = (bytes+15)/16*16, 1
	}
	return launchError(op, f.Launch(cfg, src, dst, int64(shape.Rows), int64(shape.Cols), cached), as[:], name)
}

// transposeSource is the kernel of Transpose: tiles of 32×32 elements read
// by rows and written by columns through shared memory, so that both the
// reads and the writes are coalesced.
func transposeSource(t dtype, name string) string {
	return fmt.Sprintf(`
extern "C" __global__ void %[1]s(const %[2]s* __restrict__ src, %[2]s* dst, long long rows, long long cols) {
	__shared__ %[2]s tile[32][33];
	for (long long tr = (long long)blockIdx.y * 32; tr < rows; tr += (long long)gridDim.y * 32)
	for (long long tc = (long long)blockIdx.x * 32; tc < cols; tc += (long long)gridDim.x * 32) {
		for (int k = threadIdx.y; k < 32; k += blockDim.y) {
			long long r = tr + k, c = tc + threadIdx.x;
			if (r < rows && c < cols) tile[k][threadIdx.x] = src[r * cols + c];
		}
		__syncthreads();
		for (int k = threadIdx.y; k < 32; k += blockDim.y) {
			long long r = tc + k, c = tr + threadIdx.x; // in dst: cols rows of rows elements
			if (r < cols && c < rows) dst[r * rows + c] = tile[threadIdx.x][k];
		}
		__syncthreads();
	}
}
`, name, t.storage)
}

// Transpose sets dst, a row-major matrix of shape.Cols rows of shape.Rows
// elements, to the transpose of src, of shape. dst may not be src.
func Transpose[T cuda.Number](dst, src *cuda.DeviceBuffer[T], shape Shape, s *cuda.Stream) error {
	const op = "Transpose"
	as := [2]arg{bufArg("dst", dst), bufArg("src", src)}
	if err := checkMatrix(op, s, shape, as[:]); err != nil {
		return err
	}
	if shape.Rows*shape.Cols > 0 && dst.Ptr() == src.Ptr() {
		if err := closedArg(op, as[:]); err != nil {
			return err // freed, and its address another's now
		}
		return errorf(op, cuda.ErrInvalidValue, "dst is src: a transpose cannot be made in place")
	}
	if shape.Rows == 0 || shape.Cols == 0 {
		return nil
	}
	t := dtypePtr[T]()
	name := "transpose_" + t.name
	f, err := kernel(op, s, namedVariant(name, func() string { return transposeSource(*t, name) }), name, as[:])
	if err != nil {
		return err
	}
	gx, gy := min((shape.Cols+31)/32, 65535), min((shape.Rows+31)/32, 65535)
	cfg := cuda.LaunchConfig{Grid: cuda.Dim3{X: gx, Y: gy}, Block: cuda.Dim3{X: 32, Y: 8}, Stream: s}
	return launchError(op, f.Launch(cfg, src, dst, int64(shape.Rows), int64(shape.Cols)), as[:], name)
}
