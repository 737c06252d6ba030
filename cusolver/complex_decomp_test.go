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

// zeye is the n×n identity.
func zeye(n int) zdense {
	o := newZ(n, n)
	for i := 0; i < n; i++ {
		o.set(i, i, 1)
	}
	return o
}

// unitary fails t unless q's columns are orthonormal: QᴴQ = I.
func unitary(t *testing.T, name string, q zdense, eps float64) {
	t.Helper()
	if d := zdiff(zmul(q.h(), q), zeye(q.c)); d > eps {
		t.Errorf("%sᴴ·%s differs from I by %g", name, name, d)
	}
}

// reals downloads a buffer of real numbers as float64s.
func reals[R float32 | float64](t *testing.T, h *cusolver.Handle, b *cuda.DeviceBuffer[R]) []float64 {
	t.Helper()
	if err := h.Stream().Synchronize(); err != nil {
		t.Fatal(err)
	}
	out := []float64{}
	for _, x := range cudatest.Download(t, b) {
		out = append(out, float64(x))
	}
	return out
}

func TestComplexQR(t *testing.T) {
	t.Run("complex64", testComplexQR[complex64])
	t.Run("complex128", testComplexQR[complex128])
}

// testComplexQR: Q·R = A with Q's columns orthonormal (QᴴQ = I) and R
// upper triangular, ApplyQ's Qᴴ·B against Q formed and back, for tall and
// square matrices, and a wide one's R.
func testComplexQR[T complex64 | complex128](t *testing.T) {
	ctx, h := handle(t)
	rng := rand.New(rand.NewPCG(31, 32))
	for _, shape := range [][2]int{{1, 1}, {3, 3}, {5, 3}, {97, 97}, {97, 13}} {
		m, n := shape[0], shape[1]
		t.Run(fmt.Sprintf("%dx%d", m, n), func(t *testing.T) {
			a := zrandom(rng, m, n)
			mat := cusolver.Matrix[T]{Data: cudatest.Upload(t, ctx, zelements[T](a, cusolver.ColMajor)), Rows: m, Cols: n, Layout: cusolver.ColMajor}
			f := must(cusolver.QR(h, mat))(t)
			defer f.Free()
			q := cusolver.Matrix[T]{Data: cudatest.Upload(t, ctx, make([]T, m*n)), Rows: m, Cols: n, Layout: cusolver.ColMajor}
			if err := cusolver.QRQ(h, f, q); err != nil {
				t.Fatal(err)
			}
			qd, rd := zread(t, h, q.Data, m, n, cusolver.ColMajor), zread(t, h, mat.Data, m, n, cusolver.ColMajor)
			r := newZ(n, n)
			for i := 0; i < n; i++ {
				for j := i; j < n; j++ {
					r.set(i, j, rd.at(i, j))
				}
			}
			unitary(t, "Q", qd, ztol[T](m))
			if d := zdiff(zmul(qd, r), a); d > ztol[T](m) {
				t.Errorf("Q·R differs from A by %g", d)
			}
			b := zrandom(rng, m, 2)
			c := cudatest.Upload(t, ctx, zelements[T](b, cusolver.ColMajor))
			cm := cusolver.Matrix[T]{Data: c, Rows: m, Cols: 2, Layout: cusolver.ColMajor}
			if err := cusolver.ApplyQ(h, f, cm, true); err != nil {
				t.Fatal(err)
			}
			got, want := zread(t, h, c, m, 2, cusolver.ColMajor), zmul(qd.h(), b)
			top := newZ(n, 2)
			for i := 0; i < n; i++ {
				for j := 0; j < 2; j++ {
					top.set(i, j, got.at(i, j))
				}
			}
			if d := zdiff(top, want); d > ztol[T](m) {
				t.Errorf("ApplyQ(Qᴴ) differs from Qᴴ·B by %g", d)
			}
			if err := cusolver.ApplyQ(h, f, cm, false); err != nil {
				t.Fatal(err)
			}
			if d := zdiff(zread(t, h, c, m, 2, cusolver.ColMajor), b); d > ztol[T](m) {
				t.Errorf("ApplyQ(Q) of ApplyQ(Qᴴ) differs from B by %g", d)
			}
		})
	}
	t.Run("wide", func(t *testing.T) {
		// A 3×5 matrix: R is 3×5, Q (3×3) from ApplyQ on I.
		m, n := 3, 5
		a := zrandom(rng, m, n)
		mat := cusolver.Matrix[T]{Data: cudatest.Upload(t, ctx, zelements[T](a, cusolver.ColMajor)), Rows: m, Cols: n, Layout: cusolver.ColMajor}
		f := must(cusolver.QR(h, mat))(t)
		defer f.Free()
		id := cudatest.Upload(t, ctx, zelements[T](zeye(m), cusolver.ColMajor))
		if err := cusolver.ApplyQ(h, f, cusolver.Matrix[T]{Data: id, Rows: m, Cols: m, Layout: cusolver.ColMajor}, false); err != nil {
			t.Fatal(err)
		}
		qd, rd := zread(t, h, id, m, m, cusolver.ColMajor), zread(t, h, mat.Data, m, n, cusolver.ColMajor)
		for i := 0; i < m; i++ {
			for j := 0; j < i; j++ {
				rd.set(i, j, 0)
			}
		}
		unitary(t, "Q", qd, ztol[T](m))
		if d := zdiff(zmul(qd, rd), a); d > ztol[T](n) {
			t.Errorf("Q·R differs from A by %g", d)
		}
		if err := cusolver.QRQ(h, f, cusolver.Matrix[T]{Data: id, Rows: m, Cols: n, Layout: cusolver.ColMajor}); !errors.Is(err, cuda.ErrInvalidValue) {
			t.Errorf("QRQ of a wide matrix = %v, want cuda.ErrInvalidValue", err)
		}
	})
}

