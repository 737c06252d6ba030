package cuda_test

import (
	"testing"

	"github.com/gocuda/cuda/internal/cudatest"
)

func TestMain(m *testing.M) { cudatest.Main(m) }
