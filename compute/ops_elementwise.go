package compute

import (
	"fmt"
	"strings"
	"sync"

	cuda "github.com/gocuda/cuda"
)

// The standard operations: each an Elementwise or a Reduction made once
// per element type (and kept, with their compiled kernels, by the cache),
// queued on a stream, checked before anything is launched, and capturable
// into a CUDA graph. dst may be one of the inputs (in place), or memory
// apart from them; a dst that overlaps part of an input (a view a few
// elements into it), or an input of another element type at its address,
// is an error, as is a reduction's dst that shares memory with src.

var standard sync.Map // kernel name -> *Elementwise or *Reduction

// stdElementwise returns the standard kernel of that name, declared once.
func stdElementwise(name, in, out, body string) (*Elementwise, error) {
	if k, ok := standard.Load(name); ok {
		return k.(*Elementwise), nil
	}
	k, err := NewElementwise(ElementwiseSpec{Name: name, InParams: in, OutParams: out, Operation: body})
	if err != nil {
		return nil, err
	}
	v, _ := standard.LoadOrStore(name, k)
	return v.(*Elementwise), nil
}

// stdReduction returns the standard reduction of spec's name, declared
// once.
func stdReduction(spec ReductionSpec) (*Reduction, error) {
	if k, ok := standard.Load(spec.Name); ok {
		return k.(*Reduction), nil
	}
	k, err := NewReduction(spec)
	if err != nil {
		return nil, err
	}
	v, _ := standard.LoadOrStore(spec.Name, k)
	return v.(*Reduction), nil
}

// byType are the standard kernels (*Elementwise or *Reduction), by name
// and element types: the lookup of a call, which builds no string.
var byType struct {
	mu sync.RWMutex
	m  map[typedKey]any
}

// typedKey keys a standard kernel by its element types' entries of
// dtypes: a type defined on float32 shares float32's kernels.
type typedKey struct {
	name      string
	t, u      *dtype
	reduction bool // a reduction's name may be an elementwise kernel's ("max")
}

// typed returns the standard kernel of key, declared by declare the first
// time.
func typed[K *Elementwise | *Reduction](key typedKey, declare func() (K, error)) (K, error) {
	byType.mu.RLock()
	k, ok := byType.m[key].(K)
	byType.mu.RUnlock()
	if ok {
		return k, nil
	}
	k, err := declare()
	if err != nil {
		return nil, err
	}
	byType.mu.Lock()
	defer byType.mu.Unlock()
	if byType.m == nil {
		byType.m = map[typedKey]any{}
	}
	byType.m[key] = k
	return k, nil
}

// run launches the standard kernel of name for T (its parameter lists with
// %s for T's name) on as, named op in errors, each argument named as the
// operation's signature names it.
func run[T cuda.Number](op, name, in, out, body string, s *cuda.Stream, as ...arg) error {
	t := dtypePtr[T]()
	k, err := typed(typedKey{name: name, t: t}, func() (*Elementwise, error) {
		return stdElementwise(name+"_"+t.name, strings.ReplaceAll(in, "%s", t.name), strings.ReplaceAll(out, "%s", t.name), body)
	})
	if err != nil {
		return rename(op, err)
	}
	return k.run(op, s, as, -1)
}

// rename makes an error of declaring a standard kernel name the operation.
func rename(op string, err error) error {
	if e, ok := err.(*Error); ok {
		return &Error{Op: op, Err: e.Err, Detail: e.Detail}
	}
	return err
}

// Fill sets every element of dst to v.
func Fill[T cuda.Number](dst *cuda.DeviceBuffer[T], v T, s *cuda.Stream) error {
	return run[T]("Fill", "fill", "%s v", "%s y", "y = v;", s, scalarArg("v", v), bufArg("dst", dst))
}

// Iota sets element i of dst to start + i·step (NumPy's arange), computed
// in T's arithmetic (float32 for Float16 and BFloat16).
func Iota[T cuda.Number](dst *cuda.DeviceBuffer[T], start, step T, s *cuda.Stream) error {
	t := dtypePtr[T]()
	return run[T]("Iota", "iota", "%s start, %s step", "%s y", fmt.Sprintf("y = start + (%s)i * step;", t.value), s,
		scalarArg("start", start), scalarArg("step", step), bufArg("dst", dst))
}

// Cast copies src into dst, converting each element as Go's conversion
// does: Float16 and BFloat16 results round to nearest, ties to even, bit
// for bit as cuda.NewFloat16 and cuda.NewBFloat16 (a float64 first rounds
// to float32, as NewFloat16(float32(x)) does); floats to integers truncate
// toward zero (out of range: undefined, as in Go). The lengths must match.
func Cast[To, From cuda.Number](dst *cuda.DeviceBuffer[To], src *cuda.DeviceBuffer[From], s *cuda.Stream) error {
	const op = "Cast"
	from, to := dtypePtr[From](), dtypePtr[To]()
	k, err := typed(typedKey{name: "cast", t: from, u: to}, func() (*Elementwise, error) {
		body := "y = x;"
		if from.half != "" && !to.float {
			body = fmt.Sprintf("y = (%s)x;", to.value)
		}
		return stdElementwise("cast_"+from.name+"_"+to.name, from.name+" x", to.name+" y", body)
	})
	if err != nil {
		return rename(op, err)
	}
	as := [2]arg{bufArg("src", src), bufArg("dst", dst)}
	return k.run(op, s, as[:], -1)
}

