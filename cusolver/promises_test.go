package cusolver_test

import (
	"errors"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/cusolver"
	"github.com/gocuda/cuda/internal/cudatest"
)

// The docs' promises at their edges, as an outside reader of them tests
// them: closed handles, freed buffers and factors, zero values, empty
// problems, and small results against a reference worked by hand.

// TestPromisesClosedHandle: a closed handle is cuda.ErrClosed in every
// call, a problem with no elements too: "nothing to do" does not make a
// closed handle usable (LU of a 0×0 matrix says ErrClosed; so must a solve
// of no right-hand sides, or a QRQ or ApplyQ of no elements).
func TestPromisesClosedHandle(t *testing.T) {
	ctx := cudatest.Context(t)
	h := must(cusolver.New(cudatest.Stream(t, ctx)))(t)
	buf := func(xs ...float64) *cuda.DeviceBuffer[float64] { return cudatest.Upload(t, ctx, xs) }
	col := func(r, c int) cusolver.Matrix[float64] {
		return cusolver.Matrix[float64]{Data: buf(make([]float64, r*c)...), Rows: r, Cols: c, Layout: cusolver.ColMajor}
	}
	lu := must(cusolver.LU(h, cusolver.NewMatrix(buf(2, 1, 1, 3), 2, 2)))(t)
	defer lu.Free()
	chol := must(cusolver.Cholesky(h, col(0, 0), cusolver.Lower))(t)
	defer chol.Free()
	cholN := must(cusolver.Cholesky(h, cusolver.Matrix[float64]{Data: buf(4, 2, 2, 5), Rows: 2, Cols: 2, Layout: cusolver.ColMajor}, cusolver.Lower))(t)
	defer cholN.Free()
	qr := must(cusolver.QR(h, col(3, 0)))(t)
	defer qr.Free()
	qr2 := must(cusolver.QR(h, cusolver.Matrix[float64]{Data: buf(1, 0, 0, 1), Rows: 2, Cols: 2, Layout: cusolver.ColMajor}))(t)
	defer qr2.Free()
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		call func() error
	}{
		{"LU 0×0", func() error { _, err := cusolver.LU(h, cusolver.NewMatrix(buf(), 0, 0)); return err }},
		{"Solve", func() error { return cusolver.Solve(h, lu, buf(1, 2), 1) }},
		{"Solve of no right-hand sides", func() error { return cusolver.Solve(h, lu, buf(), 0) }},
		{"CholeskySolve of a 0×0 factor", func() error { return cusolver.CholeskySolve(h, chol, buf(), 3) }},
		{"CholeskySolve of no right-hand sides", func() error { return cusolver.CholeskySolve(h, cholN, buf(), 0) }},
		{"CholeskyInverse 0×0", func() error { _, err := cusolver.CholeskyInverse(h, chol); return err }},
		{"QRQ of a 3×0 factor", func() error { return cusolver.QRQ(h, qr, col(3, 0)) }},
		{"ApplyQ of no reflectors", func() error { return cusolver.ApplyQ(h, qr, col(3, 2), true) }},
		{"ApplyQ to no columns", func() error { return cusolver.ApplyQ(h, qr2, col(2, 0), false) }},
		{"LeastSquares of no right-hand sides", func() error {
			_, err := cusolver.LeastSquares(h, col(2, 2), buf(), buf(), 0)
			return err
		}},
		{"SVD 0×0", func() error { _, err := cusolver.SVD(h, col(0, 0), buf(), col(0, 0), col(0, 0)); return err }},
		{"Eigh 0×0", func() error {
			_, err := cusolver.Eigh(h, cusolver.NewMatrix(buf(), 0, 0), cusolver.Lower, buf(), false)
			return err
		}},
		{"CholeskyBatched of none", func() error {
			_, err := cusolver.CholeskyBatched(h, cusolver.NewMatrix(buf(), 2, 2), 0, cusolver.Upper)
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cudatest.WantErr(t, tc.name+" on a closed handle", tc.call(), cuda.ErrClosed, "closed")
		})
	}
	// What the factors' holders do needs no handle: Err reads the info
	// on the stream, which is still open, and Free frees.
	if err := lu.Err(); err != nil {
		t.Errorf("LUFactors.Err after the handle's Close: %v, want nil", err)
	}
	if err := cholN.Err(); err != nil {
		t.Errorf("CholeskyFactor.Err after the handle's Close: %v, want nil", err)
	}
}

