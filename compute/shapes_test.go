package compute_test

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"unsafe"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/compute"
	"github.com/gocuda/cuda/internal/cudatest"
)

// The layouts' boundaries (layout.go, ops_rows.go), crossed on both sides
// against float64 on the host, where the other tests cross each one only
// with both buffers alike. For a type of V elements in 16 bytes:
//
//   - Softmax: a thread a row (staged) up to 2V elements, then lanes of a
//     warp holding the row in registers (_regsE), by 16-byte vectors
//     where the row's length is a multiple of V and both buffers are
//     aligned for them, else element by element; 32 lanes from 32V + 1;
//     a lane's vectors doubling at each 32·2^k elements (k ≥ 0), up to
//     groupCols (2048; float64's 1024, past which the three passes of
//     gocuda_short), then a block a row, which keeps the row in shared
//     memory up to 44 KiB (11264 float32), a few rows (≤ sms/2) longer
//     than 65536 cut into chunks;
//   - the buffers: src aligned and dst not, dst aligned and src not,
//     both three elements in, and in place (dst is src) aligned or not.
func TestShapesSoftmaxAlignment(t *testing.T) {
	e := gpu(t)
	softmaxAlignmentOf[float32](t, e, 2e-6)
	softmaxAlignmentOf[float64](t, e, 1e-13)
	softmaxAlignmentOf[cuda.Float16](t, e, 2e-3)
	softmaxAlignmentOf[cuda.BFloat16](t, e, 1.6e-2)
}

// softmaxBoundaries returns the row lengths at each boundary of a type
// of v elements in 16 bytes, and one either side.
func softmaxBoundaries(v int) []int {
	out := []int{1, 2, v - 1, v, 2 * v, 2*v + 1, 4 * v, 4*v + 1, 32 * v, 32*v + 1, 64 * v, 64*v + 1, 1023, 1024, 1025, 2047, 2048, 2049}
	return append(out, (44<<10)/(16/v), (44<<10)/(16/v)+1) // the longest row kept in 44 KiB of shared memory, and one more
}

func softmaxAlignmentOf[T cuda.AnyFloat](t *testing.T, e env, tol float64) {
	size := int(unsafe.Sizeof(*new(T)))
	v := 16 / size
	t.Run(fmt.Sprintf("%T", *new(T)), func(t *testing.T) {
		var shapes []compute.Shape
		for _, cols := range softmaxBoundaries(v) {
			shapes = append(shapes, compute.Shape{Rows: 3, Cols: cols})
			if cols <= 64 { // lanes of a row: rows of more than one block
				shapes = append(shapes, compute.Shape{Rows: 129, Cols: cols})
			}
		}
		// A few long rows, cut into chunks (the fake has 4
		// multiprocessors: 2 rows or fewer).
		shapes = append(shapes, compute.Shape{Rows: 1, Cols: 65536 + 1}, compute.Shape{Rows: 2, Cols: 65536 + v})
		for _, sh := range shapes {
			for _, off := range []struct {
				src, dst int // elements into their buffers; dst -1: in place (dst is src)
			}{{0, 1}, {1, 0}, {3, 3}, {0, -1}, {1, -1}} {
				name := fmt.Sprintf("%v src+%d dst+%d", sh, off.src, off.dst)
				if off.dst < 0 {
					name = fmt.Sprintf("%v in place at +%d", sh, off.src)
				}
				checkSoftmaxAt[T](t, e, sh, off.src, off.dst, tol, name)
				if t.Failed() {
					return
				}
			}
		}
	})
}

// checkSoftmaxAt checks Softmax and LogSoftmax of random rows of sh
// read from a view srcOff elements into a buffer and written to one
// dstOff elements in (or in place, dstOff -1).
func checkSoftmaxAt[T cuda.AnyFloat](t *testing.T, e env, sh compute.Shape, srcOff, dstOff int, tol float64, name string) {
	t.Helper()
	n := sh.Rows * sh.Cols
	x := randoms[T](n, -20, 20)
	src, dst, free := buffersAt[T](t, e, n, srcOff, dstOff)
	defer free()
	for k, op := range []func(dst, src *cuda.DeviceBuffer[T], sh compute.Shape, s *cuda.Stream) error{compute.Softmax[T], compute.LogSoftmax[T]} {
		if err := src.CopyFromHost(x); err != nil {
			t.Fatal(err)
		}
		if err := op(dst, src, sh, e.s); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got := cudatest.Download(t, dst)
		for r := range sh.Rows {
			want, lwant := softmaxWant(x[r*sh.Cols : (r+1)*sh.Cols])
			for c := range sh.Cols {
				g := toF(got[r*sh.Cols+c])
				if k == 0 && math.Abs(g-want[c]) > tol*math.Max(want[c], 1e-3)*4 {
					t.Fatalf("Softmax %s: [%d,%d] = %v, want %v", name, r, c, g, want[c])
				}
				if k == 1 && !nearLog[T](g, lwant[c], tol) {
					t.Fatalf("LogSoftmax %s: [%d,%d] = %v, want %v", name, r, c, g, lwant[c])
				}
			}
		}
	}
}

// nearLog reports whether a LogSoftmax result got is want, rounded to T,
// within tol of its magnitude (or 1): infinities and NaNs exactly.
func nearLog[T cuda.AnyFloat](got, want, tol float64) bool {
	w := toF(fromF[T](want))
	switch {
	case math.IsNaN(w) || math.IsNaN(got):
		return math.IsNaN(w) && math.IsNaN(got)
	case math.IsInf(w, 0) || math.IsInf(got, 0):
		return got == w
	}
	return math.Abs(got-w) <= tol*4*math.Max(1, math.Abs(w))
}

