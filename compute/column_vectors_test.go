package compute_test

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/compute"
	"github.com/gocuda/cuda/internal/cudatest"
	"github.com/gocuda/cuda/nvrtc"
)

// Column reductions of elements narrower than 4 bytes (float16, bfloat16,
// 1- and 2-byte integers) give each thread of _cols several adjacent
// columns (8 bytes of them): one load a row where every buffer and every
// row start is aligned for it, else one element at a time, each column
// folded in the same order either way. These tests cross the edges of
// those vectors: odd columns, columns around the vector's and the block's
// widths, views that start one or two elements into a buffer, one row and
// rows past the chunking threshold, against float64 on the host.

// columnVectorShapes are the shapes crossed: columns around 4 and 8 (a
// vector of halves, of bytes) and 32, 64, 128 (the columns of a block of
// 8, 16 and 32 lanes of half vectors), odd ones (1001); rows of one (the
// transposed shape's rows), a few (_short), one pass and chunks of rows.
func columnVectorShapes() []compute.Shape {
	var out []compute.Shape
	for _, r := range []int{1, 2, 33, 257, 1000} {
		for _, c := range []int{1, 3, 4, 5, 8, 9, 31, 32, 33, 63, 64, 65, 127, 128, 129, 1001} {
			out = append(out, compute.Shape{Rows: r, Cols: c})
		}
	}
	// Many rows: chunks of rows folded by their last block (in chunks of
	// 1024 rows or more on the GPU).
	return append(out, compute.Shape{Rows: onFake(65536, 8200), Cols: 32}, compute.Shape{Rows: 4099, Cols: 33},
		compute.Shape{Rows: onFake(16384, 2049), Cols: 1001})
}

// TestColumnVectors checks SumAxis, MaxAxis and MeanAxis per column of
// every columnVectorShapes shape, from an aligned buffer and from views
// one and two elements into one (not aligned for a vector): each result
// near float64's (the integers' exact), the same bits on a second call,
// and, where columns take the column layouts (two rows and two columns
// or more), the same bits from a view as from the aligned buffer.
func TestColumnVectors(t *testing.T) {
	e := gpu(t)
	columnVectorsOf(t, e, 2e-6, compute.MeanAxis[cuda.Float16])
	columnVectorsOf(t, e, 2e-6, compute.MeanAxis[cuda.BFloat16])
	columnVectorsOf[int8](t, e, 0, nil)
	columnVectorsOf[uint16](t, e, 0, nil)
}

// meanAxis is MeanAxis of T.
type meanAxis[T cuda.Number] func(dst, src *cuda.DeviceBuffer[T], sh compute.Shape, axis compute.Axis, s *cuda.Stream) error

// columnVectorsOf checks T, whose sums accumulate with relative error acc
// per fold (0: exactly, in 64 bits, wrapped to T), and its mean where
// given.
func columnVectorsOf[T cuda.Number](t *testing.T, e env, acc float64, mean meanAxis[T]) {
	t.Helper()
	t.Run(fmt.Sprintf("%T", *new(T)), func(t *testing.T) {
		for _, sh := range columnVectorShapes() {
			t.Run(fmt.Sprintf("%dx%d", sh.Rows, sh.Cols), func(t *testing.T) {
				checkColumnVectors(t, e, sh, acc, mean)
			})
		}
	})
}

