package compute_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unsafe"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/compute"
	"github.com/gocuda/cuda/internal/cudatest"
)

// The sweep of the kernels whose loads were restaged without a GPU to
// check them: the column reductions' _cols and _colsv, which load a
// thread's Unroll rows' vectors before they fold any (reduction.go's
// stagedLoads and vectorsFrom), and Softmax's gocuda_loadv, which takes
// its vector by value (rows.cu.tmpl: the _regsN kernels, a warp's
// gocuda_short rows, a block's rows). Every element type, rows that are
// no multiple of any unroll, columns around the vector widths and the
// 32-column threshold, views 0, 1 and 3 elements into a buffer, against
// the host: the column folds exactly, of values chosen so that a row read
// twice, skipped, or taken from another column or row changes the result.

// sweepRows and sweepCols are the column sweep's shapes: rows around the
// unrolls (4 and 8), and past 32 (_short takes 32 rows or fewer: only
// the rows from 33 reach _cols and _colsv), past a pass (256) and into
// chunks of rows; columns around the vectors (1 to 8 columns a
// thread), the 32-column threshold (fewer are _narrow's) and fewCols
// (128: fewer are _colsv's).
var (
	sweepRows = []int{1, 2, 3, 7, 8, 9, 15, 17, 33, 34, 41, 100, 257, 1000, 1025}
	sweepCols = []int{31, 32, 33, 36, 63, 64, 65, 127, 129, 1000, 1001}
	// sweepOffsets are the views' first elements: 0 aligned for any
	// vector, 1 and 3 for none wider than an element.
	sweepOffsets = []int{0, 1, 3}
)

// sweepSkipped reports the shapes of sweepRows×sweepCols the sweep leaves
// out, for time (the fake runs kernels on the CPU): of the four of a
// million elements, it keeps 1025×1000 (columns of whole vectors) and
// 1000×1001 (of none), and leaves 1000×1000 and 1025×1001, whose
// remainders of rows and columns the others have.
func sweepSkipped(rows, cols int) bool {
	return rows == 1000 && cols == 1000 || rows == 1025 && cols == 1001
}

// TestStagedSweepColumns: SumAxis, MaxAxis, MinAxis and (floats)
// MeanAxis per column of every sweepRows×sweepCols shape (but
// sweepSkipped's), of every element type, from views sweepOffsets
// elements into a buffer, equal the host's results exactly; on the fake's
// device, then in the H200's layouts where they differ. A column's values
// are integers of 1 to 8 in magnitude (unsigned: 1 to 8 and one 0), of
// signs that keep the running sum within ±64 but for the extremes, so
// that every sum is exact in every type (bfloat16's integers to 256) and
// in any order, and a row dropped or doubled changes it by that row's
// value; its largest and smallest (unique, of magnitudes that differ from
// column to column) sit in rows that move from column to column, the
// first and the last among them. Logs the kernels (with V and Unroll)
// the shapes reached, and fails unless _cols and (but for 1-byte types,
// which have none) _colsv are among them.
func TestStagedSweepColumns(t *testing.T) {
	skipSweep(t)
	e := gpu(t)
	stagedColumnsOf(t, e, compute.MeanAxis[cuda.Float16])
	stagedColumnsOf(t, e, compute.MeanAxis[cuda.BFloat16])
	stagedColumnsOf(t, e, compute.MeanAxis[float32])
	stagedColumnsOf(t, e, compute.MeanAxis[float64])
	stagedColumnsOf[int8](t, e, nil)
	stagedColumnsOf[uint8](t, e, nil)
	stagedColumnsOf[int16](t, e, nil)
	stagedColumnsOf[uint16](t, e, nil)
	stagedColumnsOf[int32](t, e, nil)
	stagedColumnsOf[uint32](t, e, nil)
	stagedColumnsOf[int64](t, e, nil)
	stagedColumnsOf[uint64](t, e, nil)
}

