package compute_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/compute"
	"github.com/gocuda/cuda/internal/cudatest"
	"github.com/gocuda/cuda/nvrtc"
)

// bad is an argument made wrong: which parameter, and how.
type bad struct{ param, kind string }

// kit hands an operation its arguments: for each buffer parameter a good
// buffer of its size, or, for the parameter bad names, one made wrong.
type kit struct {
	ctx, other *cuda.Context
	s          *cuda.Stream
	bad        bad
	sizes      map[string]int // a parameter's good length, where not 8
}

// buf returns the argument of parameter param of T.
func buf[T any](t *testing.T, k *kit, param string) *cuda.DeviceBuffer[T] {
	t.Helper()
	n, ok := k.sizes[param]
	if !ok {
		n = 8
	}
	if k.bad.param != param {
		return zeroed[T](t, k.ctx, n)
	}
	switch k.bad.kind {
	case "nil":
		return nil
	case "zero":
		return new(cuda.DeviceBuffer[T])
	case "closed":
		b := zeroed[T](t, k.ctx, n)
		if err := b.Free(); err != nil {
			t.Fatal(err)
		}
		return b
	case "short":
		return zeroed[T](t, k.ctx, 7)
	case "other context":
		return zeroed[T](t, k.other, n)
	}
	t.Fatalf("no kind %q", k.bad.kind)
	return nil
}

func zeroed[T any](t *testing.T, ctx *cuda.Context, n int) *cuda.DeviceBuffer[T] {
	t.Helper()
	b := must(cuda.Zeroed[T](ctx, n))(t)
	t.Cleanup(func() { b.Free() })
	return b
}

// operation is one exported operation, called as a user calls it.
type operation struct {
	name   string         // as the error names it: "Add", "Elementwise.Launch"
	params []string       // its buffer parameters, by their names in its signature (or the kernel's)
	sizes  map[string]int // a parameter's good length, where not 8
	short  []string       // the parameters for which 7 elements are wrong
	run    func(t *testing.T, k *kit) error
}

