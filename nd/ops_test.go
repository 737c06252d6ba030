package nd_test

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"unsafe"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/nd"
)

// The operations against the same computation in Go, over the operand
// patterns that take each of the engine's paths: contiguous, broadcast
// rows and columns, transposed, reversed and stepped views, Scalars, 0-d
// and empty arrays.

// hostOf returns a host copy of a (its elements and shape).
func hostOf[T nd.Elem](t testing.TB, a *nd.Array[T]) host[T] {
	t.Helper()
	return host[T]{must(a.ToSlice())(t), a.Shape()}
}

// broadcastShape is NumPy's broadcast of the shapes.
func broadcastShape(shapes ...[]int) []int {
	n := 0
	for _, s := range shapes {
		n = max(n, len(s))
	}
	out := make([]int, n)
	for i := range out {
		out[i] = 1
	}
	for _, s := range shapes {
		for j, d := range s {
			if i := j + n - len(s); d != 1 {
				out[i] = d
			}
		}
	}
	return out
}

// atBroadcast returns h's element at index of the broadcast shape.
func (h host[T]) atBroadcast(index []int) T {
	off := 0
	for i, d := range h.shape {
		j := index[len(index)-len(h.shape)+i]
		if d == 1 {
			j = 0
		}
		off = off*d + j
	}
	return h.data[off]
}

// mapHost computes f over the broadcast of the inputs.
func mapHost[T, U any](f func(xs []T) U, ins ...host[T]) host[U] {
	var shapes [][]int
	for _, in := range ins {
		shapes = append(shapes, in.shape)
	}
	shape := broadcastShape(shapes...)
	out := host[U]{data: []U{}, shape: shape}
	each(shape, func(idx []int) {
		xs := make([]T, len(ins))
		for j, in := range ins {
			xs[j] = in.atBroadcast(idx)
		}
		out.data = append(out.data, f(xs))
	})
	if len(shape) == 0 {
		xs := make([]T, len(ins))
		for j, in := range ins {
			xs[j] = in.data[0]
		}
		out.data = []U{f(xs)}
	}
	return out
}

// close checks that got holds want's elements within a relative tol (0:
// exactly, NaNs equal).
func closeTo[T nd.Elem](t testing.TB, what string, a *nd.Array[T], want host[float64], tol float64) {
	t.Helper()
	got := hostOf(t, a)
	if !slices.Equal(got.shape, want.shape) && !(len(got.shape) == 0 && len(want.shape) == 0) {
		t.Fatalf("%s: shape %v, want %v", what, got.shape, want.shape)
	}
	for i, g := range got.data {
		gf, w := toF64(g), want.data[i]
		if math.IsNaN(w) && math.IsNaN(gf) || gf == w {
			continue
		}
		if tol == 0 || math.Abs(gf-w) > tol*math.Max(1, math.Abs(w)) {
			t.Fatalf("%s: element %d is %v, want %v\ngot  %v\nwant %v", what, i, gf, w, got.data, want.data)
		}
	}
}

// toF64 converts any element to float64.
func toF64[T nd.Elem](v T) float64 {
	switch x := any(v).(type) {
	case cuda.Float16:
		return float64(x.Float32())
	case cuda.BFloat16:
		return float64(x.Float32())
	case float32:
		return float64(x)
	case float64:
		return x
	case nd.Bool:
		return float64(x)
	}
	return float64(v)
}

// floats returns n values, integers and halves among them, and a NaN
// where nan.
func floats(n int, seed float64, nan bool) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = float32(math.Round(math.Sin(float64(i)*1.7+seed)*8*4) / 4)
	}
	if nan && n > 2 {
		out[n/2] = float32(math.NaN())
	}
	return out
}

func toHost64(h host[float32]) host[float64] {
	out := host[float64]{data: make([]float64, len(h.data)), shape: h.shape}
	for i, v := range h.data {
		out.data[i] = float64(v)
	}
	return out
}

// operandCase is a pair of operands of a binary operation.
type operandCase struct {
	name string
	a, b func(t *testing.T) *nd.Array[float32]
}

