package nd

import (
	"fmt"
	"math"
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
// each taking tileElems/tileThreads of them): rows by columns, powers of
// two, tileElems/32 by 32 where both axes have 32 or more, else as many
// of the shorter axis as it has (rounded up to a power of two) by the
// rest along the longer.
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

// tiled is a plan's tiled kernel: its kernel, its tiles (of columns, of
// rows, and the batch: the grid, the last two as many as a grid has and
// looped past that) and its arguments past the arrays' addresses and
// offsets (each array's strides along the batch, the rows and the
// columns, then the dims and the tile's log2 sizes), with the sizes
// tileSeen is told.
type tiled struct {
	k      *rawKernel
	consts []any
	rows   int
	cols   int
	tr, tc int // tile rows, columns
	tiles  [3]int
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
	tr, tc := tileElems/32, 32
	switch {
	case cols < 32:
		tc = 1 << bits.Len(uint(cols-1))
		tr = tileElems / tc
	case rows < 32:
		tr = 1 << bits.Len(uint(rows-1))
		tc = tileElems / tr
	}
	// An element's offset from its tile's first is an int in the kernel,
	// and the tiles of columns are the grid's x.
	abs := func(v int) int { return max(v, -v) }
	for _, l := range co {
		sr, sc := abs(l.Stride(other)), abs(l.Stride(run))
		if sr >= math.MaxInt32/tr || sc >= math.MaxInt32/tc || sr*(tr-1)+sc*(tc-1) >= math.MaxInt32 {
			return nil
		}
	}
	if (cols+tc-1)/tc > math.MaxInt32 {
		return nil
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
	t.tiles = [3]int{(cols + tc - 1) / tc, (rows + tr - 1) / tr, batches}
	// Each array's strides along the batch (0 where there is none), the
	// rows and the columns, the output's last.
	for _, l := range append(co[1:len(co):len(co)], co[0]) {
		sb := 0
		if batch >= 0 {
			sb = l.Stride(batch)
		}
		t.consts = append(t.consts, int64(sb), int64(l.Stride(other)), int64(l.Stride(run)))
	}
	t.consts = append(t.consts, int64(rows), int64(cols), int64(batches), int32(bits.Len(uint(tr))-1), int32(bits.Len(uint(tc))-1))
	return t
}

// maxGridY is the most blocks a grid has along y or z (tests lower it
// to check the kernel's loops past the grid; read at each launch, so that
// a plan made before takes it too).
var maxGridY = 65535

// tileSource writes the tiled kernel of e: staged's inputs (bit j input
// j) read through shared memory.
//
// Each phase makes all of a thread's loads before any of its stores: the
// arrays are generic pointers, which may be the shared memory a store
// writes or the output, so that a load written after a store waits for
// it, and a thread whose four elements each loaded then stored had one
// load in flight where it has four (the machine code, sm_90).
func tileSource(e expr, out *operand, ins []operand, key kernelKey, staged uint64) (src, name string) {
	name = fmt.Sprintf("%s_tile_%x", kernelName(e, key.types), staged)
	per := tileElems / tileThreads
	var params, stage, bases, fetch, stores, gather, values strings.Builder
	half := out.t.half
	for j, in := range ins {
		half = half || in.t.half
		fmt.Fprintf(&params, "const %[1]s* p%[2]d, long long o%[2]d, ", in.t.storage(), j)
	}
	fmt.Fprintf(&params, "%s* y, long long oy, ", out.t.storage())
	for j := range ins {
		fmt.Fprintf(&params, "long long n%[1]d, long long a%[1]d, long long b%[1]d, ", j)
	}
	params.WriteString("long long ny, long long ay, long long by, long long rows, long long cols, long long batches, int lr, int lc")
	for j, in := range ins {
		// Each array's first element of the tile, and an element's
		// offset from it in an int (tileFor checked that it fits).
		fmt.Fprintf(&bases, "\t\tconst %[1]s* nd_q%[2]d = p%[2]d + o%[2]d + nd_bz * n%[2]d + nd_r0 * a%[2]d + nd_c0 * b%[2]d;\n", in.t.storage(), j)
		at := fmt.Sprintf("nd_q%[1]d[nd_r * (int)a%[1]d + nd_c * (int)b%[1]d]", j)
		// The elements as they are in memory, converted (a half) only
		// once all are loaded.
		fmt.Fprintf(&gather, "\t\t%[1]s nd_x%[2]d[%[3]d];\n", in.t.storage(), j, per)
		fmt.Fprintf(&values, "\t\t\t\tconst %[1]s x%[2]d = %[3]s;\n", in.t.value, j, in.t.load(fmt.Sprintf("nd_x%d[nd_k]", j)))
		if staged&(1<<j) == 0 {
			fmt.Fprintf(&gather, "\t\t#pragma unroll\n\t\tfor (int nd_k = 0; nd_k < %[1]d; nd_k++) { nd_at2; if (nd_in) nd_x%[2]d[nd_k] = %[3]s; }\n", per, j, at)
			continue
		}
		// A column of the tile takes nd_pd elements (its tr and a
		// padding, below): at most tileElems + tileElems/2 in all.
		fmt.Fprintf(&stage, "\t__shared__ %[1]s t%[2]d[%[3]d];\n", in.t.storage(), j, tileElems+tileElems/2)
		fmt.Fprintf(&fetch, "\t\t%[1]s nd_s%[2]d[%[3]d];\n\t\t#pragma unroll\n\t\tfor (int nd_k = 0; nd_k < %[3]d; nd_k++) { nd_at1; if (nd_in) nd_s%[2]d[nd_k] = %[4]s; }\n", in.t.storage(), j, per, at)
		fmt.Fprintf(&stores, "\t\t#pragma unroll\n\t\tfor (int nd_k = 0; nd_k < %[1]d; nd_k++) { nd_at1; if (nd_in) t%[2]d[nd_c * nd_pd + nd_r] = nd_s%[2]d[nd_k]; }\n", per, j)
		fmt.Fprintf(&gather, "\t\t#pragma unroll\n\t\tfor (int nd_k = 0; nd_k < %[1]d; nd_k++) { nd_at2; if (nd_in) nd_x%[2]d[nd_k] = t%[2]d[nd_c * nd_pd + nd_r]; }\n", per, j)
	}
	fmt.Fprintf(&bases, "\t\t%[1]s* nd_qy = y + oy + nd_bz * ny + nd_r0 * ay + nd_c0 * by;\n", out.t.storage())
	// nd_at1 and nd_at2 place element nd_k of a thread in the tile: along
	// the rows (the staged inputs' axis), then along the columns (the
	// output's); nd_in is whether it is inside the array.
	at1 := "const int nd_e = threadIdx.x + nd_k * " + fmt.Sprint(tileThreads) + ", nd_r = nd_e & (nd_tr - 1), nd_c = nd_e >> lr; const bool nd_in = nd_r < nd_rl && nd_c < nd_cl"
	at2 := "const int nd_e = threadIdx.x + nd_k * " + fmt.Sprint(tileThreads) + ", nd_c = nd_e & (nd_tc - 1), nd_r = nd_e >> lc; const bool nd_in = nd_r < nd_rl && nd_c < nd_cl"
	body := strings.NewReplacer("nd_at1", at1, "nd_at2", at2)
	// nd_pd, a staged column's elements, is chosen so that a warp's 32
	// accesses to shared memory fall in 32 banks (4 bytes): a warp
	// stores tr rows by 32/tr columns (all of one column where tr >= 32)
	// and reads 32/tc rows by tc columns (one row where tc >= 32). Where
	// tc < 32 (then tr >= 32), tr + 32/tc places the reads' column c and
	// row r in bank 32/tc*c + r, all different, where tr + 1 put them in c + r,
	// four to a bank with tc 8; elsewhere tr + 1, odd, puts a row's 32
	// columns in different banks (and where tr < 32 the stores of the
	// last 32/tr - 1 columns share a bank with the first's: two to a
	// bank at most).
	src = fmt.Sprintf(`extern "C" __global__ __launch_bounds__(%[5]d) void %[1]s(%[2]s) {
%[3]s	const int nd_tr = 1 << lr, nd_tc = 1 << lc, nd_pd = nd_tr + (lc < 5 ? 32 >> lc : 1);
	const long long nd_tiles = (rows + nd_tr - 1) >> lr, nd_c0 = (long long)blockIdx.x << lc;
	const int nd_cl = (int)min((long long)nd_tc, cols - nd_c0);
	for (long long nd_bz = blockIdx.z; nd_bz < batches; nd_bz += gridDim.z)
	for (long long nd_ty = blockIdx.y; nd_ty < nd_tiles; nd_ty += gridDim.y) {
		const long long nd_r0 = nd_ty << lr;
		const int nd_rl = (int)min((long long)nd_tr, rows - nd_r0);
%[4]s%[6]s%[7]s		__syncthreads();
%[8]s		#pragma unroll
		for (int nd_k = 0; nd_k < %[9]d; nd_k++) {
			%[10]s;
			if (nd_in) {
%[11]s				%[12]s r;
				{ %[13]s }
				nd_qy[nd_r * (int)ay + nd_c * (int)by] = %[14]s;
			}
		}
		__syncthreads();
	}
}
`, name, params.String(), stage.String(), bases.String(), tileThreads, body.Replace(fetch.String()), body.Replace(stores.String()),
		body.Replace(gather.String()), per, at2, values.String(), out.t.value, e.body(), out.t.store("r"))
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
	grid := cuda.Dim3{X: t.tiles[0], Y: min(t.tiles[1], maxGridY), Z: min(t.tiles[2], maxGridY)}
	return wrap(op, f.Launch(cuda.LaunchConfig{Grid: grid, Block: cuda.Dim3{X: tileThreads}, Stream: out.s}, args...))
}