// columnWant is a column sweep case's matrix and its columns' exact
// results on the host.
type columnWant struct {
	x                []float64 // row-major, every value exact in the type
	sums, maxs, mins []float64
}

// columnValues returns the values of a rows×cols matrix of the sweep, of a
// signed type or not, and each column's sum, largest and smallest.
func columnValues(rows, cols int, signed bool) columnWant {
	const (
		most  = 8  // a value's magnitude, but the extremes'
		bound = 64 // a running sum's
	)
	rng := rand.New(rand.NewPCG(uint64(rows), uint64(cols)))
	w := columnWant{x: make([]float64, rows*cols), sums: make([]float64, cols), maxs: make([]float64, cols), mins: make([]float64, cols)}
	for c := range cols {
		// The extremes' rows: the last and the first for the first two
		// columns, then moving by a stride prime to the rows.
		hi, lo := (c*131+rows-1)%rows, (c*89+rows/2)%rows
		if c == 1 {
			hi, lo = 0, rows-1
		}
		var sum float64
		for r := range rows {
			v := float64(1 + rng.IntN(most))
			if signed && (math.Abs(sum+v) > bound || sum-v >= -bound && rng.IntN(2) == 0) {
				v = -v
			}
			switch {
			case r == hi:
				v = most + 1 + float64(c%64)
			case r == lo && signed:
				v = -(most + 1 + float64(c%61))
			case r == lo:
				v = 0
			}
			w.x[r*cols+c] = v
			sum += v
		}
		w.sums[c] = sum
	}
	for c := range cols {
		w.maxs[c], w.mins[c] = math.Inf(-1), math.Inf(1)
		for r := range rows {
			w.maxs[c], w.mins[c] = max(w.maxs[c], w.x[r*cols+c]), min(w.mins[c], w.x[r*cols+c])
		}
	}
	return w
}

// meanWant returns MeanAxis's result of T for a column summing to sum
// (exact) over rows: the quotient in the reduce type (float32 for the
// halves and float32, float64 for float64), rounded to T.
func meanWant[T cuda.Number](sum float64, rows int) T {
	if unsafe.Sizeof(*new(T)) == 8 {
		return fromF[T](sum / float64(rows))
	}
	return fromF[T](float64(float32(sum) / float32(rows)))
}

func stagedColumnsOf[T cuda.Number](t *testing.T, e env, mean meanAxis[T]) {
	t.Helper()
	size := int(unsafe.Sizeof(*new(T)))
	signed := toF(fromF[T](-1)) == -1
	reached := map[string]int{} // the kernels the shapes reached
	t.Run(fmt.Sprintf("%T", *new(T)), func(t *testing.T) {
		// The fake's device (4 multiprocessors), then the H200's
		// layouts (132: other chunks of rows, _cols where the fake
		// takes _colsv) of the shapes whose _cols or _colsv they change.
		fake := map[compute.Shape]string{}
		for _, h200 := range []bool{false, true} {
			if h200 {
				compute.SetDeviceSize(t, e.s, 132, 2048, 232448)
			}
			for _, rows := range sweepRows {
				for _, cols := range sweepCols {
					if sweepSkipped(rows, cols) {
						continue
					}
					kind, vec, unroll, chunks := compute.ColumnKernel(t, e.s, rows, cols, size)
					plan, sh := fmt.Sprint(kind, vec, unroll, chunks), compute.Shape{Rows: rows, Cols: cols}
					if !h200 {
						fake[sh] = plan
					} else if vec == 0 || fake[sh] == plan {
						continue
					}
					name := fmt.Sprintf("%dx%d", rows, cols)
					if vec > 0 {
						reached[fmt.Sprintf("%s V=%d Unroll=%d", kind, vec, unroll)]++
						name += fmt.Sprintf("%s(V=%d,Unroll=%d,chunks=%d)", kind, vec, unroll, chunks)
					} else {
						reached[kind]++
						name += kind
					}
					if h200 {
						name = "H200/" + name
					}
					t.Run(name, func(t *testing.T) { checkStagedColumns(t, e, sh, signed, mean) })
				}
			}
		}
		kinds := slices.Sorted(func(yield func(string) bool) {
			for k := range reached {
				if !yield(fmt.Sprintf("%s: %d", k, reached[k])) {
					return
				}
			}
		})
		t.Logf("kernels reached (shapes): %s", strings.Join(kinds, "; "))
		var cols, colsv bool
		for k := range reached {
			cols = cols || strings.HasPrefix(k, "_cols ")
			colsv = colsv || strings.HasPrefix(k, "_colsv ")
		}
		if !cols || !colsv && size != 1 { // 1-byte types have no _colsv: _cols' vector is 16 bytes already
			t.Errorf("the sweep reached _cols %v, _colsv %v", cols, colsv)
		}
	})
}