// operandCases returns pairs that take every path of the engine, from a
// 4×3 base and a 3×4 one.
func operandCases(s *cuda.Stream) []operandCase {
	arr := func(shape ...int) func(t *testing.T) *nd.Array[float32] {
		return func(t *testing.T) *nd.Array[float32] {
			n := 1
			for _, d := range shape {
				n *= d
			}
			return free(t, must(nd.FromSlice(s, floats(n, float64(len(shape)+n), false), shape...))(t))
		}
	}
	view := func(base func(*testing.T) *nd.Array[float32], f func(*nd.Array[float32]) (*nd.Array[float32], error)) func(t *testing.T) *nd.Array[float32] {
		return func(t *testing.T) *nd.Array[float32] { return must(f(base(t)))(t) }
	}
	scalar := func(v float32) func(*testing.T) *nd.Array[float32] {
		return func(*testing.T) *nd.Array[float32] { return nd.Scalar(v) }
	}
	transposed := view(arr(3, 4), func(a *nd.Array[float32]) (*nd.Array[float32], error) { return a.T(), nil })
	return []operandCase{
		{"contiguous", arr(4, 3), arr(4, 3)},
		{"row", arr(4, 3), arr(3)},
		{"column", arr(4, 1), arr(1, 3)},
		{"transposed", transposed, arr(4, 3)},
		{"both transposed", transposed, transposed},
		{"reversed", view(arr(4, 3), func(a *nd.Array[float32]) (*nd.Array[float32], error) { return a.Slice(0, nd.None, nd.None, -1) }), arr(3)},
		{"stepped", view(arr(8, 3), func(a *nd.Array[float32]) (*nd.Array[float32], error) { return a.Slice(0, 1, nd.None, 2) }), transposed},
		{"scalar", arr(4, 3), scalar(2.5)},
		{"scalar first", scalar(-1.5), transposed},
		{"0-d", arr(), arr()},
		{"0-d and matrix", arr(), arr(4, 3)},
		{"empty", arr(0, 3), arr(3)},
		{"3-d broadcast", arr(2, 1, 3), arr(4, 1)},
	}
}

// TestBinary: each binary operation, allocating and Into, over every
// operand pattern, against Go.
func TestBinary(t *testing.T) {
	requireKernels(t)
	s := stream(t)
	ops := []struct {
		name string
		f    func(a, b *nd.Array[float32]) (*nd.Array[float32], error)
		into func(dst, a, b *nd.Array[float32]) error
		ref  func(x, y float64) float64
	}{
		{"Add", nd.Add[float32], nd.AddInto[float32], func(x, y float64) float64 { return float64(float32(x) + float32(y)) }},
		{"Sub", nd.Sub[float32], nd.SubInto[float32], func(x, y float64) float64 { return float64(float32(x) - float32(y)) }},
		{"Mul", nd.Mul[float32], nd.MulInto[float32], func(x, y float64) float64 { return float64(float32(x) * float32(y)) }},
		{"Div", nd.Div[float32], nd.DivInto[float32], func(x, y float64) float64 { return float64(float32(x) / float32(y)) }},
		{"Maximum", nd.Maximum[float32], nd.MaximumInto[float32], func(x, y float64) float64 {
			if math.IsNaN(x) || math.IsNaN(y) {
				return math.NaN()
			}
			return math.Max(x, y)
		}},
		{"Minimum", nd.Minimum[float32], nd.MinimumInto[float32], func(x, y float64) float64 {
			if math.IsNaN(x) || math.IsNaN(y) {
				return math.NaN()
			}
			return math.Min(x, y)
		}},
		{"Pow", nd.Pow[float32], nd.PowInto[float32], func(x, y float64) float64 { return float64(float32(math.Pow(x, y))) }},
	}
	for _, c := range operandCases(s) {
		for _, o := range ops {
			t.Run(c.name+"/"+o.name, func(t *testing.T) {
				a, b := c.a(t), c.b(t)
				want := mapHost(func(xs []float64) float64 { return o.ref(xs[0], xs[1]) }, toHost64(hostOf(t, a)), toHost64(hostOf(t, b)))
				tol := 0.0
				if o.name == "Pow" || o.name == "Div" {
					tol = 1e-6
				}
				got := free(t, must(o.f(a, b))(t))
				closeTo(t, o.name, got, want, tol)
				dst := free(t, must(nd.Full(s, float32(99), want.shape...))(t))
				if err := o.into(dst, a, b); err != nil {
					t.Fatal(err)
				}
				closeTo(t, o.name+"Into", dst, want, tol)
				// Into a transposed view: the base holds the transpose.
				if len(want.shape) == 2 {
					base := free(t, must(nd.Zeros[float32](s, want.shape[1], want.shape[0]))(t))
					if err := o.into(base.T(), a, b); err != nil {
						t.Fatal(err)
					}
					closeTo(t, o.name+"Into a view", base.T(), want, tol)
				}
			})
		}
	}
}

