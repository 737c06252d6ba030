package compute

import (
	"fmt"
	"reflect"
	"strings"
	"sync"

	cuda "github.com/gocuda/cuda"
)

// The standard operations: each an Elementwise or a Reduction made once
// per element type (and kept, with their compiled kernels, by the cache),
// queued on a stream, checked before anything is launched, and capturable
// into a CUDA graph. dst may be one of the inputs (in place).

var standard sync.Map // kernel name -> *Elementwise or *Reduction

// stdElementwise returns the standard kernel of that name, declared once.
func stdElementwise(name, in, out, body string) (*Elementwise, error) {
	if k, ok := standard.Load(name); ok {
		return k.(*Elementwise), nil
	}
	k, err := NewElementwise(name, in, out, body)
	if err != nil {
		return nil, err
	}
	v, _ := standard.LoadOrStore(name, k)
	return v.(*Elementwise), nil
}

// stdReduction returns the standard reduction of that name, declared once.
func stdReduction(name, in, out, mapExpr, reduceExpr, identity, postMap, reduceType string) (*Reduction, error) {
	if k, ok := standard.Load(name); ok {
		return k.(*Reduction), nil
	}
	k, err := NewReduction(name, in, out, mapExpr, reduceExpr, identity, postMap, reduceType)
	if err != nil {
		return nil, err
	}
	v, _ := standard.LoadOrStore(name, k)
	return v.(*Reduction), nil
}

// byType are the standard kernels (*Elementwise or *Reduction), by name
// and element types: the lookup of a call, which builds no string.
var byType struct {
	mu sync.RWMutex
	m  map[typedKey]any
}

