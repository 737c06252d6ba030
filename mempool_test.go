package cuda_test

import (
	"errors"
	"math"
	"slices"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
	"github.com/gocuda/cuda/internal/track"
)

func poolStats(t *testing.T, p *cuda.MemPool) cuda.MemPoolStats {
	t.Helper()
	st, err := p.Stats()
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestMemPoolReuse: memory freed to a pool that keeps it is handed out
// again without reserving more; trimmed, the pool gives it back; the
// high-water marks follow and reset.
func TestMemPoolReuse(t *testing.T) {
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	p := must(ctx.NewMemPool())(t)
	defer p.Close()
	if err := p.SetReleaseThreshold(math.MaxUint64); err != nil {
		t.Fatal(err)
	}
	if v, err := p.ReleaseThreshold(); err != nil || v != math.MaxUint64 {
		t.Fatalf("ReleaseThreshold = %d, %v; want MaxUint64", v, err)
	}
	const n = 1 << 20
	src := random[byte](n)
	b := must(cuda.AllocFromPool[byte](p, s, n))(t)
	got := make([]byte, n)
	if err := errors.Join(b.CopyFromHostAsync(src, s), b.CopyToHostAsync(got, s), b.Free(), s.Synchronize()); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, src) {
		t.Fatal("data differs after a round trip through a pool's buffer")
	}
	first := poolStats(t, p)
	if first.Reserved < n || first.Used != 0 || first.UsedHigh < n || first.ReservedHigh < first.Reserved {
		t.Fatalf("after one 1 MiB buffer freed: %+v; want at least 1 MiB reserved and kept, none used, 1 MiB at the high-water mark", first)
	}
	c := must(cuda.AllocFromPool[byte](p, s, n))(t)
	if st := poolStats(t, p); st.Reserved != first.Reserved || st.Used < n {
		t.Errorf("a second 1 MiB buffer: %+v; want the memory reused (%d reserved) and in use", st, first.Reserved)
	}
	if err := errors.Join(c.Free(), s.Synchronize(), p.TrimTo(0)); err != nil {
		t.Fatal(err)
	}
	if st := poolStats(t, p); st.Reserved != 0 || st.Used != 0 {
		t.Errorf("trimmed to 0 with nothing in use: %+v", st)
	}
	if err := p.ResetHighWater(); err != nil {
		t.Fatal(err)
	}
	if st := poolStats(t, p); st.ReservedHigh != 0 || st.UsedHigh != 0 {
		t.Errorf("high-water marks after ResetHighWater with nothing reserved: %+v", st)
	}
}

// TestMemPoolReleaseThreshold: with the default threshold of 0, what a pool
// does not use goes back to the device at the next synchronization.
func TestMemPoolReleaseThreshold(t *testing.T) {
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	p := must(ctx.NewMemPool())(t)
	defer p.Close()
	b := must(cuda.AllocFromPool[byte](p, s, 4<<20))(t)
	if err := errors.Join(b.Memset8Async(1, s), b.Free(), s.Synchronize()); err != nil {
		t.Fatal(err)
	}
	if st := poolStats(t, p); st.Reserved != 0 {
		t.Errorf("a pool with release threshold 0 keeps %d bytes after a synchronization", st.Reserved)
	}
}

// TestMemPoolClose: a pool with buffers still open refuses to close and
// stays usable; once they are freed it closes, and refuses everything
// after; the default pool's MemPool closes without touching the pool.
func TestMemPoolClose(t *testing.T) {
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	p := must(ctx.NewMemPool())(t)
	b := must(cuda.AllocFromPool[uint32](p, s, 256))(t)
	if err := p.Close(); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("Close with a buffer open: %v, want ErrInvalidValue", err)
	}
	got := make([]uint32, 256)
	if err := errors.Join(b.Memset32Async(5, s), b.CopyToHostAsync(got, s), s.Synchronize()); err != nil || got[255] != 5 {
		t.Errorf("a buffer of a pool whose Close was refused: %v, read %d", err, got[255])
	}
	if _, err := p.Stats(); err != nil {
		t.Errorf("the pool after its refused Close: %v", err)
	}
	if err := errors.Join(b.Free(), p.Close(), p.Close()); err != nil {
		t.Fatalf("Close once the buffer is freed (twice): %v", err)
	}
	if _, err := cuda.AllocFromPool[byte](p, s, 8); !errors.Is(err, cuda.ErrClosed) {
		t.Errorf("AllocFromPool on a closed pool: %v, want ErrClosed", err)
	}
	if _, err := p.Stats(); !errors.Is(err, cuda.ErrClosed) {
		t.Errorf("Stats of a closed pool: %v, want ErrClosed", err)
	}
	d := must(ctx.DefaultMemPool())(t)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	e := must(cuda.AllocAsync[byte](s, 64))(t) // the device's pool is still there
	if err := errors.Join(e.Free(), s.Synchronize()); err != nil {
		t.Fatal(err)
	}
}