func TestComplexSVD(t *testing.T) {
	t.Run("complex64", testComplexSVD[complex64, float32])
	t.Run("complex128", testComplexSVD[complex128, float64])
}

// testComplexSVD: U·S·Vᴴ = A, U and V unitary, values real and
// descending, for the shapes each layout takes, and the values alone.
func testComplexSVD[T complex64 | complex128, R float32 | float64](t *testing.T) {
	ctx, h := handle(t)
	rng := rand.New(rand.NewPCG(33, 34))
	for _, c := range []struct {
		m, n   int
		layout cusolver.Layout
	}{{1, 1, cusolver.RowMajor}, {3, 5, cusolver.RowMajor}, {97, 97, cusolver.RowMajor}, {5, 3, cusolver.ColMajor}, {97, 40, cusolver.ColMajor}, {3, 3, cusolver.ColMajor}, {1, 1, cusolver.ColMajor}} {
		t.Run(fmt.Sprintf("%dx%d/%v", c.m, c.n, c.layout), func(t *testing.T) {
			a := zrandom(rng, c.m, c.n)
			k := min(c.m, c.n)
			mat := cusolver.Matrix[T]{Data: cudatest.Upload(t, ctx, zelements[T](a, c.layout)), Rows: c.m, Cols: c.n, Layout: c.layout}
			s := must(cuda.Alloc[R](ctx, k))(t)
			defer s.Free()
			u := cusolver.Matrix[T]{Data: cudatest.Upload(t, ctx, make([]T, c.m*c.m)), Rows: c.m, Cols: c.m, Layout: c.layout}
			vt := cusolver.Matrix[T]{Data: cudatest.Upload(t, ctx, make([]T, c.n*c.n)), Rows: c.n, Cols: c.n, Layout: c.layout}
			info := must(cusolver.SVD(h, mat, s, u, vt))(t)
			if err := info.Err(); err != nil {
				t.Fatal(err)
			}
			sv := reals(t, h, s)
			ud, vd := zread(t, h, u.Data, c.m, c.m, c.layout), zread(t, h, vt.Data, c.n, c.n, c.layout)
			for i := 1; i < k; i++ {
				if sv[i] > sv[i-1] {
					t.Fatalf("singular values not descending: %v", sv)
				}
			}
			unitary(t, "U", ud, ztol[T](c.m))
			unitary(t, "V", vd.h(), ztol[T](c.n))
			sm := newZ(c.m, c.n)
			for i := 0; i < k; i++ {
				sm.set(i, i, complex(sv[i], 0))
			}
			if d := zdiff(zmul(zmul(ud, sm), vd), a); d > ztol[T](max(c.m, c.n)) {
				t.Errorf("U·S·Vᴴ differs from A by %g", d)
			}
			mat2 := cusolver.Matrix[T]{Data: cudatest.Upload(t, ctx, zelements[T](a, c.layout)), Rows: c.m, Cols: c.n, Layout: c.layout}
			s2 := must(cuda.Alloc[R](ctx, k))(t)
			defer s2.Free()
			info = must(cusolver.SVD(h, mat2, s2, cusolver.Matrix[T]{}, cusolver.Matrix[T]{}))(t)
			if err := info.Err(); err != nil {
				t.Fatal(err)
			}
			for i, x := range reals(t, h, s2) {
				if math.Abs(x-sv[i]) > ztol[T](c.m) {
					t.Errorf("value %d alone is %g, with the vectors %g", i, x, sv[i])
				}
			}
		})
	}
}

