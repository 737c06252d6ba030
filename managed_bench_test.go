package cuda_test

import (
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
)

// BenchmarkManagedPrefetch moves 1 GiB of managed memory to the device
// and back (the bytes count each way), beside the pinned copies of the
// same size (BenchmarkPinnedRoundTrip), and each way alone; the host
// writes every page before each round, untimed, so that the pages are
// the host's when the move to the device starts. bench/cref/managed.c
// times the same calls from C.
func BenchmarkManagedPrefetch(b *testing.B) {
	ctx := cudatest.Context(b)
	s := cudatest.Stream(b, ctx)
	const n = 1 << 30
	m := must(cuda.AllocManaged[byte](ctx, n, cuda.AttachGlobal))(b)
	defer m.Free()
	data := m.Data()
	prefetch := func(b *testing.B, to cuda.Location) {
		if err := m.Prefetch(to, s); err != nil {
			b.Fatal(err)
		}
		if err := s.Synchronize(); err != nil {
			b.Fatal(err)
		}
	}
	dev, host := cuda.OnDevice(ctx.Device()), cuda.OnHost()
	for _, tt := range []struct {
		name      string
		untimed   []cuda.Location // after the host's writes
		timed     []cuda.Location
		bytesEach int64
	}{
		{"roundtrip", nil, []cuda.Location{dev, host}, 2 * n},
		{"to-device", nil, []cuda.Location{dev}, n},
		{"to-host", []cuda.Location{dev}, []cuda.Location{host}, n},
	} {
		b.Run(tt.name, func(b *testing.B) {
			b.SetBytes(tt.bytesEach)
			for b.Loop() {
				b.StopTimer()
				for i := 0; i < n; i += 4096 {
					data[i]++
				}
				for _, to := range tt.untimed {
					prefetch(b, to)
				}
				b.StartTimer()
				for _, to := range tt.timed {
					prefetch(b, to)
				}
			}
		})
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

// BenchmarkManagedFirstTouch times a kernel's first pass over 1 GiB of
// managed memory that the host wrote last: "fault" lets the kernel's
// accesses move the pages on demand, "prefetch" moves them on the stream
// first (the prefetch is inside the timing). The host writes every page
// again before each round, untimed.
func BenchmarkManagedFirstTouch(b *testing.B) {
	ctx := cudatest.Context(b)
	s := cudatest.Stream(b, ctx)
	saxpy := must(loadKernels(b, ctx).Function("saxpy"))(b) // y = a*x + y
	const n = 1 << 28                                       // float32s: 1 GiB
	m := must(cuda.AllocManaged[float32](ctx, n, cuda.AttachGlobal))(b)
	defer m.Free()
	data := m.Data()
	cfg := cuda.LaunchConfigFor(n, s)
	for _, prefetch := range []bool{false, true} {
		name := "fault"
		if prefetch {
			name = "prefetch"
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(4 * n)
			for b.Loop() {
				b.StopTimer()
				for i := 0; i < n; i += 1024 {
					data[i] = 1
				}
				b.StartTimer()
				if prefetch {
					if err := m.Prefetch(cuda.OnDevice(ctx.Device()), s); err != nil {
						b.Fatal(err)
					}
				}
				if err := saxpy.Launch(cfg, float32(1), m.Buffer(), m.Buffer(), uint32(n)); err != nil {
					b.Fatal(err)
				}
				if err := s.Synchronize(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
