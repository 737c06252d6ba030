package cusolver_test

import (
	"math"
	"math/rand/v2"
	"os"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/cusolver"
	"github.com/gocuda/cuda/internal/cudatest"
)

func TestMain(m *testing.M) {
	// A GPU without cuSOLVER: these tests run against the fake driver,
	// which answers cuSOLVER's calls too, except where the GPU machine's
	// scripts require the real thing.
	if os.Getenv(cusolver.EnvLibrary) == "" && os.Getenv(cudatest.EnvRequireGPU) != "1" &&
		!cudatest.Loadable("libcusolver.so.12", "libcusolver.so.11", "/usr/local/cuda/lib64/libcusolver.so.12", "/usr/local/cuda/lib64/libcusolver.so.11") {
		os.Setenv(cudatest.EnvDriver, "fake")
	}
	cudatest.Main(m)
}

// must is cudatest.Must.
func must[T any](v T, err error) func(testing.TB) T { return cudatest.Must(v, err) }

// handle returns a context and a handle on a stream of it, closed when the
// test ends.
func handle(t *testing.T) (*cuda.Context, *cusolver.Handle) {
	t.Helper()
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	h := must(cusolver.New(s))(t)
	t.Cleanup(func() {
		if err := h.Close(); err != nil {
			t.Errorf("Handle.Close: %v", err)
		}
	})
	return ctx, h
}

// dense is a host matrix in float64, row-major.
type dense struct {
	r, c int
	v    []float64
}

func newDense(r, c int) dense           { return dense{r, c, make([]float64, r*c)} }
func (d dense) at(i, j int) float64     { return d.v[i*d.c+j] }
func (d dense) set(i, j int, x float64) { d.v[i*d.c+j] = x }
func (d dense) add(i, j int, x float64) { d.v[i*d.c+j] += x }
func (d dense) t() dense {
	o := newDense(d.c, d.r)
	for i := 0; i < d.r; i++ {
		for j := 0; j < d.c; j++ {
			o.set(j, i, d.at(i, j))
		}
	}
	return o
}

func mul(a, b dense) dense {
	o := newDense(a.r, b.c)
	for i := 0; i < a.r; i++ {
		for k := 0; k < a.c; k++ {
			x := a.at(i, k)
			for j := 0; j < b.c; j++ {
				o.add(i, j, x*b.at(k, j))
			}
		}
	}
	return o
}

// maxDiff is the largest absolute difference of a and b.
func maxDiff(a, b dense) float64 {
	d := 0.0
	for i := range a.v {
		d = max(d, math.Abs(a.v[i]-b.v[i]))
	}
	return d
}

func eye(n int) dense {
	o := newDense(n, n)
	for i := 0; i < n; i++ {
		o.set(i, i, 1)
	}
	return o
}

// random returns an r×c matrix of uniform numbers in [-1, 1).
func random(rng *rand.Rand, r, c int) dense {
	o := newDense(r, c)
	for i := range o.v {
		o.v[i] = 2*rng.Float64() - 1
	}
	return o
}

// spd returns a symmetric positive definite n×n matrix, well conditioned.
func spd(rng *rand.Rand, n int) dense {
	m := random(rng, n, n)
	a := mul(m, m.t())
	for i := 0; i < n; i++ {
		a.add(i, i, float64(n))
	}
	return a
}

// elements lays d out in layout, as T.
func elements[T cuda.Float](d dense, layout cusolver.Layout) []T {
	out := make([]T, d.r*d.c)
	for i := 0; i < d.r; i++ {
		for j := 0; j < d.c; j++ {
			if layout == cusolver.ColMajor {
				out[j*d.r+i] = T(d.at(i, j))
			} else {
				out[i*d.c+j] = T(d.at(i, j))
			}
		}
	}
	return out
}

// fromElements reads an r×c matrix laid out in layout.
func fromElements[T cuda.Float](v []T, r, c int, layout cusolver.Layout) dense {
	o := newDense(r, c)
	for i := 0; i < r; i++ {
		for j := 0; j < c; j++ {
			if layout == cusolver.ColMajor {
				o.set(i, j, float64(v[j*r+i]))
			} else {
				o.set(i, j, float64(v[i*c+j]))
			}
		}
	}
	return o
}

// upload makes a device matrix of d in layout, with one spare element.
func upload[T cuda.Float](t *testing.T, ctx *cuda.Context, d dense, layout cusolver.Layout) cusolver.Matrix[T] {
	t.Helper()
	buf := cudatest.Upload(t, ctx, append(elements[T](d, layout), 7))
	return cusolver.Matrix[T]{Data: buf, Rows: d.r, Cols: d.c, Layout: layout}
}

// download waits for h's stream and reads m back.
func download[T cuda.Float](t *testing.T, h *cusolver.Handle, m cusolver.Matrix[T]) dense {
	t.Helper()
	if err := h.Stream().Synchronize(); err != nil {
		t.Fatal(err)
	}
	v := cudatest.Download(t, m.Data)
	return fromElements(v[:m.Rows*m.Cols], m.Rows, m.Cols, m.Layout)
}

// floats waits for h's stream and reads b back as float64s.
func floats[T cuda.Float](t *testing.T, h *cusolver.Handle, b *cuda.DeviceBuffer[T]) []float64 {
	t.Helper()
	if err := h.Stream().Synchronize(); err != nil {
		t.Fatal(err)
	}
	v := cudatest.Download(t, b)
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

// tol is the tolerance of a check of T's results on n×n matrices.
func tol[T cuda.Float](n int) float64 {
	var z T
	if any(z) == any(float32(0)) {
		return 2e-3 * float64(max(n, 1))
	}
	return 1e-9 * float64(max(n, 1))
}

// orthogonal checks that the columns of q are orthonormal.
func orthogonal(t *testing.T, name string, q dense, eps float64) {
	t.Helper()
	if d := maxDiff(mul(q.t(), q), eye(q.c)); d > eps {
		t.Errorf("%sᵀ·%s differs from I by %g", name, name, d)
	}
}

// layouts are both layouts, named.
var layouts = []cusolver.Layout{cusolver.RowMajor, cusolver.ColMajor}
