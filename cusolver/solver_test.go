package cusolver_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/cusolver"
	"github.com/gocuda/cuda/internal/cudatest"
)

// sizes are the odd sizes every operation is checked at.
var sizes = []int{1, 3, 97}

func TestLU(t *testing.T) {
	t.Run("float32", testLU[float32])
	t.Run("float64", testLU[float64])
}

// testLU: A·X = B solved through LU and Solve, for each layout, with one
// and three right-hand sides.
func testLU[T cuda.Float](t *testing.T) {
	ctx, h := handle(t)
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range sizes {
		for _, layout := range layouts {
			for _, nrhs := range []int{1, 3} {
				t.Run(fmt.Sprintf("%d/%v/nrhs%d", n, layout, nrhs), func(t *testing.T) {
					a := random(rng, n, n)
					for i := 0; i < n; i++ {
						a.add(i, i, 2) // away from singular
					}
					x := random(rng, n, nrhs)
					b := mul(a, x)
					m := upload[T](t, ctx, a, layout)
					f := must(cusolver.LU(h, m))(t)
					defer f.Free()
					// B column-major: each right-hand side contiguous.
					bb := cudatest.Upload(t, ctx, elements[T](b, cusolver.ColMajor))
					if err := cusolver.Solve(h, f, bb, nrhs); err != nil {
						t.Fatal(err)
					}
					if err := f.Err(); err != nil {
						t.Fatalf("Err = %v", err)
					}
					got := fromElements(floats(t, h, bb), n, nrhs, cusolver.ColMajor)
					if d := maxDiff(got, x); d > tol[T](n) {
						t.Errorf("X differs from the reference by %g", d)
					}
				})
			}
		}
	}
}

func TestLUSingular(t *testing.T) {
	ctx, h := handle(t)
	// Column-major, cuSOLVER factors it as it is: the third column is
	// zero, so U(3,3) is exactly zero whatever the pivots.
	a := dense{3, 3, []float64{1, 2, 0, 3, 4, 0, 5, 6, 0}}
	m := upload[float64](t, ctx, a, cusolver.ColMajor)
	f := must(cusolver.LU(h, m))(t)
	defer f.Free()
	err := f.Err()
	if !errors.Is(err, cusolver.ErrSingular) || !strings.Contains(err.Error(), "pivot 3 is exactly zero") {
		t.Fatalf("Err of a singular matrix = %v, want ErrSingular naming pivot 3", err)
	}
	if again := f.Err(); again != err {
		t.Errorf("a second Err = %v, want the first's answer", again)
	}
}

func TestCholesky(t *testing.T) {
	t.Run("float32", testCholesky[float32])
	t.Run("float64", testCholesky[float64])
}

