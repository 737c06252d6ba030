package cuda_test

import (
	"errors"
	"fmt"
	"log"
	"runtime"
	"sync"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
)

func stats(t *testing.T, ctx *cuda.Context) cuda.MemoryStats {
	t.Helper()
	return must(ctx.MemoryStats())(t)
}

// wantCount fails t unless kind k of ctx's stats is want.
func wantCount(t *testing.T, ctx *cuda.Context, where string, k cuda.MemoryKind, want cuda.MemoryCount) {
	t.Helper()
	if got := stats(t, ctx).Kind(k); got != want {
		t.Errorf("%s: %v memory %+v, want %+v", where, k, got, want)
	}
}

// TestMemoryStats counts each kind of buffer as it is allocated and freed:
// bytes and buffers now, the peak, allocations ever; views, slices, empty
// buffers and FromRaw count nothing; memory a stream keeps for reuse
// counts when it is in a buffer again; a buffer nobody freed counts until
// it is collected; ResetPeakMemory brings the peaks down to now.
func TestMemoryStats(t *testing.T) {
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	if got := stats(t, ctx); got != (cuda.MemoryStats{}) {
		t.Fatalf("a new context's stats: %+v", got)
	}
	a := must(cuda.Alloc[float32](ctx, 1000))(t)
	b := must(cuda.FromHost(ctx, make([]int64, 10)))(t)
	wantCount(t, ctx, "Alloc and FromHost", cuda.MemoryDevice, cuda.MemoryCount{Bytes: 4080, PeakBytes: 4080, Buffers: 2, Allocations: 2})
	must(a.Slice(10, 20))(t)
	must(cuda.ViewAs[byte](a))(t)
	must(cuda.FromRaw[float32](ctx, a.Ptr(), 10))(t)
	must(cuda.Alloc[float32](ctx, 0))(t)
	wantCount(t, ctx, "views, slices, FromRaw, empty", cuda.MemoryDevice, cuda.MemoryCount{Bytes: 4080, PeakBytes: 4080, Buffers: 2, Allocations: 2})
	if err := a.Free(); err != nil {
		t.Fatal(err)
	}
	wantCount(t, ctx, "Free", cuda.MemoryDevice, cuda.MemoryCount{Bytes: 80, PeakBytes: 4080, Buffers: 1, Allocations: 2})
	if err := ctx.ResetPeakMemory(); err != nil {
		t.Fatal(err)
	}
	wantCount(t, ctx, "ResetPeakMemory", cuda.MemoryDevice, cuda.MemoryCount{Bytes: 80, PeakBytes: 80, Buffers: 1, Allocations: 2})
	b.Free()

	// Stream-ordered: a freed buffer the stream keeps counts no more, and
	// again when an allocation takes it.
	o := must(cuda.AllocAsync[float64](s, 100))(t)
	wantCount(t, ctx, "AllocAsync", cuda.MemoryStreamOrdered, cuda.MemoryCount{Bytes: 800, PeakBytes: 800, Buffers: 1, Allocations: 1})
	if err := o.Free(); err != nil {
		t.Fatal(err)
	}
	o2 := must(cuda.AllocAsync[float64](s, 100))(t)
	o3 := must(cuda.AllocAsync[byte](s, 1000))(t)
	wantCount(t, ctx, "AllocAsync again", cuda.MemoryStreamOrdered, cuda.MemoryCount{Bytes: 1800, PeakBytes: 1800, Buffers: 2, Allocations: 3})
	o2.Free()
	o3.FreeOn(s)
	wantCount(t, ctx, "Free and FreeOn", cuda.MemoryStreamOrdered, cuda.MemoryCount{Bytes: 0, PeakBytes: 1800, Buffers: 0, Allocations: 3})

	pool := must(ctx.NewMemPool())(t)
	p := must(cuda.AllocFromPool[int32](pool, s, 256))(t)
	wantCount(t, ctx, "AllocFromPool", cuda.MemoryPool, cuda.MemoryCount{Bytes: 1024, PeakBytes: 1024, Buffers: 1, Allocations: 1})
	p.Free()
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	if err := pool.Close(); err != nil {
		t.Fatal(err)
	}
	wantCount(t, ctx, "pool", cuda.MemoryPool, cuda.MemoryCount{PeakBytes: 1024, Allocations: 1})

	h := must(cuda.AllocPinned[uint16](ctx, 4096))(t)
	wantCount(t, ctx, "AllocPinned", cuda.MemoryPinned, cuda.MemoryCount{Bytes: 8192, PeakBytes: 8192, Buffers: 1, Allocations: 1})
	h.Free()
	h.Free() // twice: counted once
	wantCount(t, ctx, "PinnedBuffer.Free", cuda.MemoryPinned, cuda.MemoryCount{PeakBytes: 8192, Allocations: 1})
	sb := must(cuda.NewStagingBuffer(ctx, 1<<20))(t)
	if got := stats(t, ctx).Pinned; got.Bytes < 1<<20 || got.Buffers < 1 {
		t.Errorf("a staging buffer of 1 MiB: pinned %+v", got)
	}
	sb.Close()
	if got := stats(t, ctx).Pinned; got.Bytes != 0 || got.Buffers != 0 {
		t.Errorf("the staging buffer closed: pinned %+v", got)
	}

	// A buffer nobody frees counts until its cleanup frees it.
	func() { must(cuda.Alloc[byte](ctx, 12345))(t) }()
	if got := stats(t, ctx).Device; got.Bytes != 12345 {
		t.Errorf("a forgotten buffer: device %+v", got)
	}
	if !cudatest.GC(func() bool { return must(ctx.MemoryStats())(t).Device.Bytes == 0 }) {
		t.Errorf("a collected buffer still counts: %+v", stats(t, ctx).Device)
	}
}