func checkColumnVectors[T cuda.Number](t *testing.T, e env, sh compute.Shape, acc float64, mean meanAxis[T]) {
	t.Helper()
	n := sh.Rows * sh.Cols
	lo, hi := -1.0, 1.0
	if acc == 0 {
		lo, hi = 0, 100 // uint16 has no negatives; int8 sums wrap as Go's do
	}
	x := randoms[T](n, lo, hi)
	base := must(cuda.Alloc[T](e.ctx, n+2))(t)
	defer base.Free()
	dst := must(cuda.Alloc[T](e.ctx, sh.Cols))(t)
	defer dst.Free()
	// The reference of each column: its sum, the sum of its magnitudes
	// (the bound of a float sum's error), its integer sum and its max.
	sums, abs, ints, maxes := make([]float64, sh.Cols), make([]float64, sh.Cols), make([]int64, sh.Cols), make([]float64, sh.Cols)
	for c := range maxes {
		maxes[c] = math.Inf(-1)
	}
	for i, v := range x {
		c, f := i%sh.Cols, toF(v)
		sums[c], abs[c], ints[c], maxes[c] = sums[c]+f, abs[c]+math.Abs(f), ints[c]+int64(f), math.Max(maxes[c], f)
	}
	out := tolerance[T]() // the rounding of the result to T
	var aligned [][]T
	for _, off := range []int{0, 1, 2} {
		src := must(base.Slice(off, n))(t)
		if err := src.CopyFromHost(x); err != nil {
			t.Fatal(err)
		}
		name := func(op string) string { return fmt.Sprintf("%s %v per column from element %d", op, sh, off) }
		got := [][]T{
			twice(t, name("SumAxis"), dst, func() error { return compute.SumAxis(dst, src, sh, compute.PerColumn, e.s) }),
			twice(t, name("MaxAxis"), dst, func() error { return compute.MaxAxis(dst, src, sh, compute.PerColumn, e.s) }),
		}
		if mean != nil {
			got = append(got, twice(t, name("MeanAxis"), dst, func() error { return mean(dst, src, sh, compute.PerColumn, e.s) }))
		}
		for c := range sh.Cols {
			if !near(got[1][c], maxes[c], 0) {
				t.Fatalf("%s: %d = %v, want %v", name("MaxAxis"), c, got[1][c], maxes[c])
			}
			if acc == 0 {
				if want := wrap[T](ints[c]); fmt.Sprint(got[0][c]) != fmt.Sprint(want) {
					t.Fatalf("%s: %d = %v, want %v", name("SumAxis"), c, got[0][c], want)
				}
				continue
			}
			bound := acc*abs[c]*math.Log2(float64(sh.Rows)+2)*2 + out*math.Abs(sums[c]) + 1e-30
			if math.Abs(toF(got[0][c])-sums[c]) > bound {
				t.Fatalf("%s: %d = %v, want %v (within %g)", name("SumAxis"), c, got[0][c], sums[c], bound)
			}
			if m := sums[c] / float64(sh.Rows); mean != nil && math.Abs(toF(got[2][c])-m) > bound/float64(sh.Rows)+out*math.Abs(m) {
				t.Fatalf("%s: %d = %v, want %v", name("MeanAxis"), c, got[2][c], m)
			}
		}
		switch {
		case off == 0:
			aligned = got
		case sh.Rows >= 2 && sh.Cols >= 2: // a row of the transposed shape folds vectors in another tree
			for k := range got {
				if !slices.Equal(got[k], aligned[k]) {
					t.Fatalf("%s: other bits than from an aligned buffer: each column is folded in the same order either way", name([]string{"SumAxis", "MaxAxis", "MeanAxis"}[k]))
				}
			}
		}
	}
}

