package cusolver_test

import (
	"errors"
	"fmt"
	"math"
	"math/cmplx"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/cusolver"
	"github.com/gocuda/cuda/internal/cudatest"
)

func TestLU(t *testing.T) {
	eachType(t, 1, testLU[float32], testLU[float64], testLU[complex64], testLU[complex128])
}

// testLU: A·X = B solved through LU and Solve, for each layout, with one
// and three right-hand sides (a complex row-major A's memory is Aᵀ, not
// Aᴴ: the transposed solve, not the conjugate one).
func testLU[T scalar](t *testing.T, ctx *cuda.Context, h *cusolver.Handle, rng *rand.Rand) {
	for _, n := range sizes {
		for _, layout := range layouts {
			for _, nrhs := range []int{1, 3} {
				t.Run(fmt.Sprintf("%d/%v/nrhs%d", n, layout, nrhs), func(t *testing.T) {
					a := random[T](rng, n, n)
					for i := 0; i < n; i++ {
						a.add(i, i, 2) // away from singular
					}
					x := random[T](rng, n, nrhs)
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
					if d := maxDiff(read(t, h, bb, n, nrhs, cusolver.ColMajor), x); d > tol[T](n) {
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
	a := dense{3, 3, []complex128{1, 2, 0, 3, 4, 0, 5, 6, 0}}
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
	eachType(t, 3, testCholesky[float32], testCholesky[float64], testCholesky[complex64], testCholesky[complex128])
}

// testCholesky: the factor in the triangle asked for (L·Lᴴ or Uᴴ·U = A,
// the other triangle untouched), solves, and the inverse's triangle, in
// either layout; a complex factor's solve column-major, the row-major one
// refused.
func testCholesky[T scalar](t *testing.T, ctx *cuda.Context, h *cusolver.Handle, rng *rand.Rand) {
	eachCase(t, sizes, nil, func(t *testing.T, n, _ int, layout cusolver.Layout, tri cusolver.Triangle) {
		a := hpd[T](rng, n)
		// The triangle not read holds a marker, which must survive.
		in := marked(a, tri, 42)
		m := upload[T](t, ctx, in, layout)
		f := must(cusolver.Cholesky(h, m, tri))(t)
		if err := f.Err(); err != nil {
			t.Fatal(err)
		}
		got := read(t, h, m.Data, n, n, layout)
		l := newDense(n, n) // L, with A = L·Lᴴ
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				switch {
				case !inTriangle(tri, i, j):
					if got.at(i, j) != 42 {
						t.Fatalf("element (%d,%d) outside the triangle changed to %g", i, j, got.at(i, j))
					}
				case tri == cusolver.Lower:
					l.set(i, j, got.at(i, j))
				default:
					l.set(j, i, cmplx.Conj(got.at(i, j))) // L = Uᴴ
				}
			}
		}
		if d := maxDiff(mul(l, l.h()), a); d > tol[T](n)*float64(n) {
			t.Errorf("the factor's product differs from A by %g", d)
		}
		x := random[T](rng, n, 2)
		b := cudatest.Upload(t, ctx, elements[T](mul(a, x), cusolver.ColMajor))
		err := cusolver.CholeskySolve(h, f, b, 2)
		switch {
		case isComplex[T]() && layout == cusolver.RowMajor:
			if !errors.Is(err, cuda.ErrInvalidValue) {
				t.Errorf("CholeskySolve of a complex row-major factor = %v, want cuda.ErrInvalidValue", err)
			}
		case err != nil:
			t.Fatal(err)
		default:
			if d := maxDiff(read(t, h, b, n, 2, cusolver.ColMajor), x); d > tol[T](n) {
				t.Errorf("CholeskySolve's X differs from the reference by %g", d)
			}
		}
		info := must(cusolver.CholeskyInverse(h, f))(t)
		if err := info.Err(); err != nil {
			t.Fatal(err)
		}
		got = read(t, h, m.Data, n, n, layout)
		inv := newDense(n, n)
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				if inTriangle(tri, i, j) {
					inv.set(i, j, got.at(i, j))
					inv.set(j, i, cmplx.Conj(got.at(i, j)))
				}
			}
		}
		if d := maxDiff(mul(a, inv), eye(n)); d > tol[T](n) {
			t.Errorf("A·CholeskyInverse differs from I by %g", d)
		}
	})
}

func TestCholeskyNotPositiveDefinite(t *testing.T) {
	ctx, h := handle(t)
	// The leading 2×2 is positive definite, the 3×3 not (its
	// determinant is negative).
	a := dense{3, 3, []complex128{4, 2, 2, 2, 5, 7, 2, 7, 1}}
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
	eachType(t, 5, testQR[float32], testQR[float64], testQR[complex64], testQR[complex128])
}

// testQR: Q·R = A with Q's columns orthonormal (QᴴQ = I) and R upper
// triangular, ApplyQ's Qᴴ·B against Q formed and back, for tall and
// square matrices, and a wide one's R (Q from ApplyQ, QRQ refused).
func testQR[T scalar](t *testing.T, ctx *cuda.Context, h *cusolver.Handle, rng *rand.Rand) {
	for _, shape := range [][2]int{{1, 1}, {3, 3}, {5, 3}, {97, 97}, {97, 13}} {
		m, n := shape[0], shape[1]
		t.Run(fmt.Sprintf("%dx%d", m, n), func(t *testing.T) {
			a := random[T](rng, m, n)
			mat := upload[T](t, ctx, a, cusolver.ColMajor)
			f := must(cusolver.QR(h, mat))(t)
			defer f.Free()
			q := upload[T](t, ctx, newDense(m, n), cusolver.ColMajor)
			if err := cusolver.QRQ(h, f, q); err != nil {
				t.Fatal(err)
			}
			qd, rd := read(t, h, q.Data, m, n, cusolver.ColMajor), read(t, h, mat.Data, m, n, cusolver.ColMajor)
			r := newDense(n, n)
			for i := 0; i < n; i++ {
				for j := i; j < n; j++ {
					r.set(i, j, rd.at(i, j))
				}
			}
			orthonormal[T](t, "Q", qd, tol[T](m))
			if d := maxDiff(mul(qd, r), a); d > tol[T](m) {
				t.Errorf("Q·R differs from A by %g", d)
			}
			// Qᴴ·B's first n rows are Q's columns' products with B.
			b := random[T](rng, m, 2)
			c := upload[T](t, ctx, b, cusolver.ColMajor)
			if err := cusolver.ApplyQ(h, f, c, true); err != nil {
				t.Fatal(err)
			}
			got, want := read(t, h, c.Data, m, 2, cusolver.ColMajor), mul(qd.h(), b)
			top := newDense(n, 2)
			copy(top.v, got.v[:n*2])
			if d := maxDiff(top, want); d > tol[T](m) {
				t.Errorf("ApplyQ(Q%s) differs from Q%s·B by %g", adj[T](), adj[T](), d)
			}
			// And back: Q·(Qᴴ·B) = B.
			if err := cusolver.ApplyQ(h, f, c, false); err != nil {
				t.Fatal(err)
			}
			if d := maxDiff(read(t, h, c.Data, m, 2, cusolver.ColMajor), b); d > tol[T](m) {
				t.Errorf("ApplyQ(Q) of ApplyQ(Q%s) differs from B by %g", adj[T](), d)
			}
		})
	}
	t.Run("wide", func(t *testing.T) {
		// A 3×5 matrix: R is 3×5, Q (3×3) from ApplyQ on I.
		m, n := 3, 5
		a := random[T](rng, m, n)
		mat := upload[T](t, ctx, a, cusolver.ColMajor)
		f := must(cusolver.QR(h, mat))(t)
		defer f.Free()
		id := upload[T](t, ctx, eye(m), cusolver.ColMajor)
		if err := cusolver.ApplyQ(h, f, id, false); err != nil {
			t.Fatal(err)
		}
		qd, rd := read(t, h, id.Data, m, m, cusolver.ColMajor), read(t, h, mat.Data, m, n, cusolver.ColMajor)
		for i := 0; i < m; i++ {
			for j := 0; j < i; j++ {
				rd.set(i, j, 0)
			}
		}
		orthonormal[T](t, "Q", qd, tol[T](m))
		if d := maxDiff(mul(qd, rd), a); d > tol[T](n) {
			t.Errorf("Q·R differs from A by %g", d)
		}
		if err := cusolver.QRQ(h, f, cusolver.Matrix[T]{Data: id.Data, Rows: m, Cols: n, Layout: cusolver.ColMajor}); !errors.Is(err, cuda.ErrInvalidValue) {
			t.Errorf("QRQ of a wide matrix = %v, want cuda.ErrInvalidValue", err)
		}
	})
}

func TestSVD(t *testing.T) {
	eachType(t, 7, testSVD[float32, float32], testSVD[float64, float64], testSVD[complex64, float32], testSVD[complex128, float64])
}

// testSVD: U·S·Vᴴ = A, U and V orthonormal, values real and descending,
// for the shapes each layout takes, and the values alone.
func testSVD[T scalar, R cuda.Float](t *testing.T, ctx *cuda.Context, h *cusolver.Handle, rng *rand.Rand) {
	for _, c := range []struct {
		m, n   int
		layout cusolver.Layout
	}{{1, 1, cusolver.RowMajor}, {3, 5, cusolver.RowMajor}, {97, 97, cusolver.RowMajor}, {5, 3, cusolver.ColMajor}, {97, 40, cusolver.ColMajor}, {3, 3, cusolver.ColMajor}, {1, 1, cusolver.ColMajor}} {
		t.Run(fmt.Sprintf("%dx%d/%v", c.m, c.n, c.layout), func(t *testing.T) {
			a := random[T](rng, c.m, c.n)
			k := min(c.m, c.n)
			mat := upload[T](t, ctx, a, c.layout)
			s := must(cuda.Alloc[R](ctx, k))(t)
			defer s.Free()
			u := upload[T](t, ctx, newDense(c.m, c.m), c.layout)
			vt := upload[T](t, ctx, newDense(c.n, c.n), c.layout)
			info := must(cusolver.SVD(h, mat, s, u, vt))(t)
			if err := info.Err(); err != nil {
				t.Fatal(err)
			}
			sv := floats(t, h, s)
			ud, vd := read(t, h, u.Data, c.m, c.m, c.layout), read(t, h, vt.Data, c.n, c.n, c.layout)
			for i := 1; i < k; i++ {
				if sv[i] > sv[i-1] {
					t.Fatalf("singular values not descending: %v", sv)
				}
			}
			orthonormal[T](t, "U", ud, tol[T](c.m))
			orthonormal[T](t, "V", vd.h(), tol[T](c.n))
			sm := newDense(c.m, c.n)
			for i := 0; i < k; i++ {
				sm.set(i, i, complex(sv[i], 0))
			}
			if d := maxDiff(mul(mul(ud, sm), vd), a); d > tol[T](max(c.m, c.n)) {
				t.Errorf("U·S·V%s differs from A by %g", adj[T](), d)
			}
			// The values alone.
			mat2 := upload[T](t, ctx, a, c.layout)
			s2 := must(cuda.Alloc[R](ctx, k))(t)
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
	eachType(t, 9, testEigh[float32, float32], testEigh[float64, float64], testEigh[complex64, float32], testEigh[complex128, float64])
}

// testEigh: A·V = V·Λ with V orthonormal and Λ real and ascending, reading
// either triangle of either layout (the other triangle and the diagonal's
// imaginary parts never read); the vectors come out as V column-major, Vᴴ
// row-major (each vector contiguous); without vectors, the same values.
func testEigh[T scalar, R cuda.Float](t *testing.T, ctx *cuda.Context, h *cusolver.Handle, rng *rand.Rand) {
	eachCase(t, sizes, nil, func(t *testing.T, n, _ int, layout cusolver.Layout, tri cusolver.Triangle) {
		r := random[T](rng, n, n)
		a := mul(r, r.h())
		for i := 0; i < n; i++ {
			a.add(i, i, complex(-float64(n)/2, 0)) // some negative eigenvalues
		}
		in := marked(a, tri, 1e6) // never read
		for i := 0; i < n; i++ {
			in.add(i, i, 1e6i) // never read
		}
		m := upload[T](t, ctx, in, layout)
		w := must(cuda.Alloc[R](ctx, n))(t)
		defer w.Free()
		info := must(cusolver.Eigh(h, m, tri, w, true))(t)
		if err := info.Err(); err != nil {
			t.Fatal(err)
		}
		wv := floats(t, h, w)
		for i := 1; i < n; i++ {
			if wv[i] < wv[i-1] {
				t.Fatalf("eigenvalues not ascending: %v", wv)
			}
		}
		v := read(t, h, m.Data, n, n, layout)
		if layout == cusolver.RowMajor {
			v = v.h() // Vᴴ row-major
		}
		orthonormal[T](t, "V", v, tol[T](n))
		lam := newDense(n, n)
		for i := 0; i < n; i++ {
			lam.set(i, i, complex(wv[i], 0))
		}
		if d := maxDiff(mul(a, v), mul(v, lam)); d > tol[T](n)*float64(n) {
			t.Errorf("A·V differs from V·Λ by %g", d)
		}
		// The values alone.
		m2 := upload[T](t, ctx, in, layout)
		w2 := must(cuda.Alloc[R](ctx, n))(t)
		defer w2.Free()
		info = must(cusolver.Eigh(h, m2, tri, w2, false))(t)
		if err := info.Err(); err != nil {
			t.Fatal(err)
		}
		for i, x := range floats(t, h, w2) {
			if math.Abs(x-wv[i]) > tol[T](n)*float64(n) {
				t.Errorf("eigenvalue %d alone is %g, with the vectors %g", i, x, wv[i])
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
		f := must(cusolver.LU(h, upload[float64](t, ctx, hpd[float64](rng, n), cusolver.RowMajor)))(t)
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
	eachType(t, 15, testLeastSquares[float32], testLeastSquares[float64], testLeastSquares[complex64], testLeastSquares[complex128])
}

// testLeastSquares: the solution of an overdetermined system makes the
// residual orthogonal to A's columns (Aᴴ·(A·X - B) = 0), and an exact
// system's solution is its X; a rank-deficient A is ErrSingular; a
// row-major A is refused.
func testLeastSquares[T scalar](t *testing.T, ctx *cuda.Context, h *cusolver.Handle, rng *rand.Rand) {
	for _, shape := range [][2]int{{1, 1}, {3, 3}, {5, 3}, {97, 40}} {
		m, n := shape[0], shape[1]
		t.Run(fmt.Sprintf("%dx%d", m, n), func(t *testing.T) {
			a := random[T](rng, m, n)
			for i := 0; i < n; i++ {
				a.add(i, i, 2)
			}
			b := random[T](rng, m, 2)
			am := upload[T](t, ctx, a, cusolver.ColMajor)
			bb := cudatest.Upload(t, ctx, elements[T](b, cusolver.ColMajor))
			x := must(cuda.Alloc[T](ctx, n*2))(t)
			defer x.Free()
			info := must(cusolver.LeastSquares(h, am, bb, x, 2))(t)
			if err := info.Err(); err != nil {
				t.Fatal(err)
			}
			r := mul(a, read(t, h, x, n, 2, cusolver.ColMajor))
			for i := range r.v {
				r.v[i] -= b.v[i]
			}
			if d := maxDiff(mul(a.h(), r), newDense(n, 2)); d > tol[T](m)*10 {
				t.Errorf("A%s·(A·X - B) is %g from zero", adj[T](), d)
			}
			if m == n {
				// Exact: X solves A·X = B.
				if d := maxDiff(r, newDense(m, 2)); d > tol[T](m)*10 {
					t.Errorf("A·X - B is %g from zero for a square A", d)
				}
			}
		})
	}
	t.Run("rank-deficient", func(t *testing.T) {
		a := dense{3, 2, []complex128{1i, 0, 2, 0, 3 + 1i, 0}} // the second column zero
		am := upload[T](t, ctx, a, cusolver.ColMajor)
		bb := cudatest.Upload(t, ctx, elements[T](dense{3, 1, []complex128{1, 2i, 3}}, cusolver.ColMajor))
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
	t.Run("row-major", func(t *testing.T) {
		buf := must(cuda.Alloc[T](ctx, 6))(t)
		defer buf.Free()
		if _, err := cusolver.LeastSquares(h, cusolver.NewMatrix(buf, 3, 2), buf, buf, 1); !errors.Is(err, cuda.ErrInvalidValue) {
			t.Errorf("LeastSquares of a row-major matrix = %v, want cuda.ErrInvalidValue", err)
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
		a := hpd[float64](rng, n)
		x := random[float64](rng, n, 1)
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
		got := read(t, h, j.b, n, 1, cusolver.ColMajor)
		if d := maxDiff(got, j.want); d > tol[float64](n) {
			t.Errorf("worker %d: X differs by %g", i, d)
		}
	}
}

// TestComplexBadArguments: the real outputs of the wrong precision, and
// a row-major complex QR, refused before calling cuSOLVER.
func TestComplexBadArguments(t *testing.T) {
	ctx, h := handle(t)
	z := func(n int) *cuda.DeviceBuffer[complex128] { return cudatest.Upload(t, ctx, make([]complex128, n)) }
	c := func(n int) *cuda.DeviceBuffer[complex64] { return cudatest.Upload(t, ctx, make([]complex64, n)) }
	f32 := cudatest.Upload(t, ctx, make([]float32, 3))
	f64 := cudatest.Upload(t, ctx, make([]float64, 3))
	sq := cusolver.NewMatrix(z(9), 3, 3)
	for _, tc := range []struct {
		name string
		call func() error
	}{
		{"Eigh complex128 w float32", func() error { _, err := cusolver.Eigh(h, sq, cusolver.Lower, f32, true); return err }},
		{"Eigh complex64 w float64", func() error {
			_, err := cusolver.Eigh(h, cusolver.NewMatrix(c(9), 3, 3), cusolver.Lower, f64, true)
			return err
		}},
		{"Eigh float32 w float64", func() error {
			_, err := cusolver.Eigh(h, cusolver.NewMatrix(cudatest.Upload(t, ctx, make([]float32, 9)), 3, 3), cusolver.Lower, f64, true)
			return err
		}},
		{"SVD complex128 s float32", func() error {
			_, err := cusolver.SVD(h, sq, f32, cusolver.Matrix[complex128]{}, cusolver.Matrix[complex128]{})
			return err
		}},
		{"SVD complex64 short s", func() error {
			_, err := cusolver.SVD(h, cusolver.NewMatrix(c(9), 3, 3), cudatest.Upload(t, ctx, make([]float32, 2)), cusolver.Matrix[complex64]{}, cusolver.Matrix[complex64]{})
			return err
		}},
		{"QR complex row-major", func() error { _, err := cusolver.QR(h, sq); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.call(); !errors.Is(err, cuda.ErrInvalidValue) {
				t.Errorf("err = %v, want cuda.ErrInvalidValue", err)
			}
		})
	}
	// What the error says of the precision.
	_, err := cusolver.Eigh(h, sq, cusolver.Lower, f32, true)
	if want := "float64"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Eigh's error %q does not name %s", err, want)
	}
}

// TestConcurrentMixed: one handle shared by goroutines that each run a
// different operation, several times over (the handle's workspaces grown
// and reused between them, its calls taking turns), each with the right
// answer.
func TestConcurrentMixed(t *testing.T) {
	ctx, h := handle(t)
	const n, rounds = 12, 3
	rng := rand.New(rand.NewPCG(31, 32))
	a := hpd[float64](rng, n)
	x := random[float64](rng, n, 1)
	b := mul(a, x)
	diag := newDense(n, n) // diag(1, ..., n)
	for i := range n {
		diag.set(i, i, complex(float64(i+1), 0))
	}
	vec := func(d dense) *cuda.DeviceBuffer[float64] {
		return cudatest.Upload(t, ctx, elements[float64](d, cusolver.ColMajor))
	}
	ones := make([]complex128, n) // 1, ..., n
	for i := range ones {
		ones[i] = complex(float64(i+1), 0)
	}
	asc, desc := dense{n, 1, ones}, dense{n, 1, slices.Clone(ones)}
	slices.Reverse(desc.v)
	// Each job's buffers are made here, on the test's goroutine; the
	// function returned runs on a worker.
	jobs := map[string]func() func() error{
		"LU": func() func() error {
			m, rhs := upload[float64](t, ctx, a, cusolver.RowMajor), vec(b)
			return func() error {
				f, err := cusolver.LU(h, m)
				if err != nil {
					return err
				}
				return errors.Join(cusolver.Solve(h, f, rhs, 1), f.Err(), f.Free(), near(h, rhs, x))
			}
		},
		"Cholesky": func() func() error {
			m, rhs := upload[float64](t, ctx, a, cusolver.ColMajor), vec(b)
			return func() error {
				f, err := cusolver.Cholesky(h, m, cusolver.Upper)
				if err != nil {
					return err
				}
				return errors.Join(cusolver.CholeskySolve(h, f, rhs, 1), f.Err(), near(h, rhs, x))
			}
		},
		"LeastSquares": func() func() error {
			m, rhs, out := upload[float64](t, ctx, a, cusolver.ColMajor), vec(b), vec(newDense(n, 1))
			return func() error {
				info, err := cusolver.LeastSquares(h, m, rhs, out, 1)
				if err != nil {
					return err
				}
				return errors.Join(info.Err(), near(h, out, x))
			}
		},
		"Eigh": func() func() error {
			m, w := upload[float64](t, ctx, diag, cusolver.RowMajor), vec(newDense(n, 1))
			return func() error {
				info, err := cusolver.Eigh(h, m, cusolver.Lower, w, true)
				if err != nil {
					return err
				}
				return errors.Join(info.Err(), near(h, w, asc))
			}
		},
		"SVD": func() func() error {
			m, s := upload[float64](t, ctx, diag, cusolver.ColMajor), vec(newDense(n, 1))
			return func() error {
				info, err := cusolver.SVD(h, m, s, cusolver.Matrix[float64]{}, cusolver.Matrix[float64]{})
				if err != nil {
					return err
				}
				return errors.Join(info.Err(), near(h, s, desc))
			}
		},
	}
	errs := make(chan error, len(jobs)*rounds)
	var wg sync.WaitGroup
	for name, setup := range jobs {
		runs := make([]func() error, rounds)
		for r := range runs {
			runs[r] = setup()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r, run := range runs {
				if err := run(); err != nil {
					errs <- fmt.Errorf("%s, round %d: %w", name, r, err)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// near waits for h's stream and compares the vector at the start of got
// with want (n×1).
func near(h *cusolver.Handle, got *cuda.DeviceBuffer[float64], want dense) error {
	if err := h.Stream().Synchronize(); err != nil {
		return err
	}
	v := make([]float64, got.Len())
	if err := got.CopyToHost(v); err != nil {
		return err
	}
	if d := maxDiff(fromElements(v, want.r, want.c, cusolver.ColMajor), want); d > tol[float64](want.r) {
		return fmt.Errorf("off by %g", d)
	}
	return nil
}
