package cusolver_test

import (
	"errors"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/cusolver"
	"github.com/gocuda/cuda/internal/cudatest"
)

// TestBadArguments: each operation refuses what it cannot take with
// cuda.ErrInvalidValue, before calling cuSOLVER, and the closed handle with
// cuda.ErrClosed.
func TestBadArguments(t *testing.T) {
	ctx, h := handle(t)
	other := must(cusolver.New(cudatest.Stream(t, ctx)))(t)
	t.Cleanup(func() { other.Close() })
	buf := func(n int) *cuda.DeviceBuffer[float64] { return cudatest.Upload(t, ctx, make([]float64, n)) }
	sq := cusolver.NewMatrix(buf(9), 3, 3)
	col := func(r, c int) cusolver.Matrix[float64] {
		return cusolver.Matrix[float64]{Data: buf(r * c), Rows: r, Cols: c, Layout: cusolver.ColMajor}
	}
	lu := must(cusolver.LU(h, cusolver.NewMatrix(buf(9), 3, 3)))(t)
	defer lu.Free()
	chol := must(cusolver.Cholesky(h, cusolver.NewMatrix(buf(9), 3, 3), cusolver.Lower))(t)
	qr := must(cusolver.QR(h, col(5, 3)))(t)
	defer qr.Free()
	for _, c := range []struct {
		name string
		call func() error
	}{
		{"LU nil handle", func() error { _, err := cusolver.LU(nil, sq); return err }},
		{"LU zero handle", func() error { _, err := cusolver.LU(&cusolver.Handle{}, sq); return err }},
		{"LU not square", func() error { _, err := cusolver.LU(h, cusolver.NewMatrix(buf(6), 2, 3)); return err }},
		{"LU short buffer", func() error { _, err := cusolver.LU(h, cusolver.NewMatrix(buf(8), 3, 3)); return err }},
		{"LU no data", func() error { _, err := cusolver.LU(h, cusolver.Matrix[float64]{Rows: 1, Cols: 1}); return err }},
		{"LU negative", func() error { _, err := cusolver.LU(h, cusolver.NewMatrix(buf(1), -1, -1)); return err }},
		{"LU layout", func() error {
			_, err := cusolver.LU(h, cusolver.Matrix[float64]{Data: buf(1), Rows: 1, Cols: 1, Layout: 7})
			return err
		}},
		{"Solve short b", func() error { return cusolver.Solve(h, lu, buf(5), 2) }},
		{"Solve b overlaps", func() error { return cusolver.Solve(h, lu, lu.Matrix().Data, 1) }},
		{"Solve other handle", func() error { return cusolver.Solve(other, lu, buf(3), 1) }},
		{"Solve nil factors", func() error { return cusolver.Solve[float64](h, nil, buf(3), 1) }},
		{"Solve zero factors", func() error { return cusolver.Solve(h, &cusolver.LUFactors[float64]{}, buf(3), 1) }},
		{"Cholesky triangle", func() error { _, err := cusolver.Cholesky(h, sq, 2); return err }},
		{"CholeskySolve negative nrhs", func() error { return cusolver.CholeskySolve(h, chol, buf(3), -1) }},
		{"CholeskyInverse other handle", func() error { _, err := cusolver.CholeskyInverse(other, chol); return err }},
		{"QR row-major", func() error { _, err := cusolver.QR(h, cusolver.NewMatrix(buf(6), 3, 2)); return err }},
		{"QRQ wrong shape", func() error { return cusolver.QRQ(h, qr, col(3, 3)) }},
		{"QRQ row-major", func() error { return cusolver.QRQ(h, qr, cusolver.NewMatrix(buf(15), 5, 3)) }},
		{"ApplyQ wrong rows", func() error { return cusolver.ApplyQ(h, qr, col(4, 1), false) }},
		{"LeastSquares wide", func() error { _, err := cusolver.LeastSquares(h, col(2, 3), buf(2), buf(3), 1); return err }},
		{"LeastSquares row-major", func() error {
			_, err := cusolver.LeastSquares(h, cusolver.NewMatrix(buf(6), 3, 2), buf(3), buf(2), 1)
			return err
		}},
		{"LeastSquares short x", func() error { _, err := cusolver.LeastSquares(h, col(3, 2), buf(3), buf(1), 1); return err }},
		{"SVD tall row-major", func() error {
			_, err := cusolver.SVD(h, cusolver.NewMatrix(buf(6), 3, 2), buf(2), cusolver.Matrix[float64]{}, cusolver.Matrix[float64]{})
			return err
		}},
		{"SVD u shape", func() error {
			_, err := cusolver.SVD(h, col(3, 2), buf(2), col(2, 2), cusolver.Matrix[float64]{})
			return err
		}},
		{"SVD short s", func() error {
			_, err := cusolver.SVD(h, col(3, 2), buf(1), cusolver.Matrix[float64]{}, cusolver.Matrix[float64]{})
			return err
		}},
		{"Eigh short w", func() error { _, err := cusolver.Eigh(h, sq, cusolver.Lower, buf(2), true); return err }},
		{"CholeskyBatched short", func() error { _, err := cusolver.CholeskyBatched(h, sq, 2, cusolver.Lower); return err }},
		{"CholeskyBatched count", func() error { _, err := cusolver.CholeskyBatched(h, sq, -1, cusolver.Lower); return err }},
		{"SVDBatched too large", func() error {
			_, err := cusolver.SVDBatched(h, cusolver.NewMatrix(buf(33*33), 33, 33), 1, buf(33), nil, nil)
			return err
		}},
		{"SVDBatched u alone", func() error { _, err := cusolver.SVDBatched(h, sq, 1, buf(3), buf(9), nil); return err }},
		{"EighBatched short w", func() error { _, err := cusolver.EighBatched(h, sq, 1, cusolver.Lower, buf(2), false); return err }},
		{"Info zero", func() error { return (&cusolver.Info{}).Err() }},
		{"LUFactors.Free zero", func() error { return (&cusolver.LUFactors[float64]{}).Free() }},
		{"Info.Free nil", func() error { return (*cusolver.Info)(nil).Free() }},
		{"CholeskyFactor.Free zero", func() error { return (&cusolver.CholeskyFactor[float32]{}).Free() }},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := c.call(); !errors.Is(err, cuda.ErrInvalidValue) {
				t.Errorf("err = %v, want cuda.ErrInvalidValue", err)
			}
		})
	}
	if err := chol.Err(); err == nil {
		t.Error("Cholesky of zeros: Err = nil, want ErrNotPositiveDefinite")
	}
	if err := chol.Free(); err != nil {
		t.Errorf("Free after Err = %v, want nil", err)
	}
	freed := must(cusolver.Cholesky(h, cusolver.NewMatrix(buf(9), 3, 3), cusolver.Lower))(t)
	if err := freed.Free(); err != nil {
		t.Fatal(err)
	}
	if err := freed.Err(); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("Err after Free = %v, want cuda.ErrInvalidValue (freed unread)", err)
	}
	closed := must(cusolver.New(cudatest.Stream(t, ctx)))(t)
	if err := closed.Close(); err != nil {
		t.Fatal(err)
	}
	if err := closed.Close(); err != nil {
		t.Errorf("a second Close = %v, want nil", err)
	}
	if _, err := cusolver.LU(closed, sq); !errors.Is(err, cuda.ErrClosed) {
		t.Errorf("LU on a closed handle = %v, want cuda.ErrClosed", err)
	}
	if s := closed.String(); s == "" {
		t.Error("String of a closed handle is empty")
	}
}
