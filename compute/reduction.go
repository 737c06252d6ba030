package compute

import (
	"fmt"
	"strings"
	"sync"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/attach"
)

// Shape is a row-major matrix's shape: Rows rows of Cols elements, one row
// after the other.
type Shape struct{ Rows, Cols int }

// Axis says what a reduction over a matrix folds.
type Axis int

const (
	// PerRow folds each row: Rows results.
	PerRow Axis = iota
	// PerColumn folds each column: Cols results.
	PerColumn
)

func (a Axis) String() string {
	switch a {
	case PerRow:
		return "per row"
	case PerColumn:
		return "per column"
	}
	return fmt.Sprintf("Axis(%d)", int(a))
}

// ReductionSpec declares a reduction, a field for each of CuPy's
// ReductionKernel arguments (in_params, out_params, map_expr, reduce_expr,
// post_map_expr, identity, name, reduce_type), so that a port in CuPy's
// order, or any other, means what it says.
type ReductionSpec struct {
	// Name is the reduction's name: a C identifier, not starting with _ or
	// gocuda (CuPy's name).
	Name string
	// InParams are the inputs, such as "float32 x, float32 m" (in_params):
	// at least one, each a type and a name, as ElementwiseSpec's.
	InParams string
	// OutParams is the one output, such as "float32 y" (out_params).
	OutParams string
	// MapExpr is the value of element i, an expression over the inputs as
	// an ElementwiseSpec's Operation sees them (map_expr), such as "x * x".
	MapExpr string
	// ReduceExpr folds two values, a and b, of ReduceType into one
	// (reduce_expr), such as "a + b".
	ReduceExpr string
	// PostMapExpr sets the output from the folded value a and n, the
	// elements folded into it (post_map_expr), such as "y = a / n": a
	// statement, with or without its semicolon.
	PostMapExpr string
	// Identity is the value that folds with any other into it (identity),
	// such as "0".
	Identity string
	// ReduceType is the type of a and b (reduce_type): one of the element
	// types' names. Float16 and BFloat16 inputs are best folded in
	// float32.
	ReduceType string
}

// Reduction is a kernel that folds buffers into one value, or into one per
// row or column of a matrix, as CuPy's ReductionKernel:
//
//	sumsq, err := compute.NewReduction(compute.ReductionSpec{
//		Name:        "sumsq",
//		InParams:    "float32 x",
//		OutParams:   "float32 y",
//		MapExpr:     "x * x",
//		ReduceExpr:  "a + b",
//		PostMapExpr: "y = a",
//		Identity:    "0",
//		ReduceType:  "float32",
//	})
//	err = sumsq.Launch(s, x, y) // y: a buffer of one element
//
// Results are deterministic: the same inputs on the same device give the
// same bits every run. The elements are folded in a fixed tree (each
// thread a fixed run of them, then the lanes of its warp and the warps of
// its block, then, where one result takes several blocks, their partial
// results in block order, by the last of them to finish or, in a graph
// capture, by a second kernel, in the same tree); the tree depends on the
// shape and the device's size only (layout.go), never on timing: the
// atomic counter that finds the last block adds nothing up. Floating-point
// sums may differ in their last bits from a sequential sum on the host.
//
// A Reduction is safe for use by many goroutines.
type Reduction struct {
	name                                   string
	in                                     []param
	out                                    param
	mapExpr, reduceExpr, identity, postMap string
	acc                                    dtype
	mu                                     sync.Mutex
	variants                               map[string]*variant
	names                                  sync.Map // suffix -> name+suffix, the kernels' names, made once
}

// NewReduction checks a reduction's declaration, each field of spec on its
// own: an error names the field. Nothing is compiled until the first
// launch.
func NewReduction(spec ReductionSpec) (*Reduction, error) {
	const op = "NewReduction"
	ins, outs, err := declaration(op, spec.Name, spec.InParams, spec.OutParams)
	if err != nil {
		return nil, err
	}
	switch {
	case len(ins) == 0:
		return nil, errorf(op, cuda.ErrInvalidValue, "InParams is empty: a reduction needs an input")
	case len(outs) != 1:
		return nil, errorf(op, cuda.ErrInvalidValue, "OutParams declares %d parameters: a reduction has exactly one output", len(outs))
	}
	seen := map[string]bool{}
	for j, p := range append(append([]param(nil), ins...), outs...) {
		field := map[bool]string{true: "InParams", false: "OutParams"}[j < len(ins)]
		switch {
		case p.name == "a" || p.name == "b" || p.name == "i" || p.name == "n":
			return nil, errorf(op, cuda.ErrInvalidValue, "%s: %q is reserved: a and b are the values folded, i the element's index and n the element count", field, p.name)
		case seen[p.name]:
			return nil, errorf(op, cuda.ErrInvalidValue, "%s declares %q twice", field, p.name)
		}
		seen[p.name] = true
	}
	for _, f := range []struct{ name, value string }{
		{"MapExpr", expression(spec.MapExpr)}, {"ReduceExpr", expression(spec.ReduceExpr)},
		{"PostMapExpr", expression(spec.PostMapExpr)}, {"Identity", expression(spec.Identity)},
	} {
		if f.value == "" {
			return nil, errorf(op, cuda.ErrInvalidValue, "%s is empty", f.name)
		}
	}
	if strings.TrimSpace(spec.ReduceType) == "" {
		return nil, errorf(op, cuda.ErrInvalidValue, "ReduceType is empty: want the type of a and b, one of %s", typeNames())
	}
	acc, ok := dtypeNamed(spec.ReduceType)
	if !ok {
		return nil, errorf(op, cuda.ErrInvalidValue, "ReduceType %q is not a type: want one of %s", spec.ReduceType, typeNames())
	}
	return &Reduction{name: spec.Name, in: ins, out: outs[0], mapExpr: expression(spec.MapExpr), reduceExpr: expression(spec.ReduceExpr),
		identity: expression(spec.Identity), postMap: spec.PostMapExpr, acc: acc, variants: map[string]*variant{}}, nil
}

