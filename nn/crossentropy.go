package nn

import (
	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/nd"
)

// crossEntropyKernels: a row's loss (a warp or a block a row: its largest
// logit, the log of the sum of exponentials, less the target's logit),
// the mean of the rows' losses (one block, in a fixed order), and the
// gradient of the logits (softmax less the target's one, over the count
// of rows counted).
var crossEntropyKernels = &layerSource{body: `
// nn_ce_target is row r's target, as a long long whatever the ids' type.
__device__ __forceinline__ long long nn_ce_target(const void* t, int wide, long long r) {
	return wide ? ((const long long*)t)[r] : (long long)((const int*)t)[r];
}
// nn_ce_fold folds v into the running largest m and the sum s of
// e^(x - m) (an online softmax: the sum rescaled when m grows).
__device__ __forceinline__ void nn_ce_fold(float* m, float* s, float v) {
	if (v == -__int_as_float(0x7f800000)) return; // e^-inf: nothing
	if (v <= *m) { *s += expf(v - *m); return; }
	if (v != v) { *m = v; *s = v; return; } // a NaN makes the row's NaN
	*s = *s * expf(*m - v) + 1.0f;
	*m = v;
}
// nn_ce_join joins (m2, s2) into (m, s).
__device__ __forceinline__ void nn_ce_join(float* m, float* s, float m2, float s2) {
	const float big = fmaxf(*m, m2);
	if (big == -__int_as_float(0x7f800000)) return; // both empty
	*s = (*m == big ? *s : *s * expf(*m - big)) + (m2 == big ? s2 : s2 * expf(m2 - big));
	*m = big;
}
// nn_ce_lse returns the log of the sum of the exponentials of row xr over
// the row's lanes: one pass (online), 16 bytes at a time over the
// aligned middle of the row (a row of odd length starts anywhere).
__device__ __forceinline__ float nn_ce_lse(const nn_t* xr, int cols, int lane, int lanes) {
	const int V = 16 / (int)sizeof(nn_t);
	typedef nn_vec<nn_t, 16 / sizeof(nn_t)> vec;
	float m = -__int_as_float(0x7f800000), s = 0;
	int head = (int)(((16 - ((unsigned long long)xr & 15)) & 15) / sizeof(nn_t));
	if (head > cols) head = cols;
	const int nv = (cols - head) / V;
	for (int j = lane; j < head; j += lanes) nn_ce_fold(&m, &s, nn_ld(xr[j]));
	const vec* xv = (const vec*)(xr + head);
	for (int i = lane; i < nv; i += lanes) {
		const vec v = xv[i];
		float f[16 / sizeof(nn_t)], vm = -__int_as_float(0x7f800000), vs = 0;
		#pragma unroll
		for (int k = 0; k < V; k++) { f[k] = nn_ld(v.v[k]); vm = fmaxf(vm, f[k]); }
		if (vm != -__int_as_float(0x7f800000)) {
			#pragma unroll
			for (int k = 0; k < V; k++) vs += expf(f[k] - vm);
		}
		nn_ce_join(&m, &s, vm, vs);
	}
	for (int j = head + nv * V + lane; j < cols; j += lanes) nn_ce_fold(&m, &s, nn_ld(xr[j]));
	#pragma unroll
	for (int k = 16; k > 0; k >>= 1) {
		const float m2 = __shfl_xor_sync(0xffffffffu, m, k), s2 = __shfl_xor_sync(0xffffffffu, s, k);
		nn_ce_join(&m, &s, m2, s2);
	}
	if (lanes > 32) {
		__shared__ float nn_ce_m[32], nn_ce_s[32];
		__syncthreads();
		if (threadIdx.x % 32 == 0) { nn_ce_m[threadIdx.x / 32] = m; nn_ce_s[threadIdx.x / 32] = s; }
		__syncthreads();
		m = nn_ce_m[0];
		s = nn_ce_s[0];
		for (int w = 1; w < (int)(blockDim.x / 32); w++) nn_ce_join(&m, &s, nn_ce_m[w], nn_ce_s[w]);
	}
	return m + logf(s);
}
// nn_ce_rows writes each row's loss to loss[r] (0 for an ignored row, NaN
// for a target out of range) and, when lse is not null, its log-sum-exp.
extern "C" __global__ void nn_ce_rows_NN_SUFFIX(const nn_t* x, const void* t, int wide, float* loss, long long rows, int cols, long long ignore, int lanes) {
	const int per = blockDim.x / lanes, lane = threadIdx.x % lanes;
	const long long r = (long long)blockIdx.x * per + threadIdx.x / lanes;
	if (r >= rows) return;
	const long long tr = nn_ce_target(t, wide, r);
	if (tr == ignore) { if (lane == 0) loss[r] = 0; return; } // the whole row's lanes return
	const nn_t* xr = x + r * cols;
	const float lse = nn_ce_lse(xr, cols, lane, lanes);
	if (lane == 0) loss[r] = (tr < 0 || tr >= cols) ? __int_as_float(0x7fc00000) : lse - nn_ld(xr[tr]);
}
// nn_ce_mean writes the sum of loss over the count of rows not ignored to
// mean[0], and the count to count[0] (either may be null): one block,
// each thread a stride of rows, joined in order.
extern "C" __global__ void nn_ce_mean_NN_SUFFIX(const float* loss, const void* t, int wide, float* mean, float* count, long long rows, long long ignore) {
	float s = 0, c = 0;
	for (long long r = threadIdx.x; r < rows; r += blockDim.x) {
		if (nn_ce_target(t, wide, r) != ignore) { if (mean) s += loss[r]; c += 1; }
	}
	s = nn_sum(s, blockDim.x);
	c = nn_sum(c, blockDim.x);
	if (threadIdx.x == 0) {
		if (mean) mean[0] = s / c;
		if (count) count[0] = c;
	}
}
// nn_ce_grad writes dx = scale · (softmax(x) - onehot(t)) / count for each
// row not ignored, 0 for an ignored row, NaN for a target out of range.
extern "C" __global__ void nn_ce_grad_NN_SUFFIX(const nn_t* x, const void* t, int wide, const float* count, nn_t* dx, long long rows, int cols, long long ignore, float scale, int lanes) {
	const int per = blockDim.x / lanes, lane = threadIdx.x % lanes;
	const long long r = (long long)blockIdx.x * per + threadIdx.x / lanes;
	if (r >= rows) return;
	const long long tr = nn_ce_target(t, wide, r);
	const nn_t* xr = x + r * cols;
	nn_t* dr = dx + r * cols;
	if (tr == ignore || tr < 0 || tr >= cols) { // the whole row's lanes return
		// a target out of range made the loss NaN: its gradient is NaN
		// too, not a softmax that looks like one
		const float f = tr == ignore ? 0.0f : __int_as_float(0x7fc00000);
		for (int j = lane; j < cols; j += lanes) dr[j] = nn_st(f);
		return;
	}
	const float lse = nn_ce_lse(xr, cols, lane, lanes), g = scale / count[0];
	const int V = 16 / (int)sizeof(nn_t);
	typedef nn_vec<nn_t, 16 / sizeof(nn_t)> vec;
	int head = cols, nv = 0;
	if ((((unsigned long long)xr ^ (unsigned long long)dr) & 15) == 0) { // the same alignment: vectors over the middle
		head = (int)(((16 - ((unsigned long long)xr & 15)) & 15) / sizeof(nn_t));
		if (head > cols) head = cols;
		nv = (cols - head) / V;
	}
	for (int j = lane; j < head; j += lanes) dr[j] = nn_st(g * (expf(nn_ld(xr[j]) - lse) - (j == tr ? 1.0f : 0.0f)));
	const vec* xv = (const vec*)(xr + head);
	vec* dv = (vec*)(dr + head);
	for (int i = lane; i < nv; i += lanes) {
		const vec v = xv[i];
		vec o;
		#pragma unroll
		for (int k = 0; k < V; k++) o.v[k] = nn_st(g * (expf(nn_ld(v.v[k]) - lse) - (head + i * V + k == tr ? 1.0f : 0.0f)));
		dv[i] = o;
	}
	for (int j = head + nv * V + lane; j < cols; j += lanes) dr[j] = nn_st(g * (expf(nn_ld(xr[j]) - lse) - (j == tr ? 1.0f : 0.0f)));
}
`}

