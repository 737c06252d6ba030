package nd_test

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/curand"
	"github.com/gocuda/cuda/internal/cudatest"
	"github.com/gocuda/cuda/internal/fakecuda"
	"github.com/gocuda/cuda/internal/sweep"
	"github.com/gocuda/cuda/internal/track"
	"github.com/gocuda/cuda/nd"
)

// zeroRow is the calls of one exported function or method with nil and
// zero objects (nil and zero arrays, a failed array, nil and zero streams,
// buffers and generators, the zero Expr).
type zeroRow struct {
	// quiet says every error the calls return must be nil: the call does
	// nothing (Free of a nil Array) or takes no object, and the row checks
	// what it returns itself (an error of its own making where it is
	// wrong). Otherwise every error must wrap cuda.ErrInvalidValue.
	quiet bool
	calls func() []error
}

// zeroDefects are the rows that find a defect of package nd: where such a
// row fails it is skipped, saying so, until the defect is fixed (the row
// then passes and its note can go).
var zeroDefects = map[string]string{}

// zeroTypes are the zero values of the package's exported types (nil for
// a constraint, which has no value): every method of each is called on a
// zero and a nil receiver with zero arguments.
var zeroTypes = map[string]any{
	"Array": new(nd.Array[float32]),
	"Expr":  new(nd.Expr[float32]),
	"Axes":  new(nd.Axes),
	"Error": new(nd.Error),
	"Bool":  new(nd.Bool),
	"Elem":  nil, // a constraint
}

// TestZeroValues: every exported function and method of the package,
// called with nil and zero objects, returns an error wrapping
// cuda.ErrInvalidValue (or nil where it does nothing), never panics, and
// calls no driver function: it fails on its arguments before any work.
// Against the fake driver, which counts the calls (on a GPU machine, in a
// child process against it). A new exported function, method or type
// fails the test until it has a row.
func TestZeroValues(t *testing.T) {
	f := cudatest.Fake(t)
	if f == nil {
		return
	}
	rows := zeroRows(t)
	t.Run("rows", func(t *testing.T) {
		for _, name := range sortedKeys(rows) {
			t.Run(name, func(t *testing.T) { checkZeroRow(t, f, name, rows[name]) })
		}
	})
	t.Run("zero receivers", func(t *testing.T) { checkZeroReceivers(t, f) })
	// Every exported function, method and type has a row.
	types, funcs := sweep.ExportedNames(t, map[string]string{".": "nd"})
	for _, name := range funcs {
		if _, ok := rows[strings.TrimPrefix(name, "nd.")]; !ok {
			t.Errorf("exported %s has no row in TestZeroValues", name)
		}
	}
	_, methods := ndNames(t)
	for recv, names := range methods {
		if !isExported(recv) {
			continue // an unexported type's method is no API of the package
		}
		for name := range names {
			if _, ok := rows[recv+"."+name]; !ok {
				t.Errorf("exported method %s.%s has no row in TestZeroValues", recv, name)
			}
		}
	}
	for _, name := range types {
		if _, ok := zeroTypes[strings.TrimPrefix(name, "nd.")]; !ok {
			t.Errorf("exported type %s has no zero value in zeroTypes", name)
		}
	}
}

func isExported(name string) bool { return name != "" && strings.ToUpper(name[:1]) == name[:1] }

// allocFunction is the driver's stream-ordered allocation, which every
// array is made by.
const allocFunction = "cuMemAllocAsync"

// outOfMemory is CUDA's CUDA_ERROR_OUT_OF_MEMORY, the code allocFunction
// is made to fail with.
const outOfMemory = 2

