package nn

import (
	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/nd"
)

// normKernels are LayerNorm's and RMSNorm's kernels, forward and
// backward. A row is taken by a warp (rows of up to 1024) or a block: a
// pass for the mean (LayerNorm's), one for the variance about it (the two
// passes, not a sum of squares less a square, which cancels), one for the
// result; 16 bytes at a time where the row's length and the arrays allow.
var normKernels = &layerSource{body: `
// nn_norm_stats returns row xr's mean (0 for RMS) and 1/sqrt(var + eps)
// (the mean of squares for RMS) over the row's lanes.
template <bool RMS, int V>
__device__ __forceinline__ void nn_norm_stats(const nn_t* xr, int cols, float eps, int lane, int lanes, float* mean, float* rstd) {
	typedef nn_vec<nn_t, V> vec;
	const int n = cols / V;
	float m = 0;
	if (!RMS) {
		float s = 0;
		for (int j = lane; j < n; j += lanes) {
			const vec xv = ((const vec*)xr)[j];
			#pragma unroll
			for (int k = 0; k < V; k++) s += nn_ld(xv.v[k]);
		}
		m = nn_sum(s, lanes) / (float)cols;
	}
	float q = 0;
	for (int j = lane; j < n; j += lanes) {
		const vec xv = ((const vec*)xr)[j];
		#pragma unroll
		for (int k = 0; k < V; k++) { const float d = nn_ld(xv.v[k]) - m; q += d * d; }
	}
	*mean = m;
	*rstd = rsqrtf(nn_sum(q, lanes) / (float)cols + eps);
}

// nn_norm_fwd normalises rows of x, or (res not null) of x + res,
// rounded to the element type and written to sum first (each thread
// reads back only what it wrote: x, res and sum may be one array).
template <bool RMS, int V>
__device__ __forceinline__ void nn_norm_fwd(const nn_t* x, const nn_t* res, nn_t* sum, const nn_t* w, const nn_t* b, nn_t* y, long long rows, int cols, float eps, int lanes) {
	typedef nn_vec<nn_t, V> vec;
	const int per = blockDim.x / lanes, lane = threadIdx.x % lanes, n = cols / V;
	const long long r = (long long)blockIdx.x * per + threadIdx.x / lanes;
	if (r >= rows) return; // a whole warp, or (a block a row) none
	const nn_t* xr = x + r * cols;
	nn_t* yr = y + r * cols;
	if (res) {
		nn_t* sr = sum + r * cols;
		for (int j = lane; j < n; j += lanes) {
			const vec xv = ((const vec*)xr)[j], rv = ((const vec*)(res + r * cols))[j];
			vec sv;
			#pragma unroll
			for (int k = 0; k < V; k++) sv.v[k] = nn_st(nn_ld(xv.v[k]) + nn_ld(rv.v[k]));
			((vec*)sr)[j] = sv;
		}
		xr = sr;
	}
	float mean, rstd;
	nn_norm_stats<RMS, V>(xr, cols, eps, lane, lanes, &mean, &rstd);
	for (int j = lane; j < n; j += lanes) {
		const vec xv = ((const vec*)xr)[j];
		vec wv, bv, yv;
		if (w) wv = ((const vec*)w)[j];
		if (b) bv = ((const vec*)b)[j];
		#pragma unroll
		for (int k = 0; k < V; k++) {
			float v = (nn_ld(xv.v[k]) - mean) * rstd;
			if (w) v *= nn_ld(wv.v[k]);
			if (b) v += nn_ld(bv.v[k]);
			yv.v[k] = nn_st(v);
		}
		((vec*)yr)[j] = yv;
	}
}

// nn_norm_bwd writes a row's dx, and its mean and rstd to stats (for the
// weight's gradient):
//   dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dy * w
// (RMS: no mean(g) term).
template <bool RMS, int V>
__device__ __forceinline__ void nn_norm_bwd(const nn_t* dy, const nn_t* x, const nn_t* w, nn_t* dx, float* stats, long long rows, int cols, float eps, int lanes) {
	typedef nn_vec<nn_t, V> vec;
	const int per = blockDim.x / lanes, lane = threadIdx.x % lanes, n = cols / V;
	const long long r = (long long)blockIdx.x * per + threadIdx.x / lanes;
	if (r >= rows) return;
	const nn_t* xr = x + r * cols;
	const nn_t* gr = dy + r * cols;
	nn_t* dr = dx + r * cols;
	float mean, rstd;
	nn_norm_stats<RMS, V>(xr, cols, eps, lane, lanes, &mean, &rstd);
	float sg = 0, sgx = 0;
	for (int j = lane; j < n; j += lanes) {
		const vec xv = ((const vec*)xr)[j], gv = ((const vec*)gr)[j];
		vec wv;
		if (w) wv = ((const vec*)w)[j];
		#pragma unroll
		for (int k = 0; k < V; k++) {
			float g = nn_ld(gv.v[k]);
			if (w) g *= nn_ld(wv.v[k]);
			sg += g;
			sgx += g * (nn_ld(xv.v[k]) - mean) * rstd;
		}
	}
	const float mg = RMS ? 0.0f : nn_sum(sg, lanes) / (float)cols, mgx = nn_sum(sgx, lanes) / (float)cols;
	for (int j = lane; j < n; j += lanes) {
		const vec xv = ((const vec*)xr)[j], gv = ((const vec*)gr)[j];
		vec wv, dv;
		if (w) wv = ((const vec*)w)[j];
		#pragma unroll
		for (int k = 0; k < V; k++) {
			float g = nn_ld(gv.v[k]);
			if (w) g *= nn_ld(wv.v[k]);
			const float xh = (nn_ld(xv.v[k]) - mean) * rstd;
			dv.v[k] = nn_st(rstd * (g - mg - xh * mgx));
		}
		((vec*)dr)[j] = dv;
	}
	if (stats && lane == 0) { stats[2 * r] = mean; stats[2 * r + 1] = rstd; }
}

// nn_norm_fwd_reg is nn_norm_fwd for a row of at most 32·NPER vectors
// taken by a warp, the row read once into registers.
template <bool RMS, int V, int NPER>
__device__ __forceinline__ void nn_norm_fwd_reg(const nn_t* x, const nn_t* res, nn_t* sum, const nn_t* w, const nn_t* b, nn_t* y, long long rows, int cols, float eps) {
	typedef nn_vec<nn_t, V> vec;
	const int lane = threadIdx.x % 32, n = cols / V;
	const long long r = (long long)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
	if (r >= rows) return;
	const vec* xr = (const vec*)(x + r * cols);
	vec* yr = (vec*)(y + r * cols);
	float f[NPER][V];
	float s = 0;
	#pragma unroll
	for (int u = 0; u < NPER; u++) {
		const int j = lane + 32 * u;
		if (j < n) {
			const vec xv = xr[j];
			if (res) {
				const vec rv = ((const vec*)(res + r * cols))[j];
				vec sv;
				#pragma unroll
				for (int k = 0; k < V; k++) { sv.v[k] = nn_st(nn_ld(xv.v[k]) + nn_ld(rv.v[k])); f[u][k] = nn_ld(sv.v[k]); s += f[u][k]; }
				((vec*)(sum + r * cols))[j] = sv;
			} else {
				#pragma unroll
				for (int k = 0; k < V; k++) { f[u][k] = nn_ld(xv.v[k]); s += f[u][k]; }
			}
		}
	}
	const float mean = RMS ? 0.0f : nn_sum(s, 32) / (float)cols;
	float q = 0;
	#pragma unroll
	for (int u = 0; u < NPER; u++) {
		if (lane + 32 * u < n) {
			#pragma unroll
			for (int k = 0; k < V; k++) { const float d = f[u][k] - mean; q += d * d; }
		}
	}
	const float rstd = rsqrtf(nn_sum(q, 32) / (float)cols + eps);
	#pragma unroll
	for (int u = 0; u < NPER; u++) {
		const int j = lane + 32 * u;
		if (j < n) {
			vec wv, bv, yv;
			if (w) wv = ((const vec*)w)[j];
			if (b) bv = ((const vec*)b)[j];
			#pragma unroll
			for (int k = 0; k < V; k++) {
				float v = (f[u][k] - mean) * rstd;
				if (w) v *= nn_ld(wv.v[k]);
				if (b) v += nn_ld(bv.v[k]);
				yv.v[k] = nn_st(v);
			}
			yr[j] = yv;
		}
	}
}

// nn_norm_bwd_reg is nn_norm_bwd for a row of at most 32·NPER vectors
// taken by a warp, x and dy read once into registers.
template <bool RMS, int V, int NPER>
__device__ __forceinline__ void nn_norm_bwd_reg(const nn_t* dy, const nn_t* x, const nn_t* w, nn_t* dx, float* stats, long long rows, int cols, float eps) {
	typedef nn_vec<nn_t, V> vec;
	const int lane = threadIdx.x % 32, n = cols / V;
	const long long r = (long long)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
	if (r >= rows) return;
	const vec* xr = (const vec*)(x + r * cols);
	const vec* gr = (const vec*)(dy + r * cols);
	vec* dr = (vec*)(dx + r * cols);
	float f[NPER][V], g[NPER][V];
	float s = 0;
	#pragma unroll
	for (int u = 0; u < NPER; u++) {
		const int j = lane + 32 * u;
		if (j < n) {
			const vec xv = xr[j], gv = gr[j];
			vec wv;
			if (w) wv = ((const vec*)w)[j];
			#pragma unroll
			for (int k = 0; k < V; k++) {
				f[u][k] = nn_ld(xv.v[k]);
				g[u][k] = nn_ld(gv.v[k]);
				if (w) g[u][k] *= nn_ld(wv.v[k]);
				s += f[u][k];
			}
		}
	}
	const float mean = RMS ? 0.0f : nn_sum(s, 32) / (float)cols;
	float q = 0;
	#pragma unroll
	for (int u = 0; u < NPER; u++) {
		if (lane + 32 * u < n) {
			#pragma unroll
			for (int k = 0; k < V; k++) { const float d = f[u][k] - mean; q += d * d; }
		}
	}
	const float rstd = rsqrtf(nn_sum(q, 32) / (float)cols + eps);
	float sg = 0, sgx = 0;
	#pragma unroll
	for (int u = 0; u < NPER; u++) {
		if (lane + 32 * u < n) {
			#pragma unroll
			for (int k = 0; k < V; k++) { sg += g[u][k]; sgx += g[u][k] * (f[u][k] - mean) * rstd; }
		}
	}
	const float mg = RMS ? 0.0f : nn_sum(sg, 32) / (float)cols, mgx = nn_sum(sgx, 32) / (float)cols;
	#pragma unroll
	for (int u = 0; u < NPER; u++) {
		const int j = lane + 32 * u;
		if (j < n) {
			vec dv;
			#pragma unroll
			for (int k = 0; k < V; k++) dv.v[k] = nn_st(rstd * (g[u][k] - mg - (f[u][k] - mean) * rstd * mgx));
			dr[j] = dv;
		}
	}
	if (stats && lane == 0) { stats[2 * r] = mean; stats[2 * r + 1] = rstd; }
}

// nn_norm_bwd_fused is nn_norm_bwd_reg for every row at once, the
// parameters' gradients summed as it goes: each warp takes rows r, r +
// warps of the grid, ..., each lane the same columns of each, so that the
// lane sums dy·xhat and dy of its columns over its rows in registers (x
// and dy read once, not again by a second kernel); the block's warps
// join theirs in order in shared memory and write part[block][0 or
// 1][col], which nn_norm_params sums in order. Every thread reaches the
// barriers: no return.
template <bool RMS, int V, int NPER>
__device__ __forceinline__ void nn_norm_bwd_fused(const nn_t* dy, const nn_t* x, const nn_t* w, nn_t* dx, float* part, long long rows, int cols, float eps) {
	typedef nn_vec<nn_t, V> vec;
	__shared__ float nn_fz[2][1024];
	const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32, n = cols / V;
	float aw[NPER][V], ab[NPER][V];
	#pragma unroll
	for (int u = 0; u < NPER; u++) {
		#pragma unroll
		for (int k = 0; k < V; k++) { aw[u][k] = 0; ab[u][k] = 0; }
	}
	for (long long r = (long long)blockIdx.x * warps + warp; r < rows; r += (long long)gridDim.x * warps) {
		const vec* xr = (const vec*)(x + r * cols);
		const vec* gr = (const vec*)(dy + r * cols);
		vec* dr = (vec*)(dx + r * cols);
		float f[NPER][V], gy[NPER][V];
		float s = 0;
		#pragma unroll
		for (int u = 0; u < NPER; u++) {
			const int j = lane + 32 * u;
			if (j < n) {
				const vec xv = xr[j], gv = gr[j];
				#pragma unroll
				for (int k = 0; k < V; k++) { f[u][k] = nn_ld(xv.v[k]); gy[u][k] = nn_ld(gv.v[k]); s += f[u][k]; }
			}
		}
		const float mean = RMS ? 0.0f : nn_sum(s, 32) / (float)cols;
		float q = 0;
		#pragma unroll
		for (int u = 0; u < NPER; u++) {
			if (lane + 32 * u < n) {
				#pragma unroll
				for (int k = 0; k < V; k++) { const float d = f[u][k] - mean; q += d * d; }
			}
		}
		const float rstd = rsqrtf(nn_sum(q, 32) / (float)cols + eps);
		float sg = 0, sgx = 0;
		#pragma unroll
		for (int u = 0; u < NPER; u++) {
			const int j = lane + 32 * u;
			if (j < n) {
				vec wv;
				if (w) wv = ((const vec*)w)[j];
				#pragma unroll
				for (int k = 0; k < V; k++) {
					f[u][k] = (f[u][k] - mean) * rstd; // xhat from here on
					aw[u][k] += gy[u][k] * f[u][k];
					ab[u][k] += gy[u][k];
					if (w) gy[u][k] *= nn_ld(wv.v[k]); // g = dy·w from here on
					sg += gy[u][k];
					sgx += gy[u][k] * f[u][k];
				}
			}
		}
		const float mg = RMS ? 0.0f : nn_sum(sg, 32) / (float)cols, mgx = nn_sum(sgx, 32) / (float)cols;
		#pragma unroll
		for (int u = 0; u < NPER; u++) {
			const int j = lane + 32 * u;
			if (j < n) {
				vec dv;
				#pragma unroll
				for (int k = 0; k < V; k++) dv.v[k] = nn_st(rstd * (gy[u][k] - mg - f[u][k] * mgx));
				dr[j] = dv;
			}
		}
	}
	for (int k = 0; k < warps; k++) { // the warps' sums joined in order
		if (warp == k) {
			#pragma unroll
			for (int u = 0; u < NPER; u++) {
				const int j = lane + 32 * u;
				if (j < n) {
					#pragma unroll
					for (int e = 0; e < V; e++) {
						const int c = j * V + e;
						nn_fz[0][c] = k == 0 ? aw[u][e] : nn_fz[0][c] + aw[u][e];
						nn_fz[1][c] = k == 0 ? ab[u][e] : nn_fz[1][c] + ab[u][e];
					}
				}
			}
		}
		__syncthreads();
	}
	for (int c = threadIdx.x; c < cols; c += blockDim.x) {
		part[(2LL * blockIdx.x) * cols + c] = nn_fz[0][c];
		part[(2LL * blockIdx.x + 1) * cols + c] = nn_fz[1][c];
	}
}

// nn_norm_vec is whether rows of cols take vectors of V over the arrays.
#define NN_NORM_V (16 / (int)sizeof(nn_t))
// NN_NORM_REG is the vectors a lane keeps in registers: a warp's row of
// up to 1024 elements.
#define NN_NORM_REG (1024 / 32 / NN_NORM_V)
__device__ __forceinline__ bool nn_norm_vec(int cols, const void* a, const void* b, const void* c, const void* d, const void* e = 0, const void* f = 0) {
	return cols % NN_NORM_V == 0 && nn_aligned(a) && nn_aligned(b) && (!c || nn_aligned(c)) && (!d || nn_aligned(d)) &&
		(!e || nn_aligned(e)) && (!f || nn_aligned(f));
}
// nn_norm_reg is whether a warp takes the row into registers.
__device__ __forceinline__ bool nn_norm_reg(int cols, int lanes) { return lanes == 32 && cols <= 32 * NN_NORM_REG * NN_NORM_V; }

// nn_layernorm and nn_rmsnorm normalise x, or (res not null) x + res,
// written to sum.
extern "C" __global__ void nn_layernorm_NN_SUFFIX(const nn_t* x, const nn_t* res, nn_t* sum, const nn_t* w, const nn_t* b, nn_t* y, long long rows, int cols, float eps, int lanes) {
	if (!nn_norm_vec(cols, x, y, w, b, res, sum)) nn_norm_fwd<false, 1>(x, res, sum, w, b, y, rows, cols, eps, lanes);
	else if (nn_norm_reg(cols, lanes)) nn_norm_fwd_reg<false, NN_NORM_V, NN_NORM_REG>(x, res, sum, w, b, y, rows, cols, eps);
	else nn_norm_fwd<false, NN_NORM_V>(x, res, sum, w, b, y, rows, cols, eps, lanes);
}
extern "C" __global__ void nn_rmsnorm_NN_SUFFIX(const nn_t* x, const nn_t* res, nn_t* sum, const nn_t* w, nn_t* y, long long rows, int cols, float eps, int lanes) {
	if (!nn_norm_vec(cols, x, y, w, 0, res, sum)) nn_norm_fwd<true, 1>(x, res, sum, w, 0, y, rows, cols, eps, lanes);
	else if (nn_norm_reg(cols, lanes)) nn_norm_fwd_reg<true, NN_NORM_V, NN_NORM_REG>(x, res, sum, w, 0, y, rows, cols, eps);
	else nn_norm_fwd<true, NN_NORM_V>(x, res, sum, w, 0, y, rows, cols, eps, lanes);
}
extern "C" __global__ void nn_layernorm_bwd_NN_SUFFIX(const nn_t* dy, const nn_t* x, const nn_t* w, nn_t* dx, float* stats, long long rows, int cols, float eps, int lanes) {
	if (!nn_norm_vec(cols, x, dy, dx, w)) nn_norm_bwd<false, 1>(dy, x, w, dx, stats, rows, cols, eps, lanes);
	else if (nn_norm_reg(cols, lanes)) nn_norm_bwd_reg<false, NN_NORM_V, NN_NORM_REG>(dy, x, w, dx, stats, rows, cols, eps);
	else nn_norm_bwd<false, NN_NORM_V>(dy, x, w, dx, stats, rows, cols, eps, lanes);
}
extern "C" __global__ void nn_rmsnorm_bwd_NN_SUFFIX(const nn_t* dy, const nn_t* x, const nn_t* w, nn_t* dx, float* stats, long long rows, int cols, float eps, int lanes) {
	if (!nn_norm_vec(cols, x, dy, dx, w)) nn_norm_bwd<true, 1>(dy, x, w, dx, stats, rows, cols, eps, lanes);
	else if (nn_norm_reg(cols, lanes)) nn_norm_bwd_reg<true, NN_NORM_V, NN_NORM_REG>(dy, x, w, dx, stats, rows, cols, eps);
	else nn_norm_bwd<true, NN_NORM_V>(dy, x, w, dx, stats, rows, cols, eps, lanes);
}

// nn_layernorm_bwd_fused and nn_rmsnorm_bwd_fused: rows the Go side
// has found of a warp's registers (nn_norm_reg) and of vectors
// (nn_norm_vec), the parameters' gradients in part.
extern "C" __global__ void nn_layernorm_bwd_fused_NN_SUFFIX(const nn_t* dy, const nn_t* x, const nn_t* w, nn_t* dx, float* part, long long rows, int cols, float eps) {
	nn_norm_bwd_fused<false, NN_NORM_V, NN_NORM_REG>(dy, x, w, dx, part, rows, cols, eps);
}
extern "C" __global__ void nn_rmsnorm_bwd_fused_NN_SUFFIX(const nn_t* dy, const nn_t* x, const nn_t* w, nn_t* dx, float* part, long long rows, int cols, float eps) {
	nn_norm_bwd_fused<true, NN_NORM_V, NN_NORM_REG>(dy, x, w, dx, part, rows, cols, eps);
}

// nn_norm_params_part sums, for a chunk of rows, dy * xhat (the weight's
// gradient) and dy (the bias's) into part[chunk][0 or 1][col]: a block of
// 256 threads takes 32 columns, 8 threads a column striding the chunk's
// rows, joined in shared memory in a fixed order. Block b is column group
// b % groups of chunk b / groups.
extern "C" __global__ void nn_norm_params_part_NN_SUFFIX(const nn_t* dy, const nn_t* x, const float* stats, float* part, long long rows, int cols, int chunk) {
	__shared__ float nn_pw[8][33], nn_pb[8][33];
	const int groups = (cols + 31) / 32, g = blockIdx.x % groups, c = blockIdx.x / groups;
	const int col = g * 32 + threadIdx.x % 32, slice = threadIdx.x / 32;
	const long long r0 = (long long)c * chunk, r1 = r0 + chunk < rows ? r0 + chunk : rows;
	float sw = 0, sb = 0;
	if (col < cols) {
		for (long long r = r0 + slice; r < r1; r += 8) {
			const float gv = nn_ld(dy[r * cols + col]);
			sw += gv * (nn_ld(x[r * cols + col]) - stats[2 * r]) * stats[2 * r + 1];
			sb += gv;
		}
	}
	nn_pw[slice][threadIdx.x % 32] = sw;
	nn_pb[slice][threadIdx.x % 32] = sb;
	__syncthreads();
	if (slice == 0 && col < cols) {
		for (int k = 1; k < 8; k++) { sw += nn_pw[k][threadIdx.x]; sb += nn_pb[k][threadIdx.x]; }
		part[((long long)c * 2) * cols + col] = sw;
		part[((long long)c * 2 + 1) * cols + col] = sb;
	}
}
// nn_norm_params sums the chunks' parts, in order, into dw and db (either
// may be null).
extern "C" __global__ void nn_norm_params_NN_SUFFIX(const float* part, nn_t* dw, nn_t* db, int cols, int chunks) {
	const int col = blockIdx.x * blockDim.x + threadIdx.x;
	if (col >= cols) return;
	float sw = 0, sb = 0;
	for (int c = 0; c < chunks; c++) { sw += part[(2LL * c) * cols + col]; sb += part[(2LL * c + 1) * cols + col]; }
	if (dw) dw[col] = nn_st(sw);
	if (db) db[col] = nn_st(sb);
}
`}

