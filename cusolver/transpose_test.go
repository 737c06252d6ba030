package cusolver_test

import (
	"errors"
	"fmt"
	"math"
	"math/cmplx"
	"math/rand/v2"
	"strings"
	"testing"
	"unsafe"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/cusolver"
	"github.com/gocuda/cuda/internal/cudatest"
	"github.com/gocuda/cuda/internal/fakecuda"
)

// cholesky is the CPU's Cholesky factor L (A = L·Lᴴ) of a Hermitian
// positive definite a, or false where a leading minor is not positive
// definite.
func cholesky(a dense) (dense, bool) {
	n := a.r
	l := newDense(n, n)
	for j := 0; j < n; j++ {
		s := real(a.at(j, j))
		for k := 0; k < j; k++ {
			s -= real(l.at(j, k) * cmplx.Conj(l.at(j, k)))
		}
		if s <= 0 {
			return l, false
		}
		l.set(j, j, complex(math.Sqrt(s), 0))
		for i := j + 1; i < n; i++ {
			s := a.at(i, j)
			for k := 0; k < j; k++ {
				s -= l.at(i, k) * cmplx.Conj(l.at(j, k))
			}
			l.set(i, j, s/l.at(j, j))
		}
	}
	return l, true
}

// TestCholeskyBatchedTriangles: every layout and triangle of the batched
// Cholesky against the CPU's factor, with the triangle not named holding
// values that are not the matrix's (it must be neither read nor written),
// at counts 1, 3 and 100 and n 1 to 32, one matrix of each batch of three
// or more not positive definite; through the package's transposes where
// the triangle is cuSOLVER's slow one (TestCholeskyBatchedTransposes
// takes the path without them).
func TestCholeskyBatchedTriangles(t *testing.T) {
	// No seed: each layout and triangle seeds its own (checkCholeskyBatched).
	eachType(t, 0, testCholeskyBatchedTriangles[float32], testCholeskyBatchedTriangles[float64],
		testCholeskyBatchedTriangles[complex64], testCholeskyBatchedTriangles[complex128])
}

func testCholeskyBatchedTriangles[T scalar](t *testing.T, ctx *cuda.Context, h *cusolver.Handle, _ *rand.Rand) {
	for _, layout := range layouts {
		for _, tri := range triangles {
			t.Run(fmt.Sprintf("%v/%v", layout, tri), func(t *testing.T) {
				checkCholeskyBatched[T](t, ctx, h, layout, tri)
			})
		}
	}
}

// checkCholeskyBatched runs the batches of TestCholeskyBatchedTriangles
// on h.
func checkCholeskyBatched[T scalar](t *testing.T, ctx *cuda.Context, h *cusolver.Handle, layout cusolver.Layout, tri cusolver.Triangle) {
	t.Helper()
	rng := rand.New(rand.NewPCG(uint64(layout)+7, uint64(tri)+9))
	for _, count := range []int{1, 3, 100} {
		for n := 1; n <= 32; n++ {
			if count == 100 && n%7 != 1 && n != 32 {
				continue // a few sizes at 100: 1, 8, 15, 22, 29, 32
			}
			checkCholeskyBatch[T](t, ctx, h, rng, layout, tri, n, count)
		}
	}
}

// checkCholeskyBatch factors one batch and checks each matrix.
func checkCholeskyBatch[T scalar](t *testing.T, ctx *cuda.Context, h *cusolver.Handle, rng *rand.Rand, layout cusolver.Layout, tri cusolver.Triangle, n, count int) {
	t.Helper()
	bad := -1
	if count >= 3 {
		bad = count / 2
	}
	minor := min(2, n-1) // the bad matrix's first minor that is not positive definite, 0-based
	var all []T
	as := make([]dense, count)
	for m := range as {
		a := hpd[T](rng, n)
		if m == bad {
			a.set(minor, minor, -a.at(minor, minor))
		}
		as[m] = a
		// The other triangle: values that are not a's, 1000 and more.
		stored := newDense(n, n)
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				if inTriangle(tri, i, j) {
					stored.set(i, j, a.at(i, j))
				} else {
					stored.set(i, j, complex(float64(1000+m*n*n+i*n+j), 0))
				}
			}
		}
		all = append(all, elements[T](stored, layout)...)
	}
	buf := cudatest.Upload(t, ctx, all)
	info, err := cusolver.CholeskyBatched(h, cusolver.Matrix[T]{Data: buf, Rows: n, Cols: n, Layout: layout}, count, tri)
	if err != nil {
		t.Fatalf("n %d count %d: %v", n, count, err)
	}
	err = info.Err()
	if bad < 0 {
		if err != nil {
			t.Errorf("n %d count %d: Err = %v", n, count, err)
		}
	} else {
		want := fmt.Sprintf("matrix %d: the leading minor of order %d ", bad, minor+1)
		if !errors.Is(err, cusolver.ErrNotPositiveDefinite) || !strings.Contains(err.Error(), want) {
			t.Errorf("n %d count %d: Err = %v, want %q", n, count, err, want)
		}
	}
	got := cudatest.Download(t, buf)
	for m, a := range as {
		if m == bad {
			continue
		}
		g := fromElements(got[m*n*n:(m+1)*n*n], n, n, layout)
		l, ok := cholesky(a)
		if !ok {
			t.Fatalf("n %d: matrix %d is not positive definite on the CPU", n, m)
		}
		worst := 0.0
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				if !inTriangle(tri, i, j) {
					if want := of(to[T](complex(float64(1000+m*n*n+i*n+j), 0))); g.at(i, j) != want {
						t.Fatalf("n %d count %d: matrix %d (%d,%d), outside the triangle, is %g, want %g unchanged", n, count, m, i, j, g.at(i, j), want)
					}
					continue
				}
				want := l.at(i, j) // Lower: L
				if tri == cusolver.Upper {
					want = cmplx.Conj(l.at(j, i)) // Upper: U = Lᴴ
				}
				worst = max(worst, cmplx.Abs(g.at(i, j)-want))
			}
		}
		if worst > tol[T](n)*math.Sqrt(float64(n)) {
			t.Errorf("n %d count %d: matrix %d's factor differs from the CPU's by %g", n, count, m, worst)
		}
	}
}

