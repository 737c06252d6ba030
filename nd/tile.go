package nd

import (
	"fmt"
	"math/bits"
	"strings"
	"sync"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/compute"
	"github.com/gocuda/cuda/internal/halfc"
	"github.com/gocuda/cuda/internal/ndshape"
)

// An elementwise operation over two axes (or a batch of them) where the
// output runs along one axis and an input along another (the exponential of a transposed
// view into a new array, a transposed copy): the strided kernel's
// neighbouring threads write neighbouring elements but read elements a
// whole row apart, so that a warp's 32 reads of a thin transposed input
// (a 1048576×8 view of 8×1048576: rows of 32 bytes) touched 8 segments
// for 128 bytes, and the call ran at 0.81x PyTorch's time. The tiled
// kernel takes a tile of the two axes a block: each such input is read
// along its own axis into shared memory, then every thread computes an
// element of the output along the output's axis, reading the staged
// inputs across the tile, the others from memory as the strided kernel
// does. Both the reads and the writes are whole runs.

// tileElems is the elements of a tile (a block of tileThreads threads,
// each taking tileElems/tileThreads of them): tileRows by tileCols, powers
// of two, 32×32 where both axes have 32 or more, else as many of the
// shorter axis as it has (rounded up to a power of two) by the rest along
// the longer.
const (
	tileElems   = 1024
	tileThreads = 256
	// tileSmem is the most bytes of shared memory the staged inputs take
	// (a block's static shared memory is at most 48 KiB).
	tileSmem = 40 << 10
)

// tileSeen, where a test sets it, is told each tiled launch's rows,
// columns and tile.
var tileSeen func(rows, cols, tileRows, tileCols int)

// tiled is a plan's tiled kernel: its kernel and its arguments past the
// arrays' addresses and offsets (each array's strides along the batch,
// the rows and the columns, then the dims, the tile's log2 sizes and the
// tiles), with the sizes tileSeen is told.
type tiled struct {
	k      *rawKernel
	consts []any
	rows   int
	cols   int
	tr, tc int // tile rows, columns
	tiles  int
}

var tileKernels sync.Map // kernelKey -> *rawKernel