// checkZeroRow runs one row and checks what it returns. The first
// allocation is made to fail meanwhile, so that a call that reaches the
// driver where it should have refused its arguments leaks nothing (the
// row fails on the call it made).
func checkZeroRow(t *testing.T, f *fakecuda.Control, name string, row zeroRow) {
	t.Helper()
	var problems []string
	f.Fail(allocFunction, 1, outOfMemory)
	before, live := f.Calls(), track.Take().Live
	var errs []error
	if p := catchPanic(func() { errs = row.calls() }); p != nil {
		problems = append(problems, fmt.Sprintf("panicked: %v", p))
	}
	if n := f.Calls() - before; n != 0 {
		problems = append(problems, fmt.Sprintf("called the driver %d time(s)", n))
	}
	f.ResetFaults()
	// An allocation may come from the stream's cache of freed memory,
	// without a driver call to fail: an array made and dropped shows as
	// one more buffer alive, which the garbage collector's cleanup then
	// frees (so that the test's own leak check passes where the row is a
	// known defect).
	if n := track.Take().Live[track.DeviceBuffer] - live[track.DeviceBuffer]; n > 0 {
		problems = append(problems, fmt.Sprintf("left %d device buffer(s) alive: an array made and dropped", n))
		cudatest.GC(func() bool { return track.Take().Live[track.DeviceBuffer] <= live[track.DeviceBuffer] })
	}
	if len(errs) == 0 && problems == nil {
		problems = append(problems, "the row makes no call")
	}
	for i, err := range errs {
		switch {
		case row.quiet && err != nil:
			problems = append(problems, fmt.Sprintf("call %d: %v; want nil", i, err))
		case !row.quiet && !errors.Is(err, cuda.ErrInvalidValue):
			problems = append(problems, fmt.Sprintf("call %d: %v; want an error wrapping ErrInvalidValue", i, err))
		case !row.quiet && !strings.HasPrefix(err.Error(), "nd: "):
			problems = append(problems, fmt.Sprintf("call %d: %q is not package nd's error", i, err))
		}
	}
	if len(problems) == 0 {
		if zeroDefects[name] != "" {
			t.Logf("the defect noted in zeroDefects is fixed: its note can go")
		}
		return
	}
	if note := zeroDefects[name]; note != "" {
		t.Skipf("defect: %s\n%s", note, strings.Join(problems, "\n"))
	}
	for _, p := range problems {
		t.Error(p)
	}
}

// checkZeroReceivers calls every method of each zero type's zero value,
// and of its nil pointer (a pointer method), with zero arguments: none
// panics or calls the driver, and each error is nil or wraps
// cuda.ErrInvalidValue. A method added later is called here the day it
// lands, as internal/sweep's ZeroValues calls those of the libraries'.
func checkZeroReceivers(t *testing.T, f *fakecuda.Control) {
	t.Helper()
	for name, zero := range zeroTypes {
		if zero == nil {
			continue
		}
		ptr := reflect.ValueOf(zero)
		values := map[string]bool{} // the methods of value receivers
		for i := range ptr.Elem().NumMethod() {
			values[ptr.Elem().Type().Method(i).Name] = true
		}
		for i := range ptr.NumMethod() {
			m := ptr.Type().Method(i)
			for _, recv := range []struct {
				what string
				v    reflect.Value
			}{{"zero", ptr}, {"nil", reflect.Zero(ptr.Type())}} {
				if recv.what == "nil" && values[m.Name] {
					continue // Go itself dereferences a nil pointer for a value method
				}
				call := fmt.Sprintf("(%s %s).%s", recv.what, name, m.Name)
				f.Fail(allocFunction, 1, outOfMemory)
				before := f.Calls()
				var results []reflect.Value
				p := catchPanic(func() { results = callWithZeros(recv.v.MethodByName(m.Name)) })
				n := f.Calls() - before
				f.ResetFaults()
				if p != nil {
					t.Errorf("%s panicked: %v", call, p)
					continue
				}
				if n != 0 {
					t.Errorf("%s called the driver %d time(s)", call, n)
				}
				for _, r := range results {
					if r.Type() != reflect.TypeFor[error]() || r.IsNil() {
						continue
					}
					if err := r.Interface().(error); !errors.Is(err, cuda.ErrInvalidValue) {
						t.Errorf("%s: %v; want nil or an error wrapping ErrInvalidValue", call, err)
					}
				}
			}
		}
	}
}

// callWithZeros calls m with the zero value of each parameter (none for
// a variadic one).
func callWithZeros(m reflect.Value) []reflect.Value {
	mt := m.Type()
	args := make([]reflect.Value, 0, mt.NumIn())
	for i := range mt.NumIn() {
		if mt.IsVariadic() && i == mt.NumIn()-1 {
			break
		}
		args = append(args, reflect.Zero(mt.In(i)))
	}
	return m.Call(args)
}

// catchPanic runs f and returns what it panicked with, if it did.
func catchPanic(f func()) (p any) {
	defer func() { p = recover() }()
	f()
	return nil
}

// check returns nil where ok, else an error saying what was wrong: a
// quiet row's way of failing on a result.
func check(ok bool, format string, args ...any) error {
	if ok {
		return nil
	}
	return fmt.Errorf(format, args...)
}

// errs collects the errors of calls that return a value and an error.
func errs(list ...error) []error { return list }

// zeroArgs are a row's bad arrays of one element type: nil, the zero
// Array, and a failed one (the stand-in an operation returns with its
// error, which an operation given it must fail on at once).
func zeroArgs[T nd.Elem]() []*nd.Array[T] {
	failed, _ := nd.Empty[T](nil, 1)
	return []*nd.Array[T]{nil, new(nd.Array[T]), failed}
}

// eachBad calls f with each bad array.
func eachBad[T nd.Elem](f func(*nd.Array[T]) error) []error {
	var out []error
	for _, b := range zeroArgs[T]() {
		out = append(out, f(b))
	}
	return out
}