// TestCholeskyBatchedTransposes (fake): a row-major Lower and a
// column-major Upper batch go through two launches of the package's
// transpose, the other two through none; a handle loads the kernel once
// and unloads it at Close (a failed unload fails Close, which can be
// tried again); where the driver refuses the kernel (its PTX, or its
// entry), every batch is factored right in place and the handle does
// not load it again; a misaligned complex64 batch
// takes cuSOLVER's slow triangle; a failure of another kind is the
// call's error and leaves the matrices as they were, and the handle
// works after it.
func TestCholeskyBatchedTransposes(t *testing.T) {
	fake := cudatest.Fake(t)
	if fake == nil {
		return
	}
	rng := rand.New(rand.NewPCG(3, 4))
	launches := func() int { return fake.Counts()["cuLaunchKernel"] }
	t.Run("calls", func(t *testing.T) {
		ctx, h := handle(t)
		for _, c := range []struct {
			layout cusolver.Layout
			tri    cusolver.Triangle
			want   int
		}{{cusolver.RowMajor, cusolver.Lower, 2}, {cusolver.ColMajor, cusolver.Upper, 2}, {cusolver.RowMajor, cusolver.Upper, 0}, {cusolver.ColMajor, cusolver.Lower, 0}} {
			// The complex types' transposes are plain ones, not
			// conjugate ones.
			for _, check := range []struct {
				name string
				run  func()
			}{
				{"float32", func() { checkCholeskyBatch[float32](t, ctx, h, rng, c.layout, c.tri, 8, 9) }},
				{"float64", func() { checkCholeskyBatch[float64](t, ctx, h, rng, c.layout, c.tri, 8, 3) }},
				{"complex64", func() { checkCholeskyBatch[complex64](t, ctx, h, rng, c.layout, c.tri, 8, 7) }},
				{"complex128", func() { checkCholeskyBatch[complex128](t, ctx, h, rng, c.layout, c.tri, 5, 3) }},
			} {
				fake.ResetCounts()
				check.run()
				if got := launches(); got != c.want {
					t.Errorf("%s %v %v: %d transposes, want %d", check.name, c.layout, c.tri, got, c.want)
				}
			}
		}
		// n = 1: either triangle is the element; no transpose.
		fake.ResetCounts()
		checkCholeskyBatch[float32](t, ctx, h, rng, cusolver.RowMajor, cusolver.Lower, 1, 3)
		if got := launches(); got != 0 {
			t.Errorf("1×1: %d transposes, want 0", got)
		}
	})
	t.Run("one module a handle", func(t *testing.T) {
		// A handle loads the kernel at its first transpose, once, and
		// unloads it at Close.
		ctx := cudatest.Context(t)
		fake.ResetCounts()
		for range 2 {
			h := must(cusolver.New(cudatest.Stream(t, ctx)))(t)
			checkCholeskyBatch[float64](t, ctx, h, rng, cusolver.RowMajor, cusolver.Lower, 4, 3)
			checkCholeskyBatch[float32](t, ctx, h, rng, cusolver.ColMajor, cusolver.Upper, 6, 5)
			if err := h.Close(); err != nil {
				t.Fatal(err)
			}
		}
		counts := fake.Counts()
		if counts["cuModuleLoadDataEx"] != 2 || counts["cuModuleUnload"] != 2 {
			t.Errorf("%d modules loaded and %d unloaded, want 2 and 2", counts["cuModuleLoadDataEx"], counts["cuModuleUnload"])
		}
		if got := launches(); got != 8 {
			t.Errorf("%d transposes, want 8", got)
		}
	})
	t.Run("unload fails", func(t *testing.T) {
		// A Close that cannot unload the kernel fails, and leaves the
		// handle usable; the next Close unloads it.
		ctx := cudatest.Context(t)
		h := must(cusolver.New(cudatest.Stream(t, ctx)))(t)
		checkCholeskyBatch[float64](t, ctx, h, rng, cusolver.RowMajor, cusolver.Lower, 4, 3)
		fake.Fail("cuModuleUnload", 1, 999)
		if err := h.Close(); !errors.Is(err, cuda.Result(999)) || !strings.Contains(err.Error(), "transpose") {
			t.Fatalf("Close = %v, want the driver's 999 naming the transpose", err)
		}
		fake.ResetCounts()
		checkCholeskyBatch[float64](t, ctx, h, rng, cusolver.ColMajor, cusolver.Upper, 4, 3)
		if got, loads := launches(), fake.Counts()["cuModuleLoadDataEx"]; got != 2 || loads != 0 {
			t.Errorf("after the failed Close: %d transposes and %d loads, want 2 and 0", got, loads)
		}
		if err := h.Close(); err != nil {
			t.Fatalf("Close again: %v", err)
		}
		if got := fake.Counts()["cuModuleUnload"]; got != 1 {
			t.Errorf("%d unloads, want 1", got)
		}
	})
	for _, c := range []struct {
		call string
		code int
	}{{"cuModuleLoadDataEx", 218}, {"cuModuleLoadDataEx", 222}, {"cuModuleGetFunction", 801}} { // INVALID_PTX, UNSUPPORTED_PTX_VERSION, NOT_SUPPORTED
		t.Run(fmt.Sprintf("refused by %s (%d)", c.call, c.code), func(t *testing.T) {
			ctx, h := handle(t)
			fake.Fail(c.call, 1, c.code)
			fake.ResetCounts()
			for _, layout := range layouts {
				for _, tri := range triangles {
					checkCholeskyBatch[float64](t, ctx, h, rng, layout, tri, 5, 3)
					checkCholeskyBatch[complex64](t, ctx, h, rng, layout, tri, 17, 100)
				}
			}
			if got := launches(); got != 0 {
				t.Errorf("%d transposes after the refusal, want 0", got)
			}
			if got := fake.Counts()["cuModuleLoadDataEx"]; got != 1 {
				t.Errorf("the kernel was loaded %d times, want once", got)
			}
		})
	}
	t.Run("misaligned complex64", func(t *testing.T) {
		// complex64 is 4-byte aligned in Go, and a view may be: the kernel
		// moves 8 bytes at once, so the batch stays where it is.
		ctx, h := handle(t)
		a := hpd[complex64](rng, 4)
		mat := elements[complex64](a, cusolver.RowMajor)
		floats := make([]float32, 1, 1+2*len(mat))
		for _, v := range mat {
			floats = append(floats, real(v), imag(v))
		}
		buf := cudatest.Upload(t, ctx, floats)
		defer buf.Free()
		view := must(cuda.ViewAs[complex64](must(buf.Slice(1, 2*len(mat)))(t)))(t)
		fake.ResetCounts()
		info := must(cusolver.CholeskyBatched(h, cusolver.NewMatrix(view, 4, 4), 1, cusolver.Lower))(t)
		if err := info.Err(); err != nil {
			t.Fatal(err)
		}
		if got := launches(); got != 0 {
			t.Errorf("%d transposes of a batch at %#x, want 0", got, uint64(view.Ptr()))
		}
		l, _ := cholesky(a)
		got := fromElements(cudatest.Download(t, view), 4, 4, cusolver.RowMajor)
		for i := 0; i < 4; i++ {
			for j := 0; j <= i; j++ {
				if d := cmplx.Abs(got.at(i, j) - l.at(i, j)); d > tol[complex64](4) {
					t.Fatalf("(%d,%d) is %v, want %v", i, j, got.at(i, j), l.at(i, j))
				}
			}
		}
	})
	for _, c := range []struct {
		call      string
		nth, code int
	}{{"cuModuleLoadDataEx", 1, 2}, {"cuModuleGetFunction", 1, 2}, {"cuLaunchKernel", 1, 2}, {"cuLaunchKernel", 2, 2}, {"cusolverDnDpotrfBatched", 1, 7}} {
		t.Run(fmt.Sprintf("%s#%d fails", c.call, c.nth), func(t *testing.T) {
			ctx, h := handle(t)
			a := hpd[float64](rng, 4)
			orig := append(elements[float64](a, cusolver.RowMajor), elements[float64](a, cusolver.RowMajor)...)
			buf := cudatest.Upload(t, ctx, orig)
			defer buf.Free()
			fake.Fail(c.call, c.nth, c.code) // CUDA_ERROR_OUT_OF_MEMORY; cuSOLVER's CUSOLVER_STATUS_INTERNAL_ERROR
			_, err := cusolver.CholeskyBatched(h, cusolver.NewMatrix(buf, 4, 4), 2, cusolver.Lower)
			fake.ResetFaults()
			if err == nil || !strings.Contains(err.Error(), "CholeskyBatched") {
				t.Fatalf("err = %v, want CholeskyBatched's error", err)
			}
			if strings.HasPrefix(c.call, "cu") && !strings.HasPrefix(c.call, "cusolver") && !errors.Is(err, cuda.ErrOutOfMemory) {
				t.Errorf("err = %v, want cuda.ErrOutOfMemory", err)
			}
			if got := cudatest.Download(t, buf); fmt.Sprint(got) != fmt.Sprint(orig) {
				t.Errorf("the matrices changed: %v, were %v", got, orig)
			}
			// The handle still works, through the transposes.
			fake.ResetCounts()
			checkCholeskyBatch[float64](t, ctx, h, rng, cusolver.RowMajor, cusolver.Lower, 4, 3)
			if got := launches(); got != 2 {
				t.Errorf("after the failure: %d transposes, want 2", got)
			}
		})
	}
}

