package cuda_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
)

// TestAllocAsync: a stream-ordered buffer holds what is copied into it, on
// its stream and synchronously, and its allocations, freed in a loop, come
// back: the device's free memory does not shrink.
func TestAllocAsync(t *testing.T) {
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	const n = 1 << 16
	src := random[uint32](n)
	b := must(cuda.AllocAsync[uint32](s, n))(t)
	if err := b.CopyFromHostAsync(src, s); err != nil {
		t.Fatal(err)
	}
	got := make([]uint32, n)
	if err := b.CopyToHostAsync(got, s); err != nil {
		t.Fatal(err)
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, src) {
		t.Fatal("stream-ordered buffer: data differs after a round trip on its stream")
	}
	// A synchronous copy right after the allocation, with work queued on
	// the stream: it waits for that work.
	c := must(cuda.AllocAsync[uint32](s, n))(t)
	if err := c.Memset32Async(7, s); err != nil {
		t.Fatal(err)
	}
	if err := c.CopyToHost(got); err != nil {
		t.Fatal(err)
	}
	if got[0] != 7 || got[n-1] != 7 {
		t.Errorf("CopyToHost after Memset32Async on the buffer's stream read %v, %v; want the memset's", got[0], got[n-1])
	}
	if err := errors.Join(b.Free(), c.Free(), s.Synchronize()); err != nil {
		t.Fatal(err)
	}
	free0, _, err := ctx.MemInfo()
	if err != nil {
		t.Fatal(err)
	}
	for range 200 {
		d := must(cuda.AllocAsync[byte](s, 1<<20))(t)
		if err := errors.Join(d.Memset8Async(1, s), d.Free()); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	free1, _, err := ctx.MemInfo()
	if err != nil {
		t.Fatal(err)
	}
	if free1+64<<20 < free0 {
		t.Errorf("device free memory %d -> %d after 200 stream-ordered allocations of 1 MiB, each freed", free0, free1)
	}
}

// TestFreeAsyncIsOrdered: Free of a stream-ordered buffer returns at once
// and the memory goes only when the stream reaches the free: the fake's
// stream work runs late (100 µs an operation), so the allocation is still
// live after Free. The stream is given 50 operations, 5 ms of work, and
// Free may take half that: a Free that waited would take all of it, and
// a busy test machine's pauses do not make a Free that did not wait
// look as if it had (with 5 operations and 400 µs they did).
func TestFreeAsyncIsOrdered(t *testing.T) {
	f := cudatest.Fake(t)
	if f == nil {
		return
	}
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	live := f.Live("device")
	b := must(cuda.AllocAsync[byte](s, 4096))(t)
	for range 50 {
		if err := b.Memset8Async(3, s); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	if err := b.Free(); err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el > 2500*time.Microsecond {
		t.Errorf("Free of a stream-ordered buffer took %v: it waited for the stream", el)
	}
	if f.Live("device") != live+1 {
		t.Errorf("%d device allocations live right after Free, want %d: the memory went before the stream's work", f.Live("device"), live+1)
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	if f.Live("device") != live {
		t.Errorf("%d device allocations live after the stream finished, want %d", f.Live("device"), live)
	}
}

// TestFreeOn: a buffer allocated on one stream, used on another after an
// event, is freed there.
func TestFreeOn(t *testing.T) {
	ctx := cudatest.Context(t)
	s, s2 := cudatest.Stream(t, ctx), cudatest.Stream(t, ctx)
	ev := must(ctx.NewEvent())(t)
	defer ev.Close()
	const n = 1 << 12
	b := must(cuda.AllocAsync[uint32](s, n))(t)
	if err := errors.Join(b.Memset32Async(9, s), ev.Record(s), s2.WaitEvent(ev)); err != nil {
		t.Fatal(err)
	}
	got := make([]uint32, n)
	if err := errors.Join(b.CopyToHostAsync(got, s2), b.FreeOn(s2), s2.Synchronize()); err != nil {
		t.Fatal(err)
	}
	if got[0] != 9 || got[n-1] != 9 {
		t.Errorf("read %d, %d on the second stream, want 9", got[0], got[n-1])
	}
	if err := b.CopyToHost(got); !errors.Is(err, cuda.ErrClosed) {
		t.Errorf("a buffer freed with FreeOn: %v, want ErrClosed", err)
	}
	if err := b.Free(); err != nil {
		t.Errorf("Free after FreeOn: %v, want nothing done", err)
	}
	// Freed, the buffer does nothing, whatever the stream: as Free.
	other := cudatest.Context(t)
	closed := must(ctx.NewStream())(t)
	if err := closed.Close(); err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]*cuda.Stream{"the same stream": s2, "a closed stream": closed, "another context's stream": cudatest.Stream(t, other), "a nil stream": nil} {
		if err := b.FreeOn(s); err != nil {
			t.Errorf("FreeOn of a freed buffer on %s: %v, want nothing done", name, err)
		}
	}
}

// TestAllocAsyncStreamClosed: a buffer outliving its stream is freed at
// once, after the context's work.
func TestAllocAsyncStreamClosed(t *testing.T) {
	ctx := cudatest.Context(t)
	s := must(ctx.NewStream())(t)
	b := must(cuda.AllocAsync[byte](s, 1<<16))(t)
	if err := errors.Join(b.Memset8Async(1, s), s.Close()); err != nil {
		t.Fatal(err)
	}
	if err := b.Free(); err != nil {
		t.Fatalf("Free after the buffer's stream closed: %v", err)
	}
}

func TestAllocAsyncErrors(t *testing.T) {
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	closed := must(ctx.NewStream())(t)
	if err := closed.Close(); err != nil {
		t.Fatal(err)
	}
	plain := must(cuda.Alloc[byte](ctx, 64))(t)
	defer plain.Free()
	ordered := must(cuda.AllocAsync[byte](s, 64))(t)
	defer ordered.Free()
	for _, tt := range []struct {
		name string
		err  error
		want error
	}{
		{"negative length", second(cuda.AllocAsync[byte](s, -1)), cuda.ErrInvalidValue},
		{"nil stream", second(cuda.AllocAsync[byte](nil, 8)), cuda.ErrInvalidValue},
		{"zero stream", second(cuda.AllocAsync[byte](new(cuda.Stream), 8)), cuda.ErrInvalidValue},
		{"closed stream", second(cuda.AllocAsync[byte](closed, 8)), cuda.ErrClosed},
		{"nothing on a closed stream", second(cuda.AllocAsync[byte](closed, 0)), cuda.ErrClosed},
		{"FreeOn of a buffer from Alloc", plain.FreeOn(s), cuda.ErrInvalidValue},
		{"FreeOn a nil stream", ordered.FreeOn(nil), cuda.ErrInvalidValue},
		{"FreeOn a closed stream", ordered.FreeOn(closed), cuda.ErrClosed},
		{"FreeOn of a zero buffer", new(cuda.DeviceBuffer[byte]).FreeOn(s), cuda.ErrInvalidValue},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if !errors.Is(tt.err, tt.want) {
				t.Errorf("got %v, want %v", tt.err, tt.want)
			}
		})
	}
	if err := ordered.CopyFromHost(make([]byte, 64)); err != nil {
		t.Errorf("the buffer after the refused FreeOn calls: %v", err)
	}
}