// TestCompare: the comparisons give masks, NaN comparing false but for
// NotEqual; the logical operations combine them; Where picks by them.
func TestCompare(t *testing.T) {
	requireKernels(t)
	s := stream(t)
	cmps := []struct {
		name string
		f    func(a, b *nd.Array[float32]) (*nd.Array[nd.Bool], error)
		ref  func(x, y float64) bool
	}{
		{"==", nd.Equal[float32], func(x, y float64) bool { return x == y }},
		{"!=", nd.NotEqual[float32], func(x, y float64) bool { return x != y }},
		{"<", nd.Less[float32], func(x, y float64) bool { return x < y }},
		{"<=", nd.LessEqual[float32], func(x, y float64) bool { return x <= y }},
		{">", nd.Greater[float32], func(x, y float64) bool { return x > y }},
		{">=", nd.GreaterEqual[float32], func(x, y float64) bool { return x >= y }},
	}
	a := free(t, must(nd.FromSlice(s, floats(12, 1, true), 4, 3))(t))
	b := free(t, must(nd.FromSlice(s, floats(3, 1, false), 3))(t))
	ha, hb := toHost64(hostOf(t, a)), toHost64(hostOf(t, b))
	b2f := func(v bool) float64 {
		if v {
			return 1
		}
		return 0
	}
	for _, c := range cmps {
		t.Run(c.name, func(t *testing.T) {
			want := mapHost(func(xs []float64) float64 { return b2f(c.ref(xs[0], xs[1])) }, ha, hb)
			m := free(t, must(c.f(a, b))(t))
			closeTo(t, c.name, m, want, 0)
			into := free(t, must(nd.Zeros[nd.Bool](s, 4, 3))(t))
			if err := nd.CompareInto(into, a, b, c.name); err != nil {
				t.Fatal(err)
			}
			closeTo(t, "CompareInto "+c.name, into, want, 0)
			w := free(t, must(nd.Where(m, a, nd.Scalar[float32](-100)))(t))
			closeTo(t, "Where", w, mapHost(func(xs []float64) float64 {
				if c.ref(xs[0], xs[1]) {
					return xs[0]
				}
				return -100
			}, ha, hb), 0)
		})
	}
	lt := free(t, must(nd.Less(a, b))(t))
	nan := free(t, must(nd.IsNaN(a))(t))
	closeTo(t, "IsNaN", nan, mapHost(func(xs []float64) float64 { return b2f(math.IsNaN(xs[0])) }, ha), 0)
	closeTo(t, "LogicalOr", free(t, must(nd.LogicalOr(lt, nan))(t)), mapHost(func(xs []float64) float64 {
		return b2f(xs[0] < xs[1] || math.IsNaN(xs[0]))
	}, ha, hb), 0)
	closeTo(t, "LogicalAnd", free(t, must(nd.LogicalAnd(lt, nd.Scalar[nd.Bool](1)))(t)), mapHost(func(xs []float64) float64 { return b2f(xs[0] < xs[1]) }, ha, hb), 0)
	closeTo(t, "LogicalNot", free(t, must(nd.LogicalNot(nan))(t)), mapHost(func(xs []float64) float64 { return b2f(!math.IsNaN(xs[0])) }, ha), 0)
}

