package nn

import (
	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/nd"
)

// softmaxKernels are the masked softmax's kernel: a warp or a block a row,
// three passes (the largest of the row's kept elements, the sum of their
// exponentials, the results), 16 bytes at a time where the row allows.
var softmaxKernels = &layerSource{body: `
// nn_softmax_keep is how many of the row's first elements are kept: the
// causal mask's and the row's length's, the least.
__device__ __forceinline__ int nn_softmax_keep(long long r, int cols, int q, int causal, const int* lengths, long long perBatch) {
	int keep = cols;
	if (causal) {
		const long long c = (long long)(r % q) + cols - q + 1; // bottom-right aligned: the last query sees every key
		keep = c < 0 ? 0 : (c < keep ? (int)c : keep);
	}
	if (lengths) {
		const int l = lengths[r / perBatch];
		keep = l < 0 ? 0 : (l < keep ? l : keep);
	}
	return keep;
}
template <int V>
__device__ __forceinline__ void nn_softmax_run(const nn_t* x, nn_t* y, long long rows, int cols, float scale, int q, int causal, const int* lengths, long long perBatch, int lanes) {
	typedef nn_vec<nn_t, V> vec;
	const int per = blockDim.x / lanes, lane = threadIdx.x % lanes, n = cols / V;
	const long long r = (long long)blockIdx.x * per + threadIdx.x / lanes;
	if (r >= rows) return;
	const nn_t* xr = x + r * cols;
	nn_t* yr = y + r * cols;
	const int keep = nn_softmax_keep(r, cols, q, causal, lengths, perBatch);
	const float inf = __int_as_float(0x7f800000);
	float m = -inf;
	for (int j = lane; j * V < keep && j < n; j += lanes) {
		const vec xv = ((const vec*)xr)[j];
		#pragma unroll
		for (int k = 0; k < V; k++) if (j * V + k < keep) m = fmaxf(m, nn_ld(xv.v[k]) * scale);
	}
	m = nn_max(m, lanes);
	float s = 0;
	for (int j = lane; j * V < keep && j < n; j += lanes) {
		const vec xv = ((const vec*)xr)[j];
		#pragma unroll
		for (int k = 0; k < V; k++) if (j * V + k < keep) s += expf(nn_ld(xv.v[k]) * scale - m);
	}
	s = nn_sum(s, lanes);
	const float inv = s > 0 ? 1.0f / s : 0.0f;
	for (int j = lane; j < n; j += lanes) {
		vec yv;
		if (j * V < keep) {
			const vec xv = ((const vec*)xr)[j];
			#pragma unroll
			for (int k = 0; k < V; k++) yv.v[k] = nn_st(j * V + k < keep ? expf(nn_ld(xv.v[k]) * scale - m) * inv : 0.0f);
		} else {
			#pragma unroll
			for (int k = 0; k < V; k++) yv.v[k] = nn_st(0.0f);
		}
		((vec*)yr)[j] = yv;
	}
}
// nn_softmax_reg is nn_softmax_run for a row of at most 32·NPER vectors
// taken by a warp, read once into registers.
template <int V, int NPER>
__device__ __forceinline__ void nn_softmax_reg(const nn_t* x, nn_t* y, long long rows, int cols, float scale, int q, int causal, const int* lengths, long long perBatch) {
	typedef nn_vec<nn_t, V> vec;
	const int lane = threadIdx.x % 32, n = cols / V;
	const long long r = (long long)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
	if (r >= rows) return;
	const vec* xr = (const vec*)(x + r * cols);
	vec* yr = (vec*)(y + r * cols);
	const int keep = nn_softmax_keep(r, cols, q, causal, lengths, perBatch);
	const float inf = __int_as_float(0x7f800000);
	float f[NPER][V];
	float m = -inf;
	#pragma unroll
	for (int u = 0; u < NPER; u++) {
		const int j = lane + 32 * u;
		if (j < n && j * V < keep) {
			const vec xv = xr[j];
			#pragma unroll
			for (int k = 0; k < V; k++) {
				f[u][k] = j * V + k < keep ? nn_ld(xv.v[k]) * scale : -inf;
				m = fmaxf(m, f[u][k]);
			}
		}
	}
	m = nn_max(m, 32);
	float s = 0;
	#pragma unroll
	for (int u = 0; u < NPER; u++) {
		const int j = lane + 32 * u;
		if (j < n && j * V < keep) {
			#pragma unroll
			for (int k = 0; k < V; k++) { f[u][k] = j * V + k < keep ? expf(f[u][k] - m) : 0.0f; s += f[u][k]; }
		}
	}
	s = nn_sum(s, 32);
	const float inv = s > 0 ? 1.0f / s : 0.0f;
	#pragma unroll
	for (int u = 0; u < NPER; u++) {
		const int j = lane + 32 * u;
		if (j < n) {
			vec yv;
			const bool live = j * V < keep;
			#pragma unroll
			for (int k = 0; k < V; k++) yv.v[k] = nn_st(live ? f[u][k] * inv : 0.0f);
			yr[j] = yv;
		}
	}
}
#define NN_SOFTMAX_V (16 / (int)sizeof(nn_t))
#define NN_SOFTMAX_REG (1024 / 32 / NN_SOFTMAX_V)
extern "C" __global__ void nn_softmax_NN_SUFFIX(const nn_t* x, nn_t* y, long long rows, int cols, float scale, int q, int causal, const int* lengths, long long perBatch, int lanes) {
	if (!(cols % NN_SOFTMAX_V == 0 && nn_aligned(x) && nn_aligned(y))) nn_softmax_run<1>(x, y, rows, cols, scale, q, causal, lengths, perBatch, lanes);
	else if (lanes == 32 && cols <= 1024) nn_softmax_reg<NN_SOFTMAX_V, NN_SOFTMAX_REG>(x, y, rows, cols, scale, q, causal, lengths, perBatch);
	else nn_softmax_run<NN_SOFTMAX_V>(x, y, rows, cols, scale, q, causal, lengths, perBatch, lanes);
}
`}