// normFusedWarps and normFusedBlocks shape the fused backward (rows of up
// to 1024 taken by a warp, the parameters' gradients summed as it goes):
// warps of a block, and at most so many blocks: one wave on an H100's or
// H200's 132 SMs, 3 blocks each (the kernel's 160 registers a thread
// leave room for 3 blocks of 128 threads an SM). Fixed, not read from the
// device, so that the sums' order, and so their bits, depend on the
// shape alone.
const (
	normFusedWarps  = 4
	normFusedBlocks = 3 * 132
)

// normFusable reports whether the backward pass takes the fused kernel:
// rows of up to 1024 elements, a whole number of 16-byte vectors, every
// array aligned to one (the kernel's nn_norm_reg and nn_norm_vec).
func normFusable[T Float](cols int, xb, gb, dxb *cuda.DeviceBuffer[T], weight *nd.Array[T]) bool {
	v := activationVector[T]()
	if cols > 1024 || cols%v != 0 {
		return false
	}
	ptrs := []cuda.DevicePtr{xb.Ptr(), gb.Ptr(), dxb.Ptr()}
	if weight != nil {
		wb, err := weight.Buffer()
		if err != nil {
			return false
		}
		ptrs = append(ptrs, wb.Ptr())
	}
	for _, p := range ptrs {
		if p%16 != 0 {
			return false
		}
	}
	return true
}