// TestUnary: the functions of one array over a strided view, against Go
// in float64 (float32's functions within a few ulps).
func TestUnary(t *testing.T) {
	requireKernels(t)
	s := stream(t)
	data := floats(24, 3, false)
	data[13] = float32(math.NaN())
	base := free(t, must(nd.FromSlice(s, data, 4, 6))(t))
	a := must(base.Slice(1, nd.None, nd.None, -2))(t) // 4×3, strided and reversed, with the NaN
	a = a.T()
	ha := toHost64(hostOf(t, a))
	for _, o := range []struct {
		name string
		f    func(*nd.Array[float32]) (*nd.Array[float32], error)
		ref  func(float64) float64
		tol  float64
	}{
		{"Neg", nd.Neg[float32], func(x float64) float64 { return -x }, 0},
		{"Abs", nd.Abs[float32], math.Abs, 0},
		{"Sign", nd.Sign[float32], func(x float64) float64 {
			switch {
			case x > 0:
				return 1
			case x < 0:
				return -1
			}
			return x
		}, 0},
		{"Relu", nd.Relu[float32], func(x float64) float64 {
			if x > 0 || math.IsNaN(x) {
				return x
			}
			return 0
		}, 0},
		{"Exp", nd.Exp[float32], math.Exp, 1e-6},
		{"Log", nd.Log[float32], math.Log, 1e-6},
		{"Sqrt", nd.Sqrt[float32], math.Sqrt, 1e-7},
		{"Sin", nd.Sin[float32], math.Sin, 1e-6},
		{"Cos", nd.Cos[float32], math.Cos, 1e-6},
		{"Tanh", nd.Tanh[float32], math.Tanh, 1e-6},
		{"Sigmoid", nd.Sigmoid[float32], func(x float64) float64 { return 1 / (1 + math.Exp(-x)) }, 1e-6},
		{"Gelu", nd.Gelu[float32], func(x float64) float64 { return x * 0.5 * (1 + math.Erf(x/math.Sqrt2)) }, 1e-6},
		{"Floor", nd.Floor[float32], math.Floor, 0},
		{"Ceil", nd.Ceil[float32], math.Ceil, 0},
		{"Round", nd.Round[float32], math.RoundToEven, 0},
	} {
		t.Run(o.name, func(t *testing.T) {
			closeTo(t, o.name, free(t, must(o.f(a))(t)), mapHost(func(xs []float64) float64 { return o.ref(xs[0]) }, ha), o.tol)
		})
	}
	t.Run("Clip", func(t *testing.T) {
		closeTo(t, "Clip", free(t, must(nd.Clip(a, -2, 3))(t)), mapHost(func(xs []float64) float64 {
			return math.Max(-2, math.Min(3, xs[0])) + 0*xs[0] // NaN stays
		}, ha), 0)
	})
	t.Run("Cast", func(t *testing.T) {
		h := free(t, must(nd.Cast[cuda.Float16](a))(t))
		want := mapHost(func(xs []float64) float64 { return float64(cuda.NewFloat16(float32(xs[0])).Float32()) }, ha)
		closeTo(t, "Cast to Float16", h, want, 0)
		back := free(t, must(nd.Cast[float64](h))(t))
		closeTo(t, "Cast back", back, want, 0)
		// A NaN's integer is undefined: 0 in its place.
		finite := free(t, must(nd.Where(free(t, must(nd.IsNaN(a))(t)), nd.Scalar[float32](0), a))(t))
		i := free(t, must(nd.Cast[int32](finite))(t))
		closeTo(t, "Cast to int32", i, mapHost(func(xs []float64) float64 {
			if math.IsNaN(xs[0]) {
				return 0
			}
			return math.Trunc(xs[0])
		}, ha), 0)
	})
}

// TestInPlaceOverlap: an Into whose output is an input read in another
// order (a transpose of itself) gives NumPy's answer, as if the input had
// been read first.
func TestInPlaceOverlap(t *testing.T) {
	requireKernels(t)
	s := stream(t)
	a := free(t, must(nd.FromSlice(s, iota[float32](16), 4, 4))(t))
	ha := toHost64(hostOf(t, a))
	at := toHost64(hostOf(t, a.T()))
	want := mapHost(func(xs []float64) float64 { return xs[0] + xs[1] }, ha, at)
	if err := nd.AddInto(a, a, a.T()); err != nil {
		t.Fatal(err)
	}
	closeTo(t, "a += a.T", a, want, 0)
	// Element for element in place needs no copy and is right too.
	if err := nd.MulInto(a, a, nd.Scalar[float32](2)); err != nil {
		t.Fatal(err)
	}
	closeTo(t, "a *= 2", a, mapHost(func(xs []float64) float64 { return 2 * xs[0] }, want), 0)
}

// TestTypes: Add and a comparison of every element type, over a
// transposed view and a broadcast row.
func TestTypes(t *testing.T) {
	requireKernels(t)
	s := stream(t)
	t.Run("int8", func(t *testing.T) { typeCase[int8](t, s) })
	t.Run("uint16", func(t *testing.T) { typeCase[uint16](t, s) })
	t.Run("int32", func(t *testing.T) { typeCase[int32](t, s) })
	t.Run("int64", func(t *testing.T) { typeCase[int64](t, s) })
	t.Run("uint64", func(t *testing.T) { typeCase[uint64](t, s) })
	t.Run("float64", func(t *testing.T) { typeCase[float64](t, s) })
	t.Run("Float16", func(t *testing.T) { typeCase[cuda.Float16](t, s) })
	t.Run("BFloat16", func(t *testing.T) { typeCase[cuda.BFloat16](t, s) })
}

func typeCase[T nd.Elem](t *testing.T, s *cuda.Stream) {
	a := free(t, must(nd.Arange[T](s, 0, 12, 1))(t))
	m := must(a.Reshape(3, 4))(t)
	row := free(t, must(nd.Arange[T](s, 1, 4, 1))(t))
	sum := free(t, must(nd.Add(m.T(), row))(t))
	want := host[float64]{shape: []int{4, 3}}
	each(want.shape, func(i []int) { want.data = append(want.data, float64(i[1]*4+i[0])+float64(i[1]+1)) })
	closeTo(t, "Add", sum, want, 0)
	lt := free(t, must(nd.Less(m.T(), row))(t))
	wlt := host[float64]{shape: []int{4, 3}}
	each(wlt.shape, func(i []int) {
		v := 0.0
		if i[1]*4+i[0] < i[1]+1 {
			v = 1
		}
		wlt.data = append(wlt.data, v)
	})
	closeTo(t, "Less", lt, wlt, 0)
	p := free(t, must(nd.Pow(row, nd.Scalar(row2[T]())))(t))
	closeTo(t, "Pow", p, host[float64]{[]float64{1, 4, 9}, []int{3}}, 0)
}