// expression returns e without the semicolon a port may end it with: an
// expression is put in parentheses, where one would not compile.
func expression(e string) string {
	return strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(e), ";"))
}

// vectors returns, for loads of v elements of each buffer input at a
// time (buffer[j]: input j is a buffer), the conditions that every such
// buffer is aligned for them ("false" where none is a buffer: nothing to
// load), and the declarations of each one's vector gocudav_NAME, vector
// gocuda_j of its buffer.
func (r *Reduction) vectors(buffer []bool, v int) (aligned, decl []string) {
	for j, p := range r.in {
		if buffer[j] {
			vec := fmt.Sprintf("gocuda_vec<%s, %d>", p.t.storage, v)
			aligned = append(aligned, fmt.Sprintf("(unsigned long long)gocudap_%s %% sizeof(%s) == 0", p.name, vec))
			decl = append(decl, fmt.Sprintf("const %[1]s gocudav_%[2]s = ((const %[1]s*)gocudap_%[2]s)[gocuda_j]; ", vec, p.name))
			if p.t.half != "" { // converted a vector at a time: the prelude's, the same bits
				decl = append(decl, fmt.Sprintf("float gocudaf_%[1]s[%[2]d]; gocuda_load_%[3]s(gocudaf_%[1]s, gocudav_%[1]s); ", p.name, v, p.t.half))
			}
		}
	}
	if len(aligned) == 0 {
		aligned = []string{"false"}
	}
	return aligned, decl
}

