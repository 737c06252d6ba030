package libs_test

import (
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/cublas"
	"github.com/gocuda/cuda/cufft"
	"github.com/gocuda/cuda/curand"
	"github.com/gocuda/cuda/internal/sweep"
)

// sweepMath is the fault sweep's rows of cuBLAS's handles, cuRAND's generators and cuFFT's plans.
func sweepMath() []sweep.Case {
	return []sweep.Case{
		{Name: "cublas", Covers: []string{"cublas.New", "cublas.Version", "cublas.Gemm", "cublas.GemmStridedBatched", "cublas.GemmBatched",
			"cublas.Matmul", "cublas.Axpy", "cublas.Scal", "cublas.Dot", "cublas.Nrm2", "cublas.Asum", "cublas.Iamax", "cublas.Gemv", "Handle.Close"},
			Prepare: func(t *testing.T, e *sweep.Env) (func() error, func(*testing.T, error)) {
				var h *cublas.Handle
				x, y := must(cuda.FromHost(e.Ctx, []float32{1, 2, 3, 4}))(t), must(cuda.Alloc[float32](e.Ctx, 4))(t)
				v := must(cuda.FromHost(e.Ctx, []float32{1, 2}))(t)
				w := must(cuda.Alloc[float32](e.Ctx, 2))(t) // Gemv's y: not over its x
				m, out := cublas.NewMatrix(x, 2, 2), cublas.NewMatrix(y, 2, 2)
				ms := []cublas.Matrix[float32]{m}
				return func() error {
						return sweep.FirstErr(
							func() error { _, err := cublas.Version(); return err },
							func() (err error) { h, err = cublas.New(e.S); return err },
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
							func() error { return cublas.Gemv(h, 1, m, v, 0, w) },
							func() error { return e.S.Synchronize() },
							func() error { return h.Close() },
						)
					}, func(t *testing.T, _ error) {
						e.S.Synchronize()
						if h != nil && h.Close() != nil {
							if err := h.Close(); err != nil {
								t.Errorf("closing a cuBLAS handle again: %v", err)
							}
						}
						x.Free()
						y.Free()
						v.Free()
						w.Free()
					}
			}},
		{Name: "curand", Covers: []string{"curand.New", "curand.Version", "Generator.SetSeed", "Generator.SetOffset", "Generator.SetOrdering", "curand.Uniform",
			"curand.Normal", "curand.LogNormal", "Generator.Poisson", "Generator.Bits", "Generator.Close"},
			Prepare: func(t *testing.T, e *sweep.Env) (func() error, func(*testing.T, error)) {
				var g *curand.Generator
				f := must(cuda.Alloc[float32](e.Ctx, 101))(t) // odd: Normal's own pair for the last
				d := must(cuda.Alloc[float64](e.Ctx, 64))(t)
				u := must(cuda.Alloc[uint32](e.Ctx, 64))(t)
				return func() error {
						return sweep.FirstErr(
							func() error { _, err := curand.Version(); return err },
							func() (err error) { g, err = curand.New(e.S, curand.Philox4x32_10, 1); return err },
							func() error { return g.SetSeed(2) },
							func() error { return g.SetOffset(10) },
							func() error { return g.SetOrdering(curand.OrderingDefault) },
							func() error { return curand.Uniform(g, f) },
							func() error { return curand.Normal(g, f, 0, 1) },
							func() error { return curand.LogNormal(g, d, 0, 1) },
							func() error { return g.Poisson(u, 3) },
							func() error { return g.Bits(u) },
							e.S.Synchronize,
							func() error { return g.Close() },
						)
					}, func(t *testing.T, _ error) {
						e.S.Synchronize()
						if g != nil && g.Close() != nil {
							if err := g.Close(); err != nil {
								t.Errorf("closing a cuRAND generator again: %v", err)
							}
						}
						f.Free()
						d.Free()
						u.Free()
						sweep.StillWorks(t, "curand", e.Ctx, e.S)
					}
			}},
		{Name: "cufft plans", Covers: []string{"cufft.NewPlans", "Plans.Plan", "Plans.Close"},
			Prepare: func(t *testing.T, e *sweep.Env) (func() error, func(*testing.T, error)) {
				var c *cufft.Plans
				return func() error {
						return sweep.FirstErr(
							func() (err error) { c, err = cufft.NewPlans(e.S); return err },
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
		{Name: "cufft", Covers: []string{"cufft.NewPlan", "cufft.Version", "Plan.ExecC2C", "Plan.ExecZ2Z", "Plan.ExecR2C",
			"Plan.ExecD2Z", "Plan.ExecC2R", "Plan.ExecZ2D", "Plan.Close"},
			Prepare: func(t *testing.T, e *sweep.Env) (func() error, func(*testing.T, error)) {
				var plans []*cufft.Plan
				c := must(cuda.Alloc[complex64](e.Ctx, 8))(t)
				z := must(cuda.Alloc[complex128](e.Ctx, 8))(t)
				f := must(cuda.Alloc[float32](e.Ctx, 8))(t)
				d := must(cuda.Alloc[float64](e.Ctx, 8))(t)
				cz := must(cuda.Alloc[complex64](e.Ctx, 5))(t)
				zz := must(cuda.Alloc[complex128](e.Ctx, 5))(t)
				plan := func(typ cufft.Type) func() error {
					return func() error {
						p, err := cufft.NewPlan(e.S, typ, []int{8}, 1)
						if err == nil {
							plans = append(plans, p)
						}
						return err
					}
				}
				return func() error {
						plans = nil
						return sweep.FirstErr(
							func() error { _, err := cufft.Version(); return err },
							plan(cufft.C2C), plan(cufft.Z2Z), plan(cufft.R2C), plan(cufft.D2Z), plan(cufft.C2R), plan(cufft.Z2D),
							func() error { return plans[0].ExecC2C(c, c, cufft.Forward) },
							func() error { return plans[1].ExecZ2Z(z, z, cufft.Inverse) },
							func() error { return plans[2].ExecR2C(cz, f) },
							func() error { return plans[3].ExecD2Z(zz, d) },
							func() error { return plans[4].ExecC2R(f, cz) },
							func() error { return plans[5].ExecZ2D(d, zz) },
							e.S.Synchronize,
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
						e.S.Synchronize()
						for _, p := range plans {
							if err := p.Close(); err != nil {
								t.Errorf("closing a cuFFT plan again: %v", err)
							}
						}
						for _, b := range []cuda.Memory{c, z, f, d, cz, zz} {
							b.(interface{ Free() error }).Free()
						}
						sweep.StillWorks(t, "cufft", e.Ctx, e.S)
					}
			}},
		{Name: "Handle.Close", Covers: []string{"Handle.Close"},
			Prepare: func(t *testing.T, e *sweep.Env) (func() error, func(*testing.T, error)) {
				x, y := must(cuda.FromHost(e.Ctx, []float32{1, 2, 3, 4}))(t), must(cuda.Alloc[float32](e.Ctx, 4))(t)
				m, out := cublas.NewMatrix(x, 2, 2), cublas.NewMatrix(y, 2, 2)
				h := must(cublas.New(e.S))(t)
				// Gemm's cuBLAS handle, and Matmul's cuBLASLt handle and
				// plan: the parts Close releases, before the workspace.
				use := func() error {
					return sweep.FirstErr(
						func() error { return cublas.Gemm(h, 1, m, m, 0, out) },
						func() error { return cublas.Matmul(h, 1, m, m, 0, out, cublas.ReLU, nil) },
						e.S.Synchronize,
					)
				}
				must(0, use())(t)
				return h.Close, func(t *testing.T, err error) {
					sweep.CloseRetried("Handle.Close", true, use, h.Close)(t, err)
					x.Free()
					y.Free()
				}
			}},
		{Name: "Generator.Close", Covers: []string{"Generator.Close"},
			Prepare: func(t *testing.T, e *sweep.Env) (func() error, func(*testing.T, error)) {
				f := must(cuda.Alloc[float32](e.Ctx, 64))(t)
				g := must(curand.New(e.S, curand.Philox4x32_10, 1))(t)
				use := func() error { return sweep.FirstErr(func() error { return curand.Uniform(g, f) }, e.S.Synchronize) }
				must(0, use())(t)
				return g.Close, func(t *testing.T, err error) {
					sweep.CloseRetried("Generator.Close", false, use, g.Close)(t, err)
					f.Free()
				}
			}},
		{Name: "Plan.Close", Covers: []string{"Plan.Close"},
			Prepare: func(t *testing.T, e *sweep.Env) (func() error, func(*testing.T, error)) {
				c := must(cuda.Alloc[complex64](e.Ctx, 64))(t)
				// Made while the stream captures, so that the work area (of
				// a plan large enough to have one) is cuMemAlloc's, whose
				// free is a call to fail: a stream-ordered one's goes to the
				// stream's cache, calling nothing. Relaxed: a thread-local or
				// global capture forbids cuMemAlloc, as the driver does.
				var p *cufft.Plan
				g := must(e.S.Capture(cuda.CaptureRelaxed, func() (err error) {
					p, err = cufft.NewPlan(e.S, cufft.C2C, []int{64}, 1)
					return err
				}))(t)
				must(0, g.Close())(t)
				use := func() error {
					return sweep.FirstErr(func() error { return p.ExecC2C(c, c, cufft.Forward) }, e.S.Synchronize)
				}
				must(0, use())(t)
				return p.Close, func(t *testing.T, err error) {
					sweep.CloseRetried("Plan.Close", true, use, p.Close)(t, err)
					c.Free()
				}
			}},
		{Name: "Plans.Close", Covers: []string{"Plans.Close"},
			Prepare: func(t *testing.T, e *sweep.Env) (func() error, func(*testing.T, error)) {
				c := must(cuda.Alloc[complex64](e.Ctx, 64))(t)
				plans := must(cufft.NewPlans(e.S))(t)
				use := func() error {
					p, err := plans.Plan(cufft.C2C, []int{64}, 1)
					if err != nil {
						return err
					}
					return sweep.FirstErr(func() error { return p.ExecC2C(c, c, cufft.Forward) }, e.S.Synchronize)
				}
				// The plan use asks for is made while the stream captures,
				// as in the Plan.Close case: its work area's free is a call
				// to fail. A second plan, with none, to close too.
				g := must(e.S.Capture(cuda.CaptureRelaxed, func() error {
					_, err := plans.Plan(cufft.C2C, []int{64}, 1)
					return err
				}))(t)
				must(0, g.Close())(t)
				must(0, use())(t)
				must(plans.Plan(cufft.R2C, []int{4, 4}, 2))(t)
				return plans.Close, func(t *testing.T, err error) {
					sweep.CloseRetried("Plans.Close", false, use, plans.Close)(t, err)
					c.Free()
				}
			}},
	}
}
