package compute_test

import (
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/compute"
)

// The benchmarks of issue's table, each beside the device-to-device copy of
// the same bytes (bench/pyref/cupy_compute.py times CuPy's and PyTorch's in the
// same way). Bytes are those read plus written (for Sum, read).

func benchEnv(b *testing.B) env {
	b.Helper()
	requireNVRTC(b)
	return newEnv(b)
}

func loop(b *testing.B, s *cuda.Stream, bytes int64, op func() error) {
	b.Helper()
	if err := op(); err != nil { // compiled and warm
		b.Fatal(err)
	}
	if err := s.Synchronize(); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(bytes)
	b.ResetTimer()
	for range b.N {
		if err := op(); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.Synchronize(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkAdd adds two buffers of 256 MiB of float32 into a third.
func BenchmarkAdd(b *testing.B) {
	e := benchEnv(b)
	n := 64 << 20
	x, y, z := zeros[float32](b, e, n), zeros[float32](b, e, n), zeros[float32](b, e, n)
	loop(b, e.s, int64(12*n), func() error { return compute.Add(z, x, y, e.s) })
}

// BenchmarkCastBFloat16 casts 256 MiB of float32 to bfloat16.
func BenchmarkCastBFloat16(b *testing.B) {
	e := benchEnv(b)
	n := 64 << 20
	x, y := zeros[float32](b, e, n), zeros[cuda.BFloat16](b, e, n)
	loop(b, e.s, int64(6*n), func() error { return compute.Cast(y, x, e.s) })
}

// BenchmarkCastFloat16 casts 256 MiB of float32 to float16 (CuPy has
// float16 and not bfloat16).
func BenchmarkCastFloat16(b *testing.B) {
	e := benchEnv(b)
	n := 64 << 20
	x, y := zeros[float32](b, e, n), zeros[cuda.Float16](b, e, n)
	loop(b, e.s, int64(6*n), func() error { return compute.Cast(y, x, e.s) })
}

// BenchmarkSum sums 1 Gi float32 (4 GiB).
func BenchmarkSum(b *testing.B) {
	e := benchEnv(b)
	n := 1 << 30
	x, y := zeros[float32](b, e, n), zeros[float32](b, e, 1)
	loop(b, e.s, int64(4*n), func() error { return compute.Sum(y, x, e.s) })
}

// BenchmarkSoftmax takes the softmax of 8192 rows of 8192 float32.
func BenchmarkSoftmax(b *testing.B) {
	e := benchEnv(b)
	sh := compute.Shape{Rows: 8192, Cols: 8192}
	x, y := zeros[float32](b, e, sh.Rows*sh.Cols), zeros[float32](b, e, sh.Rows*sh.Cols)
	loop(b, e.s, int64(8*sh.Rows*sh.Cols), func() error { return compute.Softmax(y, x, sh, e.s) })
}

// BenchmarkCopy copies 256 MiB and 4 GiB on the device: the limit.
func BenchmarkCopy(b *testing.B) {
	for _, mib := range []int{256, 4096} {
		b.Run(map[int]string{256: "256MiB", 4096: "4GiB"}[mib], func(b *testing.B) {
			e := benchEnv(b)
			n := mib << 20
			x, y := zeros[byte](b, e, n), zeros[byte](b, e, n)
			loop(b, e.s, int64(2*n), func() error { return y.CopyFromDeviceAsync(x, e.s) })
		})
	}
}

// BenchmarkLaunchCached is a cached operation's call on 1 Ki elements
// against the launch of its kernel alone, through Function.Launch.
func BenchmarkLaunchCached(b *testing.B) {
	e := benchEnv(b)
	x := zeros[float32](b, e, 1024)
	b.Run("compute.Add", func(b *testing.B) {
		loop(b, e.s, 0, func() error { return compute.Add(x, x, x, e.s) })
	})
	b.Run("Function.Launch", func(b *testing.B) {
		raw := must(compute.RawAdd(e.s, x))(b)
		loop(b, e.s, 0, raw)
	})
}

func zeros[T cuda.Number](b *testing.B, e env, n int) *cuda.DeviceBuffer[T] {
	b.Helper()
	buf := must(cuda.Zeroed[T](e.ctx, n))(b)
	b.Cleanup(func() { buf.Free() })
	return buf
}
