package nd_test

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/nd"
)

// TestFuse: a fused expression computes what its operations compute one
// by one, over broadcast and strided arrays, an array used twice, and
// constants; Into writes a view.
func TestFuse(t *testing.T) {
	requireKernels(t)
	s := stream(t)
	a := free(t, must(nd.FromSlice(s, floats(12, 1, false), 4, 3))(t))
	b := free(t, must(nd.FromSlice(s, floats(3, 2, false), 3))(t))
	c := free(t, must(nd.FromSlice(s, floats(12, 3, false), 3, 4))(t))
	e := nd.Lazy(a).Mul(nd.Lazy(b)).Add(nd.Lazy(c.T())).Relu().Mul(nd.Lazy(a)).Add(nd.Const[float32](0.5)).Exp()
	if got, want := e.String(), "exp(add(mul(relu(add(mul(a0, a1), a2)), a0), 0.5))"; got != want {
		t.Errorf("String: %s, want %s", got, want)
	}
	want := mapHost(func(xs []float64) float64 {
		v := float32(xs[0])*float32(xs[1]) + float32(xs[2])
		v = float32(math.Max(float64(v), 0)) * float32(xs[0])
		return float64(float32(math.Exp(float64(v + 0.5)))) // float32 overflows where float64 does not
	}, toHost64(hostOf(t, a)), toHost64(hostOf(t, b)), toHost64(hostOf(t, c.T())))
	closeTo(t, "Eval", free(t, must(e.Eval())(t)), want, 1e-6)
	dst := free(t, must(nd.Zeros[float32](s, 3, 4))(t))
	if err := e.EvalInto(dst.T()); err != nil {
		t.Fatal(err)
	}
	closeTo(t, "EvalInto a view", dst.T(), want, 1e-6)
	// In place, the output one of the arrays read in another order.
	sq := free(t, must(nd.FromSlice(s, floats(9, 4, false), 3, 3))(t))
	hsq, hsqT := toHost64(hostOf(t, sq)), toHost64(hostOf(t, sq.T()))
	if err := nd.Lazy(sq).Sub(nd.Lazy(sq.T())).EvalInto(sq); err != nil {
		t.Fatal(err)
	}
	closeTo(t, "in place", sq, mapHost(func(xs []float64) float64 { return xs[0] - xs[1] }, hsq, hsqT), 0)
	// Integers, with their exact Pow.
	i := free(t, must(nd.Arange[int64](s, -3, 4, 1))(t))
	closeTo(t, "int64", free(t, must(nd.Lazy(i).Pow(nd.Const[int64](3)).Add(nd.Lazy(i)).Eval())(t)),
		host[float64]{[]float64{-30, -10, -2, 0, 2, 10, 30}, []int{7}}, 0)
}

// TestFuseErrors: every mistake in an expression is Eval's error.
func TestFuseErrors(t *testing.T) {
	s := stream(t)
	a := free(t, must(nd.Zeros[float32](s, 2, 3))(t))
	i := free(t, must(nd.Zeros[int32](s, 2))(t))
	var zero nd.Expr[float32]
	for _, tt := range []struct {
		name, want string
		err        error
	}{
		{"zero", "a zero Expr", second(zero.Eval())},
		{"zero argument", "a zero Expr among its arguments", second(nd.Lazy(a).Add(zero).Eval())},
		{"nil array", "is a nil *Array", second(nd.Lazy[float32](nil).Eval())},
		// A nil array used twice (it panicked, reading the nil array's
		// fields to tell a constant from an array met again).
		{"nil array twice", "is a nil *Array", second(nd.Lazy[float32](nil).Add(nd.Lazy[float32](nil)).Eval())},
		{"nil array twice into", "is a nil *Array", nd.Lazy[float32](nil).Mul(nd.Lazy[float32](nil)).EvalInto(a)},
		{"nil array twice among others", "is a nil *Array", second(nd.Lazy(a).Add(nd.Lazy[float32](nil)).Mul(nd.Lazy[float32](nil)).Eval())},
		{"float function of ints", "exp is a function of floats, and the expression's type is int32", second(nd.Lazy(i).Exp().Eval())},
		{"shapes", "cannot be broadcast together", second(nd.Lazy(a).Add(nd.Lazy(a.T())).Eval())},
		{"constants only", "every operand is a Scalar", second(nd.Const[float32](1).Exp().Eval())},
		{"into shape", "dst has shape [3 2]", nd.Lazy(a).EvalInto(a.T())},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if !errors.Is(tt.err, cuda.ErrInvalidValue) || !strings.Contains(tt.err.Error(), tt.want) {
				t.Errorf("got %v; want ErrInvalidValue saying %q", tt.err, tt.want)
			}
		})
	}
}