// tileFor returns the tiled kernel of e over the coalesced layouts co
// (out's first), or nil where it does not apply: two or three axes, an
// output contiguous along one of them (a stride of 1 or -1: its run, the
// tile's columns), at least one input contiguous along another (the
// tile's rows) and not along the run (staged), the third axis, if any,
// a batch of tiles; no scalar, and an expression that does not read the
// index.
func tileFor(e expr, out *operand, ins []operand, co []ndshape.Layout) *tiled {
	axes := co[0].Ndim()
	if axes != 2 && axes != 3 || usesIndex.MatchString(e.code) {
		return nil
	}
	for i := range ins {
		if ins[i].scalar {
			return nil
		}
	}
	unit := func(st int) bool { return st == 1 || st == -1 }
	run, other := -1, -1
	for ax := range axes {
		if unit(co[0].Stride(ax)) {
			run = ax
		}
	}
	if run < 0 {
		return nil
	}
	stagedOn := func(l ndshape.Layout, ax int) bool {
		return ax != run && unit(l.Stride(ax)) && l.Stride(run) != 0 && !unit(l.Stride(run))
	}
	for _, l := range co[1:] {
		for ax := range axes {
			if other < 0 && stagedOn(l, ax) {
				other = ax
			}
		}
	}
	if other < 0 {
		return nil
	}
	batch := -1 // the axis left, if any
	for ax := range axes {
		if ax != run && ax != other {
			batch = ax
		}
	}
	var staged uint64
	bytes := 0
	var types []string
	for j, in := range ins {
		types = append(types, in.t.name)
		if stagedOn(co[j+1], other) {
			staged |= 1 << j
			bytes += (tileElems + tileElems/2) * in.t.size()
		}
	}
	if bytes > tileSmem {
		return nil
	}
	rows, cols, batches := co[0].Dim(other), co[0].Dim(run), 1
	if batch >= 0 {
		batches = co[0].Dim(batch)
	}
	tr, tc := 32, 32
	switch {
	case cols < 32:
		tc = 1 << bits.Len(uint(cols-1))
		tr = tileElems / tc
	case rows < 32:
		tr = 1 << bits.Len(uint(rows-1))
		tc = tileElems / tr
	}
	key := kernelKey{name: e.name, code: e.code, types: strings.Join(types, ",") + "->" + out.t.name, axes: -3, vecs: staged}
	k, ok := tileKernels.Load(key)
	if !ok {
		src, name := tileSource(e, out, ins, key, staged)
		raw, err := compute.NewRawKernel(src, name)
		if err != nil {
			return nil
		}
		k, _ = tileKernels.LoadOrStore(key, &rawKernel{k: raw})
	}
	t := &tiled{k: k.(*rawKernel), rows: rows, cols: cols, tr: tr, tc: tc}
	tilesC := (cols + tc - 1) / tc
	perBatch := (rows + tr - 1) / tr * tilesC
	t.tiles = perBatch * batches
	// Each array's strides along the batch (0 where there is none), the
	// rows and the columns, the output's last.
	for _, l := range append(co[1:len(co):len(co)], co[0]) {
		sb := 0
		if batch >= 0 {
			sb = l.Stride(batch)
		}
		t.consts = append(t.consts, int64(sb), int64(l.Stride(other)), int64(l.Stride(run)))
	}
	t.consts = append(t.consts, int64(rows), int64(cols),
		int32(bits.Len(uint(tr))-1), int32(bits.Len(uint(tc))-1), int64(tilesC), int64(perBatch), int64(t.tiles))
	return t
}

