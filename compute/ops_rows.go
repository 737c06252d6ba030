package compute

import (
	"fmt"
	"math/bits"
	"slices"
	"strings"
	"sync"
	"weak"

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

// softmaxSource is the kernels of Softmax and LogSoftmax over rows of T,
// laid out as planRows says (layout.go). One pass finds a row's largest
// element and the sum of the exponentials of the differences from it
// together (each thread keeps its largest so far and rescales its sum when
// that grows, then the threads' pairs join in a fixed tree), a second
// writes the results. A block per row keeps the row in shared memory
// when the launch gives it room (cached), so that the row is read from
// device memory once; short rows are taken by lanes of a warp, which keep
// the row in registers (NAME_regsE, as planRegs says: read once, one
// exponential an element), or, past what registers hold, in three passes
// (gocuda_short); rows of a few elements a thread are staged; a few very
// long rows are cut into chunks (NAME_stats, then NAME_apply, which joins
// a row's chunks in order). The passes take 16 bytes of a row at a time
// when its length and both matrices allow. Computed in T's value type
// (float for the halves, double for float64).
func softmaxSource(t dtype, name string, logarithm bool) string {
	out := "exp(x - m) / sum"
	// The paths over registers keep e^(x - m) for Softmax (stagedKeep,
	// regKeep) and take the log of the sum once for LogSoftmax (logSum):
	// the same values as out's.
	stagedKeep, regKeep, logSum, staged, regOut := "xs[c] = e;", "x[k][i] = e;", "", "x / sum", "x_ / sum"
	if logarithm {
		out = "x - m - log(sum)"
		stagedKeep, regKeep, logSum, staged, regOut = "", "", "const gocuda_v ls = log(sum);", "x - m - ls", "x_ - m - ls"
	}
	loadv := "\t#pragma unroll\n\tfor (int k = 0; k < V; k++) f[k] = xs.v[k];"
	storev := "\t#pragma unroll\n\tfor (int k = 0; k < V; k++) ys.v[k] = " + t.store("f[k]") + ";"
	if t.half != "" {
		loadv = "\tgocuda_load_" + t.half + "(f, xs);"
		storev = "\tif constexpr (V % 2 == 0) gocuda_store_" + t.half + "(ys, f);\n\telse {\n" + storev + "\n\t}"
	}
	return prelude + fmt.Sprintf(`
typedef %[2]s gocuda_v;
typedef %[3]s gocuda_s;
// gocuda_join folds (m2, s2) into (m, s): the largest, and the sum of
// exponentials rescaled to it; a sum of 0 is nothing folded yet. A NaN
// anywhere makes both NaN.
__device__ __forceinline__ void gocuda_join(gocuda_v* m, gocuda_v* s, gocuda_v m2, gocuda_v s2) {
	if (m2 != m2 || *m != *m) { *m = m2 + *m; *s = *m; return; }
	if (s2 == 0) return;
	if (*s == 0) { *m = m2; *s = s2; return; }
	if (m2 == *m) { *s += s2; return; } // infinities too, whose difference is NaN
	if (m2 > *m) { *s = *s * exp(*m - m2) + s2; *m = m2; }
	else *s += s2 * exp(m2 - *m);
}
// gocuda_warpjoin joins the pairs of G lanes into the first's, in a fixed
// tree, and gives it to all G.
template <int G> __device__ __forceinline__ void gocuda_warpjoin(gocuda_v* m, gocuda_v* s) {
	#pragma unroll
	for (int k = G / 2; k > 0; k >>= 1) {
		const gocuda_v m2 = __shfl_down_sync(0xffffffffu, *m, k), s2 = __shfl_down_sync(0xffffffffu, *s, k);
		gocuda_join(m, s, m2, s2);
	}
	*m = __shfl_sync(0xffffffffu, *m, 0, G);
	*s = __shfl_sync(0xffffffffu, *s, 0, G);
}
// gocuda_blockjoin joins a block's pairs, its warps' in its first warp,
// and gives the result to every thread; every thread must call it.
__device__ __forceinline__ void gocuda_blockjoin(gocuda_v* m, gocuda_v* s) {
	__shared__ gocuda_v sm[32], ss[32];
	gocuda_warpjoin<32>(m, s);
	if (threadIdx.x %% 32 == 0) { sm[threadIdx.x / 32] = *m; ss[threadIdx.x / 32] = *s; }
	__syncthreads();
	if (threadIdx.x < 32) {
		const bool w = threadIdx.x < blockDim.x / 32;
		*m = w ? sm[threadIdx.x] : 0;
		*s = w ? ss[threadIdx.x] : 0;
		gocuda_warpjoin<32>(m, s);
		if (threadIdx.x == 0) { sm[0] = *m; ss[0] = *s; }
	}
	__syncthreads();
	*m = sm[0];
	*s = ss[0];
	__syncthreads(); // sm and ss are the next call's
}
// gocuda_stats folds vectors [from, to) of a row (V elements each), a
// thread every lanes-th from lane, into (m, s), keeping each in cache[j -
// from] when cache is not null. A vector's pair is made whole first, as
// gocuda_short makes a row's (its largest, a NaN its own largest; then
// the sum of e^(x - largest), 1 where x is the largest), and joined once:
// an exponential an element and one a vector, not one or two an element
// and a branch each. A thread's vectors are read GOCUDA_BATCH at a time,
// all of them before any is folded (in order: the same bits), so that a
// row that a few blocks take alone has that many reads in flight: the
// compiler does not move a read above the store into the cache before it,
// which may be the same memory for all it knows.
#define GOCUDA_BATCH 2
template <int V>
__device__ __forceinline__ void gocuda_stats(const gocuda_s* in, long long from, long long to, long long lane, long long lanes, gocuda_vec<gocuda_s, V>* cache, gocuda_v* m, gocuda_v* s) {
	typedef gocuda_vec<gocuda_s, V> vec;
	for (long long j0 = from + lane; j0 < to; j0 += GOCUDA_BATCH * lanes) {
		vec batch[GOCUDA_BATCH];
		#pragma unroll
		for (int u = 0; u < GOCUDA_BATCH; u++) if (j0 + u * lanes < to) batch[u] = ((const vec*)in)[j0 + u * lanes];
		#pragma unroll
		for (int u = 0; u < GOCUDA_BATCH; u++) {
			const long long j = j0 + u * lanes;
			if (j >= to) break;
			const vec xs = batch[u];
			if (cache) cache[j - from] = xs;
			gocuda_v x[V];
			#pragma unroll
			for (int k = 0; k < V; k++) x[k] = %[4]s;
			gocuda_v vm = x[0], vs = 0;
			#pragma unroll
			for (int k = 1; k < V; k++) vm = (x[k] != x[k] || x[k] > vm) ? x[k] : vm;
			#pragma unroll
			for (int k = 0; k < V; k++) vs += x[k] == vm ? (gocuda_v)1 : exp(x[k] - vm);
			gocuda_join(m, s, vm, vs);
		}
	}
}
// gocuda_write writes the results of vectors [from, to) of a row, read
// back from cache (only what this thread kept) or from in, GOCUDA_BATCH
// vectors at a time before any is written (out may be in: each thread
// reads its own vectors before it writes them).
template <int V>
__device__ __forceinline__ void gocuda_write(const gocuda_s* in, gocuda_s* out, long long from, long long to, long long lane, long long lanes, const gocuda_vec<gocuda_s, V>* cache, gocuda_v m, gocuda_v sum) {
	typedef gocuda_vec<gocuda_s, V> vec;
	for (long long j0 = from + lane; j0 < to; j0 += GOCUDA_BATCH * lanes) {
		vec batch[GOCUDA_BATCH];
		#pragma unroll
		for (int u = 0; u < GOCUDA_BATCH; u++) if (j0 + u * lanes < to) batch[u] = cache ? cache[j0 + u * lanes - from] : ((const vec*)in)[j0 + u * lanes];
		#pragma unroll
		for (int u = 0; u < GOCUDA_BATCH; u++) {
			const long long j = j0 + u * lanes;
			if (j >= to) break;
			const vec xs = batch[u];
			vec ys;
			#pragma unroll
			for (int k = 0; k < V; k++) { const gocuda_v x = %[4]s; ys.v[k] = %[5]s; }
			((vec*)out)[j] = ys;
		}
	}
}
// gocuda_short takes a short row with G lanes of a warp in three passes
// over it (each lane's few elements stay in the cache): the largest
// (a NaN its own largest), the sum of e^(x - m) (1 where x is m, so that
// infinities count as the online join counts them), the results.
template <int V, int G>
__device__ __forceinline__ void gocuda_short(const gocuda_s* in, gocuda_s* out, long long vectors, long long lane, bool live) {
	typedef gocuda_vec<gocuda_s, V> vec;
	gocuda_v m = -__int_as_float(0x7f800000), sum = 0;
	if (live) {
		#pragma unroll 2
		for (long long j = lane; j < vectors; j += G) {
			const vec xs = ((const vec*)in)[j];
			#pragma unroll
			for (int k = 0; k < V; k++) { const gocuda_v x = %[4]s; m = (x != x || x > m) ? x : m; }
		}
	}
	#pragma unroll
	for (int k = G / 2; k > 0; k >>= 1) { const gocuda_v m2 = __shfl_down_sync(0xffffffffu, m, k); m = (m2 != m2 || m2 > m) ? m2 : m; }
	m = __shfl_sync(0xffffffffu, m, 0, G);
	if (live) {
		#pragma unroll 2
		for (long long j = lane; j < vectors; j += G) {
			const vec xs = ((const vec*)in)[j];
			#pragma unroll
			for (int k = 0; k < V; k++) { const gocuda_v x = %[4]s; sum += x == m ? (gocuda_v)1 : exp(x - m); }
		}
	}
	#pragma unroll
	for (int k = G / 2; k > 0; k >>= 1) sum += __shfl_down_sync(0xffffffffu, sum, k);
	sum = __shfl_sync(0xffffffffu, sum, 0, G);
	if (live) gocuda_write<V>(in, out, 0, vectors, lane, G, 0, m, sum);
}
// gocuda_rows: G lanes of a warp take a row (G of 1 to 32), or the whole
// block (G = 0), in one pass with the online join, the row kept in cache.
template <int V, int G>
__device__ __forceinline__ void gocuda_rows(const gocuda_s* src, gocuda_s* dst, long long rows, long long cols, gocuda_vec<gocuda_s, V>* cache) {
	const long long per = G ? blockDim.x / G : 1, lanes = G ? G : blockDim.x, lane = G ? threadIdx.x %% G : threadIdx.x;
	for (long long base = (long long)blockIdx.x * per; base < rows; base += (long long)gridDim.x * per) {
		const long long r = base + (G ? threadIdx.x / G : 0);
		if constexpr (G > 0) {
			gocuda_short<V, G>(src + r * cols, dst + r * cols, cols / V, lane, r < rows);
		} else {
			gocuda_v m = 0, sum = 0;
			gocuda_stats<V>(src + r * cols, 0, cols / V, lane, lanes, cache, &m, &sum);
			gocuda_blockjoin(&m, &sum);
			gocuda_write<V>(src + r * cols, dst + r * cols, 0, cols / V, lane, lanes, cache, m, sum);
		}
	}
}
// gocuda_staged takes rows of a few elements a thread each (G = 1), the
// block's rows staged through shared memory (st, blockDim.x * cols values)
// so that they are read and written in runs, each thread's row in three
// passes as gocuda_short's, over registers where the row has
// GOCUDA_STAGED elements or fewer (planRows gives a thread no longer
// row), each exponential computed once.
#define GOCUDA_STAGED (32 / sizeof(gocuda_s))
__device__ __forceinline__ void gocuda_staged(const gocuda_s* src, gocuda_s* dst, long long rows, long long cols, gocuda_v* st) {
	for (long long base = (long long)blockIdx.x * blockDim.x; base < rows; base += (long long)gridDim.x * blockDim.x) {
		const long long n = (rows - base < blockDim.x ? rows - base : blockDim.x) * cols;
		const gocuda_s* in = src + base * cols;
		for (long long e = threadIdx.x; e < n; e += blockDim.x) st[e] = %[6]s;
		__syncthreads();
		if ((long long)threadIdx.x * cols < n && cols <= (long long)GOCUDA_STAGED) {
			gocuda_v* row = st + threadIdx.x * cols;
			gocuda_v xs[GOCUDA_STAGED];
			gocuda_v m = -__int_as_float(0x7f800000), sum = 0;
			#pragma unroll
			for (int c = 0; c < (int)GOCUDA_STAGED; c++) if (c < cols) { xs[c] = row[c]; m = (xs[c] != xs[c] || xs[c] > m) ? xs[c] : m; }
			#pragma unroll
			for (int c = 0; c < (int)GOCUDA_STAGED; c++) if (c < cols) { const gocuda_v e = exp(xs[c] - m); sum += xs[c] == m ? (gocuda_v)1 : e; %[9]s }
			%[10]s
			#pragma unroll
			for (int c = 0; c < (int)GOCUDA_STAGED; c++) if (c < cols) { const gocuda_v x = xs[c]; row[c] = %[11]s; }
		} else if ((long long)threadIdx.x * cols < n) {
			gocuda_v* row = st + threadIdx.x * cols;
			gocuda_v m = -__int_as_float(0x7f800000), sum = 0;
			for (long long c = 0; c < cols; c++) m = (row[c] != row[c] || row[c] > m) ? row[c] : m;
			for (long long c = 0; c < cols; c++) sum += row[c] == m ? (gocuda_v)1 : exp(row[c] - m);
			for (long long c = 0; c < cols; c++) { const gocuda_v x = row[c]; row[c] = %[7]s; }
		}
		__syncthreads();
		gocuda_s* out = dst + base * cols;
		for (long long e = threadIdx.x; e < n; e += blockDim.x) out[e] = %[8]s;
		__syncthreads();
	}
}
template <int V>
__device__ __forceinline__ void gocuda_grouped(const gocuda_s* src, gocuda_s* dst, long long rows, long long cols, int group, gocuda_vec<gocuda_s, V>* cache) {
	// Rows of lanes of fewer than 32 are held in registers (_regsE), as
	// rows of 32 lanes are but float64's past 1024 elements (planRegs),
	// and a thread's rows are staged: this kernel has no other group.
	switch (group) {
	case 32: gocuda_rows<V, 32>(src, dst, rows, cols, 0); break;
	case 0: gocuda_rows<V, 0>(src, dst, rows, cols, cache); break;
	default: __trap();
	}
}
#define GOCUDA_V (16 / sizeof(gocuda_s))
#define GOCUDA_WIDE (cols %% GOCUDA_V == 0 && (unsigned long long)gocuda_src %% 16 == 0 && (unsigned long long)gocuda_dst %% 16 == 0)
// gocuda_loadv sets f to the values of xs's elements, gocuda_storev ys's
// elements to f's: for the halves, a vector at a time (the prelude's,
// the same bits as element by element).
template <int V> __device__ __forceinline__ void gocuda_loadv(gocuda_v (&f)[V], const gocuda_vec<gocuda_s, V>& xs) {
%[12]s
}
template <int V> __device__ __forceinline__ void gocuda_storev(gocuda_vec<gocuda_s, V>& ys, const gocuda_v (&f)[V]) {
%[13]s
}
// gocuda_regs: G lanes of a warp take a row (rows of groupCols elements
// or fewer), each lane keeping its N vectors of V (vectors lane, lane +
// G, ...) in registers: the row is read from device memory once and
// written once, and each exponential computed once. The passes are
// gocuda_short's (the largest, then the sum of e^(x - m), then the
// results), in the same order: the same bits.
template <int V, int G, int N>
__device__ __forceinline__ void gocuda_regs(const gocuda_s* src, gocuda_s* dst, long long rows, long long cols) {
	typedef gocuda_vec<gocuda_s, V> vec;
	const int lane = threadIdx.x %% G, vectors = (int)(cols / V);
	const long long per = blockDim.x / G;
	for (long long base = (long long)blockIdx.x * per; base < rows; base += (long long)gridDim.x * per) {
		const long long r = base + threadIdx.x / G;
		const bool live = r < rows;
		const vec* in = (const vec*)(src + r * cols);
		gocuda_v x[N][V];
		#pragma unroll
		for (int k = 0; k < N; k++) {
			if (live && lane + k * G < vectors) gocuda_loadv<V>(x[k], in[lane + k * G]);
		}
		gocuda_v m = -__int_as_float(0x7f800000), sum = 0;
		#pragma unroll
		for (int k = 0; k < N; k++) {
			if (live && lane + k * G < vectors) {
				#pragma unroll
				for (int i = 0; i < V; i++) m = (x[k][i] != x[k][i] || x[k][i] > m) ? x[k][i] : m;
			}
		}
		#pragma unroll
		for (int k = G / 2; k > 0; k >>= 1) { const gocuda_v m2 = __shfl_down_sync(0xffffffffu, m, k); m = (m2 != m2 || m2 > m) ? m2 : m; }
		m = __shfl_sync(0xffffffffu, m, 0, G);
		#pragma unroll
		for (int k = 0; k < N; k++) {
			if (live && lane + k * G < vectors) {
				#pragma unroll
				for (int i = 0; i < V; i++) { const gocuda_v e = exp(x[k][i] - m); sum += x[k][i] == m ? (gocuda_v)1 : e; %[14]s }
			}
		}
		#pragma unroll
		for (int k = G / 2; k > 0; k >>= 1) sum += __shfl_down_sync(0xffffffffu, sum, k);
		sum = __shfl_sync(0xffffffffu, sum, 0, G);
		%[10]s
		vec* out = (vec*)(dst + r * cols);
		#pragma unroll
		for (int k = 0; k < N; k++) {
			if (live && lane + k * G < vectors) {
				gocuda_v y[V];
				#pragma unroll
				for (int i = 0; i < V; i++) { const gocuda_v x_ = x[k][i]; y[i] = %[15]s; }
				vec ys;
				gocuda_storev<V>(ys, y);
				out[lane + k * G] = ys;
			}
		}
	}
}
%[16]s// The kernel: group as planRows says, cached that the launch's dynamic
// shared memory holds a row (a block per row) or the block's rows (a
// thread per row: staged).
extern "C" __global__ __launch_bounds__(1024) void %[1]s(const gocuda_s* gocuda_src, gocuda_s* gocuda_dst, long long rows, long long cols, int group, int cached) { // dst may be src: no __restrict__
	extern __shared__ gocuda_vec<gocuda_s, GOCUDA_V> gocuda_cache[];
	if (group == 1 && cached) gocuda_staged(gocuda_src, gocuda_dst, rows, cols, (gocuda_v*)gocuda_cache);
	else if (GOCUDA_WIDE) gocuda_grouped<GOCUDA_V>(gocuda_src, gocuda_dst, rows, cols, group, cached ? gocuda_cache : 0);
	else gocuda_grouped<1>(gocuda_src, gocuda_dst, rows, cols, group, cached ? (gocuda_vec<gocuda_s, 1>*)gocuda_cache : 0);
}
// A few long rows: block (k, r) joins chunk k of row r (chunk elements, a
// multiple of the vector width) into stats[2 * (k * rows + r)] and the next.
extern "C" __global__ void %[1]s_stats(const gocuda_s* gocuda_src, gocuda_v* gocuda_stats_out, long long rows, long long cols, long long chunk) {
	const long long r = blockIdx.y, from = (long long)blockIdx.x * chunk, to = from + chunk < cols ? from + chunk : cols;
	const gocuda_s* gocuda_dst = gocuda_src; // for GOCUDA_WIDE
	gocuda_v m = 0, sum = 0;
	if (GOCUDA_WIDE) gocuda_stats<GOCUDA_V>(gocuda_src + r * cols, from / GOCUDA_V, to / GOCUDA_V, threadIdx.x, blockDim.x, 0, &m, &sum);
	else gocuda_stats<1>(gocuda_src + r * cols, from, to, threadIdx.x, blockDim.x, 0, &m, &sum);
	gocuda_blockjoin(&m, &sum);
	if (threadIdx.x == 0) { gocuda_stats_out[2 * ((long long)blockIdx.x * rows + r)] = m; gocuda_stats_out[2 * ((long long)blockIdx.x * rows + r) + 1] = sum; }
}
// Then block (k, r) joins row r's chunks in order (each warp the same
// tree, so every block the same result) and writes chunk k.
extern "C" __global__ void %[1]s_apply(const gocuda_s* gocuda_src, gocuda_s* gocuda_dst, const gocuda_v* gocuda_stats_in, long long rows, long long cols, long long chunk, long long chunks) {
	const long long r = blockIdx.y, from = (long long)blockIdx.x * chunk, to = from + chunk < cols ? from + chunk : cols;
	gocuda_v m = 0, sum = 0;
	for (long long k = threadIdx.x %% 32; k < chunks; k += 32) gocuda_join(&m, &sum, gocuda_stats_in[2 * (k * rows + r)], gocuda_stats_in[2 * (k * rows + r) + 1]);
	gocuda_warpjoin<32>(&m, &sum);
	if (GOCUDA_WIDE) gocuda_write<GOCUDA_V>(gocuda_src + r * cols, gocuda_dst + r * cols, from / GOCUDA_V, to / GOCUDA_V, threadIdx.x, blockDim.x, 0, m, sum);
	else gocuda_write<1>(gocuda_src + r * cols, gocuda_dst + r * cols, from, to, threadIdx.x, blockDim.x, 0, m, sum);
}
`, name, t.value, t.storage, t.load("xs.v[k]"), t.store(out), t.load("in[e]"), out, t.store("st[e]"),
		stagedKeep, logSum, staged, loadv, storev, regKeep, regOut, regsDispatch(t, name))
}

// regKernel is one case of gocuda_regs: G lanes a row, N vectors a lane,
// each of 16 bytes (wide) or a single element.
type regKernel struct {
	wide bool
	g, n int
}

// regKernels returns the cases of gocuda_regs for elements of size bytes,
// computed in values of value bytes, by the values a lane keeps (N times
// the vector's elements): those planRegs gives every row that planRows
// gives to lanes of a warp, both of 16-byte vectors and of single
// elements.
func regKernels(size, value int) map[int][]regKernel {
	out := map[int][]regKernel{}
	seen := map[regKernel]bool{}
	for _, wide := range []bool{true, false} {
		for cols := 1; cols <= groupCols; cols++ {
			if n := planRegs(cols, 16/size, value, wide); n > 0 {
				k := regKernel{wide, rowGroup(cols, 16/size), n}
				if !seen[k] {
					seen[k] = true
					e := n
					if wide {
						e *= 16 / size
					}
					out[e] = append(out[e], k)
				}
			}
		}
	}
	return out
}

// regsDispatch is the kernels that hold rows in registers, NAME_regsE for
// each count E of values a lane keeps: a kernel for each, so that each
// has the registers of its own rows (a kernel's count is its greatest
// case's, and every launch of it is held to that), each under launch
// bounds of a block of 256 threads, which leave a thread up to 255
// registers. Each takes G lanes a row (group), of 16-byte vectors where
// the buffers are aligned for them (GOCUDA_WIDE; the caller knows which:
// regsLaunch), else single elements.
func regsDispatch(t dtype, name string) string {
	size := int(t.goType.Size())
	ks := regKernels(size, valueSize(size))
	es := make([]int, 0, len(ks))
	for e := range ks {
		es = append(es, e)
	}
	slices.Sort(es)
	var b strings.Builder
	for _, e := range es {
		fmt.Fprintf(&b, "extern \"C\" __global__ __launch_bounds__(256, 1) void %s_regs%d(const gocuda_s* gocuda_src, gocuda_s* gocuda_dst, long long rows, long long cols, int group) {\n", name, e)
		for _, wide := range []bool{true, false} {
			if wide {
				b.WriteString("\tif (GOCUDA_WIDE) {\n")
			} else {
				b.WriteString("\t} else {\n")
			}
			b.WriteString("\t\tswitch (group) {\n")
			for _, k := range ks[e] {
				if k.wide == wide {
					v := "1"
					if wide {
						v = "GOCUDA_V"
					}
					fmt.Fprintf(&b, "\t\tcase %d: gocuda_regs<%s, %d, %d>(gocuda_src, gocuda_dst, rows, cols); return;\n", k.g, v, k.g, k.n)
				}
			}
			b.WriteString("\t\t}\n")
		}
		b.WriteString("\t}\n\t__trap(); // planRegs asked for no such kernel\n}\n")
	}
	return b.String()
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

// valueSize is the bytes of the type Softmax computes an element of size
// bytes in: float for the halves, the type itself otherwise.
func valueSize(size int) int { return max(size, 4) }

// softmaxCache is the longest row, in bytes, Softmax keeps in shared
// memory: 48 KiB (what a block may have without asking), less the kernel's
// own 512 bytes (11264 float32, 5632 float64).
const softmaxCache = 44 << 10

// softmaxOwn is the shared memory Softmax's kernel has of its own (512
// bytes), and a margin, left out of what a row may be kept in.
const softmaxOwn = 1 << 10

// softmaxRoom is the shared memory a block of Softmax may keep its row in
// on device d where the kernel opts in to it: the device's (tests set
// another).
var softmaxRoom = func(d deviceSize) int { return d.optin }

// sharedAllowed is the dynamic shared memory each kernel was allowed past
// 48 KiB (FuncMaxDynamicSharedSize), by kernel: always the most the
// device allows (softmaxRoom less softmaxOwn), so that two calls setting
// it at once set the same.
var sharedAllowed sync.Map // weak.Pointer[cuda.Function] -> int

// allowShared reports whether f may be launched with n bytes of dynamic
// shared memory, allowing it once where it was not; false where the
// driver refuses (the launch then keeps no row).
func allowShared(f *cuda.Function, n int) bool {
	k := weak.Make(f)
	if v, ok := sharedAllowed.Load(k); ok && v.(int) >= n {
		return true
	}
	if f.SetAttribute(cuda.FuncMaxDynamicSharedSize, n) != nil {
		return false
	}
	sharedAllowed.Store(k, n)
	return true
}

// softmaxName is the kernel's name of Softmax (LogSoftmax where
// logarithm) of the type named: a constant for every float type, so that
// a launch makes no string.
func softmaxName(t string, logarithm bool) string {
	var name string
	switch t {
	case "float32":
		name = "softmax_float32"
	case "float64":
		name = "softmax_float64"
	case "float16":
		name = "softmax_float16"
	case "bfloat16":
		name = "softmax_bfloat16"
	default:
		name = "softmax_" + t
	}
	if !logarithm {
		return name
	}
	switch t {
	case "float32":
		return "logsoftmax_float32"
	case "float64":
		return "logsoftmax_float64"
	case "float16":
		return "logsoftmax_float16"
	case "bfloat16":
		return "logsoftmax_bfloat16"
	}
	return "log" + name
}

// regsNames are the names of the Softmax kernels that hold rows in
// registers, by their variant's name, each by the log2 of the values a
// lane keeps (1 to 64): made once, not at every launch, and looked up by
// the name alone, as namedVariant looks up the variant.
var regsNames sync.Map // string -> *[7]string

func regsName(name string, values int) string {
	names, ok := regsNames.Load(name)
	if !ok {
		var made [7]string
		for k := range made {
			made[k] = fmt.Sprintf("%s_regs%d", name, 1<<k)
		}
		names, _ = regsNames.LoadOrStore(name, &made)
	}
	return names.(*[7]string)[bits.TrailingZeros(uint(values))]
}

func softmax[T cuda.AnyFloat](op string, dst, src *cuda.DeviceBuffer[T], shape Shape, s *cuda.Stream, logarithm bool) error {
	as := [2]arg{bufArg("dst", dst), bufArg("src", src)}
	if err := checkMatrix(op, s, shape, as[:]); err != nil {
		return err
	}
	if shape.Rows == 0 || shape.Cols == 0 {
		return nil
	}
	t := dtypePtr[T]()
	name := softmaxName(t.name, logarithm)
	v := namedVariant(name, func() string { return softmaxSource(*t, name, logarithm) })
	d, err := sizeOf(s)
	if err != nil {
		return wrap(op, err, "sizing the launch of %s", name)
	}
	size := int(t.goType.Size())
	l := planRows(d, shape.Rows, shape.Cols, 16/size)
	rows, cols := int64(shape.Rows), int64(shape.Cols)
	if l.chunks <= 1 && l.group > 1 {
		// A row held in registers, by vectors of 16 bytes where both
		// buffers and the rows are aligned for them (as the kernel's
		// GOCUDA_WIDE finds), else by elements.
		vector := 16 / size
		wide := shape.Cols%vector == 0 && uint64(src.Ptr())%16 == 0 && uint64(dst.Ptr())%16 == 0
		if n := planRegs(shape.Cols, vector, valueSize(size), wide); n > 0 {
			if wide {
				n *= vector
			}
			f, err := kernel(op, s, v, regsName(name, n), as[:])
			if err != nil {
				return err
			}
			cfg := cuda.LaunchConfig{Grid: cuda.Dim3{X: l.blocks}, Block: cuda.Dim3{X: l.threads}, Stream: s}
			return launchError(op, f.Launch(cfg, src, dst, boxInt64(rows), boxInt64(cols), int32(l.group)), as[:], name)
		}
	}
	if l.chunks <= 1 {
		f, err := kernel(op, s, v, name, as[:])
		if err != nil {
			return err
		}
		// A block per row has room for its row in shared memory where the
		// row fits in what every device gives a block without asking.
		cfg := cuda.LaunchConfig{Grid: cuda.Dim3{X: l.blocks}, Block: cuda.Dim3{X: l.threads}, Stream: s}
		cached := int32(0)
		switch bytes := shape.Cols * size; {
		case l.group == 0 && bytes <= softmaxCache:
			cfg.SharedMemBytes, cached = (bytes+15)/16*16, 1
		case l.group == 0 && l.threads == bigBlock && bytes+softmaxOwn <= softmaxRoom(d) && allowShared(f, softmaxRoom(d)-softmaxOwn):
			// A few long rows, a block of 1024 threads each (a
			// multiprocessor holds at most two): the row kept in the
			// shared memory the kernel opts in to, read once, not twice.
			cfg.SharedMemBytes, cached = (bytes+15)/16*16, 1
		case l.group == 1: // a thread a row: the block's rows staged, in the value type
			cfg.SharedMemBytes, cached = l.threads*shape.Cols*valueSize(size), 1
		}
		return launchError(op, f.Launch(cfg, src, dst, boxInt64(rows), boxInt64(cols), int32(l.group), cached), as[:], name)
	}
	stats, err := kernel(op, s, v, name+"_stats", as[:])
	if err != nil {
		return err
	}
	apply, err := kernel(op, s, v, name+"_apply", as[:])
	if err != nil {
		return err
	}
	return withScratch(op, name, s, as[:], 2*l.chunks*shape.Rows*valueSize(size), func(scratch *cuda.DeviceBuffer[byte]) error {
		cfg := cuda.LaunchConfig{Grid: cuda.Dim3{X: l.chunks, Y: shape.Rows}, Block: cuda.Dim3{X: l.threads}, Stream: s}
		if err := stats.Launch(cfg, src, scratch, rows, cols, int64(l.chunk)); err != nil {
			return err
		}
		return apply.Launch(cfg, src, dst, scratch, rows, cols, int64(l.chunk), int64(l.chunks))
	})
}

// transposeSource is the kernels of Transpose: tiles of 32×32 elements
// read by rows and written by columns through shared memory, so that both
// the reads and the writes are coalesced; and, for a matrix of fewer than
// skinny rows or columns, whose tiles would be nearly empty, a thread per
// element of dst (NAME_skinny), its reads few runs of src that the cache
// holds.
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
extern "C" __global__ void %[1]s_skinny(const %[2]s* __restrict__ src, %[2]s* dst, unsigned long long rows, unsigned long long cols) {
	const unsigned long long n = rows * cols, stride = (unsigned long long)blockDim.x * gridDim.x;
	for (unsigned long long j = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; j < n; j += stride) {
		const unsigned long long c = j / rows; // dst's row: src's column
		dst[j] = src[(j - c * rows) * cols + c];
	}
}
`, name, t.storage)
}

// skinny is the fewest rows and columns Transpose moves in tiles.
const skinny = 8

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
	v := namedVariant(name, func() string { return transposeSource(*t, name) })
	if shape.Rows < skinny || shape.Cols < skinny {
		f, err := kernel(op, s, v, name+"_skinny", as[:])
		if err != nil {
			return err
		}
		cfg := elementwiseConfig(s, shape.Rows*shape.Cols, 1)
		return launchError(op, f.Launch(cfg, src, dst, uint64(shape.Rows), uint64(shape.Cols)), as[:], name)
	}
	f, err := kernel(op, s, v, name, as[:])
	if err != nil {
		return err
	}
	gx, gy := min((shape.Cols+31)/32, 65535), min((shape.Rows+31)/32, 65535)
	cfg := cuda.LaunchConfig{Grid: cuda.Dim3{X: gx, Y: gy}, Block: cuda.Dim3{X: 32, Y: 8}, Stream: s}
	return launchError(op, f.Launch(cfg, src, dst, int64(shape.Rows), int64(shape.Cols)), as[:], name)
}
