package cusolver_test

import (
	"fmt"
	"math/cmplx"
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

// scalar is the element types the tests run each operation for.
type scalar interface {
	float32 | float64 | complex64 | complex128
}

// suite is a test's body for one type: a context, a handle on a stream of
// it, and a random source.
type suite func(t *testing.T, ctx *cuda.Context, h *cusolver.Handle, rng *rand.Rand)

// eachType runs a test's four instantiations as subtests named by type,
// each with a handle of its own and a random source seeded seed, seed+1.
func eachType(t *testing.T, seed uint64, f32, f64, c64, c128 suite) {
	for _, c := range []struct {
		name string
		f    suite
	}{{"float32", f32}, {"float64", f64}, {"complex64", c64}, {"complex128", c128}} {
		t.Run(c.name, func(t *testing.T) {
			ctx, h := handle(t)
			c.f(t, ctx, h, rand.New(rand.NewPCG(seed, seed+1)))
		})
	}
}

// isComplex reports whether T is complex.
func isComplex[T scalar]() bool {
	switch any(*new(T)).(type) {
	case complex64, complex128:
		return true
	}
	return false
}

// adj is the sign of T's adjoint: ᵀ for the reals, ᴴ for the complex
// numbers.
func adj[T scalar]() string {
	if isComplex[T]() {
		return "ᴴ"
	}
	return "ᵀ"
}

// to converts x to T, dropping its imaginary part for a real T.
func to[T scalar](x complex128) T {
	switch any(*new(T)).(type) {
	case float32:
		return any(float32(real(x))).(T)
	case float64:
		return any(real(x)).(T)
	case complex64:
		return any(complex64(x)).(T)
	}
	return any(x).(T)
}

// of converts x to complex128.
func of[T scalar](x T) complex128 {
	switch v := any(x).(type) {
	case float32:
		return complex(float64(v), 0)
	case float64:
		return complex(v, 0)
	case complex64:
		return complex128(v)
	}
	return any(x).(complex128)
}

// dense is a host matrix, row-major, in complex128 for every type (a real
// matrix's imaginary parts zero).
type dense struct {
	r, c int
	v    []complex128
}

func newDense(r, c int) dense              { return dense{r, c, make([]complex128, r*c)} }
func (d dense) at(i, j int) complex128     { return d.v[i*d.c+j] }
func (d dense) set(i, j int, x complex128) { d.v[i*d.c+j] = x }
func (d dense) add(i, j int, x complex128) { d.v[i*d.c+j] += x }

// h is the conjugate transpose (the transpose of a real matrix).
func (d dense) h() dense {
	o := newDense(d.c, d.r)
	for i := 0; i < d.r; i++ {
		for j := 0; j < d.c; j++ {
			o.set(j, i, cmplx.Conj(d.at(i, j)))
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
		d = max(d, cmplx.Abs(a.v[i]-b.v[i]))
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

// random returns an r×c matrix of T's numbers with uniform parts in
// [-1, 1).
func random[T scalar](rng *rand.Rand, r, c int) dense {
	o := newDense(r, c)
	for i := range o.v {
		o.v[i] = complex(2*rng.Float64()-1, 0)
		if isComplex[T]() {
			o.v[i] += complex(0, 2*rng.Float64()-1)
		}
	}
	return o
}

// hpd returns a well conditioned Hermitian (for a real T, symmetric)
// positive definite n×n matrix of T's numbers.
func hpd[T scalar](rng *rand.Rand, n int) dense {
	m := random[T](rng, n, n)
	a := mul(m, m.h())
	for i := 0; i < n; i++ {
		a.add(i, i, complex(float64(n), 0))
	}
	return a
}

// elements lays d out in layout, as T.
func elements[T scalar](d dense, layout cusolver.Layout) []T {
	out := make([]T, d.r*d.c)
	for i := 0; i < d.r; i++ {
		for j := 0; j < d.c; j++ {
			if layout == cusolver.ColMajor {
				out[j*d.r+i] = to[T](d.at(i, j))
			} else {
				out[i*d.c+j] = to[T](d.at(i, j))
			}
		}
	}
	return out
}

// fromElements reads an r×c matrix laid out in layout at the start of v.
func fromElements[T scalar](v []T, r, c int, layout cusolver.Layout) dense {
	o := newDense(r, c)
	for i := 0; i < r; i++ {
		for j := 0; j < c; j++ {
			if layout == cusolver.ColMajor {
				o.set(i, j, of(v[j*r+i]))
			} else {
				o.set(i, j, of(v[i*c+j]))
			}
		}
	}
	return o
}

// upload makes a device matrix of d in layout, with one spare element.
func upload[T scalar](t *testing.T, ctx *cuda.Context, d dense, layout cusolver.Layout) cusolver.Matrix[T] {
	t.Helper()
	buf := cudatest.Upload(t, ctx, append(elements[T](d, layout), 7))
	return cusolver.Matrix[T]{Data: buf, Rows: d.r, Cols: d.c, Layout: layout}
}

// read waits for h's stream and reads the r×c matrix at the start of b,
// laid out in layout.
func read[T scalar](t *testing.T, h *cusolver.Handle, b *cuda.DeviceBuffer[T], r, c int, layout cusolver.Layout) dense {
	t.Helper()
	if err := h.Stream().Synchronize(); err != nil {
		t.Fatal(err)
	}
	return fromElements(cudatest.Download(t, b), r, c, layout)
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
func tol[T scalar](n int) float64 {
	switch any(*new(T)).(type) {
	case float32:
		return 2e-3 * float64(max(n, 1))
	case complex64:
		return 3e-3 * float64(max(n, 1))
	}
	return 1e-9 * float64(max(n, 1))
}

// orthonormal checks that the columns of q, of T's numbers, are
// orthonormal: QᵀQ = I (QᴴQ = I for the complex types).
func orthonormal[T scalar](t *testing.T, name string, q dense, eps float64) {
	t.Helper()
	if d := maxDiff(mul(q.h(), q), eye(q.c)); d > eps {
		t.Errorf("%s%s·%s differs from I by %g", name, adj[T](), name, d)
	}
}

// inTriangle reports whether (i, j) is in triangle tri, the diagonal
// included.
func inTriangle(tri cusolver.Triangle, i, j int) bool {
	if tri == cusolver.Lower {
		return i >= j
	}
	return i <= j
}

// eachCase runs f as a subtest for each size in ns, count in counts,
// layout and triangle, named n/count/layout/tri, or n/layout/tri where
// counts is nil (f's count 0).
func eachCase(t *testing.T, ns, counts []int, f func(t *testing.T, n, count int, layout cusolver.Layout, tri cusolver.Triangle)) {
	t.Helper()
	name := func(n, count int) string { return fmt.Sprintf("%d/%d", n, count) }
	if counts == nil {
		counts, name = []int{0}, func(n, _ int) string { return fmt.Sprint(n) }
	}
	for _, n := range ns {
		for _, count := range counts {
			for _, layout := range layouts {
				for _, tri := range triangles {
					t.Run(fmt.Sprintf("%s/%v/%v", name(n, count), layout, tri), func(t *testing.T) { f(t, n, count, layout, tri) })
				}
			}
		}
	}
}

// marked returns a copy of a with marker outside triangle tri, where a
// call must neither read nor write.
func marked(a dense, tri cusolver.Triangle, marker complex128) dense {
	o := newDense(a.r, a.c)
	for i := 0; i < a.r; i++ {
		for j := 0; j < a.c; j++ {
			o.set(i, j, a.at(i, j))
			if !inTriangle(tri, i, j) {
				o.set(i, j, marker)
			}
		}
	}
	return o
}

// layouts are both layouts, named.
var layouts = []cusolver.Layout{cusolver.RowMajor, cusolver.ColMajor}

// triangles are both triangles.
var triangles = []cusolver.Triangle{cusolver.Lower, cusolver.Upper}

// sizes are the odd sizes every operation is checked at.
var sizes = []int{1, 3, 97}
