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

// The batches' sizes and counts for the complex batched calls.
var (
	batchSizes  = []int{1, 3, 8, 32}
	batchCounts = []int{1, 7, 100}
)

// zhpd returns a random Hermitian positive definite n×n matrix.
func zhpd(rng *rand.Rand, n int) zdense {
	r := zrandom(rng, n, n)
	a := zmul(r, r.h())
	for i := 0; i < n; i++ {
		a.set(i, i, complex(real(a.at(i, i))+float64(n), 0))
	}
	return a
}

// zdownload waits for h's stream and returns b's elements as complex128.
func zdownload[T complex64 | complex128](t *testing.T, h *cusolver.Handle, b *cuda.DeviceBuffer[T]) []complex128 {
	t.Helper()
	if err := h.Stream().Synchronize(); err != nil {
		t.Fatal(err)
	}
	v := cudatest.Download(t, b)
	out := make([]complex128, len(v))
	for i, x := range v {
		out[i] = complex128(x)
	}
	return out
}

// zfrom reads the r×c matrix at the start of v in layout.
func zfrom(v []complex128, r, c int, layout cusolver.Layout) zdense {
	o := newZ(r, c)
	for i := 0; i < r; i++ {
		for j := 0; j < c; j++ {
			k := i*c + j
			if layout == cusolver.ColMajor {
				k = j*r + i
			}
			o.set(i, j, v[k])
		}
	}
	return o
}

// conjugated returns d with each element conjugated.
func conjugated(d zdense) zdense {
	o := newZ(d.r, d.c)
	for i, x := range d.v {
		o.v[i] = cmplx.Conj(x)
	}
	return o
}

func TestComplexCholeskyBatched(t *testing.T) {
	t.Run("complex64", testComplexCholeskyBatched[complex64])
	t.Run("complex128", testComplexCholeskyBatched[complex128])
}

// testComplexCholeskyBatched: each factor of a batch of Hermitian positive
// definite matrices (L·Lᴴ or Uᴴ·U = A in the triangle asked for, the other
// triangle untouched), in both layouts and triangles (the row-major Lower
// and column-major Upper through the transposes, the others in place),
// and matrix 3 of a batch of 7 or more not positive definite: its info.
func testComplexCholeskyBatched[T complex64 | complex128](t *testing.T) {
	ctx, h := handle(t)
	rng := rand.New(rand.NewPCG(31, 32))
	for _, n := range batchSizes {
		for _, count := range batchCounts {
			for _, layout := range layouts {
				for _, tri := range []cusolver.Triangle{cusolver.Lower, cusolver.Upper} {
					t.Run(fmt.Sprintf("%d/%d/%v/%v", n, count, layout, tri), func(t *testing.T) {
						checkZCholeskyBatch[T](t, ctx, h, rng, layout, tri, n, count)
					})
				}
			}
		}
	}
}

// checkZCholeskyBatch factors one complex batch and checks each matrix
// (matrix 3 of a batch of 7 or more not positive definite).
func checkZCholeskyBatch[T complex64 | complex128](t *testing.T, ctx *cuda.Context, h *cusolver.Handle, rng *rand.Rand, layout cusolver.Layout, tri cusolver.Triangle, n, count int) {
	t.Helper()
	mine := func(i, j int) bool { return tri == cusolver.Lower && j <= i || tri == cusolver.Upper && j >= i }
	bad := -1
	if count >= 7 {
		bad = 3
	}
	as := make([]zdense, count)
	all := make([]T, 0, n*n*count)
	for k := range as {
		a := zhpd(rng, n)
		if k == bad {
			a.set(0, 0, -1)
		}
		as[k] = a
		in := newZ(n, n)
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				if mine(i, j) {
					in.set(i, j, a.at(i, j))
				} else {
					in.set(i, j, 42)
				}
			}
		}
		all = append(all, zelements[T](in, layout)...)
	}
	buf := cudatest.Upload(t, ctx, all)
	defer buf.Free()
	info := must(cusolver.CholeskyBatched(h, cusolver.Matrix[T]{Data: buf, Rows: n, Cols: n, Layout: layout}, count, tri))(t)
	err := info.Err()
	if bad < 0 && err != nil {
		t.Fatal(err)
	}
	if bad >= 0 && (!errors.Is(err, cusolver.ErrNotPositiveDefinite) || !strings.Contains(err.Error(), "matrix 3: the leading minor of order 1")) {
		t.Errorf("Err = %v, want matrix 3's leading minor of order 1", err)
	}
	got := zdownload(t, h, buf)
	for k, a := range as {
		g := zfrom(got[k*n*n:], n, n, layout)
		l := newZ(n, n) // A = L·Lᴴ
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				switch {
				case !mine(i, j):
					if g.at(i, j) != 42 {
						t.Fatalf("matrix %d: element (%d,%d) outside the triangle changed to %v", k, i, j, g.at(i, j))
					}
				case tri == cusolver.Lower:
					l.set(i, j, g.at(i, j))
				default:
					l.set(j, i, cmplx.Conj(g.at(i, j))) // L = Uᴴ
				}
			}
		}
		if k == bad {
			continue
		}
		if d := zdiff(zmul(l, l.h()), a); d > ztol[T](n)*float64(n) {
			t.Fatalf("%v %v n %d: matrix %d: the factor's product differs from A by %g", layout, tri, n, k, d)
		}
	}
}