func row2[T nd.Elem]() T {
	var v T
	switch p := any(&v).(type) {
	case *cuda.Float16:
		*p = cuda.NewFloat16(2)
	case *cuda.BFloat16:
		*p = cuda.NewBFloat16(2)
	default:
		v = T(2)
	}
	return v
}

// TestRamps: Arange, Linspace, Eye and Full of 8-byte values.
func TestRamps(t *testing.T) {
	requireKernels(t)
	s := stream(t)
	closeTo(t, "Arange", free(t, must(nd.Arange[float32](s, 1, 2, 0.25))(t)), host[float64]{[]float64{1, 1.25, 1.5, 1.75}, []int{4}}, 0)
	closeTo(t, "Arange down", free(t, must(nd.Arange[int32](s, 5, 0, -2))(t)), host[float64]{[]float64{5, 3, 1}, []int{3}}, 0)
	closeTo(t, "Arange empty", free(t, must(nd.Arange[int32](s, 5, 0, 2))(t)), host[float64]{[]float64{}, []int{0}}, 0)
	closeTo(t, "Linspace", free(t, must(nd.Linspace[float64](s, 0, 1, 5))(t)), host[float64]{[]float64{0, 0.25, 0.5, 0.75, 1}, []int{5}}, 0)
	closeTo(t, "Linspace 1", free(t, must(nd.Linspace[float64](s, 3, 7, 1))(t)), host[float64]{[]float64{3}, []int{1}}, 0)
	lin := must(free(t, must(nd.Linspace[float32](s, -1, 0.3, 7))(t)).ToSlice())(t)
	if lin[6] != 0.3 {
		t.Errorf("Linspace's last is %v, want stop exactly", lin[6])
	}
	closeTo(t, "Eye", free(t, must(nd.Eye[float32](s, 2, 3))(t)), host[float64]{[]float64{1, 0, 0, 0, 1, 0}, []int{2, 3}}, 0)
	closeTo(t, "Full float64", free(t, must(nd.Full(s, 0.1, 3))(t)), host[float64]{[]float64{0.1, 0.1, 0.1}, []int{3}}, 0)
	v := free(t, must(nd.Zeros[float64](s, 3, 4))(t))
	if err := nd.Fill(must(v.Slice(1, 1, 3, 1))(t), -2); err != nil {
		t.Fatal(err)
	}
	closeTo(t, "Fill a view", v, host[float64]{[]float64{0, -2, -2, 0, 0, -2, -2, 0, 0, -2, -2, 0}, []int{3, 4}}, 0)
}

// TestResultOrder: an operation on a transposed view lays its result out
// in the view's memory order (NumPy's order K), so that it reads and
// writes in one pass: the result is itself transposed, and holds the
// right values.
func TestResultOrder(t *testing.T) {
	requireKernels(t)
	s := stream(t)
	a := free(t, must(nd.FromSlice(s, floats(24, 1, false), 2, 3, 4))(t))
	v := must(a.Permute(2, 0, 1))(t)
	r := free(t, must(nd.Neg(v))(t))
	if got, want := r.Strides(), []int{1, 12, 4}; !slices.Equal(got, want) {
		t.Errorf("Neg of a permuted view: strides %v, want %v (its operand's order)", got, want)
	}
	closeTo(t, "Neg", r, mapHost(func(xs []float64) float64 { return -xs[0] }, toHost64(hostOf(t, v))), 0)
	// A broadcast operand does not set the order; the first of the
	// result's shape does.
	row := free(t, must(nd.FromSlice(s, floats(2, 5, false), 2))(t))
	m := free(t, must(nd.FromSlice(s, floats(6, 6, false), 2, 3))(t))
	r2 := free(t, must(nd.Add(row, m.T()))(t))
	if !slices.Equal(r2.Strides(), []int{1, 3}) {
		t.Errorf("Add(row, m.T()): strides %v, want m.T()'s order [1 3]", r2.Strides())
	}
	c := free(t, must(nd.Add(m, m))(t))
	if !c.IsContiguous() {
		t.Errorf("Add of contiguous arrays: strides %v, want row-major", c.Strides())
	}
}

