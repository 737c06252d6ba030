package cuda_test

import (
	"errors"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/sweep"
)

// sweepMemory is the fault sweep's rows of device, managed, growable, stream-ordered, pooled, pinned and registered memory, and their frees.
func sweepMemory() []sweep.Case {
	return []sweep.Case{
		{Name: "allocate", Covers: []string{"cuda.Alloc", "cuda.Zeroed", "cuda.FromHost"},
			Prepare: func(t *testing.T, e *sweep.Env) (func() error, func(*testing.T, error)) {
				var a, z, h *cuda.DeviceBuffer[int32]
				return func() error {
						return sweep.FirstErr(
							func() (err error) { a, err = cuda.Alloc[int32](e.Ctx, 100); return err },
							func() (err error) { z, err = cuda.Zeroed[int32](e.Ctx, 100); return err },
							func() (err error) { h, err = cuda.FromHost(e.Ctx, random[int32](100)); return err },
						)
					}, func(t *testing.T, _ error) {
						for _, b := range []*cuda.DeviceBuffer[int32]{a, z, h} {
							if err := b.Free(); err != nil {
								t.Errorf("free: %v", err)
							}
						}
					}
			}},
		{Name: "managed memory", Covers: []string{"cuda.AllocManaged", "ManagedBuffer.Prefetch", "ManagedBuffer.Advise",
			"ManagedBuffer.Attributes", "ManagedBuffer.Free"},
			Prepare: func(t *testing.T, e *sweep.Env) (func() error, func(*testing.T, error)) {
				var m *cuda.ManagedBuffer[int32]
				return func() error {
						return sweep.FirstErr(
							func() (err error) { m, err = cuda.AllocManaged[int32](e.Ctx, 1000, cuda.AttachGlobal); return err },
							func() error { return m.Prefetch(cuda.OnDevice(e.Ctx.Device()), e.S) },
							func() error { return m.Advise(cuda.AdvisePreferredLocation, cuda.OnHost()) },
							func() error { _, err := m.Attributes(); return err },
							e.S.Synchronize,
							m.Free,
						)
					}, func(t *testing.T, _ error) {
						if err := m.Free(); err != nil {
							t.Errorf("free: %v", err)
						}
						sweep.StillWorks(t, "managed memory", e.Ctx, e.S)
					}
			}},
		{Name: "growable buffers", Covers: []string{"cuda.NewGrowableBuffer", "GrowableBuffer.Resize", "GrowableBuffer.Buffer", "GrowableBuffer.Free"},
			Prepare: func(t *testing.T, e *sweep.Env) (func() error, func(*testing.T, error)) {
				var g *cuda.GrowableBuffer[int32]
				data := random[int32](3 << 20)
				return func() error {
						var b *cuda.DeviceBuffer[int32]
						return sweep.FirstErr(
							func() (err error) { g, err = cuda.NewGrowableBuffer[int32](e.Ctx, 16<<20); return err },
							func() error { return g.Resize(1000) },
							func() error { return g.Resize(len(data)) }, // a second piece
							func() (err error) { b, err = g.Buffer(); return err },
							func() error { return b.CopyFromHost(data) },
							func() error { return g.Resize(10) }, // the second piece unmapped
							g.Free,
						)
					}, func(t *testing.T, _ error) {
						// Whatever failed, no length reaches past the memory mapped.
						if g.Len() > g.Cap() {
							t.Errorf("length %d past the %d elements mapped", g.Len(), g.Cap())
						}
						if err := g.Free(); err != nil {
							t.Errorf("free: %v", err)
						}
						sweep.StillWorks(t, "growable buffers", e.Ctx, e.S)
					}
			}},
		{Name: "stream-ordered memory", Covers: []string{"cuda.AllocAsync", "DeviceBuffer.FreeOn"},
			Prepare: func(t *testing.T, e *sweep.Env) (func() error, func(*testing.T, error)) {
				var b *cuda.DeviceBuffer[int32]
				return func() (err error) {
						if b, err = cuda.AllocAsync[int32](e.S, 100); err != nil {
							return err
						}
						return sweep.FirstErr(func() error { return b.Memset32Async(1, e.S) }, func() error { return b.FreeOn(e.S) })
					}, func(t *testing.T, _ error) {
						if err := errors.Join(b.Free(), e.S.Synchronize()); err != nil {
							t.Errorf("free: %v", err)
						}
					}
			}},
		{Name: "stream-ordered reuse", Covers: []string{"cuda.AllocAsync", "DeviceBuffer.Free", "Stream.Synchronize", "Context.Synchronize"},
			Prepare: func(t *testing.T, e *sweep.Env) (func() error, func(*testing.T, error)) {
				var bufs []*cuda.DeviceBuffer[int32]
				round := func() error {
					b, err := cuda.AllocAsync[int32](e.S, 100)
					if err != nil {
						return err
					}
					bufs = append(bufs, b)
					return sweep.FirstErr(func() error { return b.Memset32Async(1, e.S) }, b.Free)
				}
				// Three frees of a size keep two blocks on the stream, which
				// the next rounds reuse, and the synchronizes give back.
				return func() error {
						return sweep.FirstErr(round, round, round, e.S.Synchronize, round, round, round, e.Ctx.Synchronize)
					}, func(t *testing.T, _ error) {
						for _, b := range bufs {
							if err := b.Free(); err != nil {
								t.Errorf("free: %v", err)
							}
						}
						b, err := cuda.AllocAsync[int32](e.S, 100)
						got := make([]int32, 100)
						if err == nil {
							err = errors.Join(b.Memset32Async(7, e.S), b.CopyToHostAsync(got, e.S), b.Free(), e.S.Synchronize(), e.Ctx.Synchronize())
						}
						if err != nil || got[99] != 7 {
							t.Errorf("the stream's allocations afterwards: %v, read %d, want 7", err, got[99])
						}
					}
			}},
		{Name: "memory pools", Covers: []string{"Context.NewMemPool", "Context.DefaultMemPool", "cuda.AllocFromPool",
			"MemPool.SetReleaseThreshold", "MemPool.ReleaseThreshold", "MemPool.TrimTo", "MemPool.Stats", "MemPool.ResetHighWater", "MemPool.SetAccess"},
			Prepare: func(t *testing.T, e *sweep.Env) (func() error, func(*testing.T, error)) {
				var p, d *cuda.MemPool
				var b *cuda.DeviceBuffer[int32]
				return func() (err error) {
						if p, err = e.Ctx.NewMemPool(); err != nil {
							return err
						}
						if d, err = e.Ctx.DefaultMemPool(); err != nil {
							return err
						}
						if b, err = cuda.AllocFromPool[int32](p, e.S, 100); err != nil {
							return err
						}
						return sweep.FirstErr(
							func() error { return p.SetReleaseThreshold(1 << 20) },
							func() error { _, err := p.ReleaseThreshold(); return err },
							func() error { return b.Free() },
							e.S.Synchronize,
							func() error { return p.TrimTo(0) },
							func() error { _, err := d.Stats(); return err },
							p.ResetHighWater,
							func() error { return p.SetAccess(e.Ctx1, true) },
						)
					}, func(t *testing.T, _ error) {
						if err := errors.Join(b.Free(), e.S.Synchronize(), p.Close(), d.Close()); err != nil {
							t.Errorf("cleanup: %v", err)
						}
					}
			}},
		{Name: "MemPool.Close", Covers: []string{"MemPool.Close"},
			Prepare: func(t *testing.T, e *sweep.Env) (func() error, func(*testing.T, error)) {
				p := must(e.Ctx.NewMemPool())(t)
				return p.Close, sweep.CloseAgain(func() error { _, err := p.Stats(); return err }, p.Close)
			}},
		{Name: "DeviceBuffer.Free stream-ordered", Covers: []string{"DeviceBuffer.Free"},
			Prepare: func(t *testing.T, e *sweep.Env) (func() error, func(*testing.T, error)) {
				b := must(cuda.AllocAsync[byte](e.S, 64))(t)
				after := sweep.CloseAgain(func() error { return b.CopyFromHost(make([]byte, 64)) }, b.Free)
				return b.Free, func(t *testing.T, err error) {
					after(t, err)
					// The free is a step of the stream: done once it is, and
					// only then gone from the fake's count.
					e.S.Synchronize()
				}
			}},
		// Frees ordered after another stream's work on the buffer (an
		// event recorded there, waited for on the freeing stream): to the
		// pool, and into the stream's cache (a second free of the size).
		// A failed call leaves the buffer usable and a second Free
		// succeeds.
		{Name: "DeviceBuffer.Free after another stream's work", Covers: []string{"DeviceBuffer.Free"},
			Prepare: func(t *testing.T, e *sweep.Env) (func() error, func(*testing.T, error)) {
				return freeAfterOtherStream(t, e, false)
			}},
		{Name: "DeviceBuffer.Free after another stream's work, kept", Covers: []string{"DeviceBuffer.Free"},
			Prepare: func(t *testing.T, e *sweep.Env) (func() error, func(*testing.T, error)) {
				return freeAfterOtherStream(t, e, true)
			}},
		{Name: "DeviceBuffer.Free", Covers: []string{"DeviceBuffer.Free"},
			Prepare: func(t *testing.T, e *sweep.Env) (func() error, func(*testing.T, error)) {
				b := must(cuda.Alloc[byte](e.Ctx, 64))(t)
				return b.Free, sweep.CloseAgain(func() error { return b.CopyFromHost(make([]byte, 64)) }, b.Free)
			}},
		{Name: "pinned and registered", Covers: []string{"cuda.AllocPinned", "cuda.Register"},
			Prepare: func(t *testing.T, e *sweep.Env) (func() error, func(*testing.T, error)) {
				var p *cuda.PinnedBuffer[uint32]
				var r *cuda.Registered[uint32]
				host := make([]uint32, 1024)
				b := must(cuda.Alloc[uint32](e.Ctx, 1024))(t)
				return func() error {
						return sweep.FirstErr(
							func() (err error) { p, err = cuda.AllocPinned[uint32](e.Ctx, 1024); return err },
							func() (err error) { r, err = cuda.Register(e.Ctx, host); return err },
							func() error { return b.CopyFromHost(p.Data()) },
							func() error { return b.CopyToHostAsync(host, e.S) },
							e.S.Synchronize,
						)
					}, func(t *testing.T, _ error) {
						e.S.Synchronize()
						if err := sweep.FirstErr(p.Free, r.Close, b.Free); err != nil {
							t.Errorf("release: %v", err)
						}
					}
			}},
		{Name: "PinnedBuffer.Free", Covers: []string{"PinnedBuffer.Free"},
			Prepare: func(t *testing.T, e *sweep.Env) (func() error, func(*testing.T, error)) {
				p := must(cuda.AllocPinned[byte](e.Ctx, 4096))(t)
				return p.Free, sweep.CloseAgain(func() error {
					if p.Data() == nil {
						return errors.New("no memory")
					}
					return nil
				}, p.Free)
			}},
		{Name: "Registered.Close", Covers: []string{"Registered.Close"},
			Prepare: func(t *testing.T, e *sweep.Env) (func() error, func(*testing.T, error)) {
				r := must(cuda.Register(e.Ctx, make([]byte, 8192)))(t)
				return r.Close, sweep.CloseAgain(func() error { return nil }, r.Close)
			}},
		// The releases with an asynchronous copy queued on the memory: they
		// wait for its stream first. A failed wait or release names the
		// release, leaves the memory usable (a copy queued again) and a
		// second release succeeds.
		{Name: "Registered.Close with a copy queued", Covers: []string{"Registered.Close"},
			Prepare: func(t *testing.T, e *sweep.Env) (func() error, func(*testing.T, error)) {
				host := make([]byte, 8192)
				r := must(cuda.Register(e.Ctx, host))(t)
				return releaseWithCopyQueued(t, e, host, "Registered.Close", r.Close)
			}},
		{Name: "PinnedBuffer.Free with a copy queued", Covers: []string{"PinnedBuffer.Free"},
			Prepare: func(t *testing.T, e *sweep.Env) (func() error, func(*testing.T, error)) {
				p := must(cuda.AllocPinned[byte](e.Ctx, 8192))(t)
				return releaseWithCopyQueued(t, e, p.Data(), "PinnedBuffer.Free", p.Free)
			}},
	}
}

