package cuda_test

import (
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/sweep"
)

// sweepContexts is the fault sweep's rows of devices, contexts, streams and events.
func sweepContexts() []sweep.Case {
	return []sweep.Case{
		{Name: "devices", Covers: []string{"cuda.DeviceCount", "cuda.GetDevice", "cuda.Devices", "cuda.DriverVersion", "cuda.DriverLibrary",
			"Device.Name", "Device.TotalMemory", "Device.ComputeCapability", "Device.PCIBusID", "Device.MultiprocessorCount", "Device.Attribute", "Device.CanAccessPeer"},
			Prepare: func(t *testing.T, e *sweep.Env) (func() error, func(*testing.T, error)) {
				return func() error {
					return sweep.FirstErr(
						func() error { _, err := cuda.DeviceCount(); return err },
						func() error { _, err := cuda.Devices(); return err },
						func() error { _, err := cuda.DriverVersion(); return err },
						func() error { _, err := cuda.DriverLibrary(); return err },
						func() error {
							d, err := cuda.GetDevice(1)
							if err != nil {
								return err
							}
							return sweep.FirstErr(
								func() error { _, err := d.Name(); return err },
								func() error { _, err := d.TotalMemory(); return err },
								func() error { _, err := d.ComputeCapability(); return err },
								func() error { _, err := d.PCIBusID(); return err },
								func() error { _, err := d.MultiprocessorCount(); return err },
								func() error { _, err := d.Attribute(cuda.AttrWarpSize); return err },
								func() error { _, err := d.CanAccessPeer(e.Ctx.Device()); return err },
							)
						})
				}, func(*testing.T, error) {}
			}},
		{Name: "NewContext", Covers: []string{"cuda.NewContext"},
			Prepare: func(t *testing.T, e *sweep.Env) (func() error, func(*testing.T, error)) {
				var c *cuda.Context
				return func() (err error) { c, err = cuda.NewContext(e.Ctx.Device()); return err },
					func(t *testing.T, _ error) { c.Close() }
			}},
		{Name: "Open", Covers: []string{"cuda.Open"},
			Prepare: func(t *testing.T, e *sweep.Env) (func() error, func(*testing.T, error)) {
				var c *cuda.Context
				var s *cuda.Stream
				return func() (err error) { c, s, err = cuda.Open(e.Ctx.Device().Ordinal()); return err },
					func(t *testing.T, err error) {
						if err != nil && (c != nil || s != nil) {
							t.Errorf("Open failed (%v) and returned a context or stream", err)
						}
						s.Close()
						c.Close()
					}
			}},
		{Name: "Context.Close", Covers: []string{"Context.Close"},
			Prepare: func(t *testing.T, e *sweep.Env) (func() error, func(*testing.T, error)) {
				c := must(cuda.NewContext(e.Ctx.Device()))(t)
				return c.Close, sweep.CloseAgain(func() error { _, _, err := c.MemInfo(); return err }, c.Close)
			}},
		{Name: "context calls", Covers: []string{"Context.Synchronize", "Context.MemInfo", "Context.StreamPriorityRange", "Context.Do"},
			Prepare: func(t *testing.T, e *sweep.Env) (func() error, func(*testing.T, error)) {
				return func() error {
					return sweep.FirstErr(e.Ctx.Synchronize,
						func() error { _, _, err := e.Ctx.MemInfo(); return err },
						func() error { _, _, err := e.Ctx.StreamPriorityRange(); return err },
						func() error { return e.Ctx.Do(func() error { _, _, err := e.Ctx.MemInfo(); return err }) })
				}, func(t *testing.T, _ error) { sweep.StillWorks(t, "context calls", e.Ctx, e.S) }
			}},
		{Name: "streams and events", Covers: []string{"Context.NewStream", "Context.NewStreamWithPriority", "Context.NewEvent", "Stream.Synchronize",
			"Stream.Query", "Stream.WaitEvent", "Stream.Do", "Event.Record", "Event.Synchronize", "Event.Query", "cuda.ElapsedTime"},
			Prepare: func(t *testing.T, e *sweep.Env) (func() error, func(*testing.T, error)) {
				var s, sp *cuda.Stream
				var e1, e2 *cuda.Event
				b := must(cuda.Alloc[byte](e.Ctx, 16))(t)
				return func() (err error) {
						return sweep.FirstErr(
							func() (err error) { s, err = e.Ctx.NewStream(); return err },
							func() (err error) { sp, err = e.Ctx.NewStreamWithPriority(-1); return err },
							func() (err error) { e1, err = e.Ctx.NewEvent(); return err },
							func() (err error) { e2, err = e.Ctx.NewEvent(cuda.EventBlockingSync); return err },
							func() error { return e1.Record(s) },
							func() error { return b.Memset8Async(1, s) },
							func() error { return e2.Record(s) },
							func() error { return sp.WaitEvent(e2) },
							func() error { return sp.Do(func(uintptr) error { return nil }, b) },
							func() error { return sp.Synchronize() },
							func() error { return e2.Synchronize() },
							func() error { _, err := s.Query(); return err },
							func() error { _, err := e2.Query(); return err },
							func() error { _, err := cuda.ElapsedTime(e1, e2); return err },
						)
					}, func(t *testing.T, _ error) {
						for _, c := range []interface{ Close() error }{s, sp, e1, e2} {
							if err := c.Close(); err != nil {
								t.Errorf("close: %v", err)
							}
						}
						b.Free()
						sweep.StillWorks(t, "streams and events", e.Ctx, e.S)
					}
			}},
		{Name: "Stream.Close", Covers: []string{"Stream.Close"},
			Prepare: func(t *testing.T, e *sweep.Env) (func() error, func(*testing.T, error)) {
				s := must(e.Ctx.NewStream())(t)
				b := must(cuda.Alloc[uint32](e.Ctx, 64))(t)
				host := make([]uint32, 64)
				if err := b.CopyToHostAsync(host, s); err != nil { // Go memory pinned until s syncs
					t.Fatal(err)
				}
				return s.Close, func(t *testing.T, err error) {
					sweep.CloseAgain(s.Synchronize, s.Close)(t, err)
					b.Free()
				}
			}},
		{Name: "Event.Close", Covers: []string{"Event.Close"},
			Prepare: func(t *testing.T, e *sweep.Env) (func() error, func(*testing.T, error)) {
				ev := must(e.Ctx.NewEvent())(t)
				return ev.Close, sweep.CloseAgain(ev.Synchronize, ev.Close)
			}},
	}
}