// TestShapesSoftmaxSpecial: rows of special values in each of Softmax's
// kernels (staged, in registers by vectors and by elements, gocuda_short,
// a block a row, chunks): all equal, magnitudes near T's largest (whose
// differences overflow to -Inf), values too close to tell apart, a +Inf
// among numbers, a -Inf, only infinities of both signs, a NaN first and
// a NaN last (in the elements after the last whole vector), against
// softmaxWant (NaN where it is: a NaN's row is NaN).
func TestShapesSoftmaxSpecial(t *testing.T) {
	e := gpu(t)
	softmaxSpecialOf[float32](t, e, 3.4e38, 2e-6)
	softmaxSpecialOf[float64](t, e, 1.7e308, 1e-13)
	softmaxSpecialOf[cuda.Float16](t, e, 65504, 2e-3)
	softmaxSpecialOf[cuda.BFloat16](t, e, 3.3e38, 1.6e-2)
}

// specialRows are the rows of TestShapesSoftmaxSpecial of cols elements,
// big T's largest magnitude.
func specialRows[T cuda.AnyFloat](cols int, big float64) map[string][]T {
	fill := func(f func(c int) float64) []T {
		row := make([]T, cols)
		for c := range row {
			row[c] = fromF[T](f(c))
		}
		return row
	}
	random := randoms[float64](cols, -20, 20)
	return map[string][]T{
		"all equal": fill(func(int) float64 { return 7 }),
		"huge":      fill(func(c int) float64 { return big * (random[c] / 20) }),
		"largest":   fill(func(c int) float64 { return []float64{big, -big}[c%2] }),
		"tiny":      fill(func(c int) float64 { return 1e-30 * random[c] }),
		"+Inf":      fill(func(c int) float64 { return []float64{random[c], math.Inf(1)}[boolInt(c == cols/2)] }),
		"-Inf":      fill(func(c int) float64 { return []float64{random[c], math.Inf(-1)}[boolInt(c == cols-1)] }),
		"±Inf":      fill(func(c int) float64 { return math.Inf(1 - 2*(c%2)) }),
		"NaN first": fill(func(c int) float64 { return []float64{random[c], math.NaN()}[boolInt(c == 0)] }),
		"NaN last":  fill(func(c int) float64 { return []float64{random[c], math.NaN()}[boolInt(c == cols-1)] }),
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func softmaxSpecialOf[T cuda.AnyFloat](t *testing.T, e env, big, tol float64) {
	v := 16 / int(unsafe.Sizeof(*new(T)))
	t.Run(fmt.Sprintf("%T", *new(T)), func(t *testing.T) {
		for _, cols := range []int{1, 2, v, 2*v + 1, 4 * v, 32*v + 1, 1000, 1025, 2049, 65537} {
			rows := specialRows[T](cols, big)
			for name, row := range rows {
				// Row 0 random, row 1 the special one: two rows,
				// so that 65537 is cut into chunks.
				x := append(randoms[T](cols, -20, 20), row...)
				sh := compute.Shape{Rows: 2, Cols: cols}
				src := cudatest.Upload(t, e.ctx, x)
				dst := must(cuda.Alloc[T](e.ctx, len(x)))(t)
				for k, op := range []func(dst, src *cuda.DeviceBuffer[T], sh compute.Shape, s *cuda.Stream) error{compute.Softmax[T], compute.LogSoftmax[T]} {
					if err := op(dst, src, sh, e.s); err != nil {
						t.Fatal(err)
					}
					got := cudatest.Download(t, dst)
					for r := range 2 {
						want, lwant := softmaxWant(x[r*cols : (r+1)*cols])
						for c := range cols {
							g := toF(got[r*cols+c])
							if k == 0 && (math.IsNaN(g) != math.IsNaN(want[c]) || math.Abs(g-want[c]) > tol*math.Max(want[c], 1e-3)*4) {
								t.Fatalf("Softmax of %d %q: [%d,%d] = %v, want %v", cols, name, r, c, g, want[c])
							}
							if k == 1 && !nearLog[T](g, lwant[c], tol) {
								t.Fatalf("LogSoftmax of %d %q: [%d,%d] = %v, want %v", cols, name, r, c, g, lwant[c])
							}
						}
					}
				}
				dst.Free()
				src.Free()
			}
		}
	})
}

// reductionShapes cross the reductions' layouts on the fake driver (4
// multiprocessors, 32 resident blocks) and hold the same shapes' other
// layouts on a GPU: rows by lanes of a warp (3×5), a block a row (5×2049),
// rows cut into chunks (2×65537, 1×70001); columns narrow in one block
// (3×5) and in several (10913×3: more than 32 steps of 341 rows), a few
// rows down each column (5×2049, 32×33), 16 bytes of columns a thread
// (_colsv: 300×40, chunks of rows; 40×127), one column a thread (_cols:
// 40×200, 600×130, chunks of rows) and one column (70001×1: a row).
var reductionShapes = []compute.Shape{{Rows: 3, Cols: 5}, {Rows: 5, Cols: 2049}, {Rows: 2, Cols: 65537}, {Rows: 1, Cols: 70001},
	{Rows: 10913, Cols: 3}, {Rows: 32, Cols: 33}, {Rows: 33, Cols: 32}, {Rows: 300, Cols: 40}, {Rows: 40, Cols: 127},
	{Rows: 40, Cols: 200}, {Rows: 600, Cols: 130}, {Rows: 70001, Cols: 1}}

// TestShapesReductionSpecials: SumAxis, MaxAxis, MinAxis and MeanAxis
// per row and per column, and Sum, MaxOf, MinOf and Mean of the whole,
// of every reductionShapes shape holding a NaN, a +Inf and a -Inf (each
// in its own row and column where the shape has them), from an aligned
// buffer and a view one element in: a NaN's row and column are NaN
// (max, min, sum, mean: MaxOf's documented "a NaN if src has one"), an
// infinity's its sign's, the others float64's within the fold's rounding.
func TestShapesReductionSpecials(t *testing.T) {
	e := gpu(t)
	reductionSpecialsOf(t, e, 2e-6, compute.MeanAxis[float32], compute.Mean[float32])
	reductionSpecialsOf(t, e, 1e-14, compute.MeanAxis[float64], compute.Mean[float64])
	reductionSpecialsOf(t, e, 2e-6, compute.MeanAxis[cuda.Float16], compute.Mean[cuda.Float16])
}

func reductionSpecialsOf[T cuda.AnyFloat](t *testing.T, e env, acc float64, meanAxis meanAxis[T], mean func(dst, src *cuda.DeviceBuffer[T], s *cuda.Stream) error) {
	t.Run(fmt.Sprintf("%T", *new(T)), func(t *testing.T) {
		for i, sh := range reductionShapes {
			n := sh.Rows * sh.Cols
			x := randoms[T](n, -1, 1)
			// The NaN, +Inf and -Inf at (r, c), (r+1, c+1), (r+2, c+2)
			// where the shape has them, else further along the row.
			r0, c0 := sh.Rows/3, sh.Cols/2
			for k, v := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
				r, c := min(r0+k, sh.Rows-1), min(c0+k, sh.Cols-1)
				if r == r0 && c == c0 && k > 0 { // one row or one column: along it
					r, c = min(r0+k*(sh.Rows-1)/3, sh.Rows-1), min(c0+k*(sh.Cols-1)/3, sh.Cols-1)
				}
				x[r*sh.Cols+c] = fromF[T](v)
			}
			base := must(cuda.Alloc[T](e.ctx, n+1))(t)
			src := must(base.Slice(i%2, n))(t)
			if err := src.CopyFromHost(x); err != nil {
				t.Fatal(err)
			}
			for _, axis := range []compute.Axis{compute.PerRow, compute.PerColumn} {
				outer, inner, at := alongAxis(x, sh, axis)
				dst := must(cuda.Alloc[T](e.ctx, outer))(t)
				for _, op := range []struct {
					name string
					run  func() error
				}{
					{"SumAxis", func() error { return compute.SumAxis(dst, src, sh, axis, e.s) }},
					{"MaxAxis", func() error { return compute.MaxAxis(dst, src, sh, axis, e.s) }},
					{"MinAxis", func() error { return compute.MinAxis(dst, src, sh, axis, e.s) }},
					{"MeanAxis", func() error { return meanAxis(dst, src, sh, axis, e.s) }},
				} {
					if err := op.run(); err != nil {
						t.Fatalf("%s %v %v: %v", op.name, sh, axis, err)
					}
					got := cudatest.Download(t, dst)
					for o := range outer {
						want, bound := foldWant(op.name, inner, func(k int) float64 { return toF(at(o, k)) }, acc, tolerance[T]())
						if g := toF(got[o]); !sameSpecial(g, want, bound) {
							t.Fatalf("%s %v %v (view %v): %d = %v, want %v (within %g)", op.name, sh, axis, i%2 == 1, o, g, want, bound)
						}
					}
				}
				dst.Free()
			}
			whole := must(cuda.Alloc[T](e.ctx, 1))(t)
			for _, op := range []struct {
				name, fold string
				run        func(dst, src *cuda.DeviceBuffer[T], s *cuda.Stream) error
			}{{"Sum", "SumAxis", compute.Sum[T]}, {"MaxOf", "MaxAxis", compute.MaxOf[T]}, {"MinOf", "MinAxis", compute.MinOf[T]}, {"Mean", "MeanAxis", mean}} {
				if err := op.run(whole, src, e.s); err != nil {
					t.Fatalf("%s of %v: %v", op.name, sh, err)
				}
				want, bound := foldWant(op.fold, n, func(k int) float64 { return toF(x[k]) }, acc, tolerance[T]())
				if g := toF(cudatest.Download(t, whole)[0]); !sameSpecial(g, want, bound) {
					t.Fatalf("%s of %v (view %v) = %v, want %v", op.name, sh, i%2 == 1, g, want)
				}
			}
			whole.Free()
			base.Free()
		}
	})
}

// foldWant is the reduction name's result of the n values at(k) in
// float64, and the bound of the device's error: a sum's rounding per
// fold (acc) and the result's to T (out).
func foldWant(name string, n int, at func(k int) float64, acc, out float64) (want, bound float64) {
	var s, abs float64
	lo, hi := math.Inf(1), math.Inf(-1)
	nan := false
	for k := range n {
		v := at(k)
		if math.IsNaN(v) {
			nan = true
			continue
		}
		s, lo, hi = s+v, math.Min(lo, v), math.Max(hi, v)
		if !math.IsInf(v, 0) {
			abs += math.Abs(v)
		}
	}
	bound = acc*abs*math.Log2(float64(n)+2)*2 + out*math.Abs(s) + 1e-30
	switch {
	case nan:
		return math.NaN(), 0
	case name == "MaxAxis":
		return hi, 0
	case name == "MinAxis":
		return lo, 0
	case name == "MeanAxis":
		return s / float64(n), bound/float64(n) + out*math.Abs(s/float64(n))
	}
	return s, bound
}

// sameSpecial reports whether got is want: NaN for NaN, an infinity
// exactly, a number within bound.
func sameSpecial(got, want, bound float64) bool {
	switch {
	case math.IsNaN(want) || math.IsNaN(got):
		return math.IsNaN(want) && math.IsNaN(got)
	case math.IsInf(want, 0) || math.IsInf(got, 0):
		return got == want
	}
	return math.Abs(got-want) <= bound
}

// TestShapesArgMax: ArgMax and ArgMin at the lengths their kernels change
// at (vectors of 16 bytes and the elements after the last, one block up
// to 32768 elements, then a block per 16 KiB folded by the last), from
// views 0 to 3 elements in, of rows whose answer a tree could get wrong:
// all equal (0), the best only last (in the elements after the vectors),
// the best twice (the first), infinities of the other sign everywhere
// but the first and NaNs (the first NaN), the type's extremes for
// integers.
func TestShapesArgMax(t *testing.T) {
	e := gpu(t)
	argMaxOf[float32](t, e)
	argMaxOf[float64](t, e)
	argMaxOf[cuda.Float16](t, e)
	argMaxOf[int8](t, e)
	argMaxOf[uint64](t, e)
}

func argMaxOf[T cuda.Number](t *testing.T, e env) {
	var zero T
	size := int(unsafe.Sizeof(zero))
	v := 16 / size
	float := tolerance[T]() != 0
	// lowest and highest are T's extremes (infinities for floats).
	lowest, highest := math.Inf(-1), math.Inf(1)
	if !float {
		bits := 8 * size
		switch any(zero).(type) {
		case int8, int16, int32, int64:
			lowest, highest = -math.Ldexp(1, bits-1), math.Ldexp(1, bits-1)-1
		default:
			lowest, highest = 0, math.Ldexp(1, bits)-1
		}
	}
	t.Run(fmt.Sprintf("%T", zero), func(t *testing.T) {
		out := must(cuda.Alloc[int64](e.ctx, 1))(t)
		defer out.Free()
		for _, n := range []int{1, 2, v - 1, v, v + 1, 1025, 32768, 32769} {
			if n < 1 {
				continue
			}
			type pattern struct {
				name string
				x    []T
			}
			constant := func(f float64) []T {
				x := make([]T, n)
				for i := range x {
					x[i] = fromF[T](f)
				}
				return x
			}
			with := func(x []T, at int, f float64) []T {
				x[at] = fromF[T](f)
				return x
			}
			patterns := []pattern{
				{"all equal", constant(3)},
				{"best last", with(with(constant(3), n-1, 5), max(0, n-2), 1)},
				{"best twice", with(with(with(constant(3), n/2, 5), n-1, 5), 0, 1)},
				{"extremes", with(constant(highest), n-1, lowest)},
				{"extremes first", with(constant(lowest), 0, highest)},
			}
			if float {
				patterns = append(patterns, pattern{"NaNs", with(with(constant(1), n-1, math.NaN()), n/2, math.NaN())},
					pattern{"all -Inf", constant(math.Inf(-1))})
			}
			for _, p := range patterns {
				for off := range min(4, 2+16/n) { // 0 to 3 elements in; long ones 0 and 1

					base := must(cuda.Alloc[T](e.ctx, n+off))(t)
					src := must(base.Slice(off, n))(t)
					if err := src.CopyFromHost(p.x); err != nil {
						t.Fatal(err)
					}
					for _, op := range []struct {
						name string
						run  func(*cuda.DeviceBuffer[int64], *cuda.DeviceBuffer[T], *cuda.Stream) error
						want int64
					}{{"ArgMax", compute.ArgMax[T], firstBest(p.x, 1)}, {"ArgMin", compute.ArgMin[T], firstBest(p.x, -1)}} { // the host's: the first best, a NaN first
						if err := op.run(out, src, e.s); err != nil {
							t.Fatal(err)
						}
						if got := cudatest.Download(t, out)[0]; got != op.want {
							t.Fatalf("%s of %d %s from +%d: %d, want %d", op.name, n, p.name, off, got, op.want)
						}
					}
					base.Free()
				}
			}
		}
	})
}

// firstBest is NumPy's argmax (sign 1) or argmin (-1) of x: the first
// NaN, else the first of the largest (smallest).
func firstBest[T cuda.Number](x []T, sign float64) int64 {
	best := 0
	for i, v := range x {
		f, b := toF(v), toF(x[best])
		switch {
		case math.IsNaN(b):
			return int64(best)
		case math.IsNaN(f) || sign*f > sign*b:
			best = i
		}
	}
	return int64(best)
}

// TestShapesEmpty: a reduction of nothing is its identity's post-map (a
// sum 0, a max the type's lowest, a min its highest, a mean NaN), per
// row of rows of no elements and per column of columns of no rows as of
// the whole; Softmax of no rows or no columns does nothing; ArgMax of
// nothing is an error.
func TestShapesEmpty(t *testing.T) {
	e := gpu(t)
	src := must(cuda.Alloc[float32](e.ctx, 1))(t)
	defer src.Free()
	empty := must(src.Slice(0, 0))(t)
	dst := must(cuda.Alloc[float32](e.ctx, 200))(t)
	defer dst.Free()
	for _, tc := range []struct {
		sh   compute.Shape
		axis compute.Axis
	}{{compute.Shape{Rows: 5, Cols: 0}, compute.PerRow}, {compute.Shape{Rows: 0, Cols: 5}, compute.PerColumn},
		{compute.Shape{Rows: 1, Cols: 0}, compute.PerRow}, {compute.Shape{Rows: 0, Cols: 1}, compute.PerColumn},
		{compute.Shape{Rows: 0, Cols: 40}, compute.PerColumn}, {compute.Shape{Rows: 0, Cols: 200}, compute.PerColumn}} {
		for _, op := range []struct {
			name string
			run  func(dst, src *cuda.DeviceBuffer[float32], sh compute.Shape, axis compute.Axis, s *cuda.Stream) error
			want float64
		}{{"SumAxis", compute.SumAxis[float32], 0}, {"MaxAxis", compute.MaxAxis[float32], math.Inf(-1)},
			{"MinAxis", compute.MinAxis[float32], math.Inf(1)}, {"MeanAxis", compute.MeanAxis[float32], math.NaN()}} {
			outs := max(tc.sh.Rows, tc.sh.Cols)
			d := must(dst.Slice(0, outs))(t)
			if err := compute.Fill(d, 42, e.s); err != nil {
				t.Fatal(err)
			}
			if err := op.run(d, empty, tc.sh, tc.axis, e.s); err != nil {
				t.Fatalf("%s %v %v: %v", op.name, tc.sh, tc.axis, err)
			}
			for o, g := range cudatest.Download(t, d) {
				if !sameSpecial(float64(g), op.want, 0) {
					t.Errorf("%s %v %v: %d = %v, want %v", op.name, tc.sh, tc.axis, o, g, op.want)
				}
			}
		}
	}
	one := must(dst.Slice(0, 1))(t)
	for _, op := range []struct {
		name string
		run  func(dst, src *cuda.DeviceBuffer[float32], s *cuda.Stream) error
		want float64
	}{{"Sum", compute.Sum[float32], 0}, {"MaxOf", compute.MaxOf[float32], math.Inf(-1)}, {"MinOf", compute.MinOf[float32], math.Inf(1)}, {"Mean", compute.Mean[float32], math.NaN()}} {
		if err := op.run(one, empty, e.s); err != nil {
			t.Fatalf("%s of nothing: %v", op.name, err)
		}
		if g := cudatest.Download(t, one)[0]; !sameSpecial(float64(g), op.want, 0) {
			t.Errorf("%s of nothing = %v, want %v", op.name, g, op.want)
		}
	}
	for _, sh := range []compute.Shape{{Rows: 0, Cols: 7}, {Rows: 7, Cols: 0}, {Rows: 0, Cols: 0}} {
		if err := compute.Softmax(empty, empty, sh, e.s); err != nil {
			t.Errorf("Softmax %v: %v", sh, err)
		}
	}
	index := must(cuda.Alloc[int64](e.ctx, 1))(t)
	defer index.Free()
	if err := compute.ArgMax(index, empty, e.s); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("ArgMax of nothing: %v, want an error wrapping ErrInvalidValue", err)
	}
}

