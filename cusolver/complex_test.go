package cusolver_test

import (
	"errors"
	"fmt"
	"math/cmplx"
	"math/rand/v2"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/cusolver"
	"github.com/gocuda/cuda/internal/cudatest"
)

// zdense is a complex host matrix, row-major.
type zdense struct {
	r, c int
	v    []complex128
}

func newZ(r, c int) zdense                  { return zdense{r, c, make([]complex128, r*c)} }
func (d zdense) at(i, j int) complex128     { return d.v[i*d.c+j] }
func (d zdense) set(i, j int, x complex128) { d.v[i*d.c+j] = x }

// h is the conjugate transpose.
func (d zdense) h() zdense {
	o := newZ(d.c, d.r)
	for i := 0; i < d.r; i++ {
		for j := 0; j < d.c; j++ {
			o.set(j, i, cmplx.Conj(d.at(i, j)))
		}
	}
	return o
}

func zmul(a, b zdense) zdense {
	o := newZ(a.r, b.c)
	for i := 0; i < a.r; i++ {
		for k := 0; k < a.c; k++ {
			for j := 0; j < b.c; j++ {
				o.v[i*o.c+j] += a.at(i, k) * b.at(k, j)
			}
		}
	}
	return o
}

func zdiff(a, b zdense) float64 {
	d := 0.0
	for i := range a.v {
		d = max(d, cmplx.Abs(a.v[i]-b.v[i]))
	}
	return d
}

func zrandom(rng *rand.Rand, r, c int) zdense {
	o := newZ(r, c)
	for i := range o.v {
		o.v[i] = complex(2*rng.Float64()-1, 2*rng.Float64()-1)
	}
	return o
}

// zelements lays d out in layout, as T.
func zelements[T complex64 | complex128](d zdense, layout cusolver.Layout) []T {
	out := make([]T, d.r*d.c)
	for i := 0; i < d.r; i++ {
		for j := 0; j < d.c; j++ {
			k := i*d.c + j
			if layout == cusolver.ColMajor {
				k = j*d.r + i
			}
			out[k] = T(d.at(i, j))
		}
	}
	return out
}

func zread[T complex64 | complex128](t *testing.T, h *cusolver.Handle, b *cuda.DeviceBuffer[T], r, c int, layout cusolver.Layout) zdense {
	t.Helper()
	if err := h.Stream().Synchronize(); err != nil {
		t.Fatal(err)
	}
	v := cudatest.Download(t, b)
	o := newZ(r, c)
	for i := 0; i < r; i++ {
		for j := 0; j < c; j++ {
			k := i*c + j
			if layout == cusolver.ColMajor {
				k = j*r + i
			}
			o.set(i, j, complex128(v[k]))
		}
	}
	return o
}

func ztol[T complex64 | complex128](n int) float64 {
	var z T
	if any(z) == any(complex64(0)) {
		return 3e-3 * float64(max(n, 1))
	}
	return 1e-9 * float64(max(n, 1))
}

func TestComplexLU(t *testing.T) {
	t.Run("complex64", testComplexLU[complex64])
	t.Run("complex128", testComplexLU[complex128])
}

// testComplexLU: A·X = B for complex A in both layouts (a row-major A's
// memory is Aᵀ, not Aᴴ: the transposed solve, not the conjugate one).
func testComplexLU[T complex64 | complex128](t *testing.T) {
	ctx, h := handle(t)
	rng := rand.New(rand.NewPCG(21, 22))
	for _, n := range sizes {
		for _, layout := range layouts {
			t.Run(fmt.Sprintf("%d/%v", n, layout), func(t *testing.T) {
				a := zrandom(rng, n, n)
				for i := 0; i < n; i++ {
					a.set(i, i, a.at(i, i)+2)
				}
				x := zrandom(rng, n, 2)
				m := cusolver.Matrix[T]{Data: cudatest.Upload(t, ctx, zelements[T](a, layout)), Rows: n, Cols: n, Layout: layout}
				f := must(cusolver.LU(h, m))(t)
				defer f.Free()
				b := cudatest.Upload(t, ctx, zelements[T](zmul(a, x), cusolver.ColMajor))
				if err := cusolver.Solve(h, f, b, 2); err != nil {
					t.Fatal(err)
				}
				if err := f.Err(); err != nil {
					t.Fatal(err)
				}
				if d := zdiff(zread(t, h, b, n, 2, cusolver.ColMajor), x); d > ztol[T](n) {
					t.Errorf("X differs from the reference by %g", d)
				}
			})
		}
	}
}

