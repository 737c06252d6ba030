package libs_test

import (
	"errors"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/cusolver"
	"github.com/gocuda/cuda/internal/sweep"
)

func init() {
	// cuSOLVER's calls fail with allocation failed, invalid value and
	// internal error, each carried as cusolver.Result.
	families = append(families, sweep.Family{Prefix: "cusolver", Codes: []int{2, 3, 7},
		Carries:   func(err error, code int) bool { return errors.Is(err, cusolver.Result(code)) },
		Sentinels: map[int]error{2: cuda.ErrOutOfMemory, 3: cuda.ErrInvalidValue}})
	noDriverMethods = append(noDriverMethods, "cusolver.Library", "cusolver.NewMatrix", "Triangle.String", "Handle.WorkspaceBytes",
		"LUFactors.Matrix", "CholeskyFactor.Matrix", "QRFactors.Matrix", "QRFactors.Tau")
}

// sweepSolver is the fault sweep's rows of cuSOLVER's handles: every
// operation, its result's Err (which reads the info on the device) and
// Free, and Close.
func sweepSolver() []sweep.Case {
	return []sweep.Case{
		{Name: "cusolver", Covers: []string{"cusolver.New", "cusolver.Version", "cusolver.LU", "cusolver.Solve", "LUFactors.Err", "LUFactors.Free",
			"cusolver.Cholesky", "CholeskyFactor.Err", "cusolver.CholeskySolve", "cusolver.CholeskyInverse", "Info.Err", "cusolver.QR", "cusolver.QRQ",
			"cusolver.ApplyQ", "QRFactors.Free", "cusolver.LeastSquares", "cusolver.SVD", "cusolver.Eigh", "cusolver.CholeskyBatched", "cusolver.SVDBatched",
			"cusolver.EighBatched", "Info.Free", "CholeskyFactor.Free", "Handle.Close"},
			Prepare: func(t *testing.T, e *sweep.Env) (func() error, func(*testing.T, error)) {
				var h *cusolver.Handle
				var lu *cusolver.LUFactors[float32]
				var chol *cusolver.CholeskyFactor[float64]
				var qr *cusolver.QRFactors[float32]
				var zqr *cusolver.QRFactors[complex64]
				var infos []*cusolver.Info
				spd := []float64{4, 1, 1, 3}
				a := must(cuda.FromHost(e.Ctx, []float32{4, 1, 1, 3}))(t)
				d := must(cuda.FromHost(e.Ctx, spd))(t)
				b := must(cuda.FromHost(e.Ctx, []float32{1, 2}))(t)
				bd := must(cuda.FromHost(e.Ctx, []float64{1, 2}))(t)
				q := must(cuda.Alloc[float32](e.Ctx, 4))(t)
				s := must(cuda.Alloc[float32](e.Ctx, 4))(t)
				u := must(cuda.Alloc[float32](e.Ctx, 8))(t)
				v := must(cuda.Alloc[float32](e.Ctx, 8))(t)
				batch := must(cuda.FromHost(e.Ctx, append(append([]float64{}, spd...), spd...)))(t)
				w := must(cuda.Alloc[float64](e.Ctx, 4))(t)
				m := cusolver.NewMatrix(a, 2, 2)
				z := must(cuda.FromHost(e.Ctx, []complex64{4, 1 + 1i, 1 - 1i, 3}))(t) // Hermitian
				zc := must(cuda.FromHost(e.Ctx, []complex64{4, 1 + 1i, 1 - 1i, 3}))(t)
				zqb := must(cuda.Alloc[complex64](e.Ctx, 4))(t)
				zu := must(cuda.Alloc[complex64](e.Ctx, 4))(t)
				zb := must(cuda.FromHost(e.Ctx, []complex64{4, 1 + 1i, 1 - 1i, 3}))(t) // the complex batch's, Hermitian
				zls := must(cuda.FromHost(e.Ctx, []complex64{4, 1 + 1i, 1 - 1i, 3}))(t)
				zcm := cusolver.Matrix[complex64]{Data: zc, Rows: 2, Cols: 2, Layout: cusolver.ColMajor}
				zq := cusolver.Matrix[complex64]{Data: zqb, Rows: 2, Cols: 2, Layout: cusolver.ColMajor}
				cm := cusolver.Matrix[float32]{Data: a, Rows: 2, Cols: 2, Layout: cusolver.ColMajor}
				keep := func(i *cusolver.Info, err error) error {
					if i != nil {
						infos = append(infos, i)
					}
					if err != nil {
						return err
					}
					return i.Err()
				}
				return func() error {
						infos = nil
						return sweep.FirstErr(
							func() error { _, err := cusolver.Version(); return err },
							func() (err error) { h, err = cusolver.New(e.S); return err },
							func() (err error) { lu, err = cusolver.LU(h, m); return err },
							func() error { return cusolver.Solve(h, lu, b, 1) },
							func() error { return lu.Err() },
							func() error { return lu.Free() },
							func() (err error) {
								chol, err = cusolver.Cholesky(h, cusolver.NewMatrix(d, 2, 2), cusolver.Lower)
								return err
							},
							func() error { return cusolver.CholeskySolve(h, chol, bd, 1) },
							func() error { return chol.Err() },
							func() error { return chol.Free() },
							func() error { return keep(cusolver.CholeskyInverse(h, chol)) },
							func() (err error) { qr, err = cusolver.QR(h, cm); return err },
							func() error {
								return cusolver.QRQ(h, qr, cusolver.Matrix[float32]{Data: q, Rows: 2, Cols: 2, Layout: cusolver.ColMajor})
							},
							func() error {
								return cusolver.ApplyQ(h, qr, cusolver.Matrix[float32]{Data: b, Rows: 2, Cols: 1, Layout: cusolver.ColMajor}, true)
							},
							func() error { return qr.Free() },
							func() error {
								return keep(cusolver.LeastSquares(h, cusolver.Matrix[float32]{Data: a, Rows: 2, Cols: 2, Layout: cusolver.ColMajor}, b, q, 1))
							},
							func() error {
								return keep(cusolver.SVD(h, m, s, cusolver.NewMatrix(u, 2, 2), cusolver.NewMatrix(v, 2, 2)))
							},
							func() error { return keep(cusolver.Eigh(h, cusolver.NewMatrix(d, 2, 2), cusolver.Upper, w, true)) },
							// The complex forms: Hermitian eigenvalues (real,
							// into a float32 w), QR (ungqr, unmqr), SVD.
							func() error {
								return keep(cusolver.Eigh(h, cusolver.NewMatrix(z, 2, 2), cusolver.Lower, s, true))
							},
							func() (err error) { zqr, err = cusolver.QR(h, zcm); return err },
							func() error { return cusolver.QRQ(h, zqr, zq) },
							func() error { return cusolver.ApplyQ(h, zqr, zq, true) },
							func() error { return zqr.Free() },
							func() error {
								return keep(cusolver.SVD(h, zcm, s, zq, cusolver.Matrix[complex64]{Data: zu, Rows: 2, Cols: 2, Layout: cusolver.ColMajor}))
							},
							func() error {
								// Row-major Lower: through cuBLASLt's transposes;
								// Upper: cuSOLVER's fast triangle, in place.
								return keep(cusolver.CholeskyBatched(h, cusolver.NewMatrix(batch, 2, 2), 2, cusolver.Lower))
							},
							func() error {
								return keep(cusolver.CholeskyBatched(h, cusolver.NewMatrix(batch, 2, 2), 2, cusolver.Upper))
							},
							func() error { return keep(cusolver.SVDBatched(h, m, 1, s, u, v)) },
							func() error {
								return keep(cusolver.EighBatched(h, cusolver.NewMatrix(batch, 2, 2), 2, cusolver.Lower, w, false))
							},
							// The complex batches and least squares (C potrfBatched,
							// through the transposes and in place, gesvdjBatched,
							// heevjBatched, CCgels).
							func() error {
								return keep(cusolver.CholeskyBatched(h, cusolver.NewMatrix(zb, 2, 2), 1, cusolver.Lower))
							},
							func() error {
								return keep(cusolver.CholeskyBatched(h, cusolver.NewMatrix(zb, 2, 2), 1, cusolver.Upper))
							},
							func() error { return keep(cusolver.SVDBatched(h, zcm, 1, s, zqb, zu)) },
							func() error {
								return keep(cusolver.EighBatched(h, cusolver.NewMatrix(z, 2, 2), 1, cusolver.Upper, s, true))
							},
							func() error {
								return keep(cusolver.LeastSquares(h, cusolver.Matrix[complex64]{Data: zls, Rows: 2, Cols: 2, Layout: cusolver.ColMajor}, zqb, zu, 1))
							},
							func() error { return h.Close() },
						)
					}, func(t *testing.T, _ error) {
						e.S.Synchronize()
						// What a failure left: the infos unread, the
						// factors unfreed (each tried again: a refused
						// call passes).
						for _, i := range infos {
							i.Free()
						}
						if lu != nil {
							lu.Err()
							lu.Free()
						}
						if chol != nil {
							chol.Err()
						}
						if qr != nil {
							qr.Free()
						}
						if zqr != nil {
							zqr.Free()
						}
						if h != nil && h.Close() != nil {
							if err := h.Close(); err != nil {
								t.Errorf("closing a cuSOLVER handle again: %v", err)
							}
						}
						e.S.Synchronize()
						for _, b := range []cuda.Memory{a, d, b, bd, q, s, u, v, batch, w, z, zc, zqb, zu, zb, zls} {
							b.(interface{ Free() error }).Free()
						}
						sweep.StillWorks(t, "cusolver", e.Ctx, e.S)
					}
			}},
	}
}