// TestFuseManyArrays: an expression of as many arrays as a kernel takes
// evaluates right (its kernel's name too long for a file before, on the
// fake's compiler); one of more is ErrNotSupported saying why, contiguous
// or strided, never compute's words alone.
func TestFuseManyArrays(t *testing.T) {
	s := stream(t)
	sum := func(n int, transposed bool) (*nd.Array[float32], error) {
		var x nd.Expr[float32]
		for i := range n {
			a := free(t, must(nd.Full[float32](s, float32(i+1), 3, 2))(t))
			if transposed {
				a = a.T()
			}
			if i == 0 {
				x = nd.Lazy(a)
			} else {
				x = x.Add(nd.Lazy(a))
			}
		}
		return x.Eval()
	}
	for _, tt := range []struct {
		n          int
		transposed bool
		fits       bool
	}{
		{40, false, true}, {63, false, true}, {64, false, false},
		{14, true, true}, {15, true, false},
	} {
		t.Run(fmt.Sprintf("%d_transposed_%v", tt.n, tt.transposed), func(t *testing.T) {
			out, err := sum(tt.n, tt.transposed)
			if !tt.fits {
				if !errors.Is(err, cuda.ErrNotSupported) || !strings.Contains(err.Error(), "kernel parameters") {
					t.Fatalf("%d arrays: %v; want ErrNotSupported counting the kernel's parameters", tt.n, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer out.Free()
			want := float32(tt.n * (tt.n + 1) / 2)
			for i, v := range must(out.ToSlice())(t) {
				if v != want {
					t.Fatalf("element %d = %v, want %v", i, v, want)
				}
			}
		})
	}
}

// TestFuseShapes: expressions built again with the same shape reuse the
// first's code; shapes that differ only in which arrays repeat, or in
// their type, each compute their own.
func TestFuseShapes(t *testing.T) {
	requireKernels(t)
	s := stream(t)
	a := free(t, must(nd.FromSlice(s, floats(6, 1, false), 2, 3))(t))
	b := free(t, must(nd.FromSlice(s, floats(6, 2, false), 2, 3))(t))
	ha, hb := toHost64(hostOf(t, a)), toHost64(hostOf(t, b))
	product := func(xs []float64) float64 { return float64(float32(xs[0]) * float32(xs[1])) }
	for _, tt := range []struct {
		name string
		e    nd.Expr[float32]
		want host[float64]
	}{
		{"a·b", nd.Lazy(a).Mul(nd.Lazy(b)), mapHost(product, ha, hb)},
		{"a·b again", nd.Lazy(a).Mul(nd.Lazy(b)), mapHost(product, ha, hb)},
		{"b·a", nd.Lazy(b).Mul(nd.Lazy(a)), mapHost(product, hb, ha)},
		{"a·a", nd.Lazy(a).Mul(nd.Lazy(a)), mapHost(product, ha, ha)},
		{"b·b", nd.Lazy(b).Mul(nd.Lazy(b)), mapHost(product, hb, hb)},
		{"a·a of two nodes", nd.Lazy(a).Mul(nd.Lazy(a)), mapHost(product, ha, ha)},
		{"a·1.5 and a·2", nd.Lazy(a).Mul(nd.Const[float32](1.5)).Add(nd.Lazy(a).Mul(nd.Const[float32](2))),
			mapHost(func(xs []float64) float64 { return float64(float32(xs[0])*1.5 + float32(xs[0])*2) }, ha)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			closeTo(t, tt.name, free(t, must(tt.e.Eval())(t)), tt.want, 0)
		})
	}
	d := free(t, must(nd.Cast[float64](a))(t))
	closeTo(t, "a·a of float64", free(t, must(nd.Lazy(d).Mul(nd.Lazy(d)).Eval())(t)), mapHost(func(xs []float64) float64 { return xs[0] * xs[0] }, ha), 0)
}
