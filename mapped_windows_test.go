package cuda_test

import (
	"testing"

	cuda "github.com/gocuda/cuda"
)

// mapped is, on Windows, host memory from the Go heap: the benchmarks'
// mmap'd case (mapped_unix_test.go) has no counterpart here.
func mapped(b *testing.B, _ *cuda.Context, n int) []byte {
	m := make([]byte, n)
	copy(m, random[byte](n))
	return m
}