// normParamChunk is the rows of a chunk of the weight's gradient's first
// pass: enough chunks to fill the device at GPT-2's shapes (8192 rows of
// 768: 32 chunks of 24 blocks), few enough that the second pass is short.
const normParamChunk = 256

// LayerNorm returns x normalised over its last axis, as PyTorch's
// F.layer_norm(x, x.shape[-1:], weight, bias, eps):
//
//	y = (x - mean) / sqrt(var + eps) * weight + bias
//
// with the mean and the (biased) variance of each row, computed in
// float32 whatever T. weight and bias have the last axis's length; either
// may be nil (no scale, no shift). eps is a float32 whatever T, as the
// layer computes in float32 (1e-5 is PyTorch's default).
//
// Every array must be contiguous (nn's layers read rows in memory order
// and make no hidden copies: Contiguous makes one) and on one stream; the
// result is allocated on it, in stream order. On error the result is nil.
func LayerNorm[T Float](x, weight, bias *nd.Array[T], eps float32) (*nd.Array[T], error) {
	const op = "LayerNorm"
	return layerNew(op, x, func(y *nd.Array[T]) error { return normForward(op, false, y, x, weight, bias, eps) })
}

// LayerNormInto is LayerNorm writing into dst, an array of x's shape (x
// itself for in place).
func LayerNormInto[T Float](dst, x, weight, bias *nd.Array[T], eps float32) error {
	return normForward("LayerNormInto", false, dst, x, weight, bias, eps)
}

