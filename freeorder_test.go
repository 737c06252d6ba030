package cuda_test

import (
	"errors"
	"math"
	"slices"
	"sync"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
)

// busyStream returns a stream of ctx kept busy for a while (milliseconds on
// the fake, a large memset on a GPU), so that work queued on it after runs
// late.
func busyStream(t *testing.T, ctx *cuda.Context) *cuda.Stream {
	t.Helper()
	s := must(ctx.NewStream())(t)
	t.Cleanup(func() { s.Close() })
	z := must(cuda.Alloc[byte](ctx, 256<<20))(t)
	t.Cleanup(func() { z.Free() })
	for range 4 {
		if err := z.Memset8Async(1, s); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// bufferUse queues work on y, of n elements, on s: a kernel writing it, a
// memset, a copy out of it, a copy into it.
type bufferUse struct {
	name string
	use  func(t *testing.T, ctx *cuda.Context, y *cuda.DeviceBuffer[float32], s *cuda.Stream) error
}

func bufferUses(n int) []bufferUse {
	return []bufferUse{
		{"kernel", func(t *testing.T, ctx *cuda.Context, y *cuda.DeviceBuffer[float32], s *cuda.Stream) error {
			x := must(cuda.FromHost(ctx, make([]float32, n)))(t)
			t.Cleanup(func() { x.Free() })
			saxpy := must(loadKernels(t, ctx).Function("saxpy"))(t)
			return saxpy.Launch(cuda.LaunchConfigFor(n, s), float32(1), x, y, uint32(n))
		}},
		{"memset", func(t *testing.T, _ *cuda.Context, y *cuda.DeviceBuffer[float32], s *cuda.Stream) error {
			return y.Memset32Async(math.Float32bits(7), s)
		}},
		{"copy to host", func(t *testing.T, _ *cuda.Context, y *cuda.DeviceBuffer[float32], s *cuda.Stream) error {
			return y.CopyToHostAsync(make([]float32, n), s)
		}},
		{"copy from device", func(t *testing.T, ctx *cuda.Context, y *cuda.DeviceBuffer[float32], s *cuda.Stream) error {
			x := must(cuda.Zeroed[float32](ctx, n))(t)
			t.Cleanup(func() { x.Free() })
			return y.CopyFromDeviceAsync(x, s)
		}},
	}
}

// TestFreeOrderedAfterOtherStreams: a stream-ordered buffer's Free and
// FreeOn order its release after the work other streams queued on it, as
// AllocAsync's doc promises: the use runs late on a busy stream, and the
// free (queued at once on an idle stream) must not release the memory
// under it. On the fake a use of freed memory faults the context
// (TestFakeFaultsUseAfterFree); on a GPU it could too.
func TestFreeOrderedAfterOtherStreams(t *testing.T) {
	const n = 1 << 12
	frees := []struct {
		name string
		free func(y *cuda.DeviceBuffer[float32], alloc, busy, third *cuda.Stream) error
	}{
		{"Free", func(y *cuda.DeviceBuffer[float32], _, _, _ *cuda.Stream) error { return y.Free() }},
		{"FreeOn a third stream", func(y *cuda.DeviceBuffer[float32], _, _, third *cuda.Stream) error { return y.FreeOn(third) }},
		{"FreeOn the busy stream", func(y *cuda.DeviceBuffer[float32], _, busy, _ *cuda.Stream) error { return y.FreeOn(busy) }},
	}
	for _, u := range bufferUses(n) {
		for _, f := range frees {
			t.Run(u.name+"/"+f.name, func(t *testing.T) {
				ctx := must(cuda.NewContext(cudatest.Device(t)))(t)
				defer ctx.Close()
				s, third := must(ctx.NewStream())(t), must(ctx.NewStream())(t)
				y := must(cuda.AllocAsync[float32](s, n))(t)
				if err := s.Synchronize(); err != nil {
					t.Fatal(err)
				}
				busy := busyStream(t, ctx)
				if err := u.use(t, ctx, y, busy); err != nil {
					t.Fatal(err)
				}
				if err := f.free(y, s, busy, third); err != nil {
					t.Fatal(err)
				}
				for _, st := range []*cuda.Stream{busy, s, third} {
					if err := st.Synchronize(); err != nil {
						t.Fatalf("after the %s on a busy stream and %s: %v", u.name, f.name, err)
					}
				}
			})
		}
	}
}

// TestFreeOnWaitsForAllocStream: FreeOn on another stream than the one the
// buffer came from orders the release after the work queued there too.
func TestFreeOnWaitsForAllocStream(t *testing.T) {
	const n = 1 << 12
	ctx := must(cuda.NewContext(cudatest.Device(t)))(t)
	defer ctx.Close()
	busy := busyStream(t, ctx)
	other := must(ctx.NewStream())(t)
	defer other.Close()
	y := must(cuda.AllocAsync[float32](busy, n))(t)
	if err := y.Memset32Async(math.Float32bits(7), busy); err != nil {
		t.Fatal(err)
	}
	if err := y.FreeOn(other); err != nil {
		t.Fatal(err)
	}
	for _, st := range []*cuda.Stream{busy, other} {
		if err := st.Synchronize(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestFreedMemoryReusedAfterOtherStreams: memory a stream keeps for its
// next allocation of the size (AllocAsync) is reused only after the work
// other streams queued on the freed buffer: the new buffer's memset, on
// the freeing stream, lands after the old buffer's, queued earlier on a
// busy stream, and its value is what a read sees.
func TestFreedMemoryReusedAfterOtherStreams(t *testing.T) {
	const n = 1 << 12
	ctx := must(cuda.NewContext(cudatest.Device(t)))(t)
	defer ctx.Close()
	s := must(ctx.NewStream())(t)
	defer s.Close()
	// A first free of the size makes the stream keep the next one.
	first := must(cuda.AllocAsync[float32](s, n))(t)
	if err := first.Free(); err != nil {
		t.Fatal(err)
	}
	y := must(cuda.AllocAsync[float32](s, n))(t)
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	busy := busyStream(t, ctx)
	if err := y.Memset32Async(math.Float32bits(7), busy); err != nil {
		t.Fatal(err)
	}
	if err := y.Free(); err != nil {
		t.Fatal(err)
	}
	y2 := must(cuda.AllocAsync[float32](s, n))(t)
	defer y2.Free()
	if err := y2.Memset32Async(math.Float32bits(9), s); err != nil {
		t.Fatal(err)
	}
	got := make([]float32, n)
	if err := y2.CopyToHost(got); err != nil {
		t.Fatal(err)
	}
	if err := busy.Synchronize(); err != nil {
		t.Fatal(err)
	}
	if i := slices.IndexFunc(got, func(v float32) bool { return v != 9 }); i >= 0 {
		t.Errorf("element %d of the new buffer is %v, want 9: the freed buffer's memset on the busy stream ran after the new buffer's", i, got[i])
	}
	// Read again once every stream is done: the late memset is seen now
	// if it was not ordered before the reuse.
	if err := y2.CopyToHost(got); err != nil {
		t.Fatal(err)
	}
	if i := slices.IndexFunc(got, func(v float32) bool { return v != 9 }); i >= 0 {
		t.Errorf("after every stream finished, element %d of the new buffer is %v, want 9", i, got[i])
	}
}

// TestFreeRefusedWhileUserCaptures: a buffer whose last use is queued on
// a stream that has since begun a capture cannot have its free ordered
// after that use: ErrInvalidValue, and the buffer stays usable and can be
// freed once the capture is over.
func TestFreeRefusedWhileUserCaptures(t *testing.T) {
	const n = 1 << 12
	ctx := must(cuda.NewContext(cudatest.Device(t)))(t)
	defer ctx.Close()
	s := must(ctx.NewStream())(t)
	defer s.Close()
	y := must(cuda.AllocAsync[float32](s, n))(t)
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	busy := busyStream(t, ctx)
	if err := y.Memset32Async(math.Float32bits(7), busy); err != nil {
		t.Fatal(err)
	}
	z := must(cuda.Alloc[float32](ctx, n))(t)
	defer z.Free()
	var freeErr error
	g, err := busy.Capture(cuda.CaptureRelaxed, func() error {
		freeErr = y.Free()
		return z.Memset32Async(1, busy)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if !errors.Is(freeErr, cuda.ErrInvalidValue) {
		t.Fatalf("Free while the buffer's user captures: %v; want ErrInvalidValue", freeErr)
	}
	got := make([]float32, n)
	if err := y.CopyToHost(got); err != nil {
		t.Fatalf("the buffer after a refused Free: %v", err)
	}
	if got[0] != 7 || got[n-1] != 7 {
		t.Errorf("the buffer after a refused Free holds %v ... %v, want 7", got[0], got[n-1])
	}
	if err := y.Free(); err != nil {
		t.Fatalf("Free after the capture: %v", err)
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
}

// TestStreamCloseWaitsBeforeRefusing: a stream being closed refuses calls
// only once its work is done, so that a synchronous call on a buffer the
// stream used, which takes a refusing stream as finished, reads what that
// work wrote.
func TestStreamCloseWaitsBeforeRefusing(t *testing.T) {
	const n = 1 << 12
	ctx := must(cuda.NewContext(cudatest.Device(t)))(t)
	defer ctx.Close()
	y := must(cuda.Zeroed[float32](ctx, n))(t)
	defer y.Free()
	busy := busyStream(t, ctx)
	if err := y.Memset32Async(math.Float32bits(7), busy); err != nil {
		t.Fatal(err)
	}
	closed := make(chan error, 1)
	go func() { closed <- busy.Close() }()
	// Once the stream refuses a call, its Close is under way.
	for {
		if _, err := busy.Query(); errors.Is(err, cuda.ErrClosed) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
	}
	got := make([]float32, n)
	if err := y.CopyToHost(got); err != nil {
		t.Fatal(err)
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if got[0] != 7 || got[n-1] != 7 {
		t.Errorf("read while the stream closed: %v ... %v, want 7 (the stream's memset)", got[0], got[n-1])
	}
}

// TestFreeOrderedConcurrent: goroutines allocate in stream order, use the
// buffers on other streams (some of them closed meanwhile) and free them,
// at once: no deadlock, no error but a closed stream's refusal, and no
// fault (on the fake, work on freed memory faults the context).
func TestFreeOrderedConcurrent(t *testing.T) {
	const (
		workers = 8
		rounds  = 40
		n       = 1 << 10
	)
	ctx := must(cuda.NewContext(cudatest.Device(t)))(t)
	defer ctx.Close()
	streams := make([]*cuda.Stream, 4)
	for i := range streams {
		streams[i] = must(ctx.NewStream())(t)
		defer streams[i].Close()
	}
	// Streams that a goroutine closes while others use them.
	var mu sync.Mutex
	closing := must(ctx.NewStream())(t)
	defer func() { closing.Close() }()
	done := make(chan struct{})
	var closer sync.WaitGroup
	closer.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			s, err := ctx.NewStream()
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			old := closing
			closing = s
			mu.Unlock()
			if err := old.Close(); err != nil {
				t.Error(err)
			}
		}
	})
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for r := range rounds {
				s := streams[(w+r)%len(streams)]
				y, err := cuda.AllocAsync[float32](s, n)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				c := closing
				mu.Unlock()
				for _, o := range []*cuda.Stream{streams[(w+r+1)%len(streams)], c} {
					if err := y.Memset32Async(uint32(r), o); err != nil && !errors.Is(err, cuda.ErrClosed) {
						t.Error(err)
					}
				}
				if r%2 == 0 {
					err = y.Free()
				} else {
					err = y.FreeOn(streams[(w+r+2)%len(streams)])
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(done)
	closer.Wait()
	if err := ctx.Synchronize(); err != nil {
		t.Fatalf("after the frees: %v", err)
	}
}
