package curand_test

import (
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/curand"
	"github.com/gocuda/cuda/internal/cudatest"
)

// BenchmarkGenerate fills 256 Mi float32 with uniform and normal numbers
// from Philox4x32-10, beside bench/pyref/torch_rand.py's torch.rand and
// torch.randn of the same size (the goal: 0.98x PyTorch or better).
func BenchmarkGenerate(b *testing.B) {
	ctx := cudatest.Context(b)
	s := cudatest.Stream(b, ctx)
	g := must(curand.New(s, curand.Philox4x32_10, 1))(b)
	defer g.Close()
	// OrderingDynamic: cuRAND's fastest layout for the GPU.
	gd := must(curand.New(s, curand.Philox4x32_10, 1))(b)
	defer gd.Close()
	if err := gd.SetOrdering(curand.OrderingDynamic); err != nil {
		b.Fatal(err)
	}
	const n = 256 << 20
	x := must(cuda.Alloc[float32](ctx, n))(b)
	defer x.Free()
	for _, tt := range []struct {
		name string
		gen  func() error
	}{
		{"uniform", func() error { return curand.Uniform(g, x) }},
		{"normal", func() error { return curand.Normal(g, x, 0, 1) }},
		{"uniform-dynamic", func() error { return curand.Uniform(gd, x) }},
		{"normal-dynamic", func() error { return curand.Normal(gd, x, 0, 1) }},
	} {
		b.Run(tt.name, func(b *testing.B) {
			b.SetBytes(4 * n)
			cudatest.WarmUp(b, s, tt.gen)
			for b.Loop() {
				if err := tt.gen(); err != nil {
					b.Fatal(err)
				}
				if err := s.Synchronize(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