// RMSNorm returns x normalised by the root mean square of its last axis,
// as PyTorch's F.rms_norm(x, x.shape[-1:], weight, eps) and Llama's norm:
//
//	y = x / sqrt(mean(x²) + eps) * weight
//
// in float32 whatever T. weight has the last axis's length, or is nil.
// As LayerNorm for the rest.
func RMSNorm[T Float](x, weight *nd.Array[T], eps float32) (*nd.Array[T], error) {
	const op = "RMSNorm"
	return layerNew(op, x, func(y *nd.Array[T]) error { return normForward(op, true, y, x, weight, nil, eps) })
}

// RMSNormInto is RMSNorm writing into dst, an array of x's shape.
func RMSNormInto[T Float](dst, x, weight *nd.Array[T], eps float32) error {
	return normForward("RMSNormInto", true, dst, x, weight, nil, eps)
}

// AddLayerNorm returns x + residual and LayerNorm(x + residual, weight,
// bias, eps) in one pass: a transformer block's residual add and the next
// norm (GPT-2's h = h + attn(...); ln_2(h)), which PyTorch's eager mode
// makes two kernels and two passes over memory. The sum is rounded to T
// before it is normalised, as the two calls would have it, so that the
// result is what LayerNorm(Add(x, residual)) gives. As LayerNorm for the
// rest.
func AddLayerNorm[T Float](x, residual, weight, bias *nd.Array[T], eps float32) (sum, y *nd.Array[T], err error) {
	return normAddNew("AddLayerNorm", false, x, residual, weight, bias, eps)
}

