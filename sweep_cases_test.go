package cuda_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/cublas"
	"github.com/gocuda/cuda/cufft"
	"github.com/gocuda/cuda/curand"
	"github.com/gocuda/cuda/nccl"
	"github.com/gocuda/cuda/nvrtc"
	"github.com/gocuda/cuda/safetensors"
)

// closeAgain is the after of a case whose operation is a Close (or Free):
// if it failed, the object stays usable and a second one succeeds.
func closeAgain(use, close func() error) func(t *testing.T, err error) {
	return func(t *testing.T, err error) {
		t.Helper()
		if err == nil {
			return
		}
		if uerr := use(); uerr != nil {
			t.Errorf("after a failed close (%v), the object is unusable: %v", err, uerr)
		}
		if cerr := close(); cerr != nil {
			t.Errorf("closing again after a failed close (%v): %v", err, cerr)
		}
	}
}

// allReduces checks that c still all-reduces b on s, in place.
func allReduces(c *nccl.Comm, b *cuda.DeviceBuffer[float32], s *cuda.Stream) error {
	return firstErr(func() error { return nccl.AllReduce(c, b, b, nccl.Sum, s) }, s.Synchronize)
}

// stillRegistered checks that b is registered with a communicator: its
// Free is refused.
func stillRegistered(b *cuda.DeviceBuffer[float32]) error {
	if err := b.Free(); !errors.Is(err, cuda.ErrInvalidValue) {
		return fmt.Errorf("the buffer is no longer registered: its Free returned %v", err)
	}
	return nil
}

// closeRetried is the after of a case whose operation is the Close of an
// object of several parts (a library's handle and gocuda's memory), which
// a failed Close may have released in part: the error names op, the Close
// the user called; the object is still usable, or (where mayRefuse) it
// refuses use with ErrClosed, handing nothing released to the library;
// and a second Close finishes (the sweep then checks nothing leaked).
func closeRetried(op string, mayRefuse bool, use, close func() error) func(t *testing.T, err error) {
	return func(t *testing.T, err error) {
		t.Helper()
		if err == nil {
			return
		}
		if !strings.Contains(err.Error(), ": "+op+":") {
			t.Errorf("a failed %s: %q names another operation", op, err)
		}
		switch uerr := use(); {
		case uerr == nil:
		case mayRefuse && errors.Is(uerr, cuda.ErrClosed):
		default:
			t.Errorf("after a failed %s (%v), the object is unusable: %v", op, err, uerr)
		}
		if cerr := close(); cerr != nil {
			t.Errorf("closing again after a failed %s (%v): %v", op, err, cerr)
		}
	}
}

// firstErr runs fns in order and returns the first error.
func firstErr(fns ...func() error) error {
	for _, fn := range fns {
		if err := fn(); err != nil {
			return err
		}
	}
	return nil
}

// stagingRoute is a staging case: a transfer of n bytes by route (the
// options that make Upload and Download take it), on a fresh staging
// buffer (cold) or one that made the transfer once already (warm).
func stagingRoute(name string, n int, warm bool, opts cuda.StagingOptions, transfer func(sb *cuda.StagingBuffer, b *cuda.DeviceBuffer[byte], host []byte, s *cuda.Stream) error) sweepCase {
	return sweepCase{
		name:   name,
		covers: []string{"cuda.Upload", "cuda.Download", "cuda.UploadWith", "cuda.DownloadInto"},
		prepare: func(t *testing.T, e *sweepEnv) (func() error, func(*testing.T, error)) {
			sb := must(cuda.NewStagingBufferOptions(nil, 0, opts))(t)
			b := must(cuda.Alloc[byte](e.ctx, n))(t)
			host := random[byte](n)
			if warm {
				if err := transfer(sb, b, host, e.s); err != nil {
					t.Fatalf("warming: %v", err)
				}
			}
			before := sb.Stats()
			return func() error { return transfer(sb, b, host, e.s) }, func(t *testing.T, err error) {
				t.Helper()
				st := sb.Stats()
				moved := st.BytesUp + st.BytesDown - before.BytesUp - before.BytesDown
				done := st.Staged + st.Pipelined + st.Direct - before.Staged - before.Pipelined - before.Direct
				if (err != nil && (moved != 0 || done != 0)) || (err == nil && (moved != int64(n) || done != 1)) {
					t.Errorf("%s: stats %+v after %+v (error %v): counted what failed", name, st, before, err)
				}
				// The same staging buffer still moves data correctly.
				src, got := random[byte](n), make([]byte, n)
				if err := firstErr(
					func() error { return cuda.Upload(sb, b, src, e.s) },
					func() error { return cuda.Download(sb, got, b, e.s) },
				); err != nil || !equal(src, got) {
					t.Errorf("%s: the staging buffer after the failure: %v (data equal: %v)", name, err, equal(src, got))
				}
				if err := sb.Close(); err != nil {
					t.Errorf("closing the staging buffer: %v", err)
				}
				if err := b.Free(); err != nil {
					t.Errorf("freeing: %v", err)
				}
			}
		},
	}
}