// source writes the reduction's kernels for an argument pattern (see
// layout.go): NAME_rows, NAME_split and NAME_chunks fold rows (a whole
// buffer is one row), NAME_cols, NAME_colsv, NAME_narrow, NAME_short and NAME_chunks
// columns.
func (r *Reduction) source(buffer []bool) string {
	acc := r.acc.value
	var b strings.Builder
	b.WriteString(prelude)
	fmt.Fprintf(&b, "\ntypedef %s gocuda_acc;\n", acc)
	// The user's expressions and statement each on a line of its own: one
	// may end in a // comment.
	fmt.Fprintf(&b, "__device__ __forceinline__ gocuda_acc gocuda_reduce(gocuda_acc a, gocuda_acc b) { return (gocuda_acc)(\n%s\n); }\n", r.reduceExpr)
	fmt.Fprintf(&b, "__device__ __forceinline__ gocuda_acc gocuda_identity() { return (gocuda_acc)(\n%s\n); }\n", r.identity)
	// The inputs as parameters, and the map as a function of their values.
	widest := 1
	var params, args, decl []string
	for j, p := range r.in {
		decl = append(decl, fmt.Sprintf("const %s %s", p.t.value, p.name))
		args = append(args, "gocudap_"+p.name+", ")
		if buffer[j] {
			params = append(params, fmt.Sprintf("const %s* __restrict__ gocudap_%s, ", p.t.storage, p.name))
			widest = max(widest, int(p.t.goType.Size()))
		} else {
			params = append(params, fmt.Sprintf("%s gocudap_%s, ", p.t.storage, p.name))
		}
	}
	width := 16 / widest
	fmt.Fprintf(&b, "__device__ __forceinline__ gocuda_acc gocuda_map(%s, const long long i) { return (gocuda_acc)(\n%s\n); }\n",
		strings.Join(decl, ", "), r.mapExpr)
	// mapAt calls the map for element at, each buffer's element given by
	// element (a format of the parameter's name).
	// A vector's element (gocudav_NAME.v[gocuda_k]) of a half is its
	// float, converted with the whole vector (vectors' gocudaf_NAME).
	mapAt := func(element, at string) string {
		var vals []string
		for j, p := range r.in {
			v := "gocudap_" + p.name
			switch {
			case buffer[j] && p.t.half != "" && element == "gocudav_%s.v[gocuda_k]":
				vals = append(vals, "gocudaf_"+p.name+"[gocuda_k]")
				continue
			case buffer[j]:
				v = fmt.Sprintf(element, p.name)
			}
			vals = append(vals, p.t.load(v))
		}
		return fmt.Sprintf("gocuda_map(%s, %s)", strings.Join(vals, ", "), at)
	}
	aligned, vecDecl := r.vectors(buffer, width)
	fmt.Fprintf(&b, "__device__ __forceinline__ void gocuda_post(%s* gocuda_out, long long gocuda_at, gocuda_acc a, long long n) { %s %s; {\n%s\n;\n} gocuda_out[gocuda_at] = %s; }\n",
		r.out.t.storage, r.out.t.value, r.out.name, r.postMap, r.out.t.store(r.out.name))
	b.WriteString(foldHelpers)
	// gocuda_span folds elements [from, to) of the inputs (as one buffer
	// of rows*cols, the index i of the whole), a thread taking every
	// lanes-th from lane: vectors of width elements where wide (every
	// buffer aligned for them, from and to multiples of width), else one
	// at a time, several loads in flight either way.
	fmt.Fprintf(&b, `__device__ __forceinline__ gocuda_acc gocuda_span(%[1]slong long from, long long to, long long lane, long long lanes, bool wide) {
	gocuda_acc v = gocuda_identity();
	if (wide) {
		#pragma unroll 4
		for (long long gocuda_j = from / %[2]d + lane; gocuda_j < to / %[2]d; gocuda_j += lanes) {
			%[3]s
			#pragma unroll
			for (int gocuda_k = 0; gocuda_k < %[2]d; gocuda_k++) v = gocuda_reduce(v, %[4]s);
		}
		return v;
	}
	#pragma unroll 4
	for (long long i = from + lane; i < to; i += lanes) v = gocuda_reduce(v, %[5]s);
	return v;
}
`, strings.Join(params, ""), width, strings.Join(vecDecl, ""),
		mapAt("gocudav_%s.v[gocuda_k]", "gocuda_j * "+fmt.Sprint(width)+" + gocuda_k"), mapAt("gocudap_%s[i]", "i"))
	wide := fmt.Sprintf("(%s) && cols %% %d == 0", strings.Join(aligned, " && "), width)
	fmt.Fprintf(&b, `// Rows: G lanes of a warp fold a row (G of 1 to 32), or the whole block
// (G = 0), a warp's or the block's rows each step.
template <int G>
__device__ __forceinline__ void gocuda_rows(%[2]s%[3]s* gocuda_out, long long rows, long long cols) {
	const bool gocuda_wide = %[4]s;
	const long long gocuda_per = G ? blockDim.x / G : 1, gocuda_lanes = G ? G : blockDim.x;
	const long long gocuda_lane = G ? threadIdx.x %% G : threadIdx.x;
	for (long long gocuda_base = (long long)blockIdx.x * gocuda_per; gocuda_base < rows; gocuda_base += (long long)gridDim.x * gocuda_per) {
		const long long r = gocuda_base + (G ? threadIdx.x / G : 0);
		gocuda_acc v = gocuda_identity();
		if (r < rows) v = gocuda_span(%[5]sr * cols, r * cols + cols, gocuda_lane, gocuda_lanes, gocuda_wide);
		if constexpr (G == 0) v = gocuda_block(v);
		else v = gocuda_warp<G>(v);
		if (gocuda_lane == 0 && r < rows) gocuda_post(gocuda_out, r, v, cols);
	}
}
extern "C" __global__ __launch_bounds__(1024) void %[1]s_rows(%[2]s%[3]s* gocuda_out, long long rows, long long cols, int group) {
	switch (group) {
	case 1: gocuda_rows<1>(%[5]sgocuda_out, rows, cols); break;
	case 2: gocuda_rows<2>(%[5]sgocuda_out, rows, cols); break;
	case 4: gocuda_rows<4>(%[5]sgocuda_out, rows, cols); break;
	case 8: gocuda_rows<8>(%[5]sgocuda_out, rows, cols); break;
	case 16: gocuda_rows<16>(%[5]sgocuda_out, rows, cols); break;
	case 32: gocuda_rows<32>(%[5]sgocuda_out, rows, cols); break;
	default: gocuda_rows<0>(%[5]sgocuda_out, rows, cols);
	}
}
// The kernels that leave partial results (_split, _cols, _narrow) fold
// them themselves where they are given counters (zero, in the stream's
// scratch): each block, its partial results written, counts itself in, and
// the last of a result's blocks folds its chunks as _chunks would, posts
// the result and sets the counter back to zero. Without counters (a
// capture, whose memory is stream-ordered), _chunks does it, in the same
// tree: the same bits either way.
//
// gocuda_fold folds result o's chunks (partial[k * outs + o]) in a warp,
// lane l taking chunks l, l + 32, ..., then the warp's tree; the reads
// skip the cache another block's writes may be stale in. A lane's reads
// are made eight at a time before they are folded, in the same order, so
// that eight are in flight, not one (volatile reads stay in program order).
__device__ __forceinline__ gocuda_acc gocuda_fold(const gocuda_acc* partial, long long chunks, long long outs, long long o, unsigned int lane) {
	gocuda_acc v = gocuda_identity();
	long long k = lane;
	for (; k + 7 * 32 < chunks; k += 8 * 32) {
		gocuda_acc p[8];
		#pragma unroll
		for (int u = 0; u < 8; u++) p[u] = *(const volatile gocuda_acc*)&partial[(k + u * 32) * outs + o];
		#pragma unroll
		for (int u = 0; u < 8; u++) v = gocuda_reduce(v, p[u]);
	}
	for (; k < chunks; k += 32) v = gocuda_reduce(v, *(const volatile gocuda_acc*)&partial[k * outs + o]);
	return gocuda_warp<32>(v);
}
// gocuda_arrive counts a block in at counter, once its partial results
// are written (every thread must call it), and reports to every thread
// whether it is the last of want.
__device__ __forceinline__ bool gocuda_arrive(unsigned int* counter, unsigned int want) {
	__shared__ bool gocuda_last;
	__threadfence();
	__syncthreads();
	if (threadIdx.x == 0 && threadIdx.y == 0) gocuda_last = atomicAdd(counter, 1u) == want - 1;
	__syncthreads();
	return gocuda_last;
}
// A few long rows: block (k, r) folds chunk k of row r (chunk elements, a
// multiple of the vector width) into partial[k * rows + r].
extern "C" __global__ __launch_bounds__(1024) void %[1]s_split(%[2]sgocuda_acc* gocuda_partial, long long rows, long long cols, long long chunk, %[3]s* gocuda_out, unsigned int* gocuda_counters) {
	const long long r = blockIdx.y, gocuda_from = (long long)blockIdx.x * chunk;
	const long long gocuda_to = gocuda_from + chunk < cols ? gocuda_from + chunk : cols;
	gocuda_acc v = gocuda_span(%[5]sr * cols + gocuda_from, r * cols + gocuda_to, threadIdx.x, blockDim.x, %[4]s);
	v = gocuda_block(v);
	if (threadIdx.x == 0) gocuda_partial[(long long)blockIdx.x * rows + r] = v;
	if (gocuda_counters && gocuda_arrive(&gocuda_counters[r], gridDim.x) && threadIdx.x < 32) {
		v = gocuda_fold(gocuda_partial, gridDim.x, rows, r, threadIdx.x);
		if (threadIdx.x == 0) {
			gocuda_post(gocuda_out, r, v, cols);
			gocuda_counters[r] = 0;
		}
	}
}
// Partial results, chunks of them for each of outs results: a warp folds
// each result's (gocuda_fold) and posts it, of n elements.
extern "C" __global__ void %[1]s_chunks(const gocuda_acc* gocuda_partial, long long chunks, %[3]s* gocuda_out, long long outs, long long n) {
	const long long gocuda_warps = (long long)gridDim.x * (blockDim.x / 32);
	for (long long o = ((long long)blockIdx.x * blockDim.x + threadIdx.x) / 32; o < outs; o += gocuda_warps) {
		const gocuda_acc v = gocuda_fold(gocuda_partial, chunks, outs, o, threadIdx.x %% 32);
		if (threadIdx.x %% 32 == 0) gocuda_post(gocuda_out, o, v, n);
	}
}
// Columns, fewer than 32: a block's threads read blockDim.x / cols whole
// rows at a time, thread t column t %% cols of row group t / cols, so that
// a step reads a run of the buffer; the groups fold in a fixed tree
// through shared memory; with one block the result is posted, else each
// block's is a partial result (partial[block * cols + c]).
extern "C" __global__ __launch_bounds__(1024) void %[1]s_narrow(%[2]s%[3]s* gocuda_out, gocuda_acc* gocuda_partial, long long rows, long long cols, unsigned int* gocuda_counters) {
	__shared__ gocuda_acc gocuda_groups[1024];
	const long long gocuda_per = blockDim.x / cols, c = threadIdx.x %% cols, gocuda_g = threadIdx.x / cols;
	gocuda_acc v = gocuda_identity();
	if (gocuda_g < gocuda_per) {
		#pragma unroll 4
		for (long long r = (long long)blockIdx.x * gocuda_per + gocuda_g; r < rows; r += (long long)gridDim.x * gocuda_per) v = gocuda_reduce(v, %[6]s);
	}
	gocuda_groups[threadIdx.x] = v;
	__syncthreads();
	long long gocuda_k = 1;
	while (gocuda_k < gocuda_per) gocuda_k <<= 1;
	for (gocuda_k >>= 1; gocuda_k > 0; gocuda_k >>= 1) {
		if (gocuda_g < gocuda_k && gocuda_g + gocuda_k < gocuda_per)
			gocuda_groups[threadIdx.x] = gocuda_reduce(gocuda_groups[threadIdx.x], gocuda_groups[threadIdx.x + gocuda_k * cols]);
		__syncthreads();
	}
	if (threadIdx.x < cols) {
		if (gridDim.x == 1) gocuda_post(gocuda_out, c, gocuda_groups[threadIdx.x], rows);
		else gocuda_partial[(long long)blockIdx.x * cols + c] = gocuda_groups[threadIdx.x];
	}
	if (gridDim.x > 1 && gocuda_counters && gocuda_arrive(gocuda_counters, gridDim.x)) {
		// A warp a column.
		for (long long o = threadIdx.x / 32; o < cols; o += blockDim.x / 32) {
			v = gocuda_fold(gocuda_partial, gridDim.x, cols, o, threadIdx.x %% 32);
			if (threadIdx.x %% 32 == 0) gocuda_post(gocuda_out, o, v, rows);
		}
		if (threadIdx.x == 0) *gocuda_counters = 0;
	}
}
`, r.name, strings.Join(params, ""), r.out.t.storage, wide, strings.Join(args, ""), mapAt("gocudap_%s[r * cols + c]", "r * cols + c"))
	// _cols' threads take cv adjacent columns each (colVector's), _colsv's
	// up to a whole vector of 16 bytes (tall matrices of few columns:
	// colsVector):
	// their vectors, and whether every buffer is aligned for them.
	for _, kv := range []struct {
		suffix string
		cv     int
	}{{"_cols", colVector(width)}, {"_colsv", colsVector(width)}} {
		cv := kv.cv
		if kv.suffix == "_colsv" && cv == colVector(width) {
			continue // planCols never asks for it
		}
		colAligned, colDecl := r.vectors(buffer, cv)
		fmt.Fprintf(&b, `// Columns, 32 or more: a block of %[4]d threads takes blockDim.x·V
// columns (V = %[5]d), thread x the V from column x·V, with blockDim.y
// lanes of rows, lane y of row chunk k taking rows Yk+y, Yk+y + Y·chunks,
// ... (Y = blockDim.y). Where every buffer and every row start is aligned
// for them, the V columns are one load a row; else V loads, each column
// folded in the same order either way: the same bits from a view as from
// an aligned buffer. The lanes fold in order through shared memory; with
// one chunk the result is posted, else each chunk's is a partial result
// (partial[k * cols + c]).
extern "C" __global__ void %[1]s%[10]s(%[2]s%[3]s* gocuda_out, gocuda_acc* gocuda_partial, long long rows, long long cols, unsigned int* gocuda_counters) {
	__shared__ gocuda_acc gocuda_lanes[%[4]d * %[5]d];
	const unsigned int gocuda_t = threadIdx.y * blockDim.x + threadIdx.x;
	const long long gocuda_span = (long long)blockDim.x * %[5]d;
	const bool gocuda_wide = (%[6]s) && cols %% %[5]d == 0;
	for (long long gocuda_b = blockIdx.x; gocuda_b * gocuda_span < cols; gocuda_b += gridDim.x) {
		const long long c = gocuda_b * gocuda_span + threadIdx.x * %[5]d;
		const long long gocuda_first = (long long)blockIdx.y * blockDim.y + threadIdx.y, gocuda_step = (long long)blockDim.y * gridDim.y;
		gocuda_acc v[%[5]d];
		#pragma unroll
		for (int gocuda_k = 0; gocuda_k < %[5]d; gocuda_k++) v[gocuda_k] = gocuda_identity();
		if (c < cols && gocuda_wide) {
			#pragma unroll 4
			for (long long r = gocuda_first; r < rows; r += gocuda_step) {
				const long long gocuda_j = r * (cols / %[5]d) + c / %[5]d;
				%[7]s
				#pragma unroll
				for (int gocuda_k = 0; gocuda_k < %[5]d; gocuda_k++) v[gocuda_k] = gocuda_reduce(v[gocuda_k], %[8]s);
			}
		} else if (c < cols) {
			#pragma unroll 4
			for (long long r = gocuda_first; r < rows; r += gocuda_step) {
				#pragma unroll
				for (int gocuda_k = 0; gocuda_k < %[5]d; gocuda_k++) {
					const long long gocuda_i = r * cols + c + gocuda_k;
					if (c + gocuda_k < cols) v[gocuda_k] = gocuda_reduce(v[gocuda_k], %[9]s);
				}
			}
		}
		#pragma unroll
		for (int gocuda_k = 0; gocuda_k < %[5]d; gocuda_k++) gocuda_lanes[gocuda_t * %[5]d + gocuda_k] = v[gocuda_k];
		__syncthreads();
		if (threadIdx.y == 0 && c < cols) {
			for (unsigned int y = 1; y < blockDim.y; y++) {
				#pragma unroll
				for (int gocuda_k = 0; gocuda_k < %[5]d; gocuda_k++) v[gocuda_k] = gocuda_reduce(v[gocuda_k], gocuda_lanes[(y * blockDim.x + threadIdx.x) * %[5]d + gocuda_k]);
			}
			#pragma unroll
			for (int gocuda_k = 0; gocuda_k < %[5]d; gocuda_k++) {
				if (c + gocuda_k >= cols) break;
				if (gridDim.y == 1) gocuda_post(gocuda_out, c + gocuda_k, v[gocuda_k], rows);
				else gocuda_partial[blockIdx.y * cols + c + gocuda_k] = v[gocuda_k];
			}
		}
		if (gridDim.y > 1 && gocuda_counters && gocuda_arrive(&gocuda_counters[gocuda_b], gridDim.y)) {
			// The block's warps (of %[4]d threads) fold its columns, a warp a column.
			for (long long q = gocuda_t / 32; q < gocuda_span; q += %[4]d / 32) {
				const long long o = gocuda_b * gocuda_span + q;
				if (o >= cols) break;
				const gocuda_acc w = gocuda_fold(gocuda_partial, gridDim.y, cols, o, gocuda_t %% 32);
				if (gocuda_t %% 32 == 0) gocuda_post(gocuda_out, o, w, rows);
			}
			if (gocuda_t == 0) gocuda_counters[gocuda_b] = 0;
		}
		__syncthreads();
	}
}
`, r.name, strings.Join(params, ""), r.out.t.storage, blockSize, cv, strings.Join(colAligned, " && "), strings.Join(colDecl, ""),
			mapAt("gocudav_%s.v[gocuda_k]", "gocuda_j * "+fmt.Sprint(cv)+" + gocuda_k"), mapAt("gocudap_%s[gocuda_i]", "gocuda_i"), kv.suffix)
	}
	fmt.Fprintf(&b, `// Columns of a few rows: a thread folds width columns (one where the
// buffers or the rows are not aligned for vectors) down every row.
extern "C" __global__ void %[1]s_short(%[2]s%[3]s* gocuda_out, long long rows, long long cols) {
	const long long gocuda_stride = (long long)blockDim.x * gridDim.x, gocuda_t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
	if (%[4]s) {
		for (long long gocuda_c = gocuda_t; gocuda_c < cols / %[5]d; gocuda_c += gocuda_stride) {
			gocuda_acc v[%[5]d];
			#pragma unroll
			for (int gocuda_k = 0; gocuda_k < %[5]d; gocuda_k++) v[gocuda_k] = gocuda_identity();
			#pragma unroll 4
			for (long long r = 0; r < rows; r++) {
				const long long gocuda_j = r * (cols / %[5]d) + gocuda_c;
				%[6]s
				#pragma unroll
				for (int gocuda_k = 0; gocuda_k < %[5]d; gocuda_k++) v[gocuda_k] = gocuda_reduce(v[gocuda_k], %[7]s);
			}
			#pragma unroll
			for (int gocuda_k = 0; gocuda_k < %[5]d; gocuda_k++) gocuda_post(gocuda_out, gocuda_c * %[5]d + gocuda_k, v[gocuda_k], rows);
		}
		return;
	}
	for (long long c = gocuda_t; c < cols; c += gocuda_stride) {
		gocuda_acc v = gocuda_identity();
		#pragma unroll 4
		for (long long r = 0; r < rows; r++) v = gocuda_reduce(v, %[8]s);
		gocuda_post(gocuda_out, c, v, rows);
	}
}
`, r.name, strings.Join(params, ""), r.out.t.storage, wide, width, strings.Join(vecDecl, ""),
		mapAt("gocudav_%s.v[gocuda_k]", "gocuda_j * "+fmt.Sprint(width)+" + gocuda_k"), mapAt("gocudap_%s[r * cols + c]", "r * cols + c"))
	return b.String()
}

