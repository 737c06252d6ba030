package cuda_test

import (
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/sweep"
)

// sweepModules is the fault sweep's rows of modules, libraries, launches and peers.
func sweepModules() []sweep.Case {
	return []sweep.Case{
		{Name: "modules and launches", Covers: []string{"Context.LoadModule", "Module.Function", "Function.Attribute",
			"Function.SetAttribute", "Function.Launch", "cuda.Global", "Function.MaxActiveBlocks", "Function.SuggestBlockSize",
			"Function.SuggestBlockSizeFunc", "Function.AvailableDynamicSharedMem", "Function.MaxCooperativeBlocks", "Function.MaxActiveClusters"},
			Prepare: func(t *testing.T, e *sweep.Env) (func() error, func(*testing.T, error)) {
				var m *cuda.Module
				a := must(cuda.FromHost(e.Ctx, random[float32](300)))(t)
				return func() error {
						var fn *cuda.Function
						return sweep.FirstErr(
							func() (err error) { m, err = e.Ctx.LoadModule(e.PTX, cuda.JITLineInfo()); return err },
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
							func() error { return fn.Launch(cuda.LaunchConfigFor(300, e.S), a, a, a, uint32(300)) },
							func() error {
								// Every attribute: the launch checks the device, the
								// kernel's occupancy and the priorities first.
								cfg := cuda.LaunchConfigFor(300, e.S)
								cfg.Cooperative, cfg.Cluster, cfg.ClusterPolicy, cfg.Priority = true, cuda.Dim3{X: 2}, cuda.ClusterPolicySpread, -1
								return fn.Launch(cfg, a, a, a, uint32(300))
							},
							e.S.Synchronize,
						)
					}, func(t *testing.T, _ error) {
						e.S.Synchronize()
						if err := m.Close(); err != nil {
							t.Errorf("module close: %v", err)
						}
						a.Free()
						sweep.StillWorks(t, "modules", e.Ctx, e.S)
					}
			}},
		{Name: "libraries", Covers: []string{"cuda.LoadLibrary", "Library.Module", "Library.Close"},
			Prepare: func(t *testing.T, e *sweep.Env) (func() error, func(*testing.T, error)) {
				var lib *cuda.Library
				a := must(cuda.FromHost(e.Ctx, random[float32](300)))(t)
				return func() error {
						var m *cuda.Module
						var fn *cuda.Function
						return sweep.FirstErr(
							func() (err error) { lib, err = cuda.LoadLibrary(e.PTX, cuda.JITLineInfo()); return err },
							func() (err error) { m, err = lib.Module(e.Ctx); return err },
							func() (err error) { fn, err = m.Function("vadd_f32"); return err },
							func() error { _, err := cuda.Global[uint32](m, "table"); return err },
							func() error { return fn.Launch(cuda.LaunchConfigFor(300, e.S), a, a, a, uint32(300)) },
							e.S.Synchronize,
							lib.Close,
						)
					}, func(t *testing.T, _ error) {
						e.S.Synchronize()
						if err := lib.Close(); err != nil {
							t.Errorf("library close: %v", err)
						}
						a.Free()
						sweep.StillWorks(t, "libraries", e.Ctx, e.S)
					}
			}},
		{Name: "Module.Close", Covers: []string{"Module.Close"},
			Prepare: func(t *testing.T, e *sweep.Env) (func() error, func(*testing.T, error)) {
				m := must(e.Ctx.LoadModule(e.PTX))(t)
				must(cuda.Global[uint32](m, "table"))(t)
				return m.Close, sweep.CloseAgain(func() error { _, err := m.Function("empty"); return err }, m.Close)
			}},
		{Name: "peers", Covers: []string{"Context.EnablePeerAccess", "Context.DisablePeerAccess", "cuda.CopyPeer", "cuda.CopyPeerAsync"},
			Prepare: func(t *testing.T, e *sweep.Env) (func() error, func(*testing.T, error)) {
				src := must(cuda.FromHost(e.Ctx, random[int32](1000)))(t)
				dst := must(cuda.Alloc[int32](e.Ctx1, 1000))(t)
				return func() error {
						return sweep.FirstErr(
							func() error { _, err := cuda.CopyPeer(dst, src); return err },
							func() error { return e.Ctx1.EnablePeerAccess(e.Ctx) },
							func() error { _, err := cuda.CopyPeerAsync(dst, src, e.S1); return err },
							e.S1.Synchronize,
							func() error { return e.Ctx1.DisablePeerAccess(e.Ctx) },
						)
					}, func(t *testing.T, _ error) {
						e.S1.Synchronize()
						e.Ctx1.DisablePeerAccess(e.Ctx)
						src.Free()
						dst.Free()
						sweep.StillWorks(t, "peers", e.Ctx1, e.S1)
					}
			}},
	}
}
