package nd

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/compute"
)

// Axes says which axes a reduction folds, and whether the result keeps
// them (with size 1, NumPy's keepdims) so that it broadcasts against the
// input. The zero Axes folds every axis into a 0-d result.
type Axes struct {
	axes []int
	all  bool // no axes named: every axis
	keep bool
}

// Along returns the Axes of the axes named (negative counting from the
// end); with none, every axis.
func Along(axes ...int) Axes {
	return Axes{axes: slices.Clone(axes), all: len(axes) == 0}
}

// KeepDims returns x that keeps the folded axes, with size 1.
func (x Axes) KeepDims() Axes {
	x.axes = slices.Clone(x.axes)
	x.keep = true
	return x
}

// String describes x as NumPy's arguments would: "axis=(0, 2), keepdims".
func (x Axes) String() string {
	s := "axis=None"
	if !x.all && x.axes != nil {
		parts := make([]string, len(x.axes))
		for i, a := range x.axes {
			parts[i] = fmt.Sprint(a)
		}
		s = "axis=(" + strings.Join(parts, ", ") + ")"
	}
	if x.keep {
		s += ", keepdims"
	}
	return s
}

// resolve returns the folded axes of an n-d array, sorted, as a set, in
// buf where it has room.
func (x Axes) resolve(op string, n int, buf []bool) ([]bool, error) {
	var fold []bool
	if n <= len(buf) {
		fold = buf[:n]
		clear(fold)
	} else {
		fold = make([]bool, n)
	}
	if x.all || x.axes == nil {
		for i := range fold {
			fold[i] = true
		}
		return fold, nil
	}
	for _, ax := range x.axes {
		a := ax
		if a < 0 {
			a += n
		}
		switch {
		case a < 0 || a >= n:
			return nil, errorf(op, cuda.ErrInvalidValue, "axis %d is out of range for %d dimensions", ax, n)
		case fold[a]:
			return nil, errorf(op, cuda.ErrInvalidValue, "axis %d is named twice in %v", ax, x.axes)
		}
		fold[a] = true
	}
	return fold, nil
}

// A fold is a reduction's kernels: what it is ("sum", "max", "min",
// "mean", "prod", "all", "any"), and rows, which folds each row of a
// row-major matrix (rows of cols elements, contiguous) into one element of
// dst, or each column where perColumn.
type fold[T Elem] struct {
	what string
	rows func(dst, src *cuda.DeviceBuffer[T], rows, cols int, perColumn bool, s *cuda.Stream) error
}

// stdFold is a fold by one of compute's standard reductions.
func stdFold[T Elem](what string, whole func(dst, src *cuda.DeviceBuffer[T], s *cuda.Stream) error,
	axis func(dst, src *cuda.DeviceBuffer[T], shape compute.Shape, axis compute.Axis, s *cuda.Stream) error) fold[T] {
	return fold[T]{what, func(dst, src *cuda.DeviceBuffer[T], rows, cols int, perColumn bool, s *cuda.Stream) error {
		switch {
		case perColumn:
			return axis(dst, src, compute.Shape{Rows: rows, Cols: cols}, compute.PerColumn, s)
		case rows == 1:
			return whole(dst, src, s)
		}
		return axis(dst, src, compute.Shape{Rows: rows, Cols: cols}, compute.PerRow, s)
	}}
}

// specFold is a fold by a compute.Reduction declared here.
func specFold[T Elem](what string) (fold[T], error) {
	r, err := reductionFor[T](what)
	if err != nil {
		return fold[T]{}, err
	}
	return fold[T]{what, func(dst, src *cuda.DeviceBuffer[T], rows, cols int, perColumn bool, s *cuda.Stream) error {
		switch {
		case perColumn:
			return r.LaunchAxis(s, compute.Shape{Rows: rows, Cols: cols}, compute.PerColumn, src, dst)
		case rows == 1:
			return r.Launch(s, src, dst)
		}
		return r.LaunchAxis(s, compute.Shape{Rows: rows, Cols: cols}, compute.PerRow, src, dst)
	}}, nil
}

var reductions sync.Map // "prod float32" -> *compute.Reduction

