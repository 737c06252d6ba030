package cuda_test

import (
	"fmt"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
)

// The kernel benchmarks; bench/cref/kernelbench.c makes the same calls on
// the same kernels (testdata/kernels.ptx) from C.

func BenchmarkLaunchSync(b *testing.B) {
	ctx := cudatest.Context(b)
	s := cudatest.Stream(b, ctx)
	f := must(loadKernels(b, ctx).Function("empty"))(b)
	cfg := cuda.LaunchConfig{Grid: cuda.Dim3{X: 1}, Block: cuda.Dim3{X: 1}, Stream: s}
	for b.Loop() {
		if err := f.Launch(cfg); err != nil {
			b.Fatal(err)
		}
		if err := s.Synchronize(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLaunchAsync measures back-to-back launches: the time per launch
// while the device keeps up.
func BenchmarkLaunchAsync(b *testing.B) {
	ctx := cudatest.Context(b)
	s := cudatest.Stream(b, ctx)
	f := must(loadKernels(b, ctx).Function("empty"))(b)
	cfg := cuda.LaunchConfig{Grid: cuda.Dim3{X: 1}, Block: cuda.Dim3{X: 1}, Stream: s}
	i := 0
	for b.Loop() {
		if err := f.Launch(cfg); err != nil {
			b.Fatal(err)
		}
		if i++; i%1024 == 0 {
			s.Synchronize()
		}
	}
	s.Synchronize()
}

// BenchmarkSaxpy runs y = a·x + y on 16 Mi floats; bytes are those read
// and written (12 per element).
func BenchmarkSaxpy(b *testing.B) {
	const n = 16 << 20
	ctx := cudatest.Context(b)
	s := cudatest.Stream(b, ctx)
	f := must(loadKernels(b, ctx).Function("saxpy"))(b)
	x, y := must(cuda.FromHost(ctx, random[float32](n)))(b), must(cuda.Zeroed[float32](ctx, n))(b)
	defer x.Free()
	defer y.Free()
	cfg := cuda.LaunchConfig{Grid: cuda.Dim3{X: n / 256}, Block: cuda.Dim3{X: 256}, Stream: s}
	b.SetBytes(12 * n)
	for b.Loop() {
		if err := f.Launch(cfg, float32(0.5), x, y, uint32(n)); err != nil {
			b.Fatal(err)
		}
		if err := s.Synchronize(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCopyDeviceToDevice copies 256 MiB on the device; bytes are those
// read and written: the device memory's ceiling to compare SAXPY with.
func BenchmarkCopyDeviceToDevice(b *testing.B) {
	const n = 256 << 20
	ctx := cudatest.Context(b)
	s := cudatest.Stream(b, ctx)
	src, dst := must(cuda.Zeroed[byte](ctx, n))(b), must(cuda.Alloc[byte](ctx, n))(b)
	defer src.Free()
	defer dst.Free()
	b.SetBytes(2 * n)
	for b.Loop() {
		if err := dst.CopyFromDeviceAsync(src, s); err != nil {
			b.Fatal(err)
		}
		if err := s.Synchronize(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStreamQuery is a trivial bound call: asking an idle stream
// whether it is done. Its cost is gocuda's binding and crossing, beside the
// driver's own.
func BenchmarkStreamQuery(b *testing.B) {
	ctx := cudatest.Context(b)
	s := cudatest.Stream(b, ctx)
	for b.Loop() {
		if _, err := s.Query(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStreamQueryRaw is BenchmarkStreamQuery's driver call alone, on a
// thread where the context is current: the crossing into C and the
// driver's own time. "bound" adds the binding check the cgo shim makes in
// the same crossing. Query's time less this is gocuda's locks and checks.
func BenchmarkStreamQueryRaw(b *testing.B) {
	ctx := cudatest.Context(b)
	s := cudatest.Stream(b, ctx)
	for _, bound := range []bool{false, true} {
		b.Run(map[bool]string{false: "unbound", true: "bound"}[bound], func(b *testing.B) {
			err := ctx.Do(func() error {
				for b.Loop() {
					if r := cuda.QueryRaw(s, bound); r != 0 {
						return fmt.Errorf("cuStreamQuery = %d", r)
					}
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		})
	}
}

// BenchmarkDependentChain times a chain of 100 short kernels, each reading
// what the one before wrote (chain_step over 32 Ki words, 128 blocks), then
// a synchronize: queued one by one on a stream, or as a captured graph;
// each launch plain, or a programmatic dependent launch, which lets a
// kernel start while the one before finishes.
func BenchmarkDependentChain(b *testing.B) {
	ctx := cudatest.Context(b)
	s := cudatest.Stream(b, ctx)
	step := must(loadLaunchKernels(b, ctx).Function("chain_step"))(b)
	x := must(cuda.Zeroed[uint32](ctx, 32<<10))(b)
	defer x.Free()
	const k = 100
	for _, pdl := range []bool{false, true} {
		name := map[bool]string{false: "serial", true: "programmatic"}[pdl]
		b.Run(name+"/stream", func(b *testing.B) {
			for b.Loop() {
				if err := chainLaunches(step, s, x, k, pdl); err != nil {
					b.Fatal(err)
				}
				if err := s.Synchronize(); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/graph", func(b *testing.B) {
			g := must(s.Capture(cuda.CaptureGlobal, func() error { return chainLaunches(step, s, x, k, pdl) }))(b)
			defer g.Close()
			e := must(g.Instantiate())(b)
			defer e.Close()
			replay(b, s, e, 1, false)
		})
	}
}
