package compute_test

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/compute"
	"github.com/gocuda/cuda/internal/cudatest"
)

// TestZeroValues: every exported function and method of the package, given
// nil and zero streams, buffers and kernels, returns an error wrapping
// cuda.ErrInvalidValue, never a panic, and calls nothing (it fails before
// a compile). A new exported function fails the test until it has a row.
func TestZeroValues(t *testing.T) {
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	var (
		nb  *cuda.DeviceBuffer[float32]
		zb  = new(cuda.DeviceBuffer[float32])
		zs  = new(cuda.Stream)
		ni  *cuda.DeviceBuffer[int64]
		nu  *cuda.DeviceBuffer[uint8]
		sh  = compute.Shape{Rows: 1, Cols: 1}
		one = must(cuda.Alloc[float32](ctx, 1))(t)
	)
	defer one.Free()
	calls := map[string][]error{
		"NewElementwise": {second(compute.NewElementwise("", "", "", ""))},
		"NewReduction":   {second(compute.NewReduction("", "", "", "", "", "", "", ""))},
		"Elementwise.Launch": {(*compute.Elementwise)(nil).Launch(s, one), new(compute.Elementwise).Launch(s, one),
			must(compute.NewElementwise("k", "float32 x", "float32 y", "y = x;"))(t).Launch(nil, one, one),
			must(compute.NewElementwise("k", "float32 x", "float32 y", "y = x;"))(t).Launch(zs, one, one)},
		"Reduction.Launch":     {(*compute.Reduction)(nil).Launch(s, one), new(compute.Reduction).Launch(s, one)},
		"Reduction.LaunchAxis": {(*compute.Reduction)(nil).LaunchAxis(s, sh, compute.PerRow, one), new(compute.Reduction).LaunchAxis(zs, sh, compute.PerRow)},
		"Release":              {compute.Release(nil)},
		"Fill":                 {compute.Fill(nil, one, 1), compute.Fill(s, nb, 1), compute.Fill(s, zb, 1)},
		"Iota":                 {compute.Iota(zs, one, 1, 1), compute.Iota(s, nb, 1, 1)},
		"Cast":                 {compute.Cast(nil, one, one), compute.Cast(s, ni, one), compute.Cast(s, one, zb)},
		"Axpby":                {compute.Axpby(nil, 1, one, 1, one), compute.Axpby(s, 1, nb, 1, one)},
		"Where":                {compute.Where(nil, one, nu, one, one), compute.Where(s, one, nu, one, one)},
		"Softmax":              {compute.Softmax(nil, one, one, sh), compute.Softmax(s, nb, one, sh), compute.Softmax(s, zb, one, sh)},
		"LogSoftmax":           {compute.LogSoftmax(zs, one, one, sh), compute.LogSoftmax(s, one, nb, sh)},
		"Transpose":            {compute.Transpose(nil, one, one, sh), compute.Transpose(s, nb, one, sh)},
		"ArgMax":               {compute.ArgMax(nil, ni, one), compute.ArgMax(s, ni, one)},
		"ArgMin":               {compute.ArgMin(zs, ni, one), compute.ArgMin(s, ni, nb)},
		"Sum":                  {compute.Sum(nil, one, one), compute.Sum(s, nb, one)},
		"MaxOf":                {compute.MaxOf(nil, one, one), compute.MaxOf(s, one, zb)},
		"MinOf":                {compute.MinOf(zs, one, one), compute.MinOf(s, nb, nb)},
		"Mean":                 {compute.Mean(nil, one, one), compute.Mean(s, zb, one)},
		"SumAxis":              {compute.SumAxis(nil, one, one, sh, compute.PerRow), compute.SumAxis(s, nb, one, sh, compute.PerColumn)},
		"MaxAxis":              {compute.MaxAxis(zs, one, one, sh, compute.PerRow), compute.MaxAxis(s, one, one, sh, 9)},
		"MinAxis":              {compute.MinAxis(nil, one, one, sh, compute.PerRow), compute.MinAxis(s, one, zb, sh, compute.PerRow)},
		"MeanAxis":             {compute.MeanAxis(nil, one, one, sh, compute.PerRow), compute.MeanAxis(s, one, one, compute.Shape{Rows: -1}, compute.PerRow)},
		"Error.Error":          {errors.New((*compute.Error)(nil).Error() + " " + new(compute.Error).Error())},
		"Error.Unwrap":         {errors.Join((*compute.Error)(nil).Unwrap(), cuda.ErrInvalidValue)},
		"Axis.String":          {errors.New(compute.Axis(5).String() + " " + compute.PerRow.String())},
	}
	unary := func(name string, op func(*cuda.Stream, *cuda.DeviceBuffer[float32], *cuda.DeviceBuffer[float32]) error) {
		calls[name] = []error{op(nil, one, one), op(zs, one, one), op(s, nb, one), op(s, one, zb)}
	}
	for name, op := range map[string]func(*cuda.Stream, *cuda.DeviceBuffer[float32], *cuda.DeviceBuffer[float32]) error{
		"Abs": compute.Abs[float32], "Neg": compute.Neg[float32], "Relu": compute.Relu[float32], "Exp": compute.Exp[float32],
		"Log": compute.Log[float32], "Sqrt": compute.Sqrt[float32], "Tanh": compute.Tanh[float32], "Sigmoid": compute.Sigmoid[float32],
		"Gelu": compute.Gelu[float32]} {
		unary(name, op)
	}
	for name, op := range map[string]func(*cuda.Stream, *cuda.DeviceBuffer[float32], *cuda.DeviceBuffer[float32], *cuda.DeviceBuffer[float32]) error{
		"Add": compute.Add[float32], "Sub": compute.Sub[float32], "Mul": compute.Mul[float32], "Div": compute.Div[float32],
		"Max": compute.Max[float32], "Min": compute.Min[float32]} {
		calls[name] = []error{op(nil, one, one, one), op(zs, one, one, one), op(s, one, nb, one), op(s, one, one, zb)}
	}
	for name, op := range map[string]func(*cuda.Stream, *cuda.DeviceBuffer[float32], *cuda.DeviceBuffer[float32], float32) error{
		"AddScalar": compute.AddScalar[float32], "SubScalar": compute.SubScalar[float32], "MulScalar": compute.MulScalar[float32],
		"DivScalar": compute.DivScalar[float32], "MaxScalar": compute.MaxScalar[float32], "MinScalar": compute.MinScalar[float32]} {
		calls[name] = []error{op(nil, one, one, 1), op(zs, one, one, 1), op(s, nb, one, 1), op(s, one, zb, 1)}
	}
	for name, errs := range calls {
		for i, err := range errs {
			if strings.HasSuffix(name, ".Error") || strings.HasSuffix(name, ".String") {
				if err == nil || strings.Contains(err.Error(), "%!") {
					t.Errorf("%s: %v", name, err)
				}
				continue
			}
			if !errors.Is(err, cuda.ErrInvalidValue) {
				t.Errorf("%s, call %d, with nil or zero objects: %v; want ErrInvalidValue", name, i, err)
			}
		}
	}
	// Every exported function and method has a row.
	fset := token.NewFileSet()
	files, _ := filepath.Glob("*.go")
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || !fd.Name.IsExported() {
				continue
			}
			name := fd.Name.Name
			if fd.Recv != nil {
				recv := fd.Recv.List[0].Type
				if st, ok := recv.(*ast.StarExpr); ok {
					recv = st.X
				}
				name = recv.(*ast.Ident).Name + "." + name
			}
			if _, ok := calls[name]; !ok {
				t.Errorf("exported %s has no row in TestZeroValues", name)
			}
		}
	}
}
