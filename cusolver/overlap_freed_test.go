package cusolver_test

import (
	"errors"
	"strings"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/cusolver"
	"github.com/gocuda/cuda/internal/cudatest"
)

// closedOver returns a buffer of n elements over b's memory, freed: a
// freed buffer whose address is b's now, b being live (a factored
// matrix, which must be factored in live memory).
func closedOver(t testing.TB, b *cuda.DeviceBuffer[float64], n int) *cuda.DeviceBuffer[float64] {
	t.Helper()
	c := must(cuda.FromRaw[float64](b.Context(), b.Ptr(), n))(t)
	if err := c.Free(); err != nil {
		t.Fatal(err)
	}
	return c
}

// span is the elements from off of a block of memory (cudatest.FreedAt).
func span(off, n int) cudatest.Span { return cudatest.Span{Off: off, N: n} }

// TestOverlapFreed: a call whose output or input was freed, while
// another of its buffers names memory at the freed one's address, returns
// cuda.ErrClosed naming the freed one, not the overlap a comparison of
// addresses alone finds (as cuda's copies do: TestCopyFromFreedBuffer).
func TestOverlapFreed(t *testing.T) {
	ctx, h := handle(t)
	buf := func(n int) *cuda.DeviceBuffer[float64] { return cudatest.Upload(t, ctx, make([]float64, n)) }
	col := func(b *cuda.DeviceBuffer[float64], r, c int) cusolver.Matrix[float64] {
		return cusolver.Matrix[float64]{Data: b, Rows: r, Cols: c, Layout: cusolver.ColMajor}
	}
	spd := func(t *testing.T, b *cuda.DeviceBuffer[float64]) cusolver.Matrix[float64] {
		t.Helper()
		if err := b.CopyFromHost([]float64{4, 1, 0, 1, 3, 1, 0, 1, 2}); err != nil {
			t.Fatal(err)
		}
		return cusolver.NewMatrix(b, 3, 3)
	}
	none := cusolver.Matrix[float64]{}
	// The other operands, live, made first: memory freed later is not
	// theirs.
	a6, b2, s2, s3, v9 := buf(6), buf(2), buf(2), buf(3), buf(9)
	// The calls over factors: factor factors a, in live memory, and
	// returns the call over it and another buffer; then a is freed with
	// that buffer over its memory, or that buffer, over a's memory, is.
	factors := []struct {
		name, other string
		n           int // a's elements
		factor      func(t *testing.T, a *cuda.DeviceBuffer[float64]) func(other *cuda.DeviceBuffer[float64]) error
	}{
		{"Solve", "b", 9, func(t *testing.T, a *cuda.DeviceBuffer[float64]) func(*cuda.DeviceBuffer[float64]) error {
			f := must(cusolver.LU(h, spd(t, a)))(t)
			t.Cleanup(func() { f.Free() })
			return func(b *cuda.DeviceBuffer[float64]) error { return cusolver.Solve(h, f, b, 1) }
		}},
		{"CholeskySolve", "b", 9, func(t *testing.T, a *cuda.DeviceBuffer[float64]) func(*cuda.DeviceBuffer[float64]) error {
			f := must(cusolver.Cholesky(h, spd(t, a), cusolver.Lower))(t)
			t.Cleanup(func() { f.Free() })
			return func(b *cuda.DeviceBuffer[float64]) error { return cusolver.CholeskySolve(h, f, b, 1) }
		}},
		{"QRQ", "q", 15, func(t *testing.T, a *cuda.DeviceBuffer[float64]) func(*cuda.DeviceBuffer[float64]) error {
			f := must(cusolver.QR(h, col(a, 5, 3)))(t)
			t.Cleanup(func() { f.Free() })
			return func(q *cuda.DeviceBuffer[float64]) error { return cusolver.QRQ(h, f, col(q, 5, 3)) }
		}},
		{"ApplyQ", "c", 15, func(t *testing.T, a *cuda.DeviceBuffer[float64]) func(*cuda.DeviceBuffer[float64]) error {
			f := must(cusolver.QR(h, col(a, 5, 3)))(t)
			t.Cleanup(func() { f.Free() })
			return func(c *cuda.DeviceBuffer[float64]) error { return cusolver.ApplyQ(h, f, col(c, 5, 1), false) }
		}},
	}
	for _, tc := range factors {
		t.Run(tc.name+"/f's matrix freed", func(t *testing.T) {
			a := must(cuda.Alloc[float64](ctx, tc.n))(t)
			call := tc.factor(t, a)
			wantClosed(t, call(freeThen(t, a, tc.n)), tc.name, "f's matrix")
		})
		t.Run(tc.name+"/"+tc.other+" freed", func(t *testing.T) {
			a := cudatest.Upload(t, ctx, make([]float64, tc.n))
			call := tc.factor(t, a)
			wantClosed(t, call(closedOver(t, a, tc.n)), tc.name, tc.other)
		})
	}
	// The other calls: each reads in while it writes out (or writes
	// both), named so in its errors, over the spans of one block of memory
	// given.
	for _, tc := range []struct {
		name, out, in string
		outAt, inAt   cudatest.Span
		call          func(out, in *cuda.DeviceBuffer[float64]) error
	}{
		{"LeastSquares b and a", "b", "a", span(2, 3), span(0, 6), func(b, a *cuda.DeviceBuffer[float64]) error {
			_, err := cusolver.LeastSquares(h, col(a, 3, 2), b, b2, 1)
			return err
		}},
		{"LeastSquares x and b", "x", "b", span(1, 2), span(0, 3), func(x, b *cuda.DeviceBuffer[float64]) error {
			_, err := cusolver.LeastSquares(h, col(a6, 3, 2), b, x, 1)
			return err
		}},
		{"SVD s and a", "s", "a", span(4, 2), span(0, 6), func(s, a *cuda.DeviceBuffer[float64]) error {
			_, err := cusolver.SVD(h, col(a, 3, 2), s, none, none)
			return err
		}},
		{"SVD u and a", "u", "a", span(0, 9), span(0, 6), func(u, a *cuda.DeviceBuffer[float64]) error {
			_, err := cusolver.SVD(h, col(a, 3, 2), s2, col(u, 3, 3), none)
			return err
		}},
		{"SVD vt and u", "vt", "u", span(5, 4), span(0, 9), func(vt, u *cuda.DeviceBuffer[float64]) error {
			_, err := cusolver.SVD(h, col(a6, 3, 2), s2, col(u, 3, 3), col(vt, 2, 2))
			return err
		}},
		{"Eigh", "w", "a", span(6, 3), span(0, 9), func(w, a *cuda.DeviceBuffer[float64]) error {
			_, err := cusolver.Eigh(h, cusolver.NewMatrix(a, 3, 3), cusolver.Lower, w, true)
			return err
		}},
		{"SVDBatched s and a", "s", "a", span(0, 3), span(0, 9), func(s, a *cuda.DeviceBuffer[float64]) error {
			_, err := cusolver.SVDBatched(h, cusolver.NewMatrix(a, 3, 3), 1, s, nil, nil)
			return err
		}},
		{"SVDBatched u and a", "u", "a", span(3, 9), span(0, 9), func(u, a *cuda.DeviceBuffer[float64]) error {
			_, err := cusolver.SVDBatched(h, cusolver.NewMatrix(a, 3, 3), 1, s3, u, v9)
			return err
		}},
		{"EighBatched", "w", "a", span(8, 3), span(0, 9), func(w, a *cuda.DeviceBuffer[float64]) error {
			_, err := cusolver.EighBatched(h, cusolver.NewMatrix(a, 3, 3), 1, cusolver.Lower, w, true)
			return err
		}},
	} {
		for _, freed := range []string{tc.out, tc.in} {
			t.Run(tc.name+"/"+freed+" freed", func(t *testing.T) {
				var out, in *cuda.DeviceBuffer[float64]
				if freed == tc.out {
					out, in = cudatest.FreedAt[float64](t, ctx, tc.outAt, tc.inAt)
				} else {
					in, out = cudatest.FreedAt[float64](t, ctx, tc.inAt, tc.outAt)
				}
				wantClosed(t, tc.call(out, in), tc.name, freed)
			})
		}
	}
}

// freeThen frees a and returns a live buffer of n elements at its
// address (FromRaw).
func freeThen(t testing.TB, a *cuda.DeviceBuffer[float64], n int) *cuda.DeviceBuffer[float64] {
	t.Helper()
	ctx, p := a.Context(), a.Ptr()
	if err := a.Free(); err != nil {
		t.Fatal(err)
	}
	return must(cuda.FromRaw[float64](ctx, p, n))(t)
}

// wantClosed fails t unless err is cuda.ErrClosed saying that freed is
// closed.
func wantClosed(t testing.TB, err error, name, freed string) {
	t.Helper()
	if want := freed + " is closed"; !errors.Is(err, cuda.ErrClosed) || !strings.Contains(err.Error(), want) {
		t.Errorf("%s with %s freed and its memory another buffer's: %v; want cuda.ErrClosed saying %q", name, freed, err, want)
	}
}