// reductionFor returns the reduction what ("prod", "all", "any") of T:
// products folded as sums are (in 64 bits for integers, float32 for the
// halves), all and any as truth values.
func reductionFor[T Elem](what string) (*compute.Reduction, error) {
	t := ctypeOf[T]()
	key := what + " " + t.name
	if r, ok := reductions.Load(key); ok {
		return r.(*compute.Reduction), nil
	}
	spec := compute.ReductionSpec{Name: "nd_" + what + "_" + t.name, InParams: t.name + " x", OutParams: t.name + " y",
		MapExpr: "x", PostMapExpr: "y = a", ReduceType: accOf(t)}
	switch what {
	case "prod":
		spec.ReduceExpr, spec.Identity = "a * b", "1"
	case "all":
		spec.MapExpr, spec.ReduceExpr, spec.Identity, spec.ReduceType = "x != 0", "a & b", "1", "uint8"
	case "any":
		spec.MapExpr, spec.ReduceExpr, spec.Identity, spec.ReduceType = "x != 0", "a | b", "0", "uint8"
	}
	r, err := compute.NewReduction(spec)
	if err != nil {
		return nil, err
	}
	got, _ := reductions.LoadOrStore(key, r)
	return got.(*compute.Reduction), nil
}

// accOf is the type a product of t's elements is folded in.
func accOf(t ctype) string {
	switch {
	case t.half:
		return "float32"
	case t.float:
		return t.name
	case t.value[0] == 'u':
		return "uint64"
	}
	return "int64"
}

// reduce folds a's axes by f into a new array, or into dst where dst is
// not nil (of the result's shape). identity is the value of an empty fold
// (nil: an error, as NumPy's max of nothing).
func reduce[T Elem](op string, a *Array[T], x Axes, f fold[T], identity *T, dst *Array[T]) (*Array[T], error) {
	if err := a.check(op, "a"); err != nil {
		return nil, err
	}
	if a.scalar {
		return nil, errorf(op, cuda.ErrInvalidValue, "a is a Scalar: reduce an array")
	}
	if err := a.emptyOpen(op); err != nil {
		return nil, err // an empty fold reads nothing of a
	}
	var foldBuf [maxDims]bool
	fold, err := x.resolve(op, a.layout.Ndim(), foldBuf[:])
	if err != nil {
		return nil, err
	}
	// The result's shape, and a's axes reordered kept first, folded last.
	var keptBuf, foldedBuf, outBuf [maxDims]int
	kept, folded, outShape := keptBuf[:0], foldedBuf[:0], outBuf[:0]
	rows, cols := 1, 1
	for i := range a.layout.Ndim() {
		d := a.layout.Dim(i)
		if fold[i] {
			folded = append(folded, i)
			cols *= d
			if x.keep {
				outShape = append(outShape, 1)
			}
			continue
		}
		kept = append(kept, i)
		rows *= d
		outShape = append(outShape, d)
	}
	if cols == 0 && identity == nil {
		return nil, errorf(op, cuda.ErrInvalidValue, "a has shape %v: the operation has no identity to give for an empty fold (%v)", a.layout.Shape(), x)
	}
	out := dst
	if out == nil {
		if out, err = empty[T](op, a.s, outShape); err != nil {
			return nil, err
		}
	} else if err := intoShape(op, out, a, outShape); err != nil {
		return nil, err
	}
	// done ends the fold: the temporaries freed (a failed release is the
	// fold's error), and a new result freed where the fold failed.
	var temps []*Array[T]
	done := func(err error) (*Array[T], error) {
		for _, t := range temps {
			freed(&err, t)
		}
		if err != nil && dst == nil {
			out.Free()
			return nil, err
		}
		return out, err
	}
	switch {
	case rows == 0:
		return done(nil)
	case cols == 0:
		return done(fill(op, out, *identity))
	}
	// The rows: a itself where its elements are in this order already,
	// else a contiguous copy of the permuted view. Where a is contiguous
	// and only its leading axes fold (or axes of one element precede
	// those that fold), its columns fold in place, by compute's layouts
	// for the matrix's shape; where a block of axes in its middle folds,
	// the block folds in place (middle.go).
	src, perColumn := a, false
	lead := len(folded) > 0 && folded[len(folded)-1] == len(folded)-1
	block := len(folded) > 0 && folded[len(folded)-1]-folded[0] == len(folded)-1
	inner := 1
	if block {
		for i := folded[len(folded)-1] + 1; i < a.layout.Ndim(); i++ {
			inner *= a.layout.Dim(i)
		}
	}
	contiguousRows := a.layout.IsContiguous()
	middle := contiguousRows && block && !lead && inner > 1
	switch {
	case contiguousRows && lead && len(kept) > 0, middle && rows == inner:
		middle, perColumn = false, true
		rows, cols = cols, rows
	case middle:
	default:
		middle = false
		v, err := a.Permute(append(slices.Clone(kept), folded...)...)
		if err != nil {
			return done(wrap(op, err))
		}
		if !v.layout.IsContiguous() {
			if v, err = contiguous(op, v); err != nil {
				return done(err)
			}
			temps = append(temps, v)
		}
		src = v
	}
	in, err := src.Buffer()
	if err != nil {
		return done(wrap(op, err))
	}
	// The result, where it is not contiguous, through a contiguous copy;
	// and where dst shares memory with the elements folded, too: the
	// fold's blocks would write results over the elements other blocks
	// still read (NumPy's out= reads as if from a copy).
	res := out
	if !out.layout.IsContiguous() || dst != nil && overlapping(op, dst, src) {
		if res, err = empty[T](op, a.s, outShape); err != nil {
			return done(err)
		}
		temps = append(temps, res)
	}
	rb, err := res.Buffer()
	if err != nil {
		return done(wrap(op, err))
	}
	if middle {
		err = middleFold(f.what, rb, in, rows/inner, cols, inner, a.s)
	} else {
		err = f.rows(rb, in, rows, cols, perColumn, a.s)
	}
	if err != nil {
		return done(wrap(op, err))
	}
	if res != out {
		return done(copyInto(op, out, res))
	}
	return done(nil)
}

