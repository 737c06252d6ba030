package cuda_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
	"github.com/gocuda/cuda/internal/fakecuda"
	"github.com/gocuda/cuda/internal/track"
)

// TestAllocAsyncLoop: buffers allocated and freed in a loop on one stream,
// each filled and read back with no synchronize in between, each hold
// their own data, though they reuse one another's memory; on the fake,
// the loop makes two driver allocations and one free before the
// synchronize, which gives the memory back.
func TestAllocAsyncLoop(t *testing.T) {
	f := cudatest.Fake(t) // nil on a GPU: the data checks run there too
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	const n, rounds = 1 << 16, 50
	if f != nil {
		f.ResetCounts()
	}
	got := make([][]uint32, rounds)
	ptrs := map[cuda.DevicePtr]bool{}
	for i := range rounds {
		b := must(cuda.AllocAsync[uint32](s, n))(t)
		ptrs[b.Ptr()] = true
		got[i] = make([]uint32, n)
		if err := errors.Join(b.Memset32Async(uint32(i), s), b.CopyToHostAsync(got[i], s), b.Free()); err != nil {
			t.Fatal(err)
		}
	}
	if f != nil {
		c := f.Counts()
		if c["cuMemAllocAsync"] != 2 || c["cuMemFreeAsync"] != 1 {
			t.Errorf("%d rounds: cuMemAllocAsync %d, cuMemFreeAsync %d times; want 2 and 1 (the rest reused)", rounds, c["cuMemAllocAsync"], c["cuMemFreeAsync"])
		}
		if len(ptrs) > 2 {
			t.Errorf("%d rounds used %d addresses, want at most 2", rounds, len(ptrs))
		}
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	for i := range rounds {
		if got[i][0] != uint32(i) || got[i][n-1] != uint32(i) {
			t.Fatalf("round %d read %d..%d, want %d: a reused buffer's data mixed with another's", i, got[i][0], got[i][n-1], i)
		}
	}
	if f != nil {
		if c := f.Counts()["cuMemFreeAsync"]; c != 2 {
			t.Errorf("cuMemFreeAsync %d times after the synchronize, want 2: the kept block freed", c)
		}
	}
}

// cachedBlock frees two buffers of one size on s, so that the stream keeps
// the second's memory (the first goes back to the driver), and returns the
// fake's live device allocations before them.
func cachedBlock(t *testing.T, f *fakecuda.Control, s *cuda.Stream) int {
	t.Helper()
	live := f.Live("device")
	f.ResetCounts()
	for range 2 {
		b := must(cuda.AllocAsync[byte](s, 4096))(t)
		if err := errors.Join(b.Memset8Async(1, s), b.Free()); err != nil {
			t.Fatal(err)
		}
	}
	if c := f.Counts(); c["cuMemAllocAsync"] != 2 || c["cuMemFreeAsync"] != 1 {
		t.Fatalf("two buffers of one size freed: cuMemAllocAsync %d, cuMemFreeAsync %d times; want 2 and 1 (the second kept)", c["cuMemAllocAsync"], c["cuMemFreeAsync"])
	}
	return live
}

// TestBlockCacheGivesBack: memory a stream keeps for reuse goes back to
// the pool at every point where the driver's pool would give unused memory
// back, and wherever something else needs it.
func TestBlockCacheGivesBack(t *testing.T) {
	f := cudatest.Fake(t)
	if f == nil {
		return
	}
	for _, tt := range []struct {
		name string
		give func(t *testing.T, ctx *cuda.Context, s *cuda.Stream) error
	}{
		{"Stream.Synchronize", func(t *testing.T, ctx *cuda.Context, s *cuda.Stream) error { return s.Synchronize() }},
		{"Context.Synchronize", func(t *testing.T, ctx *cuda.Context, s *cuda.Stream) error { return ctx.Synchronize() }},
		{"Stream.Close", func(t *testing.T, ctx *cuda.Context, s *cuda.Stream) error { return s.Close() }},
		{"a synchronous call on a buffer of the stream", func(t *testing.T, ctx *cuda.Context, s *cuda.Stream) error {
			b := must(cuda.AllocAsync[byte](s, 64))(t)
			return errors.Join(b.Memset8Async(2, s), b.CopyToHost(make([]byte, 64)), b.Free(), ctx.Synchronize())
		}},
		{"Capture", func(t *testing.T, ctx *cuda.Context, s *cuda.Stream) error {
			g, err := s.Capture(cuda.CaptureThreadLocal, func() error { return nil })
			if err != nil {
				return err
			}
			return errors.Join(g.Close(), s.Synchronize())
		}},
		{"out of memory on another stream", func(t *testing.T, ctx *cuda.Context, s *cuda.Stream) error {
			s2 := cudatest.Stream(t, ctx)
			f.Fail("cuMemAllocAsync", 1, 2)
			b, err := cuda.AllocAsync[byte](s2, 1<<20)
			if err != nil {
				return fmt.Errorf("AllocAsync with memory kept for reuse: %w", err)
			}
			return errors.Join(b.Free(), s2.Synchronize(), s.Synchronize())
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := cudatest.Context(t)
			s := cudatest.Stream(t, ctx)
			live := cachedBlock(t, f, s)
			if err := tt.give(t, ctx, s); err != nil {
				t.Fatal(err)
			}
			if got := f.Live("device"); got != live {
				t.Errorf("%d device allocations live after %s, want %d", got, tt.name, live)
			}
		})
	}
}

// TestBlockCacheContextClose: closing a context gives the memory its
// streams keep back to the pool, though another Context still retains the
// device's primary context; and a stream nobody closed frees what it kept.
func TestBlockCacheContextClose(t *testing.T) {
	f := cudatest.Fake(t)
	if f == nil {
		return
	}
	other := cudatest.Context(t) // retains the primary context
	live := f.Live("device")
	ctx := must(cuda.NewContext(other.Device()))(t)
	s := must(ctx.NewStream())(t)
	cachedBlock(t, f, s)
	// A free that fails leaves the context open, and Close can be retried.
	f.Fail("cuMemFreeAsync", 1, 999)
	if err := ctx.Close(); !errors.Is(err, cuda.Result(999)) {
		t.Errorf("Context.Close with the kept block's free failing: %v", err)
	}
	if _, _, err := ctx.MemInfo(); err != nil {
		t.Errorf("the context after a failed Close: %v", err)
	}
	if err := ctx.Close(); err != nil {
		t.Fatal(err)
	}
	if err := other.Synchronize(); err != nil {
		t.Fatal(err)
	}
	if got := f.Live("device"); got != live {
		t.Errorf("%d device allocations live after Context.Close, want %d", got, live)
	}

	before := track.Take().Forgotten[track.Stream]
	func() {
		s := must(other.NewStream())(t)
		cachedBlock(t, f, s)
	}()
	if !cudatest.GC(func() bool { return f.Live("device") == live }) {
		t.Errorf("%d device allocations live after a forgotten stream's cleanup, want %d", f.Live("device"), live)
	}
	if track.Take().Forgotten[track.Stream] <= before {
		t.Error("the stream was not counted as forgotten")
	}
}

// TestBlockCacheStreams: memory freed on a stream is reused by that
// stream's allocations only (FreeOn's stream, when given one), never by
// another's, and not inside a capture, whose allocations are the graph's.
func TestBlockCacheStreams(t *testing.T) {
	f := cudatest.Fake(t)
	if f == nil {
		return
	}
	ctx := cudatest.Context(t)
	s, s2 := cudatest.Stream(t, ctx), cudatest.Stream(t, ctx)
	ev := must(ctx.NewEvent())(t)
	defer ev.Close()
	cachedBlock(t, f, s)
	allocs := func() int { return f.Counts()["cuMemAllocAsync"] }
	f.ResetCounts()
	b := must(cuda.AllocAsync[byte](s2, 4096))(t)
	if allocs() != 1 {
		t.Errorf("another stream's allocation took the memory s keeps")
	}
	// Freed on s2 twice: s2 keeps the second.
	if err := errors.Join(ev.Record(s2), s.WaitEvent(ev), b.FreeOn(s)); err != nil {
		t.Fatal(err)
	}
	c := must(cuda.AllocAsync[byte](s2, 4096))(t)
	d := must(cuda.AllocAsync[byte](s2, 4096))(t)
	if err := errors.Join(c.FreeOn(s2), d.FreeOn(s2)); err != nil {
		t.Fatal(err)
	}
	f.ResetCounts()
	e := must(cuda.AllocAsync[byte](s2, 4096))(t)
	if allocs() != 0 {
		t.Errorf("the allocation on the stream a buffer was freed on (FreeOn) did not reuse it")
	}
	if err := e.Free(); err != nil {
		t.Fatal(err)
	}
	f.ResetCounts()
	g, err := s.Capture(cuda.CaptureThreadLocal, func() error {
		b, err := cuda.AllocAsync[byte](s, 4096)
		if err != nil {
			return err
		}
		return errors.Join(b.Memset8Async(4, s), b.Free())
	})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if c := f.Counts(); c["cuMemAllocAsync"] != 1 || c["cuMemFreeAsync"] < 2 {
		t.Errorf("a capture: cuMemAllocAsync %d, cuMemFreeAsync %d times; want 1 (the graph's) and 2 (the kept block, the graph's)", c["cuMemAllocAsync"], c["cuMemFreeAsync"])
	}
	if err := ctx.Synchronize(); err != nil {
		t.Fatal(err)
	}
}

// TestBlockCachePoolClose: a pool's memory kept for reuse counts as the pool's
// until it goes back, and the pool closes once its buffers are freed,
// without a synchronize first.
func TestBlockCachePoolClose(t *testing.T) {
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	p := must(ctx.NewMemPool())(t)
	for range 3 {
		b := must(cuda.AllocFromPool[uint64](p, s, 512))(t)
		c := must(cuda.AllocAsync[uint64](s, 512))(t) // the same size, the default pool
		if err := errors.Join(b.Memset32Async(1, s), c.Memset32Async(2, s), b.Free(), c.Free()); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Close(); err != nil {
		t.Fatalf("MemPool.Close with its freed buffers kept for reuse: %v", err)
	}
}

// TestBlockCachePools: the memory a stream keeps is reused only by
// allocations from the pool it came from.
func TestBlockCachePools(t *testing.T) {
	f := cudatest.Fake(t)
	if f == nil {
		return
	}
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	p := must(ctx.NewMemPool())(t)
	defer p.Close()
	for range 2 {
		b := must(cuda.AllocFromPool[byte](p, s, 4096))(t)
		if err := b.Free(); err != nil {
			t.Fatal(err)
		}
	}
	f.ResetCounts()
	b := must(cuda.AllocAsync[byte](s, 4096))(t)
	c := must(cuda.AllocFromPool[byte](p, s, 4096))(t)
	if n := f.Counts(); n["cuMemAllocAsync"] != 1 || n["cuMemAllocFromPoolAsync"] != 0 {
		t.Errorf("with a block of the pool kept: cuMemAllocAsync %d, cuMemAllocFromPoolAsync %d times; want 1 and 0", n["cuMemAllocAsync"], n["cuMemAllocFromPoolAsync"])
	}
	if err := errors.Join(b.Free(), c.Free(), s.Synchronize()); err != nil {
		t.Fatal(err)
	}
}

// TestBlockCacheFlushFails: a free the driver refuses when the stream gives
// its kept memory back fails the synchronize, and a later one frees it.
func TestBlockCacheFlushFails(t *testing.T) {
	f := cudatest.Fake(t)
	if f == nil {
		return
	}
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	live := cachedBlock(t, f, s)
	f.Fail("cuMemFreeAsync", 1, 999)
	if err := s.Synchronize(); !errors.Is(err, cuda.Result(999)) {
		t.Errorf("Synchronize with the kept block's free failing: %v", err)
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	if got := f.Live("device"); got != live {
		t.Errorf("%d device allocations live after the second synchronize, want %d", got, live)
	}
}

// TestBlockCacheConcurrent: goroutines allocating, filling, checking and
// freeing stream-ordered buffers on shared and own streams, while others
// synchronize the context, each see their own data.
func TestBlockCacheConcurrent(t *testing.T) {
	ctx := cudatest.Context(t)
	shared := cudatest.Stream(t, ctx)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := shared
			if g%2 == 1 {
				own, err := ctx.NewStream()
				if err != nil {
					errs <- err
					return
				}
				defer own.Close()
				s = own
			}
			var got [10][]uint32
			for i := range 40 {
				n := 256 << (i % 3)
				b, err := cuda.AllocAsync[uint32](s, n)
				if err != nil {
					errs <- err
					return
				}
				got[i%10] = make([]uint32, n)
				err = errors.Join(b.Memset32Async(uint32(g<<16|i), s), b.CopyToHostAsync(got[i%10], s), b.Free())
				if err == nil && i%10 == 9 {
					err = s.Synchronize()
					for j, v := range got {
						if want := uint32(g<<16 | (i - 9 + j)); err == nil && (v[0] != want || v[len(v)-1] != want) {
							err = fmt.Errorf("goroutine %d round %d read %#x, want %#x", g, i-9+j, v[0], want)
						}
					}
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range 20 {
			if err := ctx.Synchronize(); err != nil {
				errs <- err
				return
			}
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestBlockCacheAfterLegacy: memory kept for reuse after a synchronous
// memset, whose work may still be running on the legacy default stream
// (the fake's runs late), goes back to the pool only after that work.
func TestBlockCacheAfterLegacy(t *testing.T) {
	f := cudatest.Fake(t)
	if f == nil {
		return
	}
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	for range 2 {
		b := must(cuda.AllocAsync[byte](s, 1<<20))(t)
		// A stream seen idle by Query (which gives nothing back) lets the
		// memset run at once, on the legacy stream.
		for done := false; !done; {
			var err error
			if done, err = s.Query(); err != nil {
				t.Fatal(err)
			}
		}
		if err := errors.Join(b.Memset8(5), b.Free()); err != nil {
			t.Fatal(err)
		}
	}
	// The wait for the legacy stream is a cuStreamSynchronize of it
	// before the one of s: the free cannot be seen to overtake the
	// memset, whose worker would only write freed memory.
	f.ResetCounts()
	err := s.Synchronize()
	if n := f.Counts()["cuStreamSynchronize"]; n != 2 {
		t.Errorf("Stream.Synchronize with a block kept after a synchronous memset: %d stream synchronizes, want 2 (the legacy stream's first)", n)
	}
	if err := errors.Join(err, ctx.Synchronize()); err != nil {
		t.Fatalf("freeing the kept block after a synchronous memset: %v", err)
	}
}