// binary bodies: a and b, into y.
var binaryBodies = map[string][2]string{ // integer, float
	"add": {"y = a + b;", "y = a + b;"},
	"sub": {"y = a - b;", "y = a - b;"},
	"mul": {"y = a * b;", "y = a * b;"},
	// An integer divided by zero is 0 (NumPy's), and the most negative
	// divided by -1 itself (Go's), where the device's division gives
	// what it likes and the host's, for the fake driver, traps.
	"div": {"y = b == 0 ? 0 : b == -1 ? (decltype(a))(0ULL - (unsigned long long)a) : a / b;", "y = a / b;"},
	"max": {"y = a > b ? a : b;", "y = (a != a) ? a : (b != b) ? b : (a > b ? a : b);"},
	"min": {"y = a < b ? a : b;", "y = (a != a) ? a : (b != b) ? b : (a < b ? a : b);"},
}

func binary[T cuda.Number](op, name string, dst *cuda.DeviceBuffer[T], a, b arg, s *cuda.Stream) error {
	t := dtypePtr[T]()
	body := binaryBodies[name][0]
	switch {
	case t.float:
		body = binaryBodies[name][1]
	case name == "div" && !t.signed: // no -1: its largest value
		body = "y = b == 0 ? 0 : a / b;"
	}
	// The variant for a scalar b is compiled apart (Elementwise keys by it).
	return run[T](op, name, "%s a, %s b", "%s y", body, s, a, b, bufArg("dst", dst))
}

// Add sets dst = a + b, element by element.
func Add[T cuda.Number](dst, a, b *cuda.DeviceBuffer[T], s *cuda.Stream) error {
	return binary("Add", "add", dst, bufArg("a", a), bufArg("b", b), s)
}

// Sub sets dst = a - b.
func Sub[T cuda.Number](dst, a, b *cuda.DeviceBuffer[T], s *cuda.Stream) error {
	return binary("Sub", "sub", dst, bufArg("a", a), bufArg("b", b), s)
}

// Mul sets dst = a · b.
func Mul[T cuda.Number](dst, a, b *cuda.DeviceBuffer[T], s *cuda.Stream) error {
	return binary("Mul", "mul", dst, bufArg("a", a), bufArg("b", b), s)
}

// Div sets dst = a / b (for integers, truncated; a division by zero gives
// 0, as NumPy's, not an error, and the most negative value divided by -1
// itself, as Go's).
func Div[T cuda.Number](dst, a, b *cuda.DeviceBuffer[T], s *cuda.Stream) error {
	return binary("Div", "div", dst, bufArg("a", a), bufArg("b", b), s)
}

// Max sets dst to the larger of a and b (a NaN wins, as in NumPy's maximum).
func Max[T cuda.Number](dst, a, b *cuda.DeviceBuffer[T], s *cuda.Stream) error {
	return binary("Max", "max", dst, bufArg("a", a), bufArg("b", b), s)
}

// Min sets dst to the smaller of a and b (a NaN wins).
func Min[T cuda.Number](dst, a, b *cuda.DeviceBuffer[T], s *cuda.Stream) error {
	return binary("Min", "min", dst, bufArg("a", a), bufArg("b", b), s)
}

// AddScalar sets dst = a + v.
func AddScalar[T cuda.Number](dst, a *cuda.DeviceBuffer[T], v T, s *cuda.Stream) error {
	return binary("AddScalar", "add", dst, bufArg("a", a), scalarArg("v", v), s)
}

// SubScalar sets dst = a - v.
func SubScalar[T cuda.Number](dst, a *cuda.DeviceBuffer[T], v T, s *cuda.Stream) error {
	return binary("SubScalar", "sub", dst, bufArg("a", a), scalarArg("v", v), s)
}

// MulScalar sets dst = a · v.
func MulScalar[T cuda.Number](dst, a *cuda.DeviceBuffer[T], v T, s *cuda.Stream) error {
	return binary("MulScalar", "mul", dst, bufArg("a", a), scalarArg("v", v), s)
}

// DivScalar sets dst = a / v.
func DivScalar[T cuda.Number](dst, a *cuda.DeviceBuffer[T], v T, s *cuda.Stream) error {
	return binary("DivScalar", "div", dst, bufArg("a", a), scalarArg("v", v), s)
}

// MaxScalar sets dst to the larger of a and v.
func MaxScalar[T cuda.Number](dst, a *cuda.DeviceBuffer[T], v T, s *cuda.Stream) error {
	return binary("MaxScalar", "max", dst, bufArg("a", a), scalarArg("v", v), s)
}

