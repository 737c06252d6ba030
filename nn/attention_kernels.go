package nn

import "github.com/gocuda/cuda/internal/halfc"

// The CUDA C of scaled dot-product attention. attnSource is one source
// for every variant: a variant is this text after a header of #defines
// (attnHeader: the element type, the head dimension, the tiles), so that
// each (type, D, tiles) is compiled, on first use, into a module of its
// own with every loop bound a constant.
//
// It holds four kernels:
//
//   - attn_fwd_tc, the tensor-core path (halves, D a multiple of 16, on
//     sm_80 and later): the FlashAttention-2 manner. A block takes
//     ATTN_NW warps x ATTN_MT x 16 query rows of one key/value head (the
//     query heads of a group share it: the rows of a block run over the
//     group's heads, then the queries), keeps Q in registers, streams K
//     and V through shared memory in tiles of ATTN_BN keys (cp.async,
//     double-buffered), computes S = QK^T and O += PV with
//     mma.sync.m16n8k16 (operands fetched by ldmatrix) and keeps the
//     softmax online (a running max and sum per row), so that no
//     Sq x Sk matrix exists anywhere, not even in shared memory.
//   - attn_fwd_scalar, the portable path (float32; halves whose D or
//     alignment the tensor-core path does not take; devices before
//     sm_80): the same online softmax with scalar float arithmetic, a
//     warp per few query rows, a lane per key for the scores and a lane
//     per output column for PV.
//   - attn_split_combine: for few query rows over many keys (decoding),
//     attn_fwd_scalar splits the keys among blocks (FlashDecoding's
//     split-K), each writing its rows' running max, sum and unnormalised
//     output to a workspace; this kernel joins the splits.
//   - attn_kv_append and attn_kv_advance, the KV cache's: copy new keys
//     and values to the positions after the cache's length (read from
//     the device), then advance the length.
//
// Compiled for the host (internal/hostcc, the fake driver's tests),
// __CUDA_ARCH__ is undefined and attn_fwd_tc's PTX primitives (ldmatrix,
// mma.sync, cp.async, ex2.approx, cvt) are emulated in plain C++ with
// the same per-lane fragment layouts (the #else branches of attn_ldsm_x4,
// attn_mma and their kin), so that the tests on the fake check the
// tensor-core kernel's indexing too: only the instructions themselves
// are the GPU's alone.
const attnSource = halfc.Source + `
// ---- element types --------------------------------------------------------
// ATTN_T: 0 float32, 1 float16, 2 bfloat16. A half is kept as its bits
// (unsigned short), converted by halfc's conversions (before this): no
// CUDA header is included (NVRTC does not always find them, and the host
// compile has none).
#if ATTN_T == 0
typedef float attn_t;
__device__ __forceinline__ float attn_ld(attn_t x) { return x; }
__device__ __forceinline__ attn_t attn_st(float x) { return x; }
#else
typedef unsigned short attn_t;
#if ATTN_T == 1
__device__ __forceinline__ float attn_ld(attn_t x) { return gocuda_f16_to_f32(x); }
__device__ __forceinline__ attn_t attn_st(float x) { return gocuda_f32_to_f16(x); }
#else
__device__ __forceinline__ float attn_ld(attn_t x) { return gocuda_bf16_to_f32(x); }
__device__ __forceinline__ attn_t attn_st(float x) { return gocuda_f32_to_bf16(x); }
#endif
#endif

#define ATTN_NEG_INF __uint_as_float(0xff800000u)

// attn_exp2 is 2^x: the device's approximate instruction (2 ulp), as
// FlashAttention's; libm's on the host. ex2 of -inf is 0.
__device__ __forceinline__ float attn_exp2(float x) {
#ifdef __CUDA_ARCH__
	float y;
	asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
	return y;
#else
	return exp2f(x);
#endif
}

// attn_klim is how many keys query i (of Sq, the last aligned to key
// Sk-1) sees: all Sk, or under the causal mask those up to its own
// position Sk-Sq+i (none where that is negative).
__device__ __forceinline__ int attn_klim(int i, int Sq, int Sk, int causal) {
	if (!causal) return Sk;
	int lim = Sk - Sq + i + 1;
	return lim < Sk ? lim : Sk;
}

// ---- the portable kernel ----------------------------------------------------
// A block of 128 threads (4 warps) takes ATTN_SBM rows; warp w its rows
// w*RW .. w*RW+RW-1. Shared memory (dynamic): Q's rows, pre-scaled by
// scale*log2(e), as floats [SBM][D]; a tile of SBN keys [SBN][D+1] (the
// +1 spreads a lane-per-key read over the banks); the values [SBN][D];
// each row's probabilities of the tile [SBM][SBN].
#define ATTN_SBN 32
#define ATTN_SRW (ATTN_SBM / 4)
#define ATTN_DPL ((ATTN_D + 31) / 32)

extern "C" __global__ __launch_bounds__(128) void attn_fwd_scalar(
	attn_t* __restrict__ o, const attn_t* __restrict__ q, const attn_t* __restrict__ k, const attn_t* __restrict__ v,
	const int* __restrict__ lenp, int H, int G, int Sq, int Sk,
	long long qsb, long long qsh, long long qss,
	long long ksb, long long ksh, long long kss,
	long long vsb, long long vsh, long long vss,
	long long osb, long long osh, long long oss,
	float scale_log2, int causal, float* __restrict__ part, int chunk)
{
	// With part, the split-K mode: every row (G*Sq <= ATTN_SBM) in each
	// block, block x taking keys [x*chunk, (x+1)*chunk), its rows' output
	// unnormalised, max and sum written to part[b][hk][x][row][D+2] for
	// attn_split_combine.
	extern __shared__ float attn_smem_f[];
	const int D = ATTN_D;
	float* Qs = attn_smem_f;
	float* Ks = Qs + ATTN_SBM * D;
	float* Vs = Ks + ATTN_SBN * (D + 1);
	float* Ps = Vs + ATTN_SBN * D;
	const int b = blockIdx.z, hk = blockIdx.y, tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
	if (lenp) {
		int n = *lenp;
		Sk = n < Sk ? n : Sk;
	}
	const int rows = G * Sq, r0 = part ? 0 : blockIdx.x * ATTN_SBM;
	if (r0 >= rows) return;
	const int rlast = (r0 + ATTN_SBM < rows ? r0 + ATTN_SBM : rows) - 1;
	const int imax = rlast / Sq != r0 / Sq ? Sq - 1 : rlast % Sq;
	int kbeg = 0, kend = attn_klim(imax, Sq, Sk, causal);
	if (part) {
		kbeg = blockIdx.x * chunk;
		kend = kend < kbeg + chunk ? kend : kbeg + chunk;
	}
	const attn_t* kb = k + b * ksb + hk * ksh;
	const attn_t* vb = v + b * vsb + hk * vsh;

	for (int x = tid; x < ATTN_SBM * D; x += blockDim.x) {
		int row = x / D, d = x % D, r = r0 + row;
		float val = 0.0f;
		if (r < rows) val = attn_ld(q[b * qsb + (long long)(hk * G + r / Sq) * qsh + (long long)(r % Sq) * qss + d]) * scale_log2;
		Qs[x] = val;
	}
	float m[ATTN_SRW], l[ATTN_SRW], acc[ATTN_SRW][ATTN_DPL];
	#pragma unroll
	for (int rr = 0; rr < ATTN_SRW; rr++) {
		m[rr] = ATTN_NEG_INF;
		l[rr] = 0.0f;
		#pragma unroll
		for (int c = 0; c < ATTN_DPL; c++) acc[rr][c] = 0.0f;
	}
	for (int j0 = kbeg; j0 < kend; j0 += ATTN_SBN) {
		__syncthreads(); // the previous tile's readers are done (and Q is written, the first time)
		for (int x = tid; x < ATTN_SBN * D; x += blockDim.x) {
			int jj = x / D, d = x % D, j = j0 + jj;
			float kv = 0.0f, vv = 0.0f;
			if (j < kend) {
				kv = attn_ld(kb[(long long)j * kss + d]);
				vv = attn_ld(vb[(long long)j * vss + d]);
			}
			Ks[jj * (D + 1) + d] = kv;
			Vs[x] = vv;
		}
		__syncthreads();
		#pragma unroll
		for (int rr = 0; rr < ATTN_SRW; rr++) {
			const int row = warp * ATTN_SRW + rr, r = r0 + row;
			if (r >= rows) continue; // the same for the whole warp
			int lim = attn_klim(r % Sq, Sq, Sk, causal);
			lim = lim < kend ? lim : kend;
			const int j = j0 + lane;
			float s = ATTN_NEG_INF;
			if (j < lim) {
				const float* qr = Qs + row * D;
				const float* kr = Ks + lane * (D + 1);
				float dot = 0.0f;
#pragma unroll 8
				for (int d = 0; d < D; d++) dot += qr[d] * kr[d];
				s = dot;
			}
			float mt = s;
			#pragma unroll
			for (int w = 16; w > 0; w /= 2) mt = fmaxf(mt, __shfl_xor_sync(0xffffffffu, mt, w));
			const float mnew = fmaxf(m[rr], mt);
			const float msafe = mnew == ATTN_NEG_INF ? 0.0f : mnew;
			const float p = attn_exp2(s - msafe), alpha = attn_exp2(m[rr] - msafe);
			float ps = p;
			#pragma unroll
			for (int w = 16; w > 0; w /= 2) ps += __shfl_xor_sync(0xffffffffu, ps, w);
			l[rr] = l[rr] * alpha + ps;
			m[rr] = mnew;
			Ps[row * ATTN_SBN + lane] = p;
			__syncwarp();
			const float* pr = Ps + row * ATTN_SBN;
			#pragma unroll
			for (int c = 0; c < ATTN_DPL; c++) {
				const int d = lane + 32 * c;
				if (d < D) {
					float a = acc[rr][c] * alpha;
					#pragma unroll
					for (int jj = 0; jj < ATTN_SBN; jj++) a += pr[jj] * Vs[jj * D + d];
					acc[rr][c] = a;
				}
			}
		}
	}
	#pragma unroll
	for (int rr = 0; rr < ATTN_SRW; rr++) {
		const int r = r0 + warp * ATTN_SRW + rr;
		if (r >= rows) continue;
		if (part) {
			float* pr = part + ((((long long)b * gridDim.y + hk) * gridDim.x + blockIdx.x) * rows + r) * (D + 2);
#pragma unroll
			for (int c = 0; c < ATTN_DPL; c++) {
				const int d = lane + 32 * c;
				if (d < D) pr[d] = acc[rr][c];
			}
			if (lane == 0) {
				pr[D] = m[rr];
				pr[D + 1] = l[rr];
			}
			continue;
		}
		const int h = hk * G + r / Sq, i = r % Sq;
		attn_t* orow = o + b * osb + h * osh + i * oss;
		const float inv = l[rr] > 0.0f ? 1.0f / l[rr] : 0.0f;
		#pragma unroll
		for (int c = 0; c < ATTN_DPL; c++) {
			const int d = lane + 32 * c;
			if (d < D) orow[d] = attn_st(acc[rr][c] * inv);
		}
	}
}

// attn_split_combine joins attn_fwd_scalar's splits: for each row (block
// x of grid (rows, Hkv, B)), the splits' outputs weighed by 2^(m - M), M
// their largest max, over their sums so weighed. A thread per column.
extern "C" __global__ void attn_split_combine(attn_t* __restrict__ o, const float* __restrict__ part,
	long long osb, long long osh, long long oss, int G, int Sq, int splits)
{
	const int r = blockIdx.x, hk = blockIdx.y, b = blockIdx.z, rows = gridDim.x;
	const float* base = part + (((long long)b * gridDim.y + hk) * splits * rows + r) * (ATTN_D + 2);
	const long long step = (long long)rows * (ATTN_D + 2);
	float M = ATTN_NEG_INF;
	for (int x = 0; x < splits; x++) M = fmaxf(M, base[x * step + ATTN_D]);
	const float msafe = M == ATTN_NEG_INF ? 0.0f : M;
	float L = 0.0f;
	for (int x = 0; x < splits; x++) L += base[x * step + ATTN_D + 1] * attn_exp2(base[x * step + ATTN_D] - msafe);
	const float inv = L > 0.0f ? 1.0f / L : 0.0f;
	const int h = hk * G + r / Sq, i = r % Sq;
	attn_t* orow = o + b * osb + h * osh + i * oss;
	for (int d = threadIdx.x; d < ATTN_D; d += blockDim.x) {
		float acc = 0.0f;
		for (int x = 0; x < splits; x++) acc += base[x * step + d] * attn_exp2(base[x * step + ATTN_D] - msafe);
		orow[d] = attn_st(acc * inv);
	}
}

// ---- the KV cache ---------------------------------------------------------------
// state[0] is the cache's length, state[1] set where an Append would have
// passed maxlen (and was dropped). attn_kv_append copies n new positions
// of k and v ([B, Hkv, n, D] or [B, n, Hkv, D]) to the cache ([B, Hkv, maxlen,
// D]) after its length; attn_kv_advance, launched after it, adds n. A
// block per (position, head, batch), a thread per column; k's strides of
// batch, head and position are ks*, v's vs* (views of one projection's
// output, or arrays of their own).
extern "C" __global__ void attn_kv_append(attn_t* __restrict__ kc, attn_t* __restrict__ vc,
	const attn_t* __restrict__ k, const attn_t* __restrict__ v, long long ksb, long long ksh, long long kss,
	long long vsb, long long vsh, long long vss, const int* __restrict__ state, int n, int maxlen)
{
	const int pos = state[0];
	if (pos < 0 || pos + n > maxlen) return;
	const int j = blockIdx.x, hk = blockIdx.y, b = blockIdx.z, Hkv = gridDim.y;
	const long long ksrc = b * ksb + hk * ksh + j * kss, vsrc = b * vsb + hk * vsh + j * vss;
	const long long dst = (((long long)b * Hkv + hk) * maxlen + pos + j) * ATTN_D;
	for (int d = threadIdx.x; d < ATTN_D; d += blockDim.x) {
		kc[dst + d] = k[ksrc + d];
		vc[dst + d] = v[vsrc + d];
	}
}

extern "C" __global__ void attn_kv_advance(int* state, int n, int maxlen) {
	if (threadIdx.x != 0 || blockIdx.x != 0) return;
	const int pos = state[0];
	if (pos < 0 || pos + n > maxlen) state[1] = 1;
	else state[0] = pos + n;
}

// ---- the tensor-core kernel -------------------------------------------------------
#if ATTN_T != 0 && ATTN_D % 16 == 0
#define ATTN_TBM (16 * ATTN_MT * ATTN_NW)
#define ATTN_SD (ATTN_D + 8) // a shared row, padded by 16 bytes: ldmatrix's 8 rows fall on distinct banks
#define ATTN_DK (ATTN_D / 16) // k-steps of QK^T, over the head dimension
#define ATTN_DN (ATTN_D / 8)  // n-tiles of PV, over the head dimension
#define ATTN_NN (ATTN_BN / 8) // n-tiles of QK^T, over the keys
// ATTN_QSMEM: Q's fragments read from shared memory at each tile, where
// keeping them in registers (MT*D/2 of them a lane) would leave too few
// for the accumulators: two m-tiles at D 128, as FlashAttention-2 does
// there. Otherwise they are read once and kept.
#define ATTN_QSMEM (ATTN_MT * ATTN_D > 128)

// Fragments of mma.sync.m16n8k16 (PTX ISA, "Matrix Fragments for
// mma.m16n8k16"), for lane l, g = l/4, c = 2*(l%4):
//   A (16x16, row-major), 4 registers of two halves: a0 = A[g][c..c+1],
//     a1 = A[g+8][c..c+1], a2 = A[g][c+8..c+9], a3 = A[g+8][c+8..c+9];
//   B (16x8, "col": each column's 16 k contiguous), 2 registers:
//     b0 = B[c..c+1][g], b1 = B[c+8..c+9][g];
//   C, D (16x8 floats): c0, c1 = C[g][c..c+1], c2, c3 = C[g+8][c..c+1].
// The lower half of a register is the lower index.
// ldmatrix.x4 loads four 8x8 matrices of halves: lane l gives the address
// of row l%8 of matrix l/8; matrix i lands in register i, lane l holding
// its row l/4, columns c..c+1 (with .trans: its column l/4, rows c, c+1).

#ifdef __CUDA_ARCH__
__device__ __forceinline__ unsigned attn_smem_addr(const void* p) {
	unsigned a;
	asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
	return a;
}
#endif

// attn_cp16 copies 16 bytes from global src to shared dst, or zeroes dst
// where !valid (cp.async's src-size 0): asynchronously, until
// attn_cp_wait.
__device__ __forceinline__ void attn_cp16(void* dst, const void* src, bool valid) {
#ifdef __CUDA_ARCH__
	asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" :: "r"(attn_smem_addr(dst)), "l"(src), "r"(valid ? 16 : 0));
#else
	unsigned int* d = (unsigned int*)dst;
	const unsigned int* s = (const unsigned int*)src;
	for (int i = 0; i < 4; i++) d[i] = valid ? s[i] : 0u;
#endif
}
__device__ __forceinline__ void attn_cp_commit() {
#ifdef __CUDA_ARCH__
	asm volatile("cp.async.commit_group;");
#endif
}
// attn_cp_wait waits until at most N groups of copies are in flight.
template <int N> __device__ __forceinline__ void attn_cp_wait() {
#ifdef __CUDA_ARCH__
	asm volatile("cp.async.wait_group %0;" :: "n"(N));
#endif
}

#ifndef __CUDA_ARCH__
// The host's stand-ins for the warp-wide instructions exchange through a
// warp's scratch (the fake runs a block's threads as fibers of one OS
// thread, so thread_local is the block's): each lane writes, the warp
// meets at __syncwarp, each lane reads what the instruction would give
// it, the warp meets again before the scratch is reused.
static thread_local const unsigned char* attn_emu_addr[ATTN_NW][32];
static thread_local unsigned int attn_emu_a[ATTN_NW][32][4];
static thread_local unsigned int attn_emu_b[ATTN_NW][32][2];
__device__ __forceinline__ float attn_half_to_f32(unsigned short h) {
#if ATTN_T == 1
	return gocuda_f16_to_f32(h);
#else
	return gocuda_bf16_to_f32(h);
#endif
}
#endif

// attn_ldsm_x4 is ldmatrix.sync.aligned.m8n8.x4.shared.b16: p is this
// lane's row address (see above).
__device__ __forceinline__ void attn_ldsm_x4(unsigned (&r)[4], const attn_t* p) {
#ifdef __CUDA_ARCH__
	asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
		: "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(attn_smem_addr(p)));
#else
	const int w = threadIdx.x / 32, l = threadIdx.x % 32;
	attn_emu_addr[w][l] = (const unsigned char*)p;
	__syncwarp();
	#pragma unroll
	for (int i = 0; i < 4; i++) {
		const unsigned char* row = attn_emu_addr[w][i * 8 + l / 4];
		__builtin_memcpy(&r[i], row + (l % 4) * 4, 4);
	}
	__syncwarp();
#endif
}

// attn_ldsm_x4_t is ldmatrix with .trans: lane l gets column l/4 of
// each matrix, rows 2*(l%4) (lower half) and 2*(l%4)+1 (upper).
__device__ __forceinline__ void attn_ldsm_x4_t(unsigned (&r)[4], const attn_t* p) {
#ifdef __CUDA_ARCH__
	asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
		: "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(attn_smem_addr(p)));
#else
	const int w = threadIdx.x / 32, l = threadIdx.x % 32;
	attn_emu_addr[w][l] = (const unsigned char*)p;
	__syncwarp();
	#pragma unroll
	for (int i = 0; i < 4; i++) {
		unsigned short lo, hi;
		__builtin_memcpy(&lo, attn_emu_addr[w][i * 8 + 2 * (l % 4)] + (l / 4) * 2, 2);
		__builtin_memcpy(&hi, attn_emu_addr[w][i * 8 + 2 * (l % 4) + 1] + (l / 4) * 2, 2);
		r[i] = lo | (unsigned)hi << 16;
	}
	__syncwarp();
#endif
}

// attn_mma is D = A*B + C of mma.sync.aligned.m16n8k16.row.col.f32 with
// half operands, C and D the same registers.
__device__ __forceinline__ void attn_mma(float (&c)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
#ifdef __CUDA_ARCH__
#if ATTN_T == 1
	asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
		: "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3]) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#else
	asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
		: "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3]) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#endif
#else
	const int w = threadIdx.x / 32, l = threadIdx.x % 32;
	#pragma unroll
	for (int i = 0; i < 4; i++) attn_emu_a[w][l][i] = a[i];
	attn_emu_b[w][l][0] = b0;
	attn_emu_b[w][l][1] = b1;
	__syncwarp();
	// A[row][kk]: lane 4*(row%8) + (kk%8)/2, register (kk/8)*2 + row/8, half kk%2.
	// B[kk][col]: lane 4*col + (kk%8)/2, register kk/8, half kk%2.
	#pragma unroll
	for (int e = 0; e < 4; e++) {
		const int row = l / 4 + (e / 2) * 8, col = 2 * (l % 4) + e % 2;
		float sum = 0.0f;
		for (int kk = 0; kk < 16; kk++) {
			unsigned ar = attn_emu_a[w][4 * (row % 8) + (kk % 8) / 2][(kk / 8) * 2 + row / 8];
			unsigned br = attn_emu_b[w][4 * col + (kk % 8) / 2][kk / 8];
			float x = attn_half_to_f32((unsigned short)(kk % 2 ? ar >> 16 : ar & 0xffffu));
			float y = attn_half_to_f32((unsigned short)(kk % 2 ? br >> 16 : br & 0xffffu));
			sum += x * y;
		}
		c[e] += sum;
	}
	__syncwarp();
#endif
}

// attn_pack rounds two floats to a register of two halves, lo the lower.
__device__ __forceinline__ unsigned attn_pack(float lo, float hi) {
#ifdef __CUDA_ARCH__
	unsigned r;
#if ATTN_T == 1
	asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
#else
	asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
#endif
	return r;
#else
	return (unsigned)attn_st(lo) | (unsigned)attn_st(hi) << 16;
#endif
}

// attn_load_kv copies keys j0 .. j0+BN-1 of k and v (zeros from kend on)
// into the shared tiles Kd and Vd, asynchronously: 16 bytes a copy, the
// block's threads over the tile's chunks, the loop unrolled.
__device__ __forceinline__ void attn_load_kv(attn_t* Kd, attn_t* Vd, const attn_t* kb, const attn_t* vb,
	int j0, int kend, long long kss, long long vss, int tid)
{
	const int CH = ATTN_D / 8, N = ATTN_BN * CH, NT = ATTN_NW * 32;
	#pragma unroll
	for (int it = 0; it < (N + NT - 1) / NT; it++) {
		const int x = tid + it * NT;
		if (N % NT == 0 || x < N) {
			const int jj = x / CH, ch = x % CH, j = j0 + jj;
			const bool ok = j < kend;
			attn_cp16(Kd + jj * ATTN_SD + ch * 8, ok ? kb + (long long)j * kss + ch * 8 : kb, ok);
			attn_cp16(Vd + jj * ATTN_SD + ch * 8, ok ? vb + (long long)j * vss + ch * 8 : vb, ok);
		}
	}
}
#endif

// attn_fwd_tc: see the top of this file. Grid (row tiles, Hkv, B); the
// row tiles in reverse under the causal mask, so that the longest (the
// last rows, which see the most keys) start first. Shared memory
// (dynamic, ATTN_SD halves a row): Q [TBM], K [2][BN], V [2][BN].
extern "C" __global__ __launch_bounds__(ATTN_NW * 32) void attn_fwd_tc(
	attn_t* __restrict__ o, const attn_t* __restrict__ q, const attn_t* __restrict__ k, const attn_t* __restrict__ v,
	const int* __restrict__ lenp, int H, int G, int Sq, int Sk,
	long long qsb, long long qsh, long long qss,
	long long ksb, long long ksh, long long kss,
	long long vsb, long long vsh, long long vss,
	long long osb, long long osh, long long oss,
	float scale_log2, int causal, float* __restrict__ part, int chunk)
{
	// part and chunk: attn_fwd_scalar's, unused (one argument list for both).
	// Its body only for the halves and D a multiple of 16, from sm_80 on
	// (or on the host): the Go side launches it for nothing else. The
	// entry itself is in every variant, as internal/hostcc expects.
#if ATTN_T != 0 && ATTN_D % 16 == 0 && (!defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800)
	extern __shared__ unsigned int attn_smem_h[];
	attn_t* Qs = (attn_t*)attn_smem_h;
	attn_t* Ks = Qs + ATTN_TBM * ATTN_SD;
	attn_t* Vs = Ks + 2 * ATTN_BN * ATTN_SD;
	const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
	const int b = blockIdx.z, hk = blockIdx.y;
	if (lenp) {
		int n = *lenp;
		Sk = n < Sk ? n : Sk;
	}
	const int rows = G * Sq;
	const int tile = causal ? gridDim.x - 1 - blockIdx.x : blockIdx.x;
	const int r0 = tile * ATTN_TBM;
	if (r0 >= rows) return;
	const int rlast = (r0 + ATTN_TBM < rows ? r0 + ATTN_TBM : rows) - 1;
	const bool straddles = rlast / Sq != r0 / Sq; // the block's rows cross from one head to the next
	// kend: the keys any row of the block sees; kfull: those every row
	// sees (a tile below it needs no mask).
	const int kend = attn_klim(straddles ? Sq - 1 : rlast % Sq, Sq, Sk, causal);
	const int kfull = attn_klim(straddles ? 0 : r0 % Sq, Sq, Sk, causal);
	const int ntiles = kend > 0 ? (kend + ATTN_BN - 1) / ATTN_BN : 0;
	const attn_t* kb = k + b * ksb + hk * ksh;
	const attn_t* vb = v + b * vsb + hk * vsh;
	const int CH = ATTN_D / 8; // 16-byte chunks a row

	// Each thread's rows: for m-tile mt, half hh, the block row
	// warp*16*MT + mt*16 + lane/4 + 8*hh.
	float oacc[ATTN_MT][ATTN_DN][4];
	float mrow[ATTN_MT][2], lrow[ATTN_MT][2];
	int klim[ATTN_MT][2];
	#pragma unroll
	for (int mt = 0; mt < ATTN_MT; mt++) {
		#pragma unroll
		for (int hh = 0; hh < 2; hh++) {
			mrow[mt][hh] = ATTN_NEG_INF;
			lrow[mt][hh] = 0.0f;
			const int r = r0 + warp * 16 * ATTN_MT + mt * 16 + lane / 4 + 8 * hh;
			klim[mt][hh] = attn_klim(r % Sq, Sq, Sk, causal);
		}
		#pragma unroll
		for (int dn = 0; dn < ATTN_DN; dn++)
			#pragma unroll
			for (int e = 0; e < 4; e++) oacc[mt][dn][e] = 0.0f;
	}
#if !ATTN_QSMEM
	unsigned qf[ATTN_MT][ATTN_DK][4];
#endif

	if (ntiles > 0) {
		#pragma unroll
		for (int it = 0; it < ATTN_TBM * CH / (ATTN_NW * 32); it++) { // TBM*CH is 16*MT*NW*D/8: a multiple of the threads
			const int x = tid + it * ATTN_NW * 32;
			const int row = x / CH, ch = x % CH, r = r0 + row;
			const bool ok = r < rows;
			const attn_t* src = ok ? q + b * qsb + (long long)(hk * G + r / Sq) * qsh + (long long)(r % Sq) * qss + ch * 8 : q;
			attn_cp16(Qs + row * ATTN_SD + ch * 8, src, ok);
		}
		attn_load_kv(Ks, Vs, kb, vb, 0, kend, kss, vss, tid);
		attn_cp_commit();
	}
	for (int t = 0; t < ntiles; t++) {
		if (t + 1 < ntiles) { // prefetch tile t+1 into the other buffer
			attn_t* Kn = Ks + ((t + 1) & 1) * ATTN_BN * ATTN_SD;
			attn_t* Vn = Vs + ((t + 1) & 1) * ATTN_BN * ATTN_SD;
			attn_load_kv(Kn, Vn, kb, vb, (t + 1) * ATTN_BN, kend, kss, vss, tid);
			attn_cp_commit();
			attn_cp_wait<1>(); // tile t (and Q) landed; t+1 may still be in flight
		} else {
			attn_cp_wait<0>();
		}
		__syncthreads();
#if !ATTN_QSMEM
		if (t == 0) { // Q's fragments, kept in registers for every tile
			#pragma unroll
			for (int mt = 0; mt < ATTN_MT; mt++)
				#pragma unroll
				for (int dk = 0; dk < ATTN_DK; dk++)
					attn_ldsm_x4(qf[mt][dk], Qs + (warp * 16 * ATTN_MT + mt * 16 + lane % 16) * ATTN_SD + dk * 16 + (lane / 16) * 8);
		}
#endif
		const attn_t* Kt = Ks + (t & 1) * ATTN_BN * ATTN_SD;
		const attn_t* Vt = Vs + (t & 1) * ATTN_BN * ATTN_SD;

		// S = Q K^T: for each k-step, the B fragments of two n-tiles (16
		// keys) at once: matrices 0, 1 are keys 0-7 at dims +0, +8 (b0,
		// b1 of the first n-tile), 2, 3 keys 8-15 (the second's).
		float s[ATTN_MT][ATTN_NN][4];
		#pragma unroll
		for (int mt = 0; mt < ATTN_MT; mt++)
			#pragma unroll
			for (int nn = 0; nn < ATTN_NN; nn++)
				#pragma unroll
				for (int e = 0; e < 4; e++) s[mt][nn][e] = 0.0f;
		#pragma unroll
		for (int dk = 0; dk < ATTN_DK; dk++) {
#if ATTN_QSMEM
			unsigned qk[ATTN_MT][4]; // this k-step's Q fragments
			#pragma unroll
			for (int mt = 0; mt < ATTN_MT; mt++)
				attn_ldsm_x4(qk[mt], Qs + (warp * 16 * ATTN_MT + mt * 16 + lane % 16) * ATTN_SD + dk * 16 + (lane / 16) * 8);
#define ATTN_QF(mt, dk) qk[mt]
#else
#define ATTN_QF(mt, dk) qf[mt][dk]
#endif
			#pragma unroll
			for (int np = 0; np < ATTN_NN / 2; np++) {
				unsigned kf[4];
				attn_ldsm_x4(kf, Kt + (np * 16 + lane % 8 + (lane / 16) * 8) * ATTN_SD + dk * 16 + ((lane / 8) % 2) * 8);
				#pragma unroll
				for (int mt = 0; mt < ATTN_MT; mt++) {
					attn_mma(s[mt][2 * np], ATTN_QF(mt, dk), kf[0], kf[1]);
					attn_mma(s[mt][2 * np + 1], ATTN_QF(mt, dk), kf[2], kf[3]);
				}
			}
		}

#undef ATTN_QF

		// The online softmax, per row: mask, the tile's max across the
		// quad of lanes that holds the row, rescale what was summed so
		// far. mrow is kept in the scores' own units and the scale folded
		// into the exponent, one FFMA a score (the Go side takes this
		// kernel only for a positive scale, so that the max commutes
		// with it). lrow is this lane's part of the row's sum (its
		// columns), added across the quad at the end.
		const int j0 = t * ATTN_BN;
		const bool mask = j0 + ATTN_BN > kfull;
		#pragma unroll
		for (int mt = 0; mt < ATTN_MT; mt++) {
			#pragma unroll
			for (int hh = 0; hh < 2; hh++) {
				float mx = ATTN_NEG_INF;
				#pragma unroll
				for (int nn = 0; nn < ATTN_NN; nn++) {
					#pragma unroll
					for (int e = 0; e < 2; e++) {
						if (mask && j0 + nn * 8 + 2 * (lane % 4) + e >= klim[mt][hh]) s[mt][nn][2 * hh + e] = ATTN_NEG_INF;
						mx = fmaxf(mx, s[mt][nn][2 * hh + e]);
					}
				}
				mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
				mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
				const float mnew = fmaxf(mrow[mt][hh], mx);
				const float msc = mnew == ATTN_NEG_INF ? 0.0f : mnew * scale_log2; // -inf rows: every p is 0
				const float alpha = attn_exp2(mrow[mt][hh] * scale_log2 - msc);
				mrow[mt][hh] = mnew;
				float sum = 0.0f;
				#pragma unroll
				for (int nn = 0; nn < ATTN_NN; nn++) {
					#pragma unroll
					for (int e = 0; e < 2; e++) {
						const float p = attn_exp2(fmaf(s[mt][nn][2 * hh + e], scale_log2, -msc));
						s[mt][nn][2 * hh + e] = p;
						sum += p;
					}
				}
				lrow[mt][hh] = lrow[mt][hh] * alpha + sum;
				#pragma unroll
				for (int dn = 0; dn < ATTN_DN; dn++) {
					oacc[mt][dn][2 * hh] *= alpha;
					oacc[mt][dn][2 * hh + 1] *= alpha;
				}
			}
		}

		// O += P V: P's C fragments of n-tiles 2kp and 2kp+1 are, rounded
		// to halves, the A fragment of k-step kp (keys 16kp..16kp+15).
		// V's B fragments by ldmatrix.trans, two dim n-tiles at once:
		// matrices 0, 1 are keys +0-7, +8-15 of dims +0-7 (b0, b1 of the
		// first), 2, 3 the same keys of dims +8-15 (the second's).
		#pragma unroll
		for (int kp = 0; kp < ATTN_NN / 2; kp++) {
			unsigned pa[ATTN_MT][4];
			#pragma unroll
			for (int mt = 0; mt < ATTN_MT; mt++) {
				pa[mt][0] = attn_pack(s[mt][2 * kp][0], s[mt][2 * kp][1]);
				pa[mt][1] = attn_pack(s[mt][2 * kp][2], s[mt][2 * kp][3]);
				pa[mt][2] = attn_pack(s[mt][2 * kp + 1][0], s[mt][2 * kp + 1][1]);
				pa[mt][3] = attn_pack(s[mt][2 * kp + 1][2], s[mt][2 * kp + 1][3]);
			}
			#pragma unroll
			for (int dp = 0; dp < ATTN_DN / 2; dp++) {
				unsigned vf[4];
				attn_ldsm_x4_t(vf, Vt + (kp * 16 + lane % 8 + ((lane / 8) % 2) * 8) * ATTN_SD + dp * 16 + (lane / 16) * 8);
				#pragma unroll
				for (int mt = 0; mt < ATTN_MT; mt++) {
					attn_mma(oacc[mt][2 * dp], pa[mt], vf[0], vf[1]);
					attn_mma(oacc[mt][2 * dp + 1], pa[mt], vf[2], vf[3]);
				}
			}
		}
		__syncthreads(); // before the next prefetch overwrites this tile's buffer
	}

	// O / l, each lane's two columns of each dim n-tile as one 4-byte store.
	#pragma unroll
	for (int mt = 0; mt < ATTN_MT; mt++) {
		#pragma unroll
		for (int hh = 0; hh < 2; hh++) {
			float l = lrow[mt][hh];
			l += __shfl_xor_sync(0xffffffffu, l, 1);
			l += __shfl_xor_sync(0xffffffffu, l, 2);
			const float inv = l > 0.0f ? 1.0f / l : 0.0f;
			const int r = r0 + warp * 16 * ATTN_MT + mt * 16 + lane / 4 + 8 * hh;
			if (r >= rows) continue;
			const int h = hk * G + r / Sq, i = r % Sq;
			attn_t* orow = o + b * osb + h * osh + i * oss;
			#pragma unroll
			for (int dn = 0; dn < ATTN_DN; dn++) {
				const unsigned pr = attn_pack(oacc[mt][dn][2 * hh] * inv, oacc[mt][dn][2 * hh + 1] * inv);
				*(unsigned*)(orow + dn * 8 + 2 * (lane % 4)) = pr;
			}
		}
	}
#endif
}
`
