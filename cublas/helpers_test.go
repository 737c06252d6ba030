package cublas_test

import (
	"math"
	"math/rand/v2"
	"os"
	"reflect"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/cublas"
	"github.com/gocuda/cuda/internal/cudatest"
)

func TestMain(m *testing.M) {
	// A GPU without cuBLAS: these tests run against the fake driver, which
	// answers cuBLAS's calls too, except where the GPU machine's scripts
	// require the real thing.
	if os.Getenv(cublas.EnvLibrary) == "" && os.Getenv(cudatest.EnvRequireGPU) != "1" && !cudatest.Loadable("libcublas.so.13", "libcublas.so.12", "/usr/local/cuda/lib64/libcublas.so.13", "/usr/local/cuda/lib64/libcublas.so.12") {
		os.Setenv(cudatest.EnvDriver, "fake")
	}
	cudatest.Main(m)
}

// must is cudatest.Must: h := must(cublas.New(s))(t).
func must[T any](v T, err error) func(testing.TB) T { return cudatest.Must(v, err) }

// handle returns a context, a stream and a Handle on it, closed when the
// test ends.
func handle(t testing.TB) (*cuda.Context, *cuda.Stream, *cublas.Handle) {
	t.Helper()
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	h, err := cublas.New(s)
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

// element is the element types of the products.
type element interface{ cuda.AnyFloat }

// fromFloat and toFloat convert between float64 and each element type, a
// type defined on float32 or float64 too (by its kind).
func fromFloat[T element](f float64) T {
	var out T
	switch p := any(&out).(type) {
	case *cuda.Float16:
		*p = cuda.NewFloat16(float32(f))
	case *cuda.BFloat16:
		*p = cuda.NewBFloat16(float32(f))
	default:
		reflect.ValueOf(p).Elem().SetFloat(f)
	}
	return out
}

func toFloat[T element](v T) float64 {
	switch x := any(v).(type) {
	case cuda.Float16:
		return float64(x.Float32())
	case cuda.BFloat16:
		return float64(x.Float32())
	}
	return reflect.ValueOf(v).Float()
}

// tolerance is the error allowed relative to the sum of the magnitudes of
// a result's terms: the rounding of the result to T (its half ulp) and of
// a float32 or float64 accumulation.
func tolerance[T element](tf32 bool) float64 {
	switch t := reflect.TypeFor[T](); {
	case t.Kind() == reflect.Float64:
		return 1e-13
	case t.Kind() == reflect.Float32:
		if tf32 {
			return 2e-3 // inputs rounded to 10 fraction bits
		}
		return 1e-5
	case t == reflect.TypeFor[cuda.Float16]():
		return 2e-3 // 2^-11, and float32 sums
	}
	return 1e-2 // bfloat16: 2^-8
}

// random returns n small random numbers that T holds exactly (so that the
// reference and the GPU see the same inputs), some negative, some zero.
func random[T element](r *rand.Rand, n int) []T {
	out := make([]T, n)
	for i := range out {
		out[i] = fromFloat[T](float64(r.IntN(33)-16) / 8)
	}
	return out
}

// download synchronizes s, then copies b to the host. The copy would wait
// for the handle's work on b by itself (CopyToHost orders itself after the
// work queued on its buffer); synchronizing s first reports a failure of
// that work as the stream's.
func download[T any](t testing.TB, s *cuda.Stream, b *cuda.DeviceBuffer[T]) []T {
	t.Helper()
	if err := s.Synchronize(); err != nil {
		t.Fatalf("Synchronize: %v", err)
	}
	return cudatest.Download(t, b)
}

// hostMatrix is a matrix on the host in one of the layouts, for the
// reference.
type hostMatrix struct {
	rows, cols, stride int
	layout             cublas.Layout
	data               []float64
}

func (m hostMatrix) at(i, j int) float64 {
	if m.layout == cublas.ColMajor {
		return m.data[j*m.stride+i]
	}
	return m.data[i*m.stride+j]
}

func (m hostMatrix) index(i, j int) int {
	if m.layout == cublas.ColMajor {
		return j*m.stride + i
	}
	return i*m.stride + j
}

func (m hostMatrix) t() hostMatrix {
	m.rows, m.cols = m.cols, m.rows
	m.layout ^= 1
	return m
}

func floats[T element](v []T) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = toFloat(x)
	}
	return out
}

// closeTo reports whether got is want within tol of scale.
func closeTo(got, want, scale, tol float64) bool {
	return math.Abs(got-want) <= tol*scale+1e-30
}