// TestColumnVectorsMixed folds the columns of two inputs of different
// widths (a float16 matrix weighted by an int8 one): a thread's vectors
// are 4 elements of each, loaded at once only where both buffers are
// aligned for theirs.
func TestColumnVectorsMixed(t *testing.T) {
	e := gpu(t)
	dot := must(compute.NewReduction(compute.ReductionSpec{Name: "wsum", InParams: "float16 x, int8 w", OutParams: "float32 y",
		MapExpr: "x * w", ReduceExpr: "a + b", PostMapExpr: "y = a", Identity: "0", ReduceType: "float32"}))(t)
	for _, tc := range []struct {
		sh         compute.Shape
		offX, offW int
	}{
		{compute.Shape{Rows: 300, Cols: 64}, 0, 0},
		{compute.Shape{Rows: 300, Cols: 64}, 0, 1},
		{compute.Shape{Rows: 300, Cols: 64}, 1, 0},
		{compute.Shape{Rows: 300, Cols: 67}, 0, 0},
		{compute.Shape{Rows: 40, Cols: 33}, 2, 4},
	} {
		t.Run(fmt.Sprintf("%dx%d from %d and %d", tc.sh.Rows, tc.sh.Cols, tc.offX, tc.offW), func(t *testing.T) {
			n := tc.sh.Rows * tc.sh.Cols
			xs, ws := randoms[cuda.Float16](n, -1, 1), randoms[int8](n, -3, 3)
			bx := must(cuda.Alloc[cuda.Float16](e.ctx, n+tc.offX))(t)
			defer bx.Free()
			bw := must(cuda.Alloc[int8](e.ctx, n+tc.offW))(t)
			defer bw.Free()
			x, w := must(bx.Slice(tc.offX, n))(t), must(bw.Slice(tc.offW, n))(t)
			if err := x.CopyFromHost(xs); err != nil {
				t.Fatal(err)
			}
			if err := w.CopyFromHost(ws); err != nil {
				t.Fatal(err)
			}
			y := must(cuda.Alloc[float32](e.ctx, tc.sh.Cols))(t)
			defer y.Free()
			got := twice(t, "wsum", y, func() error { return dot.LaunchAxis(e.s, tc.sh, compute.PerColumn, x, w, y) })
			for c := range tc.sh.Cols {
				var s, abs float64
				for r := range tc.sh.Rows {
					v := toF(xs[r*tc.sh.Cols+c]) * float64(ws[r*tc.sh.Cols+c])
					s, abs = s+v, abs+math.Abs(v)
				}
				if bound := 2e-6 * abs * math.Log2(float64(tc.sh.Rows)+2) * 2; math.Abs(float64(got[c])-s) > bound {
					t.Fatalf("column %d = %v, want %v (within %g)", c, got[c], s, bound)
				}
			}
		})
	}
}

// TestCaptureColumnVectors captures column sums of float16 in chunks of
// rows, from an aligned buffer and from a view one element in: in the
// graph a second kernel folds the chunks, outside it their last block, in
// the same tree: the same bits either way, and from either buffer.
func TestCaptureColumnVectors(t *testing.T) {
	e := gpu(t)
	sh := compute.Shape{Rows: 4099, Cols: 33} // 33 chunks of rows on the H200, 32 on the fake
	n := sh.Rows * sh.Cols
	base := must(cuda.Alloc[cuda.Float16](e.ctx, n+1))(t)
	defer base.Free()
	aligned, view := must(base.Slice(0, n))(t), must(base.Slice(1, n))(t)
	sums := [2]*cuda.DeviceBuffer[cuda.Float16]{must(cuda.Alloc[cuda.Float16](e.ctx, sh.Cols))(t), must(cuda.Alloc[cuda.Float16](e.ctx, sh.Cols))(t)}
	for _, b := range sums {
		defer b.Free()
	}
	record := func() error {
		if err := compute.SumAxis(sums[0], aligned, sh, compute.PerColumn, e.s); err != nil {
			return err
		}
		return compute.SumAxis(sums[1], view, sh, compute.PerColumn, e.s)
	}
	if err := record(); err != nil { // compiled: a capture does not compile
		t.Fatal(err)
	}
	g := must(e.s.Capture(cuda.CaptureGlobal, record))(t)
	defer g.Close()
	exec := must(g.Instantiate())(t)
	defer exec.Close()
	// Small integers: every sum exact, in float32 and in float16.
	in := make([]cuda.Float16, n+1)
	for i := range in {
		in[i] = cuda.NewFloat16(float32(i*7%11) - 5)
	}
	if err := base.CopyFromHost(in); err != nil {
		t.Fatal(err)
	}
	if err := exec.Launch(e.s); err != nil {
		t.Fatal(err)
	}
	if err := e.s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	var graph [2][]cuda.Float16
	for k, start := range []int{0, 1} {
		graph[k] = cudatest.Download(t, sums[k])
		for c := range sh.Cols {
			var want float32
			for r := range sh.Rows {
				want += in[start+r*sh.Cols+c].Float32()
			}
			if got, want := graph[k][c], cuda.NewFloat16(want); got != want { // the exact sum, rounded to float16
				t.Fatalf("in the graph, from element %d: column %d = %v, want %v", start, c, got, want)
			}
		}
	}
	if err := record(); err != nil {
		t.Fatal(err)
	}
	for k := range sums {
		if got := cudatest.Download(t, sums[k]); !slices.Equal(got, graph[k]) {
			t.Errorf("from element %d outside the graph: %v, in it %v", k, got, graph[k])
		}
	}
}