// Index is the element types of ids and targets: int32 and int64.
type Index interface{ ~int32 | ~int64 }

// CrossEntropy returns the mean cross-entropy loss of logits [N, V]
// (unnormalised scores of V classes) against targets [N] (class indices),
// as PyTorch's F.cross_entropy(logits, targets, ignore_index=ignore):
//
//	loss = mean over rows with target ≠ ignore of logsumexp(row) - row[target]
//
// in float32, as a 0-d float32 array on logits' stream (PyTorch's -100 is
// the usual ignore). Every row ignored gives NaN, as PyTorch; a target
// out of [0, V) that is not ignore makes the loss NaN (PyTorch stops at a
// device assertion).
func CrossEntropy[T Float, I Index](logits *nd.Array[T], targets *nd.Array[I], ignore int) (*nd.Array[float32], error) {
	const op = "CrossEntropy"
	xb, tb, wide, rows, cols, err := crossEntropyArgs(op, logits, targets)
	if err != nil {
		return nil, err
	}
	return crossEntropyReduce[T](op, true, xb, tb, wide, rows, cols, ignore, logits.Stream())
}

// CrossEntropyBackward returns the gradient of CrossEntropy(logits,
// targets, ignore) with respect to logits, times scale (the gradient of
// the loss; 1 for the loss itself): softmax(row) less 1 at the target,
// over the count of rows not ignored; 0 in an ignored row, and NaN in a
// row whose target is out of [0, V) and not ignore (as the loss is NaN).
func CrossEntropyBackward[T Float, I Index](logits *nd.Array[T], targets *nd.Array[I], ignore int, scale float32) (dx *nd.Array[T], err error) {
	const op = "CrossEntropyBackward"
	xb, tb, wide, rows, cols, err := crossEntropyArgs(op, logits, targets)
	if err != nil {
		return nil, err
	}
	s := logits.Stream()
	count, err := crossEntropyReduce[T](op, false, xb, tb, wide, rows, cols, ignore, s)
	if err != nil {
		return nil, err
	}
	defer func() {
		if layerFreed(&err, count); err != nil {
			layerDrop(dx)
			dx = nil
		}
	}()
	if dx, err = nd.Empty[T](s, rows, cols); err != nil {
		return nil, wrap(op, err)
	}
	if rows == 0 || cols == 0 {
		return dx, nil
	}
	dxb, _ := dx.Buffer()
	cb, _ := count.Buffer()
	lanes, block, grid := layerRowLayout(rows, cols)
	err = layerLaunch[T](op, crossEntropyKernels, "nn_ce_grad", s, grid, block, xb, tb, wide, cb, dxb, int64(rows), int32(cols), int64(ignore), scale, int32(lanes))
	return dx, err // dropped by the deferred release where err is set
}