// foldHelpers are the reductions' folds of a warp's and a block's values,
// each in a fixed tree: lane l takes lane l + k's value for k = G/2, ...,
// 1 (gocuda_down); a block folds its warps' results the same way in its
// first warp.
const foldHelpers = `template <int G> __device__ __forceinline__ gocuda_acc gocuda_warp(gocuda_acc v) {
	#pragma unroll
	for (int k = G / 2; k > 0; k >>= 1) v = gocuda_reduce(v, gocuda_down(v, k));
	return v;
}
// gocuda_block folds a one-dimensional block's values (blockDim.x a
// multiple of 32) into thread 0's; every thread must call it.
__device__ __forceinline__ gocuda_acc gocuda_block(gocuda_acc v) {
	__shared__ gocuda_acc s[32];
	v = gocuda_warp<32>(v);
	if (threadIdx.x % 32 == 0) s[threadIdx.x / 32] = v;
	__syncthreads();
	if (threadIdx.x < 32) {
		v = threadIdx.x < blockDim.x / 32 ? s[threadIdx.x] : gocuda_identity();
		v = gocuda_warp<32>(v);
	}
	__syncthreads(); // s is the next call's
	return v;
}
`

// classify checks a launch's arguments against the parameters: their count
// and types, the inputs buffers or scalars, the output a buffer.
func (r *Reduction) classify(op string, s *cuda.Stream, args []any) ([]arg, error) {
	if r == nil || r.variants == nil {
		return nil, errorf(op, cuda.ErrInvalidValue, "nil or zero *Reduction: make one with NewReduction")
	}
	if err := checkStream(op, s); err != nil {
		return nil, err
	}
	ps := append(append([]param(nil), r.in...), r.out)
	if len(args) != len(ps) {
		return nil, errorf(op, cuda.ErrInvalidValue, "reduction %s takes %d arguments (%s), %d given", r.name, len(ps), paramList(ps), len(args))
	}
	as := make([]arg, len(ps))
	for j, p := range ps {
		a, err := classify(op, p, args[j], j < len(r.in))
		if err != nil {
			return nil, err
		}
		as[j] = a
	}
	return as, nil
}