// TestColumnKernelsCompile compiles the column kernels of the element
// types of every vector width, and of two inputs of different widths,
// with a real NVRTC on the fake driver (GOCUDA_LIBNVRTC naming one, as a
// machine without a GPU may have): the fake then refuses to load the
// compiled image, which is how a test tells a kernel that compiled from
// one that did not. On the GPU the numeric tests compile and run them.
func TestColumnKernelsCompile(t *testing.T) {
	if !cudatest.IsFake() {
		t.Skip("on the GPU the numeric tests compile every kernel")
	}
	if _, err := nvrtc.Version(); err != nil {
		t.Skip("no NVRTC here (set GOCUDA_LIBNVRTC to one): ", err)
	}
	if testing.Short() {
		t.Skip("compiles the reductions of 7 patterns with NVRTC: half a minute")
	}
	e := newEnv(t)
	compute.UseNVRTC(t)
	sh := compute.Shape{Rows: 300, Cols: 40} // _colsv, in the source of _cols and the others
	compileColumns[cuda.Float16](t, e, sh)
	compileColumns[cuda.BFloat16](t, e, sh)
	compileColumns[int8](t, e, sh)
	compileColumns[uint16](t, e, sh)
	compileColumns[float32](t, e, sh)
	compileColumns[float64](t, e, sh)
	mixed := must(compute.NewReduction(compute.ReductionSpec{Name: "wsum", InParams: "float16 x, int8 w", OutParams: "float32 y",
		MapExpr: "x * w", ReduceExpr: "a + b", PostMapExpr: "y = a", Identity: "0", ReduceType: "float32"}))(t)
	x := must(cuda.Zeroed[cuda.Float16](e.ctx, sh.Rows*sh.Cols))(t)
	defer x.Free()
	w := must(cuda.Zeroed[int8](e.ctx, sh.Rows*sh.Cols))(t)
	defer w.Free()
	y := must(cuda.Zeroed[float32](e.ctx, sh.Cols))(t)
	defer y.Free()
	nvrtcCompiled(t, "wsum of float16 and int8", mixed.LaunchAxis(e.s, sh, compute.PerColumn, x, w, y))
}

// compileColumns compiles SumAxis and MaxAxis per column of T.
func compileColumns[T cuda.Number](t *testing.T, e env, sh compute.Shape) {
	t.Helper()
	src := must(cuda.Zeroed[T](e.ctx, sh.Rows*sh.Cols))(t)
	defer src.Free()
	dst := must(cuda.Zeroed[T](e.ctx, sh.Cols))(t)
	defer dst.Free()
	nvrtcCompiled(t, fmt.Sprintf("SumAxis[%T]", *new(T)), compute.SumAxis(dst, src, sh, compute.PerColumn, e.s))
	nvrtcCompiled(t, fmt.Sprintf("MaxAxis[%T]", *new(T)), compute.MaxAxis(dst, src, sh, compute.PerColumn, e.s))
}

// nvrtcCompiled fails t unless err is the fake's refusal of a kernel NVRTC
// compiled.
func nvrtcCompiled(t *testing.T, name string, err error) {
	t.Helper()
	var ne *nvrtc.Error
	switch {
	case errors.As(err, &ne):
		t.Errorf("%s does not compile: %v", name, err)
	case err == nil || !strings.Contains(err.Error(), "runs no device code"):
		t.Errorf("%s: %v, want the fake's refusal of the compiled kernel", name, err)
	}
}