// testCholesky: the factor in the triangle asked for (L·Lᵀ or Uᵀ·U = A,
// the other triangle untouched), solves, and the inverse's triangle.
func testCholesky[T cuda.Float](t *testing.T) {
	ctx, h := handle(t)
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range sizes {
		for _, layout := range layouts {
			for _, tri := range []cusolver.Triangle{cusolver.Lower, cusolver.Upper} {
				t.Run(fmt.Sprintf("%d/%v/%v", n, layout, tri), func(t *testing.T) {
					a := spd(rng, n)
					// The triangle not read holds a marker, which must
					// survive.
					in := newDense(n, n)
					copy(in.v, a.v)
					for i := 0; i < n; i++ {
						for j := 0; j < n; j++ {
							if (tri == cusolver.Lower && j > i) || (tri == cusolver.Upper && j < i) {
								in.set(i, j, 42)
							}
						}
					}
					m := upload[T](t, ctx, in, layout)
					f := must(cusolver.Cholesky(h, m, tri))(t)
					if err := f.Err(); err != nil {
						t.Fatal(err)
					}
					got := download(t, h, m)
					l := newDense(n, n)
					for i := 0; i < n; i++ {
						for j := 0; j < n; j++ {
							switch {
							case tri == cusolver.Lower && j <= i:
								l.set(i, j, got.at(i, j))
							case tri == cusolver.Upper && j >= i:
								l.set(j, i, got.at(i, j)) // Uᵀ = L
							case got.at(i, j) != 42:
								t.Fatalf("element (%d,%d) outside the triangle changed to %g", i, j, got.at(i, j))
							}
						}
					}
					if d := maxDiff(mul(l, l.t()), a); d > tol[T](n)*float64(n) {
						t.Errorf("the factor's product differs from A by %g", d)
					}
					x := random(rng, n, 2)
					b := cudatest.Upload(t, ctx, elements[T](mul(a, x), cusolver.ColMajor))
					if err := cusolver.CholeskySolve(h, f, b, 2); err != nil {
						t.Fatal(err)
					}
					if d := maxDiff(fromElements(floats(t, h, b), n, 2, cusolver.ColMajor), x); d > tol[T](n) {
						t.Errorf("CholeskySolve's X differs from the reference by %g", d)
					}
					info := must(cusolver.CholeskyInverse(h, f))(t)
					if err := info.Err(); err != nil {
						t.Fatal(err)
					}
					got = download(t, h, m)
					inv := newDense(n, n)
					for i := 0; i < n; i++ {
						for j := 0; j < n; j++ {
							if tri == cusolver.Lower && j <= i || tri == cusolver.Upper && j >= i {
								inv.set(i, j, got.at(i, j))
								inv.set(j, i, got.at(i, j))
							}
						}
					}
					if d := maxDiff(mul(a, inv), eye(n)); d > tol[T](n) {
						t.Errorf("A·CholeskyInverse differs from I by %g", d)
					}
				})
			}
		}
	}
}

func TestCholeskyNotPositiveDefinite(t *testing.T) {
	ctx, h := handle(t)
	// The leading 2×2 is positive definite, the 3×3 not (its
	// determinant is negative).
	a := dense{3, 3, []float64{4, 2, 2, 2, 5, 7, 2, 7, 1}}
	for _, layout := range layouts {
		m := upload[float32](t, ctx, a, layout)
		f := must(cusolver.Cholesky(h, m, cusolver.Lower))(t)
		err := f.Err()
		if !errors.Is(err, cusolver.ErrNotPositiveDefinite) || !strings.Contains(err.Error(), "leading minor of order 3 is not positive definite") {
			t.Errorf("%v: Err = %v, want ErrNotPositiveDefinite naming the minor of order 3", layout, err)
		}
	}
}

func TestQR(t *testing.T) {
	t.Run("float32", testQR[float32])
	t.Run("float64", testQR[float64])
}

// testQR: Q·R = A with Q's columns orthonormal and R upper triangular,
// ApplyQ against Q formed, for tall and square matrices.
func testQR[T cuda.Float](t *testing.T) {
	ctx, h := handle(t)
	rng := rand.New(rand.NewPCG(5, 6))
	for _, shape := range [][2]int{{1, 1}, {3, 3}, {5, 3}, {97, 97}, {97, 13}} {
		m, n := shape[0], shape[1]
		t.Run(fmt.Sprintf("%dx%d", m, n), func(t *testing.T) {
			a := random(rng, m, n)
			mat := upload[T](t, ctx, a, cusolver.ColMajor)
			f := must(cusolver.QR(h, mat))(t)
			defer f.Free()
			q := upload[T](t, ctx, newDense(m, n), cusolver.ColMajor)
			if err := cusolver.QRQ(h, f, q); err != nil {
				t.Fatal(err)
			}
			qd, rd := download(t, h, q), download(t, h, mat)
			r := newDense(n, n)
			for i := 0; i < n; i++ {
				for j := i; j < n; j++ {
					r.set(i, j, rd.at(i, j))
				}
			}
			orthogonal(t, "Q", qd, tol[T](m))
			if d := maxDiff(mul(qd, r), a); d > tol[T](m) {
				t.Errorf("Q·R differs from A by %g", d)
			}
			// Qᵀ·B's first n rows are Q's columns' products with B.
			b := random(rng, m, 2)
			c := upload[T](t, ctx, b, cusolver.ColMajor)
			if err := cusolver.ApplyQ(h, f, c, true); err != nil {
				t.Fatal(err)
			}
			got, want := download(t, h, c), mul(qd.t(), b)
			top := newDense(n, 2)
			copy(top.v, got.v[:n*2])
			if d := maxDiff(top, want); d > tol[T](m) {
				t.Errorf("ApplyQ(Qᵀ) differs from Qᵀ·B by %g", d)
			}
			// And back: Q·(Qᵀ·B) = B.
			if err := cusolver.ApplyQ(h, f, c, false); err != nil {
				t.Fatal(err)
			}
			if d := maxDiff(download(t, h, c), b); d > tol[T](m) {
				t.Errorf("ApplyQ(Q) of ApplyQ(Qᵀ) differs from B by %g", d)
			}
		})
	}
}