// TestMemoryStatsConcurrent allocates and frees from many goroutines at
// once: the counts end where they began, the peak lies between one
// goroutine's buffer and all of theirs.
func TestMemoryStatsConcurrent(t *testing.T) {
	ctx := cudatest.Context(t)
	const goroutines, rounds, size = 8, 50, 4096
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for range rounds {
				b, err := cuda.Alloc[byte](ctx, size)
				if err != nil {
					t.Error(err)
					return
				}
				runtime.Gosched()
				b.Free()
			}
		})
	}
	wg.Wait()
	got := stats(t, ctx).Device
	if got.Bytes != 0 || got.Buffers != 0 || got.Allocations != goroutines*rounds || got.PeakBytes < size || got.PeakBytes > goroutines*size {
		t.Errorf("after %d goroutines each allocated and freed %d buffers of %d bytes: %+v", goroutines, rounds, size, got)
	}
}

func TestMemoryStatsErrors(t *testing.T) {
	var nilCtx *cuda.Context
	if _, err := nilCtx.MemoryStats(); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("nil context's MemoryStats: %v", err)
	}
	if err := nilCtx.ResetPeakMemory(); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("nil context's ResetPeakMemory: %v", err)
	}
	ctx := must(cuda.NewContext(cudatest.Device(t)))(t)
	ctx.Close()
	if _, err := ctx.MemoryStats(); !errors.Is(err, cuda.ErrClosed) {
		t.Errorf("closed context's MemoryStats: %v", err)
	}
	if err := ctx.ResetPeakMemory(); !errors.Is(err, cuda.ErrClosed) {
		t.Errorf("closed context's ResetPeakMemory: %v", err)
	}
	if s := cuda.MemoryKind(9).String(); s != "MemoryKind(9)" {
		t.Errorf("MemoryKind(9).String() = %q", s)
	}
	if c := (cuda.MemoryStats{}).Kind(9); c != (cuda.MemoryCount{}) {
		t.Errorf("an unknown kind's count: %+v", c)
	}
}

// The memory a piece of work took at most, by kind.
func ExampleContext_MemoryStats() {
	ctx, s, err := cuda.Open(0)
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()
	if err := ctx.ResetPeakMemory(); err != nil {
		log.Fatal(err)
	}
	for range 3 {
		scratch, err := cuda.AllocAsync[float32](s, 1<<20)
		if err != nil {
			log.Fatal(err)
		}
		// ... kernels using scratch, queued on s ...
		scratch.Free()
	}
	st, err := ctx.MemoryStats()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("stream-ordered: %d bytes at most, %d in use, %d allocations\n",
		st.StreamOrdered.PeakBytes, st.StreamOrdered.Bytes, st.StreamOrdered.Allocations)
	// Output:
	// stream-ordered: 4194304 bytes at most, 0 in use, 3 allocations
}
