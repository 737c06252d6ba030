package compute

import (
	"fmt"
	"reflect"

	cuda "github.com/gocuda/cuda"
)

// The standard reductions: of a whole buffer into a buffer of one element,
// or of each row or column of a matrix (Axis). Integers are summed in 64
// bits and Float16 and BFloat16 in float32; the result is stored in the
// element type. Like every Reduction, deterministic.

// accFor returns the reduce type that sums T: int64 or uint64 for the
// integers, float32 for the halves, T otherwise.
func accFor(t dtype) string {
	switch {
	case t.half != "":
		return "float32"
	case !t.float && t.signed:
		return "int64"
	case !t.float:
		return "uint64"
	}
	return t.name
}

// limits returns the C expressions of T's smallest and largest values (the
// identities of Max and Min): infinities for the floats.
func limits(t dtype) (lowest, highest string) {
	if t.float {
		return "-__int_as_float(0x7f800000)", "__int_as_float(0x7f800000)"
	}
	bits := 8 * t.goType.Size()
	if t.signed {
		return fmt.Sprintf("(-%dLL - 1)", uint64(1)<<(bits-1)-1), fmt.Sprintf("%dLL", uint64(1)<<(bits-1)-1)
	}
	return "0", fmt.Sprintf("%dULL", ^uint64(0)>>(64-bits))
}

// reduction returns the standard reduction what ("sum", "max", "min",
// "mean") of T.
func reduction[T Number](what string) (*Reduction, error) {
	return typed(typedKey{name: what, t: reflect.TypeFor[T](), reduction: true}, declareReduction[T](what))
}

// declareReduction declares the standard reduction what of T.
func declareReduction[T Number](what string) func() (*Reduction, error) {
	return func() (*Reduction, error) { return newStdReduction(dtypeOf[T](), what) }
}

func newStdReduction(t dtype, what string) (*Reduction, error) {
	lowest, highest := limits(t)
	nanFirst := ""
	if t.float {
		nanFirst = "(a != a) ? a : (b != b) ? b : "
	}
	var mapExpr, reduceExpr, identity, post, acc string
	switch what {
	case "sum":
		mapExpr, reduceExpr, identity, post, acc = "x", "a + b", "0", "y = a;", accFor(t)
	case "mean":
		mapExpr, reduceExpr, identity, post, acc = "x", "a + b", "0", "y = a / n;", accFor(t)
	case "max":
		mapExpr, reduceExpr, identity, post, acc = "x", nanFirst+"(a > b ? a : b)", lowest, "y = a;", t.name
	case "min":
		mapExpr, reduceExpr, identity, post, acc = "x", nanFirst+"(a < b ? a : b)", highest, "y = a;", t.name
	}
	if t.half != "" {
		acc = "float32"
	}
	return stdReduction("reduce_"+what+"_"+t.name, t.name+" x", t.name+" y", mapExpr, reduceExpr, identity, post, acc)
}

func reduce[T Number](op, what string, s *cuda.Stream, dst, src *cuda.DeviceBuffer[T]) error {
	r, err := reduction[T](what)
	if err != nil {
		return err
	}
	return rename(op, r.Launch(s, src, dst))
}

func reduceAxis[T Number](op, what string, s *cuda.Stream, dst, src *cuda.DeviceBuffer[T], shape Shape, axis Axis) error {
	r, err := reduction[T](what)
	if err != nil {
		return err
	}
	return rename(op, r.LaunchAxis(s, shape, axis, src, dst))
}

// Sum sets dst, a buffer of one element, to the sum of src's elements (0
// for an empty src).
func Sum[T Number](s *cuda.Stream, dst, src *cuda.DeviceBuffer[T]) error {
	return reduce("Sum", "sum", s, dst, src)
}

// MaxOf sets dst, a buffer of one element, to src's largest element (a NaN if
// src has one; the type's lowest value, -Inf for floats, if src is empty).
func MaxOf[T Number](s *cuda.Stream, dst, src *cuda.DeviceBuffer[T]) error {
	return reduce("MaxOf", "max", s, dst, src)
}

// MinOf sets dst, a buffer of one element, to src's smallest element.
func MinOf[T Number](s *cuda.Stream, dst, src *cuda.DeviceBuffer[T]) error {
	return reduce("MinOf", "min", s, dst, src)
}

// Mean sets dst, a buffer of one element, to the mean of src's elements
// (NaN for an empty src).
func Mean[T Float](s *cuda.Stream, dst, src *cuda.DeviceBuffer[T]) error {
	r, err := floatReduction[T]("mean")
	if err != nil {
		return err
	}
	return rename("Mean", r.Launch(s, src, dst))
}

// SumAxis sums each row (PerRow) or column (PerColumn) of src, a row-major
// matrix of shape, into dst (shape.Rows or shape.Cols elements).
func SumAxis[T Number](s *cuda.Stream, dst, src *cuda.DeviceBuffer[T], shape Shape, axis Axis) error {
	return reduceAxis("SumAxis", "sum", s, dst, src, shape, axis)
}

// MaxAxis sets dst to the largest element of each row or column of src.
func MaxAxis[T Number](s *cuda.Stream, dst, src *cuda.DeviceBuffer[T], shape Shape, axis Axis) error {
	return reduceAxis("MaxAxis", "max", s, dst, src, shape, axis)
}

// MinAxis sets dst to the smallest element of each row or column of src.
func MinAxis[T Number](s *cuda.Stream, dst, src *cuda.DeviceBuffer[T], shape Shape, axis Axis) error {
	return reduceAxis("MinAxis", "min", s, dst, src, shape, axis)
}

// MeanAxis sets dst to the mean of each row or column of src.
func MeanAxis[T Float](s *cuda.Stream, dst, src *cuda.DeviceBuffer[T], shape Shape, axis Axis) error {
	r, err := floatReduction[T]("mean")
	if err != nil {
		return err
	}
	return rename("MeanAxis", r.LaunchAxis(s, shape, axis, src, dst))
}

// floatReduction is reduction for the Float types.
func floatReduction[T Float](what string) (*Reduction, error) {
	switch any(*new(T)).(type) {
	case float32:
		return reduction[float32](what)
	case float64:
		return reduction[float64](what)
	case cuda.Float16:
		return reduction[cuda.Float16](what)
	default:
		return reduction[cuda.BFloat16](what)
	}
}