// check checks the buffers of as, each named as the caller's call names
// it: of s's context, the inputs of want elements (why says why), the
// output of outN (outWhy).
func (r *Reduction) check(op string, s *cuda.Stream, as []arg, want int, why func() string, outN int, outWhy string) error {
	if err := checkBuffers(op, s, as); err != nil {
		return err
	}
	for j := range as {
		a := &as[j]
		switch {
		case !a.buffer:
		case j == len(r.in) && a.n != outN:
			return errorf(op, cuda.ErrInvalidValue, "%s has %d elements, want %d%s", a.name, a.n, outN, outWhy)
		case j < len(r.in) && a.n != want:
			return errorf(op, cuda.ErrInvalidValue, "%s has %d elements, want %d%s", a.name, a.n, want, why())
		}
	}
	return nil
}

// Launch folds every element of the input buffers, which must have the same
// length (scalars may stand for inputs), into the output, a buffer of one
// element. An empty input gives the post-map of the identity.
func (r *Reduction) Launch(s *cuda.Stream, args ...any) error {
	const op = "Reduction.Launch"
	as, err := r.classify(op, s, args)
	if err != nil {
		return err
	}
	return r.launch(op, s, as)
}

// launch is Launch of checked arguments (Launch's, or a standard
// operation's): the fold of one row of n elements.
func (r *Reduction) launch(op string, s *cuda.Stream, as []arg) error {
	n, first := 0, ""
	for _, a := range as[:len(r.in)] {
		if a.buffer && a.mem != nil {
			n, first = a.n, a.name // the first buffer's length is the count
			break
		}
	}
	why := func() string {
		if first == "" {
			return ""
		}
		return " (as " + first + " has)"
	}
	if err := r.check(op, s, as, n, why, 1, ""); err != nil {
		return err
	}
	return r.foldRows(op, s, Shape{Rows: 1, Cols: n}, as)
}