// AddLayerNormInto is AddLayerNorm writing the sum into sum and the
// normalised sum into dst, each of x's shape: sum may be x or residual
// (the residual stream updated in place), dst may not be sum.
func AddLayerNormInto[T Float](sum, dst, x, residual, weight, bias *nd.Array[T], eps float32) error {
	return normAddInto("AddLayerNormInto", false, sum, dst, x, residual, weight, bias, eps)
}

// AddRMSNorm returns x + residual and RMSNorm(x + residual, weight, eps)
// in one pass, as AddLayerNorm (Llama's residual add and norm).
func AddRMSNorm[T Float](x, residual, weight *nd.Array[T], eps float32) (sum, y *nd.Array[T], err error) {
	return normAddNew("AddRMSNorm", true, x, residual, weight, nil, eps)
}

// AddRMSNormInto is AddRMSNorm writing into sum and dst, as
// AddLayerNormInto.
func AddRMSNormInto[T Float](sum, dst, x, residual, weight *nd.Array[T], eps float32) error {
	return normAddInto("AddRMSNormInto", true, sum, dst, x, residual, weight, nil, eps)
}

func normAddInto[T Float](op string, rms bool, sum, dst, x, residual, weight, bias *nd.Array[T], eps float32) error {
	if residual == nil {
		return errorf(op, cuda.ErrInvalidValue, "residual is a nil *nd.Array")
	}
	return normAddForward(op, rms, dst, sum, x, residual, weight, bias, eps)
}

