package cusolver_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/cusolver"
	"github.com/gocuda/cuda/internal/cudatest"
)

// TestEmptyBatches: a batch of no matrices needs no elements: an empty
// buffer describes it (a describes the first matrix, which there is not),
// and the Info says nothing. A batch of one is the matrix's own answer,
// its failure named as a batch's ("matrix 0: ...").
func TestEmptyBatches(t *testing.T) {
	ctx, h := handle(t)
	buf := func(xs ...float64) *cuda.DeviceBuffer[float64] { return cudatest.Upload(t, ctx, xs) }
	for _, tt := range []struct {
		name string
		call func(a cusolver.Matrix[float64], count int, out *cuda.DeviceBuffer[float64]) (*cusolver.Info, error)
	}{
		{"CholeskyBatched Lower", func(a cusolver.Matrix[float64], count int, _ *cuda.DeviceBuffer[float64]) (*cusolver.Info, error) {
			return cusolver.CholeskyBatched(h, a, count, cusolver.Lower)
		}},
		{"CholeskyBatched Upper", func(a cusolver.Matrix[float64], count int, _ *cuda.DeviceBuffer[float64]) (*cusolver.Info, error) {
			return cusolver.CholeskyBatched(h, a, count, cusolver.Upper)
		}},
		{"SVDBatched", func(a cusolver.Matrix[float64], count int, s *cuda.DeviceBuffer[float64]) (*cusolver.Info, error) {
			return cusolver.SVDBatched(h, a, count, s, nil, nil)
		}},
		{"EighBatched", func(a cusolver.Matrix[float64], count int, w *cuda.DeviceBuffer[float64]) (*cusolver.Info, error) {
			return cusolver.EighBatched(h, a, count, cusolver.Lower, w, false)
		}},
	} {
		t.Run(tt.name+"/count 0, empty buffers", func(t *testing.T) {
			info, err := tt.call(cusolver.NewMatrix(buf(), 2, 2), 0, buf())
			if err != nil {
				t.Fatalf("a batch of 0 in empty buffers: %v, want nil", err)
			}
			if err := info.Err(); err != nil {
				t.Errorf("Err = %v, want nil", err)
			}
		})
		t.Run(tt.name+"/count 1", func(t *testing.T) {
			// [[4, 2], [2, 5]]: L = [[2, 0], [1, 2]], eigenvalues and
			// singular values (9 ± √17)/2.
			a := cusolver.NewMatrix(buf(4, 2, 2, 5), 2, 2)
			out := buf(0, 0)
			info, err := tt.call(a, 1, out)
			if err != nil {
				t.Fatal(err)
			}
			if err := info.Err(); err != nil {
				t.Fatalf("Err = %v, want nil", err)
			}
			got := cudatest.Download(t, out)
			switch tt.name {
			case "SVDBatched":
				nearAll(t, "s", got, []float64{(9 + math.Sqrt(17)) / 2, (9 - math.Sqrt(17)) / 2})
			case "EighBatched":
				nearAll(t, "w", got, []float64{(9 - math.Sqrt(17)) / 2, (9 + math.Sqrt(17)) / 2})
			default:
				l := cudatest.Download(t, a.Data)
				if tt.name == "CholeskyBatched Lower" {
					nearAll(t, "L", []float64{l[0], l[2], l[3]}, []float64{2, 1, 2})
				} else {
					nearAll(t, "U", []float64{l[0], l[1], l[3]}, []float64{2, 1, 2})
				}
			}
		})
	}
	// A batch of one that fails names its matrix, as every batch does.
	info, err := cusolver.CholeskyBatched(h, cusolver.NewMatrix(buf(1, 2, 2, 1), 2, 2), 1, cusolver.Lower)
	if err != nil {
		t.Fatal(err)
	}
	if err := info.Err(); !errors.Is(err, cusolver.ErrNotPositiveDefinite) || !strings.Contains(err.Error(), "matrix 0: the leading minor of order 2") {
		t.Errorf("a batch of one not positive definite: Err = %v, want ErrNotPositiveDefinite naming matrix 0 and the minor of order 2", err)
	}
	// The buffer is still checked where there are matrices, and the
	// shape where there are none.
	if _, err := cusolver.CholeskyBatched(h, cusolver.NewMatrix(buf(), 2, 2), 1, cusolver.Lower); err == nil {
		t.Error("a batch of 1 in an empty buffer: nil error")
	}
	if _, err := cusolver.CholeskyBatched(h, cusolver.NewMatrix(buf(), 2, 3), 0, cusolver.Lower); err == nil {
		t.Error("a batch of 0 of 2×3 matrices: nil error, want not square")
	}
	if _, err := cusolver.EighBatched(h, cusolver.NewMatrix(buf(), 2, 2), 0, 5, buf(), false); err == nil {
		t.Error("a batch of 0 with triangle 5: nil error")
	}
}

// nearAll checks got against want within 1e-9 each.
func nearAll(t *testing.T, what string, got, want []float64) {
	t.Helper()
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-9 {
			t.Errorf("%s = %v, want %v", what, got[:len(want)], want)
			return
		}
	}
}