func sweepCases() []sweepCase {
	small := cuda.StagingOptions{Pipeline: smallPipeline}
	staged := cuda.StagingOptions{AutoStageMaxBytes: 1 << 30, Pipeline: smallPipeline}
	up := func(sb *cuda.StagingBuffer, b *cuda.DeviceBuffer[byte], host []byte, s *cuda.Stream) error {
		return cuda.Upload(sb, b, host, s)
	}
	down := func(sb *cuda.StagingBuffer, b *cuda.DeviceBuffer[byte], host []byte, s *cuda.Stream) error {
		return cuda.Download(sb, host, b, s)
	}
	with := func(sb *cuda.StagingBuffer, b *cuda.DeviceBuffer[byte], host []byte, s *cuda.Stream) error {
		return cuda.UploadWith(sb, b, len(host), s, func(p []byte) { copy(p, host) })
	}
	into := func(sb *cuda.StagingBuffer, b *cuda.DeviceBuffer[byte], host []byte, s *cuda.Stream) error {
		_, err := cuda.DownloadInto(sb, b, len(host), s)
		return err
	}
	cases := []sweepCase{
		{name: "devices", covers: []string{"cuda.DeviceCount", "cuda.GetDevice", "cuda.Devices", "cuda.DriverVersion", "cuda.DriverLibrary",
			"Device.Name", "Device.TotalMemory", "Device.ComputeCapability", "Device.PCIBusID", "Device.MultiprocessorCount", "Device.Attribute", "Device.CanAccessPeer"},
			prepare: func(t *testing.T, e *sweepEnv) (func() error, func(*testing.T, error)) {
				return func() error {
					return firstErr(
						func() error { _, err := cuda.DeviceCount(); return err },
						func() error { _, err := cuda.Devices(); return err },
						func() error { _, err := cuda.DriverVersion(); return err },
						func() error { _, err := cuda.DriverLibrary(); return err },
						func() error {
							d, err := cuda.GetDevice(1)
							if err != nil {
								return err
							}
							return firstErr(
								func() error { _, err := d.Name(); return err },
								func() error { _, err := d.TotalMemory(); return err },
								func() error { _, err := d.ComputeCapability(); return err },
								func() error { _, err := d.PCIBusID(); return err },
								func() error { _, err := d.MultiprocessorCount(); return err },
								func() error { _, err := d.Attribute(cuda.AttrWarpSize); return err },
								func() error { _, err := d.CanAccessPeer(e.ctx.Device()); return err },
							)
						})
				}, func(*testing.T, error) {}
			}},
		{name: "NewContext", covers: []string{"cuda.NewContext"},
			prepare: func(t *testing.T, e *sweepEnv) (func() error, func(*testing.T, error)) {
				var c *cuda.Context
				return func() (err error) { c, err = cuda.NewContext(e.ctx.Device()); return err },
					func(t *testing.T, _ error) { c.Close() }
			}},
		{name: "Open", covers: []string{"cuda.Open"},
			prepare: func(t *testing.T, e *sweepEnv) (func() error, func(*testing.T, error)) {
				var c *cuda.Context
				var s *cuda.Stream
				return func() (err error) { c, s, err = cuda.Open(e.ctx.Device().Ordinal()); return err },
					func(t *testing.T, err error) {
						if err != nil && (c != nil || s != nil) {
							t.Errorf("Open failed (%v) and returned a context or stream", err)
						}
						s.Close()
						c.Close()
					}
			}},
		{name: "Context.Close", covers: []string{"Context.Close"},
			prepare: func(t *testing.T, e *sweepEnv) (func() error, func(*testing.T, error)) {
				c := must(cuda.NewContext(e.ctx.Device()))(t)
				return c.Close, closeAgain(func() error { _, _, err := c.MemInfo(); return err }, c.Close)
			}},
		{name: "context calls", covers: []string{"Context.Synchronize", "Context.MemInfo", "Context.StreamPriorityRange", "Context.Do"},
			prepare: func(t *testing.T, e *sweepEnv) (func() error, func(*testing.T, error)) {
				return func() error {
					return firstErr(e.ctx.Synchronize,
						func() error { _, _, err := e.ctx.MemInfo(); return err },
						func() error { _, _, err := e.ctx.StreamPriorityRange(); return err },
						func() error { return e.ctx.Do(func() error { _, _, err := e.ctx.MemInfo(); return err }) })
				}, func(t *testing.T, _ error) { stillWorks(t, "context calls", e.ctx, e.s) }
			}},
		{name: "streams and events", covers: []string{"Context.NewStream", "Context.NewStreamWithPriority", "Context.NewEvent", "Stream.Synchronize",
			"Stream.Query", "Stream.WaitEvent", "Stream.Do", "Event.Record", "Event.Synchronize", "Event.Query", "cuda.ElapsedTime"},
			prepare: func(t *testing.T, e *sweepEnv) (func() error, func(*testing.T, error)) {
				var s, sp *cuda.Stream
				var e1, e2 *cuda.Event
				b := must(cuda.Alloc[byte](e.ctx, 16))(t)
				return func() (err error) {
						return firstErr(
							func() (err error) { s, err = e.ctx.NewStream(); return err },
							func() (err error) { sp, err = e.ctx.NewStreamWithPriority(-1); return err },
							func() (err error) { e1, err = e.ctx.NewEvent(); return err },
							func() (err error) { e2, err = e.ctx.NewEvent(cuda.EventBlockingSync); return err },
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
						stillWorks(t, "streams and events", e.ctx, e.s)
					}
			}},
		{name: "Stream.Close", covers: []string{"Stream.Close"},
			prepare: func(t *testing.T, e *sweepEnv) (func() error, func(*testing.T, error)) {
				s := must(e.ctx.NewStream())(t)
				b := must(cuda.Alloc[uint32](e.ctx, 64))(t)
				host := make([]uint32, 64)
				if err := b.CopyToHostAsync(host, s); err != nil { // Go memory pinned until s syncs
					t.Fatal(err)
				}
				return s.Close, func(t *testing.T, err error) {
					closeAgain(s.Synchronize, s.Close)(t, err)
					b.Free()
				}
			}},
		{name: "Event.Close", covers: []string{"Event.Close"},
			prepare: func(t *testing.T, e *sweepEnv) (func() error, func(*testing.T, error)) {
				ev := must(e.ctx.NewEvent())(t)
				return ev.Close, closeAgain(ev.Synchronize, ev.Close)
			}},
		{name: "allocate", covers: []string{"cuda.Alloc", "cuda.Zeroed", "cuda.FromHost"},
			prepare: func(t *testing.T, e *sweepEnv) (func() error, func(*testing.T, error)) {
				var a, z, h *cuda.DeviceBuffer[int32]
				return func() error {
						return firstErr(
							func() (err error) { a, err = cuda.Alloc[int32](e.ctx, 100); return err },
							func() (err error) { z, err = cuda.Zeroed[int32](e.ctx, 100); return err },
							func() (err error) { h, err = cuda.FromHost(e.ctx, random[int32](100)); return err },
						)
					}, func(t *testing.T, _ error) {
						for _, b := range []*cuda.DeviceBuffer[int32]{a, z, h} {
							if err := b.Free(); err != nil {
								t.Errorf("free: %v", err)
							}
						}
					}
			}},
		{name: "managed memory", covers: []string{"cuda.AllocManaged", "ManagedBuffer.Prefetch", "ManagedBuffer.Advise",
			"ManagedBuffer.Attributes", "ManagedBuffer.Free"},
			prepare: func(t *testing.T, e *sweepEnv) (func() error, func(*testing.T, error)) {
				var m *cuda.ManagedBuffer[int32]
				return func() error {
						return firstErr(
							func() (err error) { m, err = cuda.AllocManaged[int32](e.ctx, 1000, cuda.AttachGlobal); return err },
							func() error { return m.Prefetch(cuda.OnDevice(e.ctx.Device()), e.s) },
							func() error { return m.Advise(cuda.AdvisePreferredLocation, cuda.OnHost()) },
							func() error { _, err := m.Attributes(); return err },
							e.s.Synchronize,
							m.Free,
						)
					}, func(t *testing.T, _ error) {
						if err := m.Free(); err != nil {
							t.Errorf("free: %v", err)
						}
						stillWorks(t, "managed memory", e.ctx, e.s)
					}
			}},
		{name: "growable buffers", covers: []string{"cuda.NewGrowableBuffer", "GrowableBuffer.Resize", "GrowableBuffer.Buffer", "GrowableBuffer.Free"},
			prepare: func(t *testing.T, e *sweepEnv) (func() error, func(*testing.T, error)) {
				var g *cuda.GrowableBuffer[int32]
				data := random[int32](3 << 20)
				return func() error {
						var b *cuda.DeviceBuffer[int32]
						return firstErr(
							func() (err error) { g, err = cuda.NewGrowableBuffer[int32](e.ctx, 16<<20); return err },
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
						stillWorks(t, "growable buffers", e.ctx, e.s)
					}
			}},
		{name: "stream-ordered memory", covers: []string{"cuda.AllocAsync", "DeviceBuffer.FreeOn"},
			prepare: func(t *testing.T, e *sweepEnv) (func() error, func(*testing.T, error)) {
				var b *cuda.DeviceBuffer[int32]
				return func() (err error) {
						if b, err = cuda.AllocAsync[int32](e.s, 100); err != nil {
							return err
						}
						return firstErr(func() error { return b.Memset32Async(1, e.s) }, func() error { return b.FreeOn(e.s) })
					}, func(t *testing.T, _ error) {
						if err := errors.Join(b.Free(), e.s.Synchronize()); err != nil {
							t.Errorf("free: %v", err)
						}
					}
			}},
		{name: "stream-ordered reuse", covers: []string{"cuda.AllocAsync", "DeviceBuffer.Free", "Stream.Synchronize", "Context.Synchronize"},
			prepare: func(t *testing.T, e *sweepEnv) (func() error, func(*testing.T, error)) {
				var bufs []*cuda.DeviceBuffer[int32]
				round := func() error {
					b, err := cuda.AllocAsync[int32](e.s, 100)
					if err != nil {
						return err
					}
					bufs = append(bufs, b)
					return firstErr(func() error { return b.Memset32Async(1, e.s) }, b.Free)
				}
				// Three frees of a size keep two blocks on the stream, which
				// the next rounds reuse, and the synchronizes give back.
				return func() error {
						return firstErr(round, round, round, e.s.Synchronize, round, round, round, e.ctx.Synchronize)
					}, func(t *testing.T, _ error) {
						for _, b := range bufs {
							if err := b.Free(); err != nil {
								t.Errorf("free: %v", err)
							}
						}
						b, err := cuda.AllocAsync[int32](e.s, 100)
						got := make([]int32, 100)
						if err == nil {
							err = errors.Join(b.Memset32Async(7, e.s), b.CopyToHostAsync(got, e.s), b.Free(), e.s.Synchronize(), e.ctx.Synchronize())
						}
						if err != nil || got[99] != 7 {
							t.Errorf("the stream's allocations afterwards: %v, read %d, want 7", err, got[99])
						}
					}
			}},
		{name: "memory pools", covers: []string{"Context.NewMemPool", "Context.DefaultMemPool", "cuda.AllocFromPool",
			"MemPool.SetReleaseThreshold", "MemPool.ReleaseThreshold", "MemPool.TrimTo", "MemPool.Stats", "MemPool.ResetHighWater", "MemPool.SetAccess"},
			prepare: func(t *testing.T, e *sweepEnv) (func() error, func(*testing.T, error)) {
				var p, d *cuda.MemPool
				var b *cuda.DeviceBuffer[int32]
				return func() (err error) {
						if p, err = e.ctx.NewMemPool(); err != nil {
							return err
						}
						if d, err = e.ctx.DefaultMemPool(); err != nil {
							return err
						}
						if b, err = cuda.AllocFromPool[int32](p, e.s, 100); err != nil {
							return err
						}
						return firstErr(
							func() error { return p.SetReleaseThreshold(1 << 20) },
							func() error { _, err := p.ReleaseThreshold(); return err },
							func() error { return b.Free() },
							e.s.Synchronize,
							func() error { return p.TrimTo(0) },
							func() error { _, err := d.Stats(); return err },
							p.ResetHighWater,
							func() error { return p.SetAccess(e.ctx1, true) },
						)
					}, func(t *testing.T, _ error) {
						if err := errors.Join(b.Free(), e.s.Synchronize(), p.Close(), d.Close()); err != nil {
							t.Errorf("cleanup: %v", err)
						}
					}
			}},
		{name: "MemPool.Close", covers: []string{"MemPool.Close"},
			prepare: func(t *testing.T, e *sweepEnv) (func() error, func(*testing.T, error)) {
				p := must(e.ctx.NewMemPool())(t)
				return p.Close, closeAgain(func() error { _, err := p.Stats(); return err }, p.Close)
			}},
		{name: "graphs", covers: []string{"Stream.Capture", "Graph.Nodes", "Graph.WriteDot", "Graph.Instantiate", "GraphExec.Launch", "GraphExec.Update"},
			prepare: func(t *testing.T, e *sweepEnv) (func() error, func(*testing.T, error)) {
				b := must(cuda.Zeroed[int32](e.ctx, 64))(t)
				var g, g2 *cuda.Graph
				var x *cuda.GraphExec
				memset := func(v uint32) func() error { return func() error { return b.Memset32Async(v, e.s) } }
				return func() (err error) {
						if g, err = e.s.Capture(cuda.CaptureGlobal, memset(1)); err != nil {
							return err
						}
						if _, err = g.Nodes(); err != nil {
							return err
						}
						if err = g.WriteDot(io.Discard, false); err != nil {
							return err
						}
						if x, err = g.Instantiate(); err != nil {
							return err
						}
						if err = x.Launch(e.s); err != nil {
							return err
						}
						if g2, err = e.s.Capture(cuda.CaptureRelaxed, memset(2)); err != nil {
							return err
						}
						_, err = x.Update(g2)
						return firstErr(func() error { return err }, func() error { return x.Launch(e.s) }, e.s.Synchronize)
					}, func(t *testing.T, _ error) {
						if err := errors.Join(e.s.Synchronize(), x.Close(), g.Close(), g2.Close(), b.Free()); err != nil {
							t.Errorf("cleanup: %v", err)
						}
					}
			}},
		{name: "graphs built", covers: []string{"Context.NewGraph", "Graph.AddKernel", "Graph.AddCopy", "Graph.AddMemset", "Graph.AddEmpty",
			"Graph.AddEventRecord", "Graph.AddEventWait", "Graph.AddAlloc", "Graph.AddFree", "Graph.NewCondition", "Graph.AddIf", "Graph.AddWhile",
			"Graph.AddSetCondition", "Graph.AddCountDown", "GraphExec.SetKernelParams", "Graph.AddHost"},
			prepare: func(t *testing.T, e *sweepEnv) (func() error, func(*testing.T, error)) {
				needDeviceRuntime(t)
				mod := must(e.ctx.LoadModule(e.ptx))(t)
				saxpy := must(mod.Function("saxpy"))(t)
				x := must(cuda.Zeroed[float32](e.ctx, 64))(t)
				w := must(cuda.Zeroed[uint32](e.ctx, 1))(t)
				// The context links and loads its set-condition kernel once,
				// and keeps it: load it before the sweep.
				pre := must(e.ctx.NewGraph())(t)
				must(pre.AddSetCondition(nil, must(pre.NewCondition(0))(t), w))(t)
				if err := pre.Close(); err != nil {
					t.Fatal(err)
				}
				ev := must(e.ctx.NewEvent())(t)
				var g *cuda.Graph
				var x2 *cuda.GraphExec
				// The kernel node has a launch attribute (the context's
				// greatest priority), which the driver sets once the node
				// is added, and which SetKernelParams is given again.
				cfg := cuda.LaunchConfigFor(64, nil)
				_, cfg.Priority = must2(e.ctx.StreamPriorityRange())(t)
				return func() (err error) {
						if g, err = e.ctx.NewGraph(); err != nil {
							return err
						}
						a, m, err := g.AddAlloc(nil, 256)
						if err != nil {
							return err
						}
						set, err := g.AddMemset([]*cuda.GraphNode{a}, m, 0, 4)
						if err != nil {
							return err
						}
						k, err := g.AddKernel([]*cuda.GraphNode{set}, saxpy, cfg, float32(1), m, x, uint32(64))
						if err != nil {
							return err
						}
						cp, err := g.AddCopy([]*cuda.GraphNode{k}, m, x)
						if err != nil {
							return err
						}
						if _, err = g.AddFree([]*cuda.GraphNode{cp}, m); err != nil {
							return err
						}
						rec, err := g.AddEventRecord([]*cuda.GraphNode{k}, ev)
						if err != nil {
							return err
						}
						wait, err := g.AddEventWait([]*cuda.GraphNode{rec}, ev)
						if err != nil {
							return err
						}
						host, err := g.AddHost([]*cuda.GraphNode{wait}, func() {})
						if err != nil {
							return err
						}
						join, err := g.AddEmpty([]*cuda.GraphNode{host})
						if err != nil {
							return err
						}
						c, err := g.NewCondition(0)
						if err != nil {
							return err
						}
						sc, err := g.AddSetCondition([]*cuda.GraphNode{join}, c, w)
						if err != nil {
							return err
						}
						if _, _, err = g.AddIf([]*cuda.GraphNode{sc}, c); err != nil {
							return err
						}
						c2, err := g.NewCondition(0)
						if err != nil {
							return err
						}
						_, body, err := g.AddWhile(nil, c2)
						if err != nil {
							return err
						}
						if _, err = body.AddCountDown(nil, c2, w); err != nil {
							return err
						}
						if x2, err = g.Instantiate(); err != nil {
							return err
						}
						if err = x2.SetKernelParams(k, cfg, float32(2), m, x, uint32(64)); err != nil {
							return err
						}
						return firstErr(func() error { return x2.Launch(e.s) }, e.s.Synchronize)
					}, func(t *testing.T, _ error) {
						if err := errors.Join(e.s.Synchronize(), x2.Close(), g.Close(), ev.Close(), x.Free(), w.Free(), mod.Close()); err != nil {
							t.Errorf("cleanup: %v", err)
						}
						cuda.CloseConditionKernel(e.ctx)
					}
			}},
		{name: "set-condition kernel", covers: []string{"Graph.AddSetCondition"},
			// The kernel linked with the device runtime and loaded: each
			// run starts without it and ends closing it.
			prepare: func(t *testing.T, e *sweepEnv) (func() error, func(*testing.T, error)) {
				needDeviceRuntime(t)
				cuda.CloseConditionKernel(e.ctx)
				w := must(cuda.Zeroed[uint32](e.ctx, 1))(t)
				g := must(e.ctx.NewGraph())(t)
				c := must(g.NewCondition(0))(t)
				return func() error {
						_, err := g.AddSetCondition(nil, c, w)
						return err
					}, func(t *testing.T, _ error) {
						if err := errors.Join(g.Close(), w.Free()); err != nil {
							t.Errorf("cleanup: %v", err)
						}
						cuda.CloseConditionKernel(e.ctx)
					}
			}},
		{name: "Graph.Close", covers: []string{"Graph.Close"},
			prepare: func(t *testing.T, e *sweepEnv) (func() error, func(*testing.T, error)) {
				g := must(e.s.Capture(cuda.CaptureGlobal, func() error { return nil }))(t)
				return g.Close, closeAgain(func() error { _, err := g.Nodes(); return err }, g.Close)
			}},
		{name: "GraphExec.Close", covers: []string{"GraphExec.Close"},
			prepare: func(t *testing.T, e *sweepEnv) (func() error, func(*testing.T, error)) {
				g := must(e.s.Capture(cuda.CaptureGlobal, func() error { return nil }))(t)
				x := must(g.Instantiate())(t)
				return x.Close, func(t *testing.T, err error) {
					closeAgain(func() error { return x.Launch(e.s) }, x.Close)(t, err)
					if err := errors.Join(e.s.Synchronize(), g.Close()); err != nil {
						t.Errorf("cleanup: %v", err)
					}
				}
			}},
		{name: "DeviceBuffer.Free stream-ordered", covers: []string{"DeviceBuffer.Free"},
			prepare: func(t *testing.T, e *sweepEnv) (func() error, func(*testing.T, error)) {
				b := must(cuda.AllocAsync[byte](e.s, 64))(t)
				after := closeAgain(func() error { return b.CopyFromHost(make([]byte, 64)) }, b.Free)
				return b.Free, func(t *testing.T, err error) {
					after(t, err)
					// The free is a step of the stream: done once it is, and
					// only then gone from the fake's count.
					e.s.Synchronize()
				}
			}},
		{name: "DeviceBuffer.Free", covers: []string{"DeviceBuffer.Free"},
			prepare: func(t *testing.T, e *sweepEnv) (func() error, func(*testing.T, error)) {
				b := must(cuda.Alloc[byte](e.ctx, 64))(t)
				return b.Free, closeAgain(func() error { return b.CopyFromHost(make([]byte, 64)) }, b.Free)
			}},
		{name: "copies", covers: []string{"DeviceBuffer.CopyFromHost", "DeviceBuffer.CopyToHost", "DeviceBuffer.ToHost", "DeviceBuffer.CopyFromDevice",
			"DeviceBuffer.Memset8", "DeviceBuffer.Memset16", "DeviceBuffer.Memset32", "DeviceBuffer.CopyFromHostAsync",
			"DeviceBuffer.CopyToHostAsync", "DeviceBuffer.CopyFromDeviceAsync", "DeviceBuffer.Memset8Async",
			"DeviceBuffer.Memset16Async", "DeviceBuffer.Memset32Async"},
			prepare: func(t *testing.T, e *sweepEnv) (func() error, func(*testing.T, error)) {
				b, c := must(cuda.Alloc[uint32](e.ctx, 64))(t), must(cuda.Alloc[uint32](e.ctx, 64))(t)
				host := random[uint32](64)
				sl := must(b.Slice(8, 16))(t)
				view := must(cuda.ViewAs[uint16](c))(t)
				return func() error {
						return firstErr(
							func() error { return b.CopyFromHost(host) },
							func() error { return sl.CopyToHost(make([]uint32, 16)) },
							func() error { _, err := sl.ToHost(); return err },
							func() error { return c.CopyFromDevice(b) },
							func() error { return view.Memset16(7) },
							func() error { return b.Memset8(1) },
							func() error { return sl.Memset32(2) },
							func() error { return b.CopyFromHostAsync(host, e.s) },
							func() error { return sl.CopyToHostAsync(make([]uint32, 16), e.s) },
							func() error { return c.CopyFromDeviceAsync(b, e.s) },
							func() error { return b.Memset8Async(3, e.s) },
							func() error { return view.Memset16Async(4, e.s) },
							func() error { return sl.Memset32Async(5, e.s) },
							e.s.Synchronize,
						)
					}, func(t *testing.T, err error) {
						e.s.Synchronize() // a failed synchronize leaves its copies queued
						// A buffer whose copy failed still copies, then frees.
						got := make([]uint32, 64)
						if err := firstErr(func() error { return b.CopyFromHost(host) }, func() error { return b.CopyToHost(got) }); err != nil || !equal(got, host) {
							t.Errorf("copies: the buffer after the failure: %v", err)
						}
						b.Free()
						c.Free()
					}
			}},
		{name: "pinned and registered", covers: []string{"cuda.AllocPinned", "cuda.Register"},
			prepare: func(t *testing.T, e *sweepEnv) (func() error, func(*testing.T, error)) {
				var p *cuda.PinnedBuffer[uint32]
				var r *cuda.Registered[uint32]
				host := make([]uint32, 1024)
				b := must(cuda.Alloc[uint32](e.ctx, 1024))(t)
				return func() error {
						return firstErr(
							func() (err error) { p, err = cuda.AllocPinned[uint32](e.ctx, 1024); return err },
							func() (err error) { r, err = cuda.Register(e.ctx, host); return err },
							func() error { return b.CopyFromHost(p.Data()) },
							func() error { return b.CopyToHostAsync(host, e.s) },
							e.s.Synchronize,
						)
					}, func(t *testing.T, _ error) {
						e.s.Synchronize()
						if err := firstErr(p.Free, r.Close, b.Free); err != nil {
							t.Errorf("release: %v", err)
						}
					}
			}},
		{name: "PinnedBuffer.Free", covers: []string{"PinnedBuffer.Free"},
			prepare: func(t *testing.T, e *sweepEnv) (func() error, func(*testing.T, error)) {
				p := must(cuda.AllocPinned[byte](e.ctx, 4096))(t)
				return p.Free, closeAgain(func() error {
					if p.Data() == nil {
						return errors.New("no memory")
					}
					return nil
				}, p.Free)
			}},
		{name: "Registered.Close", covers: []string{"Registered.Close"},
			prepare: func(t *testing.T, e *sweepEnv) (func() error, func(*testing.T, error)) {
				r := must(cuda.Register(e.ctx, make([]byte, 8192)))(t)
				return r.Close, closeAgain(func() error { return nil }, r.Close)
			}},
		stagingRoute("Upload direct cold", 16<<10, false, small, up),
		stagingRoute("Upload staged cold", 16<<10, false, staged, up),
		stagingRoute("Upload staged warm", 16<<10, true, staged, up),
		stagingRoute("Upload pipelined cold", 512<<10, false, small, up),
		stagingRoute("Upload pipelined warm", 512<<10, true, small, up),
		stagingRoute("Download direct cold", 16<<10, false, small, down),
		stagingRoute("Download staged cold", 16<<10, false, staged, down),
		stagingRoute("Download staged warm", 16<<10, true, staged, down),
		stagingRoute("Download pipelined cold", 512<<10, false, small, down),
		stagingRoute("Download pipelined warm", 512<<10, true, small, down),
		stagingRoute("UploadWith cold", 16<<10, false, small, with),
		stagingRoute("UploadWith warm", 16<<10, true, small, with),
		stagingRoute("DownloadInto cold", 16<<10, false, small, into),
		stagingRoute("DownloadInto warm", 16<<10, true, small, into),
		{name: "IPC", covers: []string{"DeviceBuffer.IPCHandle", "Event.IPCHandle", "cuda.OpenIPC", "cuda.OpenIPCEvent"},
			prepare: func(t *testing.T, e *sweepEnv) (func() error, func(*testing.T, error)) {
				b := must(cuda.Alloc[float32](e.ctx, 16))(t)
				ev := must(e.ctx.NewEvent(cuda.EventDisableTiming, cuda.EventInterprocess))(t)
				e.fake.SetIPCSameProcess(true)
				var o *cuda.DeviceBuffer[float32]
				return func() error {
						return firstErr(
							func() error {
								h, err := b.IPCHandle()
								if err == nil {
									o, err = cuda.OpenIPC[float32](e.ctx, h, 16)
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
								if _, err := cuda.OpenIPCEvent(e.ctx, h); !errors.Is(err, cuda.Result(201)) {
									return err
								}
								return nil
							},
						)
					}, func(t *testing.T, _ error) {
						e.fake.SetIPCSameProcess(false)
						if o != nil && o.Free() != nil {
							if err := o.Free(); err != nil {
								t.Errorf("closing the mapping again: %v", err)
							}
						}
						b.Free()
						ev.Close()
					}
			}},
		{name: "readers and writers", covers: []string{"cuda.ReadFrom", "cuda.WriteTo", "DeviceBuffer.ReadFrom", "DeviceBuffer.WriteTo"}, maxNth: 2,
			prepare: func(t *testing.T, e *sweepEnv) (func() error, func(*testing.T, error)) {
				// A context of its own: the one the methods' staging
				// buffer is kept in, and freed with.
				ctx := must(cuda.NewContext(e.ctx.Device()))(t)
				data := make([]byte, 3<<20+5)
				b := must(cuda.Alloc[byte](ctx, len(data)))(t)
				s := must(ctx.NewStream())(t)
				sb := new(cuda.StagingBuffer)
				c := cuda.IOConfig{Staging: sb, Stream: s}
				return func() error {
						return firstErr(
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
		{name: "Context.Close after ReadFrom", covers: []string{"Context.Close"},
			prepare: func(t *testing.T, e *sweepEnv) (func() error, func(*testing.T, error)) {
				// Close frees the staging buffer the context keeps for
				// ReadFrom and WriteTo; failing, it leaves it usable.
				ctx := must(cuda.NewContext(e.ctx.Device()))(t)
				b := must(cuda.Alloc[byte](ctx, 1<<20))(t)
				use := func() error { _, err := b.ReadFrom(bytes.NewReader(make([]byte, 1<<20))); return err }
				if err := use(); err != nil {
					t.Fatal(err)
				}
				b.Free()
				return ctx.Close, closeAgain(func() error {
					b := must(cuda.Alloc[byte](ctx, 1<<20))(t)
					defer b.Free()
					_, err := b.ReadFrom(bytes.NewReader(make([]byte, 1<<20)))
					return err
				}, ctx.Close)
			}},
		{name: "safetensors", covers: []string{"File.Load", "Weights.Free", "Weights.String", "File.String", "Header.String"}, maxNth: 2,
			prepare: func(t *testing.T, e *sweepEnv) (func() error, func(*testing.T, error)) {
				// c is misaligned in the file (I16 at byte 11): loaded whole,
				// the file is two reads, c's at an aligned place.
				path := filepath.Join(t.TempDir(), "w.safetensors")
				header := `{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"U8","shape":[3],"data_offsets":[8,11]},"c":{"dtype":"I16","shape":[1],"data_offsets":[11,13]}}`
				file := append(binary.LittleEndian.AppendUint64(nil, uint64(len(header))), header...)
				if err := os.WriteFile(path, append(file, make([]byte, 13)...), 0o644); err != nil {
					t.Fatal(err)
				}
				f := must(safetensors.Open(path))(t)
				sb := new(cuda.StagingBuffer)
				var all, one *safetensors.Weights
				c := cuda.IOConfig{Staging: sb, Stream: e.s}
				return func() error {
						return firstErr(
							func() (err error) { all, err = f.Load(e.ctx, c); return err },
							func() (err error) { one, err = f.Load(e.ctx, c, "b"); return err },
							func() error { _, _, _ = all.String(), f.String(), f.Header.String(); return nil },
							func() error { return all.Free() },
							func() error { return one.Free() },
						)
					}, func(t *testing.T, _ error) {
						for _, w := range []*safetensors.Weights{all, one} {
							if err := w.Free(); err != nil {
								if err := w.Free(); err != nil {
									t.Errorf("freeing the weights again: %v", err)
								}
							}
						}
						if err := sb.Close(); err != nil && sb.Close() != nil {
							t.Errorf("closing the staging buffer: %v", err)
						}
						f.Close()
					}
			}},
		{name: "safetensors.Save", covers: []string{"safetensors.From", "safetensors.Save", "safetensors.SaveFile"}, maxNth: 2,
			prepare: func(t *testing.T, e *sweepEnv) (func() error, func(*testing.T, error)) {
				a := must(cuda.FromHost(e.ctx, []float32{1, 2}))(t)
				b := must(cuda.FromHost(e.ctx, []uint8{3, 4, 5}))(t)
				sb := new(cuda.StagingBuffer)
				c := cuda.IOConfig{Staging: sb, Stream: e.s}
				path := filepath.Join(t.TempDir(), "saved.safetensors")
				var buf bytes.Buffer
				return func() error {
						sources := []safetensors.Source{safetensors.From("a", a, 2), safetensors.From("b", b, 3)}
						return firstErr(
							func() error { return safetensors.Save(&buf, sources, map[string]string{"format": "pt"}, c) },
							func() error { return safetensors.SaveFile(path, sources, nil, c) },
						)
					}, func(t *testing.T, err error) {
						if _, serr := os.Stat(path); err != nil && !errors.Is(serr, os.ErrNotExist) {
							t.Errorf("a failed save left its file (%v)", serr)
						}
						if err == nil {
							if _, err := safetensors.Parse(bytes.NewReader(buf.Bytes()), int64(buf.Len())); err != nil {
								t.Errorf("Save's file does not parse: %v", err)
							}
						}
						got := make([]float32, 2)
						if err := a.CopyToHost(got); err != nil || got[1] != 2 {
							t.Errorf("the saved buffer no longer reads: %v %v", got, err)
						}
						a.Free()
						b.Free()
						if err := sb.Close(); err != nil && sb.Close() != nil {
							t.Errorf("closing the staging buffer: %v", err)
						}
					}
			}},
		{name: "staging memory", covers: []string{"cuda.NewStagingBuffer", "StagingBuffer.Reserve", "StagingBuffer.ShrinkToFit", "StagingBuffer.Close"},
			prepare: func(t *testing.T, e *sweepEnv) (func() error, func(*testing.T, error)) {
				var sb *cuda.StagingBuffer
				return func() error {
						return firstErr(
							func() (err error) { sb, err = cuda.NewStagingBuffer(e.ctx, 64<<10); return err },
							func() error { return sb.Reserve(e.ctx, 256<<10) },
							func() error { return sb.ShrinkToFit() },
							func() error { return sb.Reserve(e.ctx, 64<<10) },
							func() error { return sb.Close() },
						)
					}, func(t *testing.T, err error) {
						if sb != nil {
							for range 2 { // a failed Close or ShrinkToFit: again
								if sb.Close() == nil {
									break
								}
							}
							if err := sb.Close(); err != nil {
								t.Errorf("closing the staging buffer: %v", err)
							}
						}
					}
			}},
		{name: "staging memory with options", covers: []string{"cuda.NewStagingBufferOptions"},
			prepare: func(t *testing.T, e *sweepEnv) (func() error, func(*testing.T, error)) {
				var sb *cuda.StagingBuffer
				return func() (err error) {
						sb, err = cuda.NewStagingBufferOptions(e.ctx, 64<<10, cuda.StagingOptions{Pipeline: smallPipeline})
						return err
					}, func(t *testing.T, err error) {
						if (sb == nil) == (err == nil) {
							t.Errorf("NewStagingBufferOptions returned %v and error %v: want one of them", sb, err)
						}
						if sb != nil {
							if sb.Options().Pipeline != smallPipeline {
								t.Errorf("options %+v: not the pipeline given", sb.Options())
							}
							if err := sb.Close(); err != nil {
								t.Errorf("closing the staging buffer: %v", err)
							}
						}
					}
			}},
		{name: "Calibrate", covers: []string{"StagingBuffer.Calibrate"}, maxNth: 1,
			prepare: func(t *testing.T, e *sweepEnv) (func() error, func(*testing.T, error)) {
				// Small: the sweep calibrates once for each failure.
				restore := cuda.SetCalibrateScale(8<<20, 100*time.Microsecond)
				sb := new(cuda.StagingBuffer)
				return func() error { _, err := sb.Calibrate(e.ctx, nil, cuda.CalibrateSizes(64<<10, 4<<20)); return err }, func(t *testing.T, _ error) {
					restore()
					if err := sb.Close(); err != nil {
						t.Errorf("close: %v", err)
					}
				}
			}},
		{name: "modules and launches", covers: []string{"Context.LoadModule", "Module.Function", "Function.Attribute",
			"Function.SetAttribute", "Function.Launch", "cuda.Global", "Function.MaxActiveBlocks", "Function.SuggestBlockSize",
			"Function.SuggestBlockSizeFunc", "Function.AvailableDynamicSharedMem", "Function.MaxCooperativeBlocks", "Function.MaxActiveClusters"},
			prepare: func(t *testing.T, e *sweepEnv) (func() error, func(*testing.T, error)) {
				var m *cuda.Module
				a := must(cuda.FromHost(e.ctx, random[float32](300)))(t)
				return func() error {
						var fn *cuda.Function
						return firstErr(
							func() (err error) { m, err = e.ctx.LoadModule(e.ptx, cuda.JITLineInfo()); return err },
							func() (err error) { fn, err = m.Function("vadd_f32"); return err },
							func() error { _, err := fn.Attribute(cuda.FuncNumRegs); return err },
							func() error { return fn.SetAttribute(cuda.FuncMaxDynamicSharedSize, 1024) },
							func() error { _, err := fn.MaxActiveBlocks(256, 0); return err },
							func() error { _, err := fn.SuggestBlockSize(512, 0); return err },
							func() error { _, err := fn.SuggestBlockSizeFunc(func(n int) int { return 4 * n }, 256); return err },
							func() error { _, err := fn.AvailableDynamicSharedMem(2, 128); return err },
							func() error {
								g, err := cuda.Global[uint32](m, "table")
								if err != nil {
									return err
								}
								return g.CopyFromHost([]uint32{1, 2, 3, 4})
							},
							func() error { _, err := fn.MaxCooperativeBlocks(256, 0); return err },
							func() error {
								_, err := fn.MaxActiveClusters(cuda.LaunchConfig{Block: cuda.Dim3{X: 128}, Cluster: cuda.Dim3{X: 2}})
								return err
							},
							func() error { return fn.Launch(cuda.LaunchConfigFor(300, e.s), a, a, a, uint32(300)) },
							func() error {
								// Every attribute: the launch checks the device, the
								// kernel's occupancy and the priorities first.
								cfg := cuda.LaunchConfigFor(300, e.s)
								cfg.Cooperative, cfg.Cluster, cfg.ClusterPolicy, cfg.Priority = true, cuda.Dim3{X: 2}, cuda.ClusterPolicySpread, -1
								return fn.Launch(cfg, a, a, a, uint32(300))
							},
							e.s.Synchronize,
						)
					}, func(t *testing.T, _ error) {
						e.s.Synchronize()
						if err := m.Close(); err != nil {
							t.Errorf("module close: %v", err)
						}
						a.Free()
						stillWorks(t, "modules", e.ctx, e.s)
					}
			}},
		{name: "libraries", covers: []string{"cuda.LoadLibrary", "Library.Module", "Library.Close"},
			prepare: func(t *testing.T, e *sweepEnv) (func() error, func(*testing.T, error)) {
				var lib *cuda.Library
				a := must(cuda.FromHost(e.ctx, random[float32](300)))(t)
				return func() error {
						var m *cuda.Module
						var fn *cuda.Function
						return firstErr(
							func() (err error) { lib, err = cuda.LoadLibrary(e.ptx, cuda.JITLineInfo()); return err },
							func() (err error) { m, err = lib.Module(e.ctx); return err },
							func() (err error) { fn, err = m.Function("vadd_f32"); return err },
							func() error { _, err := cuda.Global[uint32](m, "table"); return err },
							func() error { return fn.Launch(cuda.LaunchConfigFor(300, e.s), a, a, a, uint32(300)) },
							e.s.Synchronize,
							lib.Close,
						)
					}, func(t *testing.T, _ error) {
						e.s.Synchronize()
						if err := lib.Close(); err != nil {
							t.Errorf("library close: %v", err)
						}
						a.Free()
						stillWorks(t, "libraries", e.ctx, e.s)
					}
			}},
		{name: "Module.Close", covers: []string{"Module.Close"},
			prepare: func(t *testing.T, e *sweepEnv) (func() error, func(*testing.T, error)) {
				m := must(e.ctx.LoadModule(e.ptx))(t)
				must(cuda.Global[uint32](m, "table"))(t)
				return m.Close, closeAgain(func() error { _, err := m.Function("empty"); return err }, m.Close)
			}},
		{name: "peers", covers: []string{"Context.EnablePeerAccess", "Context.DisablePeerAccess", "cuda.CopyPeer", "cuda.CopyPeerAsync"},
			prepare: func(t *testing.T, e *sweepEnv) (func() error, func(*testing.T, error)) {
				src := must(cuda.FromHost(e.ctx, random[int32](1000)))(t)
				dst := must(cuda.Alloc[int32](e.ctx1, 1000))(t)
				return func() error {
						return firstErr(
							func() error { _, err := cuda.CopyPeer(dst, src); return err },
							func() error { return e.ctx1.EnablePeerAccess(e.ctx) },
							func() error { _, err := cuda.CopyPeerAsync(dst, src, e.s1); return err },
							e.s1.Synchronize,
							func() error { return e.ctx1.DisablePeerAccess(e.ctx) },
						)
					}, func(t *testing.T, _ error) {
						e.s1.Synchronize()
						e.ctx1.DisablePeerAccess(e.ctx)
						src.Free()
						dst.Free()
						stillWorks(t, "peers", e.ctx1, e.s1)
					}
			}},
		{name: "nccl", covers: []string{"nccl.NewComms", "nccl.NewUniqueID", "nccl.NewComm", "nccl.AllReduce", "nccl.Broadcast",
			"nccl.Reduce", "nccl.AllGather", "nccl.ReduceScatter", "nccl.Group", "nccl.Version", "Comm.Close",
			"nccl.ShareUniqueID", "nccl.NewCommFromLaunch", "nccl.Send", "nccl.Recv", "nccl.AllToAll", "nccl.NewCommContext", "Comm.Split",
			"Comm.Register", "Registration.Close", "nccl.Alloc", "Allocation.Free", "Comm.Err", "Comm.Wait"},
			// The collectives run on a communicator of one rank: in one of
			// two, a rank whose call fails leaves the other's waiting for
			// it, as NCCL's do (Comm.Abort is the way out, not Close).
			prepare: func(t *testing.T, e *sweepEnv) (func() error, func(*testing.T, error)) {
				var comms []*nccl.Comm
				var one, launched, split, lsplit *nccl.Comm
				var reg *nccl.Registration
				var mem *nccl.Allocation
				b, g := must(cuda.FromHost(e.ctx, []float32{1, 2}))(t), must(cuda.Alloc[float32](e.ctx, 2))(t)
				return func() error {
						return firstErr(
							func() error { _, err := nccl.Version(); return err },
							func() (err error) { comms, err = nccl.NewComms([]*cuda.Context{e.ctx, e.ctx1}); return err },
							func() error { return firstErr(comms[0].Close, comms[1].Close) },
							func() error {
								id, err := nccl.NewUniqueID()
								if err != nil {
									return err
								}
								one, err = nccl.NewComm(e.ctx, id, 1, 0)
								return err
							},
							func() (err error) { reg, err = one.Register(b); return err },
							func() (err error) { mem, err = nccl.Alloc(e.ctx, 256); return err },
							func() error {
								return nccl.Group(func() error {
									return firstErr(
										func() error { return nccl.AllReduce(one, b, b, nccl.Sum, e.s) },
										func() error { return nccl.Broadcast(one, b, b, 0, e.s) },
										func() error { return nccl.Reduce(one, b, b, nccl.Max, 0, e.s) },
										func() error { return nccl.AllGather(one, g, b, e.s) },
										func() error { return nccl.ReduceScatter(one, b, g, nccl.Sum, e.s) },
										func() error { return nccl.AllToAll(one, g, b, e.s) },
										// A receive only after its send: a receive
										// without one waits for ever, as NCCL's.
										func() error { return nccl.Send(one, b, 0, e.s) },
										func() error { return nccl.Recv(one, g, 0, e.s) })
								})
							},
							func() error { return e.s.Synchronize() },
							// On an idle stream: one query, one look at the
							// communicator, as many calls each run.
							func() error { return one.Wait(context.Background(), e.s) },
							func() error { return one.Err() },
							func() error { return reg.Close() },
							func() error { return mem.Free() },
							func() (err error) { split, err = one.Split(0, 0); return err },
							func() error { return split.Close() },
							func() error { return one.Close() },
							// A job of one rank: the rendezvous makes the id
							// and listens for nobody.
							func() (err error) {
								launched, err = nccl.NewCommFromLaunch(context.Background(), e.ctx, nccl.Launch{Size: 1, Addr: "127.0.0.1:1"})
								return err
							},
							// It is non-blocking: NCCL may leave each call
							// in progress, and gocuda waits.
							func() error { return nccl.AllReduce(launched, b, b, nccl.Sum, e.s) },
							func() error {
								return nccl.Group(func() error { return nccl.AllReduce(launched, b, b, nccl.Sum, e.s) })
							},
							func() (err error) { lsplit, err = launched.Split(0, 0); return err },
							func() error { return nccl.AllReduce(lsplit, b, b, nccl.Sum, e.s) },
							func() error { return e.s.Synchronize() },
							func() error { return lsplit.Close() },
							func() error { return launched.Close() },
						)
					}, func(t *testing.T, _ error) {
						e.s.Synchronize()
						if err := errors.Join(reg.Close(), mem.Free()); err != nil {
							t.Errorf("cleanup: %v", err)
						}
						for _, c := range append(comms, one, launched, split, lsplit) {
							if c != nil && c.Close() != nil {
								if err := c.Close(); err != nil {
									t.Errorf("closing a communicator again: %v", err)
								}
							}
						}
						b.Free()
						g.Free()
					}
			}},
		// A communicator's Close and Abort, a registration's Close and an
		// allocation's Free that fail leave it whole: a registered buffer
		// stays registered (its Free refused), an allocation's buffer
		// usable.
		{name: "Comm.Close", covers: []string{"Comm.Close"},
			prepare: func(t *testing.T, e *sweepEnv) (func() error, func(*testing.T, error)) {
				c := must(nccl.NewComm(e.ctx, must(nccl.NewUniqueID())(t), 1, 0))(t)
				b := must(cuda.FromHost(e.ctx, []float32{1, 2}))(t)
				must(c.Register(b))(t)
				return c.Close, func(t *testing.T, err error) {
					closeAgain(func() error { return allReduces(c, b, e.s) }, c.Close)(t, err)
					if err := b.Free(); err != nil {
						t.Errorf("the buffer once its communicator is closed: %v", err)
					}
				}
			}},
		{name: "Comm.Abort", covers: []string{"Comm.Abort"},
			prepare: func(t *testing.T, e *sweepEnv) (func() error, func(*testing.T, error)) {
				c := must(nccl.NewComm(e.ctx, must(nccl.NewUniqueID())(t), 1, 0))(t)
				b := must(cuda.FromHost(e.ctx, []float32{1, 2}))(t)
				must(c.Register(b))(t)
				return c.Abort, func(t *testing.T, err error) {
					closeAgain(func() error {
						return firstErr(func() error { return allReduces(c, b, e.s) }, func() error { return stillRegistered(b) })
					}, c.Abort)(t, err)
					if err := b.Free(); err != nil {
						t.Errorf("the buffer once its communicator is aborted: %v", err)
					}
				}
			}},
		{name: "Registration.Close", covers: []string{"Registration.Close"},
			prepare: func(t *testing.T, e *sweepEnv) (func() error, func(*testing.T, error)) {
				c := must(nccl.NewComm(e.ctx, must(nccl.NewUniqueID())(t), 1, 0))(t)
				b := must(cuda.FromHost(e.ctx, []float32{1, 2}))(t)
				r := must(c.Register(b))(t)
				return r.Close, func(t *testing.T, err error) {
					closeAgain(func() error { return stillRegistered(b) }, r.Close)(t, err)
					if err := errors.Join(b.Free(), c.Close()); err != nil {
						t.Errorf("cleanup: %v", err)
					}
				}
			}},
		{name: "Allocation.Free", covers: []string{"Allocation.Free"},
			prepare: func(t *testing.T, e *sweepEnv) (func() error, func(*testing.T, error)) {
				mem := must(nccl.Alloc(e.ctx, 256))(t)
				return mem.Free, closeAgain(func() error { return mem.Buffer().CopyFromHost(make([]byte, 256)) }, mem.Free)
			}},
		{name: "cublas", covers: []string{"cublas.New", "cublas.Version", "cublas.Gemm", "cublas.GemmStridedBatched", "cublas.GemmBatched",
			"cublas.Matmul", "cublas.Axpy", "cublas.Scal", "cublas.Dot", "cublas.Nrm2", "cublas.Asum", "cublas.Iamax", "cublas.Gemv", "Handle.Close"},
			prepare: func(t *testing.T, e *sweepEnv) (func() error, func(*testing.T, error)) {
				var h *cublas.Handle
				x, y := must(cuda.FromHost(e.ctx, []float32{1, 2, 3, 4}))(t), must(cuda.Alloc[float32](e.ctx, 4))(t)
				v := must(cuda.FromHost(e.ctx, []float32{1, 2}))(t)
				m, out := cublas.NewMatrix(x, 2, 2), cublas.NewMatrix(y, 2, 2)
				ms := []cublas.Matrix[float32]{m}
				return func() error {
						return firstErr(
							func() error { _, err := cublas.Version(); return err },
							func() (err error) { h, err = cublas.New(e.s); return err },
							func() error { return cublas.Gemm(h, 1, m, m.T(), 0, out) },
							func() error { return cublas.GemmStridedBatched(h, 1, 1, m, m, 1, out) },
							func() error { return cublas.GemmBatched(h, 1, ms, ms, 0, []cublas.Matrix[float32]{out}) },
							func() error { return cublas.Matmul(h, 1, m, m, 0, out, cublas.GELU, v) },
							func() error { return cublas.Axpy(h, 2, x, y) },
							func() error { return cublas.Scal(h, 2, y) },
							func() error { _, err := cublas.Dot(h, x, y); return err },
							func() error { _, err := cublas.Nrm2(h, x); return err },
							func() error { _, err := cublas.Asum(h, x); return err },
							func() error { _, err := cublas.Iamax(h, x); return err },
							func() error { return cublas.Gemv(h, 1, m, v, 0, v) },
							func() error { return e.s.Synchronize() },
							func() error { return h.Close() },
						)
					}, func(t *testing.T, _ error) {
						e.s.Synchronize()
						if h != nil && h.Close() != nil {
							if err := h.Close(); err != nil {
								t.Errorf("closing a cuBLAS handle again: %v", err)
							}
						}
						x.Free()
						y.Free()
						v.Free()
					}
			}},
		{name: "curand", covers: []string{"curand.New", "curand.Version", "Generator.SetSeed", "Generator.SetOffset", "Generator.SetOrdering", "curand.Uniform",
			"curand.Normal", "curand.LogNormal", "Generator.Poisson", "Generator.Bits", "Generator.Close"},
			prepare: func(t *testing.T, e *sweepEnv) (func() error, func(*testing.T, error)) {
				var g *curand.Generator
				f := must(cuda.Alloc[float32](e.ctx, 101))(t) // odd: Normal's own pair for the last
				d := must(cuda.Alloc[float64](e.ctx, 64))(t)
				u := must(cuda.Alloc[uint32](e.ctx, 64))(t)
				return func() error {
						return firstErr(
							func() error { _, err := curand.Version(); return err },
							func() (err error) { g, err = curand.New(e.s, curand.Philox4x32_10, 1); return err },
							func() error { return g.SetSeed(2) },
							func() error { return g.SetOffset(10) },
							func() error { return g.SetOrdering(curand.OrderingDefault) },
							func() error { return curand.Uniform(g, f) },
							func() error { return curand.Normal(g, f, 0, 1) },
							func() error { return curand.LogNormal(g, d, 0, 1) },
							func() error { return g.Poisson(u, 3) },
							func() error { return g.Bits(u) },
							e.s.Synchronize,
							func() error { return g.Close() },
						)
					}, func(t *testing.T, _ error) {
						e.s.Synchronize()
						if g != nil && g.Close() != nil {
							if err := g.Close(); err != nil {
								t.Errorf("closing a cuRAND generator again: %v", err)
							}
						}
						f.Free()
						d.Free()
						u.Free()
						stillWorks(t, "curand", e.ctx, e.s)
					}
			}},
		{name: "cufft plans", covers: []string{"cufft.NewPlans", "Plans.Plan", "Plans.Close"},
			prepare: func(t *testing.T, e *sweepEnv) (func() error, func(*testing.T, error)) {
				var c *cufft.Plans
				return func() error {
						return firstErr(
							func() (err error) { c, err = cufft.NewPlans(e.s); return err },
							func() error { _, err := c.Plan(cufft.C2C, []int{8}, 1); return err },
							func() error { _, err := c.Plan(cufft.R2C, []int{4, 4}, 2); return err },
							func() error { return c.Close() },
						)
					}, func(t *testing.T, _ error) {
						if c != nil {
							if err := c.Close(); err != nil {
								t.Errorf("closing the plans again: %v", err)
							}
						}
					}
			}},
		{name: "cufft", covers: []string{"cufft.NewPlan", "cufft.Version", "Plan.ExecC2C", "Plan.ExecZ2Z", "Plan.ExecR2C",
			"Plan.ExecD2Z", "Plan.ExecC2R", "Plan.ExecZ2D", "Plan.Close"},
			prepare: func(t *testing.T, e *sweepEnv) (func() error, func(*testing.T, error)) {
				var plans []*cufft.Plan
				c := must(cuda.Alloc[complex64](e.ctx, 8))(t)
				z := must(cuda.Alloc[complex128](e.ctx, 8))(t)
				f := must(cuda.Alloc[float32](e.ctx, 8))(t)
				d := must(cuda.Alloc[float64](e.ctx, 8))(t)
				cz := must(cuda.Alloc[complex64](e.ctx, 5))(t)
				zz := must(cuda.Alloc[complex128](e.ctx, 5))(t)
				plan := func(typ cufft.Type) func() error {
					return func() error {
						p, err := cufft.NewPlan(e.s, typ, []int{8}, 1)
						if err == nil {
							plans = append(plans, p)
						}
						return err
					}
				}
				return func() error {
						plans = nil
						return firstErr(
							func() error { _, err := cufft.Version(); return err },
							plan(cufft.C2C), plan(cufft.Z2Z), plan(cufft.R2C), plan(cufft.D2Z), plan(cufft.C2R), plan(cufft.Z2D),
							func() error { return plans[0].ExecC2C(c, c, cufft.Forward) },
							func() error { return plans[1].ExecZ2Z(z, z, cufft.Inverse) },
							func() error { return plans[2].ExecR2C(cz, f) },
							func() error { return plans[3].ExecD2Z(zz, d) },
							func() error { return plans[4].ExecC2R(f, cz) },
							func() error { return plans[5].ExecZ2D(d, zz) },
							e.s.Synchronize,
							func() error {
								for _, p := range plans {
									if err := p.Close(); err != nil {
										return err
									}
								}
								return nil
							},
						)
					}, func(t *testing.T, _ error) {
						e.s.Synchronize()
						for _, p := range plans {
							if err := p.Close(); err != nil {
								t.Errorf("closing a cuFFT plan again: %v", err)
							}
						}
						for _, b := range []cuda.Memory{c, z, f, d, cz, zz} {
							b.(interface{ Free() error }).Free()
						}
						stillWorks(t, "cufft", e.ctx, e.s)
					}
			}},
		{name: "Handle.Close", covers: []string{"Handle.Close"},
			prepare: func(t *testing.T, e *sweepEnv) (func() error, func(*testing.T, error)) {
				x, y := must(cuda.FromHost(e.ctx, []float32{1, 2, 3, 4}))(t), must(cuda.Alloc[float32](e.ctx, 4))(t)
				m, out := cublas.NewMatrix(x, 2, 2), cublas.NewMatrix(y, 2, 2)
				h := must(cublas.New(e.s))(t)
				// Gemm's cuBLAS handle, and Matmul's cuBLASLt handle and
				// plan: the parts Close releases, before the workspace.
				use := func() error {
					return firstErr(
						func() error { return cublas.Gemm(h, 1, m, m, 0, out) },
						func() error { return cublas.Matmul(h, 1, m, m, 0, out, cublas.ReLU, nil) },
						e.s.Synchronize,
					)
				}
				must(0, use())(t)
				return h.Close, func(t *testing.T, err error) {
					closeRetried("Handle.Close", true, use, h.Close)(t, err)
					x.Free()
					y.Free()
				}
			}},
		{name: "Generator.Close", covers: []string{"Generator.Close"},
			prepare: func(t *testing.T, e *sweepEnv) (func() error, func(*testing.T, error)) {
				f := must(cuda.Alloc[float32](e.ctx, 64))(t)
				g := must(curand.New(e.s, curand.Philox4x32_10, 1))(t)
				use := func() error { return firstErr(func() error { return curand.Uniform(g, f) }, e.s.Synchronize) }
				must(0, use())(t)
				return g.Close, func(t *testing.T, err error) {
					closeRetried("Generator.Close", false, use, g.Close)(t, err)
					f.Free()
				}
			}},
		{name: "Plan.Close", covers: []string{"Plan.Close"},
			prepare: func(t *testing.T, e *sweepEnv) (func() error, func(*testing.T, error)) {
				c := must(cuda.Alloc[complex64](e.ctx, 64))(t)
				// Made while the stream captures, so that the work area (of
				// a plan large enough to have one) is cuMemAlloc's, whose
				// free is a call to fail: a stream-ordered one's goes to the
				// stream's cache, calling nothing.
				var p *cufft.Plan
				g := must(e.s.Capture(cuda.CaptureThreadLocal, func() (err error) {
					p, err = cufft.NewPlan(e.s, cufft.C2C, []int{64}, 1)
					return err
				}))(t)
				must(0, g.Close())(t)
				use := func() error { return firstErr(func() error { return p.ExecC2C(c, c, cufft.Forward) }, e.s.Synchronize) }
				must(0, use())(t)
				return p.Close, func(t *testing.T, err error) {
					closeRetried("Plan.Close", true, use, p.Close)(t, err)
					c.Free()
				}
			}},
		{name: "Plans.Close", covers: []string{"Plans.Close"},
			prepare: func(t *testing.T, e *sweepEnv) (func() error, func(*testing.T, error)) {
				c := must(cuda.Alloc[complex64](e.ctx, 64))(t)
				plans := must(cufft.NewPlans(e.s))(t)
				use := func() error {
					p, err := plans.Plan(cufft.C2C, []int{64}, 1)
					if err != nil {
						return err
					}
					return firstErr(func() error { return p.ExecC2C(c, c, cufft.Forward) }, e.s.Synchronize)
				}
				// The plan use asks for is made while the stream captures,
				// as in the Plan.Close case: its work area's free is a call
				// to fail. A second plan, with none, to close too.
				g := must(e.s.Capture(cuda.CaptureThreadLocal, func() error {
					_, err := plans.Plan(cufft.C2C, []int{64}, 1)
					return err
				}))(t)
				must(0, g.Close())(t)
				must(0, use())(t)
				must(plans.Plan(cufft.R2C, []int{4, 4}, 2))(t)
				return plans.Close, func(t *testing.T, err error) {
					closeRetried("Plans.Close", false, use, plans.Close)(t, err)
					c.Free()
				}
			}},
		{name: "nvrtc", covers: []string{"nvrtc.Compile", "nvrtc.Version"},
			prepare: func(t *testing.T, e *sweepEnv) (func() error, func(*testing.T, error)) {
				var m *cuda.Module
				return func() error {
						// NVRTC has no fake: where the library is missing
						// there is nothing to sweep.
						if _, err := nvrtc.Version(); errors.Is(err, cuda.ErrNotSupported) {
							return nil
						}
						out, err := nvrtc.Compile(e.ctx, `extern "C" __global__ void k() {}`, nvrtc.Options{PTX: true})
						if err != nil {
							return err
						}
						m, err = e.ctx.LoadModule(out.Image)
						return err
					}, func(t *testing.T, _ error) {
						m.Close()
					}
			}},
	}
	return cases
}
