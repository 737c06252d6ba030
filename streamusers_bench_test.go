package cuda_test

import (
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
)

// The cost of ordering synchronous calls after the streams that used a
// buffer (streamusers.go): a launch that records its buffers' stream, a
// small synchronous copy with no stream work to wait for, and a copy right
// after a launch, waited for implicitly or by an explicit Synchronize first
// (what a caller had to write before).

// BenchmarkLaunchArgs launches vadd_f32 on three buffers, back to back.
func BenchmarkLaunchArgs(b *testing.B) {
	ctx := cudatest.Context(b)
	s := cudatest.Stream(b, ctx)
	f := must(loadKernels(b, ctx).Function("vadd_f32"))(b)
	x := must(cuda.Zeroed[float32](ctx, 256))(b)
	defer x.Free()
	cfg := cuda.LaunchConfigFor(256, s)
	i := 0
	for b.Loop() {
		if err := f.Launch(cfg, x, x, x, uint32(256)); err != nil {
			b.Fatal(err)
		}
		if i++; i%1024 == 0 {
			s.Synchronize()
		}
	}
	s.Synchronize()
}

// BenchmarkCopyToHostSmall copies 64 bytes to the host synchronously.
func BenchmarkCopyToHostSmall(b *testing.B) {
	ctx := cudatest.Context(b)
	x := must(cuda.Zeroed[float32](ctx, 16))(b)
	defer x.Free()
	out := make([]float32, 16)
	for b.Loop() {
		if err := x.CopyToHost(out); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLaunchThenCopy launches vadd_f32, then copies 64 bytes of its
// output to the host.
func BenchmarkLaunchThenCopy(b *testing.B) {
	ctx := cudatest.Context(b)
	s := cudatest.Stream(b, ctx)
	f := must(loadKernels(b, ctx).Function("vadd_f32"))(b)
	x := must(cuda.Zeroed[float32](ctx, 16))(b)
	defer x.Free()
	out := make([]float32, 16)
	for _, explicit := range []bool{false, true} {
		name := "implicit"
		if explicit {
			name = "synchronize"
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if err := f.Launch(cuda.LaunchConfigFor(16, s), x, x, x, uint32(16)); err != nil {
					b.Fatal(err)
				}
				if explicit {
					if err := s.Synchronize(); err != nil {
						b.Fatal(err)
					}
				}
				if err := x.CopyToHost(out); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