// The batches' sizes and counts.
var (
	batchSizes  = []int{1, 3, 8, 32}
	batchCounts = []int{1, 7, 100}
)

func TestCholeskyBatched(t *testing.T) {
	eachType(t, 31, testCholeskyBatched[float32], testCholeskyBatched[float64], testCholeskyBatched[complex64], testCholeskyBatched[complex128])
}

// testCholeskyBatched: each factor of a batch of Hermitian positive
// definite matrices against the CPU's, the other triangle untouched, in
// both layouts and triangles, and a batch's middle matrix (of 7 or more)
// not positive definite: its info (checkCholeskyBatch).
func testCholeskyBatched[T scalar](t *testing.T, ctx *cuda.Context, h *cusolver.Handle, rng *rand.Rand) {
	eachCase(t, batchSizes, batchCounts, func(t *testing.T, n, count int, layout cusolver.Layout, tri cusolver.Triangle) {
		checkCholeskyBatch[T](t, ctx, h, rng, layout, tri, n, count)
	})
}

func TestSVDBatched(t *testing.T) {
	eachType(t, 33, testSVDBatched[float32, float32], testSVDBatched[float64, float64], testSVDBatched[complex64, float32], testSVDBatched[complex128, float64])
}

// testSVDBatched: A = U·S·Vᴴ for each matrix of a batch, U and V
// orthonormal, S descending, square and rectangular, in both layouts (a
// complex row-major batch's vectors come out conjugated); and s of the
// wrong real type refused.
func testSVDBatched[T scalar, R cuda.Float](t *testing.T, ctx *cuda.Context, h *cusolver.Handle, rng *rand.Rand) {
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
		wrongReal[T, R](t, ctx, "SVDBatched with s",
			func(a cusolver.Matrix[T], s *cuda.DeviceBuffer[float32]) error {
				_, err := cusolver.SVDBatched(h, a, 1, s, nil, nil)
				return err
			},
			func(a cusolver.Matrix[T], s *cuda.DeviceBuffer[float64]) error {
				_, err := cusolver.SVDBatched(h, a, 1, s, nil, nil)
				return err
			})
	})
}