func TestSVD(t *testing.T) {
	t.Run("float32", testSVD[float32])
	t.Run("float64", testSVD[float64])
}

// testSVD: U·S·Vᵀ = A, U and V orthogonal, values descending, for the
// shapes each layout takes, and the values alone.
func testSVD[T cuda.Float](t *testing.T) {
	ctx, h := handle(t)
	rng := rand.New(rand.NewPCG(7, 8))
	for _, c := range []struct {
		m, n   int
		layout cusolver.Layout
	}{{1, 1, cusolver.RowMajor}, {3, 5, cusolver.RowMajor}, {97, 97, cusolver.RowMajor}, {5, 3, cusolver.ColMajor}, {97, 40, cusolver.ColMajor}, {3, 3, cusolver.ColMajor}} {
		t.Run(fmt.Sprintf("%dx%d/%v", c.m, c.n, c.layout), func(t *testing.T) {
			a := random(rng, c.m, c.n)
			k := min(c.m, c.n)
			mat := upload[T](t, ctx, a, c.layout)
			s := must(cuda.Alloc[T](ctx, k))(t)
			defer s.Free()
			u := upload[T](t, ctx, newDense(c.m, c.m), c.layout)
			vt := upload[T](t, ctx, newDense(c.n, c.n), c.layout)
			info := must(cusolver.SVD(h, mat, s, u, vt))(t)
			if err := info.Err(); err != nil {
				t.Fatal(err)
			}
			sv, ud, vd := floats(t, h, s), download(t, h, u), download(t, h, vt)
			for i := 1; i < k; i++ {
				if sv[i] > sv[i-1] {
					t.Fatalf("singular values not descending: %v", sv)
				}
			}
			orthogonal(t, "U", ud, tol[T](c.m))
			orthogonal(t, "V", vd.t(), tol[T](c.n))
			sm := newDense(c.m, c.n)
			for i := 0; i < k; i++ {
				sm.set(i, i, sv[i])
			}
			if d := maxDiff(mul(mul(ud, sm), vd), a); d > tol[T](max(c.m, c.n)) {
				t.Errorf("U·S·Vᵀ differs from A by %g", d)
			}
			// The values alone.
			mat2 := upload[T](t, ctx, a, c.layout)
			s2 := must(cuda.Alloc[T](ctx, k))(t)
			defer s2.Free()
			info = must(cusolver.SVD(h, mat2, s2, cusolver.Matrix[T]{}, cusolver.Matrix[T]{}))(t)
			if err := info.Err(); err != nil {
				t.Fatal(err)
			}
			for i, x := range floats(t, h, s2) {
				if math.Abs(x-sv[i]) > tol[T](c.m) {
					t.Errorf("value %d alone is %g, with the vectors %g", i, x, sv[i])
				}
			}
		})
	}
}

func TestEigh(t *testing.T) {
	t.Run("float32", testEigh[float32])
	t.Run("float64", testEigh[float64])
}

