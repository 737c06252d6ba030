package cuda_test

import (
	"fmt"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
)

// TestSyncThenAsyncOrdered checks the promise of CopyFromHost, Memset and
// CopyFromDevice: work gocuda queues afterwards in the context, on any
// stream, sees their result, whatever other goroutines do meanwhile. Each
// goroutine makes a synchronous call into its own buffer, then at once
// downloads the buffer on its own stream. On the fake, the synchronous
// calls finish later on the legacy stream's worker, as the real driver's
// may; a settle that one goroutine's mark could skip shows up as stale data.
func TestSyncThenAsyncOrdered(t *testing.T) {
	ctx := cudatest.Context(t)
	goroutines, rounds, n := 32, 200, 1<<18 // 1 MiB of uint32
	if cudatest.IsFake() {
		rounds, n = 40, 1<<12
	}
	ops := []struct {
		name string
		do   func(dst, scratch *cuda.DeviceBuffer[uint32], host []uint32, v uint32) error
	}{
		{"CopyFromHost", func(dst, _ *cuda.DeviceBuffer[uint32], host []uint32, v uint32) error {
			for i := range host {
				host[i] = v
			}
			return dst.CopyFromHost(host)
		}},
		{"Memset32", func(dst, _ *cuda.DeviceBuffer[uint32], _ []uint32, v uint32) error { return dst.Memset32(v) }},
		{"CopyFromDevice", func(dst, scratch *cuda.DeviceBuffer[uint32], _ []uint32, v uint32) error {
			if err := scratch.Memset32(v); err != nil {
				return err
			}
			return dst.CopyFromDevice(scratch)
		}},
	}
	stale := make([]int, goroutines)
	err := eachGoroutine(goroutines, func(g int) error {
		s, err := ctx.NewStream()
		if err != nil {
			return err
		}
		defer s.Close()
		dst, err := cuda.Zeroed[uint32](ctx, n)
		if err != nil {
			return err
		}
		defer dst.Free()
		scratch, err := cuda.Alloc[uint32](ctx, n)
		if err != nil {
			return err
		}
		defer scratch.Free()
		host, out := make([]uint32, n), make([]uint32, n)
		for r := range rounds {
			op := ops[(g+r)%len(ops)]
			v := uint32(g<<16 | r + 1)
			if err := op.do(dst, scratch, host, v); err != nil {
				return fmt.Errorf("%s: %w", op.name, err)
			}
			if err := dst.CopyToHostAsync(out, s); err != nil {
				return err
			}
			if err := s.Synchronize(); err != nil {
				return err
			}
			if out[0] != v || out[n-1] != v {
				stale[g]++
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, n := range stale {
		total += n
	}
	if total > 0 {
		t.Fatalf("%d of %d downloads returned data older than the synchronous call before them", total, goroutines*rounds)
	}
}

// TestUploadAfterSyncCopyOrdered: Upload of an ordinary slice, by each
// route, lands after a synchronous CopyFromHost into the same memory made
// just before it, whose last bytes may still be in flight on the legacy
// stream (on the fake they land later, on that stream's worker): the
// device ends up holding what Upload moved.
func TestUploadAfterSyncCopyOrdered(t *testing.T) {
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	defer holdCopyWorkers()() // pipelined below WarmBelowBytes too
	for _, n := range []int{4 << 10, 256 << 10, 1 << 20, 9<<20 + 4} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			var sb cuda.StagingBuffer
			defer sb.Close()
			b := must(cuda.Alloc[byte](ctx, n))(t)
			defer b.Free()
			old, src, got := make([]byte, n), random[byte](n), make([]byte, n)
			for i := range old {
				old[i] = ^src[i]
			}
			for r := range 8 {
				if err := b.CopyFromHost(old); err != nil {
					t.Fatal(err)
				}
				if err := cuda.Upload(&sb, b, src, s); err != nil {
					t.Fatal(err)
				}
				if err := b.CopyToHost(got); err != nil {
					t.Fatal(err)
				}
				if i := firstDiff(got, src); i >= 0 {
					t.Fatalf("round %d: byte %d is %#x, want %#x: the copy before Upload landed after it", r, i, got[i], src[i])
				}
			}
		})
	}
}

// firstDiff returns the first index where a and b differ, or -1.
func firstDiff(a, b []byte) int {
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}