// TestComplexCholeskyBatchedTransposes (fake): a complex row-major Lower
// and column-major Upper batch go through two cuBLASLt transforms (plain
// transposes, not conjugate ones), the other two through none, each
// factored right; with the complex descriptor refused, every layout and
// triangle is factored right in place, and the real types still
// transpose.
func TestComplexCholeskyBatchedTransposes(t *testing.T) {
	fake := cudatest.Fake(t)
	if fake == nil {
		return
	}
	ctx := cudatest.Context(t)
	rng := rand.New(rand.NewPCG(39, 40))
	transforms := func() int { return fake.Counts()["cublasLtMatrixTransform"] }
	t.Run("calls", func(t *testing.T) {
		s := cudatest.Stream(t, ctx)
		h := must(cusolver.New(s))(t)
		defer h.Close()
		for _, c := range []struct {
			layout cusolver.Layout
			tri    cusolver.Triangle
			want   int
		}{{cusolver.RowMajor, cusolver.Lower, 2}, {cusolver.ColMajor, cusolver.Upper, 2}, {cusolver.RowMajor, cusolver.Upper, 0}, {cusolver.ColMajor, cusolver.Lower, 0}} {
			fake.ResetCounts()
			checkZCholeskyBatch[complex64](t, ctx, h, rng, c.layout, c.tri, 8, 7)
			checkZCholeskyBatch[complex128](t, ctx, h, rng, c.layout, c.tri, 5, 3)
			if got := transforms(); got != 2*c.want {
				t.Errorf("%v %v: %d transforms, want %d", c.layout, c.tri, got, 2*c.want)
			}
		}
	})
	t.Run("refused", func(t *testing.T) {
		s := cudatest.Stream(t, ctx)
		h := must(cusolver.New(s))(t)
		defer h.Close()
		fake.Fail("cublasLtMatrixTransformDescCreate", 1, 15) // CUBLAS_STATUS_NOT_SUPPORTED
		defer fake.ResetFaults()
		fake.ResetCounts()
		for _, layout := range layouts {
			for _, tri := range []cusolver.Triangle{cusolver.Lower, cusolver.Upper} {
				checkZCholeskyBatch[complex64](t, ctx, h, rng, layout, tri, 6, 7)
			}
		}
		if got := transforms(); got != 0 {
			t.Errorf("%d transforms after complex64's refusal, want 0", got)
		}
		checkCholeskyBatch[float32](t, ctx, h, rng, cusolver.RowMajor, cusolver.Lower, 4, 3)
		if got := transforms(); got != 2 {
			t.Errorf("float32 after complex64's refusal: %d transforms, want 2", got)
		}
	})
}

func TestComplexSVDBatched(t *testing.T) {
	t.Run("complex64", testComplexSVDBatched[complex64, float32])
	t.Run("complex128", testComplexSVDBatched[complex128, float64])
}

