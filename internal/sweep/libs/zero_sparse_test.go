package libs_test

import (
	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/cusparse"
	"github.com/gocuda/cuda/internal/sweep"
)

// The zero values of package cusparse, added to the libraries' table.
func init() {
	zero.Packages["../../../cusparse"] = "cusparse"
	for name, zt := range map[string]sweep.ZeroType{
		"cusparse.Result":  {Zero: new(cusparse.Result), Driver: false},
		"cusparse.Error":   {Zero: new(cusparse.Error), Driver: false},
		"cusparse.Handle":  {Zero: new(cusparse.Handle), Driver: false},
		"cusparse.Matrix":  {Zero: new(cusparse.Matrix[int32, float32]), Driver: false},
		"cusparse.Dense":   {Zero: new(cusparse.Dense[float64]), Driver: false},
		"cusparse.Format":  {Zero: new(cusparse.Format), Driver: false},
		"cusparse.Layout":  {Zero: new(cusparse.Layout), Driver: false},
		"cusparse.Op":      {Zero: new(cusparse.Op), Driver: false},
		"cusparse.Fill":    {Zero: new(cusparse.Fill), Driver: false},
		"cusparse.Diag":    {Zero: new(cusparse.Diag), Driver: false},
		"cusparse.Index":   {Zero: nil, Driver: false}, // a constraint
		"cusparse.Element": {Zero: nil, Driver: false}, // a constraint
		"cusparse.Half":    {Zero: nil, Driver: false}, // a constraint
		"cusparse.Value":   {Zero: nil, Driver: false}, // a constraint
	} {
		zero.Types[name] = zt
	}
	h, m := &cusparse.Handle{}, &cusparse.Matrix[int32, float32]{}
	x, d := &cuda.DeviceBuffer[float32]{}, cusparse.Dense[float32]{}
	for name, f := range map[string]func() []error{
		"cusparse.Version":  nil,
		"cusparse.Library":  nil,
		"cusparse.NewDense": nil,
		"cusparse.New": func() []error {
			_, e1 := cusparse.New(&cuda.Stream{})
			_, e2 := cusparse.New(nil)
			return []error{e1, e2}
		},
		"cusparse.NewCSR": func() []error {
			_, e1 := cusparse.NewCSR(&cuda.Stream{}, 1, 1, []int32{0, 0}, nil, []float32{})
			_, e2 := cusparse.NewCSR[int64, float64](nil, 0, 0, nil, nil, nil)
			return []error{e1, e2}
		},
		"cusparse.NewCSC": func() []error {
			_, err := cusparse.NewCSC(&cuda.Stream{}, 1, 1, []int32{0, 0}, nil, []complex64{})
			return []error{err}
		},
		"cusparse.NewCOO": func() []error {
			_, e1 := cusparse.NewCOO(&cuda.Stream{}, 1, 1, []int64{0}, []int64{0}, []complex128{1})
			_, e2 := cusparse.NewCOO[int32, float32](nil, 1, 1, nil, nil, nil)
			return []error{e1, e2}
		},
		"cusparse.Convert": func() []error {
			_, e1 := cusparse.Convert(h, m, cusparse.CSC)
			_, e2 := cusparse.Convert[int32, float32](nil, nil, cusparse.CSR)
			return []error{e1, e2}
		},
		"cusparse.SpMV": func() []error {
			return []error{cusparse.SpMV(h, cusparse.NoTrans, 1, m, x, 0, x), cusparse.SpMV[int32, float32](nil, 0, 1, nil, nil, 0, nil)}
		},
		"cusparse.SpMM": func() []error { return []error{cusparse.SpMM(h, cusparse.NoTrans, 1, m, d, 0, d)} },
		"cusparse.SpMVHalf": func() []error {
			hm, hx := &cusparse.Matrix[int64, cuda.Float16]{}, &cuda.DeviceBuffer[cuda.Float16]{}
			return []error{cusparse.SpMVHalf(h, cusparse.NoTrans, 1, hm, hx, 0, hx), cusparse.SpMVHalf[int32, cuda.BFloat16](nil, 0, 1, nil, nil, 0, nil)}
		},
		"cusparse.SpMMHalf": func() []error {
			hm, hd := &cusparse.Matrix[int32, cuda.BFloat16]{}, cusparse.Dense[cuda.BFloat16]{}
			return []error{cusparse.SpMMHalf(h, cusparse.NoTrans, 1, hm, hd, 0, hd)}
		},
		"cusparse.SpGEMM": func() []error {
			_, err := cusparse.SpGEMM(h, m, m)
			return []error{err}
		},
		"cusparse.SpSV": func() []error {
			return []error{cusparse.SpSV(h, cusparse.NoTrans, cusparse.Lower, cusparse.NonUnit, 1, m, x, x)}
		},
		"cusparse.SpSM": func() []error {
			return []error{cusparse.SpSM(h, cusparse.NoTrans, cusparse.Upper, cusparse.Unit, 1, m, d, d)}
		},
		"cusparse.ToDense": func() []error { return []error{cusparse.ToDense(h, m, d)} },
		"cusparse.NewBSR": func() []error {
			_, e1 := cusparse.NewBSR[int32](&cuda.Stream{}, 2, 2, 2, []float32{1, 0, 0, 1})
			_, e2 := cusparse.NewBSR[int64, float64](nil, 0, 0, 2, nil)
			return []error{e1, e2}
		},
		"cusparse.NewBlockedELL": func() []error {
			_, e1 := cusparse.NewBlockedELL[int32](&cuda.Stream{}, 2, 2, 2, []cuda.Float16{1, 0, 0, 1})
			_, e2 := cusparse.NewBlockedELL[int64, complex64](nil, 0, 0, 2, nil)
			return []error{e1, e2}
		},
		"cusparse.ToBSR": func() []error {
			_, e1 := cusparse.ToBSR(h, m, 2)
			_, e2 := cusparse.ToBSR[int32, float32](nil, nil, 2)
			return []error{e1, e2}
		},
		"cusparse.ToBlockedELL": func() []error {
			_, e1 := cusparse.ToBlockedELL(h, m, 2)
			_, e2 := cusparse.ToBlockedELL[int64, float64](nil, nil, 2)
			return []error{e1, e2}
		},
		"cusparse.FromDense": func() []error {
			_, e1 := cusparse.FromDense[int32](h, d)
			_, e2 := cusparse.FromDense[int64, float64](nil, cusparse.Dense[float64]{})
			return []error{e1, e2}
		},
	} {
		zero.Funcs[name] = f
	}
}