// TestShapesH200Layouts runs the H200's layouts (132 multiprocessors,
// 227 KiB of shared memory a block may opt in to) wherever the tests run,
// so that the fake driver computes the layouts a GPU takes at these
// shapes: rows cut into 9 and 13 chunks; blocks of 1024 threads a row,
// Softmax keeping its row in opted-in shared memory up to 227 KiB less
// 1 KiB (57856 float32, 28928 float64, 115712 float16) and not past it;
// narrow columns in several blocks; columns in more chunks of rows than
// their last block folds (a second kernel folds them), 16 bytes of
// columns a thread in the most chunks (256); ArgMax in tens of blocks.
// Every other shape from a view one element in, against float64
// (checkLayout: the reductions, ArgMax and Softmax).
func TestShapesH200Layouts(t *testing.T) {
	e := gpu(t)
	compute.SetDeviceSize(t, e.s, 132, 2048, 232448)
	layoutsOf(t, e, 2e-6, &floatOps[float32]{compute.MeanAxis[float32], compute.Softmax[float32]},
		[]compute.Shape{{Rows: 1, Cols: 65537}, {Rows: 2, Cols: 100003}, {Rows: 3, Cols: 20000}, {Rows: 2, Cols: 57856}, {Rows: 2, Cols: 57857},
			{Rows: 11000, Cols: 3}, {Rows: 8193, Cols: 128}, {Rows: 2049, Cols: 41}, {Rows: 33000, Cols: 33}}, 100)
	layoutsOf(t, e, 1e-14, &floatOps[float64]{compute.MeanAxis[float64], compute.Softmax[float64]},
		[]compute.Shape{{Rows: 1, Cols: 28928}, {Rows: 1, Cols: 28929}, {Rows: 4099, Cols: 33}}, 100)
	layoutsOf(t, e, 2e-6, &floatOps[cuda.Float16]{compute.MeanAxis[cuda.Float16], compute.Softmax[cuda.Float16]},
		[]compute.Shape{{Rows: 1, Cols: 65536}, {Rows: 1, Cols: 65537}, {Rows: 2049, Cols: 128}, {Rows: 3000, Cols: 33}}, 100)
	layoutsOf[int8](t, e, 0, nil, []compute.Shape{{Rows: 2049, Cols: 200}, {Rows: 3, Cols: 70001}}, 100)
}

