package nn_test

import (
	"errors"
	"math"
	"os"
	"strings"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
	"github.com/gocuda/cuda/nd"
	"github.com/gocuda/cuda/nn"
)

// TestMain runs the tests; the Examples need kernels, skipped where none
// can run.
func TestMain(m *testing.M) { cudatest.MainSkipWithoutKernels(m, "^Example") }

func must[T any](v T, err error) func(testing.TB) T { return cudatest.Must(v, err) }

// layerStream returns a stream of a fresh context, closed (and checked
// for leaks) when the test ends; it skips where kernels cannot run.
func layerStream(t *testing.T) *cuda.Stream {
	t.Helper()
	layerRequireKernels(t)
	return cudatest.Stream(t, cudatest.Contexts(t, 1)[0])
}

// layerRequireKernels skips where kernels cannot run (the fake without a
// C++ compiler, or no NVRTC); on the GPU machine they must.
func layerRequireKernels(t testing.TB) {
	t.Helper()
	switch {
	case cudatest.KernelsRun():
		return
	case os.Getenv(cudatest.EnvRequireGPU) == "1":
		t.Fatal("GOCUDA_REQUIRE_GPU=1 and kernels cannot run: no NVRTC")
	}
	t.Skip("kernels cannot run here (no NVRTC, or no C++ compiler for the fake)")
}

// layerFree frees a when the test ends.
func layerFree[T nd.Elem](t testing.TB, a *nd.Array[T]) *nd.Array[T] {
	t.Helper()
	t.Cleanup(func() {
		if err := a.Free(); err != nil {
			t.Error(err)
		}
	})
	return a
}

// layerTo converts float64s to T, rounding as T's constructor does.
func layerTo[T nn.Float](v []float64) []T {
	out := make([]T, len(v))
	for i, x := range v {
		switch p := any(&out[i]).(type) {
		case *cuda.Float16:
			*p = cuda.NewFloat16(float32(x))
		case *cuda.BFloat16:
			*p = cuda.NewBFloat16(float32(x))
		default:
			*(any(&out[i]).(*float32)) = float32(x)
		}
	}
	return out
}

// layerFrom converts T's to float64s.
func layerFrom[T nn.Float](v []T) []float64 {
	out := make([]float64, len(v))
	for i := range v {
		switch x := any(v[i]).(type) {
		case cuda.Float16:
			out[i] = float64(x.Float32())
		case cuda.BFloat16:
			out[i] = float64(x.Float32())
		case float32:
			out[i] = float64(x)
		}
	}
	return out
}

// layerRound rounds v to T and back: the reference's inputs are what the
// device reads.
func layerRound[T nn.Float](v []float64) []float64 { return layerFrom(layerTo[T](v)) }

// layerUp uploads v as a T array of shape on s.
func layerUp[T nn.Float](t testing.TB, s *cuda.Stream, v []float64, shape ...int) *nd.Array[T] {
	t.Helper()
	return layerFree(t, must(nd.FromSlice(s, layerTo[T](v), shape...))(t))
}

// layerDown reads a as float64s.
func layerDown[T nn.Float](t testing.TB, a *nd.Array[T]) []float64 {
	t.Helper()
	return layerFrom(must(a.ToSlice())(t))
}

// layerData is n pseudo-random numbers in [lo, hi), the same for a seed.
func layerData(n int, seed uint64, lo, hi float64) []float64 {
	out := make([]float64, n)
	x := seed*0x9e3779b97f4a7c15 + 1
	for i := range out {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		out[i] = lo + (hi-lo)*float64(x>>11)/float64(1<<53)
	}
	return out
}

// layerTol is the tolerance of a result of T: relative and absolute.
func layerTol[T nn.Float]() float64 {
	switch any(*new(T)).(type) {
	case cuda.Float16:
		return 2e-3
	case cuda.BFloat16:
		return 1.6e-2
	}
	return 2e-5
}

// layerClose fails t where got and want differ by more than tol (each
// element: |got-want| <= tol * (1 + |want|)).
func layerClose(t testing.TB, what string, got, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d elements, want %d", what, len(got), len(want))
	}
	bad := 0
	for i := range got {
		if d := math.Abs(got[i] - want[i]); !(d <= tol*(1+math.Abs(want[i]))) {
			if bad < 5 {
				t.Errorf("%s[%d] = %v, want %v (tolerance %g)", what, i, got[i], want[i], tol)
			}
			bad++
		}
	}
	if bad > 5 {
		t.Errorf("%s: %d of %d elements out of tolerance", what, bad, len(got))
	}
}

// layerWantErr fails t unless err wraps sentinel and says each of words.
func layerWantErr(t testing.TB, err, sentinel error, words ...string) {
	t.Helper()
	if !errors.Is(err, sentinel) {
		t.Fatalf("error %v, want one wrapping %v", err, sentinel)
	}
	for _, w := range words {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not say %q", err, w)
		}
	}
}

// layerTypes runs f for each element type.
func layerTypes(t *testing.T, f func(t *testing.T, typ string)) {
	for _, typ := range []string{"float32", "float16", "bfloat16"} {
		t.Run(typ, func(t *testing.T) { f(t, typ) })
	}
}

// layerWidths are the row widths the layers are checked at: odd sizes,
// a warp's and a block's rows.
var layerWidths = []struct{ rows, cols int }{
	{1, 1}, {3, 7}, {5, 33}, {1, 1000}, {2, 4097}, {67, 64}, {9, 768}, {3, 2048},
}
