package curand_test

import (
	"os"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/curand"
	"github.com/gocuda/cuda/internal/cudatest"
)

func TestMain(m *testing.M) {
	// A GPU without cuRAND: these tests run against the fake driver, which
	// answers cuRAND's calls too, except where the GPU machine's scripts
	// require the real thing.
	if os.Getenv(curand.EnvLibrary) == "" && os.Getenv(cudatest.EnvRequireGPU) != "1" && !cudatest.Loadable("libcurand.so.10", "/usr/local/cuda/lib64/libcurand.so.10") {
		os.Setenv(cudatest.EnvDriver, "fake")
	}
	cudatest.Main(m)
}

// must is cudatest.Must.
func must[T any](v T, err error) func(testing.TB) T { return cudatest.Must(v, err) }

// generator returns a stream and a generator of rng on it, seeded with
// seed, closed when the test ends.
func generator(t *testing.T, rng curand.RNG, seed uint64) (*cuda.Stream, *curand.Generator) {
	t.Helper()
	s := cudatest.Stream(t, cudatest.Context(t))
	return s, generatorOn(t, s, rng, seed)
}

// generatorOn returns a generator of rng on s, closed when the test ends.
func generatorOn(t *testing.T, s *cuda.Stream, rng curand.RNG, seed uint64) *curand.Generator {
	t.Helper()
	g := must(curand.New(s, rng, seed))(t)
	t.Cleanup(func() {
		if err := g.Close(); err != nil {
			t.Errorf("Generator.Close: %v", err)
		}
	})
	return g
}
