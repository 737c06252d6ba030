//go:build unix

package cuda_test

import (
	"syscall"
	"testing"

	cuda "github.com/gocuda/cuda"
)

// mapped is host memory straight from mmap, as C's malloc gets a large
// block, not from the Go heap: beside pageable it shows whether where the
// memory comes from matters to the driver's pageable path.
func mapped(b *testing.B, _ *cuda.Context, n int) []byte {
	m, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { syscall.Munmap(m) })
	copy(m, random[byte](n))
	return m
}