func TestComplexEigh(t *testing.T) {
	t.Run("complex64", testComplexEigh[complex64, float32])
	t.Run("complex128", testComplexEigh[complex128, float64])
}

// testComplexEigh: A·V = V·Λ with V unitary and Λ real and ascending,
// reading either triangle of either layout (the other triangle and the
// diagonal's imaginary parts never read); the vectors come out as V
// column-major, Vᴴ row-major; without vectors, the same values.
func testComplexEigh[T complex64 | complex128, R float32 | float64](t *testing.T) {
	ctx, h := handle(t)
	rng := rand.New(rand.NewPCG(35, 36))
	for _, n := range sizes {
		for _, layout := range layouts {
			for _, tri := range []cusolver.Triangle{cusolver.Lower, cusolver.Upper} {
				t.Run(fmt.Sprintf("%d/%v/%v", n, layout, tri), func(t *testing.T) {
					r := zrandom(rng, n, n)
					a := zmul(r, r.h())
					for i := 0; i < n; i++ {
						a.set(i, i, complex(real(a.at(i, i))-float64(n)/2, 0)) // some negative eigenvalues
					}
					in := newZ(n, n)
					copy(in.v, a.v)
					for i := 0; i < n; i++ {
						for j := 0; j < n; j++ {
							switch {
							case i == j:
								in.set(i, j, complex(real(a.at(i, j)), 1e6)) // never read
							case tri == cusolver.Lower && j > i, tri == cusolver.Upper && j < i:
								in.set(i, j, 1e6) // never read
							}
						}
					}
					buf := cudatest.Upload(t, ctx, zelements[T](in, layout))
					m := cusolver.Matrix[T]{Data: buf, Rows: n, Cols: n, Layout: layout}
					w := must(cuda.Alloc[R](ctx, n))(t)
					defer w.Free()
					info := must(cusolver.Eigh(h, m, tri, w, true))(t)
					if err := info.Err(); err != nil {
						t.Fatal(err)
					}
					wv := reals(t, h, w)
					for i := 1; i < n; i++ {
						if wv[i] < wv[i-1] {
							t.Fatalf("eigenvalues not ascending: %v", wv)
						}
					}
					v := zread(t, h, buf, n, n, layout)
					if layout == cusolver.RowMajor {
						v = v.h() // Vᴴ row-major
					}
					unitary(t, "V", v, ztol[T](n))
					lam := newZ(n, n)
					for i := 0; i < n; i++ {
						lam.set(i, i, complex(wv[i], 0))
					}
					if d := zdiff(zmul(a, v), zmul(v, lam)); d > ztol[T](n)*float64(n) {
						t.Errorf("A·V differs from V·Λ by %g", d)
					}
					// The values alone.
					buf2 := cudatest.Upload(t, ctx, zelements[T](in, layout))
					w2 := must(cuda.Alloc[R](ctx, n))(t)
					defer w2.Free()
					info = must(cusolver.Eigh(h, cusolver.Matrix[T]{Data: buf2, Rows: n, Cols: n, Layout: layout}, tri, w2, false))(t)
					if err := info.Err(); err != nil {
						t.Fatal(err)
					}
					for i, x := range reals(t, h, w2) {
						if math.Abs(x-wv[i]) > ztol[T](n)*float64(n) {
							t.Errorf("eigenvalue %d alone is %g, with the vectors %g", i, x, wv[i])
						}
					}
				})
			}
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
