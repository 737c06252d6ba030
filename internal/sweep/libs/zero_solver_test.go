package libs_test

import (
	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/cusolver"
	"github.com/gocuda/cuda/internal/sweep"
)

// The zero values of package cusolver, added to the libraries' table.
func init() {
	zero.Packages["../../../cusolver"] = "cusolver"
	for name, zt := range map[string]sweep.ZeroType{
		"cusolver.Element":        {Zero: nil, Driver: false}, // a constraint
		"cusolver.Result":         {Zero: new(cusolver.Result), Driver: false},
		"cusolver.Error":          {Zero: new(cusolver.Error), Driver: false},
		"cusolver.Handle":         {Zero: new(cusolver.Handle), Driver: false},
		"cusolver.Layout":         {Zero: new(cusolver.Layout), Driver: false},
		"cusolver.Triangle":       {Zero: new(cusolver.Triangle), Driver: false},
		"cusolver.Matrix":         {Zero: new(cusolver.Matrix[float32]), Driver: false},
		"cusolver.LUFactors":      {Zero: new(cusolver.LUFactors[float32]), Driver: false},
		"cusolver.CholeskyFactor": {Zero: new(cusolver.CholeskyFactor[float64]), Driver: false},
		"cusolver.QRFactors":      {Zero: new(cusolver.QRFactors[float32]), Driver: false},
		"cusolver.Info":           {Zero: new(cusolver.Info), Driver: false},
	} {
		zero.Types[name] = zt
	}
	h, m, md := &cusolver.Handle{}, cusolver.Matrix[float32]{}, cusolver.Matrix[float64]{}
	b := &cuda.DeviceBuffer[float32]{}
	for name, f := range map[string]func() []error{
		"cusolver.Version":   nil,
		"cusolver.Library":   nil,
		"cusolver.NewMatrix": nil,
		"cusolver.New": func() []error {
			_, e1 := cusolver.New(&cuda.Stream{})
			_, e2 := cusolver.New(nil)
			return []error{e1, e2}
		},
		"cusolver.LU": func() []error {
			_, e1 := cusolver.LU(h, m)
			_, e2 := cusolver.LU(nil, md)
			return []error{e1, e2}
		},
		"cusolver.Solve": func() []error {
			return []error{cusolver.Solve(h, &cusolver.LUFactors[float32]{}, b, 1), cusolver.Solve[float64](nil, nil, nil, 0)}
		},
		"cusolver.Cholesky": func() []error { _, err := cusolver.Cholesky(h, m, cusolver.Lower); return []error{err} },
		"cusolver.CholeskySolve": func() []error {
			return []error{cusolver.CholeskySolve(h, &cusolver.CholeskyFactor[float32]{}, b, 1)}
		},
		"cusolver.CholeskyInverse": func() []error {
			_, err := cusolver.CholeskyInverse(h, &cusolver.CholeskyFactor[float64]{})
			return []error{err}
		},
		"cusolver.QR":  func() []error { _, err := cusolver.QR(h, m); return []error{err} },
		"cusolver.QRQ": func() []error { return []error{cusolver.QRQ(h, &cusolver.QRFactors[float32]{}, m)} },
		"cusolver.ApplyQ": func() []error {
			return []error{cusolver.ApplyQ(h, &cusolver.QRFactors[float32]{}, m, false)}
		},
		"cusolver.LeastSquares": func() []error {
			_, e1 := cusolver.LeastSquares(h, m, b, b, 1)
			_, e2 := cusolver.LeastSquares(h, cusolver.Matrix[complex64]{}, &cuda.DeviceBuffer[complex64]{}, nil, 1)
			return []error{e1, e2}
		},
		"cusolver.SVD": func() []error {
			_, e1 := cusolver.SVD(h, m, b, m, m)
			zm := cusolver.Matrix[complex128]{}
			_, e2 := cusolver.SVD(h, zm, &cuda.DeviceBuffer[float64]{}, zm, zm)
			return []error{e1, e2}
		},
		"cusolver.Eigh": func() []error {
			_, e1 := cusolver.Eigh[float64, float64](h, md, cusolver.Lower, nil, true)
			_, e2 := cusolver.Eigh(h, cusolver.Matrix[complex64]{}, cusolver.Lower, b, true)
			return []error{e1, e2}
		},
		"cusolver.CholeskyBatched": func() []error {
			_, e1 := cusolver.CholeskyBatched(h, m, 1, cusolver.Lower)
			_, e2 := cusolver.CholeskyBatched(h, cusolver.Matrix[complex128]{}, 1, cusolver.Lower)
			return []error{e1, e2}
		},
		"cusolver.SVDBatched": func() []error {
			_, e1 := cusolver.SVDBatched(h, m, 1, b, nil, nil)
			_, e2 := cusolver.SVDBatched(h, cusolver.Matrix[complex128]{}, 1, &cuda.DeviceBuffer[float64]{}, nil, nil)
			return []error{e1, e2}
		},
		"cusolver.EighBatched": func() []error {
			_, e1 := cusolver.EighBatched(h, m, 1, cusolver.Lower, b, false)
			_, e2 := cusolver.EighBatched[complex64, float32](h, cusolver.Matrix[complex64]{}, 1, cusolver.Lower, nil, true)
			return []error{e1, e2}
		},
	} {
		zero.Funcs[name] = f
	}
}