// intoShape checks dst, the result of a reduction of a: writable, on a's
// stream, of the result's shape.
func intoShape[T Elem](op string, dst, a *Array[T], shape []int) error {
	if err := writable(op, "dst", dst); err != nil {
		return err
	}
	switch {
	case dst.s != a.s:
		return errorf(op, cuda.ErrInvalidValue, "dst and a are on different streams: the operands of an operation share one")
	case !sameDims(dst.layout, shape) && !(len(shape) == 0 && dst.layout.Ndim() == 0):
		return errorf(op, cuda.ErrInvalidValue, "dst has shape %v, and the result %v", dst.layout.Shape(), slices.Clone(shape))
	}
	return nil
}

func ptr[T any](v T) *T { return &v }

// Sum returns the sum of a's elements over the axes (0 for none); integers
// are summed in 64 bits and Float16 and BFloat16 in float32, the result
// of T. The sum of Bools is a Bool, true where any is (NumPy's add of
// bools, a logical or).
func Sum[T Elem](a *Array[T], x Axes) (out *Array[T], failure error) {
	defer poison(&out, &failure)
	return sum("Sum", a, x, nil)
}

// SumInto sets dst to the sum of a's elements over the axes.
func SumInto[T Elem](dst, a *Array[T], x Axes) error {
	if err := writable("SumInto", "dst", dst); err != nil {
		return err
	}
	return errOnly(sum("SumInto", a, x, dst))
}

func sum[T Elem](op string, a *Array[T], x Axes, dst *Array[T]) (*Array[T], error) {
	if isBool[T]() {
		// Summed as bytes, 256 trues would wrap to a false.
		return specReduce(op, "any", a, x, *new(T), dst)
	}
	return reduce(op, a, x, stdFold("sum", compute.Sum[T], compute.SumAxis[T]), ptr(*new(T)), dst)
}

// isBool reports whether T is Bool, whose conversions and sums are truth
// values (any nonzero byte true), not bytes.
func isBool[T Elem]() bool {
	_, ok := any(*new(T)).(Bool)
	return ok
}

// Max returns the largest of a's elements over the axes (a NaN if there
// is one); an empty fold is an error, as NumPy's.
func Max[T Elem](a *Array[T], x Axes) (out *Array[T], failure error) {
	defer poison(&out, &failure)
	return reduce("Max", a, x, stdFold("max", compute.MaxOf[T], compute.MaxAxis[T]), nil, nil)
}

