package compute_test

import (
	"fmt"
	"math"
	"slices"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/compute"
	"github.com/gocuda/cuda/internal/cudatest"
)

// The reductions, ArgMax and Softmax in each of their layouts (the
// package's layout.go: lanes of a warp per row, a block per row, rows cut
// into chunks; columns as rows, narrow, in one pass and in chunks of rows),
// at the shapes around each threshold, against float64 on the host.

// layoutRows and layoutCols cross at the shapes the layouts change at on
// the H200 (132 multiprocessors): a warp's lanes per row up to 2048
// elements, a block per row to 65536 and beyond for many rows, chunks for
// 66 rows or fewer past 65536; fewer than 32 columns narrow, chunks of rows
// where the columns do not fill the device, folded by their last block up
// to 128 chunks (65000×32: more); 11264 float32 the longest row
// Softmax keeps in shared memory.
var (
	layoutRows = []int{1, 2, 3, 32, 33, 66, 67, 133, 256, 257, 264, 265, 4099, 65000}
	layoutCols = []int{1, 2, 3, 5, 8, 31, 32, 33, 129, 1000, 2048, 2049, 11264, 11265, 65536, 65537, 200003}
)

// layoutShapes are the crossings of at most 2^21 elements; on the fake
// driver 2^18, which still cross its layouts (4 multiprocessors: chunks
// of a row from 2 rows down, narrow columns in blocks past 32 steps).
func layoutShapes() []compute.Shape {
	var out []compute.Shape
	for _, r := range layoutRows {
		for _, c := range layoutCols {
			if r*c <= onFake(1<<21, 1<<18) {
				out = append(out, compute.Shape{Rows: r, Cols: c})
			}
		}
	}
	return out
}

// TestLayouts checks SumAxis, MaxAxis and MeanAxis per row and per column,
// Sum, MaxOf and ArgMax of the whole buffer, and Softmax, of every layout
// shape, from an aligned buffer and from a view one element into another
// (loaded one element at a time), each call made twice: the same bits
// both times.
func TestLayouts(t *testing.T) {
	e := gpu(t)
	layoutsOf(t, e, 2e-6, &floatOps[float32]{compute.MeanAxis[float32], compute.Softmax[float32]}, layoutShapes(), 1000)
	layoutsOf(t, e, 1e-14, &floatOps[float64]{compute.MeanAxis[float64], compute.Softmax[float64]}, layoutShapes(), 1000)
	layoutsOf(t, e, 2e-6, &floatOps[cuda.BFloat16]{compute.MeanAxis[cuda.BFloat16], compute.Softmax[cuda.BFloat16]}, layoutShapes(), 1000)
	layoutsOf[int32](t, e, 0, nil, layoutShapes(), 1000)
}

// floatOps are the operations of the float types alone, checked where
// layoutsOf is given them.
type floatOps[T cuda.Number] struct {
	meanAxis func(dst, src *cuda.DeviceBuffer[T], sh compute.Shape, axis compute.Axis, s *cuda.Stream) error
	softmax  func(dst, src *cuda.DeviceBuffer[T], sh compute.Shape, s *cuda.Stream) error
}

// layoutsOf checks T over shapes, whose sums accumulate with relative
// error acc per fold (0: exactly, in 64 bits, of integers within ±bound),
// and its float operations where it has them.
func layoutsOf[T cuda.Number](t *testing.T, e env, acc float64, ops *floatOps[T], shapes []compute.Shape, bound float64) {
	t.Run(fmt.Sprintf("%T", *new(T)), func(t *testing.T) {
		lo, hi := -1.0, 1.0
		if acc == 0 {
			lo, hi = -bound, bound
		}
		for i, sh := range shapes {
			n := sh.Rows * sh.Cols
			x := randoms[T](n, lo, hi)
			base := must(cuda.Alloc[T](e.ctx, n+1))(t)
			src := must(base.Slice(i%2, n))(t) // every other one a view one element in: not aligned for vectors
			if err := src.CopyFromHost(x); err != nil {
				t.Fatal(err)
			}
			checkLayout(t, e, sh, x, src, acc, ops)
			if err := base.Free(); err != nil {
				t.Fatal(err)
			}
			if t.Failed() {
				return
			}
		}
	})
}

