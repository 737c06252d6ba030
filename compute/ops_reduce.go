package compute

import (
	"fmt"

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
func reduction[T cuda.Number](what string) (*Reduction, error) {
	t := dtypePtr[T]()
	return typed(typedKey{name: what, t: t, reduction: true}, func() (*Reduction, error) { return newStdReduction(*t, what) })
}

func newStdReduction(t dtype, what string) (*Reduction, error) {
	lowest, highest := limits(t)
	nanFirst := ""
	if t.float {
		nanFirst = "(a != a) ? a : (b != b) ? b : "
	}
	spec := ReductionSpec{Name: "reduce_" + what + "_" + t.name, InParams: t.name + " x", OutParams: t.name + " y", MapExpr: "x", PostMapExpr: "y = a;"}
	switch what {
	case "sum":
		spec.ReduceExpr, spec.Identity, spec.ReduceType = "a + b", "0", accFor(t)
	case "mean":
		spec.ReduceExpr, spec.Identity, spec.PostMapExpr, spec.ReduceType = "a + b", "0", "y = a / n;", accFor(t)
	case "max":
		spec.ReduceExpr, spec.Identity, spec.ReduceType = nanFirst+"(a > b ? a : b)", lowest, t.name
	case "min":
		spec.ReduceExpr, spec.Identity, spec.ReduceType = nanFirst+"(a < b ? a : b)", highest, t.name
	}
	if t.half != "" {
		spec.ReduceType = "float32"
	}
	return stdReduction(spec)
}

func reduce[T cuda.Number](op, what string, dst, src *cuda.DeviceBuffer[T], s *cuda.Stream) error {
	r, err := reduction[T](what)
	if err != nil {
		return rename(op, err)
	}
	as := [2]arg{bufArg("src", src), bufArg("dst", dst)}
	return r.launch(op, s, as[:])
}

func reduceAxis[T cuda.Number](op, what string, dst, src *cuda.DeviceBuffer[T], shape Shape, axis Axis, s *cuda.Stream) error {
	r, err := reduction[T](what)
	if err != nil {
		return rename(op, err)
	}
	as := [2]arg{bufArg("src", src), bufArg("dst", dst)}
	return r.launchAxis(op, s, shape, axis, as[:])
}

// Sum sets dst, a buffer of one element, to the sum of src's elements (0
// for an empty src).
func Sum[T cuda.Number](dst, src *cuda.DeviceBuffer[T], s *cuda.Stream) error {
	return reduce("Sum", "sum", dst, src, s)
}

// MaxOf sets dst, a buffer of one element, to src's largest element (a NaN if
// src has one; the type's lowest value, -Inf for floats, if src is empty).
func MaxOf[T cuda.Number](dst, src *cuda.DeviceBuffer[T], s *cuda.Stream) error {
	return reduce("MaxOf", "max", dst, src, s)
}

// MinOf sets dst, a buffer of one element, to src's smallest element (a NaN
// if src has one; the type's highest value, +Inf for floats, if src is
// empty).
func MinOf[T cuda.Number](dst, src *cuda.DeviceBuffer[T], s *cuda.Stream) error {
	return reduce("MinOf", "min", dst, src, s)
}

// Mean sets dst, a buffer of one element, to the mean of src's elements
// (NaN for an empty src).
func Mean[T cuda.AnyFloat](dst, src *cuda.DeviceBuffer[T], s *cuda.Stream) error {
	return reduce("Mean", "mean", dst, src, s)
}

// SumAxis sums each row (PerRow) or column (PerColumn) of src, a row-major
// matrix of shape, into dst (shape.Rows or shape.Cols elements).
func SumAxis[T cuda.Number](dst, src *cuda.DeviceBuffer[T], shape Shape, axis Axis, s *cuda.Stream) error {
	return reduceAxis("SumAxis", "sum", dst, src, shape, axis, s)
}

// MaxAxis sets dst to the largest element of each row or column of src (as
// MaxOf: a NaN where the row or column has one, the type's lowest value
// where it is empty).
func MaxAxis[T cuda.Number](dst, src *cuda.DeviceBuffer[T], shape Shape, axis Axis, s *cuda.Stream) error {
	return reduceAxis("MaxAxis", "max", dst, src, shape, axis, s)
}

// MinAxis sets dst to the smallest element of each row or column of src
// (as MinOf).
func MinAxis[T cuda.Number](dst, src *cuda.DeviceBuffer[T], shape Shape, axis Axis, s *cuda.Stream) error {
	return reduceAxis("MinAxis", "min", dst, src, shape, axis, s)
}

// MeanAxis sets dst to the mean of each row or column of src (NaN where
// it is empty).
func MeanAxis[T cuda.AnyFloat](dst, src *cuda.DeviceBuffer[T], shape Shape, axis Axis, s *cuda.Stream) error {
	return reduceAxis("MeanAxis", "mean", dst, src, shape, axis, s)
}
