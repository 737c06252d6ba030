package cuda_test

import (
	"errors"
	"io"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/sweep"
)

// sweepGraphs is the fault sweep's rows of graphs captured and built, and their executables.
func sweepGraphs() []sweep.Case {
	return []sweep.Case{
		{Name: "graphs", Covers: []string{"Stream.Capture", "Graph.Nodes", "Graph.WriteDot", "Graph.Instantiate", "GraphExec.Launch", "GraphExec.Update"},
			Prepare: func(t *testing.T, e *sweep.Env) (func() error, func(*testing.T, error)) {
				b := must(cuda.Zeroed[int32](e.Ctx, 64))(t)
				var g, g2 *cuda.Graph
				var x *cuda.GraphExec
				memset := func(v uint32) func() error { return func() error { return b.Memset32Async(v, e.S) } }
				return func() (err error) {
						if g, err = e.S.Capture(cuda.CaptureGlobal, memset(1)); err != nil {
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
						if err = x.Launch(e.S); err != nil {
							return err
						}
						if g2, err = e.S.Capture(cuda.CaptureRelaxed, memset(2)); err != nil {
							return err
						}
						_, err = x.Update(g2)
						return sweep.FirstErr(func() error { return err }, func() error { return x.Launch(e.S) }, e.S.Synchronize)
					}, func(t *testing.T, _ error) {
						if err := errors.Join(e.S.Synchronize(), x.Close(), g.Close(), g2.Close(), b.Free()); err != nil {
							t.Errorf("cleanup: %v", err)
						}
					}
			}},
		{Name: "graphs built", Covers: []string{"Context.NewGraph", "Graph.AddKernel", "Graph.AddCopy", "Graph.AddMemset", "Graph.AddEmpty",
			"Graph.AddEventRecord", "Graph.AddEventWait", "Graph.AddAlloc", "Graph.AddFree", "Graph.NewCondition", "Graph.AddIf", "Graph.AddWhile",
			"Graph.AddSetCondition", "Graph.AddCountDown", "GraphExec.SetKernelParams", "Graph.AddHost"},
			Prepare: func(t *testing.T, e *sweep.Env) (func() error, func(*testing.T, error)) {
				needDeviceRuntime(t)
				mod := must(e.Ctx.LoadModule(e.PTX))(t)
				saxpy := must(mod.Function("saxpy"))(t)
				x := must(cuda.Zeroed[float32](e.Ctx, 64))(t)
				w := must(cuda.Zeroed[uint32](e.Ctx, 1))(t)
				// The context links and loads its set-condition kernel once,
				// and keeps it: load it before the sweep.
				pre := must(e.Ctx.NewGraph())(t)
				must(pre.AddSetCondition(nil, must(pre.NewCondition(0))(t), w))(t)
				if err := pre.Close(); err != nil {
					t.Fatal(err)
				}
				ev := must(e.Ctx.NewEvent())(t)
				var g *cuda.Graph
				var x2 *cuda.GraphExec
				// The kernel node has a launch attribute (the context's
				// greatest priority), which the driver sets once the node
				// is added, and which SetKernelParams is given again.
				cfg := cuda.LaunchConfigFor(64, nil)
				_, cfg.Priority = must2(e.Ctx.StreamPriorityRange())(t)
				return func() (err error) {
						if g, err = e.Ctx.NewGraph(); err != nil {
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
						return sweep.FirstErr(func() error { return x2.Launch(e.S) }, e.S.Synchronize)
					}, func(t *testing.T, _ error) {
						if err := errors.Join(e.S.Synchronize(), x2.Close(), g.Close(), ev.Close(), x.Free(), w.Free(), mod.Close()); err != nil {
							t.Errorf("cleanup: %v", err)
						}
						cuda.CloseConditionKernel(e.Ctx)
					}
			}},
		{Name: "set-condition kernel", Covers: []string{"Graph.AddSetCondition"},
			// The kernel linked with the device runtime and loaded: each
			// run starts without it and ends closing it.
			Prepare: func(t *testing.T, e *sweep.Env) (func() error, func(*testing.T, error)) {
				needDeviceRuntime(t)
				cuda.CloseConditionKernel(e.Ctx)
				w := must(cuda.Zeroed[uint32](e.Ctx, 1))(t)
				g := must(e.Ctx.NewGraph())(t)
				c := must(g.NewCondition(0))(t)
				return func() error {
						_, err := g.AddSetCondition(nil, c, w)
						return err
					}, func(t *testing.T, _ error) {
						if err := errors.Join(g.Close(), w.Free()); err != nil {
							t.Errorf("cleanup: %v", err)
						}
						cuda.CloseConditionKernel(e.Ctx)
					}
			}},
		{Name: "Graph.Close", Covers: []string{"Graph.Close"},
			Prepare: func(t *testing.T, e *sweep.Env) (func() error, func(*testing.T, error)) {
				g := must(e.S.Capture(cuda.CaptureGlobal, func() error { return nil }))(t)
				return g.Close, sweep.CloseAgain(func() error { _, err := g.Nodes(); return err }, g.Close)
			}},
		{Name: "GraphExec.Close", Covers: []string{"GraphExec.Close"},
			Prepare: func(t *testing.T, e *sweep.Env) (func() error, func(*testing.T, error)) {
				g := must(e.S.Capture(cuda.CaptureGlobal, func() error { return nil }))(t)
				x := must(g.Instantiate())(t)
				return x.Close, func(t *testing.T, err error) {
					sweep.CloseAgain(func() error { return x.Launch(e.S) }, x.Close)(t, err)
					if err := errors.Join(e.S.Synchronize(), g.Close()); err != nil {
						t.Errorf("cleanup: %v", err)
					}
				}
			}},
	}
}
