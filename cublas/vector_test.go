package cublas_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/cublas"
	"github.com/gocuda/cuda/internal/cudatest"
)

func TestVector(t *testing.T) {
	ctx, s, h := handle(t)
	t.Run("float32", func(t *testing.T) { vectorOps[float32](t, ctx, s, h) })
	t.Run("float64", func(t *testing.T) { vectorOps[float64](t, ctx, s, h) })
	t.Run("celsius", func(t *testing.T) { vectorOps[celsius](t, ctx, s, h) })
	t.Run("metres", func(t *testing.T) { vectorOps[metres](t, ctx, s, h) })
}

func vectorOps[T cuda.Float](t *testing.T, ctx *cuda.Context, s *cuda.Stream, h *cublas.Handle) {
	r := rand.New(rand.NewPCG(9, 10))
	tol := tolerance[T](false)
	for _, n := range []int{1, 7, 1000} {
		xs, ys := random[T](r, n), random[T](r, n)
		xs[n/2] = 9 // the largest in magnitude, once
		x, y := cudatest.Upload(t, ctx, xs), cudatest.Upload(t, ctx, ys)
		var dot, nrm, asum, mag float64
		for i := range xs {
			dot += float64(xs[i]) * float64(ys[i])
			mag += math.Abs(float64(xs[i]) * float64(ys[i]))
			nrm += float64(xs[i]) * float64(xs[i])
			asum += math.Abs(float64(xs[i]))
		}
		nrm = math.Sqrt(nrm)
		if got := must(cublas.Dot(h, x, y))(t); !closeTo(float64(got), dot, mag+1, tol) {
			t.Errorf("Dot of %d: %v, want %v", n, got, dot)
		}
		if got := must(cublas.Nrm2(h, x))(t); !closeTo(float64(got), nrm, nrm+1, tol) {
			t.Errorf("Nrm2 of %d: %v, want %v", n, got, nrm)
		}
		if got := must(cublas.Asum(h, x))(t); !closeTo(float64(got), asum, asum+1, tol) {
			t.Errorf("Asum of %d: %v, want %v", n, got, asum)
		}
		if got := must(cublas.Iamax(h, x))(t); got != n/2 {
			t.Errorf("Iamax of %d: %d, want %d", n, got, n/2)
		}
		// y = 2x + y, then y = -0.5y, queued: the results are read after
		// the stream's work.
		if err := cublas.Axpy(h, 2, x, y); err != nil {
			t.Fatal(err)
		}
		if err := cublas.Scal(h, -0.5, y); err != nil {
			t.Fatal(err)
		}
		got := download(t, s, y)
		for i := range got {
			w := -0.5 * (2*float64(xs[i]) + float64(ys[i]))
			if !closeTo(float64(got[i]), w, math.Abs(w)+1, tol) {
				t.Fatalf("Axpy, Scal of %d: element %d is %v, want %v", n, i, got[i], w)
			}
		}
	}
}

// TestGemv: y = alpha·A·x + beta·y against Go, in both layouts, plain and
// transposed, for shapes with an empty dimension too (an A of no columns
// makes y = beta·y, which cuBLAS, returning at once as BLAS does, would
// leave as it was), and with beta 0 over a y of NaNs, which is not read.
func TestGemv(t *testing.T) {
	ctx, s, h := handle(t)
	r := rand.New(rand.NewPCG(11, 12))
	for _, layout := range []cublas.Layout{cublas.RowMajor, cublas.ColMajor} {
		for _, transposed := range []bool{false, true} {
			for _, sh := range [][2]int{{1, 1}, {7, 3}, {4, 33}, {3, 0}, {0, 3}, {1, 97}, {97, 1}} {
				for _, beta := range []float64{2, 0, 1} {
					m, n := sh[0], sh[1]
					name := fmt.Sprintf("%s/transposed=%v/%dx%d/beta%g", layout, transposed, m, n, beta)
					t.Run(name, func(t *testing.T) { gemvCase(t, ctx, s, h, r, layout, transposed, m, n, beta) })
				}
			}
		}
	}
}

func gemvCase(t *testing.T, ctx *cuda.Context, s *cuda.Stream, h *cublas.Handle, r *rand.Rand, layout cublas.Layout, transposed bool, m, n int, beta float64) {
	t.Helper()
	a := makeOperand(t, ctx, m, n, layout, transposed, 1, func(k int) []float64 { return random[float64](r, k) })
	xs, ys := random[float64](r, n), random[float64](r, m)
	if beta == 0 {
		for i := range ys {
			ys[i] = math.NaN()
		}
	}
	x, y := cudatest.Upload(t, ctx, xs), cudatest.Upload(t, ctx, ys)
	if err := cublas.Gemv(h, 1.5, a.desc, x, beta, y); err != nil {
		t.Fatal(err)
	}
	got := download(t, s, y)
	for i := range m {
		var w, mag float64
		for j := range n {
			w += a.host.at(i, j) * xs[j]
			mag += math.Abs(a.host.at(i, j) * xs[j])
		}
		w *= 1.5
		if beta != 0 {
			w += beta * ys[i]
		}
		if !closeTo(got[i], w, mag+1, 1e-13) {
			t.Errorf("y[%d] = %v, want %v", i, got[i], w)
		}
	}
}

// TestNrm2Range: Nrm2 of numbers whose squares overflow or underflow is
// their norm, as cuBLAS (and BLAS's nrm2) computes it with scaling, not Inf
// or 0.
func TestNrm2Range(t *testing.T) {
	ctx, _, h := handle(t)
	for _, tc := range []struct {
		x    []float64
		want float64
	}{
		{[]float64{3e200, -4e200}, 5e200},
		{[]float64{3e-200, 4e-200}, 5e-200},
		{[]float64{0, 0, 0}, 0},
		{[]float64{1e300, 1e-300, -1e300}, math.Sqrt2 * 1e300},
		{[]float64{1, math.Inf(-1)}, math.Inf(1)},
	} {
		got, err := cublas.Nrm2(h, cudatest.Upload(t, ctx, tc.x))
		if err != nil {
			t.Fatal(err)
		}
		if got != tc.want && !(math.Abs(got-tc.want) <= 1e-14*tc.want) {
			t.Errorf("Nrm2(%v) = %v, want %v", tc.x, got, tc.want)
		}
	}
	got, err := cublas.Nrm2(h, cudatest.Upload(t, ctx, []float32{3e30, 4e30}))
	if err != nil || math.Abs(float64(got)-5e30) > 1e-6*5e30 {
		t.Errorf("Nrm2 of float32 3e30, 4e30 = %v, %v; want 5e30", got, err)
	}
}