// TestAllocAsyncFaults: a failed stream-ordered allocation leaves nothing;
// a failed stream-ordered free leaves the buffer usable, and freeable.
func TestAllocAsyncFaults(t *testing.T) {
	f := cudatest.Fake(t)
	if f == nil {
		return
	}
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	live := f.Live("device")
	f.Fail("cuMemAllocAsync", 1, 2)
	if _, err := cuda.AllocAsync[byte](s, 64); !errors.Is(err, cuda.ErrOutOfMemory) {
		t.Errorf("AllocAsync with the driver out of memory: %v, want ErrOutOfMemory", err)
	}
	if f.Live("device") != live {
		t.Errorf("%d device allocations after a failed AllocAsync, want %d", f.Live("device"), live)
	}
	b := must(cuda.AllocAsync[byte](s, 64))(t)
	f.Fail("cuMemFreeAsync", 1, 999)
	if err := b.Free(); !errors.Is(err, cuda.Result(999)) {
		t.Errorf("Free with cuMemFreeAsync failing: %v", err)
	}
	if err := b.CopyFromHost(make([]byte, 64)); err != nil {
		t.Errorf("the buffer after a failed Free: %v", err)
	}
	if err := errors.Join(b.Free(), s.Synchronize()); err != nil {
		t.Fatal(err)
	}
	if f.Live("device") != live {
		t.Errorf("%d device allocations after Free, want %d", f.Live("device"), live)
	}
}

// BenchmarkAllocAsync times an allocation and its free in stream order on
// one stream, from the warm pool, beside Alloc and Free (cuMemAlloc and
// cuMemFree), at a small, a middle and a large size. async reuses the
// memory the stream keeps (no driver call); uncached makes both driver
// calls each time, C's calls: the stream has first freed as many other
// sizes as it remembers, so that it keeps nothing of the size timed.
func BenchmarkAllocAsync(b *testing.B) {
	ctx := cudatest.Context(b)
	s := cudatest.Stream(b, ctx)
	allocFree := func(n int) error {
		d, err := cuda.AllocAsync[byte](s, n)
		if err != nil {
			return err
		}
		return d.Free()
	}
	loop := func(b *testing.B, n int) {
		for b.Loop() {
			if err := allocFree(n); err != nil {
				b.Fatal(err)
			}
		}
		if err := s.Synchronize(); err != nil {
			b.Fatal(err)
		}
	}
	for _, n := range []int{256, 1 << 20, 64 << 20} {
		b.Run("uncached/"+sizeName(n), func(b *testing.B) {
			if err := s.Synchronize(); err != nil {
				b.Fatal(err)
			}
			for i := range cuda.CacheRepeats {
				if err := allocFree(8<<10 + i); err != nil {
					b.Fatal(err)
				}
			}
			loop(b, n)
		})
		b.Run("async/"+sizeName(n), func(b *testing.B) { loop(b, n) })
		b.Run("sync/"+sizeName(n), func(b *testing.B) {
			for b.Loop() {
				d, err := cuda.Alloc[byte](ctx, n)
				if err == nil {
					err = d.Free()
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestAllocAsyncAllocs: a stream-ordered allocation of a size the stream
// keeps, and its Free, make three Go objects: the buffer with its
// allocation record, and the two of its cleanup (runtime.AddCleanup's box
// of the argument and its closure).
func TestAllocAsyncAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	s := cudatest.Stream(t, cudatest.Context(t))
	var err error
	allocFree := func() {
		b, aerr := cuda.AllocAsync[float32](s, 1024)
		err = errors.Join(err, aerr, b.Free())
	}
	allocFree() // the stream keeps the size from now on
	if n := testing.AllocsPerRun(100, allocFree); n > 3 {
		t.Errorf("%v allocations an AllocAsync and Free, want at most 3", n)
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
}
