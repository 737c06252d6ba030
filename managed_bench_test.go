package cuda_test

import (
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
)

// BenchmarkManagedPrefetch moves 1 GiB of managed memory to the device
// and back (the bytes count each way), beside the pinned copies of the
// same size (BenchmarkPinnedRoundTrip): the goal is prefetching at
// 90% of their GB/s or more. The host touches every page before each
// round, so that the pages are the host's when the device's move starts.
func BenchmarkManagedPrefetch(b *testing.B) {
	ctx := cudatest.Context(b)
	s := cudatest.Stream(b, ctx)
	const n = 1 << 30
	m := must(cuda.AllocManaged[byte](ctx, n, cuda.AttachGlobal))(b)
	defer m.Free()
	data := m.Data()
	b.SetBytes(2 * n)
	for b.Loop() {
		b.StopTimer()
		for i := 0; i < n; i += 4096 {
			data[i]++
		}
		b.StartTimer()
		if err := m.Prefetch(cuda.OnDevice(ctx.Device()), s); err != nil {
			b.Fatal(err)
		}
		if err := m.Prefetch(cuda.OnHost(), s); err != nil {
			b.Fatal(err)
		}
		if err := s.Synchronize(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPinnedRoundTrip copies 1 GiB of pinned memory to the device and
// back on one stream: BenchmarkManagedPrefetch's limit.
func BenchmarkPinnedRoundTrip(b *testing.B) {
	ctx := cudatest.Context(b)
	s := cudatest.Stream(b, ctx)
	const n = 1 << 30
	h := must(cuda.AllocPinned[byte](ctx, n))(b)
	defer h.Free()
	d := must(cuda.Alloc[byte](ctx, n))(b)
	defer d.Free()
	b.SetBytes(2 * n)
	for b.Loop() {
		if err := d.CopyFromHostAsync(h.Data(), s); err != nil {
			b.Fatal(err)
		}
		if err := d.CopyToHostAsync(h.Data(), s); err != nil {
			b.Fatal(err)
		}
		if err := s.Synchronize(); err != nil {
			b.Fatal(err)
		}
	}
}
