package cufft_test

import (
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/cufft"
	"github.com/gocuda/cuda/internal/cudatest"
)

// BenchmarkFFT executes a plan made once, beside bench/pyref/torch_fft.py's
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
				exec = func() error { return p.ExecC2C(out, in, cufft.Forward) }
				b.SetBytes(int64(8 * n))
			} else {
				last := tt.shape[len(tt.shape)-1]
				in := must(cuda.Alloc[float32](ctx, n))(b)
				defer in.Free()
				out := must(cuda.Alloc[complex64](ctx, n/last*(last/2+1)))(b)
				defer out.Free()
				exec = func() error { return p.ExecR2C(out, in) }
				b.SetBytes(int64(4 * n))
			}
			cudatest.WarmUp(b, s, exec)
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

// BenchmarkExecRepeated is the cost of one small transform (64 complex64)
// executed again and again, beside bench/cref/randfft.c's exec-64 and
// exec-64-sync from C (the goal: a repeated transform costs no
// more than cuFFT's exec from C + 2 µs). "plan" executes a plan held by
// the caller and synchronizes after every 256 calls, so that the time is
// the call's own; "plans" looks the plan up in a Plans first, as a caller
// that keeps no plan does; "sync" synchronizes after every execution.
func BenchmarkExecRepeated(b *testing.B) {
	ctx := cudatest.Context(b)
	s := cudatest.Stream(b, ctx)
	plans := must(cufft.NewPlans(s))(b)
	defer plans.Close()
	in := must(cuda.Alloc[complex64](ctx, 64))(b)
	defer in.Free()
	out := must(cuda.Alloc[complex64](ctx, 64))(b)
	defer out.Free()
	p := must(plans.Plan(cufft.C2C, []int{64}, 1))(b)
	shape := []int{64}
	for _, tt := range []struct {
		name  string
		every int
		plan  func() (*cufft.Plan, error)
	}{
		{"plan", 256, func() (*cufft.Plan, error) { return p, nil }},
		{"plans", 256, func() (*cufft.Plan, error) { return plans.Plan(cufft.C2C, shape, 1) }},
		{"sync", 1, func() (*cufft.Plan, error) { return p, nil }},
	} {
		b.Run(tt.name, func(b *testing.B) {
			cudatest.WarmUp(b, s, func() error { return p.ExecC2C(out, in, cufft.Forward) })
			i := 0
			for b.Loop() {
				p, err := tt.plan()
				if err != nil {
					b.Fatal(err)
				}
				if err := p.ExecC2C(out, in, cufft.Forward); err != nil {
					b.Fatal(err)
				}
				if i++; i%tt.every == 0 {
					if err := s.Synchronize(); err != nil {
						b.Fatal(err)
					}
				}
			}
			if err := s.Synchronize(); err != nil {
				b.Fatal(err)
			}
		})
	}
}