// testEigh: A·V = V·Λ with V orthogonal and Λ ascending, the vectors
// contiguous, reading either triangle of either layout.
func testEigh[T cuda.Float](t *testing.T) {
	ctx, h := handle(t)
	rng := rand.New(rand.NewPCG(9, 10))
	for _, n := range sizes {
		for _, layout := range layouts {
			for _, tri := range []cusolver.Triangle{cusolver.Lower, cusolver.Upper} {
				t.Run(fmt.Sprintf("%d/%v/%v", n, layout, tri), func(t *testing.T) {
					r := random(rng, n, n)
					a := mul(r, r.t())
					in := newDense(n, n)
					copy(in.v, a.v)
					for i := 0; i < n; i++ {
						for j := 0; j < n; j++ {
							if (tri == cusolver.Lower && j > i) || (tri == cusolver.Upper && j < i) {
								in.set(i, j, 1e6) // never read
							}
						}
					}
					m := upload[T](t, ctx, in, layout)
					w := must(cuda.Alloc[T](ctx, n))(t)
					defer w.Free()
					info := must(cusolver.Eigh(h, m, tri, w, true))(t)
					if err := info.Err(); err != nil {
						t.Fatal(err)
					}
					wv := floats(t, h, w)
					// Each vector contiguous: V column-major.
					v := fromElements(floats(t, h, m.Data)[:n*n], n, n, cusolver.ColMajor)
					for i := 1; i < n; i++ {
						if wv[i] < wv[i-1] {
							t.Fatalf("eigenvalues not ascending: %v", wv)
						}
					}
					orthogonal(t, "V", v, tol[T](n))
					lam := newDense(n, n)
					for i := 0; i < n; i++ {
						lam.set(i, i, wv[i])
					}
					if d := maxDiff(mul(a, v), mul(v, lam)); d > tol[T](n)*float64(n) {
						t.Errorf("A·V differs from V·Λ by %g", d)
					}
				})
			}
		}
	}
}

func TestBatched(t *testing.T) {
	t.Run("float32", testBatched[float32])
	t.Run("float64", testBatched[float64])
}

