package cublas_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/cublas"
	"github.com/gocuda/cuda/internal/cudatest"
)

// BenchmarkGemm times square products of random matrices, reporting
// TFLOP/s (2n³ per product) from the wall time of b.N products queued back
// to back and synchronized, as bench/pyref/torch_matmul.py times torch.matmul.
func BenchmarkGemm(b *testing.B) {
	_, _, h := handle(b)
	sizes := []int{1024, 4096, 8192}
	if cudatest.IsFake() {
		sizes = []int{64} // the fake computes on the CPU
	}
	b.Run("float32", func(b *testing.B) { benchGemm[float32](b, h, sizes, cublas.DefaultMath) })
	b.Run("TF32", func(b *testing.B) { benchGemm[float32](b, h, sizes, cublas.TF32Math) })
	b.Run("BFloat16", func(b *testing.B) { benchGemm[cuda.BFloat16](b, h, sizes, cublas.DefaultMath) })
	b.Run("Float16", func(b *testing.B) { benchGemm[cuda.Float16](b, h, sizes, cublas.DefaultMath) })
}

func benchGemm[T element](b *testing.B, h *cublas.Handle, sizes []int, math cublas.MathMode) {
	if err := h.SetMathMode(math); err != nil {
		b.Fatal(err)
	}
	defer h.SetMathMode(cublas.DefaultMath)
	for _, n := range sizes {
		// Made once: b.Run calls its function again for each b.N.
		a, m, c := benchMatrix[T](b, h, n, n), benchMatrix[T](b, h, n, n), benchMatrix[T](b, h, n, n)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			timeProducts(b, h, 2*float64(n)*float64(n)*float64(n), func() error { return cublas.Gemm(h, 1, a, m, 0, c) })
		})
	}
}

// BenchmarkGemmBatched times 512 products of 64×64 matrices in one call.
func BenchmarkGemmBatched(b *testing.B) {
	_, _, h := handle(b)
	if cudatest.IsFake() {
		b.Skip("the fake computes on the CPU")
	}
	benchBatched[float32](b, h, "float32/512x64")
	benchBatched[cuda.BFloat16](b, h, "BFloat16/512x64")
}

func benchBatched[T element](b *testing.B, h *cublas.Handle, name string) {
	const count, n = 512, 64
	a, m, c := benchMatrix[T](b, h, count*n, n), benchMatrix[T](b, h, count*n, n), benchMatrix[T](b, h, count*n, n)
	for _, x := range []*cublas.Matrix[T]{&a, &m, &c} {
		x.Rows = n // count matrices of n×n, packed
	}
	b.Run(name, func(b *testing.B) {
		timeProducts(b, h, count*2*n*n*n, func() error { return cublas.GemmStridedBatched(h, count, 1, a, m, 0, c) })
	})
}

// BenchmarkGemmCall times one call of a small product, queued without
// waiting: gocuda's cost per call (checks, holds, the crossing) on top of
// cuBLAS's own, beside bench/cref/gemmcall.c making the same call from C.
// Every 100 calls the stream is synchronized, off the clock, so that the
// queue never fills and the time is the call's, not the GPU's.
func BenchmarkGemmCall(b *testing.B) {
	_, s, h := handle(b)
	if cudatest.IsFake() {
		// The fake computes on the CPU while the timer is stopped, and
		// b.Loop runs for minutes; the figure is for comparing with C's
		// on the GPU.
		b.Skip("the fake computes on the CPU")
	}
	// C of its own: Gemm refuses an output that aliases an input.
	a, c := benchMatrix[float32](b, h, 64, 64), benchMatrix[float32](b, h, 64, 64)
	calls := 0
	for b.Loop() {
		if err := cublas.Gemm(h, 1, a, a, 0, c); err != nil {
			b.Fatal(err)
		}
		if calls++; calls%100 == 0 {
			b.StopTimer()
			if err := s.Synchronize(); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
	}
	if err := s.Synchronize(); err != nil {
		b.Fatal(err)
	}
}

// benchMatrix returns a rows×cols matrix of random numbers (zeros would
// flatter the tensor cores), freed when the benchmark ends.
func benchMatrix[T element](b *testing.B, h *cublas.Handle, rows, cols int) cublas.Matrix[T] {
	b.Helper()
	r := rand.New(rand.NewPCG(uint64(rows), uint64(cols)))
	data := make([]T, rows*cols)
	for i := range data {
		data[i] = fromFloat[T](r.NormFloat64())
	}
	return cublas.NewMatrix(cudatest.Upload(b, h.Stream().Context(), data), rows, cols)
}

// timeProducts runs product b.N times, synchronizing at the end, and
// reports TFLOP/s of flops per product.
func timeProducts(b *testing.B, h *cublas.Handle, flops float64, product func() error) {
	b.Helper()
	// Warm: the first product loads cuBLAS's kernels.
	if err := product(); err != nil {
		b.Fatal(err)
	}
	if err := h.Stream().Synchronize(); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		if err := product(); err != nil {
			b.Fatal(err)
		}
	}
	if err := h.Stream().Synchronize(); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(flops*float64(b.N)/time.Since(start).Seconds()/1e12, "TFLOP/s")
}