// checkStagedColumns checks the column reductions of sh from a view at
// each of sweepOffsets.
func checkStagedColumns[T cuda.Number](t *testing.T, e env, sh compute.Shape, signed bool, mean meanAxis[T]) {
	t.Helper()
	n := sh.Rows * sh.Cols
	w := columnValues(sh.Rows, sh.Cols, signed)
	x := make([]T, n)
	for i, v := range w.x {
		if x[i] = fromF[T](v); toF(x[i]) != v {
			t.Fatalf("value %v is not exact in %T", v, x[i])
		}
	}
	base := must(cuda.Alloc[T](e.ctx, n+slices.Max(sweepOffsets)))(t)
	defer base.Free()
	dst := must(cuda.Alloc[T](e.ctx, sh.Cols))(t)
	defer dst.Free()
	type op struct {
		name string
		run  func(dst, src *cuda.DeviceBuffer[T], sh compute.Shape, axis compute.Axis, s *cuda.Stream) error
		want func(c int) T
	}
	ops := []op{
		{"SumAxis", compute.SumAxis[T], func(c int) T { return wrap[T](int64(w.sums[c])) }},
		{"MaxAxis", compute.MaxAxis[T], func(c int) T { return fromF[T](w.maxs[c]) }},
		{"MinAxis", compute.MinAxis[T], func(c int) T { return fromF[T](w.mins[c]) }},
	}
	if mean != nil {
		ops = append(ops, op{"MeanAxis", mean, func(c int) T { return meanWant[T](w.sums[c], sh.Rows) }})
	}
	for _, off := range sweepOffsets {
		src := must(base.Slice(off, n))(t)
		if err := src.CopyFromHost(x); err != nil {
			t.Fatal(err)
		}
		for _, o := range ops {
			if err := o.run(dst, src, sh, compute.PerColumn, e.s); err != nil {
				t.Fatalf("%s from element %d: %v", o.name, off, err)
			}
			got := cudatest.Download(t, dst)
			for c, g := range got {
				if want := o.want(c); g != want {
					t.Errorf("%s %v per column from element %d: column %d = %v, want %v", o.name, sh, off, c, g, want)
					if t.Failed() && c > 0 {
						break
					}
				}
			}
			if t.Failed() {
				return
			}
		}
	}
}

// softmaxSweepCols are the Softmax sweep's row lengths: a thread's (2V
// elements or fewer, staged), lanes of a warp holding the row in
// registers (_regsN: around each power of two from 32 to 2048), the
// warp's gocuda_short (float64 past 1024), a block's (2049, and 2056
// of whole vectors), and odd ones.
var softmaxSweepCols = []int{3, 5, 9, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 255, 256, 257, 511, 512, 513, 1000, 1023, 1024, 1025, 1026, 1999, 2047, 2048, 2049, 2056}

// softmaxSweepRows are its row counts: one; six (rows 1 to 4 special);
// nine (a block of 32-lane groups takes 8 rows: a second, of one live
// row); 130 (past a block of groups of 2 to 16 lanes: 128 to 16 rows a
// block) for rows of 257 elements or fewer.
var softmaxSweepRows = []int{1, 6, 9, 130}