// TestShapesReductionIndex: a Reduction whose map reads the element's
// index i and a scalar (x + k·i, summed exactly in int64) per row, per
// column and of the whole, in every layout of reductionShapes and of one
// row and one column, from an aligned buffer and views one to three
// elements in: i is the element's index in the whole matrix in every
// layout, by vectors and one by one.
func TestShapesReductionIndex(t *testing.T) {
	e := gpu(t)
	r := must(compute.NewReduction(compute.ReductionSpec{Name: "xki", InParams: "int32 x, int64 k", OutParams: "int64 y",
		MapExpr: "x + k * i", ReduceExpr: "a + b", PostMapExpr: "y = a", Identity: "0", ReduceType: "int64"}))(t)
	const k = 3
	shapes := append([]compute.Shape{{Rows: 1, Cols: 1}, {Rows: 7, Cols: 1}, {Rows: 1, Cols: 7}, {Rows: 2, Cols: 2}}, reductionShapes...)
	for j, sh := range shapes {
		n := sh.Rows * sh.Cols
		x := randoms[int32](n, -1000, 1000)
		off := j % 4
		base := must(cuda.Alloc[int32](e.ctx, n+off))(t)
		src := must(base.Slice(off, n))(t)
		if err := src.CopyFromHost(x); err != nil {
			t.Fatal(err)
		}
		for _, axis := range []compute.Axis{compute.PerRow, compute.PerColumn} {
			outer, inner, _ := alongAxis(x, sh, axis)
			want := make([]int64, outer)
			for i, v := range x {
				o := i / sh.Cols
				if axis == compute.PerColumn {
					o = i % sh.Cols
				}
				want[o] += int64(v) + k*int64(i)
			}
			dst := must(cuda.Alloc[int64](e.ctx, outer))(t)
			if err := r.LaunchAxis(e.s, sh, axis, src, int64(k), dst); err != nil {
				t.Fatalf("%v %v: %v", sh, axis, err)
			}
			got := cudatest.Download(t, dst)
			for o := range outer {
				if got[o] != want[o] {
					t.Fatalf("%v %v from +%d: %d = %d, want %d (of %d elements)", sh, axis, off, o, got[o], want[o], inner)
				}
			}
			dst.Free()
		}
		var whole int64
		for i, v := range x {
			whole += int64(v) + k*int64(i)
		}
		one := must(cuda.Alloc[int64](e.ctx, 1))(t)
		if err := r.Launch(e.s, src, int64(k), one); err != nil {
			t.Fatal(err)
		}
		if got := cudatest.Download(t, one)[0]; got != whole {
			t.Fatalf("the whole %v from +%d: %d, want %d", sh, off, got, whole)
		}
		one.Free()
		base.Free()
	}
}

