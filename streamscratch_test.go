package cuda_test

import (
	"errors"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/attach"
	"github.com/gocuda/cuda/internal/cudatest"
)

// TestStreamScratch: a stream's scratch is allocated on first use, zeroed
// in the stream's order,
// the same memory every time after, none while the stream captures, and
// freed when the stream closes; a zero or closed stream has none.
func TestStreamScratch(t *testing.T) {
	f := cudatest.Fake(t)
	if f == nil {
		return
	}
	ctx := cudatest.Context(t)
	s := must(ctx.NewStream())(t)
	live := f.Live("device")
	addr, size, err := attach.StreamScratch(s)
	if err != nil || addr == 0 || size < 1<<16 {
		t.Fatalf("StreamScratch = %#x, %d, %v: want memory", addr, size, err)
	}
	if got := f.Live("device"); got != live+1 {
		t.Fatalf("%d device allocations after the first use, want %d", got, live+1)
	}
	// Zeroed in s's order, before s's next work: wait for it to read it.
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	view := must(cuda.FromRaw[byte](ctx, cuda.DevicePtr(addr), size))(t)
	zeros := make([]byte, size)
	if err := view.CopyToHost(zeros); err != nil {
		t.Fatal(err)
	}
	for i, b := range zeros {
		if b != 0 {
			t.Fatalf("byte %d of a new scratch is %d, want 0", i, b)
		}
	}
	if again, _, err := attach.StreamScratch(s); err != nil || again != addr {
		t.Fatalf("second StreamScratch = %#x, %v: want %#x again", again, err, addr)
	}
	g, err := s.Capture(cuda.CaptureGlobal, func() error {
		if a, _, err := attach.StreamScratch(s); err != nil || a != 0 {
			t.Errorf("StreamScratch while capturing = %#x, %v: want none", a, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	g.Close()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if got := f.Live("device"); got != live {
		t.Errorf("%d device allocations after Close, want %d: the scratch was not freed", got, live)
	}
	if _, _, err := attach.StreamScratch(s); !errors.Is(err, cuda.ErrClosed) {
		t.Errorf("StreamScratch of a closed stream: %v, want ErrClosed", err)
	}
	if _, _, err := attach.StreamScratch(new(cuda.Stream)); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("StreamScratch of a zero stream: %v, want ErrInvalidValue", err)
	}
	if _, _, err := attach.StreamScratch(ctx); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("StreamScratch of a context: %v, want ErrInvalidValue", err)
	}
}
