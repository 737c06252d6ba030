package cuda_test

import (
	"errors"
	"testing"
	"time"

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

// TestStreamSequence: a stream's sequence memory lies past its scratch
// (the two do not overlap), zeroed as it is, the same every time; while
// one StreamSequence on the stream queues, another waits; none while the
// stream captures; queue's error is returned as it is; a zero or closed
// stream has none.
func TestStreamSequence(t *testing.T) {
	f := cudatest.Fake(t)
	if f == nil {
		return
	}
	ctx := cudatest.Context(t)
	s := must(ctx.NewStream())(t)
	var seq uintptr
	var room int
	if err := attach.StreamSequence(s, func(addr uintptr, size int) error { seq, room = addr, size; return nil }); err != nil || seq == 0 || room < 1<<14 {
		t.Fatalf("StreamSequence gave %#x, %d, %v: want memory", seq, room, err)
	}
	scratch, size, err := attach.StreamScratch(s)
	if err != nil {
		t.Fatal(err)
	}
	if seq < scratch+uintptr(size) && scratch < seq+uintptr(room) {
		t.Fatalf("sequence memory [%#x, +%d) overlaps the scratch [%#x, +%d)", seq, room, scratch, size)
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	view := must(cuda.FromRaw[byte](ctx, cuda.DevicePtr(seq), room))(t)
	for i, b := range cudatest.Download(t, view) {
		if b != 0 {
			t.Fatalf("byte %d of new sequence memory is %d, want 0", i, b)
		}
	}

	// A second StreamSequence waits for the first's queue to return.
	inside, release, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
	first := make(chan error, 1)
	go func() {
		first <- attach.StreamSequence(s, func(uintptr, int) error { close(inside); <-release; return nil })
	}()
	select {
	case <-inside:
	case err := <-first:
		t.Fatalf("StreamSequence returned %v before running queue", err)
	}
	go func() {
		attach.StreamSequence(s, func(uintptr, int) error { close(done); return nil })
	}()
	select {
	case <-done:
		t.Fatal("a second StreamSequence queued while the first held the stream's sequence")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	<-done
	if err := <-first; err != nil {
		t.Fatal(err)
	}

	want := errors.New("queue's own")
	if err := attach.StreamSequence(s, func(uintptr, int) error { return want }); err != want {
		t.Errorf("StreamSequence returned %v, want queue's error as it is", err)
	}
	g, err := s.Capture(cuda.CaptureGlobal, func() error {
		return attach.StreamSequence(s, func(addr uintptr, size int) error {
			if addr != 0 || size != 0 {
				t.Errorf("StreamSequence while capturing gave %#x, %d: want none", addr, size)
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	g.Close()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	called := false
	for _, v := range []any{s, new(cuda.Stream), ctx, (*cuda.Stream)(nil)} {
		if err := attach.StreamSequence(v, func(uintptr, int) error { called = true; return nil }); err == nil {
			t.Errorf("StreamSequence of %T %p: no error", v, v)
		}
	}
	if called {
		t.Error("StreamSequence ran queue for a closed, zero or wrong stream")
	}
}