// TestShapesCapture captures each Softmax kernel (staged, in registers by
// vectors and by elements, a block a row, chunks), column sums of 16
// bytes of columns a thread in chunks of rows, narrow columns in several
// blocks, rows of lanes and of a block, and ArgMax of one block and of
// several, with the fake's layouts and the H200's (opted-in shared
// memory, columns folded by a second kernel): the graph's launch gives
// the same bits as the calls outside the capture, which fold their
// partial results in the stream's scratch.
func TestShapesCapture(t *testing.T) {
	e := gpu(t)
	for _, h200 := range []bool{false, true} {
		t.Run(fmt.Sprintf("h200 %v", h200), func(t *testing.T) {
			if h200 {
				compute.SetDeviceSize(t, e.s, 132, 2048, 232448)
			}
			const n = 70001
			x := cudatest.Upload(t, e.ctx, randoms[float32](n, -5, 5))
			defer x.Free()
			view := must(x.Slice(1, n-1))(t)
			type call struct {
				name string
				out  *cuda.DeviceBuffer[float32]
				run  func(out *cuda.DeviceBuffer[float32]) error
			}
			softmax := func(sh compute.Shape, src *cuda.DeviceBuffer[float32]) func(*cuda.DeviceBuffer[float32]) error {
				return func(out *cuda.DeviceBuffer[float32]) error {
					return compute.Softmax(must(out.Slice(0, sh.Rows*sh.Cols))(t), must(src.Slice(0, sh.Rows*sh.Cols))(t), sh, e.s)
				}
			}
			axis := func(sh compute.Shape, a compute.Axis, src *cuda.DeviceBuffer[float32]) func(*cuda.DeviceBuffer[float32]) error {
				return func(out *cuda.DeviceBuffer[float32]) error {
					outs := sh.Rows
					if a == compute.PerColumn {
						outs = sh.Cols
					}
					return compute.SumAxis(must(out.Slice(0, outs))(t), must(src.Slice(0, sh.Rows*sh.Cols))(t), sh, a, e.s)
				}
			}
			calls := []call{
				{"Softmax staged", nil, softmax(compute.Shape{Rows: 300, Cols: 5}, x)},
				{"Softmax regs wide", nil, softmax(compute.Shape{Rows: 129, Cols: 32}, x)},
				{"Softmax regs narrow", nil, softmax(compute.Shape{Rows: 129, Cols: 33}, view)},
				{"Softmax block", nil, softmax(compute.Shape{Rows: 3, Cols: 20000}, x)},
				{"Softmax chunks", nil, softmax(compute.Shape{Rows: 1, Cols: 70000}, view)},
				{"SumAxis colsv", nil, axis(compute.Shape{Rows: 2049, Cols: 33}, compute.PerColumn, x)},
				{"SumAxis cols", nil, axis(compute.Shape{Rows: 513, Cols: 130}, compute.PerColumn, view)},
				{"SumAxis narrow", nil, axis(compute.Shape{Rows: 11000, Cols: 3}, compute.PerColumn, x)},
				{"SumAxis rows", nil, axis(compute.Shape{Rows: 5, Cols: 2049}, compute.PerRow, x)},
				{"SumAxis split", nil, axis(compute.Shape{Rows: 1, Cols: 70000}, compute.PerRow, view)},
			}
			for i := range calls {
				calls[i].out = must(cuda.Zeroed[float32](e.ctx, n))(t) // zeros past what the call writes
				defer calls[i].out.Free()
			}
			index := must(cuda.Alloc[int64](e.ctx, 2))(t)
			defer index.Free()
			record := func() error {
				for _, c := range calls {
					if err := c.run(c.out); err != nil {
						return fmt.Errorf("%s: %w", c.name, err)
					}
				}
				if err := compute.ArgMax(must(index.Slice(0, 1))(t), must(x.Slice(0, 1000))(t), e.s); err != nil {
					return err
				}
				return compute.ArgMin(must(index.Slice(1, 1))(t), view, e.s)
			}
			if err := record(); err != nil {
				t.Fatal(err)
			}
			want := make([][]float32, len(calls))
			for i, c := range calls {
				want[i] = cudatest.Download(t, c.out)
				if err := compute.Fill(c.out, 0, e.s); err != nil {
					t.Fatal(err)
				}
			}
			wantIndex := cudatest.Download(t, index)
			if err := compute.Fill(index, -1, e.s); err != nil {
				t.Fatal(err)
			}
			g := must(e.s.Capture(cuda.CaptureGlobal, record))(t)
			defer g.Close()
			exec := must(g.Instantiate())(t)
			defer exec.Close()
			if err := exec.Launch(e.s); err != nil {
				t.Fatal(err)
			}
			if err := e.s.Synchronize(); err != nil { // a copy waits for the calls that wrote a buffer, not for a graph
				t.Fatal(err)
			}
			for i, c := range calls {
				if got := cudatest.Download(t, c.out); !bytes.Equal(rawBytes(got), rawBytes(want[i])) {
					for k := range got {
						if math.Float32bits(got[k]) != math.Float32bits(want[i][k]) {
							t.Errorf("%s: the graph's bits are not the call's: [%d] = %v, outside %v", c.name, k, got[k], want[i][k])
							break
						}
					}
				}
			}
			if got := cudatest.Download(t, index); got[0] != wantIndex[0] || got[1] != wantIndex[1] {
				t.Errorf("ArgMax, ArgMin in the graph: %v, outside it %v", got, wantIndex)
			}
		})
	}
}

