package gonumtest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/cublas"
	"github.com/gocuda/cuda/internal/cudatest"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/blas64"
)

func TestMain(m *testing.M) { cudatest.Main(m) }

// gemm computes C = A·B + 0.5·C with gocuda on the device, both row-major
// (gonum's layout), with A and B optionally given transposed.
func gemm[T float32 | float64](t *testing.T, h *cublas.Handle, ad, bd, cd []T, m, n, k int, ta, tb bool) []T {
	t.Helper()
	ctx := h.Stream().Context()
	up := func(d []T) *cuda.DeviceBuffer[T] {
		b, err := cuda.FromHost(ctx, d)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Free() })
		return b
	}
	a := cublas.NewMatrix(up(ad), m, k)
	if ta {
		a = cublas.NewMatrix(a.Data, k, m).T()
	}
	b := cublas.NewMatrix(up(bd), k, n)
	if tb {
		b = cublas.NewMatrix(b.Data, n, k).T()
	}
	c := cublas.NewMatrix(up(cd), m, n)
	if err := cublas.Gemm(h, 1, a, b, 0.5, c); err != nil {
		t.Fatal(err)
	}
	if err := h.Stream().Synchronize(); err != nil {
		t.Fatal(err)
	}
	out := make([]T, m*n)
	if err := c.Data.CopyToHost(out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestGemmAgainstGonum(t *testing.T) {
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	h, err := cublas.New(s)
	if err != nil {
		if os.Getenv(cudatest.EnvRequireGPU) != "1" {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	defer h.Close()
	r := rand.New(rand.NewPCG(42, 7))
	maxDim := 300
	if cudatest.IsFake() {
		maxDim = 40 // the fake computes on the CPU
	}
	for i := range 24 {
		m, n, k := 1+r.IntN(maxDim), 1+r.IntN(maxDim), 1+r.IntN(maxDim)
		ta, tb := r.IntN(2) == 0, r.IntN(2) == 0
		tr := func(b bool) blas.Transpose {
			if b {
				return blas.Trans
			}
			return blas.NoTrans
		}
		// Stored as given: a transposed A is k×m.
		ar, ac, br, bc := m, k, k, n
		if ta {
			ar, ac = k, m
		}
		if tb {
			br, bc = n, k
		}
		t.Run(fmt.Sprintf("%d/%dx%dx%d/ta=%v,tb=%v", i, m, n, k, ta, tb), func(t *testing.T) {
			a64, b64, c64 := randoms(r, ar*ac), randoms(r, br*bc), randoms(r, m*n)
			want := blas64.General{Rows: m, Cols: n, Stride: n, Data: append([]float64(nil), c64...)}
			blas64.Gemm(tr(ta), tr(tb), 1, blas64.General{Rows: ar, Cols: ac, Stride: ac, Data: a64},
				blas64.General{Rows: br, Cols: bc, Stride: bc, Data: b64}, 0.5, want)
			compare(t, "float64", gemm(t, h, a64, b64, c64, m, n, k, ta, tb), want.Data, k, 1e-12)

			a32, b32, c32 := narrow(a64), narrow(b64), narrow(c64)
			want32 := blas32.General{Rows: m, Cols: n, Stride: n, Data: append([]float32(nil), c32...)}
			blas32.Gemm(tr(ta), tr(tb), 1, blas32.General{Rows: ar, Cols: ac, Stride: ac, Data: a32},
				blas32.General{Rows: br, Cols: bc, Stride: bc, Data: b32}, 0.5, want32)
			compare(t, "float32", gemm(t, h, a32, b32, c32, m, n, k, ta, tb), want32.Data, k, 1e-5)
		})
	}
}

func randoms(r *rand.Rand, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = r.Float64()*2 - 1
	}
	return out
}

func narrow(v []float64) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return out
}

// compare checks got against gonum's want, each element within tol of k
// (the terms are at most 1 in magnitude, k of them).
func compare[T float32 | float64](t *testing.T, what string, got, want []T, k int, tol float64) {
	t.Helper()
	for i := range want {
		if d := math.Abs(float64(got[i]) - float64(want[i])); d > tol*float64(k+1) {
			t.Fatalf("%s: element %d is %v, gonum says %v", what, i, got[i], want[i])
		}
	}
}