func crossEntropyArgs[T Float, I Index](op string, logits *nd.Array[T], targets *nd.Array[I]) (xb *cuda.DeviceBuffer[T], tb any, wide int32, rows, cols int, err error) {
	if xb, err = layerBuffer(op, "logits", logits, nil); err != nil {
		return
	}
	shape := logits.Shape()
	if len(shape) != 2 {
		err = errorf(op, cuda.ErrInvalidValue, "logits has shape %v: want [N, V], N rows of V classes", shape)
		return
	}
	rows, cols = shape[0], shape[1]
	if targets == nil {
		err = errorf(op, cuda.ErrInvalidValue, "targets is a nil *nd.Array")
		return
	}
	t, err := layerBuffer(op, "targets", targets, logits.Stream())
	if err != nil {
		return
	}
	if err = layerSameShape(op, "targets", targets.Shape(), []int{rows}); err != nil {
		return
	}
	if targets.Dtype() == "int64" {
		wide = 1
	}
	return xb, t, wide, rows, cols, nil
}

// crossEntropyReduce returns, as a 0-d float32 array on the device, the
// mean loss (mean) or the count of rows not ignored (for the gradient).
func crossEntropyReduce[T Float](op string, mean bool, xb *cuda.DeviceBuffer[T], tb any, wide int32, rows, cols, ignore int, s *cuda.Stream) (out *nd.Array[float32], err error) {
	if rows > 0 && cols == 0 {
		return nil, errorf(op, cuda.ErrInvalidValue, "logits has no classes (V = 0)")
	}
	if out, err = nd.Empty[float32](s); err != nil {
		return nil, wrap(op, err)
	}
	ob, _ := out.Buffer()
	var meanArg, countArg, lossArg any = cuda.DevicePtr(0), ob, cuda.DevicePtr(0)
	if mean {
		meanArg, countArg = ob, cuda.DevicePtr(0)
		var loss *nd.Array[float32]
		if loss, err = nd.Empty[float32](s, rows); err != nil {
			layerDrop(out)
			return nil, wrap(op, err)
		}
		defer func() {
			if layerFreed(&err, loss); err != nil && out != nil {
				layerDrop(out)
				out = nil
			}
		}()
		lb, _ := loss.Buffer()
		lossArg = lb
		lanes, block, grid := layerRowLayout(rows, cols)
		err = layerLaunch[T](op, crossEntropyKernels, "nn_ce_rows", s, grid, block, xb, tb, wide, lb, int64(rows), int32(cols), int64(ignore), int32(lanes))
	}
	if err == nil {
		err = layerLaunch[T](op, crossEntropyKernels, "nn_ce_mean", s, 1, 1024, lossArg, tb, wide, meanArg, countArg, int64(rows), int64(ignore))
	}
	if err != nil {
		layerDrop(out)
		return nil, err
	}
	return out, nil
}