// TestShapesOverlap: Softmax may write its result over src, and into
// memory apart from it, but not over part of it (dst a view a few
// elements into src's buffer: the rows' reads and writes would race);
// Transpose's dst may not share memory with src at all: each is an
// error wrapping ErrInvalidValue, before anything is launched. Views
// side by side in one buffer are apart.
func TestShapesOverlap(t *testing.T) {
	e := gpu(t)
	sh := compute.Shape{Rows: 9, Cols: 33}
	n := sh.Rows * sh.Cols
	base := must(cuda.Zeroed[float32](e.ctx, 2*n+3))(t)
	defer base.Free()
	at := func(off int) *cuda.DeviceBuffer[float32] { return must(base.Slice(off, n))(t) }
	for _, tc := range []struct {
		dst, src int // elements into base
		softmax  bool
		tr       bool // whether each may be called
	}{
		{0, 0, true, false}, {1, 0, false, false}, {0, 3, false, false}, {n - 1, 0, false, false}, {0, n - 1, false, false},
		{n, 0, true, true}, {0, n, true, true}, {n + 3, 2, true, true},
	} {
		dst, src := at(tc.dst), at(tc.src)
		for _, op := range []struct {
			name string
			ok   bool
			run  func() error
		}{
			{"Softmax", tc.softmax, func() error { return compute.Softmax(dst, src, sh, e.s) }},
			{"LogSoftmax", tc.softmax, func() error { return compute.LogSoftmax(dst, src, sh, e.s) }},
			{"Transpose", tc.tr, func() error { return compute.Transpose(dst, src, sh, e.s) }},
		} {
			err := op.run()
			switch {
			case op.ok && err != nil:
				t.Errorf("%s of dst +%d, src +%d: %v", op.name, tc.dst, tc.src, err)
			case !op.ok && (!errors.Is(err, cuda.ErrInvalidValue) || !strings.Contains(fmt.Sprint(err), "compute: "+op.name+": invalid value: dst")):
				t.Errorf("%s of dst +%d, src +%d (%d elements each): %v, want an error wrapping ErrInvalidValue that names dst", op.name, tc.dst, tc.src, n, err)
			}
		}
	}
}