// testBatched: the batches of small matrices, each checked as the single
// operations are, and a batch with one matrix not positive definite.
func testBatched[T cuda.Float](t *testing.T) {
	ctx, h := handle(t)
	rng := rand.New(rand.NewPCG(11, 12))
	const count = 5
	t.Run("Cholesky", func(t *testing.T) {
		const n = 8
		var all []T
		var as []dense
		for i := 0; i < count; i++ {
			a := spd(rng, n)
			if i == 3 {
				a.set(0, 0, -1)
			}
			as = append(as, a)
			all = append(all, elements[T](a, cusolver.RowMajor)...)
		}
		buf := cudatest.Upload(t, ctx, all)
		m := cusolver.Matrix[T]{Data: buf, Rows: n, Cols: n}
		info := must(cusolver.CholeskyBatched(h, m, count, cusolver.Lower))(t)
		err := info.Err()
		if !errors.Is(err, cusolver.ErrNotPositiveDefinite) || !strings.Contains(err.Error(), "matrix 3: the leading minor of order 1") {
			t.Errorf("Err = %v, want matrix 3's leading minor of order 1", err)
		}
		got := floats(t, h, buf)
		for i, a := range as {
			if i == 3 {
				continue
			}
			g := fromElements(got[i*n*n:(i+1)*n*n], n, n, cusolver.RowMajor)
			l := newDense(n, n)
			for r := 0; r < n; r++ {
				for c := 0; c <= r; c++ {
					l.set(r, c, g.at(r, c))
				}
			}
			if d := maxDiff(mul(l, l.t()), a); d > tol[T](n)*n {
				t.Errorf("matrix %d: L·Lᵀ differs from A by %g", i, d)
			}
		}
	})
	for _, c := range []struct {
		m, n   int
		layout cusolver.Layout
	}{{8, 8, cusolver.RowMajor}, {5, 3, cusolver.RowMajor}, {3, 5, cusolver.ColMajor}, {1, 1, cusolver.ColMajor}} {
		t.Run(fmt.Sprintf("SVD/%dx%d/%v", c.m, c.n, c.layout), func(t *testing.T) {
			k := min(c.m, c.n)
			var all []T
			var as []dense
			for i := 0; i < count; i++ {
				a := random(rng, c.m, c.n)
				as = append(as, a)
				all = append(all, elements[T](a, c.layout)...)
			}
			buf := cudatest.Upload(t, ctx, all)
			s := must(cuda.Alloc[T](ctx, k*count))(t)
			u := must(cuda.Alloc[T](ctx, c.m*c.m*count))(t)
			v := must(cuda.Alloc[T](ctx, c.n*c.n*count))(t)
			defer s.Free()
			defer u.Free()
			defer v.Free()
			info := must(cusolver.SVDBatched(h, cusolver.Matrix[T]{Data: buf, Rows: c.m, Cols: c.n, Layout: c.layout}, count, s, u, v))(t)
			if err := info.Err(); err != nil {
				t.Fatal(err)
			}
			sv, uv, vv := floats(t, h, s), floats(t, h, u), floats(t, h, v)
			for i, a := range as {
				ud := fromElements(uv[i*c.m*c.m:(i+1)*c.m*c.m], c.m, c.m, cusolver.ColMajor)
				vd := fromElements(vv[i*c.n*c.n:(i+1)*c.n*c.n], c.n, c.n, cusolver.ColMajor)
				sm := newDense(c.m, c.n)
				for j := 0; j < k; j++ {
					sm.set(j, j, sv[i*k+j])
				}
				orthogonal(t, "U", ud, tol[T](c.m))
				orthogonal(t, "V", vd, tol[T](c.n))
				if d := maxDiff(mul(mul(ud, sm), vd.t()), a); d > tol[T](8) {
					t.Errorf("matrix %d: U·S·Vᵀ differs from A by %g", i, d)
				}
			}
		})
	}
	t.Run("Eigh", func(t *testing.T) {
		const n = 7
		var all []T
		var as []dense
		for i := 0; i < count; i++ {
			r := random(rng, n, n)
			a := mul(r, r.t())
			as = append(as, a)
			all = append(all, elements[T](a, cusolver.RowMajor)...)
		}
		buf := cudatest.Upload(t, ctx, all)
		w := must(cuda.Alloc[T](ctx, n*count))(t)
		defer w.Free()
		info := must(cusolver.EighBatched(h, cusolver.Matrix[T]{Data: buf, Rows: n, Cols: n}, count, cusolver.Upper, w, true))(t)
		if err := info.Err(); err != nil {
			t.Fatal(err)
		}
		wv, vv := floats(t, h, w), floats(t, h, buf)
		for i, a := range as {
			v := fromElements(vv[i*n*n:(i+1)*n*n], n, n, cusolver.ColMajor)
			lam := newDense(n, n)
			for j := 0; j < n; j++ {
				lam.set(j, j, wv[i*n+j])
			}
			orthogonal(t, "V", v, tol[T](n))
			if d := maxDiff(mul(a, v), mul(v, lam)); d > tol[T](n)*n {
				t.Errorf("matrix %d: A·V differs from V·Λ by %g", i, d)
			}
		}
	})
}

// TestWorkspaceReused: a second call of the same size allocates no
// workspace; a larger one grows it.
func TestWorkspaceReused(t *testing.T) {
	ctx, h := handle(t)
	rng := rand.New(rand.NewPCG(13, 14))
	lu := func(n int) {
		f := must(cusolver.LU(h, upload[float64](t, ctx, spd(rng, n), cusolver.RowMajor)))(t)
		if err := f.Err(); err != nil {
			t.Fatal(err)
		}
		f.Free()
	}
	lu(16)
	d1, _ := h.WorkspaceBytes()
	lu(16)
	if d2, _ := h.WorkspaceBytes(); d2 != d1 || d1 == 0 {
		t.Errorf("workspace %d bytes after one LU, %d after two: want the same, not zero", d1, d2)
	}
	lu(200)
	if d3, _ := h.WorkspaceBytes(); d3 < d1 || cudatest.IsFake() && d3 == d1 {
		t.Errorf("workspace %d bytes after a larger LU: want at least %d (more on the fake, whose sizes grow with n)", d3, d1)
	}
}

func TestLeastSquares(t *testing.T) {
	t.Run("float32", testLeastSquares[float32])
	t.Run("float64", testLeastSquares[float64])
}