func normAddNew[T Float](op string, rms bool, x, residual, weight, bias *nd.Array[T], eps float32) (sum, y *nd.Array[T], err error) {
	if _, err := layerBuffer(op, "x", x, nil); err != nil {
		return nil, nil, err
	}
	if residual == nil {
		return nil, nil, errorf(op, cuda.ErrInvalidValue, "residual is a nil *nd.Array")
	}
	if _, err := layerBuffer(op, "residual", residual, x.Stream()); err != nil {
		return nil, nil, err
	}
	defer func() {
		if err != nil {
			layerDrop(sum)
			layerDrop(y)
			sum, y = nil, nil
		}
	}()
	if sum, err = nd.Empty[T](x.Stream(), x.Shape()...); err != nil {
		return nil, nil, wrap(op, err)
	}
	if y, err = nd.Empty[T](x.Stream(), x.Shape()...); err != nil {
		return sum, nil, wrap(op, err)
	}
	return sum, y, normAddForward(op, rms, y, sum, x, residual, weight, bias, eps)
}

// LayerNormBackward returns the gradients of LayerNorm(x, weight, bias,
// eps) given dy, the gradient of its result: dx of x's shape, and the
// gradients of weight and bias (sums over the rows), each nil where that
// parameter is nil. The row statistics are computed again from x, not
// kept from the forward pass. Accumulated in float32, the parameters'
// gradients in a fixed order (the same bits every run).
func LayerNormBackward[T Float](dy, x, weight, bias *nd.Array[T], eps float32) (dx, dweight, dbias *nd.Array[T], err error) {
	return normBackward("LayerNormBackward", false, dy, x, weight, bias, eps)
}