// TestShapesOverlapElementwise: an output may be an input itself (in
// place: each element read, then written, by one thread), or memory apart
// from the others, but not part of another buffer of the launch, nor an
// input of another element size at its address (a Cast of float32 to
// float16 in place writes elements another thread has yet to read); a
// reduction's output shares none with its inputs (raw parameters are the
// operation's to keep apart). Each is an error wrapping ErrInvalidValue that
// names both, before anything is launched; the allowed ones compute.
func TestShapesOverlapElementwise(t *testing.T) {
	e := gpu(t)
	const n = 1000
	base := must(cuda.Zeroed[float32](e.ctx, 2*n+8))(t)
	defer base.Free()
	at := func(off, k int) *cuda.DeviceBuffer[float32] { return must(base.Slice(off, k))(t) }
	halves := must(cuda.Zeroed[cuda.Float16](e.ctx, n))(t)
	defer halves.Free()
	same := must(must(cuda.ViewAs[cuda.Float16](at(0, n/2)))(t).Slice(0, n))(t) // base's first n/2 float32s as n halves
	gather := must(compute.NewElementwise(compute.ElementwiseSpec{Name: "gather1", InParams: "raw float32 x", OutParams: "float32 y", Operation: "y = x[(i + 1) % n]"}))(t)
	for _, tc := range []struct {
		name  string
		ok    bool
		names string // the two the error names
		run   func() error
	}{
		{"Add in place", true, "", func() error { return compute.Add(at(0, n), at(0, n), at(n, n), e.s) }},
		{"Add apart", true, "", func() error { return compute.Add(at(n, n), at(0, n), at(0, n), e.s) }},
		{"Add dst a shifted view of a", false, "dst, a", func() error { return compute.Add(at(1, n), at(0, n), at(n+4, n), e.s) }},
		{"Add dst a shifted view of b", false, "dst, b", func() error { return compute.Add(at(0, n), at(n+4, n), at(3, n), e.s) }},
		{"Exp dst over the end of src", false, "dst, src", func() error { return compute.Exp(at(n-1, n), at(0, n), e.s) }},
		{"Cast in place of another size", false, "dst, src", func() error { return compute.Cast(same, at(0, n), e.s) }},
		{"Cast apart", true, "", func() error { return compute.Cast(halves, at(0, n), e.s) }},
		{"gather apart", true, "", func() error { return gather.Launch(e.s, at(0, n), at(n, n)) }},
		{"Sum into src", false, "src, dst", func() error { return compute.Sum(at(5, 1), at(0, n), e.s) }},
		{"SumAxis into src", false, "src, dst", func() error {
			return compute.SumAxis(at(0, 10), at(0, n), compute.Shape{Rows: 10, Cols: n / 10}, compute.PerRow, e.s)
		}},
		{"SumAxis apart", true, "", func() error {
			return compute.SumAxis(at(n, 10), at(0, n), compute.Shape{Rows: 10, Cols: n / 10}, compute.PerRow, e.s)
		}},
	} {
		err := tc.run()
		if tc.ok {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		a, b, _ := strings.Cut(tc.names, ", ")
		msg := fmt.Sprint(err)
		if !errors.Is(err, cuda.ErrInvalidValue) || !strings.Contains(msg, a+" overlaps "+b) && !strings.Contains(msg, b+" overlaps "+a) {
			t.Errorf("%s: %v, want an error wrapping ErrInvalidValue saying %s and %s overlap", tc.name, err, a, b)
		}
	}
}

// TestShapesManyRows: 65537 rows, past a grid's 65535 and a power of
// two, of a thread a row (staged: 2 elements) and of lanes a row in
// registers (16 elements: 2 lanes, by vectors), for Softmax from aligned and offset buffers, and their sums and maxima
// per row and per column.
func TestShapesManyRows(t *testing.T) {
	e := gpu(t)
	for i, cols := range []int{2, 16} {
		sh := compute.Shape{Rows: 65537, Cols: cols}
		checkSoftmaxAt[float32](t, e, sh, i%2, 0, 2e-6, fmt.Sprint(sh))
		n := sh.Rows * sh.Cols
		x := randoms[float32](n, -1, 1)
		base := must(cuda.Alloc[float32](e.ctx, n+1))(t)
		src := must(base.Slice(1-i%2, n))(t)
		if err := src.CopyFromHost(x); err != nil {
			t.Fatal(err)
		}
		checkLayout(t, e, sh, x, src, 2e-6, nil)
		base.Free()
	}
}

// TestShapesCaptureUnloaded captures operations whose kernels this
// context has not loaded yet (the package docs ask for a call before the
// capture; a GPU may refuse to load a module while a stream captures):
// the capture either records them, and the graph computes what the calls
// do, or fails with an error that names the operation; either way the
// stream and the operations work after it.
func TestShapesCaptureUnloaded(t *testing.T) {
	e := gpu(t)
	sh := compute.Shape{Rows: 3, Cols: 100}
	x := cudatest.Upload(t, e.ctx, randoms[float64](sh.Rows*sh.Cols, -3, 3))
	defer x.Free()
	y := must(cuda.Zeroed[float64](e.ctx, sh.Rows*sh.Cols))(t)
	defer y.Free()
	sum := must(cuda.Zeroed[float64](e.ctx, sh.Cols))(t)
	defer sum.Free()
	record := func() error {
		if err := compute.LogSoftmax(y, x, sh, e.s); err != nil {
			return err
		}
		return compute.SumAxis(sum, y, sh, compute.PerColumn, e.s)
	}
	g, err := e.s.Capture(cuda.CaptureGlobal, record)
	if err == nil {
		defer g.Close()
		exec := must(g.Instantiate())(t)
		defer exec.Close()
		if err := exec.Launch(e.s); err != nil {
			t.Fatal(err)
		}
		if err := e.s.Synchronize(); err != nil {
			t.Fatal(err)
		}
	} else if msg := fmt.Sprint(err); !strings.Contains(msg, "compute: LogSoftmax: ") {
		t.Errorf("capture of kernels not loaded: %v, want an error that names LogSoftmax", err)
	} else {
		t.Logf("capture of kernels not loaded: %v", err)
	}
	inGraph := cudatest.Download(t, sum)
	if err := record(); err != nil {
		t.Fatalf("after the capture: %v", err)
	}
	if got := cudatest.Download(t, sum); err == nil && !bytes.Equal(rawBytes(got), rawBytes(inGraph)) {
		t.Errorf("the graph's column sums %v, the calls' %v", inGraph, got)
	}
}

// TestShapesIntegerColumns: column sums and maxima of the integer types
// TestLayouts and TestColumnVectors leave out, in each column layout:
// int64 (16 bytes of columns a thread: 2), int16 (8, summed in int64: the
// most shared memory a block of _colsv has, 16 KiB), uint32 (4), exact
// and wrapped as Go wraps them, from aligned buffers and views.
func TestShapesIntegerColumns(t *testing.T) {
	e := gpu(t)
	shapes := []compute.Shape{{Rows: 300, Cols: 40}, {Rows: 2049, Cols: 33}, {Rows: 33, Cols: 129}, {Rows: 7, Cols: 200}}
	layoutsOf[int64](t, e, 0, nil, shapes, 100)
	layoutsOf[int16](t, e, 0, nil, shapes, 100)
	layoutsOf[uint32](t, e, 0, nil, shapes, 100)
}

// buffersAt returns src, n elements srcOff elements into a buffer of its
// own, and dst, n elements dstOff elements into another (src itself for
// dstOff -1), and the function that frees both.
func buffersAt[T any](t *testing.T, e env, n, srcOff, dstOff int) (src, dst *cuda.DeviceBuffer[T], free func()) {
	t.Helper()
	sb := must(cuda.Alloc[T](e.ctx, n+srcOff))(t)
	src = must(sb.Slice(srcOff, n))(t)
	dst, free = src, func() { sb.Free() }
	if dstOff >= 0 {
		db := must(cuda.Alloc[T](e.ctx, n+dstOff))(t)
		dst, free = must(db.Slice(dstOff, n))(t), func() { sb.Free(); db.Free() }
	}
	return src, dst, free
}
