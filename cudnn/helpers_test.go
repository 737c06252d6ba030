package cudnn_test

import (
	"math"
	"math/rand/v2"
	"os"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/cudnn"
	"github.com/gocuda/cuda/internal/cudatest"
)

func TestMain(m *testing.M) {
	// A GPU without cuDNN: these tests run against the fake driver, which
	// answers cuDNN's calls too, except where the GPU machine's scripts
	// require the real thing (and name the library, GOCUDA_LIBCUDNN).
	if os.Getenv(cudnn.EnvLibrary) == "" && os.Getenv(cudatest.EnvRequireGPU) != "1" && !cudatest.Loadable("libcudnn.so.9") {
		os.Setenv(cudatest.EnvDriver, "fake")
	}
	cudatest.Main(m)
}

// must is cudatest.Must: h := must(cudnn.New(s))(t).
func must[T any](v T, err error) func(testing.TB) T { return cudatest.Must(v, err) }

// handle returns a context, a stream and a Handle on it, closed when the
// test ends.
func handle(t testing.TB) (*cuda.Context, *cuda.Stream, *cudnn.Handle) {
	t.Helper()
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	h, err := cudnn.New(s)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := h.Close(); err != nil {
			t.Errorf("Handle.Close: %v", err)
		}
	})
	return ctx, s, h
}

// of converts f to T, rounding to the nearest.
func of[T cudnn.Element](f float64) T {
	var z T
	switch any(z).(type) {
	case cuda.Float16:
		return any(cuda.NewFloat16(float32(f))).(T)
	case cuda.BFloat16:
		return any(cuda.NewBFloat16(float32(f))).(T)
	}
	return T(f)
}

// val converts v to float64.
func val[T cudnn.Element](v T) float64 {
	switch x := any(v).(type) {
	case cuda.Float16:
		return float64(x.Float32())
	case cuda.BFloat16:
		return float64(x.Float32())
	}
	return float64(v)
}

// tol is T's relative tolerance against a float64 reference, applied to
// the sum of the magnitudes of the terms that make an output: float32
// (no TF32 in the tests) leaves room for the FFT and Winograd algorithms
// cuDNN's heuristics may pick; the halves round the output to 11 and 8
// bits.
func tol[T cudnn.Element]() float64 {
	var z T
	switch any(z).(type) {
	case cuda.Float16:
		return 2e-3
	case cuda.BFloat16:
		return 1e-2
	}
	return 1e-4
}

// random returns n values in [-1, 1) rounded to T, as T and as float64.
func random[T cudnn.Element](r *rand.Rand, n int) ([]T, []float64) {
	t, f := make([]T, n), make([]float64, n)
	for i := range t {
		t[i] = of[T](r.Float64()*2 - 1)
		f[i] = val(t[i])
	}
	return t, f
}

// tensor uploads data as a tensor of shape s in layout l, freed when the
// test ends.
func tensor[T cudnn.Element](t testing.TB, ctx *cuda.Context, s cudnn.Shape, l cudnn.Layout, data []T) cudnn.Tensor[T] {
	t.Helper()
	return cudnn.Tensor[T]{Data: cudatest.Upload(t, ctx, data), Shape: s, Layout: l}
}

// empty allocates a tensor of shape s in layout l filled with NaN's bits
// pattern where T is a float (so that what is not written shows), freed
// when the test ends.
func empty[T cudnn.Element](t testing.TB, ctx *cuda.Context, s cudnn.Shape, l cudnn.Layout) cudnn.Tensor[T] {
	t.Helper()
	data := make([]T, s.Len())
	for i := range data {
		data[i] = of[T](math.NaN())
	}
	return tensor(t, ctx, s, l, data)
}

// download reads t back as float64 (synchronous).
func download[T cudnn.Element](t testing.TB, x cudnn.Tensor[T]) []float64 {
	t.Helper()
	host := must(x.Data.ToHost())(t)
	out := make([]float64, len(host))
	for i, v := range host {
		out[i] = val(v)
	}
	return out
}

// at is element (n, c, h, w)'s index in a tensor of shape s in layout l.
func at(s cudnn.Shape, l cudnn.Layout, n, c, h, w int) int {
	if l == cudnn.NHWC {
		return ((n*s.H+h)*s.W+w)*s.C + c
	}
	return ((n*s.C+c)*s.H+h)*s.W + w
}

// norm fills p's defaults, as the package does.
func norm(p cudnn.Conv2D) cudnn.Conv2D {
	for _, v := range []*int{&p.StrideH, &p.StrideW, &p.DilationH, &p.DilationW, &p.Groups} {
		if *v == 0 {
			*v = 1
		}
	}
	return p
}

// eachTerm calls f with the indices of every product term of the forward
// convolution of an input of shape xs with filters of shape ws under p:
// output yi gathers input xi times filter wi.
func eachTerm(xs, ws, ys cudnn.Shape, l cudnn.Layout, p cudnn.Conv2D, f func(xi, wi, yi int)) {
	p = norm(p)
	kpg := ws.N / p.Groups
	for n := range ys.N {
		for k := range ys.C {
			g := k / kpg
			for oh := range ys.H {
				for ow := range ys.W {
					for cf := range ws.C {
						for r := range ws.H {
							for s := range ws.W {
								ih, iw := oh*p.StrideH-p.PadH+r*p.DilationH, ow*p.StrideW-p.PadW+s*p.DilationW
								if ih < 0 || ih >= xs.H || iw < 0 || iw >= xs.W {
									continue
								}
								f(at(xs, l, n, g*ws.C+cf, ih, iw), at(ws, l, k, cf, r, s), at(ys, l, n, k, oh, ow))
							}
						}
					}
				}
			}
		}
	}
}

// near checks got against want, where scale[i] is the sum of the
// magnitudes of the terms of output i.
func near(t testing.TB, what string, got, want, scale []float64, rel float64) {
	t.Helper()
	bad := 0
	for i := range want {
		if d := math.Abs(got[i] - want[i]); !(d <= rel*(scale[i]+1e-3)) {
			if bad++; bad <= 5 {
				t.Errorf("%s[%d] = %v, want %v (±%.3g)", what, i, got[i], want[i], rel*(scale[i]+1e-3))
			}
		}
	}
	if bad > 5 {
		t.Errorf("%s: %d of %d wrong", what, bad, len(want))
	}
}
