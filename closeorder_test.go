package cuda_test

import (
	"errors"
	"os"
	"testing"

	"github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
)

// TestEveryObjectAfterContextClose: the context is closed before anything
// made in it. Each object's use is then ErrClosed, and its Close (or Free)
// is nil, twice: the context released what it held, and nothing leaks.
func TestEveryObjectAfterContextClose(t *testing.T) {
	cudatest.CheckLeaks(t)
	ptx, err := os.ReadFile("testdata/kernels.ptx")
	if err != nil {
		t.Fatal(err)
	}
	ctx, err := cuda.NewContext(cudatest.Device(t))
	if err != nil {
		t.Fatal(err)
	}
	s := must(ctx.NewStream())(t)
	e := must(ctx.NewEvent())(t)
	buf := must(cuda.Zeroed[int32](ctx, 256))(t)
	ordered := must(cuda.AllocAsync[int32](s, 256))(t)
	pinned := must(cuda.AllocPinned[int32](ctx, 256))(t)
	managed := must(cuda.AllocManaged[int32](ctx, 256, cuda.AttachGlobal))(t)
	host := make([]int32, 1024)
	registered := must(cuda.Register(ctx, host))(t)
	growable := must(cuda.NewGrowableBuffer[int32](ctx, 1<<20))(t)
	if err := growable.Resize(1000); err != nil {
		t.Fatal(err)
	}
	staging := must(cuda.NewStagingBuffer(ctx, 1<<20))(t)
	pool := must(ctx.NewMemPool())(t)
	fromPool := must(cuda.AllocFromPool[int32](pool, s, 64))(t)
	mod := must(ctx.LoadModule(ptx))(t)
	add := must(mod.Function("vadd_s32"))(t)
	g := must(s.Capture(cuda.CaptureGlobal, func() error {
		return add.Launch(cuda.LaunchConfigFor(256, s), buf, buf, buf, uint32(256))
	}))(t)
	exec := must(g.Instantiate())(t)
	if err := exec.Launch(s); err != nil {
		t.Fatal(err)
	}
	// Work still queued: Close waits for it.
	if err := ctx.Close(); err != nil {
		t.Fatal(err)
	}

	uses := []struct {
		name string
		err  error
	}{
		{"Stream.Synchronize", s.Synchronize()},
		{"Event.Record", e.Record(s)},
		{"DeviceBuffer.Memset32", buf.Memset32(1)},
		{"DeviceBuffer.CopyToHost of a stream-ordered buffer", ordered.CopyToHost(host[:256])},
		{"PinnedBuffer's copy", buf.CopyFromHost(pinned.Data())},
		{"ManagedBuffer.Prefetch", managed.Prefetch(cuda.OnHost(), s)},
		{"GrowableBuffer.Resize", growable.Resize(2000)},
		{"Upload through a StagingBuffer", cuda.Upload(staging, buf, host[:256], s)},
		{"AllocFromPool", func() error { _, err := cuda.AllocFromPool[int32](pool, s, 64); return err }()},
		{"Function.Launch", add.Launch(cuda.LaunchConfigFor(256, s), buf, buf, buf, uint32(256))},
		{"Graph.Instantiate", func() error { _, err := g.Instantiate(); return err }()},
		{"GraphExec.Launch", exec.Launch(s)},
	}
	for _, u := range uses {
		if !errors.Is(u.err, cuda.ErrClosed) {
			t.Errorf("%s after the context closed: %v, want ErrClosed", u.name, u.err)
		}
	}

	closes := []struct {
		name  string
		close func() error
	}{
		{"GraphExec.Close", exec.Close},
		{"Graph.Close", g.Close},
		{"Module.Close", mod.Close},
		{"DeviceBuffer.Free of a pool's buffer", fromPool.Free},
		{"MemPool.Close", pool.Close},
		{"StagingBuffer.Close", staging.Close},
		{"GrowableBuffer.Free", growable.Free},
		{"Registered.Close", registered.Close},
		{"ManagedBuffer.Free", managed.Free},
		{"PinnedBuffer.Free", pinned.Free},
		{"DeviceBuffer.Free of a stream-ordered buffer", ordered.Free},
		{"DeviceBuffer.Free", buf.Free},
		{"Event.Close", e.Close},
		{"Stream.Close", s.Close},
		{"Context.Close", ctx.Close},
	}
	for _, c := range closes {
		for i := range 2 {
			if err := c.close(); err != nil {
				t.Errorf("%s (call %d) after the context closed: %v, want nil", c.name, i+1, err)
			}
		}
	}
}

// TestContextCloseReleasesInOrder: a graph, its instance and the growable
// buffer whose memory the graph uses are all left open; the context's one
// Close releases them (the buffer once the graph is gone), whatever order
// it takes them in, and nothing leaks.
func TestContextCloseReleasesInOrder(t *testing.T) {
	cudatest.CheckLeaks(t)
	for range 8 { // the releases' order is a map's
		ctx, err := cuda.NewContext(cudatest.Device(t))
		if err != nil {
			t.Fatal(err)
		}
		s := must(ctx.NewStream())(t)
		add := must(loadKernels(t, ctx).Function("vadd_s32"))(t)
		growable := must(cuda.NewGrowableBuffer[int32](ctx, 1<<20))(t)
		if err := growable.Resize(256); err != nil {
			t.Fatal(err)
		}
		view := must(growable.Buffer())(t)
		g := must(s.Capture(cuda.CaptureGlobal, func() error {
			return add.Launch(cuda.LaunchConfigFor(256, s), view, view, view, uint32(256))
		}))(t)
		exec := must(g.Instantiate())(t)
		if err := exec.Launch(s); err != nil {
			t.Fatal(err)
		}
		if err := growable.Free(); !errors.Is(err, cuda.ErrInvalidValue) {
			t.Fatalf("GrowableBuffer.Free while a graph uses its memory: %v, want ErrInvalidValue", err)
		}
		if err := ctx.Close(); err != nil {
			t.Fatalf("Context.Close with a graph, its instance and the growable buffer it uses open: %v", err)
		}
		for _, err := range []error{exec.Close(), g.Close(), view.Free(), growable.Free(), s.Close()} {
			if err != nil {
				t.Errorf("a Close after the context's: %v, want nil", err)
			}
		}
	}
}