// TestPromisesFreed: a freed buffer is cuda.ErrClosed, also where the
// problem has no elements (nothing to do is no reason to take a freed
// buffer), and so are factors used after their Free.
func TestPromisesFreed(t *testing.T) {
	ctx, h := handle(t)
	buf := func(xs ...float64) *cuda.DeviceBuffer[float64] { return cudatest.Upload(t, ctx, xs) }
	freed := func(n int) *cuda.DeviceBuffer[float64] {
		b := must(cuda.Alloc[float64](ctx, n))(t)
		if err := b.Free(); err != nil {
			t.Fatal(err)
		}
		return b
	}
	colOf := func(d *cuda.DeviceBuffer[float64], r, c int) cusolver.Matrix[float64] {
		return cusolver.Matrix[float64]{Data: d, Rows: r, Cols: c, Layout: cusolver.ColMajor}
	}
	lu := must(cusolver.LU(h, cusolver.NewMatrix(buf(2, 1, 1, 3), 2, 2)))(t)
	defer lu.Free()
	chol := must(cusolver.Cholesky(h, colOf(buf(4, 2, 2, 5), 2, 2), cusolver.Lower))(t)
	defer chol.Free()
	qr := must(cusolver.QR(h, colOf(buf(1, 0, 0, 1), 2, 2)))(t)
	defer qr.Free()
	luFreed := must(cusolver.LU(h, cusolver.NewMatrix(buf(2, 1, 1, 3), 2, 2)))(t)
	if err := luFreed.Free(); err != nil {
		t.Fatal(err)
	}
	qrFreed := must(cusolver.QR(h, colOf(buf(1, 0, 0, 1), 2, 2)))(t)
	if err := qrFreed.Free(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"LU of a freed 2×2", errOf(cusolver.LU(h, cusolver.NewMatrix(freed(4), 2, 2))), "closed"},
		{"Solve into a freed b", cusolver.Solve(h, lu, freed(2), 1), "closed"},
		{"Solve of no right-hand sides in a freed b", cusolver.Solve(h, lu, freed(2), 0), "closed"},
		{"CholeskySolve of no right-hand sides in a freed b", cusolver.CholeskySolve(h, chol, freed(2), 0), "closed"},
		{"ApplyQ to no columns of a freed c", cusolver.ApplyQ(h, qr, colOf(freed(2), 2, 0), false), "closed"},
		{"Solve with freed factors", cusolver.Solve(h, luFreed, buf(1, 2), 1), "freed"},
		{"QRQ of freed factors", cusolver.QRQ(h, qrFreed, colOf(buf(0, 0, 0, 0), 2, 2)), "freed"},
		{"ApplyQ of freed factors", cusolver.ApplyQ(h, qrFreed, colOf(buf(1, 2), 2, 1), true), "freed"},
	} {
		t.Run(tc.name, func(t *testing.T) { cudatest.WantErr(t, tc.name, tc.err, cuda.ErrClosed, tc.want) })
	}
}

func errOf[T any](_ T, err error) error { return err }