// RMSNormBackward returns the gradients of RMSNorm(x, weight, eps) given
// dy: dx, and dweight (nil where weight is nil). As LayerNormBackward.
func RMSNormBackward[T Float](dy, x, weight *nd.Array[T], eps float32) (dx, dweight *nd.Array[T], err error) {
	dx, dweight, _, err = normBackward("RMSNormBackward", true, dy, x, weight, nil, eps)
	return dx, dweight, err
}

// normParam returns the buffer of a weight or bias of cols elements, or a
// null pointer for nil.
func normParam[T Float](op, name string, p *nd.Array[T], cols int, s *cuda.Stream) (any, error) {
	if p == nil {
		return cuda.DevicePtr(0), nil
	}
	b, err := layerBuffer(op, name, p, s)
	if err != nil {
		return nil, err
	}
	if err := layerSameShape(op, name, p.Shape(), []int{cols}); err != nil {
		return nil, err
	}
	return b, nil
}

func normForward[T Float](op string, rms bool, dst, x, weight, bias *nd.Array[T], eps float32) error {
	return normAddForward(op, rms, dst, nil, x, nil, weight, bias, eps)
}

// normAddForward is normForward of x, or (residual not nil) of x +
// residual, written to sum.
func normAddForward[T Float](op string, rms bool, dst, sum, x, residual, weight, bias *nd.Array[T], eps float32) error {
	xb, err := layerBuffer(op, "x", x, nil)
	if err != nil {
		return err
	}
	s := x.Stream()
	var resArg, sumArg any = cuda.DevicePtr(0), cuda.DevicePtr(0)
	var rb, sb *cuda.DeviceBuffer[T]
	if residual != nil {
		if rb, err = layerBuffer(op, "residual", residual, s); err != nil {
			return err
		}
		if err := layerSameShape(op, "residual", residual.Shape(), x.Shape()); err != nil {
			return err
		}
		if sb, err = layerBuffer(op, "sum", sum, s); err != nil {
			return err
		}
		if err := layerSameShape(op, "sum", sum.Shape(), x.Shape()); err != nil {
			return err
		}
		resArg, sumArg = rb, sb
	}
	db, err := layerBuffer(op, "dst", dst, s)
	if err != nil {
		return err
	}
	if err := layerSameShape(op, "dst", dst.Shape(), x.Shape()); err != nil {
		return err
	}
	// The outputs by their memory, not as pointers (a view of dst's
	// memory as sum would lose the sum): each may be an input of its
	// shape itself (in place), else apart from every input; the weight
	// and bias are read by every row, and may be written by none.
	params := []layerIn{{"weight", layerArraySpan(weight), false}, {"bias", layerArraySpan(bias), false}}
	ins := append([]layerIn{{"x", layerSpanOf(xb), true}}, params...)
	if residual != nil {
		ins = append(ins, layerIn{"residual", layerSpanOf(rb), true})
		if err := layerAliased(op, "sum", layerSpanOf(sb), ins...); err != nil {
			return err
		}
		ins = append([]layerIn{{"sum", layerSpanOf(sb), false}}, ins...)
	}
	if err := layerAliased(op, "dst", layerSpanOf(db), ins...); err != nil {
		return err
	}
	rows, cols, err := layerRows(op, "x", x.Shape())
	if err != nil {
		return err
	}
	if !(eps >= 0) {
		return errorf(op, cuda.ErrInvalidValue, "eps is %v: it must be zero or more", eps)
	}
	w, err := normParam(op, "weight", weight, cols, s)
	if err != nil {
		return err
	}
	b, err := normParam(op, "bias", bias, cols, s)
	if err != nil {
		return err
	}
	if rows == 0 || cols == 0 {
		return nil
	}
	lanes, block, grid := layerRowLayout(rows, cols)
	if rms {
		return layerLaunch[T](op, normKernels, "nn_rmsnorm", s, grid, block, xb, resArg, sumArg, w, db, int64(rows), int32(cols), eps, int32(lanes))
	}
	return layerLaunch[T](op, normKernels, "nn_layernorm", s, grid, block, xb, resArg, sumArg, w, b, db, int64(rows), int32(cols), eps, int32(lanes))
}