// TestEmptyMatrices: a matrix with no elements (0×0, or a QR's, SVD's or
// least-squares problem with no rows or no columns) is nothing to do:
// each call returns without error and its Err says nothing, as LAPACK's
// quick returns; its buffers may be empty. The same for no right-hand
// sides. cuSOLVER is not asked (on the fake, no cusolverDn call is
// counted): what it makes of the NULL arrays of empty buffers is its own.
func TestEmptyMatrices(t *testing.T) {
	ctx, h := handle(t)
	empty := func() *cuda.DeviceBuffer[float64] { return cudatest.Upload(t, ctx, []float64{}) }
	col := func(r, c int) cusolver.Matrix[float64] {
		return cusolver.Matrix[float64]{Data: cudatest.Upload(t, ctx, make([]float64, r*c)), Rows: r, Cols: c, Layout: cusolver.ColMajor}
	}
	type errer interface{ Err() error }
	for _, tt := range []struct {
		name string
		call func() (errer, error)
	}{
		{"LU 0×0 and Solve", func() (errer, error) {
			f, err := cusolver.LU(h, cusolver.NewMatrix(empty(), 0, 0))
			if err != nil {
				return nil, err
			}
			t.Cleanup(func() { f.Free() })
			return f, cusolver.Solve(h, f, empty(), 3)
		}},
		{"Solve of no right-hand sides", func() (errer, error) {
			f, err := cusolver.LU(h, cusolver.NewMatrix(cudatest.Upload(t, ctx, []float64{2, 1, 1, 3}), 2, 2))
			if err != nil {
				return nil, err
			}
			t.Cleanup(func() { f.Free() })
			if fake := cudatest.Fake(t); fake != nil {
				fake.ResetCounts() // the LU was cuSOLVER's; the solve is not
			}
			return f, cusolver.Solve(h, f, empty(), 0)
		}},
		{"Cholesky 0×0, CholeskySolve and CholeskyInverse", func() (errer, error) {
			f, err := cusolver.Cholesky(h, cusolver.Matrix[float64]{Data: empty(), Layout: cusolver.ColMajor}, cusolver.Upper)
			if err != nil {
				return nil, err
			}
			if err := cusolver.CholeskySolve(h, f, empty(), 2); err != nil {
				return nil, err
			}
			if err := f.Err(); err != nil {
				return nil, err
			}
			return cusolver.CholeskyInverse(h, f)
		}},
		{"QR 0×0", func() (errer, error) { return qrAll(h, col(0, 0), col(0, 0), col(0, 2)) }},
		{"QR 3×0", func() (errer, error) { return qrAll(h, col(3, 0), col(3, 0), col(3, 2)) }},
		{"QR 0×3", func() (errer, error) { return qrAll(h, col(0, 3), cusolver.Matrix[float64]{}, col(0, 2)) }},
		{"LeastSquares 0×0", func() (errer, error) { return cusolver.LeastSquares(h, col(0, 0), empty(), empty(), 1) }},
		{"LeastSquares 3×0", func() (errer, error) {
			return cusolver.LeastSquares(h, col(3, 0), cudatest.Upload(t, ctx, []float64{1, 2, 3}), empty(), 1)
		}},
		{"LeastSquares of no right-hand sides", func() (errer, error) {
			a := cusolver.Matrix[float64]{Data: cudatest.Upload(t, ctx, []float64{1, 0, 0, 1}), Rows: 2, Cols: 2, Layout: cusolver.ColMajor}
			return cusolver.LeastSquares(h, a, empty(), empty(), 0)
		}},
		{"SVD 0×0", func() (errer, error) { return cusolver.SVD(h, col(0, 0), empty(), col(0, 0), col(0, 0)) }},
		{"SVD 3×0, values alone", func() (errer, error) {
			return cusolver.SVD(h, col(3, 0), empty(), cusolver.Matrix[float64]{}, cusolver.Matrix[float64]{})
		}},
		{"SVD 0×3 row-major, values alone", func() (errer, error) {
			return cusolver.SVD(h, cusolver.NewMatrix(empty(), 0, 3), empty(), cusolver.Matrix[float64]{}, cusolver.Matrix[float64]{})
		}},
		{"CholeskyBatched of three 0×0", func() (errer, error) {
			return cusolver.CholeskyBatched(h, cusolver.NewMatrix(empty(), 0, 0), 3, cusolver.Upper)
		}},
		{"Eigh 0×0", func() (errer, error) {
			return cusolver.Eigh(h, cusolver.NewMatrix(empty(), 0, 0), cusolver.Lower, empty(), true)
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fake := cudatest.Fake(t)
			if fake != nil {
				fake.ResetCounts()
			}
			e, err := tt.call()
			if err != nil {
				t.Fatalf("err = %v, want nil", err)
			}
			if err := e.Err(); err != nil {
				t.Errorf("Err = %v, want nil", err)
			}
			if fake == nil {
				return
			}
			for name, n := range fake.Counts() {
				if strings.HasPrefix(name, "cusolverDn") && n > 0 {
					t.Errorf("%s called %d times: an empty problem is not cuSOLVER's", name, n)
				}
			}
		})
	}
}

// qrAll factors a, forms Q into q where it has data, and applies Qᵀ to c;
// its Err is nil unless one failed.
func qrAll(h *cusolver.Handle, a, q, c cusolver.Matrix[float64]) (interface{ Err() error }, error) {
	f, err := cusolver.QR(h, a)
	if err != nil {
		return nil, err
	}
	defer f.Free()
	if q.Data != nil {
		if err := cusolver.QRQ(h, f, q); err != nil {
			return nil, err
		}
	}
	if err := cusolver.ApplyQ(h, f, c, true); err != nil {
		return nil, err
	}
	return noErr{}, nil
}

type noErr struct{}

func (noErr) Err() error { return nil }
