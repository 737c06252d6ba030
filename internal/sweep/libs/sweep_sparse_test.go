package libs_test

import (
	"errors"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/cusparse"
	"github.com/gocuda/cuda/internal/sweep"
)

func init() {
	// cuSPARSE's calls fail with allocation failed, invalid value and
	// internal error, each carried as cusparse.Result.
	families = append(families, sweep.Family{Prefix: "cusparse", Codes: []int{2, 3, 7},
		Carries:   func(err error, code int) bool { return errors.Is(err, cusparse.Result(code)) },
		Sentinels: map[int]error{2: cuda.ErrOutOfMemory, 3: cuda.ErrInvalidValue}})
	noDriverMethods = append(noDriverMethods, "cusparse.Library", "cusparse.NewDense", "Handle.WorkBytes",
		"Matrix.Format", "Matrix.Rows", "Matrix.Cols", "Matrix.NNZ", "Matrix.BlockSize")
}

// sweepSparse is the fault sweep's rows of cuSPARSE's handles: matrices
// made from Go, converted (on the device with int32 indices, through the
// host with int64), every operation, the arrays read back, and Close.
func sweepSparse() []sweep.Case {
	return []sweep.Case{
		{Name: "cusparse", Covers: []string{"cusparse.New", "cusparse.Version", "cusparse.NewCSR", "cusparse.NewCSC", "cusparse.NewCOO",
			"cusparse.Convert", "cusparse.SpMV", "cusparse.SpMM", "cusparse.SpGEMM", "cusparse.SpSV", "cusparse.SpSM", "cusparse.ToDense",
			"cusparse.FromDense", "Matrix.Arrays", "Matrix.ToHost", "Matrix.Free", "Handle.Close", "cusparse.SpMVHalf", "cusparse.SpMMHalf",
			"cusparse.NewBSR", "cusparse.NewBlockedELL", "cusparse.ToBSR", "cusparse.ToBlockedELL"},
			Prepare: func(t *testing.T, e *sweep.Env) (func() error, func(*testing.T, error)) {
				// The fake's cuSPARSE handles and descriptors: none may be
				// left behind, whichever call failed.
				live := e.Fake.Live("sparse")
				var h *cusparse.Handle
				var mats []*cusparse.Matrix[int32, float64]
				var wide []*cusparse.Matrix[int64, float32]
				var halves []*cusparse.Matrix[int32, cuda.BFloat16]
				keep := func(m *cusparse.Matrix[int32, float64], err error) (*cusparse.Matrix[int32, float64], error) {
					if m != nil {
						mats = append(mats, m)
					}
					return m, err
				}
				x := must(cuda.FromHost(e.Ctx, []float64{1, 2}))(t)
				y := must(cuda.Alloc[float64](e.Ctx, 2))(t)
				dense := must(cuda.FromHost(e.Ctx, []float64{1, 0, 2, 3}))(t)
				out := must(cuda.Alloc[float64](e.Ctx, 4))(t)
				d := cusparse.NewDense(dense, 2, 2)
				o := cusparse.Dense[float64]{Data: out, Rows: 2, Cols: 2, Layout: cusparse.ColMajor}
				one, two := cuda.NewBFloat16(1), cuda.NewBFloat16(2)
				hx := must(cuda.FromHost(e.Ctx, []cuda.BFloat16{one, two, one, two}))(t)
				hy := must(cuda.Alloc[cuda.BFloat16](e.Ctx, 4))(t)
				return func() error {
						mats, wide, halves = nil, nil, nil
						var csr, coo, csc *cusparse.Matrix[int32, float64]
						return sweep.FirstErr(
							func() error { _, err := cusparse.Version(); return err },
							func() (err error) { h, err = cusparse.New(e.S); return err },
							func() (err error) {
								csr, err = keep(cusparse.NewCSR(e.S, 2, 2, []int32{0, 1, 3}, []int32{0, 0, 1}, []float64{2, 1, 4}))
								return err
							},
							func() (err error) {
								coo, err = keep(cusparse.NewCOO(e.S, 2, 2, []int32{1, 0, 1}, []int32{1, 0, 0}, []float64{4, 2, 1}))
								return err
							},
							func() (err error) {
								_, err = keep(cusparse.NewCSC(e.S, 2, 2, []int32{0, 2, 3}, []int32{0, 1, 1}, []float64{2, 1, 4}))
								return err
							},
							func() (err error) { csc, err = keep(cusparse.Convert(h, coo, cusparse.CSC)); return err },
							// A stream keeps what was freed on it until it is
							// synchronized, and an allocation that finds the
							// device full takes it back: no failure to sweep.
							e.S.Synchronize,
							func() (err error) { _, err = keep(cusparse.Convert(h, csc, cusparse.COO)); return err },
							e.S.Synchronize,
							func() error {
								m, err := cusparse.NewCOO(e.S, 2, 2, []int64{0, 1}, []int64{1, 0}, []float32{1, 1})
								if m != nil {
									wide = append(wide, m)
								}
								if err != nil {
									return err
								}
								c, err := cusparse.Convert(h, m, cusparse.CSC)
								if c != nil {
									wide = append(wide, c)
								}
								return err
							},
							func() error { return cusparse.SpMV(h, cusparse.NoTrans, 1, csr, x, 0, y) },
							// Halves: a bfloat16 COO matrix, multiplied in float32.
							func() error {
								m, err := cusparse.NewCOO(e.S, 2, 2, []int32{0, 1, 1}, []int32{0, 0, 1}, []cuda.BFloat16{two, one, two})
								if m != nil {
									halves = append(halves, m)
								}
								if err != nil {
									return err
								}
								hv, hw := must(hx.Slice(0, 2))(t), must(hy.Slice(0, 2))(t)
								if err := cusparse.SpMVHalf(h, cusparse.Trans, 1, m, hv, 0, hw); err != nil {
									return err
								}
								return cusparse.SpMMHalf(h, cusparse.NoTrans, 1, m, cusparse.NewDense(hx, 2, 2), 0, cusparse.NewDense(hy, 2, 2))
							},
							func() error { return cusparse.SpMM(h, cusparse.Trans, 1, csc, d, 0, o) },
							// The blocked formats: made from Go and from CSR,
							// multiplied, written out.
							func() error {
								b, err := keep(cusparse.NewBSR[int32](e.S, 2, 2, 2, []float64{1, 0, 2, 3}))
								if err != nil {
									return err
								}
								if err := cusparse.SpMV(h, cusparse.NoTrans, 1, b, x, 0, y); err != nil {
									return err
								}
								if err := cusparse.SpMM(h, cusparse.NoTrans, 1, b, d, 0, o); err != nil {
									return err
								}
								return cusparse.ToDense(h, b, o)
							},
							func() error {
								b, err := keep(cusparse.NewBlockedELL[int32](e.S, 2, 2, 2, []float64{1, 0, 2, 3}))
								if err != nil {
									return err
								}
								return cusparse.SpMM(h, cusparse.NoTrans, 1, b, d, 0, o)
							},
							func() error { _, err := keep(cusparse.ToBSR(h, csr, 2)); return err },
							func() error { _, err := keep(cusparse.ToBlockedELL(h, csr, 2)); return err },
							func() error { _, err := keep(cusparse.SpGEMM(h, csr, csr)); return err },
							func() error {
								return cusparse.SpSV(h, cusparse.NoTrans, cusparse.Lower, cusparse.NonUnit, 1, csr, x, y)
							},
							func() error { return cusparse.SpSM(h, cusparse.NoTrans, cusparse.Lower, cusparse.Unit, 1, coo, d, o) },
							func() error { return cusparse.ToDense(h, coo, o) },
							func() error { _, err := keep(cusparse.FromDense[int32](h, d)); return err },
							func() error { _, _, _, err := csr.Arrays(); return err },
							func() error { _, _, _, err := csc.ToHost(); return err },
							func() error { return csr.Free() },
							e.S.Synchronize,
							func() error { return h.Close() },
						)
					}, func(t *testing.T, _ error) {
						e.S.Synchronize()
						for _, m := range mats {
							if m.Free() != nil {
								if err := m.Free(); err != nil {
									t.Errorf("freeing a matrix again: %v", err)
								}
							}
						}
						for _, m := range halves {
							if m.Free() != nil {
								if err := m.Free(); err != nil {
									t.Errorf("freeing a matrix again: %v", err)
								}
							}
						}
						for _, m := range wide {
							if m.Free() != nil {
								if err := m.Free(); err != nil {
									t.Errorf("freeing a matrix again: %v", err)
								}
							}
						}
						if h != nil && h.Close() != nil {
							if err := h.Close(); err != nil {
								t.Errorf("closing a cuSPARSE handle again: %v", err)
							}
						}
						x.Free()
						y.Free()
						dense.Free()
						out.Free()
						hx.Free()
						hy.Free()
						if n := e.Fake.Live("sparse") - live; n != 0 {
							t.Errorf("the fake holds %+d cuSPARSE handle(s) and descriptor(s) afterwards", n)
						}
						sweep.StillWorks(t, "cusparse", e.Ctx, e.S)
					}
			}},
	}
}