// testLeastSquares: the solution of an overdetermined system makes the
// residual orthogonal to A's columns (Aᵀ·(A·X - B) = 0), and an exact
// system's solution is its X; a rank-deficient A is ErrSingular.
func testLeastSquares[T cuda.Float](t *testing.T) {
	ctx, h := handle(t)
	rng := rand.New(rand.NewPCG(15, 16))
	for _, shape := range [][2]int{{1, 1}, {3, 3}, {5, 3}, {97, 40}} {
		m, n := shape[0], shape[1]
		t.Run(fmt.Sprintf("%dx%d", m, n), func(t *testing.T) {
			a := random(rng, m, n)
			for i := 0; i < n; i++ {
				a.add(i, i, 2)
			}
			b := random(rng, m, 2)
			am := upload[T](t, ctx, a, cusolver.ColMajor)
			bb := cudatest.Upload(t, ctx, elements[T](b, cusolver.ColMajor))
			x := must(cuda.Alloc[T](ctx, n*2))(t)
			defer x.Free()
			info := must(cusolver.LeastSquares(h, am, bb, x, 2))(t)
			if err := info.Err(); err != nil {
				t.Fatal(err)
			}
			xd := fromElements(floats(t, h, x), n, 2, cusolver.ColMajor)
			r := mul(a, xd)
			for i := range r.v {
				r.v[i] -= b.v[i]
			}
			if d := maxDiff(mul(a.t(), r), newDense(n, 2)); d > tol[T](m)*10 {
				t.Errorf("Aᵀ·(A·X - B) is %g from zero", d)
			}
		})
	}
	t.Run("rank-deficient", func(t *testing.T) {
		a := dense{3, 2, []float64{1, 0, 2, 0, 3, 0}} // the second column zero
		am := upload[T](t, ctx, a, cusolver.ColMajor)
		bb := cudatest.Upload(t, ctx, []T{1, 2, 3})
		x := must(cuda.Alloc[T](ctx, 2))(t)
		defer x.Free()
		info := must(cusolver.LeastSquares(h, am, bb, x, 1))(t)
		// cuSOLVER's gels writes -CUSOLVER_STATUS_IRS_MATRIX_SINGULAR
		// (-30) in its info for it (cuSOLVER 12 on an H100; the fake too).
		err := info.Err()
		if !errors.Is(err, cusolver.ErrSingular) || !errors.Is(err, cusolver.ResultIRSMatrixSingular) || !strings.Contains(err.Error(), "lacks full column rank") {
			t.Errorf("Err = %v, want ErrSingular and ResultIRSMatrixSingular, saying the matrix lacks full column rank", err)
		}
	})
}

// TestConcurrentCalls: one handle's calls from several goroutines take
// turns, each solving its own system right.
func TestConcurrentCalls(t *testing.T) {
	ctx, h := handle(t)
	const workers, n = 4, 20
	type job struct {
		m    cusolver.Matrix[float64]
		b    *cuda.DeviceBuffer[float64]
		want dense
	}
	rng := rand.New(rand.NewPCG(17, 18))
	jobs := make([]job, workers)
	for i := range jobs {
		a := spd(rng, n)
		x := random(rng, n, 1)
		jobs[i] = job{upload[float64](t, ctx, a, cusolver.RowMajor), cudatest.Upload(t, ctx, elements[float64](mul(a, x), cusolver.ColMajor)), x}
	}
	errs := make(chan error, workers)
	for _, j := range jobs {
		go func() {
			f, err := cusolver.LU(h, j.m)
			if err == nil {
				err = cusolver.Solve(h, f, j.b, 1)
				err = errors.Join(err, f.Err(), f.Free())
			}
			errs <- err
		}()
	}
	for range workers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for i, j := range jobs {
		got := fromElements(floats(t, h, j.b), n, 1, cusolver.ColMajor)
		if d := maxDiff(got, j.want); d > tol[float64](n) {
			t.Errorf("worker %d: X differs by %g", i, d)
		}
	}
}