func TestComplexCholesky(t *testing.T) {
	t.Run("complex64", testComplexCholesky[complex64])
	t.Run("complex128", testComplexCholesky[complex128])
}

// testComplexCholesky: the factor of a Hermitian positive definite A
// (L·Lᴴ or Uᴴ·U = A in the triangle asked for, the other untouched) and
// its inverse in either layout, the solve column-major, and the row-major
// solve refused.
func testComplexCholesky[T complex64 | complex128](t *testing.T) {
	ctx, h := handle(t)
	rng := rand.New(rand.NewPCG(23, 24))
	for _, n := range sizes {
		for _, layout := range layouts {
			for _, tri := range []cusolver.Triangle{cusolver.Lower, cusolver.Upper} {
				t.Run(fmt.Sprintf("%d/%v/%v", n, layout, tri), func(t *testing.T) {
					r := zrandom(rng, n, n)
					a := zmul(r, r.h())
					for i := 0; i < n; i++ {
						a.set(i, i, complex(real(a.at(i, i))+float64(n), 0))
					}
					in := newZ(n, n)
					copy(in.v, a.v)
					mine := func(i, j int) bool { return tri == cusolver.Lower && j <= i || tri == cusolver.Upper && j >= i }
					for i := 0; i < n; i++ {
						for j := 0; j < n; j++ {
							if !mine(i, j) {
								in.set(i, j, 42)
							}
						}
					}
					buf := cudatest.Upload(t, ctx, zelements[T](in, layout))
					m := cusolver.Matrix[T]{Data: buf, Rows: n, Cols: n, Layout: layout}
					f := must(cusolver.Cholesky(h, m, tri))(t)
					if err := f.Err(); err != nil {
						t.Fatal(err)
					}
					got := zread(t, h, buf, n, n, layout)
					l := newZ(n, n) // L, with A = L·Lᴴ
					for i := 0; i < n; i++ {
						for j := 0; j < n; j++ {
							switch {
							case !mine(i, j):
								if got.at(i, j) != 42 {
									t.Fatalf("element (%d,%d) outside the triangle changed to %v", i, j, got.at(i, j))
								}
							case tri == cusolver.Lower:
								l.set(i, j, got.at(i, j))
							default:
								l.set(j, i, cmplx.Conj(got.at(i, j))) // L = Uᴴ
							}
						}
					}
					if d := zdiff(zmul(l, l.h()), a); d > ztol[T](n)*float64(n) {
						t.Errorf("the factor's product differs from A by %g", d)
					}
					b := cudatest.Upload(t, ctx, make([]T, n))
					err := cusolver.CholeskySolve(h, f, b, 1)
					if layout == cusolver.RowMajor {
						if !errors.Is(err, cuda.ErrInvalidValue) {
							t.Errorf("CholeskySolve of a complex row-major factor = %v, want cuda.ErrInvalidValue", err)
						}
					} else {
						x := zrandom(rng, n, 1)
						b = cudatest.Upload(t, ctx, zelements[T](zmul(a, x), cusolver.ColMajor))
						if err := cusolver.CholeskySolve(h, f, b, 1); err != nil {
							t.Fatal(err)
						}
						if d := zdiff(zread(t, h, b, n, 1, cusolver.ColMajor), x); d > ztol[T](n) {
							t.Errorf("CholeskySolve's X differs from the reference by %g", d)
						}
					}
					info := must(cusolver.CholeskyInverse(h, f))(t)
					if err := info.Err(); err != nil {
						t.Fatal(err)
					}
					got = zread(t, h, buf, n, n, layout)
					inv := newZ(n, n)
					for i := 0; i < n; i++ {
						for j := 0; j < n; j++ {
							if mine(i, j) {
								inv.set(i, j, got.at(i, j))
								inv.set(j, i, cmplx.Conj(got.at(i, j)))
							}
						}
					}
					id := newZ(n, n)
					for i := 0; i < n; i++ {
						id.set(i, i, 1)
					}
					if d := zdiff(zmul(a, inv), id); d > ztol[T](n) {
						t.Errorf("A·CholeskyInverse differs from I by %g", d)
					}
				})
			}
		}
	}
}
