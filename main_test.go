package cuda_test

import (
	"errors"
	"testing"

	"github.com/gocuda/cuda/internal/cudatest"
)

func TestMain(m *testing.M) { cudatest.Main(m) }

// wantErrors fails t for each named error that does not wrap want.
func wantErrors(t *testing.T, want error, errs map[string]error) {
	t.Helper()
	for name, err := range errs {
		if !errors.Is(err, want) {
			t.Errorf("%s: %v; want %v", name, err, want)
		}
	}
}
