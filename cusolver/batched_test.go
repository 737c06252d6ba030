package cusolver_test

import (
	"errors"
	"fmt"
	"math"
	"math/cmplx"
	"math/rand/v2"
	"strings"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/cusolver"
	"github.com/gocuda/cuda/internal/cudatest"
)

// The batches' sizes and counts.
var (
	batchSizes  = []int{1, 3, 8, 32}
	batchCounts = []int{1, 7, 100}
)

func TestCholeskyBatched(t *testing.T) {
	eachType(t, testCholeskyBatched[float32], testCholeskyBatched[float64], testCholeskyBatched[complex64], testCholeskyBatched[complex128])
}

// testCholeskyBatched: each factor of a batch of Hermitian positive
// definite matrices against the CPU's, the other triangle untouched, in
// both layouts and triangles, and a batch's middle matrix (of 7 or more)
// not positive definite: its info (checkCholeskyBatch).
func testCholeskyBatched[T scalar](t *testing.T) {
	ctx, h := handle(t)
	rng := rand.New(rand.NewPCG(31, 32))
	for _, n := range batchSizes {
		for _, count := range batchCounts {
			for _, layout := range layouts {
				for _, tri := range triangles {
					t.Run(fmt.Sprintf("%d/%d/%v/%v", n, count, layout, tri), func(t *testing.T) {
						checkCholeskyBatch[T](t, ctx, h, rng, layout, tri, n, count)
					})
				}
			}
		}
	}
}

func TestSVDBatched(t *testing.T) {
	eachType(t, testSVDBatched[float32, float32], testSVDBatched[float64, float64], testSVDBatched[complex64, float32], testSVDBatched[complex128, float64])
}

// testSVDBatched: A = U·S·Vᴴ for each matrix of a batch, U and V
// orthonormal, S descending, square and rectangular, in both layouts (a
// complex row-major batch's vectors come out conjugated); and s of the
// wrong real type refused.
func testSVDBatched[T scalar, R cuda.Float](t *testing.T) {
	ctx, h := handle(t)
	rng := rand.New(rand.NewPCG(33, 34))
	type shape struct{ m, n int }
	var shapes []shape
	for _, n := range batchSizes {
		shapes = append(shapes, shape{n, n})
	}
	shapes = append(shapes, shape{5, 3}, shape{3, 5})
	for _, sh := range shapes {
		for _, count := range batchCounts {
			for _, layout := range layouts {
				t.Run(fmt.Sprintf("%dx%d/%d/%v", sh.m, sh.n, count, layout), func(t *testing.T) {
					m, n, k := sh.m, sh.n, min(sh.m, sh.n)
					as := make([]dense, count)
					all := make([]T, 0, m*n*count)
					for i := range as {
						as[i] = random[T](rng, m, n)
						all = append(all, elements[T](as[i], layout)...)
					}
					buf := cudatest.Upload(t, ctx, all)
					s := must(cuda.Alloc[R](ctx, k*count))(t)
					u := must(cuda.Alloc[T](ctx, m*m*count))(t)
					v := must(cuda.Alloc[T](ctx, n*n*count))(t)
					defer func() { buf.Free(); s.Free(); u.Free(); v.Free() }()
					info := must(cusolver.SVDBatched(h, cusolver.Matrix[T]{Data: buf, Rows: m, Cols: n, Layout: layout}, count, s, u, v))(t)
					if err := info.Err(); err != nil {
						t.Fatal(err)
					}
					sv, uv, vv := floats(t, h, s), read(t, h, u, m*m*count, 1, cusolver.ColMajor), read(t, h, v, n*n*count, 1, cusolver.ColMajor)
					// The products' tolerances: the complex types' n times
					// the reals'.
					eps, slack := tol[T](max(m, n)), 1.0
					if isComplex[T]() {
						slack = float64(max(m, n))
					}
					for i, a := range as {
						ud := fromElements(uv.v[i*m*m:], m, m, cusolver.ColMajor)
						vd := fromElements(vv.v[i*n*n:], n, n, cusolver.ColMajor)
						if layout == cusolver.RowMajor {
							ud, vd = conjugated(ud), conjugated(vd)
						}
						sm := newDense(m, n)
						for j := 0; j < k; j++ {
							if j > 0 && sv[i*k+j] > sv[i*k+j-1]*(1+1e-5) {
								t.Errorf("matrix %d: singular values not descending: %v", i, sv[i*k:(i+1)*k])
							}
							sm.set(j, j, complex(sv[i*k+j], 0))
						}
						orthonormal[T](t, "U", ud, tol[T](m))
						orthonormal[T](t, "V", vd, tol[T](n))
						if d := maxDiff(mul(mul(ud, sm), vd.h()), a); d > eps*slack {
							t.Fatalf("matrix %d: U·S·V%s differs from A by %g", i, adj[T](), d)
						}
					}
				})
			}
		}
	}
	t.Run("values alone", func(t *testing.T) {
		a := random[T](rng, 4, 4)
		buf := cudatest.Upload(t, ctx, elements[T](a, cusolver.RowMajor))
		s := must(cuda.Alloc[R](ctx, 4))(t)
		defer func() { buf.Free(); s.Free() }()
		info := must(cusolver.SVDBatched(h, cusolver.NewMatrix(buf, 4, 4), 1, s, nil, nil))(t)
		if err := info.Err(); err != nil {
			t.Fatal(err)
		}
		fro, sum := 0.0, 0.0
		for _, x := range a.v {
			fro += real(x)*real(x) + imag(x)*imag(x)
		}
		for _, x := range floats(t, h, s) {
			sum += x * x
		}
		if math.Abs(fro-sum) > tol[T](4)*fro {
			t.Errorf("the squares of the singular values sum to %g, want ||A||² = %g", sum, fro)
		}
	})
	t.Run("wrong real type", func(t *testing.T) {
		buf := must(cuda.Alloc[T](ctx, 4))(t)
		defer buf.Free()
		r32, r64 := must(cuda.Alloc[float32](ctx, 2))(t), must(cuda.Alloc[float64](ctx, 2))(t)
		defer func() { r32.Free(); r64.Free() }()
		var err error
		if _, single := any(R(0)).(float32); single {
			_, err = cusolver.SVDBatched(h, cusolver.NewMatrix(buf, 2, 2), 1, r64, nil, nil)
		} else {
			_, err = cusolver.SVDBatched(h, cusolver.NewMatrix(buf, 2, 2), 1, r32, nil, nil)
		}
		if !errors.Is(err, cuda.ErrInvalidValue) || !strings.Contains(err.Error(), "wants") {
			t.Errorf("SVDBatched with s of the other precision = %v, want cuda.ErrInvalidValue naming the type wanted", err)
		}
	})
}