// MinScalar sets dst to the smaller of a and v.
func MinScalar[T cuda.Number](dst, a *cuda.DeviceBuffer[T], v T, s *cuda.Stream) error {
	return binary("MinScalar", "min", dst, bufArg("a", a), scalarArg("v", v), s)
}

// Axpby sets y = alpha·x + beta·y. It keeps BLAS's order of arguments,
// where the output y is an input too (CONTRIBUTING: API conventions).
func Axpby[T cuda.Number](alpha T, x *cuda.DeviceBuffer[T], beta T, y *cuda.DeviceBuffer[T], s *cuda.Stream) error {
	return run[T]("Axpby", "axpby", "%s alpha, %s x, %s beta, %s y", "%s y", "y = alpha * x + beta * y;", s,
		scalarArg("alpha", alpha), bufArg("x", x), scalarArg("beta", beta), bufArg("y", y))
}

// unary bodies over x, into y; for the integer types where one is given.
var unaryBodies = map[string][2]string{ // integer ("" where not defined), float
	"abs":     {"y = x < 0 ? -x : x;", "y = fabs(x);"},
	"neg":     {"y = -x;", "y = -x;"},
	"relu":    {"y = x > 0 ? x : 0;", "y = (x > 0 || x != x) ? x : 0;"},
	"exp":     {"", "y = exp(x);"},
	"log":     {"", "y = log(x);"},
	"sqrt":    {"", "y = sqrt(x);"},
	"tanh":    {"", "y = tanh(x);"},
	"sigmoid": {"", "y = 1 / (1 + exp(-x));"},
	"gelu":    {"", "y = x * (erf(x * (decltype(x))0.70710678118654752440) + 1) / 2;"},
}

func unary[T cuda.Number](op, name string, dst, src *cuda.DeviceBuffer[T], s *cuda.Stream) error {
	t := dtypePtr[T]()
	body := unaryBodies[name][1]
	if !t.float {
		body = unaryBodies[name][0]
		if name == "abs" && !t.signed {
			body = "y = x;"
		}
	}
	return run[T](op, name, "%s x", "%s y", body, s, bufArg("src", src), bufArg("dst", dst))
}

// Abs sets dst = |src| (for unsigned types, a copy).
func Abs[T cuda.Number](dst, src *cuda.DeviceBuffer[T], s *cuda.Stream) error {
	return unary("Abs", "abs", dst, src, s)
}

// Neg sets dst = -src (for unsigned types, modulo 2^bits).
func Neg[T cuda.Number](dst, src *cuda.DeviceBuffer[T], s *cuda.Stream) error {
	return unary("Neg", "neg", dst, src, s)
}

// Relu sets dst = max(src, 0) (a NaN stays NaN).
func Relu[T cuda.Number](dst, src *cuda.DeviceBuffer[T], s *cuda.Stream) error {
	return unary("Relu", "relu", dst, src, s)
}

// Exp sets dst = e^src.
func Exp[T cuda.AnyFloat](dst, src *cuda.DeviceBuffer[T], s *cuda.Stream) error {
	return unary("Exp", "exp", dst, src, s)
}

// Log sets dst = ln(src).
func Log[T cuda.AnyFloat](dst, src *cuda.DeviceBuffer[T], s *cuda.Stream) error {
	return unary("Log", "log", dst, src, s)
}

// Sqrt sets dst = √src.
func Sqrt[T cuda.AnyFloat](dst, src *cuda.DeviceBuffer[T], s *cuda.Stream) error {
	return unary("Sqrt", "sqrt", dst, src, s)
}

// Tanh sets dst = tanh(src).
func Tanh[T cuda.AnyFloat](dst, src *cuda.DeviceBuffer[T], s *cuda.Stream) error {
	return unary("Tanh", "tanh", dst, src, s)
}

// Sigmoid sets dst = 1 / (1 + e^-src).
func Sigmoid[T cuda.AnyFloat](dst, src *cuda.DeviceBuffer[T], s *cuda.Stream) error {
	return unary("Sigmoid", "sigmoid", dst, src, s)
}

// Gelu sets dst = src·Φ(src), with Φ the standard normal distribution's
// (the exact GELU, with erf, as PyTorch's default).
func Gelu[T cuda.AnyFloat](dst, src *cuda.DeviceBuffer[T], s *cuda.Stream) error {
	return unary("Gelu", "gelu", dst, src, s)
}

// Where sets dst = a where mask is not zero, else b.
func Where[T cuda.Number](dst *cuda.DeviceBuffer[T], mask *cuda.DeviceBuffer[uint8], a, b *cuda.DeviceBuffer[T], s *cuda.Stream) error {
	return run[T]("Where", "where", "uint8 mask, %s a, %s b", "%s y", "y = mask ? a : b;", s,
		bufArg("mask", mask), bufArg("a", a), bufArg("b", b), bufArg("dst", dst))
}