// testComplexSVDBatched: A = U·S·Vᴴ for each matrix of a batch, U and V
// unitary, S descending, square and rectangular, in both layouts (a
// row-major batch's vectors come out conjugated); and s of the wrong real
// type refused.
func testComplexSVDBatched[T complex64 | complex128, R float32 | float64](t *testing.T) {
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
					as := make([]zdense, count)
					all := make([]T, 0, m*n*count)
					for i := range as {
						as[i] = zrandom(rng, m, n)
						all = append(all, zelements[T](as[i], layout)...)
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
					sv, uv, vv := floats(t, h, s), zdownload(t, h, u), zdownload(t, h, v)
					eps := ztol[T](max(m, n))
					for i, a := range as {
						ud := zfrom(uv[i*m*m:], m, m, cusolver.ColMajor)
						vd := zfrom(vv[i*n*n:], n, n, cusolver.ColMajor)
						if layout == cusolver.RowMajor {
							ud, vd = conjugated(ud), conjugated(vd)
						}
						sm := newZ(m, n)
						for j := 0; j < k; j++ {
							if j > 0 && sv[i*k+j] > sv[i*k+j-1]*(1+1e-5) {
								t.Errorf("matrix %d: singular values not descending: %v", i, sv[i*k:(i+1)*k])
							}
							sm.set(j, j, complex(sv[i*k+j], 0))
						}
						unitary(t, "U", ud, eps)
						unitary(t, "V", vd, eps)
						if d := zdiff(zmul(zmul(ud, sm), vd.h()), a); d > eps*float64(max(m, n)) {
							t.Fatalf("matrix %d: U·S·Vᴴ differs from A by %g", i, d)
						}
					}
				})
			}
		}
	}
	t.Run("values alone", func(t *testing.T) {
		a := zrandom(rng, 4, 4)
		buf := cudatest.Upload(t, ctx, zelements[T](a, cusolver.RowMajor))
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
		if math.Abs(fro-sum) > ztol[T](4)*fro {
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

func TestComplexEighBatched(t *testing.T) {
	t.Run("complex64", testComplexEighBatched[complex64, float32])
	t.Run("complex128", testComplexEighBatched[complex128, float64])
}

// testComplexEighBatched: A·V = V·Λ for each Hermitian matrix of a batch,
// V unitary, Λ ascending, read from the triangle asked for alone, in both
// layouts (a row-major batch's vectors come out conjugated); and w of the
// wrong real type refused.
func testComplexEighBatched[T complex64 | complex128, R float32 | float64](t *testing.T) {
	ctx, h := handle(t)
	rng := rand.New(rand.NewPCG(35, 36))
	for _, n := range batchSizes {
		for _, count := range batchCounts {
			for _, layout := range layouts {
				for _, tri := range []cusolver.Triangle{cusolver.Lower, cusolver.Upper} {
					t.Run(fmt.Sprintf("%d/%d/%v/%v", n, count, layout, tri), func(t *testing.T) {
						as := make([]zdense, count)
						all := make([]T, 0, n*n*count)
						for k := range as {
							r := zrandom(rng, n, n)
							a := zmul(r, r.h())
							for i := 0; i < n; i++ {
								a.set(i, i, complex(real(a.at(i, i)), 0))
							}
							as[k] = a
							in := newZ(n, n)
							copy(in.v, a.v)
							for i := 0; i < n; i++ {
								for j := 0; j < n; j++ {
									if tri == cusolver.Lower && j > i || tri == cusolver.Upper && j < i {
										in.set(i, j, 42)
									}
								}
							}
							all = append(all, zelements[T](in, layout)...)
						}
						buf := cudatest.Upload(t, ctx, all)
						w := must(cuda.Alloc[R](ctx, n*count))(t)
						defer func() { buf.Free(); w.Free() }()
						info := must(cusolver.EighBatched(h, cusolver.Matrix[T]{Data: buf, Rows: n, Cols: n, Layout: layout}, count, tri, w, true))(t)
						if err := info.Err(); err != nil {
							t.Fatal(err)
						}
						wv, vv := floats(t, h, w), zdownload(t, h, buf)
						eps := ztol[T](n)
						for k, a := range as {
							v := zfrom(vv[k*n*n:], n, n, cusolver.ColMajor)
							if layout == cusolver.RowMajor {
								v = conjugated(v)
							}
							lam := newZ(n, n)
							for j := 0; j < n; j++ {
								if j > 0 && wv[k*n+j] < wv[k*n+j-1]-eps {
									t.Errorf("matrix %d: eigenvalues not ascending: %v", k, wv[k*n:(k+1)*n])
								}
								lam.set(j, j, complex(wv[k*n+j], 0))
							}
							unitary(t, "V", v, eps)
							if d := zdiff(zmul(a, v), zmul(v, lam)); d > eps*float64(n)*float64(n) {
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

func TestComplexLeastSquares(t *testing.T) {
	t.Run("complex64", testComplexLeastSquares[complex64])
	t.Run("complex128", testComplexLeastSquares[complex128])
}

// testComplexLeastSquares: the residual of an overdetermined complex
// system is orthogonal to A's columns (Aᴴ·(A·X - B) = 0), an exact
// system's solution is its X, and a rank-deficient A is ErrSingular.
func testComplexLeastSquares[T complex64 | complex128](t *testing.T) {
	ctx, h := handle(t)
	rng := rand.New(rand.NewPCG(37, 38))
	for _, shape := range [][2]int{{1, 1}, {3, 3}, {5, 3}, {97, 40}} {
		m, n := shape[0], shape[1]
		t.Run(fmt.Sprintf("%dx%d", m, n), func(t *testing.T) {
			a := zrandom(rng, m, n)
			for i := 0; i < n; i++ {
				a.set(i, i, a.at(i, i)+2)
			}
			b := zrandom(rng, m, 2)
			am := cusolver.Matrix[T]{Data: cudatest.Upload(t, ctx, zelements[T](a, cusolver.ColMajor)), Rows: m, Cols: n, Layout: cusolver.ColMajor}
			bb := cudatest.Upload(t, ctx, zelements[T](b, cusolver.ColMajor))
			x := must(cuda.Alloc[T](ctx, n*2))(t)
			defer func() { am.Data.Free(); bb.Free(); x.Free() }()
			info := must(cusolver.LeastSquares(h, am, bb, x, 2))(t)
			if err := info.Err(); err != nil {
				t.Fatal(err)
			}
			r := zmul(a, zfrom(zdownload(t, h, x), n, 2, cusolver.ColMajor))
			for i := range r.v {
				r.v[i] -= b.v[i]
			}
			if d := zdiff(zmul(a.h(), r), newZ(n, 2)); d > ztol[T](m)*10 {
				t.Errorf("Aᴴ·(A·X - B) is %g from zero", d)
			}
			if m == n {
				// Exact: X solves A·X = B.
				if d := zdiff(r, newZ(m, 2)); d > ztol[T](m)*10 {
					t.Errorf("A·X - B is %g from zero for a square A", d)
				}
			}
		})
	}
	t.Run("rank-deficient", func(t *testing.T) {
		a := zdense{3, 2, []complex128{1i, 0, 2, 0, 3 + 1i, 0}} // the second column zero
		am := cusolver.Matrix[T]{Data: cudatest.Upload(t, ctx, zelements[T](a, cusolver.ColMajor)), Rows: 3, Cols: 2, Layout: cusolver.ColMajor}
		bb := cudatest.Upload(t, ctx, []T{1, 2i, 3})
		x := must(cuda.Alloc[T](ctx, 2))(t)
		defer func() { am.Data.Free(); bb.Free(); x.Free() }()
		info := must(cusolver.LeastSquares(h, am, bb, x, 1))(t)
		if err := info.Err(); !errors.Is(err, cusolver.ErrSingular) || !errors.Is(err, cusolver.ResultIRSMatrixSingular) {
			t.Errorf("Err = %v, want ErrSingular and ResultIRSMatrixSingular", err)
		}
	})
	t.Run("row-major", func(t *testing.T) {
		buf := must(cuda.Alloc[T](ctx, 6))(t)
		defer buf.Free()
		if _, err := cusolver.LeastSquares(h, cusolver.NewMatrix(buf, 3, 2), buf, buf, 1); !errors.Is(err, cuda.ErrInvalidValue) {
			t.Errorf("LeastSquares of a row-major matrix = %v, want cuda.ErrInvalidValue", err)
		}
	})
}