// operations are every exported operation of the package, each on float32
// (and on what its other parameters take).
func operations(t *testing.T) []operation {
	f := func(k *kit, p string) *cuda.DeviceBuffer[float32] { return buf[float32](t, k, p) }
	var ops []operation
	binary := map[string]func(dst, a, b *cuda.DeviceBuffer[float32], s *cuda.Stream) error{
		"Add": compute.Add[float32], "Sub": compute.Sub[float32], "Mul": compute.Mul[float32],
		"Div": compute.Div[float32], "Max": compute.Max[float32], "Min": compute.Min[float32],
	}
	for name, op := range binary {
		ops = append(ops, operation{name: name, params: []string{"dst", "a", "b"}, short: []string{"dst", "a", "b"},
			run: func(t *testing.T, k *kit) error { return op(f(k, "dst"), f(k, "a"), f(k, "b"), k.s) }})
	}
	scalar := map[string]func(dst, a *cuda.DeviceBuffer[float32], v float32, s *cuda.Stream) error{
		"AddScalar": compute.AddScalar[float32], "SubScalar": compute.SubScalar[float32], "MulScalar": compute.MulScalar[float32],
		"DivScalar": compute.DivScalar[float32], "MaxScalar": compute.MaxScalar[float32], "MinScalar": compute.MinScalar[float32],
	}
	for name, op := range scalar {
		ops = append(ops, operation{name: name, params: []string{"dst", "a"}, short: []string{"dst", "a"},
			run: func(t *testing.T, k *kit) error { return op(f(k, "dst"), f(k, "a"), 2, k.s) }})
	}
	unary := map[string]func(dst, src *cuda.DeviceBuffer[float32], s *cuda.Stream) error{
		"Abs": compute.Abs[float32], "Neg": compute.Neg[float32], "Relu": compute.Relu[float32], "Exp": compute.Exp[float32],
		"Log": compute.Log[float32], "Sqrt": compute.Sqrt[float32], "Tanh": compute.Tanh[float32], "Sigmoid": compute.Sigmoid[float32],
		"Gelu": compute.Gelu[float32], "Cast": compute.Cast[float32, float32],
	}
	for name, op := range unary {
		ops = append(ops, operation{name: name, params: []string{"dst", "src"}, short: []string{"dst", "src"},
			run: func(t *testing.T, k *kit) error { return op(f(k, "dst"), f(k, "src"), k.s) }})
	}
	whole := map[string]func(dst, src *cuda.DeviceBuffer[float32], s *cuda.Stream) error{
		"Sum": compute.Sum[float32], "MaxOf": compute.MaxOf[float32], "MinOf": compute.MinOf[float32], "Mean": compute.Mean[float32],
	}
	for name, op := range whole {
		ops = append(ops, operation{name: name, params: []string{"dst", "src"}, sizes: map[string]int{"dst": 1}, short: []string{"dst"},
			run: func(t *testing.T, k *kit) error { return op(f(k, "dst"), f(k, "src"), k.s) }})
	}
	sh := compute.Shape{Rows: 2, Cols: 4}
	axis := map[string]func(dst, src *cuda.DeviceBuffer[float32], shape compute.Shape, axis compute.Axis, s *cuda.Stream) error{
		"SumAxis": compute.SumAxis[float32], "MaxAxis": compute.MaxAxis[float32], "MinAxis": compute.MinAxis[float32], "MeanAxis": compute.MeanAxis[float32],
	}
	for name, op := range axis {
		ops = append(ops, operation{name: name, params: []string{"dst", "src"}, sizes: map[string]int{"dst": 2}, short: []string{"dst", "src"},
			run: func(t *testing.T, k *kit) error { return op(f(k, "dst"), f(k, "src"), sh, compute.PerRow, k.s) }})
	}
	matrix := map[string]func(dst, src *cuda.DeviceBuffer[float32], shape compute.Shape, s *cuda.Stream) error{
		"Softmax": compute.Softmax[float32], "LogSoftmax": compute.LogSoftmax[float32], "Transpose": compute.Transpose[float32],
	}
	for name, op := range matrix {
		ops = append(ops, operation{name: name, params: []string{"dst", "src"}, short: []string{"dst", "src"},
			run: func(t *testing.T, k *kit) error { return op(f(k, "dst"), f(k, "src"), sh, k.s) }})
	}
	for name, op := range map[string]func(dst *cuda.DeviceBuffer[int64], src *cuda.DeviceBuffer[float32], s *cuda.Stream) error{
		"ArgMax": compute.ArgMax[float32], "ArgMin": compute.ArgMin[float32]} {
		ops = append(ops, operation{name: name, params: []string{"dst", "src"}, sizes: map[string]int{"dst": 1}, short: []string{"dst"},
			run: func(t *testing.T, k *kit) error { return op(buf[int64](t, k, "dst"), f(k, "src"), k.s) }})
	}
	axpy := must(compute.NewElementwise(compute.ElementwiseSpec{Name: "axpy", InParams: "float32 a, float32 x, float32 y", OutParams: "float32 y", Operation: "y = a * x + y"}))(t)
	sumsq := must(compute.NewReduction(compute.ReductionSpec{Name: "sumsq", InParams: "float32 x", OutParams: "float64 y", MapExpr: "x * x",
		ReduceExpr: "a + b", PostMapExpr: "y = a", Identity: "0", ReduceType: "float64"}))(t)
	return append(ops,
		operation{name: "Fill", params: []string{"dst"}, run: func(t *testing.T, k *kit) error { return compute.Fill(f(k, "dst"), 1, k.s) }},
		operation{name: "Iota", params: []string{"dst"}, run: func(t *testing.T, k *kit) error { return compute.Iota(f(k, "dst"), 0, 1, k.s) }},
		operation{name: "Axpby", params: []string{"x", "y"}, short: []string{"x", "y"}, run: func(t *testing.T, k *kit) error {
			return compute.Axpby(2, f(k, "x"), 3, f(k, "y"), k.s)
		}},
		operation{name: "Where", params: []string{"dst", "mask", "a", "b"}, short: []string{"dst", "mask", "a", "b"}, run: func(t *testing.T, k *kit) error {
			return compute.Where(f(k, "dst"), buf[uint8](t, k, "mask"), f(k, "a"), f(k, "b"), k.s)
		}},
		operation{name: "Elementwise.Launch", params: []string{"x", "y"}, short: []string{"x", "y"}, run: func(t *testing.T, k *kit) error {
			return axpy.Launch(k.s, float32(2), f(k, "x"), f(k, "y"))
		}},
		operation{name: "Reduction.Launch", params: []string{"x", "y"}, sizes: map[string]int{"y": 1}, short: []string{"y"}, run: func(t *testing.T, k *kit) error {
			return sumsq.Launch(k.s, f(k, "x"), buf[float64](t, k, "y"))
		}},
		operation{name: "Reduction.LaunchAxis", params: []string{"x", "y"}, sizes: map[string]int{"y": 4}, short: []string{"x", "y"}, run: func(t *testing.T, k *kit) error {
			return sumsq.LaunchAxis(k.s, sh, compute.PerColumn, f(k, "x"), buf[float64](t, k, "y"))
		}},
	)
}