func TestEighBatched(t *testing.T) {
	eachType(t, testEighBatched[float32, float32], testEighBatched[float64, float64], testEighBatched[complex64, float32], testEighBatched[complex128, float64])
}

// testEighBatched: A·V = V·Λ for each Hermitian matrix of a batch, V
// orthonormal, Λ ascending, read from the triangle asked for alone, in
// both layouts (a complex row-major batch's vectors come out conjugated);
// and w of the wrong real type refused.
func testEighBatched[T scalar, R cuda.Float](t *testing.T) {
	ctx, h := handle(t)
	rng := rand.New(rand.NewPCG(35, 36))
	for _, n := range batchSizes {
		for _, count := range batchCounts {
			for _, layout := range layouts {
				for _, tri := range triangles {
					t.Run(fmt.Sprintf("%d/%d/%v/%v", n, count, layout, tri), func(t *testing.T) {
						as := make([]dense, count)
						all := make([]T, 0, n*n*count)
						for k := range as {
							r := random[T](rng, n, n)
							a := mul(r, r.h())
							as[k] = a
							in := newDense(n, n)
							copy(in.v, a.v)
							for i := 0; i < n; i++ {
								for j := 0; j < n; j++ {
									if !inTriangle(tri, i, j) {
										in.set(i, j, 42)
									}
								}
							}
							all = append(all, elements[T](in, layout)...)
						}
						buf := cudatest.Upload(t, ctx, all)
						w := must(cuda.Alloc[R](ctx, n*count))(t)
						defer func() { buf.Free(); w.Free() }()
						info := must(cusolver.EighBatched(h, cusolver.Matrix[T]{Data: buf, Rows: n, Cols: n, Layout: layout}, count, tri, w, true))(t)
						if err := info.Err(); err != nil {
							t.Fatal(err)
						}
						wv, vv := floats(t, h, w), read(t, h, buf, n*n*count, 1, cusolver.ColMajor)
						eps, slack := tol[T](n), 1.0
						if isComplex[T]() {
							slack = float64(n)
						}
						for k, a := range as {
							v := fromElements(vv.v[k*n*n:], n, n, cusolver.ColMajor)
							if layout == cusolver.RowMajor {
								v = conjugated(v)
							}
							lam := newDense(n, n)
							for j := 0; j < n; j++ {
								if j > 0 && wv[k*n+j] < wv[k*n+j-1]-eps {
									t.Errorf("matrix %d: eigenvalues not ascending: %v", k, wv[k*n:(k+1)*n])
								}
								lam.set(j, j, complex(wv[k*n+j], 0))
							}
							orthonormal[T](t, "V", v, eps)
							if d := maxDiff(mul(a, v), mul(v, lam)); d > eps*float64(n)*slack {
								t.Fatalf("matrix %d: A·V differs from V·Λ by %g", k, d)
							}
						}
					})
				}
			}
		}
	}
	t.Run("wrong real type", func(t *testing.T) {
		buf := must(cuda.Alloc[T](ctx, 4))(t)
		defer buf.Free()
		r32, r64 := must(cuda.Alloc[float32](ctx, 2))(t), must(cuda.Alloc[float64](ctx, 2))(t)
		defer func() { r32.Free(); r64.Free() }()
		var err error
		if _, single := any(R(0)).(float32); single {
			_, err = cusolver.EighBatched(h, cusolver.NewMatrix(buf, 2, 2), 1, cusolver.Lower, r64, false)
		} else {
			_, err = cusolver.EighBatched(h, cusolver.NewMatrix(buf, 2, 2), 1, cusolver.Lower, r32, false)
		}
		if !errors.Is(err, cuda.ErrInvalidValue) || !strings.Contains(err.Error(), "wants") {
			t.Errorf("EighBatched with w of the other precision = %v, want cuda.ErrInvalidValue naming the type wanted", err)
		}
	})
}

// conjugated returns d with each element conjugated.
func conjugated(d dense) dense {
	o := newDense(d.r, d.c)
	for i, x := range d.v {
		o.v[i] = cmplx.Conj(x)
	}
	return o
}