// tileSource writes the tiled kernel of e: staged's inputs (bit j input
// j) read through shared memory.
func tileSource(e expr, out *operand, ins []operand, key kernelKey, staged uint64) (src, name string) {
	name = fmt.Sprintf("nd_%s_%s_tile_%x", e.name, strings.NewReplacer(",", "_", "->", "_to_").Replace(key.types), staged)
	var params, stage, reads strings.Builder
	half := out.t.half
	for j, in := range ins {
		half = half || in.t.half
		fmt.Fprintf(&params, "const %[1]s* p%[2]d, long long o%[2]d, ", in.t.storage(), j)
	}
	fmt.Fprintf(&params, "%s* y, long long oy, ", out.t.storage())
	for j := range ins {
		fmt.Fprintf(&params, "long long n%[1]d, long long a%[1]d, long long b%[1]d, ", j)
	}
	params.WriteString("long long ny, long long ay, long long by, long long rows, long long cols, int lr, int lc, long long tilesC, long long perBatch, long long tiles")
	for j, in := range ins {
		if staged&(1<<j) == 0 {
			fmt.Fprintf(&reads, "\t\t\t\tconst %[1]s x%[2]d = %[3]s;\n", in.t.value, j, in.t.load(fmt.Sprintf("p%[1]d[o%[1]d + nd_bi * n%[1]d + nd_gr * a%[1]d + nd_gc * b%[1]d]", j)))
			continue
		}
		// tileElems plus a column's padding, at most tileElems/2
		// columns: rows of tr + 1, so that a warp reading across a
		// tile's rows meets no bank twice where tr is 32.
		fmt.Fprintf(&stage, "\t__shared__ %[1]s t%[2]d[%[3]d];\n", in.t.storage(), j, tileElems+tileElems/2)
		fmt.Fprintf(&reads, "\t\t\t\tconst %[1]s x%[2]d = %[3]s;\n", in.t.value, j, in.t.load(fmt.Sprintf("t%d[nd_c * (nd_tr + 1) + nd_r]", j)))
	}
	var loads strings.Builder
	for j := range ins {
		if staged&(1<<j) != 0 {
			fmt.Fprintf(&loads, "\t\t\t\tt%[1]d[nd_c * (nd_tr + 1) + nd_r] = p%[1]d[o%[1]d + nd_bi * n%[1]d + nd_gr * a%[1]d + nd_gc * b%[1]d];\n", j)
		}
	}
	src = fmt.Sprintf(`extern "C" __global__ __launch_bounds__(%[5]d) void %[1]s(%[2]s) {
%[3]s	const int nd_tr = 1 << lr, nd_tc = 1 << lc;
	for (long long nd_b = blockIdx.x; nd_b < tiles; nd_b += gridDim.x) {
		const long long nd_bi = nd_b / perBatch, nd_bt = nd_b - nd_bi * perBatch;
		const long long nd_r0 = (nd_bt / tilesC) << lr, nd_c0 = (nd_bt %% tilesC) << lc;
		#pragma unroll
		for (int nd_k = 0; nd_k < %[6]d; nd_k++) {
			const int nd_e = threadIdx.x + nd_k * %[5]d, nd_r = nd_e & (nd_tr - 1), nd_c = nd_e >> lr;
			const long long nd_gr = nd_r0 + nd_r, nd_gc = nd_c0 + nd_c;
			if (nd_gr < rows && nd_gc < cols) {
%[4]s			}
		}
		__syncthreads();
		#pragma unroll
		for (int nd_k = 0; nd_k < %[6]d; nd_k++) {
			const int nd_e = threadIdx.x + nd_k * %[5]d, nd_c = nd_e & (nd_tc - 1), nd_r = nd_e >> lc;
			const long long nd_gr = nd_r0 + nd_r, nd_gc = nd_c0 + nd_c;
			if (nd_gr < rows && nd_gc < cols) {
%[7]s				%[8]s r;
				{ %[9]s }
				y[oy + nd_bi * ny + nd_gr * ay + nd_gc * by] = %[10]s;
			}
		}
		__syncthreads();
	}
}
`, name, params.String(), stage.String(), loads.String(), tileThreads, tileElems/tileThreads, reads.String(), out.t.value, e.body(), out.t.store("r"))
	if half {
		src = halfc.Source + src
	}
	return src, name
}

// launch launches t over the operands.
func (t *tiled) launch(op string, out *operand, ins []operand, args []any) error {
	for i := range ins {
		args = append(args, ins[i].buf, boxInt64(int64(ins[i].layout.Offset())))
	}
	args = append(args, out.buf, boxInt64(int64(out.layout.Offset())))
	args = append(args, t.consts...)
	if tileSeen != nil {
		tileSeen(t.rows, t.cols, t.tr, t.tc)
	}
	f, err := t.k.function(out.s.Context())
	if err != nil {
		return wrap(op, err)
	}
	blocks := min(t.tiles, 1<<20)
	return wrap(op, f.Launch(cuda.LaunchConfig{Grid: cuda.Dim3{X: blocks}, Block: cuda.Dim3{X: tileThreads}, Stream: out.s}, args...))
}

// storage is t's C type in memory: a half's bits as an unsigned short.
func (t *ctype) storage() string {
	if t.half {
		return "unsigned short"
	}
	return t.value
}

// load is the value of t's element v in memory, in t's value type.
func (t *ctype) load(v string) string {
	switch {
	case t.name == "float16":
		return "gocuda_f16_to_f32(" + v + ")"
	case t.name == "bfloat16":
		return "gocuda_bf16_to_f32(" + v + ")"
	}
	return v
}

// store is the element in memory of t's value v.
func (t *ctype) store(v string) string {
	switch {
	case t.name == "float16":
		return "gocuda_f32_to_f16(" + v + ")"
	case t.name == "bfloat16":
		return "gocuda_f32_to_bf16(" + v + ")"
	}
	return "(" + t.value + ")" + v
}