func TestEighBatched(t *testing.T) {
	eachType(t, 35, testEighBatched[float32, float32], testEighBatched[float64, float64], testEighBatched[complex64, float32], testEighBatched[complex128, float64])
}

// testEighBatched: A·V = V·Λ for each Hermitian matrix of a batch, V
// orthonormal, Λ ascending, read from the triangle asked for alone, in
// both layouts (a complex row-major batch's vectors come out conjugated);
// and w of the wrong real type refused.
func testEighBatched[T scalar, R cuda.Float](t *testing.T, ctx *cuda.Context, h *cusolver.Handle, rng *rand.Rand) {
	eachCase(t, batchSizes, batchCounts, func(t *testing.T, n, count int, layout cusolver.Layout, tri cusolver.Triangle) {
		as := make([]dense, count)
		all := make([]T, 0, n*n*count)
		for k := range as {
			r := random[T](rng, n, n)
			a := mul(r, r.h())
			as[k] = a
			all = append(all, elements[T](marked(a, tri, 42), layout)...)
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
	t.Run("wrong real type", func(t *testing.T) {
		wrongReal[T, R](t, ctx, "EighBatched with w",
			func(a cusolver.Matrix[T], w *cuda.DeviceBuffer[float32]) error {
				_, err := cusolver.EighBatched(h, a, 1, cusolver.Lower, w, false)
				return err
			},
			func(a cusolver.Matrix[T], w *cuda.DeviceBuffer[float64]) error {
				_, err := cusolver.EighBatched(h, a, 1, cusolver.Lower, w, false)
				return err
			})
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

// wrongReal checks that a call on a 2×2 matrix of T refuses a real buffer
// of the other precision than R's (call32's or call64's), with
// cuda.ErrInvalidValue naming the type wanted.
func wrongReal[T scalar, R cuda.Float](t *testing.T, ctx *cuda.Context, what string,
	call32 func(cusolver.Matrix[T], *cuda.DeviceBuffer[float32]) error, call64 func(cusolver.Matrix[T], *cuda.DeviceBuffer[float64]) error) {
	t.Helper()
	buf := must(cuda.Alloc[T](ctx, 4))(t)
	defer buf.Free()
	r32, r64 := must(cuda.Alloc[float32](ctx, 2))(t), must(cuda.Alloc[float64](ctx, 2))(t)
	defer func() { r32.Free(); r64.Free() }()
	a := cusolver.NewMatrix(buf, 2, 2)
	var err error
	if _, single := any(R(0)).(float32); single {
		err = call64(a, r64)
	} else {
		err = call32(a, r32)
	}
	if !errors.Is(err, cuda.ErrInvalidValue) || !strings.Contains(err.Error(), "wants") {
		t.Errorf("%s of the other precision = %v, want cuda.ErrInvalidValue naming the type wanted", what, err)
	}
}

// TestCholeskyTransposes (fake): Cholesky of one matrix in cuSOLVER's
// slow triangle (row-major Lower, column-major Upper) goes through two
// launches of the transpose, as CholeskyBatched's batch does, the other
// two and a 1×1 matrix through none; testCholesky checks the factors of
// all four.
func TestCholeskyTransposes(t *testing.T) {
	fake := cudatest.Fake(t)
	if fake == nil {
		return
	}
	ctx, h := handle(t)
	rng := rand.New(rand.NewPCG(5, 6))
	for _, c := range []struct {
		layout cusolver.Layout
		tri    cusolver.Triangle
		n      int
		want   int
	}{
		{cusolver.RowMajor, cusolver.Lower, 97, 2}, {cusolver.ColMajor, cusolver.Upper, 33, 2},
		{cusolver.RowMajor, cusolver.Upper, 97, 0}, {cusolver.ColMajor, cusolver.Lower, 33, 0},
		{cusolver.RowMajor, cusolver.Lower, 1, 0},
	} {
		m := upload[float64](t, ctx, hpd[float64](rng, c.n), c.layout)
		fake.ResetCounts()
		f, err := cusolver.Cholesky(h, m, c.tri)
		if err == nil {
			err = f.Err()
		}
		if err != nil {
			t.Fatalf("%v %v n %d: %v", c.layout, c.tri, c.n, err)
		}
		if got := fake.Counts()["cuLaunchKernel"]; got != c.want {
			t.Errorf("%v %v n %d: %d transposes, want %d", c.layout, c.tri, c.n, got, c.want)
		}
	}
}

// TestTransposeEntries: the driver compiles both of the transpose's
// entries (the tiled one declares 16,896 bytes of shared memory and
// synchronizes its block), where a refusal would leave CholeskyBatched
// only slower.
func TestTransposeEntries(t *testing.T) {
	ctx := cudatest.Context(t)
	mod, err := ctx.LoadModule([]byte(cusolver.TransposePTX))
	if err != nil {
		t.Fatalf("loading the transpose's PTX: %v", err)
	}
	defer mod.Close()
	for _, name := range []string{"gocuda_transpose_batch", "gocuda_transpose_tiled"} {
		if _, err := mod.Function(name); err != nil {
			t.Errorf("the transpose's entry %s: %v", name, err)
		}
	}
}

// TestTransposeSizes: both of the kernel's entries against the host's
// transposes at sizes around their tiles' edges (31 and 33 of the
// element entry's 32×8 tiles, 63 to 65 at the tiled entry's threshold,
// 97 and 1000 with the tiled entry's last tiles partly outside, 128 in
// whole ones), at counts that are not a multiple of anything the grid
// takes, for every element type; matrices from 128 rows are tiled, below
// 32 they are not.
func TestTransposeSizes(t *testing.T) {
	t.Run("float32", testTransposeSizes[float32])
	t.Run("float64", testTransposeSizes[float64])
	t.Run("complex64", testTransposeSizes[complex64])
	t.Run("complex128", testTransposeSizes[complex128])
}

func testTransposeSizes[T cusolver.Element](t *testing.T) {
	ctx, h := handle(t)
	rng := rand.New(rand.NewPCG(11, 12))
	for _, n := range []int{31, 33, 63, 64, 65, 97, 128, 1000} {
		counts := []int{1, 3, 29}
		if n >= 97 {
			counts = []int{1, 2}
		}
		for _, count := range counts {
			t.Run(fmt.Sprintf("%dx%d/%d", n, n, count), func(t *testing.T) {
				checkTranspose[T](t, ctx, h, rng, n, count)
			})
		}
		buf := must(cuda.Alloc[T](ctx, 1))(t)
		tiled, _ := cusolver.TransposeLaunch(buf, buf, n, 1)
		buf.Free()
		if n >= 128 && !tiled || n < 32 && tiled {
			t.Errorf("%dx%d: tiled = %v", n, n, tiled)
		}
	}
}

// TestTransposeComplex128Views: complex128 moves in one 16-byte load and
// store where src and dst are both 16-byte aligned, and as two 8-byte
// halves where either is a view 8 bytes off (which the fake's kernel
// faults on with one 16-byte load, as a GPU may), through both entries;
// each way the transposes are exact.
func TestTransposeComplex128Views(t *testing.T) {
	ctx, h := handle(t)
	rng := rand.New(rand.NewPCG(13, 14))
	for _, off := range [][2]int{{0, 0}, {8, 0}, {0, 8}, {8, 8}} {
		for _, n := range []int{1, 3, 8, 33, 64, 97} {
			for _, count := range []int{1, 5} {
				t.Run(fmt.Sprintf("dst+%d/src+%d/%dx%d/%d", off[0], off[1], n, n, count), func(t *testing.T) {
					src := make([]complex128, n*n*count)
					for i := range src {
						src[i] = randomElement[complex128](rng)
					}
					marks := make([]complex128, len(src)+3)
					for i := range marks {
						marks[i] = -1
					}
					a, b := complexView(t, ctx, src, off[1]), complexView(t, ctx, marks, off[0])
					_, vec := cusolver.TransposeLaunch(b, a, n, count)
					if want := off == [2]int{}; vec != want {
						t.Errorf("vec = %v, want %v", vec, want)
					}
					ok, err := cusolver.TransposeBatch(h, b, a, n, count)
					if err != nil || !ok {
						t.Fatalf("TransposeBatch = %v, %v", ok, err)
					}
					if err := h.Stream().Synchronize(); err != nil {
						t.Fatal(err)
					}
					checkTransposed(t, cudatest.Download(t, b), src, n, count)
				})
			}
		}
	}
}

// complexView returns v on the device, off bytes (0 or 8) past the start
// of an allocation (16-byte aligned): a view of float64s as complex128,
// as ViewAs allows at complex128's 8-byte alignment. The allocation is
// freed when the test ends.
func complexView(t *testing.T, ctx *cuda.Context, v []complex128, off int) *cuda.DeviceBuffer[complex128] {
	t.Helper()
	floats := make([]float64, off/8, off/8+2*len(v))
	for _, x := range v {
		floats = append(floats, real(x), imag(x))
	}
	buf := cudatest.Upload(t, ctx, floats)
	if p := uint64(buf.Ptr()); p%16 != 0 {
		t.Fatalf("an allocation at %#x, not 16-byte aligned", p)
	}
	view := must(cuda.ViewAs[complex128](must(buf.Slice(off/8, 2*len(v)))(t)))(t)
	if p := uint64(view.Ptr()); p%16 != uint64(off) {
		t.Fatalf("the view at %#x, want %d bytes past 16-byte alignment", p, off)
	}
	return view
}

// TestCholeskyComplex128Views: a complex128 matrix or batch 8 bytes off
// 16-byte alignment in cuSOLVER's slow triangle (row-major Lower) is
// factored through the transposes still (two launches: as two halves an
// element, from and to the view, the workspace aligned), right, at sizes
// of both of the kernel's entries; and so is an aligned one (in one
// 16-byte load and store).
func TestCholeskyComplex128Views(t *testing.T) {
	ctx, h := handle(t)
	// The launches are counted on the fake; on a GPU the factors alone
	// are checked.
	var fake *fakecuda.Control
	if cudatest.IsFake() {
		fake = cudatest.Fake(t)
	}
	rng := rand.New(rand.NewPCG(15, 16))
	for _, off := range []int{0, 8} {
		for _, c := range []struct{ n, count int }{{5, 1}, {97, 1}, {200, 1}, {8, 7}, {65, 3}} {
			t.Run(fmt.Sprintf("+%d/%dx%d/%d", off, c.n, c.n, c.count), func(t *testing.T) {
				n := c.n
				as := make([]dense, c.count)
				var all []complex128
				for m := range as {
					as[m] = hpd[complex128](rng, n)
					all = append(all, elements[complex128](marked(as[m], cusolver.Lower, 42), cusolver.RowMajor)...)
				}
				view := complexView(t, ctx, all, off)
				if fake != nil {
					fake.ResetCounts()
				}
				a := cusolver.NewMatrix(must(view.Slice(0, n*n))(t), n, n)
				var err error
				if c.count == 1 {
					var f *cusolver.CholeskyFactor[complex128]
					if f, err = cusolver.Cholesky(h, a, cusolver.Lower); err == nil {
						err = f.Err()
					}
				} else {
					var info *cusolver.Info
					if info, err = cusolver.CholeskyBatched(h, cusolver.NewMatrix(view, n, n), c.count, cusolver.Lower); err == nil {
						err = info.Err()
					}
				}
				if err != nil {
					t.Fatal(err)
				}
				if fake != nil {
					if got := fake.Counts()["cuLaunchKernel"]; got != 2 {
						t.Errorf("%d transposes, want 2", got)
					}
				}
				got := cudatest.Download(t, view)
				for m, am := range as {
					g := fromElements(got[m*n*n:(m+1)*n*n], n, n, cusolver.RowMajor)
					l, _ := cholesky(am)
					worst := 0.0
					for i := 0; i < n; i++ {
						for j := 0; j < n; j++ {
							if j > i {
								if g.at(i, j) != 42 {
									t.Fatalf("matrix %d (%d,%d), outside the triangle, is %v", m, i, j, g.at(i, j))
								}
								continue
							}
							worst = max(worst, cmplx.Abs(g.at(i, j)-l.at(i, j)))
						}
					}
					if worst > tol[complex128](n)*math.Sqrt(float64(n)) {
						t.Errorf("matrix %d's factor differs from the CPU's by %g", m, worst)
					}
				}
			})
		}
	}
}

// sentinel is a NaN of T with a payload of its own, where a call must
// neither read nor write: compared bit for bit (sameBits), it shows a
// write of any value, a NaN that arithmetic made included.
func sentinel[T scalar]() T {
	f32, f64 := math.Float32frombits(0x7fc0dead), math.Float64frombits(0x7ff80000deadbeef)
	var v T
	switch p := any(&v).(type) {
	case *float32:
		*p = f32
	case *float64:
		*p = f64
	case *complex64:
		*p = complex(f32, -f32)
	case *complex128:
		*p = complex(f64, -f64)
	}
	return v
}

// sameBits reports whether a and b are the same bits.
func sameBits[T scalar](a, b T) bool {
	pa, pb := unsafe.Pointer(&a), unsafe.Pointer(&b)
	return string(unsafe.Slice((*byte)(pa), unsafe.Sizeof(a))) == string(unsafe.Slice((*byte)(pb), unsafe.Sizeof(b)))
}

// TestTransposeTriangle: each of the kernel's passes moves exactly its
// triangle of each matrix of a batch (src's upper one read column-major
// to dst's lower one, or src's lower one to dst's upper one, the
// diagonal included) and nothing else: dst's other triangle and the
// elements past the batch keep their sentinels bit for bit, and src is
// left as it was; at sizes around both entries' edges (the element
// entry's 256 threads a block, 31, 33 and 63; the tiled entry's 32×32
// tiles from 64, cut by the diagonal, 65, 97 and 1000 partly outside),
// at counts that are not a multiple of a block's matrices, for every
// element type, and complex128 views 8 bytes off. Without the triangle
// entries (the full transposes), dst's other triangle was written.
func TestTransposeTriangle(t *testing.T) {
	t.Run("float32", testTransposeTriangle[float32])
	t.Run("float64", testTransposeTriangle[float64])
	t.Run("complex64", testTransposeTriangle[complex64])
	t.Run("complex128", testTransposeTriangle[complex128])
	t.Run("complex128/views", func(t *testing.T) {
		ctx, h := handle(t)
		rng := rand.New(rand.NewPCG(21, 22))
		for _, off := range [][2]int{{8, 0}, {0, 8}, {8, 8}} {
			for _, n := range []int{3, 8, 33, 64, 97} {
				for _, lower := range []bool{false, true} {
					t.Run(fmt.Sprintf("dst+%d/src+%d/%dx%d/lower=%v", off[0], off[1], n, n, lower), func(t *testing.T) {
						checkTriangle(t, ctx, h, rng, n, 5, lower, func(v []complex128, dst bool) *cuda.DeviceBuffer[complex128] {
							if dst {
								return complexView(t, ctx, v, off[0])
							}
							return complexView(t, ctx, v, off[1])
						})
					})
				}
			}
		}
	})
}

func testTransposeTriangle[T scalar](t *testing.T) {
	ctx, h := handle(t)
	rng := rand.New(rand.NewPCG(17, 18))
	for _, n := range []int{1, 2, 3, 8, 22, 23, 31, 33, 63, 64, 65, 97, 1000} {
		counts := []int{1, 3, 65}
		switch {
		case n >= 1000:
			counts = []int{2}
		case n >= 64:
			counts = []int{1, 3}
		}
		for _, count := range counts {
			for _, lower := range []bool{false, true} {
				t.Run(fmt.Sprintf("%dx%d/%d/lower=%v", n, n, count, lower), func(t *testing.T) {
					checkTriangle(t, ctx, h, rng, n, count, lower, func(v []T, _ bool) *cuda.DeviceBuffer[T] {
						b := cudatest.Upload(t, ctx, v)
						t.Cleanup(func() { b.Free() })
						return b
					})
				})
			}
		}
	}
}

// checkTriangle runs one pass of the kernel over count random n×n
// matrices, src and dst made on the device by upload, and checks dst
// against the host's.
func checkTriangle[T scalar](t *testing.T, ctx *cuda.Context, h *cusolver.Handle, rng *rand.Rand, n, count int, lower bool, upload func(v []T, dst bool) *cuda.DeviceBuffer[T]) {
	t.Helper()
	const tail = 5 // elements after the batch in dst, which must stay
	src := make([]T, n*n*count)
	for i := range src {
		src[i] = to[T](complex(2*rng.Float64()-1, 2*rng.Float64()-1))
	}
	marks := make([]T, len(src)+tail)
	for i := range marks {
		marks[i] = sentinel[T]()
	}
	a, b := upload(src, false), upload(marks, true)
	ok, err := cusolver.TransposeTriangle(h, b, a, n, count, lower)
	if err != nil || !ok {
		t.Fatalf("TransposeTriangle = %v, %v", ok, err)
	}
	if err := h.Stream().Synchronize(); err != nil {
		t.Fatal(err)
	}
	got := cudatest.Download(t, b)
	for m := 0; m < count; m++ {
		for r := 0; r < n; r++ {
			for q := 0; q < n; q++ {
				// src's (r, q), column-major, is dst's (q, r).
				g := got[m*n*n+r*n+q]
				if lower && r >= q || !lower && r <= q {
					if w := src[m*n*n+q*n+r]; !sameBits(g, w) {
						t.Fatalf("matrix %d: src's (%d,%d) came out %v, want %v", m, r, q, g, w)
					}
				} else if !sameBits(g, sentinel[T]()) {
					t.Fatalf("matrix %d: dst's (%d,%d), outside the triangle, was written: %v", m, q, r, g)
				}
			}
		}
	}
	for i, g := range got[len(src):] {
		if !sameBits(g, sentinel[T]()) {
			t.Fatalf("element %d after the batch was written: %v", i, g)
		}
	}
	back := cudatest.Download(t, a)
	for i := range back {
		if !sameBits(back[i], src[i]) {
			t.Fatalf("src's element %d changed", i)
		}
	}
}

// TestTransposeTriangleGrid: the kernel's grid covers a triangle and no
// more: for the element entry a thread an element of the triangle (a
// block of whole triangles up to 256 threads, 256 threads of one above),
// for the tiled entry a block a tile on or beside the diagonal (t(t+1)/2
// of the t² tiles of a matrix, the grid's y within its limit of 65,535).
func TestTransposeTriangleGrid(t *testing.T) {
	for _, n := range []int{1, 2, 8, 22, 23, 63, 64, 1000, 8192, 65535} {
		for _, count := range []int{1, 7, 1000} {
			grid, block := cusolver.TransposeGrid(n, count)
			tri := n * (n + 1) / 2
			switch {
			case n >= 64:
				tt := (n + 31) / 32
				tiles := tt * (tt + 1) / 2
				if block != (cuda.Dim3{X: 32, Y: 8, Z: 1}) && block != (cuda.Dim3{X: 32, Y: 8}) || grid.X != count || grid.Y > 65535 || grid.Y*grid.Z < tiles || grid.Y*(grid.Z-1) >= tiles {
					t.Errorf("n %d count %d: grid %+v block %+v, want %d tiles a matrix", n, count, grid, block, tiles)
				}
			case tri <= 256:
				k := min(256/tri, 64)
				if block.X != tri || max(block.Y, 1) != 1 || block.Z != k || grid.X != (count+k-1)/k || max(grid.Y, 1) != 1 || max(grid.Z, 1) != 1 {
					t.Errorf("n %d count %d: grid %+v block %+v, want %d-thread triangles %d a block", n, count, grid, block, tri, k)
				}
			default:
				if block.X != 256 || max(block.Y, 1) != 1 || max(block.Z, 1) != 1 || grid.X != count || grid.Y != (tri+255)/256 || max(grid.Z, 1) != 1 {
					t.Errorf("n %d count %d: grid %+v block %+v, want 256 threads a block over %d elements", n, count, grid, block, tri)
				}
			}
		}
	}
}

// TestCholeskyOtherTriangleNaN: Cholesky and CholeskyBatched read only
// the triangle named, and write only it: with NaNs of a payload of their
// own in the other triangle of every matrix, in both layouts and
// triangles (cuSOLVER's slow one through the transposes of a triangle,
// its fast one in place), at sizes of both of the kernel's entries and
// batches not a multiple of a block's matrices, the factors are the
// CPU's, the one matrix of a batch that is not positive definite is named
// with its first leading minor that is not, and the NaNs come back bit
// for bit; the handle's workspace is filled with NaNs before each call,
// so that a factorization there that read its other triangle (the
// transposes leave it as they find it) would show.
func TestCholeskyOtherTriangleNaN(t *testing.T) {
	eachType(t, 41, testCholeskyOtherTriangleNaN[float32], testCholeskyOtherTriangleNaN[float64],
		testCholeskyOtherTriangleNaN[complex64], testCholeskyOtherTriangleNaN[complex128])
}

func testCholeskyOtherTriangleNaN[T scalar](t *testing.T, ctx *cuda.Context, h *cusolver.Handle, rng *rand.Rand) {
	for _, c := range []struct{ n, count int }{
		{1, 3}, {2, 67}, {3, 5}, {8, 9}, {31, 3}, {33, 3}, {63, 3}, {64, 3}, {65, 3}, {97, 1},
		{1, 0}, {3, 0}, {64, 0}, {97, 0}, {200, 0}, // count 0: one matrix, Cholesky
	} {
		for _, layout := range layouts {
			for _, tri := range triangles {
				name := fmt.Sprintf("%dx%d/%d/%v/%v", c.n, c.n, c.count, layout, tri)
				if c.count == 0 {
					name = fmt.Sprintf("%dx%d/Cholesky/%v/%v", c.n, c.n, layout, tri)
				}
				t.Run(name, func(t *testing.T) {
					checkOtherTriangleNaN[T](t, ctx, h, rng, layout, tri, c.n, c.count)
				})
			}
		}
	}
}

// checkOtherTriangleNaN factors count n×n matrices (count 0: one, by
// Cholesky) with sentinels outside triangle tri, and checks them.
func checkOtherTriangleNaN[T scalar](t *testing.T, ctx *cuda.Context, h *cusolver.Handle, rng *rand.Rand, layout cusolver.Layout, tri cusolver.Triangle, n, count int) {
	t.Helper()
	mats, bad := max(count, 1), -1
	if count >= 3 {
		bad = count / 2
	}
	minor := min(2, n-1)
	as := make([]dense, mats)
	var all []T
	for m := range as {
		as[m] = hpd[T](rng, n)
		if m == bad {
			as[m].set(minor, minor, -as[m].at(minor, minor))
		}
		e := elements[T](as[m], layout)
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				if !inTriangle(tri, i, j) {
					if layout == cusolver.ColMajor {
						e[j*n+i] = sentinel[T]()
					} else {
						e[i*n+j] = sentinel[T]()
					}
				}
			}
		}
		all = append(all, e...)
	}
	buf := cudatest.Upload(t, ctx, all)
	defer buf.Free()
	a := cusolver.Matrix[T]{Data: buf, Rows: n, Cols: n, Layout: layout}
	// The workspace's other triangle, which the transposes neither write
	// nor read, NaNs too: potrf must not read it either.
	if err := cusolver.PoisonWorkspace(h, 2*len(all)*int(unsafe.Sizeof(all[0]))+1<<20); err != nil {
		t.Fatal(err)
	}
	var err error
	if count == 0 {
		var f *cusolver.CholeskyFactor[T]
		if f, err = cusolver.Cholesky(h, a, tri); err == nil {
			err = f.Err()
		}
	} else {
		var info *cusolver.Info
		if info, err = cusolver.CholeskyBatched(h, a, count, tri); err == nil {
			err = info.Err()
		}
	}
	if bad < 0 && err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("matrix %d: the leading minor of order %d ", bad, minor+1); bad >= 0 && (!errors.Is(err, cusolver.ErrNotPositiveDefinite) || !strings.Contains(err.Error(), want)) {
		t.Fatalf("Err = %v, want %q", err, want)
	}
	got := cudatest.Download(t, buf)
	for m, am := range as {
		e := got[m*n*n : (m+1)*n*n]
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				k := i*n + j
				if layout == cusolver.ColMajor {
					k = j*n + i
				}
				if !inTriangle(tri, i, j) && !sameBits(e[k], sentinel[T]()) {
					t.Fatalf("matrix %d (%d,%d), outside the triangle, is %v: its NaN was written", m, i, j, e[k])
				}
			}
		}
		if m == bad {
			continue
		}
		g := fromElements(e, n, n, layout)
		l, _ := cholesky(am)
		worst := 0.0
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				if !inTriangle(tri, i, j) {
					continue
				}
				want := l.at(i, j)
				if tri == cusolver.Upper {
					want = cmplx.Conj(l.at(j, i))
				}
				worst = max(worst, cmplx.Abs(g.at(i, j)-want))
			}
		}
		if !(worst <= tol[T](n)*math.Sqrt(float64(n))) {
			t.Errorf("matrix %d's factor differs from the CPU's by %g", m, worst)
		}
	}
}
