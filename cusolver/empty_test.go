package cusolver_test

import (
	"math"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/cusolver"
	"github.com/gocuda/cuda/internal/cudatest"
)

// TestEmptyBatches: a batch of no matrices needs no elements: an empty
// buffer describes it (a describes the first matrix, which there is not),
// and the Info says nothing. A batch of one is the matrix's own answer.
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