// softmaxSweepViews are the views of src and dst (elements into their
// buffers; dst -1: in place, dst is src).
var softmaxSweepViews = []struct{ src, dst int }{{0, 0}, {1, 1}, {3, 3}, {0, 3}, {0, -1}, {3, -1}}

// TestStagedSweepSoftmax: Softmax and LogSoftmax of every float type, of
// rows of softmaxSweepCols elements, softmaxSweepRows of them, through
// every softmaxSweepViews view, against float64 on the host within half a
// unit in the last place of the type plus the float32 (float64's: float64)
// computation's few units: an element dropped or doubled in a row's sum
// moves every result of the row by about 1/cols of its own value (the
// values are in [-2, 2]), past that for float32 and float64 and for a
// share of the halves' results. Rows 1 to 4 of six or more hold a NaN as
// their last element, only -Inf, -Inf first and last, and a +Inf
// (softmaxWant's results: NaN rows, a +Inf row NaN where +Inf, 0
// elsewhere). Logs the kernels the shapes reached.
func TestStagedSweepSoftmax(t *testing.T) {
	skipSweep(t)
	e := gpu(t)
	stagedSoftmaxOf[cuda.Float16](t, e)
	stagedSoftmaxOf[cuda.BFloat16](t, e)
	stagedSoftmaxOf[float32](t, e)
	stagedSoftmaxOf[float64](t, e)
}

func stagedSoftmaxOf[T cuda.AnyFloat](t *testing.T, e env) {
	t.Helper()
	size := int(unsafe.Sizeof(*new(T)))
	reached := map[string]int{}
	t.Run(fmt.Sprintf("%T", *new(T)), func(t *testing.T) {
		for _, rows := range softmaxSweepRows {
			for _, cols := range softmaxSweepCols {
				if rows > 9 && cols > 257 {
					continue
				}
				sh := compute.Shape{Rows: rows, Cols: cols}
				for _, v := range softmaxSweepViews {
					wide := (v.src*size)%16 == 0 && (v.dst < 0 || (v.dst*size)%16 == 0)
					kind, group := compute.SoftmaxKernel(t, e.s, rows, cols, size, wide)
					if kind == "" {
						kind = map[int]string{32: "gocuda_short", 0: "a block a row"}[group]
					}
					if kind != "_staged" && kind != "_chunks" { // gocuda_loadv's: of 16 bytes, or of an element
						kind += map[bool]string{true: " by vectors", false: " by elements"}[wide && cols%(16/size) == 0]
					}
					reached[kind]++
					name := fmt.Sprintf("%v/src+%d/dst+%d/%s", sh, v.src, v.dst, kind)
					if v.dst < 0 {
						name = fmt.Sprintf("%v/in place+%d/%s", sh, v.src, kind)
					}
					t.Run(name, func(t *testing.T) { checkStagedSoftmax[T](t, e, sh, v.src, v.dst) })
				}
			}
		}
		t.Logf("kernels reached (cases): %v", reached)
		for _, k := range []string{"_staged", "_regs"} {
			if !slices.ContainsFunc(mapKeysOf(reached), func(s string) bool { return strings.HasPrefix(s, k) }) {
				t.Errorf("the sweep reached no %s kernel", k)
			}
		}
	})
}

func mapKeysOf[V any](m map[string]V) []string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}

// softmaxSweepRowsOf returns the rows×cols matrix of the Softmax sweep.
func softmaxSweepRowsOf[T cuda.AnyFloat](rows, cols int) []T {
	rng := rand.New(rand.NewPCG(uint64(rows), uint64(cols)))
	x := make([]T, rows*cols)
	for i := range x {
		x[i] = fromF[T](4*rng.Float64() - 2)
	}
	if rows >= 6 {
		set := func(r, c int, v float64) { x[r*cols+c] = fromF[T](v) }
		set(1, cols-1, math.NaN())
		for c := range cols {
			set(2, c, math.Inf(-1))
		}
		set(3, 0, math.Inf(-1))
		set(3, cols-1, math.Inf(-1))
		set(4, cols/2, math.Inf(1))
	}
	return x
}