func TestMemPoolErrors(t *testing.T) {
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	p := must(ctx.NewMemPool())(t)
	defer p.Close()
	for _, tt := range []struct {
		name string
		err  error
		want error
	}{
		{"negative length", second(cuda.AllocFromPool[byte](p, s, -1)), cuda.ErrInvalidValue},
		{"nil pool", second(cuda.AllocFromPool[byte](nil, s, 8)), cuda.ErrInvalidValue},
		{"zero pool", second(cuda.AllocFromPool[byte](new(cuda.MemPool), s, 8)), cuda.ErrInvalidValue},
		{"nil stream", second(cuda.AllocFromPool[byte](p, nil, 8)), cuda.ErrInvalidValue},
		{"access for its own device", p.SetAccess(ctx, true), cuda.ErrInvalidValue},
		{"access for a nil context", p.SetAccess(nil, true), cuda.ErrInvalidValue},
		{"NewMemPool of a zero context", second(new(cuda.Context).NewMemPool()), cuda.ErrInvalidValue},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if !errors.Is(tt.err, tt.want) {
				t.Errorf("got %v, want %v", tt.err, tt.want)
			}
		})
	}
}

// TestMemPoolAccess: another device's context may be given access to a
// pool's memory, and it reads it there (two devices, peer access).
func TestMemPoolAccess(t *testing.T) {
	ctxs := cudatest.Contexts(t, 2)
	if ctxs == nil {
		return
	}
	if ok, err := ctxs[1].Device().CanAccessPeer(ctxs[0].Device()); err != nil || !ok {
		t.Skipf("no peer access between the two devices (%v)", err)
	}
	s := cudatest.Stream(t, ctxs[0])
	p := must(ctxs[0].NewMemPool())(t)
	defer p.Close()
	if err := p.SetAccess(ctxs[1], true); err != nil {
		t.Fatal(err)
	}
	b := must(cuda.AllocFromPool[uint32](p, s, 64))(t)
	if err := errors.Join(b.Memset32Async(3, s), s.Synchronize()); err != nil {
		t.Fatal(err)
	}
	d := must(cuda.Alloc[uint32](ctxs[1], 64))(t)
	defer d.Free()
	got := make([]uint32, 64)
	_, err := cuda.CopyPeer(d, b)
	if err := errors.Join(err, d.CopyToHost(got)); err != nil {
		t.Fatal(err)
	}
	if got[63] != 3 {
		t.Errorf("read %d through the other device, want 3", got[63])
	}
	if err := errors.Join(p.SetAccess(ctxs[1], false), b.Free(), s.Synchronize()); err != nil {
		t.Fatal(err)
	}
}

// TestMemPoolForgottenBuffer: a buffer of a pool that nobody freed is freed
// by its cleanup once unreachable, and the pool may then close.
func TestMemPoolForgottenBuffer(t *testing.T) {
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	p := must(ctx.NewMemPool())(t)
	before := track.Take().Forgotten[track.DeviceBuffer]
	func() { must(cuda.AllocFromPool[uint32](p, s, 256))(t) }()
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	// The cleanup counts the buffer forgotten first, then frees it (after
	// the context's work: on a GPU that takes a while), and only then
	// lets the pool close: wait for the Close, which may be retried.
	var err error
	if !cudatest.GC(func() bool { err = p.Close(); return err == nil }) {
		t.Fatalf("Close once the forgotten buffer was freed: %v", err)
	}
	if track.Take().Forgotten[track.DeviceBuffer] <= before {
		t.Error("the buffer was not counted as forgotten")
	}
}