// Mask is what Softmax leaves out of each row: the columns a causal mask
// hides, those at or past a batch's length, or both.
type Mask struct {
	// Causal hides, in x of shape [..., q, k] (queries by keys), key j
	// from query i where j > i + k - q: the mask aligned to the bottom
	// right, so that in decoding (q new queries after k - q cached keys)
	// the last query sees every key, as FlashAttention's (from 2.1),
	// PyTorch's causal_lower_right and this package's Attention have it
	// (PyTorch's is_causal aligns to the top left instead: the two agree
	// where q = k, the lower triangle). A query that sees no key (q > k)
	// gets a row of zeros.
	Causal bool

	// Lengths, when not nil, holds for each index of x's first axis (the
	// batch) the count of its keys that are real: the columns at or past
	// it are padding, left out. Its shape is [x.Shape()[0]], on x's
	// stream.
	Lengths *nd.Array[int32]
}

// Softmax returns the softmax of scale·x over its last axis, each row's
// masked columns left out (PyTorch's F.softmax(x*scale +
// mask_of_-inf, -1)), computed in float32. A masked column's result is
// 0, and a row with every column masked is all zeros (where PyTorch gives
// NaNs), as FlashAttention leaves such a row. x must be contiguous; the
// result is a new array of x's shape on its stream.
func Softmax[T Float](x *nd.Array[T], scale float32, mask Mask) (*nd.Array[T], error) {
	const op = "Softmax"
	return layerNew(op, x, func(y *nd.Array[T]) error { return softmaxInto(op, y, x, scale, mask) })
}

// SoftmaxInto is Softmax writing into dst, of x's shape (x itself for in
// place).
func SoftmaxInto[T Float](dst, x *nd.Array[T], scale float32, mask Mask) error {
	return softmaxInto("SoftmaxInto", dst, x, scale, mask)
}

func softmaxInto[T Float](op string, dst, x *nd.Array[T], scale float32, mask Mask) error {
	xb, err := layerBuffer(op, "x", x, nil)
	if err != nil {
		return err
	}
	s := x.Stream()
	db, err := layerBuffer(op, "dst", dst, s)
	if err != nil {
		return err
	}
	shape := x.Shape()
	if err := layerSameShape(op, "dst", dst.Shape(), shape); err != nil {
		return err
	}
	if err := layerAliased(op, "dst", layerSpanOf(db), layerIn{"x", layerSpanOf(xb), true}); err != nil {
		return err
	}
	rows, cols, err := layerRows(op, "x", shape)
	if err != nil {
		return err
	}
	if scale != scale || scale-scale != 0 {
		return errorf(op, cuda.ErrInvalidValue, "scale is %v: it must be a finite number", scale)
	}
	q := 1
	if mask.Causal {
		if len(shape) < 2 {
			return errorf(op, cuda.ErrInvalidValue, "a causal mask needs x of two axes or more ([..., queries, keys]), x has shape %v", shape)
		}
		q = shape[len(shape)-2]
	}
	var lengths any = cuda.DevicePtr(0)
	perBatch := int64(1)
	if mask.Lengths != nil {
		lb, err := layerBuffer(op, "mask.Lengths", mask.Lengths, s)
		if err != nil {
			return err
		}
		if len(shape) < 2 {
			return errorf(op, cuda.ErrInvalidValue, "a mask of lengths needs x of two axes or more ([batch, ..., keys]), x has shape %v", shape)
		}
		if err := layerSameShape(op, "mask.Lengths", mask.Lengths.Shape(), shape[:1]); err != nil {
			return err
		}
		if err := layerAliased(op, "dst", layerSpanOf(db), layerIn{"mask.Lengths", layerSpanOf(lb), false}); err != nil {
			return err
		}
		lengths = lb
		if shape[0] > 0 {
			perBatch = int64(rows / shape[0])
		}
	}
	if rows == 0 || cols == 0 {
		return nil
	}
	causal := int32(0)
	if mask.Causal {
		causal = 1
	}
	lanes, block, grid := layerRowLayout(rows, cols)
	return layerLaunch[T](op, softmaxKernels, "nn_softmax", s, grid, block, xb, db, int64(rows), int32(cols), scale, int32(q), causal, lengths, perBatch, int32(lanes))
}