// TestBoolCasts: Cast to and from Bool as NumPy's astype, any nonzero
// value true and true 1 (a byte's conversion made 0.5 and 256 false, and
// a true byte of 2 the number 2); and Clip with lo above hi is hi, as
// NumPy's minimum(maximum(a, lo), hi) (it gave lo where a < lo).
func TestBoolCasts(t *testing.T) {
	requireKernels(t)
	s := stream(t)
	nan := float32(math.NaN())
	for _, c := range []struct {
		name string
		f    func() ([]nd.Bool, error)
		want []nd.Bool
	}{
		{"float32 to Bool", func() ([]nd.Bool, error) {
			return castTo[nd.Bool](s, []float32{0, 0.5, 2, -1, nan, float32(math.Copysign(0, -1))})
		}, []nd.Bool{0, 1, 1, 1, 1, 0}},
		{"int32 to Bool", func() ([]nd.Bool, error) { return castTo[nd.Bool](s, []int32{0, 256, 2, -256}) }, []nd.Bool{0, 1, 1, 1}},
		{"float16 to Bool", func() ([]nd.Bool, error) {
			return castTo[nd.Bool](s, []cuda.Float16{cuda.NewFloat16(0), cuda.NewFloat16(0.25), cuda.NewFloat16(-3)})
		}, []nd.Bool{0, 1, 1}},
		{"Bool to Bool", func() ([]nd.Bool, error) { return castTo[nd.Bool](s, []nd.Bool{0, 2, 255}) }, []nd.Bool{0, 1, 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := c.f()
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, c.want) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
		})
	}
	t.Run("Bool to float32 and int64", func(t *testing.T) {
		in := []nd.Bool{0, 1, 2, 255}
		f := must(castTo[float32](s, in))(t)
		i := must(castTo[int64](s, in))(t)
		if !slices.Equal(f, []float32{0, 1, 1, 1}) || !slices.Equal(i, []int64{0, 1, 1, 1}) {
			t.Fatalf("got %v and %v, want [0 1 1 1]", f, i)
		}
	})
	t.Run("Clip lo above hi", func(t *testing.T) {
		a := free(t, must(nd.FromSlice(s, []float32{1, nan, 3, 9}))(t))
		got := free(t, must(nd.Clip(a, 5, 2))(t))
		closeTo(t, "Clip(a, 5, 2)", got, host[float64]{[]float64{2, math.NaN(), 2, 2}, []int{4}}, 0)
		if err := nd.ClipInto(a, a, 5, 2); err != nil {
			t.Fatal(err)
		}
		closeTo(t, "ClipInto(a, a, 5, 2)", a, host[float64]{[]float64{2, math.NaN(), 2, 2}, []int{4}}, 0)
		l := free(t, must(nd.Lazy(a).Clip(5, 2).Eval())(t))
		closeTo(t, "Lazy(a).Clip(5, 2)", l, host[float64]{[]float64{2, math.NaN(), 2, 2}, []int{4}}, 0)
	})
}

// castTo returns data cast to U on the device, and CastInto's result,
// which must agree.
func castTo[U, T nd.Elem](s *cuda.Stream, data []T) ([]U, error) {
	a, err := nd.FromSlice(s, data)
	if err != nil {
		return nil, err
	}
	defer a.Free()
	c, err := nd.Cast[U](a)
	if err != nil {
		return nil, err
	}
	defer c.Free()
	d, err := nd.Empty[U](s, len(data))
	if err != nil {
		return nil, err
	}
	defer d.Free()
	if err := nd.CastInto(d, a); err != nil {
		return nil, err
	}
	got, err := c.ToSlice()
	if err != nil {
		return nil, err
	}
	into, err := d.ToSlice()
	if err != nil {
		return nil, err
	}
	if !slices.Equal(got, into) {
		return nil, fmt.Errorf("Cast gave %v and CastInto %v", got, into)
	}
	return got, nil
}

// TestIntegerDivision: Div of integers truncates toward zero, a division
// by zero gives 0 and the most negative value divided by -1 itself, as
// NumPy's, on every path (contiguous, strided, a Scalar divisor, fused):
// before, either stopped the fake driver's process with SIGFPE (its
// kernels run on the CPU), and gave the GPU's undefined values.
func TestIntegerDivision(t *testing.T) {
	requireKernels(t)
	s := stream(t)
	t.Run("int8", func(t *testing.T) { integerDivision[int8](t, s) })
	t.Run("int16", func(t *testing.T) { integerDivision[int16](t, s) })
	t.Run("int32", func(t *testing.T) { integerDivision[int32](t, s) })
	t.Run("int64", func(t *testing.T) { integerDivision[int64](t, s) })
	t.Run("uint8", func(t *testing.T) { integerDivision[uint8](t, s) })
	t.Run("uint32", func(t *testing.T) { integerDivision[uint32](t, s) })
	t.Run("uint64", func(t *testing.T) { integerDivision[uint64](t, s) })
}

