package cufft_test

import (
	"os"
	"testing"

	"github.com/gocuda/cuda/cufft"
	"github.com/gocuda/cuda/internal/cudatest"
)

func TestMain(m *testing.M) {
	// A GPU without cuFFT: these tests run against the fake driver, which
	// answers cuFFT's calls too, except where the GPU machine's scripts
	// require the real thing.
	if os.Getenv(cufft.EnvLibrary) == "" && os.Getenv(cudatest.EnvRequireGPU) != "1" && !cudatest.Loadable("libcufft.so.12", "libcufft.so.11", "/usr/local/cuda/lib64/libcufft.so.12", "/usr/local/cuda/lib64/libcufft.so.11") {
		os.Setenv(cudatest.EnvDriver, "fake")
	}
	cudatest.Main(m)
}

// must is cudatest.Must.
func must[T any](v T, err error) func(testing.TB) T { return cudatest.Must(v, err) }