// TestPromisesZeroValues: the zero value of every exported type is
// refused with cuda.ErrInvalidValue where it is used, or answers its
// methods that call nothing, without a panic.
func TestPromisesZeroValues(t *testing.T) {
	ctx, h := handle(t)
	b := cudatest.Upload(t, ctx, []float64{1, 2, 3, 4})
	a := cusolver.NewMatrix(b, 2, 2)
	var zh cusolver.Handle
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"Handle.Close", zh.Close()},
		{"LU", errOf(cusolver.LU(&zh, a))},
		{"Cholesky", errOf(cusolver.Cholesky(&zh, a, cusolver.Lower))},
		{"QR", errOf(cusolver.QR(&zh, cusolver.Matrix[float64]{Data: b, Rows: 2, Cols: 2, Layout: cusolver.ColMajor}))},
		{"SVD", errOf(cusolver.SVD(&zh, a, b, cusolver.Matrix[float64]{}, cusolver.Matrix[float64]{}))},
		{"Eigh", errOf(cusolver.Eigh(&zh, a, cusolver.Lower, b, false))},
		{"LeastSquares", errOf(cusolver.LeastSquares(&zh, a, b, b, 0))},
		{"CholeskyBatched", errOf(cusolver.CholeskyBatched(&zh, a, 0, cusolver.Lower))},
		{"SVDBatched", errOf(cusolver.SVDBatched(&zh, a, 0, b, nil, nil))},
		{"EighBatched", errOf(cusolver.EighBatched(&zh, a, 0, cusolver.Lower, b, false))},
		{"LU of a zero Matrix", errOf(cusolver.LU(h, cusolver.Matrix[float64]{}))},
		{"Cholesky of a zero Matrix", errOf(cusolver.Cholesky(h, cusolver.Matrix[float64]{}, cusolver.Lower))},
		{"QR of a zero Matrix", errOf(cusolver.QR(h, cusolver.Matrix[float64]{}))},
		{"Eigh of a zero Matrix", errOf(cusolver.Eigh(h, cusolver.Matrix[float64]{}, cusolver.Lower, b, false))},
		{"Solve with zero factors", cusolver.Solve(h, &cusolver.LUFactors[float64]{}, b, 0)},
		{"CholeskySolve with a zero factor", cusolver.CholeskySolve(h, &cusolver.CholeskyFactor[float64]{}, b, 0)},
		{"CholeskyInverse of a zero factor", errOf(cusolver.CholeskyInverse(h, &cusolver.CholeskyFactor[float64]{}))},
		{"QRQ of zero factors", cusolver.QRQ(h, &cusolver.QRFactors[float64]{}, a)},
		{"ApplyQ of zero factors", cusolver.ApplyQ(h, &cusolver.QRFactors[float64]{}, a, false)},
		{"LUFactors.Err", (&cusolver.LUFactors[float64]{}).Err()},
		{"CholeskyFactor.Err", (&cusolver.CholeskyFactor[float64]{}).Err()},
		{"QRFactors.Free", (&cusolver.QRFactors[float64]{}).Free()},
		{"Info.Free", (&cusolver.Info{}).Free()},
	} {
		t.Run(tc.name, func(t *testing.T) { cudatest.WantErr(t, tc.name+" of a zero value", tc.err, cuda.ErrInvalidValue, "") })
	}
	// A zero DeviceBuffer as an operand is told as one, not as memory of
	// another context.
	var zb cuda.DeviceBuffer[float64]
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"LU of a zero buffer's Matrix", errOf(cusolver.LU(h, cusolver.NewMatrix(&zb, 0, 0)))},
		{"Eigh with zero values", errOf(cusolver.Eigh(h, a, cusolver.Lower, &zb, false))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cudatest.WantErr(t, tc.name, tc.err, cuda.ErrInvalidValue, "is a zero cuda.DeviceBuffer")
		})
	}
	if s, d := zh.Stream(), 0; s != nil {
		t.Errorf("zero Handle's Stream = %v, want nil", s)
	} else if dev, host := zh.WorkspaceBytes(); dev != d || host != d {
		t.Errorf("zero Handle's WorkspaceBytes = %d, %d; want 0, 0", dev, host)
	}
	if s := zh.String(); s == "" {
		t.Error("zero Handle's String is empty")
	}
	if m := (&cusolver.LUFactors[float64]{}).Matrix(); m.Data != nil {
		t.Errorf("zero LUFactors' Matrix = %v", m)
	}
	if m, _ := (&cusolver.CholeskyFactor[float64]{}).Matrix(); m.Data != nil {
		t.Errorf("zero CholeskyFactor's Matrix = %v", m)
	}
	if tau := (&cusolver.QRFactors[float64]{}).Tau(); tau != nil {
		t.Errorf("zero QRFactors' Tau = %v", tau)
	}
	for _, s := range []string{cusolver.Layout(9).String(), cusolver.Triangle(9).String(), cusolver.Result(-77).String(), (&cusolver.Error{}).Error()} {
		if s == "" {
			t.Error("an unknown value's String is empty")
		}
	}
}