// freeAfterOtherStream returns the Free of a stream-ordered buffer of e.S
// with a memset queued on it on another stream, with its after. kept
// frees a buffer of the size on e.S first, so that e.S keeps this one.
func freeAfterOtherStream(t *testing.T, e *sweep.Env, kept bool) (func() error, func(*testing.T, error)) {
	t.Helper()
	if kept {
		if err := must(cuda.AllocAsync[byte](e.S, 64))(t).Free(); err != nil {
			t.Fatal(err)
		}
	}
	b := must(cuda.AllocAsync[byte](e.S, 64))(t)
	other := must(e.Ctx.NewStream())(t)
	if err := b.Memset8Async(1, other); err != nil {
		t.Fatal(err)
	}
	after := sweep.CloseAgain(func() error { return b.CopyFromHost(make([]byte, 64)) }, b.Free)
	return b.Free, func(t *testing.T, err error) {
		after(t, err)
		if err := sweep.FirstErr(other.Close, e.S.Synchronize); err != nil {
			t.Errorf("after the free: %v", err)
		}
	}
}

// releaseWithCopyQueued queues a copy from host, page-locked memory, on
// e.S, and returns release as the operation, with its after: a failed
// release names op, a copy can still be queued on the memory, and a
// second release succeeds.
func releaseWithCopyQueued(t *testing.T, e *sweep.Env, host []byte, op string, release func() error) (func() error, func(*testing.T, error)) {
	t.Helper()
	dev := must(cuda.Alloc[byte](e.Ctx, len(host)))(t)
	if err := dev.CopyFromHostAsync(host, e.S); err != nil {
		t.Fatal(err)
	}
	return release, func(t *testing.T, err error) {
		sweep.CloseRetried(op, false, func() error { return dev.CopyFromHostAsync(host, e.S) }, release)(t, err)
		if err := sweep.FirstErr(e.S.Synchronize, dev.Free); err != nil {
			t.Errorf("%s: release: %v", op, err)
		}
	}
}