func integerDivision[T interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint32 | ~uint64
}](t *testing.T, s *cuda.Stream) {
	var zero T
	minus1 := zero - 1 // the largest value where T is unsigned
	lowest, one := zero, T(1)
	if minus1 < 0 {
		lowest = one << (8*unsafe.Sizeof(zero) - 1) // the most negative
	}
	as := []T{7, minus1, lowest, 0, 5, lowest, 9, 3}
	bs := []T{2, 0, minus1, 0, minus1, 1, 0, 3}
	div := func(a, b T) T {
		switch {
		case b == 0:
			return 0
		case b == minus1 && minus1 < 0:
			return zero - a // wraps, as Go's does
		}
		return a / b
	}
	want := make([]float64, len(as))
	for i := range as {
		want[i] = toF64(div(as[i], bs[i]))
	}
	a := free(t, must(nd.FromSlice(s, as, 2, 4))(t))
	b := free(t, must(nd.FromSlice(s, bs, 2, 4))(t))
	h := host[float64]{want, []int{2, 4}}
	closeTo(t, "Div", free(t, must(nd.Div(a, b))(t)), h, 0)
	closeTo(t, "Lazy Div", free(t, must(nd.Lazy(a).Div(nd.Lazy(b)).Eval())(t)), h, 0)
	// Transposed: the strided kernel.
	ht := host[float64]{make([]float64, 8), []int{4, 2}}
	for i := range 4 {
		for j := range 2 {
			ht.data[i*2+j] = want[j*4+i]
		}
	}
	closeTo(t, "Div of transposes", free(t, must(nd.Div(a.T(), b.T()))(t)), ht, 0)
	d := free(t, must(nd.Zeros[T](s, 2, 4))(t))
	if err := nd.DivInto(d, a, nd.Scalar(zero)); err != nil {
		t.Fatal(err)
	}
	closeTo(t, "DivInto by a Scalar 0", d, host[float64]{make([]float64, 8), []int{2, 4}}, 0)
}

// TestManyAxes: arrays whose layouts leave more axes than a kernel
// indexes (12 axes of 2, reversed: none merge) are copied, added and
// summed, one index of the first axis at a time, against Go: before,
// every operation on them, Copy and Contiguous too (what the error
// advised), failed with ErrNotSupported.
func TestManyAxes(t *testing.T) {
	requireKernels(t)
	s := stream(t)
	const rank = 12
	shape := slices.Repeat([]int{2}, rank)
	data := iota[float32](1 << rank)
	a := free(t, must(nd.FromSlice(s, data, shape...))(t))
	perm := make([]int, rank)
	for i := range perm {
		perm[i] = rank - 1 - i
	}
	p := must(a.Permute(perm...))(t)
	// p's element at index i is a's at i reversed: data[bits of i reversed].
	rev := func(i int) int {
		r := 0
		for range rank {
			r, i = r<<1|i&1, i>>1
		}
		return r
	}
	want := host[float64]{make([]float64, 1<<rank), shape}
	for i := range want.data {
		want.data[i] = float64(data[rev(i)])
	}
	step := must(p.Slice(0, nd.None, nd.None, -1))(t) // the first axis reversed too
	wantStep := host[float64]{make([]float64, 1<<rank), shape}
	for i := range wantStep.data {
		wantStep.data[i] = want.data[i^(1<<(rank-1))]
	}
	for _, c := range []struct {
		name string
		f    func() (*nd.Array[float32], error)
		want host[float64]
	}{
		{"Copy", p.Copy, want},
		{"Contiguous", p.Contiguous, want},
		{"Copy of a reversed axis", step.Copy, wantStep},
		{"Add", func() (*nd.Array[float32], error) { return nd.Add(p, a) }, mapHost(func(xs []float64) float64 { return xs[0] + xs[1] }, want, toHost64(host[float32]{data, shape}))},
		{"Mul by a Scalar", func() (*nd.Array[float32], error) { return nd.Mul(p, nd.Scalar[float32](2)) }, mapHost(func(xs []float64) float64 { return 2 * xs[0] }, want)},
		{"Lazy", func() (*nd.Array[float32], error) { return nd.Lazy(p).Sub(nd.Lazy(step)).Eval() }, mapHost(func(xs []float64) float64 { return xs[0] - xs[1] }, want, wantStep)},
		{"Sum over axes 0, 3 and 11", func() (*nd.Array[float32], error) { return nd.Sum(p, nd.Along(0, 3, -1)) }, foldHost(want, []int{0, 3, 11}, false, sum)},
	} {
		t.Run(c.name, func(t *testing.T) {
			closeTo(t, c.name, free(t, must(c.f())(t)), c.want, 0)
		})
	}
	t.Run("CopyInto a permuted dst", func(t *testing.T) {
		d := free(t, must(nd.Zeros[float32](s, shape...))(t))
		if err := nd.CopyInto(must(d.Permute(perm...))(t), a); err != nil {
			t.Fatal(err)
		}
		closeTo(t, "CopyInto", d, want, 0)
	})
}