// LaunchAxis folds each row (PerRow) or each column (PerColumn) of the
// input matrices, of shape, into the output: a buffer of shape.Rows or
// shape.Cols elements. Rows and columns of every length are laid over the
// device so that it is kept busy: a short row by lanes of a warp, a long
// one by a block, a few very long ones by several blocks each; columns by
// threads that read whole rows at a time. Each layout is fixed by the
// shape, so that a result is the same every time.
func (r *Reduction) LaunchAxis(s *cuda.Stream, shape Shape, axis Axis, args ...any) error {
	const op = "Reduction.LaunchAxis"
	as, err := r.classify(op, s, args)
	if err != nil {
		return err
	}
	return r.launchAxis(op, s, shape, axis, as)
}

// launchAxis is LaunchAxis of checked arguments.
func (r *Reduction) launchAxis(op string, s *cuda.Stream, shape Shape, axis Axis, as []arg) error {
	if err := checkShape(op, shape); err != nil {
		return err
	}
	var outN int
	var outWhy string
	switch axis {
	case PerRow:
		outN, outWhy = shape.Rows, ": one per row"
	case PerColumn:
		outN, outWhy = shape.Cols, ": one per column"
	default:
		return errorf(op, cuda.ErrInvalidValue, "axis %d is not an axis: want PerRow or PerColumn", int(axis))
	}
	why := func() string { return fmt.Sprintf(": a %d×%d matrix", shape.Rows, shape.Cols) }
	if err := r.check(op, s, as, shape.Rows*shape.Cols, why, outN, outWhy); err != nil {
		return err
	}
	switch {
	case outN == 0:
		return nil
	case axis == PerRow:
		return r.foldRows(op, s, shape, as)
	case shape.Rows == 1 || shape.Cols == 1:
		// A column of one row, or the one column: the rows of the
		// transposed shape, whose element (r, c) is the same i.
		return r.foldRows(op, s, Shape{Rows: shape.Cols, Cols: shape.Rows}, as)
	}
	return r.foldColumns(op, s, shape, as)
}