// MaxInto sets dst to the largest of a's elements over the axes.
func MaxInto[T Elem](dst, a *Array[T], x Axes) error {
	if err := writable("MaxInto", "dst", dst); err != nil {
		return err
	}
	return errOnly(reduce("MaxInto", a, x, stdFold("max", compute.MaxOf[T], compute.MaxAxis[T]), nil, dst))
}

// Min returns the smallest of a's elements over the axes (a NaN if there
// is one); an empty fold is an error.
func Min[T Elem](a *Array[T], x Axes) (out *Array[T], failure error) {
	defer poison(&out, &failure)
	return reduce("Min", a, x, stdFold("min", compute.MinOf[T], compute.MinAxis[T]), nil, nil)
}

// MinInto sets dst to the smallest of a's elements over the axes.
func MinInto[T Elem](dst, a *Array[T], x Axes) error {
	if err := writable("MinInto", "dst", dst); err != nil {
		return err
	}
	return errOnly(reduce("MinInto", a, x, stdFold("min", compute.MinOf[T], compute.MinAxis[T]), nil, dst))
}

// Mean returns the mean of a's elements over the axes (NaN for none).
func Mean[T cuda.AnyFloat](a *Array[T], x Axes) (out *Array[T], failure error) {
	defer poison(&out, &failure)
	return reduce("Mean", a, x, stdFold("mean", compute.Mean[T], compute.MeanAxis[T]), ptr(nan[T]()), nil)
}

// MeanInto sets dst to the mean of a's elements over the axes.
func MeanInto[T cuda.AnyFloat](dst, a *Array[T], x Axes) error {
	if err := writable("MeanInto", "dst", dst); err != nil {
		return err
	}
	return errOnly(reduce("MeanInto", a, x, stdFold("mean", compute.Mean[T], compute.MeanAxis[T]), ptr(nan[T]()), dst))
}

// Prod returns the product of a's elements over the axes (1 for none);
// of Bools, true where all are (a logical and).
func Prod[T Elem](a *Array[T], x Axes) (out *Array[T], failure error) {
	defer poison(&out, &failure)
	return specReduce("Prod", prodOf[T](), a, x, one[T](), nil)
}

// ProdInto sets dst to the product of a's elements over the axes.
func ProdInto[T Elem](dst, a *Array[T], x Axes) error {
	if err := writable("ProdInto", "dst", dst); err != nil {
		return err
	}
	return errOnly(specReduce("ProdInto", prodOf[T](), a, x, one[T](), dst))
}

// prodOf is Prod's fold of T: of Bools, all (a product of bytes, such as
// 2s, would wrap to a false).
func prodOf[T Elem]() string {
	if isBool[T]() {
		return "all"
	}
	return "prod"
}

// All returns whether every element of a over the axes is true (nonzero;
// true for none).
func All[T Elem](a *Array[T], x Axes) (*Array[Bool], error) {
	return result(truth("All", "all", a, x, 1, nil))
}

// AllInto sets dst to whether every element of a over the axes is true.
func AllInto[T Elem](dst *Array[Bool], a *Array[T], x Axes) error {
	if err := writable("AllInto", "dst", dst); err != nil {
		return err
	}
	return errOnly(truth("AllInto", "all", a, x, 1, dst))
}

// Any returns whether some element of a over the axes is true (false for
// none).
func Any[T Elem](a *Array[T], x Axes) (*Array[Bool], error) {
	return result(truth("Any", "any", a, x, 0, nil))
}

// AnyInto sets dst to whether some element of a over the axes is true.
func AnyInto[T Elem](dst *Array[Bool], a *Array[T], x Axes) error {
	if err := writable("AnyInto", "dst", dst); err != nil {
		return err
	}
	return errOnly(truth("AnyInto", "any", a, x, 0, dst))
}

func specReduce[T Elem](op, what string, a *Array[T], x Axes, identity T, dst *Array[T]) (*Array[T], error) {
	f, err := specFold[T](what)
	if err != nil {
		return nil, wrap(op, err)
	}
	return reduce(op, a, x, f, &identity, dst)
}