// twice runs op twice into dst and returns the first result, failing
// where the second's bits differ.
func twice[T cuda.Number](t *testing.T, what string, dst *cuda.DeviceBuffer[T], op func() error) []T {
	t.Helper()
	var first []T
	for round := range 2 {
		if err := op(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		got := cudatest.Download(t, dst)
		if round == 0 {
			first = got
		} else if !slices.Equal(first, got) {
			t.Fatalf("%s: a second call gave other bits: deterministic results are the same every time", what)
		}
	}
	return first
}

func checkLayout[T cuda.Number](t *testing.T, e env, sh compute.Shape, x []T, src *cuda.DeviceBuffer[T], acc float64, ops *floatOps[T]) {
	t.Helper()
	out := tolerance[T]() // the rounding of the result to T
	for _, axis := range []compute.Axis{compute.PerRow, compute.PerColumn} {
		outer, inner, elem := alongAxis(x, sh, axis)
		at := func(o, k int) float64 { return toF(elem(o, k)) }
		dst := must(cuda.Alloc[T](e.ctx, outer))(t)
		name := func(op string) string { return fmt.Sprintf("%s %v %v", op, sh, axis) }
		sums := twice(t, name("SumAxis"), dst, func() error { return compute.SumAxis(dst, src, sh, axis, e.s) })
		maxes := twice(t, name("MaxAxis"), dst, func() error { return compute.MaxAxis(dst, src, sh, axis, e.s) })
		var means []T
		if ops != nil {
			means = twice(t, name("MeanAxis"), dst, func() error { return ops.meanAxis(dst, src, sh, axis, e.s) })
		}
		dst.Free()
		for o := range outer {
			var s, abs float64
			var si int64
			m := math.Inf(-1)
			for k := range inner {
				v := at(o, k)
				s, abs, si, m = s+v, abs+math.Abs(v), si+int64(v), math.Max(m, v)
			}
			if !near(maxes[o], m, 0) {
				t.Fatalf("%s: %d = %v, want %v", name("MaxAxis"), o, maxes[o], m)
			}
			if acc == 0 {
				if fmt.Sprint(sums[o]) != fmt.Sprint(wrap[T](si)) {
					t.Fatalf("%s: %d = %v, want %v", name("SumAxis"), o, sums[o], wrap[T](si))
				}
				continue
			}
			bound := acc*abs*math.Log2(float64(inner)+2)*2 + out*math.Abs(s) + 1e-30
			if math.Abs(toF(sums[o])-s) > bound {
				t.Fatalf("%s: %d = %v, want %v (within %g)", name("SumAxis"), o, sums[o], s, bound)
			}
			if mean := s / float64(inner); means != nil && math.Abs(toF(means[o])-mean) > bound/float64(inner)+out*math.Abs(mean) {
				t.Fatalf("%s: %d = %v, want %v", name("MeanAxis"), o, means[o], mean)
			}
		}
	}
	// The whole buffer, as one row.
	n := len(x)
	whole := must(cuda.Alloc[T](e.ctx, 1))(t)
	defer whole.Free()
	var s, abs float64
	m, best := math.Inf(-1), 0
	for i, v := range x {
		f := toF(v)
		s, abs = s+f, abs+math.Abs(f)
		if f > m {
			m, best = f, i
		}
	}
	got := twice(t, fmt.Sprintf("Sum of %d", n), whole, func() error { return compute.Sum(whole, src, e.s) })[0]
	if bound := acc*abs*math.Log2(float64(n)+2)*2 + out*math.Abs(s); acc != 0 && math.Abs(toF(got)-s) > bound {
		t.Fatalf("Sum of %d = %v, want %v (within %g)", n, got, s, bound)
	}
	if got := twice(t, fmt.Sprintf("MaxOf %d", n), whole, func() error { return compute.MaxOf(whole, src, e.s) })[0]; !near(got, m, 0) {
		t.Fatalf("MaxOf %d = %v, want %v", n, got, m)
	}
	index := must(cuda.Alloc[int64](e.ctx, 1))(t)
	defer index.Free()
	if got := twice(t, fmt.Sprintf("ArgMax of %d", n), index, func() error { return compute.ArgMax(index, src, e.s) })[0]; got != int64(best) {
		t.Fatalf("ArgMax of %d = %d (%v), want %d (%v)", n, got, x[got], best, x[best])
	}
	if ops != nil {
		checkSoftmaxLayout(t, e, sh, x, src, ops.softmax)
	}
}

// checkSoftmaxLayout checks softmax (Softmax of a float T) of x's rows.
func checkSoftmaxLayout[T cuda.Number](t *testing.T, e env, sh compute.Shape, x []T, src *cuda.DeviceBuffer[T],
	softmax func(dst, src *cuda.DeviceBuffer[T], sh compute.Shape, s *cuda.Stream) error) {
	t.Helper()
	dst := must(cuda.Alloc[T](e.ctx, len(x)))(t)
	defer dst.Free()
	got := twice(t, fmt.Sprintf("Softmax %v", sh), dst, func() error { return softmax(dst, src, sh, e.s) })
	tol := max(tolerance[T](), 1e-13) // float64's exponentials: 1e-13
	for r := range sh.Rows {
		want, _ := softmaxWant(x[r*sh.Cols : (r+1)*sh.Cols])
		for c, w := range want {
			if g := toF(got[r*sh.Cols+c]); math.Abs(g-w) > tol*math.Max(w, 1e-3)*4 {
				t.Fatalf("Softmax %v: [%d,%d] = %v, want %v", sh, r, c, g, w)
			}
		}
	}
}

// TestCaptureLayouts captures the layouts of more than one kernel (a row
// cut into chunks, narrow columns in several blocks then their partial
// results, Softmax of chunks, ArgMax of many blocks), each with its
// stream-ordered partial results, and launches the graph twice with new
// inputs between: each launch computes from the inputs of its time, and
// the last the same bits as the same calls outside a capture.
func TestCaptureLayouts(t *testing.T) {
	e := gpu(t)
	const n = 1 << 20
	narrow, long := compute.Shape{Rows: n / 4, Cols: 4}, compute.Shape{Rows: 2, Cols: n / 2}
	x := must(cuda.Alloc[float32](e.ctx, n))(t)
	sm := must(cuda.Alloc[float32](e.ctx, n))(t)
	sum, cols := must(cuda.Alloc[float32](e.ctx, 1))(t), must(cuda.Alloc[float32](e.ctx, 4))(t)
	index := must(cuda.Alloc[int64](e.ctx, 1))(t)
	defer index.Free()
	for _, b := range []*cuda.DeviceBuffer[float32]{x, sm, sum, cols} {
		defer b.Free()
	}
	record := func() error {
		for _, op := range []func() error{
			func() error { return compute.Sum(sum, x, e.s) },
			func() error { return compute.SumAxis(cols, x, narrow, compute.PerColumn, e.s) },
			func() error { return compute.Softmax(sm, x, long, e.s) },
			func() error { return compute.ArgMax(index, x, e.s) },
		} {
			if err := op(); err != nil {
				return err
			}
		}
		return nil
	}
	if err := record(); err != nil { // compiled: a capture does not compile
		t.Fatal(err)
	}
	g := must(e.s.Capture(cuda.CaptureGlobal, record))(t)
	defer g.Close()
	exec := must(g.Instantiate())(t)
	defer exec.Close()
	for round := range 2 {
		in := make([]float32, n)
		for i := range in {
			in[i] = float32((i*7+round*3)%11) - 5 // small integers: exact sums
		}
		peak := (round*5000 + 12345) % n
		in[peak] = 100
		if err := x.CopyFromHost(in); err != nil {
			t.Fatal(err)
		}
		if err := exec.Launch(e.s); err != nil {
			t.Fatal(err)
		}
		if err := e.s.Synchronize(); err != nil {
			t.Fatal(err)
		}
		var total float32
		var perCol [4]float32
		for i, v := range in {
			total += v
			perCol[i%4] += v
		}
		if got := cudatest.Download(t, sum)[0]; got != total {
			t.Errorf("round %d: Sum = %v, want %v", round, got, total)
		}
		if got := cudatest.Download(t, cols); !slices.Equal(got, perCol[:]) {
			t.Errorf("round %d: column sums %v, want %v", round, got, perCol)
		}
		if got := cudatest.Download(t, index)[0]; got != int64(peak) {
			t.Errorf("round %d: ArgMax = %d, want %d", round, got, peak)
		}
		if got := cudatest.Download(t, sm)[peak]; math.Abs(float64(got)-1) > 1e-6 {
			t.Errorf("round %d: softmax at the peak = %v, want 1", round, got)
		}
	}
	// Outside a capture the kernels fold their partial results in the
	// stream's scratch, the last block of each result folding them: the
	// same tree, so the same bits as the graph's separate folds.
	graphSum, graphCols := cudatest.Download(t, sum), cudatest.Download(t, cols)
	if err := record(); err != nil {
		t.Fatal(err)
	}
	if got := cudatest.Download(t, sum); !slices.Equal(got, graphSum) {
		t.Errorf("Sum outside the graph = %v, in it %v", got, graphSum)
	}
	if got := cudatest.Download(t, cols); !slices.Equal(got, graphCols) {
		t.Errorf("column sums outside the graph = %v, in it %v", got, graphCols)
	}
}