// ulpOf returns the unit in the last place of T at x's magnitude.
func ulpOf[T cuda.AnyFloat](x float64) float64 {
	var bits, least int // fraction bits, the least exponent of a normal
	switch any(*new(T)).(type) {
	case float64:
		bits, least = 52, -1022
	case float32:
		bits, least = 23, -126
	case cuda.Float16:
		bits, least = 10, -14
	case cuda.BFloat16:
		bits, least = 7, -126
	}
	_, exp := math.Frexp(math.Abs(x)) // |x| in [2^(exp-1), 2^exp)
	return math.Ldexp(1, max(exp-1, least)-bits)
}

// checkStagedSoftmax checks Softmax and LogSoftmax of sh's sweep rows from
// a view srcOff elements into a buffer into one dstOff elements in (-1:
// in place).
func checkStagedSoftmax[T cuda.AnyFloat](t *testing.T, e env, sh compute.Shape, srcOff, dstOff int) {
	t.Helper()
	n := sh.Rows * sh.Cols
	x := softmaxSweepRowsOf[T](sh.Rows, sh.Cols)
	eps := 0x1p-24 // the computation's: float for float32 and the halves
	if unsafe.Sizeof(*new(T)) == 8 {
		eps = 0x1p-53
	}
	src, dst, free := buffersAt[T](t, e, n, srcOff, dstOff)
	defer free()
	wants, lwants := make([][]float64, sh.Rows), make([][]float64, sh.Rows)
	for r := range sh.Rows {
		wants[r], lwants[r] = softmaxWant(x[r*sh.Cols : (r+1)*sh.Cols])
	}
	for k, op := range []func(dst, src *cuda.DeviceBuffer[T], sh compute.Shape, s *cuda.Stream) error{compute.Softmax[T], compute.LogSoftmax[T]} {
		name := []string{"Softmax", "LogSoftmax"}[k]
		if err := src.CopyFromHost(x); err != nil {
			t.Fatal(err)
		}
		if err := op(dst, src, sh, e.s); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got := cudatest.Download(t, dst)
		bad := 0
		for r := range sh.Rows {
			for c := range sh.Cols {
				want := []float64{wants[r][c], lwants[r][c]}[k]
				g := toF(got[r*sh.Cols+c])
				// Half a unit of T's rounding, and the computation's
				// units: of the result for Softmax, of the operands
				// (x, the largest, the log of the sum, each within a
				// few of the result's magnitude) for LogSoftmax.
				tol := ulpOf[T](want)/2 + 32*eps*math.Abs(want)
				if k == 1 {
					tol = ulpOf[T](want)/2 + 64*eps*(1+math.Abs(want))
				}
				switch {
				case math.IsNaN(want) || math.IsInf(want, 0):
					if math.IsNaN(want) != math.IsNaN(g) || !math.IsNaN(want) && g != want {
						t.Errorf("%s %v: [%d,%d] = %v, want %v", name, sh, r, c, g, want)
						bad++
					}
				case math.Abs(g-want) > tol:
					t.Errorf("%s %v: [%d,%d] = %v, want %v (within %.3g)", name, sh, r, c, g, want, tol)
					bad++
				}
				if bad >= 5 {
					t.FailNow()
				}
			}
		}
	}
}

// skipSweep skips a sweep of kernel logic under the race detector, which
// watches Go's memory, not a kernel's, and makes the sweep minutes long.
func skipSweep(t *testing.T) {
	t.Helper()
	if raceEnabled {
		t.Skip("a sweep of kernel logic: run without -race")
	}
}
