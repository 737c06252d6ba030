package cuda_test

import (
	"fmt"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
)

// copySizes are the transfer sizes benchmarked, in bytes: the seed's 150
// KiB, 196 KiB and 4.7 MiB among them. bench/cref/copybench.c uses the same.
var copySizes = []int{4, 4 << 10, 150 << 10, 196 << 10, 1 << 20, 4928307, 16 << 20, 64 << 20, 256 << 20, 1 << 30}

func sizeName(n int) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%dGiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", n>>20)
	case n >= 1<<20:
		return fmt.Sprintf("%.1fMiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return fmt.Sprintf("%dB", n)
}

// benchCopies runs copy for each size with host memory from host.
func benchCopies(b *testing.B, host func(b *testing.B, ctx *cuda.Context, n int) []byte, copy func(*cuda.DeviceBuffer[byte], []byte) error) {
	for _, n := range copySizes {
		b.Run(sizeName(n), func(b *testing.B) {
			ctx := cudatest.Context(b)
			dev := must(cuda.Alloc[byte](ctx, n))
			defer dev.Free()
			h := host(b, ctx, n)
			if err := copy(dev, h); err != nil { // warm up
				b.Fatal(err)
			}
			b.SetBytes(int64(n))
			for b.Loop() {
				if err := copy(dev, h); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func pageable(_ *testing.B, _ *cuda.Context, n int) []byte { return random[byte](n) }

func pinned(b *testing.B, ctx *cuda.Context, n int) []byte {
	p := must(cuda.AllocPinned[byte](ctx, n))
	b.Cleanup(func() { p.Free() })
	copy(p.Data(), random[byte](n))
	return p.Data()
}

func registered(b *testing.B, ctx *cuda.Context, n int) []byte {
	h := random[byte](n)
	r := must(cuda.Register(ctx, h))
	b.Cleanup(func() { r.Close() })
	return h
}

func up(d *cuda.DeviceBuffer[byte], h []byte) error   { return d.CopyFromHost(h) }
func down(d *cuda.DeviceBuffer[byte], h []byte) error { return d.CopyToHost(h) }

func BenchmarkCopyFromHost(b *testing.B)       { benchCopies(b, pageable, up) }
func BenchmarkCopyToHost(b *testing.B)         { benchCopies(b, pageable, down) }
func BenchmarkCopyFromPinned(b *testing.B)     { benchCopies(b, pinned, up) }
func BenchmarkCopyToPinned(b *testing.B)       { benchCopies(b, pinned, down) }
func BenchmarkCopyFromRegistered(b *testing.B) { benchCopies(b, registered, up) }
func BenchmarkCopyToRegistered(b *testing.B)   { benchCopies(b, registered, down) }
