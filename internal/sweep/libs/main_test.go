package libs_test

import (
	"testing"

	"github.com/gocuda/cuda/internal/cudatest"
)

func TestMain(m *testing.M) { cudatest.Main(m) }

// must is cudatest.Must.
func must[T any](v T, err error) func(testing.TB) T { return cudatest.Must(v, err) }
