package nd_test

import (
	"errors"
	"strings"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/curand"
	"github.com/gocuda/cuda/internal/cudatest"
	"github.com/gocuda/cuda/internal/kernelhook"
	"github.com/gocuda/cuda/nd"
	"github.com/gocuda/cuda/nvrtc"
)

// TestKernelsCompile compiles the kernel of every operation, for every
// element type and operand pattern (contiguous, strided, broadcast with a
// Scalar), with a real NVRTC on the fake driver (GOCUDA_LIBNVRTC naming
// one, as a machine without a GPU may have): the fake then refuses to
// load the compiled image, which is how a test tells a kernel that
// compiled from one that did not. On the GPU the numeric tests compile
// and run them all.
func TestKernelsCompile(t *testing.T) {
	if !cudatest.IsFake() {
		t.Skip("on the GPU the numeric tests compile every kernel")
	}
	if _, err := nvrtc.Version(); err != nil {
		t.Skip("no NVRTC here (set GOCUDA_LIBNVRTC to one): ", err)
	}
	if testing.Short() {
		t.Skip("compiles hundreds of kernels")
	}
	// NVRTC, not the host compiler the fake's tests run kernels with.
	hook := kernelhook.Compile
	kernelhook.Compile = nil
	t.Cleanup(func() { kernelhook.Compile = hook })
	s := stream(t)
	compileAll[int8](t, s)
	compileAll[uint16](t, s)
	compileAll[int32](t, s)
	compileAll[uint64](t, s)
	compileAll[float32](t, s)
	compileAll[float64](t, s)
	compileAll[cuda.Float16](t, s)
	compileAll[cuda.BFloat16](t, s)
	compileAll[nd.Bool](t, s)
	compileFloats[float32](t, s)
	compileFloats[float64](t, s)
	compileFloats[cuda.Float16](t, s)
	compileFloats[cuda.BFloat16](t, s)
	mask := free(t, must(nd.Zeros[nd.Bool](s, 2, 3))(t))
	compiled(t, "LogicalAnd", second(nd.LogicalAnd(mask, mask.T().T())))
	compiled(t, "LogicalOr", second(nd.LogicalOr(mask, nd.Scalar[nd.Bool](1))))
	compiled(t, "LogicalNot", second(nd.LogicalNot(mask)))
	g := must(curand.New(s, curand.DefaultRNG, 1))(t)
	defer g.Close()
	compiled(t, "RandInt", second(nd.RandInt[int32](g, 0, 10, 4)))
	compileReductions[int32](t, s)
	compileReductions[float32](t, s)
	compileReductions[cuda.BFloat16](t, s)
	compileReductions[float64](t, s)
}

// compileReductions compiles the reductions and the operations along an
// axis of T: their kernels of this package's own (products, truth values,
// cumulative sums, arg max and min of lines, Take).
func compileReductions[T nd.Elem](t *testing.T, s *cuda.Stream) {
	t.Helper()
	a := free(t, must(nd.Zeros[T](s, 2, 3))(t))
	name := func(op string) string { return op + "[" + a.Dtype() + "]" }
	compiled(t, name("Prod"), second(nd.Prod(a, nd.Along(1))))
	compiled(t, name("All"), second(nd.All(a, nd.Along(1))))
	compiled(t, name("Any"), second(nd.Any(a, nd.Along())))
	compiled(t, name("Cumsum"), second(nd.Cumsum(a, 1)))
	compiled(t, name("ArgMax"), second(nd.ArgMax(a, 1)))
	compiled(t, name("ArgMin"), second(nd.ArgMin(a, 1)))
	idx := free(t, must(nd.Zeros[int64](s, 2))(t))
	compiled(t, name("Take"), second(nd.Take(a, idx, 1)))
}

// compiled checks that err is the fake's refusal of a compiled image.
func compiled(t *testing.T, name string, err error) {
	t.Helper()
	var ne *nvrtc.Error
	switch {
	case errors.As(err, &ne):
		t.Errorf("%s does not compile: %v", name, err)
	case err == nil || !strings.Contains(err.Error(), "runs no device code"):
		t.Errorf("%s: %v, want the fake's refusal of the compiled kernel", name, err)
	}
}

// patterns returns a's operand patterns: a contiguous 2×3 array, a
// transposed view of a 3×2 one, and a row broadcast over rows.
func patterns[T nd.Elem](t *testing.T, s *cuda.Stream) map[string][2]*nd.Array[T] {
	t.Helper()
	a := free(t, must(nd.Zeros[T](s, 2, 3))(t))
	b := free(t, must(nd.Zeros[T](s, 3, 2))(t))
	row := must(a.Index(0, 0))(t)
	return map[string][2]*nd.Array[T]{
		"contiguous": {a, a},
		"strided":    {b.T(), a},
		"broadcast":  {row, nd.Scalar(*new(T))},
	}
}