// checkShape returns the error for a shape of a negative dimension, or of
// more elements than an int counts.
func checkShape(op string, shape Shape) error {
	if shape.Rows < 0 || shape.Cols < 0 || shape.Cols > 0 && shape.Rows > int(^uint(0)>>1)/shape.Cols {
		return errorf(op, cuda.ErrInvalidValue, "shape %d×%d: dimensions must be zero or more, and their product an int", shape.Rows, shape.Cols)
	}
	return nil
}

// foldRows folds each row of shape (at least one) into the output, as
// planRows lays them out.
func (r *Reduction) foldRows(op string, s *cuda.Stream, shape Shape, as []arg) error {
	d, err := sizeOf(s)
	if err != nil {
		return wrap(op, err, "sizing the launch of %s", r.name)
	}
	l := planRows(d, shape.Rows, shape.Cols, r.width(as))
	out, rows, cols := as[len(r.in)].mem, int64(shape.Rows), int64(shape.Cols)
	var buf [stackArgs + 4]any
	vals := launchValues(buf[:0], as[:len(r.in)])
	if l.chunks <= 1 {
		f, err := r.functions(op, s, as, "_rows")
		if err != nil {
			return err
		}
		cfg := cuda.LaunchConfig{Grid: cuda.Dim3{X: l.blocks}, Block: cuda.Dim3{X: l.threads}, Stream: s}
		return launchError(op, f[0].Launch(cfg, append(vals, out, boxInt64(rows), boxInt64(cols), int32(l.group))...), as, r.name)
	}
	f, err := r.functions(op, s, as, "_split", "_chunks")
	if err != nil {
		return err
	}
	cfg := cuda.LaunchConfig{Grid: cuda.Dim3{X: l.chunks, Y: shape.Rows}, Block: cuda.Dim3{X: l.threads}, Stream: s}
	bytes := l.chunks * shape.Rows * int(accSize(r.acc))
	counters, partial, ok, err := streamScratch(op, s, shape.Rows, bytes)
	if err != nil {
		return err
	}
	if ok { // one launch: the last block of a row folds its chunks
		return launchError(op, f[0].Launch(cfg, append(vals, partial, rows, cols, int64(l.chunk), out, counters)...), as, r.name)
	}
	return withScratch(op, r.name, s, as, bytes, func(partial *cuda.DeviceBuffer[byte]) error {
		if err := f[0].Launch(cfg, append(vals, partial, rows, cols, int64(l.chunk), out, cuda.DevicePtr(0))...); err != nil {
			return err
		}
		return launchChunks(f[1], s, partial, l.chunks, out, shape.Rows, cols)
	})
}

// streamScratch returns the counters and the partial results of a call of
// kernels that fold their partial results themselves (the last block of a
// result folds them, then sets its counter back to zero), in s's scratch:
// ok false where the call must bring memory of its own, stream-ordered (s
// captures a graph; the call needs more than the scratch holds).
func streamScratch(op string, s *cuda.Stream, counters, bytes int) (cnt, partial cuda.DevicePtr, ok bool, err error) {
	addr, size, err := attach.StreamScratch(s)
	if err != nil {
		return 0, 0, false, wrap(op, err, "taking the stream's scratch memory")
	}
	if addr == 0 || counters > attach.ScratchCounters || 4*attach.ScratchCounters+bytes > size {
		return 0, 0, false, nil
	}
	return cuda.DevicePtr(addr), cuda.DevicePtr(addr + 4*attach.ScratchCounters), true, nil
}

// launchChunks launches _chunks: a warp per output of the outs, folding
// its chunks partial results, of n elements.
func launchChunks(f *cuda.Function, s *cuda.Stream, partial *cuda.DeviceBuffer[byte], chunks int, out any, outs int, n int64) error {
	cfg := cuda.LaunchConfig{Grid: cuda.Dim3{X: min(ceilDiv(outs, blockSize/32), maxGrid)}, Block: cuda.Dim3{X: blockSize}, Stream: s}
	return f.Launch(cfg, partial, int64(chunks), out, int64(outs), n)
}