// TestPromisesSmall: tiny problems against answers worked by hand, in both
// layouts: a solve, a singular LU and a Cholesky that is not positive
// definite, their Info in words naming the pivot or the minor, read once
// and the same after.
func TestPromisesSmall(t *testing.T) {
	ctx, h := handle(t)
	for _, layout := range layouts {
		t.Run(layout.String(), func(t *testing.T) {
			// A = [[4, 3], [6, 3]]: A·[1, 2] = [10, 12].
			a := upload[float64](t, ctx, dense{2, 2, []complex128{4, 3, 6, 3}}, layout)
			f := must(cusolver.LU(h, a))(t)
			defer f.Free()
			b := cudatest.Upload(t, ctx, []float64{10, 12, 7, 9}) // and A·[1, 1]
			if err := cusolver.Solve(h, f, b, 2); err != nil {
				t.Fatal(err)
			}
			if err := f.Err(); err != nil {
				t.Fatalf("Err = %v", err)
			}
			nearAll(t, "X", cudatest.Download(t, b), []float64{1, 2, 1, 1})

			// Singular: the second row twice the first. Whichever
			// matrix cuSOLVER factors (A or Aᵀ), its U(2,2) is zero.
			s := must(cusolver.LU(h, upload[float64](t, ctx, dense{2, 2, []complex128{1, 2, 2, 4}}, layout)))(t)
			defer s.Free()
			for range 2 { // read once, the same after
				cudatest.WantErr(t, "Err of a singular LU", s.Err(), cusolver.ErrSingular, "pivot 2 is exactly zero (U(2,2), 1-based)")
			}

			// Not positive definite at the minor of order 2: [[1, 2], [2, 1]].
			for _, tri := range triangles {
				c := must(cusolver.Cholesky(h, upload[float64](t, ctx, dense{2, 2, []complex128{1, 2, 2, 1}}, layout), tri))(t)
				cudatest.WantErr(t, "Cholesky's Err "+tri.String(), c.Err(), cusolver.ErrNotPositiveDefinite, "the leading minor of order 2 is not positive definite")
				if err := c.Free(); err != nil {
					t.Errorf("Free after Err: %v", err)
				}
			}
		})
	}
}

// TestPromisesClosedStreamAndContext: a handle whose stream was closed
// refuses work with cuda.ErrClosed and still closes; results whose
// context was closed say so in Err, and their Free does not fail forever
// (the context took their memory with it).
func TestPromisesClosedStreamAndContext(t *testing.T) {
	t.Run("stream", func(t *testing.T) {
		ctx := cudatest.Context(t)
		s := must(ctx.NewStream())(t)
		h := must(cusolver.New(s))(t)
		a := cusolver.NewMatrix(cudatest.Upload(t, ctx, []float64{2, 1, 1, 3}), 2, 2)
		f := must(cusolver.LU(h, a))(t)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		cudatest.WantErr(t, "LU on a closed stream", errOf(cusolver.LU(h, a)), cuda.ErrClosed, "closed")
		cudatest.WantErr(t, "Solve of no right-hand sides on a closed stream", cusolver.Solve(h, f, cudatest.Upload(t, ctx, []float64{}), 0), cuda.ErrClosed, "closed")
		if err := f.Err(); !errors.Is(err, cuda.ErrClosed) {
			t.Errorf("Err with the stream closed: %v, want cuda.ErrClosed", err)
		}
		f.Free()
		if err := h.Close(); err != nil {
			t.Errorf("Close of a handle whose stream is closed: %v", err)
		}
	})
	t.Run("context", func(t *testing.T) {
		cudatest.CheckLeaks(t)
		ctx := must(cuda.NewContext(cudatest.Device(t)))(t)
		s := must(ctx.NewStream())(t)
		h := must(cusolver.New(s))(t)
		a := cusolver.NewMatrix(must(cuda.FromHost(ctx, []float64{2, 1, 1, 3}))(t), 2, 2)
		f := must(cusolver.LU(h, a))(t)
		c := must(cusolver.Cholesky(h, a, cusolver.Lower))(t)
		if err := ctx.Close(); err != nil {
			t.Fatal(err)
		}
		if err := f.Err(); !errors.Is(err, cuda.ErrClosed) {
			t.Errorf("Err with the context closed: %v, want cuda.ErrClosed", err)
		}
		if err := f.Free(); err != nil && !errors.Is(err, cuda.ErrClosed) {
			t.Errorf("LUFactors.Free with the context closed: %v", err)
		}
		for i := range 2 {
			if err := c.Free(); err != nil {
				t.Errorf("CholeskyFactor.Free %d with the context closed: %v, want nil (the context took the info)", i, err)
			}
		}
		if err := f.Free(); err != nil {
			t.Errorf("LUFactors.Free again: %v, want nil", err)
		}
		if err := h.Close(); err != nil {
			t.Errorf("Close with the context closed: %v", err)
		}
		cudatest.WantErr(t, "LU on a closed context's handle", errOf(cusolver.LU(h, a)), cuda.ErrClosed, "closed")
		s.Close()
		a.Data.Free()
	})
}