// truth folds a's truth values: as a mask first, where T is not Bool.
func truth[T Elem](op, what string, a *Array[T], x Axes, identity Bool, dst *Array[Bool]) (out *Array[Bool], err error) {
	if m, ok := any(a).(*Array[Bool]); ok {
		return specReduce(op, what, m, x, identity, dst)
	}
	m, err := NotEqual(a, Scalar(*new(T)))
	if err != nil {
		return nil, wrap(op, err)
	}
	defer freed(&err, m)
	return specReduce(op, what, m, x, identity, dst)
}

// Var returns the variance of a's elements over the axes: the mean of the
// squared deviations from their mean (NumPy's var with ddof 0), in two
// passes.
func Var[T cuda.AnyFloat](a *Array[T], x Axes) (out *Array[T], failure error) {
	defer poison(&out, &failure)
	return variance("Var", a, x, false)
}

// Std returns the standard deviation of a's elements over the axes: the
// square root of Var.
func Std[T cuda.AnyFloat](a *Array[T], x Axes) (out *Array[T], failure error) {
	defer poison(&out, &failure)
	return variance("Std", a, x, true)
}

// VarInto sets dst to the variance of a's elements over the axes.
func VarInto[T cuda.AnyFloat](dst, a *Array[T], x Axes) error {
	return varianceInto("VarInto", dst, a, x, false)
}

// StdInto sets dst to the standard deviation of a's elements over the
// axes.
func StdInto[T cuda.AnyFloat](dst, a *Array[T], x Axes) error {
	return varianceInto("StdInto", dst, a, x, true)
}

func varianceInto[T cuda.AnyFloat](op string, dst, a *Array[T], x Axes, root bool) (err error) {
	if err := writable(op, "dst", dst); err != nil {
		return err
	}
	v, err := variance(op, a, x, root)
	if err != nil {
		return err
	}
	defer freed(&err, v)
	if !slices.Equal(dst.layout.Shape(), v.layout.Shape()) {
		return errorf(op, cuda.ErrInvalidValue, "dst has shape %v, and the result %v", dst.layout.Shape(), v.layout.Shape())
	}
	return copyInto(op, dst, v)
}

func variance[T cuda.AnyFloat](op string, a *Array[T], x Axes, root bool) (v *Array[T], err error) {
	m, err := Mean(a, x.KeepDims())
	if err != nil {
		return nil, wrap(op, err)
	}
	defer freed(&err, m)
	d, err := Sub(a, m)
	if err != nil {
		return nil, wrap(op, err)
	}
	defer freed(&err, d)
	if err := MulInto(d, d, d); err != nil {
		return nil, wrap(op, err)
	}
	if v, err = Mean(d, x); err != nil {
		return nil, wrap(op, err)
	}
	if root {
		if err := SqrtInto(v, v); err != nil {
			v.Free()
			return nil, wrap(op, err)
		}
	}
	return v, nil
}

// nan returns T's NaN.
func nan[T cuda.AnyFloat]() T {
	var v T
	switch p := any(&v).(type) {
	case *cuda.Float16:
		*p = cuda.NewFloat16(float32(math.NaN()))
	case *cuda.BFloat16:
		*p = cuda.NewBFloat16(float32(math.NaN()))
	default:
		reflect.ValueOf(&v).Elem().SetFloat(math.NaN())
	}
	return v
}

// errOnly returns a call's error, for the Into forms of the functions
// that return their result.
func errOnly[T any](_ T, err error) error { return err }

// Norm returns the Euclidean (Frobenius) norm of a's elements over the
// axes: the square root of the sum of their squares (NumPy's
// linalg.norm of a vector, or of a matrix with axes of both).
func Norm[T cuda.AnyFloat](a *Array[T], x Axes) (out *Array[T], failure error) {
	defer poison(&out, &failure)
	const op = "Norm"
	sq, err := Mul(a, a)
	if err != nil {
		return nil, wrap(op, err)
	}
	defer freed(&failure, sq)
	s, err := Sum(sq, x)
	if err != nil {
		return nil, wrap(op, err)
	}
	if err := SqrtInto(s, s); err != nil {
		s.Free()
		return nil, wrap(op, err)
	}
	return s, nil
}