// TestRampRanges: Arange and Linspace of an integer type refuse values
// outside the type's range (their conversion is undefined: the fake's
// CPU wrapped 256 to 0, a GPU saturates), and make those at its ends.
func TestRampRanges(t *testing.T) {
	requireKernels(t)
	s := stream(t)
	for _, c := range []struct {
		name string
		err  error
		ok   bool
	}{
		{"Arange[uint8] 250 to 260", freedErr(nd.Arange[uint8](s, 250, 260, 1)), false},
		{"Arange[uint8] -2 to 2", freedErr(nd.Arange[uint8](s, -2, 2, 1)), false},
		{"Arange[int8] down to -129", freedErr(nd.Arange[int8](s, 0, -130, -1)), false},
		{"Linspace[int16] to 40000", freedErr(nd.Linspace[int16](s, 0, 40000, 3)), false},
		{"Linspace[uint32] of NaN", freedErr(nd.Linspace[uint32](s, math.NaN(), 1, 3)), false},
		{"Linspace[int64] to 2^63", freedErr(nd.Linspace[int64](s, 0, math.Ldexp(1, 63), 2)), false},
		{"Arange[uint8] 0 to 256", freedErr(nd.Arange[uint8](s, 0, 256, 1)), true},
		{"Arange[int8] 127 down to -128", freedErr(nd.Arange[int8](s, 127, -129, -1)), true},
		{"Arange[uint8] -0.5 to 1", freedErr(nd.Arange[uint8](s, -0.5, 1, 1)), true}, // -0.5 truncates to 0
		{"Linspace[uint8] 0 to 255", freedErr(nd.Linspace[uint8](s, 0, 255, 256)), true},
		{"Linspace[uint8] of 0 values", freedErr(nd.Linspace[uint8](s, -5, 500, 0)), true},
		{"Linspace[uint8] of 1 value", freedErr(nd.Linspace[uint8](s, 3, 500, 1)), true},
		{"Arange[float32] -2 to 2", freedErr(nd.Arange[float32](s, -2, 2, 1)), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			switch {
			case c.ok && c.err != nil:
				t.Errorf("got %v, want no error", c.err)
			case !c.ok && (!errors.Is(c.err, cuda.ErrInvalidValue) || !strings.Contains(c.err.Error(), "are not all values of")):
				t.Errorf("got %v, want ErrInvalidValue saying the values are not all of the type's", c.err)
			}
		})
	}
	closeTo(t, "Arange[int8] by -128", free(t, must(nd.Arange[int8](s, 127, -129, -128))(t)), host[float64]{[]float64{127, -1}, []int{2}}, 0)
}

// TestCastOverSameMemory: CastInto between arrays of two sizes over the
// same memory (FromBuffer of cuda.ViewAs) reads its input as if from a
// copy: their first elements share an address and their layouts are the
// same numbers, but not the same elements (float32s 1 to 4 cast into the
// float64s over them gave [1 2 0 2] on the fake driver).
func TestCastOverSameMemory(t *testing.T) {
	requireKernels(t)
	s := stream(t)
	buf := must(cuda.FromHost(s.Context(), []float32{1, 2, 3, 4, 5, 6, 7, 8}))(t)
	t.Cleanup(func() { buf.Free() })
	wide := must(cuda.ViewAs[float64](buf))(t)
	narrow := must(must(nd.FromBuffer(s, buf))(t).Slice(0, 0, 4, 1))(t)
	d := must(nd.FromBuffer(s, wide))(t)
	if err := nd.CastInto(d, narrow); err != nil {
		t.Fatal(err)
	}
	closeTo(t, "CastInto float64s over float32s", d, host[float64]{[]float64{1, 2, 3, 4}, []int{4}}, 0)
	// And back: the float64s 5 to 8 into the float32s over their first
	// half.
	if err := nd.CopyInto(d, free(t, must(nd.Arange[float64](s, 5, 9, 1))(t))); err != nil {
		t.Fatal(err)
	}
	if err := nd.CastInto(narrow, d); err != nil {
		t.Fatal(err)
	}
	closeTo(t, "CastInto float32s over float64s", narrow, host[float64]{[]float64{5, 6, 7, 8}, []int{4}}, 0)
}
