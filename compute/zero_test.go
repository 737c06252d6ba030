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
	raw := must(compute.NewRawKernel(`extern "C" __global__ void k(float* x) {}`, "k"))(t)
	grid := cuda.Dim3{X: 1}
	calls := map[string][]error{
		"RawKernel.Name":     {}, // "" for both: checked below
		"NewRawKernel":       {second(compute.NewRawKernel("", ""))},
		"RawKernel.Launch":   {(*compute.RawKernel)(nil).Launch(cuda.LaunchConfig{Grid: grid, Block: grid, Stream: s}, one), new(compute.RawKernel).Launch(cuda.LaunchConfig{Grid: grid, Block: grid, Stream: s}, one), raw.Launch(cuda.LaunchConfig{Grid: grid, Block: grid}, one), raw.Launch(cuda.LaunchConfig{Grid: grid, Block: grid, Stream: zs}, one)},
		"RawKernel.Function": {second((*compute.RawKernel)(nil).Function(ctx)), second(new(compute.RawKernel).Function(ctx)), second(raw.Function(nil)), second(raw.Function(new(cuda.Context)))},
		"NewElementwise":     {second(compute.NewElementwise(compute.ElementwiseSpec{}))},
		"NewReduction":       {second(compute.NewReduction(compute.ReductionSpec{}))},
		"Elementwise.Launch": {(*compute.Elementwise)(nil).Launch(s, one), new(compute.Elementwise).Launch(s, one),
			must(compute.NewElementwise(compute.ElementwiseSpec{Name: "k", InParams: "float32 x", OutParams: "float32 y", Operation: "y = x;"}))(t).Launch(nil, one, one),
			must(compute.NewElementwise(compute.ElementwiseSpec{Name: "k", InParams: "float32 x", OutParams: "float32 y", Operation: "y = x;"}))(t).Launch(zs, one, one)},
		"Elementwise.LaunchN": {(*compute.Elementwise)(nil).LaunchN(s, 1, one), new(compute.Elementwise).LaunchN(s, 1, one),
			must(compute.NewElementwise(compute.ElementwiseSpec{Name: "k", InParams: "float32 x", OutParams: "float32 y", Operation: "y = x;"}))(t).LaunchN(nil, 1, one, one),
			must(compute.NewElementwise(compute.ElementwiseSpec{Name: "k", InParams: "float32 x", OutParams: "float32 y", Operation: "y = x;"}))(t).LaunchN(zs, 1, one, one)},
		"Reduction.Launch":     {(*compute.Reduction)(nil).Launch(s, one), new(compute.Reduction).Launch(s, one)},
		"Reduction.LaunchAxis": {(*compute.Reduction)(nil).LaunchAxis(s, sh, compute.PerRow, one), new(compute.Reduction).LaunchAxis(zs, sh, compute.PerRow)},
		"Release":              {compute.Release(nil)},
		"Fill":                 {compute.Fill(one, 1, nil), compute.Fill(nb, 1, s), compute.Fill(zb, 1, s)},
		"Iota":                 {compute.Iota(one, 1, 1, zs), compute.Iota(nb, 1, 1, s)},
		"Cast":                 {compute.Cast(one, one, nil), compute.Cast(ni, one, s), compute.Cast(one, zb, s)},
		"Axpby":                {compute.Axpby(1, one, 1, one, nil), compute.Axpby(1, nb, 1, one, s)},
		"Where":                {compute.Where(one, nu, one, one, nil), compute.Where(one, nu, one, one, s)},
		"Softmax":              {compute.Softmax(one, one, sh, nil), compute.Softmax(nb, one, sh, s), compute.Softmax(zb, one, sh, s)},
		"LogSoftmax":           {compute.LogSoftmax(one, one, sh, zs), compute.LogSoftmax(one, nb, sh, s)},
		"Transpose":            {compute.Transpose(one, one, sh, nil), compute.Transpose(nb, one, sh, s)},
		"ArgMax":               {compute.ArgMax(ni, one, nil), compute.ArgMax(ni, one, s)},
		"ArgMin":               {compute.ArgMin(ni, one, zs), compute.ArgMin(ni, nb, s)},
		"Sum":                  {compute.Sum(one, one, nil), compute.Sum(nb, one, s)},
		"MaxOf":                {compute.MaxOf(one, one, nil), compute.MaxOf(one, zb, s)},
		"MinOf":                {compute.MinOf(one, one, zs), compute.MinOf(nb, nb, s)},
		"Mean":                 {compute.Mean(one, one, nil), compute.Mean(zb, one, s)},
		"SumAxis":              {compute.SumAxis(one, one, sh, compute.PerRow, nil), compute.SumAxis(nb, one, sh, compute.PerColumn, s)},
		"MaxAxis":              {compute.MaxAxis(one, one, sh, compute.PerRow, zs), compute.MaxAxis(one, one, sh, 9, s)},
		"MinAxis":              {compute.MinAxis(one, one, sh, compute.PerRow, nil), compute.MinAxis(one, zb, sh, compute.PerRow, s)},
		"MeanAxis":             {compute.MeanAxis(one, one, sh, compute.PerRow, nil), compute.MeanAxis(one, one, compute.Shape{Rows: -1}, compute.PerRow, s)},
		"Error.Error":          {errors.New((*compute.Error)(nil).Error() + " " + new(compute.Error).Error())},
		"Error.Unwrap":         {errors.Join((*compute.Error)(nil).Unwrap(), cuda.ErrInvalidValue)},
		"Axis.String":          {errors.New(compute.Axis(5).String() + " " + compute.PerRow.String())},
	}
	unary := func(name string, op func(*cuda.DeviceBuffer[float32], *cuda.DeviceBuffer[float32], *cuda.Stream) error) {
		calls[name] = []error{op(one, one, nil), op(one, one, zs), op(nb, one, s), op(one, zb, s)}
	}
	for name, op := range map[string]func(*cuda.DeviceBuffer[float32], *cuda.DeviceBuffer[float32], *cuda.Stream) error{
		"Abs": compute.Abs[float32], "Neg": compute.Neg[float32], "Relu": compute.Relu[float32], "Exp": compute.Exp[float32],
		"Log": compute.Log[float32], "Sqrt": compute.Sqrt[float32], "Tanh": compute.Tanh[float32], "Sigmoid": compute.Sigmoid[float32],
		"Gelu": compute.Gelu[float32]} {
		unary(name, op)
	}
	for name, op := range map[string]func(*cuda.DeviceBuffer[float32], *cuda.DeviceBuffer[float32], *cuda.DeviceBuffer[float32], *cuda.Stream) error{
		"Add": compute.Add[float32], "Sub": compute.Sub[float32], "Mul": compute.Mul[float32], "Div": compute.Div[float32],
		"Max": compute.Max[float32], "Min": compute.Min[float32]} {
		calls[name] = []error{op(one, one, one, nil), op(one, one, one, zs), op(one, nb, one, s), op(one, one, zb, s)}
	}
	for name, op := range map[string]func(*cuda.DeviceBuffer[float32], *cuda.DeviceBuffer[float32], float32, *cuda.Stream) error{
		"AddScalar": compute.AddScalar[float32], "SubScalar": compute.SubScalar[float32], "MulScalar": compute.MulScalar[float32],
		"DivScalar": compute.DivScalar[float32], "MaxScalar": compute.MaxScalar[float32], "MinScalar": compute.MinScalar[float32]} {
		calls[name] = []error{op(one, one, 1, nil), op(one, one, 1, zs), op(nb, one, 1, s), op(one, zb, 1, s)}
	}
	if (*compute.RawKernel)(nil).Name() != "" || new(compute.RawKernel).Name() != "" {
		t.Error("RawKernel.Name of a nil or zero kernel is not empty")
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
	for _, name := range exportedFuncs(t) {
		if _, ok := calls[name]; !ok {
			t.Errorf("exported %s has no row in TestZeroValues", name)
		}
	}
}

// exportedFuncs returns the package's exported functions, and the exported
// methods of its exported types as Type.Method.
func exportedFuncs(t *testing.T) []string {
	t.Helper()
	var names []string
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
				if ix, ok := recv.(*ast.IndexExpr); ok { // a generic type's method
					recv = ix.X
				}
				if !ast.IsExported(recv.(*ast.Ident).Name) {
					continue // an unexported type's method (an error's Error) is no API of the package
				}
				name = recv.(*ast.Ident).Name + "." + name
			}
			names = append(names, name)
		}
	}
	return names
}
