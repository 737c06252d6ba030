package cuda_test

import (
	"bytes"
	"errors"
	"io"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/sweep"
)

// sweepTransfers is the fault sweep's rows of copies, IPC, readers and writers.
func sweepTransfers() []sweep.Case {
	return []sweep.Case{
		{Name: "copies", Covers: []string{"DeviceBuffer.CopyFromHost", "DeviceBuffer.CopyToHost", "DeviceBuffer.ToHost", "DeviceBuffer.CopyFromDevice",
			"DeviceBuffer.Memset8", "DeviceBuffer.Memset16", "DeviceBuffer.Memset32", "DeviceBuffer.CopyFromHostAsync",
			"DeviceBuffer.CopyToHostAsync", "DeviceBuffer.CopyFromDeviceAsync", "DeviceBuffer.Memset8Async",
			"DeviceBuffer.Memset16Async", "DeviceBuffer.Memset32Async"},
			Prepare: func(t *testing.T, e *sweep.Env) (func() error, func(*testing.T, error)) {
				b, c := must(cuda.Alloc[uint32](e.Ctx, 64))(t), must(cuda.Alloc[uint32](e.Ctx, 64))(t)
				host := random[uint32](64)
				sl := must(b.Slice(8, 16))(t)
				view := must(cuda.ViewAs[uint16](c))(t)
				return func() error {
						return sweep.FirstErr(
							func() error { return b.CopyFromHost(host) },
							func() error { return sl.CopyToHost(make([]uint32, 16)) },
							func() error { _, err := sl.ToHost(); return err },
							func() error { return c.CopyFromDevice(b) },
							func() error { return view.Memset16(7) },
							func() error { return b.Memset8(1) },
							func() error { return sl.Memset32(2) },
							func() error { return b.CopyFromHostAsync(host, e.S) },
							func() error { return sl.CopyToHostAsync(make([]uint32, 16), e.S) },
							func() error { return c.CopyFromDeviceAsync(b, e.S) },
							func() error { return b.Memset8Async(3, e.S) },
							func() error { return view.Memset16Async(4, e.S) },
							func() error { return sl.Memset32Async(5, e.S) },
							e.S.Synchronize,
						)
					}, func(t *testing.T, err error) {
						e.S.Synchronize() // a failed synchronize leaves its copies queued
						// A buffer whose copy failed still copies, then frees.
						got := make([]uint32, 64)
						if err := sweep.FirstErr(func() error { return b.CopyFromHost(host) }, func() error { return b.CopyToHost(got) }); err != nil || !equal(got, host) {
							t.Errorf("copies: the buffer after the failure: %v", err)
						}
						b.Free()
						c.Free()
					}
			}},
		{Name: "IPC", Covers: []string{"DeviceBuffer.IPCHandle", "Event.IPCHandle", "cuda.OpenIPC", "cuda.OpenIPCEvent"},
			Prepare: func(t *testing.T, e *sweep.Env) (func() error, func(*testing.T, error)) {
				b := must(cuda.Alloc[float32](e.Ctx, 16))(t)
				ev := must(e.Ctx.NewEvent(cuda.EventDisableTiming, cuda.EventInterprocess))(t)
				e.Fake.SetIPCSameProcess(true)
				var o *cuda.DeviceBuffer[float32]
				return func() error {
						return sweep.FirstErr(
							func() error {
								h, err := b.IPCHandle()
								if err == nil {
									o, err = cuda.OpenIPC[float32](e.Ctx, h, 16)
								}
								return err
							},
							func() error { return o.Free() },
							func() error {
								h, err := ev.IPCHandle()
								if err != nil {
									return err
								}
								// The fake opens no event of its own process, as the
								// driver: CUDA_ERROR_INVALID_CONTEXT is the outcome
								// without faults; an injected one shows instead.
								if _, err := cuda.OpenIPCEvent(e.Ctx, h); !errors.Is(err, cuda.Result(201)) {
									return err
								}
								return nil
							},
						)
					}, func(t *testing.T, _ error) {
						e.Fake.SetIPCSameProcess(false)
						if o != nil && o.Free() != nil {
							if err := o.Free(); err != nil {
								t.Errorf("closing the mapping again: %v", err)
							}
						}
						b.Free()
						ev.Close()
					}
			}},
		{Name: "readers and writers", Covers: []string{"cuda.ReadFrom", "cuda.WriteTo", "DeviceBuffer.ReadFrom", "DeviceBuffer.WriteTo"}, MaxNth: 2,
			Prepare: func(t *testing.T, e *sweep.Env) (func() error, func(*testing.T, error)) {
				// A context of its own: the one the methods' staging
				// buffer is kept in, and freed with.
				ctx := must(cuda.NewContext(e.Ctx.Device()))(t)
				data := make([]byte, 3<<20+5)
				b := must(cuda.Alloc[byte](ctx, len(data)))(t)
				s := must(ctx.NewStream())(t)
				sb := new(cuda.StagingBuffer)
				c := cuda.IOConfig{Staging: sb, Stream: s}
				return func() error {
						return sweep.FirstErr(
							func() error { _, err := cuda.ReadFrom(b, bytes.NewReader(data), c); return err },
							func() error { _, err := cuda.ReadFrom(b, onlyReader{bytes.NewReader(data)}, c); return err },
							func() error { _, err := cuda.WriteTo(b, io.Discard, c); return err },
							func() error { _, err := b.ReadFrom(bytes.NewReader(data)); return err },
							func() error { _, err := b.WriteTo(io.Discard); return err },
						)
					}, func(t *testing.T, _ error) {
						if err := sb.Close(); err != nil && sb.Close() != nil {
							t.Errorf("closing the staging buffer: %v", err)
						}
						b.Free()
						s.Close()
						if err := ctx.Close(); err != nil {
							t.Errorf("closing the context: %v", err)
						}
					}
			}},
		{Name: "Context.Close after ReadFrom", Covers: []string{"Context.Close"},
			Prepare: func(t *testing.T, e *sweep.Env) (func() error, func(*testing.T, error)) {
				// Close frees the staging buffer the context keeps for
				// ReadFrom and WriteTo; failing, it leaves it usable.
				ctx := must(cuda.NewContext(e.Ctx.Device()))(t)
				b := must(cuda.Alloc[byte](ctx, 1<<20))(t)
				use := func() error { _, err := b.ReadFrom(bytes.NewReader(make([]byte, 1<<20))); return err }
				if err := use(); err != nil {
					t.Fatal(err)
				}
				b.Free()
				return ctx.Close, sweep.CloseAgain(func() error {
					b := must(cuda.Alloc[byte](ctx, 1<<20))(t)
					defer b.Free()
					_, err := b.ReadFrom(bytes.NewReader(make([]byte, 1<<20)))
					return err
				}, ctx.Close)
			}},
	}
}
