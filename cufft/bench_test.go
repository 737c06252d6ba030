package cufft_test

import (
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/cufft"
	"github.com/gocuda/cuda/internal/cudatest"
)

// BenchmarkFFT executes a plan made once, beside bench/torch_fft.py's
// torch.fft calls of the same shapes: fft of 2^24 complex64, fft of 4096
// rows of 4096 complex64 (batched), rfft2 of 8192×8192 float32.
func BenchmarkFFT(b *testing.B) {
	ctx := cudatest.Context(b)
	s := cudatest.Stream(b, ctx)
	for _, tt := range []struct {
		name  string
		typ   cufft.Type
		shape []int
		batch int
	}{
		{"fft-2^24", cufft.C2C, []int{1 << 24}, 1},
		{"fft-4096x4096-batched", cufft.C2C, []int{4096}, 4096},
		{"rfft2-8192x8192", cufft.R2C, []int{8192, 8192}, 1},
	} {
		b.Run(tt.name, func(b *testing.B) {
			p := must(cufft.NewPlan(s, tt.typ, tt.shape, tt.batch))(b)
			defer p.Close()
			n := tt.batch
			for _, d := range tt.shape {
				n *= d
			}
			var exec func() error
			if tt.typ == cufft.C2C {
				in := must(cuda.Alloc[complex64](ctx, n))(b)
				defer in.Free()
				out := must(cuda.Alloc[complex64](ctx, n))(b)
				defer out.Free()
				exec = func() error { return cufft.ExecC2C(p, in, out, cufft.Forward) }
				b.SetBytes(int64(8 * n))
			} else {
				last := tt.shape[len(tt.shape)-1]
				in := must(cuda.Alloc[float32](ctx, n))(b)
				defer in.Free()
				out := must(cuda.Alloc[complex64](ctx, n/last*(last/2+1)))(b)
				defer out.Free()
				exec = func() error { return cufft.ExecR2C(p, in, out) }
				b.SetBytes(int64(4 * n))
			}
			for b.Loop() {
				if err := exec(); err != nil {
					b.Fatal(err)
				}
				if err := s.Synchronize(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