// TestArgumentNames: every operation's error for a nil, zero, freed,
// wrongly sized or other context's buffer names the operation as the user
// called it and the parameter as its signature names it ("compute: Add:
// ... dst ..."), and so for a nil or zero stream, s; a freed buffer is
// cuda.ErrClosed, found before the compiler is asked for (here NVRTC is
// missing, or the stand-in would compile).
func TestArgumentNames(t *testing.T) {
	ctxs := cudatest.Contexts(t, 2) // the fake's two devices where the machine has fewer (in a child process)
	if ctxs == nil {
		return
	}
	compute.UseNVRTC(t)
	zs := new(cuda.Stream)
	for _, op := range operations(t) {
		t.Run(op.name, func(t *testing.T) {
			for _, p := range op.params {
				for _, kind := range []string{"nil", "zero", "closed", "short", "other context"} {
					if kind == "short" && !contains(op.short, p) {
						continue
					}
					k := &kit{ctx: ctxs[0], other: ctxs[1], s: newStream(t, ctxs[0]), bad: bad{p, kind}, sizes: op.sizes}
					err := op.run(t, k)
					sentinel, want := cuda.ErrInvalidValue, map[string]string{
						"nil":           p + " is a nil *cuda.DeviceBuffer",
						"zero":          p + " is a zero cuda.DeviceBuffer",
						"closed":        p + " is closed",
						"short":         p + " has 7 elements",
						"other context": p + " belongs to another context than s",
					}[kind]
					if kind == "closed" {
						sentinel = cuda.ErrClosed
					}
					msg := fmt.Sprint(err)
					named := strings.Contains(msg, ": "+want) || kind == "short" && strings.Contains(msg, ", and "+p+" 7:")
					if !errors.Is(err, sentinel) || !named || !strings.HasPrefix(msg, "compute: "+op.name+": ") {
						t.Errorf("%s %s: %v; want %v saying \"compute: %s: ...%s...\"", kind, p, err, sentinel, op.name, want)
					}
				}
			}
			for stream, want := range map[*cuda.Stream]string{nil: "s is a nil *cuda.Stream", zs: "s is a zero cuda.Stream"} {
				k := &kit{ctx: ctxs[0], other: ctxs[1], s: stream, sizes: op.sizes}
				if err := op.run(t, k); !errors.Is(err, cuda.ErrInvalidValue) || !strings.Contains(fmt.Sprint(err), "compute: "+op.name+": invalid value: "+want) {
					t.Errorf("stream %v: %v; want ErrInvalidValue saying %q", stream, err, want)
				}
			}
		})
	}
}

func newStream(t *testing.T, ctx *cuda.Context) *cuda.Stream {
	t.Helper()
	s := must(ctx.NewStream())(t)
	t.Cleanup(func() { s.Close() })
	return s
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// TestWithoutNVRTC: where NVRTC is missing, every operation that needs a
// kernel says so in one line of compute's ("compute: Add: NVRTC is not
// installed: ..."), not nvrtc's error inside compute's, and the error still
// wraps nvrtc's: errors.Is finds cuda.ErrNotSupported, errors.As the
// *nvrtc.Error.
func TestWithoutNVRTC(t *testing.T) {
	if _, err := nvrtc.Version(); err == nil {
		t.Skip("NVRTC is installed here")
	}
	e := newEnv(t)
	compute.UseNVRTC(t)
	k := &kit{ctx: e.ctx, other: e.ctx, s: e.s}
	for _, op := range operations(t) {
		k.sizes = op.sizes
		err := op.run(t, k)
		var ne *nvrtc.Error
		msg := fmt.Sprint(err)
		switch {
		case !errors.Is(err, cuda.ErrNotSupported) || !errors.As(err, &ne):
			t.Errorf("%s without NVRTC: %v; want an error wrapping ErrNotSupported and an *nvrtc.Error", op.name, err)
		case !strings.HasPrefix(msg, "compute: "+op.name+": NVRTC is not installed: ") || strings.Contains(msg, "nvrtc:") || len(msg) > 300:
			t.Errorf("%s without NVRTC: %q; want \"compute: %s: NVRTC is not installed: ...\", without nvrtc's prefix", op.name, msg, op.name)
		}
	}
}
