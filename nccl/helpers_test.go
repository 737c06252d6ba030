package nccl_test

import (
	"errors"
	"math/rand/v2"
	"os"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
	"github.com/gocuda/cuda/nccl"
)

// requireNCCL skips where NCCL is missing, except on the GPU machine
// (GOCUDA_REQUIRE_GPU=1), where it must be there.
func requireNCCL(t testing.TB) {
	t.Helper()
	v, err := nccl.Version()
	if err == nil {
		path, _ := nccl.Library()
		t.Logf("NCCL %v (%s)", v, path)
		return
	}
	if !errors.Is(err, cuda.ErrNotSupported) {
		t.Fatalf("Version: %v", err)
	}
	if os.Getenv(cudatest.EnvRequireGPU) == "1" {
		t.Fatalf("GOCUDA_REQUIRE_GPU=1 and no NCCL: %v", err)
	}
	t.Skip(err)
}

// must is cudatest.Must: c := must(nccl.NewComm(...))(t).
func must[T any](v T, err error) func(testing.TB) T { return cudatest.Must(v, err) }

// numbers returns n small random integers as T: sums of them are exact in
// any order, as a reduction across GPUs adds them.
func numbers[T nccl.Element](n int) []T {
	s := make([]T, n)
	for i := range s {
		s[i] = T(rand.IntN(100))
	}
	return s
}

func equal[T comparable](t testing.TB, what string, got, want []T) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d elements, want %d", what, len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%s: element %d is %v, want %v", what, i, got[i], want[i])
		}
	}
}

func errOf[T any](_ T, err error) error { return err }

// twoRanks opens two devices' contexts and a communicator of two ranks
// over them, closed when the test ends; nil where cudatest.Contexts ran
// the test in a child process instead.
func twoRanks(t *testing.T) ([]*cuda.Context, []*nccl.Comm) {
	t.Helper()
	ctxs := cudatest.Contexts(t, 2, "NCCL_NVLS_ENABLE=0")
	if ctxs == nil {
		return nil, nil
	}
	comms := must(nccl.NewComms(ctxs))(t)
	t.Cleanup(func() {
		for _, c := range comms {
			c.Close()
		}
	})
	return ctxs, comms
}