func compileAll[T nd.Elem](t *testing.T, s *cuda.Stream) {
	t.Helper()
	for p, ab := range patterns[T](t, s) {
		a, b := ab[0], ab[1]
		name := func(op string) string { return op + "[" + a.Dtype() + "] " + p }
		for op, f := range map[string]func(a, b *nd.Array[T]) (*nd.Array[T], error){
			"Add": nd.Add[T], "Sub": nd.Sub[T], "Mul": nd.Mul[T], "Div": nd.Div[T], "Pow": nd.Pow[T],
			"Maximum": nd.Maximum[T], "Minimum": nd.Minimum[T],
		} {
			compiled(t, name(op), second(f(a, b)))
		}
		for op, f := range map[string]func(a, b *nd.Array[T]) (*nd.Array[nd.Bool], error){
			"Equal": nd.Equal[T], "Less": nd.Less[T], "GreaterEqual": nd.GreaterEqual[T],
		} {
			compiled(t, name(op), second(f(a, b)))
		}
		for op, f := range map[string]func(a *nd.Array[T]) (*nd.Array[T], error){
			"Neg": nd.Neg[T], "Abs": nd.Abs[T], "Sign": nd.Sign[T], "Relu": nd.Relu[T], "Copy": (*nd.Array[T]).Copy,
		} {
			compiled(t, name(op), second(f(a)))
		}
		compiled(t, name("IsNaN"), second(nd.IsNaN(a)))
		compiled(t, name("Clip"), second(nd.Clip(a, *new(T), *new(T))))
		compiled(t, name("Cast to float32"), second(nd.Cast[float32](a)))
		compiled(t, name("Cast to bfloat16"), second(nd.Cast[cuda.BFloat16](a)))
		compiled(t, name("Cast from float64"), second(nd.Cast[T](free(t, must(nd.Zeros[float64](s, 2, 3))(t)))))
		mask := free(t, must(nd.Zeros[nd.Bool](s, 3))(t))
		compiled(t, name("Where"), second(nd.Where(mask, a, b)))
		compiled(t, name("IsClose"), second(nd.IsClose(a, b, 1e-5, 1e-8)))
		compiled(t, name("Tile"), second(nd.Tile(a, 2, 1)))
	}
	a := free(t, must(nd.Zeros[T](s, 2, 3))(t))
	compiled(t, "Concat["+typeName[T]()+"] of 3", second(nd.Concat([]*nd.Array[T]{a, a, a}, 1)))
	compiled(t, "Arange["+typeName[T]()+"]", second(nd.Arange[T](s, 0, 10, 3)))
	compiled(t, "Linspace["+typeName[T]()+"]", second(nd.Linspace[T](s, 0, 10, 7)))
}

func compileFloats[T cuda.AnyFloat](t *testing.T, s *cuda.Stream) {
	t.Helper()
	for p, ab := range patterns[T](t, s) {
		a := ab[0]
		for op, f := range map[string]func(a *nd.Array[T]) (*nd.Array[T], error){
			"Exp": nd.Exp[T], "Log": nd.Log[T], "Sqrt": nd.Sqrt[T], "Sin": nd.Sin[T], "Cos": nd.Cos[T], "Tanh": nd.Tanh[T],
			"Sigmoid": nd.Sigmoid[T], "Gelu": nd.Gelu[T], "Floor": nd.Floor[T], "Ceil": nd.Ceil[T], "Round": nd.Round[T],
		} {
			compiled(t, op+"["+a.Dtype()+"] "+p, second(f(a)))
		}
	}
}

func typeName[T nd.Elem]() string { return (&nd.Array[T]{}).Dtype() }

// TestFoldsCompile compiles, as TestKernelsCompile does, the kernels the
// 2×3 patterns above do not reach: the middle-axis fold (nd_mid) of each
// fold and type family, and the broadcast kernel's vector variant (a last
// axis of 16 bytes' multiple, a row broadcast over rows).
func TestFoldsCompile(t *testing.T) {
	if !cudatest.IsFake() {
		t.Skip("on the GPU the numeric tests compile every kernel")
	}
	if _, err := nvrtc.Version(); err != nil {
		t.Skip("no NVRTC here (set GOCUDA_LIBNVRTC to one): ", err)
	}
	hook := kernelhook.Compile
	kernelhook.Compile = nil
	t.Cleanup(func() { kernelhook.Compile = hook })
	s := stream(t)
	compileFolds[int8](t, s)
	compileFolds[int32](t, s)
	compileFolds[float32](t, s)
	compileFolds[float64](t, s)
	compileFolds[cuda.Float16](t, s)
	compileFolds[cuda.BFloat16](t, s)
	mask := free(t, must(nd.Zeros[nd.Bool](s, 2, 3, 8))(t))
	compiled(t, "All[bool] middle", second(nd.All(mask, nd.Along(1))))
	compiled(t, "Any[bool] middle", second(nd.Any(mask, nd.Along(1))))
}

func compileFolds[T nd.Elem](t *testing.T, s *cuda.Stream) {
	t.Helper()
	a := free(t, must(nd.Zeros[T](s, 2, 3, 8))(t))
	name := func(op string) string { return op + "[" + a.Dtype() + "] middle" }
	compiled(t, name("Sum"), second(nd.Sum(a, nd.Along(1))))
	compiled(t, name("Max"), second(nd.Max(a, nd.Along(1))))
	compiled(t, name("Prod"), second(nd.Prod(a, nd.Along(1))))
	m := free(t, must(nd.Zeros[T](s, 4, 8))(t))
	row := free(t, must(nd.Zeros[T](s, 8))(t))
	compiled(t, "Add["+a.Dtype()+"] row broadcast", second(nd.Add(m, row)))
	compiled(t, "Mul["+a.Dtype()+"] column broadcast", second(nd.Mul(m, free(t, must(nd.Zeros[T](s, 4, 1))(t)))))
}