// foldColumns folds the columns of shape (at least two rows and two
// columns), as planCols lays them out.
func (r *Reduction) foldColumns(op string, s *cuda.Stream, shape Shape, as []arg) error {
	d, err := sizeOf(s)
	if err != nil {
		return wrap(op, err, "sizing the launch of %s", r.name)
	}
	l := planCols(d, shape.Rows, shape.Cols, r.width(as))
	out, rows, cols := as[len(r.in)].mem, int64(shape.Rows), int64(shape.Cols)
	var buf [stackArgs + 4]any
	vals := append(launchValues(buf[:0], as[:len(r.in)]), out)
	if l.kind == "_short" {
		f, err := r.functions(op, s, as, "_short")
		if err != nil {
			return err
		}
		cfg := cuda.LaunchConfig{Grid: cuda.Dim3{X: l.gx}, Block: cuda.Dim3{X: blockSize}, Stream: s}
		return launchError(op, f[0].Launch(cfg, append(vals, rows, cols)...), as, r.name)
	}
	cfg := cuda.LaunchConfig{Grid: cuda.Dim3{X: l.gx, Y: l.gy}, Block: cuda.Dim3{X: l.lanes, Y: blockSize / max(1, l.lanes)}, Stream: s}
	if l.kind == "_narrow" {
		cfg.Block = cuda.Dim3{X: bigBlock}
	}
	f, err := r.functions(op, s, as, l.kind, "_chunks")
	if err != nil {
		return err
	}
	if l.chunks == 1 { // one chunk posts its results itself: no partial results (null)
		return launchError(op, f[0].Launch(cfg, append(vals, cuda.DevicePtr(0), rows, cols, cuda.DevicePtr(0))...), as, r.name)
	}
	counterCount := 1 // _narrow: one for its blocks; _cols, _colsv: one a block of columns
	if l.kind != "_narrow" {
		counterCount = l.gx
	}
	bytes := l.chunks * shape.Cols * int(accSize(r.acc))
	var counters, partial cuda.DevicePtr
	ok := false
	if l.last {
		if counters, partial, ok, err = streamScratch(op, s, counterCount, bytes); err != nil {
			return err
		}
	}
	if ok { // one launch: the last block of a result's folds its chunks
		return launchError(op, f[0].Launch(cfg, append(vals, partial, rows, cols, counters)...), as, r.name)
	}
	return withScratch(op, r.name, s, as, bytes, func(partial *cuda.DeviceBuffer[byte]) error {
		if err := f[0].Launch(cfg, append(vals, partial, rows, cols, cuda.DevicePtr(0))...); err != nil {
			return err
		}
		return launchChunks(f[1], s, partial, l.chunks, out, shape.Cols, rows)
	})
}

// width returns the elements the kernels for as's pattern load at once:
// 16 bytes of the widest buffer's type.
func (r *Reduction) width(as []arg) int {
	widest := 1
	for j, p := range r.in {
		if as[j].buffer {
			widest = max(widest, int(p.t.goType.Size()))
		}
	}
	return 16 / widest
}

// functions returns the kernels name+suffix of the variant for the inputs'
// pattern.
func (r *Reduction) functions(op string, s *cuda.Stream, as []arg, suffixes ...string) ([2]*cuda.Function, error) {
	var fs [2]*cuda.Function
	var keyBuf [stackArgs]byte
	key := keyBuf[:0]
	for j := range r.in {
		b := byte('s')
		if as[j].buffer {
			b = 'b'
		}
		key = append(key, b)
	}
	r.mu.Lock()
	v, ok := r.variants[string(key)]
	if !ok {
		pattern := make([]bool, len(r.in))
		for j := range r.in {
			pattern[j] = as[j].buffer
		}
		v = &variant{src: r.source(pattern)}
		r.variants[string(key)] = v
	}
	r.mu.Unlock()
	for i, suffix := range suffixes {
		f, err := kernel(op, s, v, r.kernelName(suffix), as)
		if err != nil {
			return fs, err
		}
		fs[i] = f
	}
	return fs, nil
}

// kernelName returns the name of r's kernel of suffix, made once.
func (r *Reduction) kernelName(suffix string) string {
	if name, ok := r.names.Load(suffix); ok {
		return name.(string)
	}
	name, _ := r.names.LoadOrStore(suffix, r.name+suffix)
	return name.(string)
}

// withScratch runs launch with n elements of stream-ordered scratch
// memory on s, freed after it in the stream's order whether it failed or
// not. A failed free leaves the memory allocated: a second try keeps a
// passing failure from leaking it (the first failure is still returned);
// if that fails too, the context is broken, and the memory goes with it.
// name names the kernel in errors, as the arguments (a closed one is
// named).
func withScratch[T any](op, name string, s *cuda.Stream, as []arg, n int, launch func(*cuda.DeviceBuffer[T]) error) error {
	scratch, err := cuda.AllocAsync[T](s, n)
	if err != nil {
		return wrap(op, err, "allocating %s's partial results", name)
	}
	launchErr := launch(scratch)
	freeErr := scratch.Free()
	if freeErr != nil && scratch.Free() != nil {
		freeErr = fmt.Errorf("%w (and again)", freeErr)
	}
	if launchErr != nil {
		return launchError(op, launchErr, as, name)
	}
	return wrap(op, freeErr, "freeing %s's partial results", name)
}

// accSize is the bytes of a reduce type's value in device memory.
func accSize(t dtype) uintptr {
	if t.half != "" {
		return 4 // folded in float
	}
	return t.goType.Size()
}