type typedKey struct {
	name      string
	t, u      reflect.Type
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
// %s for T's name), naming op in errors.
func run[T Number](op, name, in, out, body string, s *cuda.Stream, args ...any) error {
	k, err := typed(typedKey{name: name, t: reflect.TypeFor[T]()}, func() (*Elementwise, error) {
		t := dtypeOf[T]()
		return stdElementwise(name+"_"+t.name, strings.ReplaceAll(in, "%s", t.name), strings.ReplaceAll(out, "%s", t.name), body)
	})
	if err != nil {
		return err
	}
	return rename(op, k.Launch(s, args...))
}

// rename makes an error of a standard kernel's Launch name the operation.
func rename(op string, err error) error {
	if e, ok := err.(*Error); ok {
		return &Error{Op: op, Err: e.Err, Detail: e.Detail}
	}
	return err
}

// Fill sets every element of dst to v.
func Fill[T Number](s *cuda.Stream, dst *cuda.DeviceBuffer[T], v T) error {
	return run[T]("Fill", "fill", "%s v", "%s y", "y = v;", s, v, dst)
}

// Iota sets element i of dst to start + i·step (NumPy's arange), computed
// in T's arithmetic (float32 for Float16 and BFloat16).
func Iota[T Number](s *cuda.Stream, dst *cuda.DeviceBuffer[T], start, step T) error {
	t := dtypeOf[T]()
	return run[T]("Iota", "iota", "%s start, %s step", "%s y", fmt.Sprintf("y = start + (%s)i * step;", t.value), s, start, step, dst)
}

// Cast copies src into dst, converting each element as Go's conversion
// does: Float16 and BFloat16 results round to nearest, ties to even, bit
// for bit as cuda.NewFloat16 and cuda.NewBFloat16 (a float64 first rounds
// to float32, as NewFloat16(float32(x)) does); floats to integers truncate
// toward zero (out of range: undefined, as in Go). The lengths must match.
func Cast[To, From Number](s *cuda.Stream, dst *cuda.DeviceBuffer[To], src *cuda.DeviceBuffer[From]) error {
	k, err := typed(typedKey{name: "cast", t: reflect.TypeFor[From](), u: reflect.TypeFor[To]()}, func() (*Elementwise, error) {
		from, to := dtypeOf[From](), dtypeOf[To]()
		body := "y = x;"
		if from.half != "" && !to.float {
			body = fmt.Sprintf("y = (%s)x;", to.value)
		}
		return stdElementwise("cast_"+from.name+"_"+to.name, from.name+" x", to.name+" y", body)
	})
	if err != nil {
		return err
	}
	return rename("Cast", k.Launch(s, src, dst))
}

// binary bodies: a and b, into y.
var binaryBodies = map[string][2]string{ // integer, float
	"add": {"y = a + b;", "y = a + b;"},
	"sub": {"y = a - b;", "y = a - b;"},
	"mul": {"y = a * b;", "y = a * b;"},
	"div": {"y = a / b;", "y = a / b;"},
	"max": {"y = a > b ? a : b;", "y = (a != a) ? a : (b != b) ? b : (a > b ? a : b);"},
	"min": {"y = a < b ? a : b;", "y = (a != a) ? a : (b != b) ? b : (a < b ? a : b);"},
}

func binary[T Number](op, name string, s *cuda.Stream, dst *cuda.DeviceBuffer[T], a, b any) error {
	body := binaryBodies[name][0]
	if isFloat[T]() {
		body = binaryBodies[name][1]
	}
	// The variant for a scalar b is compiled apart (Elementwise keys by it).
	return run[T](op, name, "%s a, %s b", "%s y", body, s, a, b, dst)
}

// Add sets dst = a + b, element by element.
func Add[T Number](s *cuda.Stream, dst, a, b *cuda.DeviceBuffer[T]) error {
	return binary("Add", "add", s, dst, a, b)
}

// Sub sets dst = a - b.
func Sub[T Number](s *cuda.Stream, dst, a, b *cuda.DeviceBuffer[T]) error {
	return binary("Sub", "sub", s, dst, a, b)
}

// Mul sets dst = a · b.
func Mul[T Number](s *cuda.Stream, dst, a, b *cuda.DeviceBuffer[T]) error {
	return binary("Mul", "mul", s, dst, a, b)
}

// Div sets dst = a / b (for integers, truncated; a division by zero gives
// an unspecified value, not an error).
func Div[T Number](s *cuda.Stream, dst, a, b *cuda.DeviceBuffer[T]) error {
	return binary("Div", "div", s, dst, a, b)
}

// Max sets dst to the larger of a and b (a NaN wins, as in NumPy's maximum).
func Max[T Number](s *cuda.Stream, dst, a, b *cuda.DeviceBuffer[T]) error {
	return binary("Max", "max", s, dst, a, b)
}

// Min sets dst to the smaller of a and b (a NaN wins).
func Min[T Number](s *cuda.Stream, dst, a, b *cuda.DeviceBuffer[T]) error {
	return binary("Min", "min", s, dst, a, b)
}

// AddScalar sets dst = a + v.
func AddScalar[T Number](s *cuda.Stream, dst, a *cuda.DeviceBuffer[T], v T) error {
	return binary("AddScalar", "add", s, dst, a, v)
}

// SubScalar sets dst = a - v.
func SubScalar[T Number](s *cuda.Stream, dst, a *cuda.DeviceBuffer[T], v T) error {
	return binary("SubScalar", "sub", s, dst, a, v)
}

// MulScalar sets dst = a · v.
func MulScalar[T Number](s *cuda.Stream, dst, a *cuda.DeviceBuffer[T], v T) error {
	return binary("MulScalar", "mul", s, dst, a, v)
}

// DivScalar sets dst = a / v.
func DivScalar[T Number](s *cuda.Stream, dst, a *cuda.DeviceBuffer[T], v T) error {
	return binary("DivScalar", "div", s, dst, a, v)
}

// MaxScalar sets dst to the larger of a and v.
func MaxScalar[T Number](s *cuda.Stream, dst, a *cuda.DeviceBuffer[T], v T) error {
	return binary("MaxScalar", "max", s, dst, a, v)
}

// MinScalar sets dst to the smaller of a and v.
func MinScalar[T Number](s *cuda.Stream, dst, a *cuda.DeviceBuffer[T], v T) error {
	return binary("MinScalar", "min", s, dst, a, v)
}

// Axpby sets y = alpha·x + beta·y.
func Axpby[T Number](s *cuda.Stream, alpha T, x *cuda.DeviceBuffer[T], beta T, y *cuda.DeviceBuffer[T]) error {
	return run[T]("Axpby", "axpby", "%s alpha, %s x, %s beta, %s y", "%s y", "y = alpha * x + beta * y;", s, alpha, x, beta, y)
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
	"gelu":    {"", "y = x * (erf(x * 0.70710678118654752440) + 1) / 2;"},
}

func unary[T Number](op, name string, s *cuda.Stream, dst, src *cuda.DeviceBuffer[T]) error {
	body := unaryBodies[name][1]
	if !isFloat[T]() {
		body = unaryBodies[name][0]
		if name == "abs" && !isSigned[T]() {
			body = "y = x;"
		}
	}
	return run[T](op, name, "%s x", "%s y", body, s, src, dst)
}

// Abs sets dst = |src| (for unsigned types, a copy).
func Abs[T Number](s *cuda.Stream, dst, src *cuda.DeviceBuffer[T]) error {
	return unary("Abs", "abs", s, dst, src)
}

// Neg sets dst = -src (for unsigned types, modulo 2^bits).
func Neg[T Number](s *cuda.Stream, dst, src *cuda.DeviceBuffer[T]) error {
	return unary("Neg", "neg", s, dst, src)
}

// Relu sets dst = max(src, 0) (a NaN stays NaN).
func Relu[T Number](s *cuda.Stream, dst, src *cuda.DeviceBuffer[T]) error {
	return unary("Relu", "relu", s, dst, src)
}

// Exp sets dst = e^src.
func Exp[T Float](s *cuda.Stream, dst, src *cuda.DeviceBuffer[T]) error {
	return unaryFloat("Exp", "exp", s, dst, src)
}

// Log sets dst = ln(src).
func Log[T Float](s *cuda.Stream, dst, src *cuda.DeviceBuffer[T]) error {
	return unaryFloat("Log", "log", s, dst, src)
}

// Sqrt sets dst = √src.
func Sqrt[T Float](s *cuda.Stream, dst, src *cuda.DeviceBuffer[T]) error {
	return unaryFloat("Sqrt", "sqrt", s, dst, src)
}

// Tanh sets dst = tanh(src).
func Tanh[T Float](s *cuda.Stream, dst, src *cuda.DeviceBuffer[T]) error {
	return unaryFloat("Tanh", "tanh", s, dst, src)
}

// Sigmoid sets dst = 1 / (1 + e^-src).
func Sigmoid[T Float](s *cuda.Stream, dst, src *cuda.DeviceBuffer[T]) error {
	return unaryFloat("Sigmoid", "sigmoid", s, dst, src)
}

// Gelu sets dst = src·Φ(src), with Φ the standard normal distribution's
// (the exact GELU, with erf, as PyTorch's default).
func Gelu[T Float](s *cuda.Stream, dst, src *cuda.DeviceBuffer[T]) error {
	return unaryFloat("Gelu", "gelu", s, dst, src)
}

// unaryFloat is unary for the functions of floats only. (Float's types are
// all Number's; Go cannot see it, so the kernel is found by name.)
func unaryFloat[T Float](op, name string, s *cuda.Stream, dst, src *cuda.DeviceBuffer[T]) error {
	k, err := typed(typedKey{name: name, t: reflect.TypeFor[T]()}, func() (*Elementwise, error) {
		t := floatType[T]()
		return stdElementwise(name+"_"+t.name, t.name+" x", t.name+" y", unaryBodies[name][1])
	})
	if err != nil {
		return err
	}
	return rename(op, k.Launch(s, src, dst))
}

// floatType returns a Float type's description.
func floatType[T Float]() dtype {
	switch any(*new(T)).(type) {
	case float32:
		return dtypeOf[float32]()
	case float64:
		return dtypeOf[float64]()
	case cuda.Float16:
		return dtypeOf[cuda.Float16]()
	}
	return dtypeOf[cuda.BFloat16]()
}

// Where sets dst = a where mask is not zero, else b.
func Where[T Number](s *cuda.Stream, dst *cuda.DeviceBuffer[T], mask *cuda.DeviceBuffer[uint8], a, b *cuda.DeviceBuffer[T]) error {
	return run[T]("Where", "where", "uint8 mask, %s a, %s b", "%s y", "y = mask ? a : b;", s, mask, a, b, dst)
}

// isFloat and isSigned classify T without looking it up.
func isFloat[T Number]() bool {
	switch any(*new(T)).(type) {
	case float32, float64, cuda.Float16, cuda.BFloat16:
		return true
	}
	return false
}

func isSigned[T Number]() bool {
	switch any(*new(T)).(type) {
	case uint8, uint16, uint32, uint64:
		return false
	}
	return true
}