func normBackward[T Float](op string, rms bool, dy, x, weight, bias *nd.Array[T], eps float32) (dx, dweight, dbias *nd.Array[T], err error) {
	xb, err := layerBuffer(op, "x", x, nil)
	if err != nil {
		return nil, nil, nil, err
	}
	s := x.Stream()
	gb, err := layerBuffer(op, "dy", dy, s)
	if err != nil {
		return nil, nil, nil, err
	}
	if err := layerSameShape(op, "dy", dy.Shape(), x.Shape()); err != nil {
		return nil, nil, nil, err
	}
	rows, cols, err := layerRows(op, "x", x.Shape())
	if err != nil {
		return nil, nil, nil, err
	}
	if !(eps >= 0) {
		return nil, nil, nil, errorf(op, cuda.ErrInvalidValue, "eps is %v: it must be zero or more", eps)
	}
	w, err := normParam(op, "weight", weight, cols, s)
	if err != nil {
		return nil, nil, nil, err
	}
	if _, err := normParam(op, "bias", bias, cols, s); err != nil {
		return nil, nil, nil, err
	}
	defer func() {
		if err != nil {
			for _, a := range []*nd.Array[T]{dx, dweight, dbias} {
				layerDrop(a)
			}
			dx, dweight, dbias = nil, nil, nil
		}
	}()
	if dx, err = nd.Empty[T](s, x.Shape()...); err != nil {
		return nil, nil, nil, wrap(op, err)
	}
	dxb, _ := dx.Buffer()
	var dwArg, dbArg any = cuda.DevicePtr(0), cuda.DevicePtr(0)
	if weight != nil {
		if dweight, err = nd.Empty[T](s, cols); err != nil {
			return dx, nil, nil, wrap(op, err)
		}
		dwArg, _ = dweight.Buffer()
	}
	if bias != nil {
		if dbias, err = nd.Empty[T](s, cols); err != nil {
			return dx, dweight, nil, wrap(op, err)
		}
		dbArg, _ = dbias.Buffer()
	}
	if rows == 0 || cols == 0 {
		if rows == 0 && cols > 0 { // sums of no rows
			for _, a := range []*nd.Array[T]{dweight, dbias} {
				if a != nil {
					if err = nd.Fill(a, 0); err != nil {
						return dx, dweight, dbias, wrap(op, err)
					}
				}
			}
		}
		return dx, dweight, dbias, nil
	}
	if (weight != nil || bias != nil) && normFusable[T](cols, xb, gb, dxb, weight) {
		// a warp's rows: the parameters' gradients summed as dx is made
		blocks := min((rows+normFusedWarps-1)/normFusedWarps, normFusedBlocks)
		var part *nd.Array[float32]
		if part, err = nd.Empty[float32](s, blocks, 2, cols); err != nil {
			return dx, dweight, dbias, wrap(op, err)
		}
		defer layerFreed(&err, part)
		pb, _ := part.Buffer()
		name := "nn_layernorm_bwd_fused"
		if rms {
			name = "nn_rmsnorm_bwd_fused"
		}
		if err = layerLaunch[T](op, normKernels, name, s, blocks, 32*normFusedWarps, gb, xb, w, dxb, pb, int64(rows), int32(cols), eps); err != nil {
			return dx, dweight, dbias, err
		}
		err = layerLaunch[T](op, normKernels, "nn_norm_params", s, (cols+255)/256, 256, pb, dwArg, dbArg, int32(cols), int32(blocks))
		return dx, dweight, dbias, err
	}
	var stats *nd.Array[float32]
	var statsArg any = cuda.DevicePtr(0)
	if weight != nil || bias != nil {
		if stats, err = nd.Empty[float32](s, rows, 2); err != nil {
			return dx, dweight, dbias, wrap(op, err)
		}
		defer layerFreed(&err, stats)
		statsArg, _ = stats.Buffer()
	}
	lanes, block, grid := layerRowLayout(rows, cols)
	name := "nn_layernorm_bwd"
	if rms {
		name = "nn_rmsnorm_bwd"
	}
	if err = layerLaunch[T](op, normKernels, name, s, grid, block, gb, xb, w, dxb, statsArg, int64(rows), int32(cols), eps, int32(lanes)); err != nil {
		return dx, dweight, dbias, err
	}
	if stats == nil {
		return dx, dweight, dbias, nil
	}
	chunks := (rows + normParamChunk - 1) / normParamChunk
	part, err := nd.Empty[float32](s, chunks, 2, cols)
	if err != nil {
		return dx, dweight, dbias, wrap(op, err)
	}
	defer layerFreed(&err, part)
	pb, _ := part.Buffer()
	sb, _ := stats.Buffer()
	groups := (cols + 31) / 32
	if err = layerLaunch[T](op, normKernels, "nn_norm_params_part", s, groups*chunks, 256, gb, xb, sb, pb, int64(rows), int32(cols), int32(normParamChunk)); err != nil {
		return dx, dweight, dbias, err
	}
	err = layerLaunch[T](op, normKernels, "nn_norm_params", s, (cols+255)/256, 256, pb, dwArg, dbArg, int32(cols), int32(chunks))
	return dx, dweight, dbias, err
}