// pairs calls f with each bad array as each operand in turn, the other
// ok.
func pairs[T nd.Elem](ok *nd.Array[T], f func(x, y *nd.Array[T]) error) []error {
	var out []error
	for _, b := range zeroArgs[T]() {
		out = append(out, f(b, ok), f(ok, b))
	}
	return out
}

// triples calls f with each bad array as each of three operands in turn,
// the others ok.
func triples[T nd.Elem](ok *nd.Array[T], f func(x, y, z *nd.Array[T]) error) []error {
	var out []error
	for _, b := range zeroArgs[T]() {
		out = append(out, f(b, ok, ok), f(ok, b, ok), f(ok, ok, b))
	}
	return out
}

// zeroExprs are the bad expressions: the zero Expr, and Lazy of each bad
// array.
func zeroExprs() []nd.Expr[float32] {
	out := []nd.Expr[float32]{{}}
	for _, b := range zeroArgs[float32]() {
		out = append(out, nd.Lazy(b))
	}
	return out
}

// zeroRows returns the rows, by exported name ("Add", "Array.Reshape"),
// over arrays made on a stream of the fake (the ok operands beside the
// bad ones: a call must refuse the bad one before it works on the ok).
func zeroRows(t *testing.T) map[string]zeroRow {
	s := stream(t)
	a := free(t, must(nd.FromSlice(s, iota[float32](6), 2, 3))(t)) // ok operands
	v := free(t, must(nd.FromSlice(s, iota[float32](3)))(t))       // 1-d
	a64 := free(t, must(nd.Zeros[float64](s, 2, 3))(t))
	mask := free(t, must(nd.Zeros[nd.Bool](s, 2, 3))(t))
	idx := free(t, must(nd.Zeros[int64](s, 2))(t))
	take := free(t, must(nd.Zeros[float32](s, 2, 3))(t))   // a's rows at idx
	joined := free(t, must(nd.Zeros[float32](s, 4, 3))(t)) // a and a joined
	buf := cudatest.Upload(t, s.Context(), iota[float32](6))
	g := must(curand.New(s, curand.Philox4x32_10, 1))(t)
	t.Cleanup(func() { g.Close() })
	var (
		zs     = new(cuda.Stream)
		zg     = new(curand.Generator)
		zbuf   = new(cuda.DeviceBuffer[float32])
		data   = iota[float32](2)
		lazy   = nd.Lazy(a)
		anyArr = zeroArgs[float32]()
	)
	rows := map[string]zeroRow{}
	invalid := func(name string, calls func() []error) { rows[name] = zeroRow{calls: calls} }
	quiet := func(name string, calls func() []error) { rows[name] = zeroRow{quiet: true, calls: calls} }

	// Constructors: nil and zero streams, buffers and generators.
	for name, mk := range map[string]func(*cuda.Stream, ...int) (*nd.Array[float32], error){
		"Empty": nd.Empty[float32], "Zeros": nd.Zeros[float32], "Ones": nd.Ones[float32]} {
		invalid(name, func() []error { return errs(second(mk(nil, 2)), second(mk(zs, 2)), second(mk(nil))) })
	}
	invalid("Full", func() []error { return errs(second(nd.Full(nil, float32(1), 2)), second(nd.Full(zs, nd.Bool(1), 2))) })
	invalid("FromSlice", func() []error {
		return errs(second(nd.FromSlice(nil, data)), second(nd.FromSlice(zs, data, 2)), second(nd.FromSlice[float32](nil, nil)))
	})
	invalid("FromBuffer", func() []error {
		return errs(second(nd.FromBuffer(nil, buf)), second(nd.FromBuffer(zs, buf)), second(nd.FromBuffer[float32](s, nil)),
			second(nd.FromBuffer(s, zbuf)), second(nd.FromBuffer(zs, zbuf, 0)))
	})
	invalid("Arange", func() []error {
		return errs(second(nd.Arange[float32](nil, 0, 3, 1)), second(nd.Arange[int32](zs, 0, 3, 1)))
	})
	invalid("Linspace", func() []error {
		return errs(second(nd.Linspace[float32](nil, 0, 1, 3)), second(nd.Linspace[float64](zs, 0, 1, 3)))
	})
	invalid("Eye", func() []error { return errs(second(nd.Eye[float32](nil, 2, 2)), second(nd.Eye[float32](zs, 2, 3))) })
	invalid("Uniform", func() []error {
		return errs(second(nd.Uniform[float32](nil, 2)), second(nd.Uniform[float64](zg, 2)))
	})
	invalid("Normal", func() []error {
		return errs(second(nd.Normal[float32](nil, 0, 1, 2)), second(nd.Normal[float64](zg, 0, 1, 2)))
	})
	invalid("RandInt", func() []error {
		return errs(second(nd.RandInt[int32](nil, 0, 9, 2)), second(nd.RandInt[int64](zg, 0, 9, 2)))
	})
	quiet("Scalar", func() []error {
		x := nd.Scalar[float32](1.5)
		got, err := x.ToSlice()
		return errs(err, x.Free(), check(x.Ndim() == 0 && x.Size() == 1 && x.Stream() == nil && x.Context() == nil &&
			!x.IsView() && slices.Equal(got, []float32{1.5}), "Scalar(1.5): ndim %d, size %d, stream %v, context %v, view %v, %v",
			x.Ndim(), x.Size(), x.Stream(), x.Context(), x.IsView(), got))
	})
	invalid("Fill", func() []error {
		return append(eachBad(func(x *nd.Array[float32]) error { return nd.Fill(x, 1) }), nd.Fill(nd.Scalar[float32](0), 1))
	})
	invalid("Diag", func() []error { return eachBad(func(x *nd.Array[float32]) error { return second(nd.Diag(x)) }) })
	invalid("CopyInto", func() []error { return pairs(a, nd.CopyInto[float32]) })

	// The elementwise operations, of one and two arrays, in both forms.
	for name, op := range map[string]func(*nd.Array[float32]) (*nd.Array[float32], error){
		"Neg": nd.Neg[float32], "Abs": nd.Abs[float32], "Sign": nd.Sign[float32], "Relu": nd.Relu[float32],
		"Exp": nd.Exp[float32], "Log": nd.Log[float32], "Sqrt": nd.Sqrt[float32], "Sin": nd.Sin[float32],
		"Cos": nd.Cos[float32], "Tanh": nd.Tanh[float32], "Sigmoid": nd.Sigmoid[float32], "Gelu": nd.Gelu[float32],
		"Floor": nd.Floor[float32], "Ceil": nd.Ceil[float32], "Round": nd.Round[float32],
		"Cast": nd.Cast[float32, float32],
	} {
		invalid(name, func() []error { return eachBad(func(x *nd.Array[float32]) error { return second(op(x)) }) })
	}
	for name, op := range map[string]func(dst, x *nd.Array[float32]) error{
		"NegInto": nd.NegInto[float32], "AbsInto": nd.AbsInto[float32], "SignInto": nd.SignInto[float32],
		"ReluInto": nd.ReluInto[float32], "ExpInto": nd.ExpInto[float32], "LogInto": nd.LogInto[float32],
		"SqrtInto": nd.SqrtInto[float32], "SinInto": nd.SinInto[float32], "CosInto": nd.CosInto[float32],
		"TanhInto": nd.TanhInto[float32], "SigmoidInto": nd.SigmoidInto[float32], "GeluInto": nd.GeluInto[float32],
		"FloorInto": nd.FloorInto[float32], "CeilInto": nd.CeilInto[float32], "RoundInto": nd.RoundInto[float32],
	} {
		invalid(name, func() []error { return pairs(a, op) })
	}
	invalid("CastInto", func() []error {
		var out []error
		for _, b := range zeroArgs[float64]() {
			out = append(out, nd.CastInto(b, a))
		}
		for _, b := range anyArr {
			out = append(out, nd.CastInto(a64, b))
		}
		return out
	})
	for name, op := range map[string]func(x, y *nd.Array[float32]) (*nd.Array[float32], error){
		"Add": nd.Add[float32], "Sub": nd.Sub[float32], "Mul": nd.Mul[float32], "Div": nd.Div[float32],
		"Pow": nd.Pow[float32], "Maximum": nd.Maximum[float32], "Minimum": nd.Minimum[float32],
	} {
		invalid(name, func() []error { return pairs(a, func(x, y *nd.Array[float32]) error { return second(op(x, y)) }) })
	}
	for name, op := range map[string]func(dst, x, y *nd.Array[float32]) error{
		"AddInto": nd.AddInto[float32], "SubInto": nd.SubInto[float32], "MulInto": nd.MulInto[float32],
		"DivInto": nd.DivInto[float32], "PowInto": nd.PowInto[float32], "MaximumInto": nd.MaximumInto[float32],
		"MinimumInto": nd.MinimumInto[float32],
	} {
		invalid(name, func() []error { return triples(a, op) })
	}
	for name, op := range map[string]func(x, y *nd.Array[float32]) (*nd.Array[nd.Bool], error){
		"Equal": nd.Equal[float32], "NotEqual": nd.NotEqual[float32], "Less": nd.Less[float32],
		"LessEqual": nd.LessEqual[float32], "Greater": nd.Greater[float32], "GreaterEqual": nd.GreaterEqual[float32],
	} {
		invalid(name, func() []error { return pairs(a, func(x, y *nd.Array[float32]) error { return second(op(x, y)) }) })
	}
	invalid("IsClose", func() []error {
		return pairs(a, func(x, y *nd.Array[float32]) error { return second(nd.IsClose(x, y, 1e-5, 1e-8)) })
	})
	invalid("AllClose", func() []error {
		return pairs(a, func(x, y *nd.Array[float32]) error { return second(nd.AllClose(x, y, 1e-5, 1e-8)) })
	})
	invalid("CompareInto", func() []error {
		out := pairs(a, func(x, y *nd.Array[float32]) error { return nd.CompareInto(mask, x, y, "<") })
		for _, b := range zeroArgs[nd.Bool]() {
			out = append(out, nd.CompareInto(b, a, a, "<"), nd.CompareInto(b, a, a, ""))
		}
		return out
	})
	invalid("LogicalAnd", func() []error {
		return pairs(mask, func(x, y *nd.Array[nd.Bool]) error { return second(nd.LogicalAnd(x, y)) })
	})
	invalid("LogicalOr", func() []error {
		return pairs(mask, func(x, y *nd.Array[nd.Bool]) error { return second(nd.LogicalOr(x, y)) })
	})
	invalid("LogicalAndInto", func() []error { return triples(mask, nd.LogicalAndInto) })
	invalid("LogicalOrInto", func() []error { return triples(mask, nd.LogicalOrInto) })
	invalid("LogicalNotInto", func() []error { return pairs(mask, nd.LogicalNotInto) })
	invalid("IsNaNInto", func() []error {
		out := eachBad(func(x *nd.Array[float32]) error { return nd.IsNaNInto(mask, x) })
		return append(out, eachBad(func(d *nd.Array[nd.Bool]) error { return nd.IsNaNInto(d, a) })...)
	})
	invalid("LogicalNot", func() []error { return eachBad(func(x *nd.Array[nd.Bool]) error { return second(nd.LogicalNot(x)) }) })
	invalid("IsNaN", func() []error { return eachBad(func(x *nd.Array[float32]) error { return second(nd.IsNaN(x)) }) })
	invalid("Where", func() []error {
		out := pairs(a, func(x, y *nd.Array[float32]) error { return second(nd.Where(mask, x, y)) })
		for _, b := range zeroArgs[nd.Bool]() {
			out = append(out, second(nd.Where(b, a, a)))
		}
		return out
	})
	invalid("WhereInto", func() []error {
		out := triples(a, func(d, x, y *nd.Array[float32]) error { return nd.WhereInto(d, mask, x, y) })
		for _, b := range zeroArgs[nd.Bool]() {
			out = append(out, nd.WhereInto(a, b, a, a))
		}
		return out
	})
	invalid("Clip", func() []error { return eachBad(func(x *nd.Array[float32]) error { return second(nd.Clip(x, 0, 1)) }) })
	invalid("ClipInto", func() []error {
		return pairs(a, func(d, x *nd.Array[float32]) error { return nd.ClipInto(d, x, 0, 1) })
	})

	// Reductions, with the zero Axes (every axis) and with one named.
	for name, op := range map[string]func(*nd.Array[float32], nd.Axes) (*nd.Array[float32], error){
		"Sum": nd.Sum[float32], "Max": nd.Max[float32], "Min": nd.Min[float32], "Mean": nd.Mean[float32],
		"Prod": nd.Prod[float32], "Var": nd.Var[float32], "Std": nd.Std[float32], "Norm": nd.Norm[float32],
	} {
		invalid(name, func() []error {
			return append(eachBad(func(x *nd.Array[float32]) error { return second(op(x, nd.Axes{})) }),
				eachBad(func(x *nd.Array[float32]) error { return second(op(x, nd.Along(0).KeepDims())) })...)
		})
	}
	for name, op := range map[string]func(*nd.Array[float32], nd.Axes) (*nd.Array[nd.Bool], error){
		"All": nd.All[float32], "Any": nd.Any[float32],
	} {
		invalid(name, func() []error { return eachBad(func(x *nd.Array[float32]) error { return second(op(x, nd.Axes{})) }) })
	}
	for name, op := range map[string]func(dst, x *nd.Array[float32], axes nd.Axes) error{
		"SumInto": nd.SumInto[float32], "MaxInto": nd.MaxInto[float32], "MinInto": nd.MinInto[float32],
		"MeanInto": nd.MeanInto[float32], "ProdInto": nd.ProdInto[float32], "VarInto": nd.VarInto[float32],
		"StdInto": nd.StdInto[float32],
	} {
		invalid(name, func() []error {
			return pairs(a, func(d, x *nd.Array[float32]) error { return op(d, x, nd.Axes{}) })
		})
	}

	for name, op := range map[string]func(dst *nd.Array[nd.Bool], x *nd.Array[float32], axes nd.Axes) error{
		"AllInto": nd.AllInto[float32], "AnyInto": nd.AnyInto[float32],
	} {
		invalid(name, func() []error {
			out := eachBad(func(x *nd.Array[float32]) error { return op(mask, x, nd.Axes{}) })
			return append(out, eachBad(func(d *nd.Array[nd.Bool]) error { return op(d, a, nd.Axes{}) })...)
		})
	}

	// Along one axis.
	for name, op := range map[string]func(*nd.Array[float32], int) (*nd.Array[float32], error){
		"Softmax": nd.Softmax[float32], "LogSoftmax": nd.LogSoftmax[float32], "Cumsum": nd.Cumsum[float32],
		"Diff": nd.Diff[float32],
	} {
		invalid(name, func() []error { return eachBad(func(x *nd.Array[float32]) error { return second(op(x, -1)) }) })
	}
	for name, op := range map[string]func(*nd.Array[float32], int) (*nd.Array[int64], error){
		"ArgMax": nd.ArgMax[float32], "ArgMin": nd.ArgMin[float32],
	} {
		invalid(name, func() []error { return eachBad(func(x *nd.Array[float32]) error { return second(op(x, 0)) }) })
	}
	for name, op := range map[string]func(dst *nd.Array[int64], x *nd.Array[float32], axis int) error{
		"ArgMaxInto": nd.ArgMaxInto[float32], "ArgMinInto": nd.ArgMinInto[float32],
	} {
		invalid(name, func() []error {
			out := eachBad(func(x *nd.Array[float32]) error { return op(idx, x, 1) })
			return append(out, eachBad(func(d *nd.Array[int64]) error { return op(d, a, 1) })...)
		})
	}
	for name, op := range map[string]func(dst, x *nd.Array[float32], axis int) error{
		"SoftmaxInto": nd.SoftmaxInto[float32], "LogSoftmaxInto": nd.LogSoftmaxInto[float32], "CumsumInto": nd.CumsumInto[float32],
	} {
		invalid(name, func() []error {
			return pairs(a, func(d, x *nd.Array[float32]) error { return op(d, x, -1) })
		})
	}

	// Matrix products.
	invalid("Matmul", func() []error {
		return pairs(a, func(x, y *nd.Array[float32]) error { return second(nd.Matmul(x, y)) })
	})
	invalid("MatmulInto", func() []error {
		sq := must(a.Slice(1, 0, 2, 1))(t) // 2×2: a product of two of it has its shape
		return triples(sq, nd.MatmulInto[float32])
	})

	// Gathering and joining.
	invalid("Take", func() []error {
		out := eachBad(func(x *nd.Array[float32]) error { return second(nd.Take(x, idx, 0)) })
		for _, b := range zeroArgs[int64]() {
			out = append(out, second(nd.Take(a, b, 0)))
		}
		return out
	})
	invalid("TakeInto", func() []error {
		out := pairs(a, func(d, x *nd.Array[float32]) error { return nd.TakeInto(d, x, idx, 0) })
		for _, b := range zeroArgs[int64]() {
			out = append(out, nd.TakeInto(take, a, b, 0))
		}
		return out
	})
	invalid("ConcatInto", func() []error {
		out := errs(nd.ConcatInto(joined, nil, 0))
		out = append(out, pairs(a, func(x, y *nd.Array[float32]) error { return nd.ConcatInto(joined, []*nd.Array[float32]{x, y}, 0) })...)
		return append(out, eachBad(func(d *nd.Array[float32]) error { return nd.ConcatInto(d, []*nd.Array[float32]{a, a}, 0) })...)
	})
	invalid("Concat", func() []error {
		out := errs(second(nd.Concat[float32](nil, 0)))
		return append(out, pairs(a, func(x, y *nd.Array[float32]) error { return second(nd.Concat([]*nd.Array[float32]{x, y}, 0)) })...)
	})
	invalid("Stack", func() []error {
		out := errs(second(nd.Stack[float32](nil, 0)))
		return append(out, pairs(a, func(x, y *nd.Array[float32]) error { return second(nd.Stack([]*nd.Array[float32]{x, y}, 0)) })...)
	})
	invalid("Split", func() []error {
		return eachBad(func(x *nd.Array[float32]) error { return second(nd.Split(x, []int{1}, 0)) })
	})
	invalid("Tile", func() []error { return eachBad(func(x *nd.Array[float32]) error { return second(nd.Tile(x, 2)) }) })
	invalid("Repeat", func() []error { return eachBad(func(x *nd.Array[float32]) error { return second(nd.Repeat(x, 2, 0)) }) })
	invalid("Meshgrid", func() []error {
		return pairs(v, func(x, y *nd.Array[float32]) error { return second(nd.Meshgrid(x, y)) })
	})

	// Expressions: the zero Expr, and Lazy of bad arrays, evaluated.
	eval := func(x nd.Expr[float32]) error { return second(x.Eval()) }
	invalid("Lazy", func() []error {
		return eachBad(func(x *nd.Array[float32]) error { return eval(nd.Lazy(x)) })
	})
	invalid("Const", func() []error { // constants alone: no array to give a stream
		return errs(eval(nd.Const[float32](1)), eval(nd.Const[float32](1).Add(nd.Lazy[float32](nil))))
	})
	for name, op := range map[string]func(x, y nd.Expr[float32]) nd.Expr[float32]{
		"Expr.Add": nd.Expr[float32].Add, "Expr.Sub": nd.Expr[float32].Sub, "Expr.Mul": nd.Expr[float32].Mul,
		"Expr.Div": nd.Expr[float32].Div, "Expr.Pow": nd.Expr[float32].Pow, "Expr.Maximum": nd.Expr[float32].Maximum,
		"Expr.Minimum": nd.Expr[float32].Minimum,
	} {
		invalid(name, func() []error {
			var out []error
			for _, b := range zeroExprs() {
				out = append(out, eval(op(b, lazy)), eval(op(lazy, b)))
			}
			return out
		})
	}
	for name, op := range map[string]func(x nd.Expr[float32]) nd.Expr[float32]{
		"Expr.Neg": nd.Expr[float32].Neg, "Expr.Abs": nd.Expr[float32].Abs, "Expr.Sign": nd.Expr[float32].Sign,
		"Expr.Relu": nd.Expr[float32].Relu, "Expr.Exp": nd.Expr[float32].Exp, "Expr.Log": nd.Expr[float32].Log,
		"Expr.Sqrt": nd.Expr[float32].Sqrt, "Expr.Sin": nd.Expr[float32].Sin, "Expr.Cos": nd.Expr[float32].Cos,
		"Expr.Tanh": nd.Expr[float32].Tanh, "Expr.Sigmoid": nd.Expr[float32].Sigmoid, "Expr.Gelu": nd.Expr[float32].Gelu,
		"Expr.Floor": nd.Expr[float32].Floor, "Expr.Ceil": nd.Expr[float32].Ceil, "Expr.Round": nd.Expr[float32].Round,
		"Expr.Clip": func(x nd.Expr[float32]) nd.Expr[float32] { return x.Clip(0, 1) },
		"Expr.Eval": func(x nd.Expr[float32]) nd.Expr[float32] { return x },
	} {
		invalid(name, func() []error {
			var out []error
			for _, b := range zeroExprs() {
				out = append(out, eval(op(b)))
			}
			return out
		})
	}
	invalid("Expr.EvalInto", func() []error {
		var out []error
		for _, b := range zeroExprs() {
			out = append(out, b.EvalInto(a))
		}
		for _, b := range anyArr {
			out = append(out, lazy.EvalInto(b))
		}
		return out
	})
	quiet("Expr.String", func() []error {
		var zero nd.Expr[float32]
		return errs(check(zero.String() == "nd.Expr(zero)", "the zero Expr prints %q", zero),
			check(strings.Contains(zero.Add(lazy).String(), "zero"), "zero + a prints %q", zero.Add(lazy)),
			check(nd.Lazy[float32](nil).String() != "", "Lazy(nil) prints nothing"))
	})

	// Axes, Error and Bool: values of their own.
	quiet("Along", func() []error {
		return errs(check(nd.Along().String() == "axis=None", "Along() is %q", nd.Along()),
			check(nd.Along(0).String() != nd.Along(1).String(), "Along(0) and Along(1) print alike: %q", nd.Along(0)))
	})
	quiet("Axes.KeepDims", func() []error {
		return errs(check(nd.Axes{}.KeepDims().String() == "axis=None, keepdims", "the zero Axes' KeepDims is %q", nd.Axes{}.KeepDims()))
	})
	quiet("Axes.String", func() []error {
		return errs(check(nd.Axes{}.String() == "axis=None", "the zero Axes prints %q", nd.Axes{}))
	})
	quiet("Error.Error", func() []error {
		var nilErr *nd.Error
		return errs(check(nilErr.Error() == "nd: <nil>", "a nil *Error prints %q", nilErr.Error()),
			check(strings.HasPrefix(new(nd.Error).Error(), "nd") && !strings.Contains(new(nd.Error).Error(), "%!"),
				"the zero Error prints %q", new(nd.Error).Error()))
	})
	quiet("Error.Unwrap", func() []error {
		var nilErr *nd.Error
		return errs(check(nilErr.Unwrap() == nil && new(nd.Error).Unwrap() == nil, "Unwrap of a nil or zero Error is not nil"),
			check(!errors.Is(new(nd.Error), cuda.ErrInvalidValue), "the zero Error wraps ErrInvalidValue"))
	})
	quiet("Bool.String", func() []error {
		return errs(check(nd.Bool(0).String() == "false" && nd.Bool(1).String() == "true" && nd.Bool(7).String() == "true",
			"Bool prints %v %v %v", nd.Bool(0), nd.Bool(1), nd.Bool(7)))
	})

	// The methods of a nil, a zero and a failed Array.
	quiet("Array.Shape", func() []error {
		return eachBad(func(x *nd.Array[float32]) error { return check(len(x.Shape()) == 0, "shape %v", x.Shape()) })
	})
	quiet("Array.Strides", func() []error {
		return eachBad(func(x *nd.Array[float32]) error { return check(len(x.Strides()) == 0, "strides %v", x.Strides()) })
	})
	quiet("Array.Ndim", func() []error {
		return eachBad(func(x *nd.Array[float32]) error { return check(x.Ndim() == 0, "ndim %d", x.Ndim()) })
	})
	quiet("Array.Size", func() []error {
		return eachBad(func(x *nd.Array[float32]) error { return check(x.Size() == 0, "size %d", x.Size()) })
	})
	quiet("Array.Stream", func() []error {
		return eachBad(func(x *nd.Array[float32]) error { return check(x.Stream() == nil, "stream %v", x.Stream()) })
	})
	quiet("Array.Context", func() []error {
		return eachBad(func(x *nd.Array[float32]) error { return check(x.Context() == nil, "context %v", x.Context()) })
	})
	quiet("Array.IsContiguous", func() []error {
		return eachBad(func(x *nd.Array[float32]) error { return check(!x.IsContiguous(), "contiguous") })
	})
	quiet("Array.IsView", func() []error {
		return eachBad(func(x *nd.Array[float32]) error { return check(!x.IsView(), "a view") })
	})
	quiet("Array.Dtype", func() []error {
		return eachBad(func(x *nd.Array[float32]) error { return check(x.Dtype() == "float32", "dtype %q", x.Dtype()) })
	})
	quiet("Array.Free", func() []error { return eachBad(func(x *nd.Array[float32]) error { return x.Free() }) })
	quiet("Array.String", func() []error {
		return eachBad(func(x *nd.Array[float32]) error {
			str := x.String()
			return check(str == "nd.Array[float32](invalid)" || strings.HasPrefix(str, "nd.Array[float32](failed: "), "prints %q", str)
		})
	})
	quiet("Array.T", func() []error { // the T of a bad array is a bad array, no panic
		return eachBad(func(x *nd.Array[float32]) error {
			tx := x.T()
			return check(tx != nil && tx.Size() == 0 && errors.Is(second(tx.Reshape(1)), cuda.ErrInvalidValue), "T is %v", tx)
		})
	})
	for name, op := range map[string]func(*nd.Array[float32]) error{
		"Array.Buffer": func(x *nd.Array[float32]) error { return second(x.Buffer()) },
		"Array.Span": func(x *nd.Array[float32]) error {
			_, _, err := x.Span()
			return err
		},
		"Array.ToSlice": func(x *nd.Array[float32]) error { return second(x.ToSlice()) },
		"Array.Item":    func(x *nd.Array[float32]) error { return errors.Join(second(x.Item()), second(x.Item(0))) },
		"Array.Reshape": func(x *nd.Array[float32]) error { return errors.Join(second(x.Reshape()), second(x.Reshape(-1))) },
		"Array.Permute": func(x *nd.Array[float32]) error { return errors.Join(second(x.Permute()), second(x.Permute(0))) },
		"Array.Slice":   func(x *nd.Array[float32]) error { return second(x.Slice(0, nd.None, nd.None, 1)) },
		"Array.Index":   func(x *nd.Array[float32]) error { return second(x.Index(0, 0)) },
		"Array.At":      func(x *nd.Array[float32]) error { return errors.Join(second(x.At()), second(x.At(0))) },
		"Array.BroadcastTo": func(x *nd.Array[float32]) error {
			return errors.Join(second(x.BroadcastTo()), second(x.BroadcastTo(2)))
		},
		"Array.Expand":     func(x *nd.Array[float32]) error { return second(x.Expand(-1)) },
		"Array.Squeeze":    func(x *nd.Array[float32]) error { return second(x.Squeeze()) },
		"Array.Unsqueeze":  func(x *nd.Array[float32]) error { return second(x.Unsqueeze(0)) },
		"Array.Contiguous": func(x *nd.Array[float32]) error { return second(x.Contiguous()) },
		"Array.Copy":       func(x *nd.Array[float32]) error { return second(x.Copy()) },
	} {
		// errors.Join of two calls: each must wrap the sentinel.
		invalid(name, func() []error {
			var out []error
			for _, err := range eachBad(op) {
				if j, ok := err.(interface{ Unwrap() []error }); ok {
					out = append(out, j.Unwrap()...)
					continue
				}
				out = append(out, err)
			}
			return out
		})
	}
	return rows
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
