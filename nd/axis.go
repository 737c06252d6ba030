package nd

import (
	"fmt"
	"sync"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/compute"
	"github.com/gocuda/cuda/internal/ndshape"
)

// The operations along one axis (softmax, cumulative sums, arg max and
// min): the axis is made the last of a contiguous array (a itself where
// it is already, else a copy of the permuted view), so that each kernel
// takes rows: rows of cols elements, one after the other. Softmax and
// Cumsum along another axis of many lines take them where they are
// (lines.go).

// alongAxis returns a's elements as rows along axis (a contiguous array
// whose last axis is axis: a itself, a view of a, or a copy, which its
// Free frees: free it with freedTemp), the permutation that made it (nil
// where axis is the last: none), and rows and cols.
func alongAxis[T Elem](op string, a *Array[T], axis int) (rows *Array[T], perm []int, nrows, ncols int, err error) {
	if err := a.check(op, "a"); err != nil {
		return nil, nil, 0, 0, err
	}
	if a.scalar {
		return nil, nil, 0, 0, errorf(op, cuda.ErrInvalidValue, "a is a Scalar: give an array")
	}
	if err := a.emptyOpen(op); err != nil {
		return nil, nil, 0, 0, err // no row of an empty a is read
	}
	n := a.layout.Ndim()
	ax, err := axisOf(op, axis, n)
	if err != nil {
		return nil, nil, 0, 0, err
	}
	v := a
	if ax != n-1 {
		for i := range n {
			if i != ax {
				perm = append(perm, i)
			}
		}
		perm = append(perm, ax)
		if v, err = a.Permute(perm...); err != nil {
			return nil, nil, 0, 0, wrap(op, err)
		}
	}
	if !v.layout.IsContiguous() {
		if v, err = contiguous(op, v); err != nil {
			return nil, nil, 0, 0, err
		}
	}
	ncols = a.layout.Dim(ax)
	nrows = 1
	if ncols > 0 {
		nrows = v.layout.Size() / ncols
	} else {
		for i := range n {
			if i != ax {
				nrows *= a.layout.Dim(i)
			}
		}
	}
	return v, perm, nrows, ncols, nil
}

// freedTemp frees rows, alongAxis's of a, where it is a copy: not a
// itself.
func freedTemp[T Elem](err *error, rows, a *Array[T]) {
	if rows != a {
		freed(err, rows)
	}
}

// sameShape reports whether the layouts have the same shape.
func sameShape(l, m ndshape.Layout) bool {
	if l.Ndim() != m.Ndim() {
		return false
	}
	for i := range l.Ndim() {
		if l.Dim(i) != m.Dim(i) {
			return false
		}
	}
	return true
}

// unpermuted returns the array of the permuted shape in out's memory seen
// in a's axis order: perm's inverse applied (nil: none).
func unpermuted[T Elem](out *Array[T], perm []int) (*Array[T], error) {
	if perm == nil {
		return out, nil
	}
	inv := make([]int, len(perm))
	for i, p := range perm {
		inv[p] = i
	}
	l, err := out.layout.Permute(inv...)
	if err != nil {
		return nil, err
	}
	out.layout = l
	return out, nil
}

// rowFunc computes rows of cols elements of src into dst, on s.
type rowFunc[T Elem] func(dst, src *cuda.DeviceBuffer[T], rows, cols int, s *cuda.Stream) error

// rowwise runs f over a's rows along axis into a new array of a's shape
// (its own memory, laid out with axis last), or into dst; or lines, where
// not nil, a thread a line, where alongLines takes a and dst.
func rowwise[T Elem](op string, a *Array[T], axis int, dst *Array[T], f rowFunc[T], lines lineFunc[T]) (result *Array[T], err error) {
	if lines != nil {
		if result, ok, err := alongLines(op, a, axis, dst, lines); ok {
			return result, err
		}
	}
	src, perm, rows, cols, err := alongAxis(op, a, axis)
	if err != nil {
		return nil, err
	}
	defer freedTemp(&err, src, a)
	if dst != nil {
		if err := writable(op, "dst", dst); err != nil {
			return nil, err
		}
		if !sameShape(dst.layout, a.layout) {
			return nil, errorf(op, cuda.ErrInvalidValue, "dst has shape %v, and a %v", dst.layout.Shape(), a.layout.Shape())
		}
		if dst.s != a.s {
			return nil, errorf(op, cuda.ErrInvalidValue, "dst and a are on different streams: the operands of an operation share one")
		}
	}
	// Along the last axis into a contiguous dst that shares no memory
	// with a, f writes the result itself: no result to allocate and copy.
	if dst != nil && perm == nil && dst.layout.IsContiguous() && !overlapping(op, dst, a) {
		if dst.layout.Size() == 0 {
			return nil, nil
		}
		in, err := src.Buffer()
		if err != nil {
			return nil, wrap(op, err)
		}
		c, err := dst.Buffer()
		if err != nil {
			return nil, wrap(op, err)
		}
		return nil, wrap(op, f(c, in, rows, cols, a.s))
	}
	out, err := empty[T](op, a.s, src.layout.Shape())
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*Array[T], error) {
		out.Free()
		return nil, err
	}
	if out.layout.Size() > 0 {
		in, err := src.Buffer()
		if err != nil {
			return fail(wrap(op, err))
		}
		if err := f(out.buf, in, rows, cols, a.s); err != nil {
			return fail(wrap(op, err))
		}
	}
	if out, err = unpermuted(out, perm); err != nil {
		return fail(wrap(op, err))
	}
	if dst == nil {
		return out, nil
	}
	defer freed(&err, out)
	return nil, copyInto(op, dst, out)
}

// Softmax returns the softmax of a along axis (negative counting from the
// end): e^(x-max) over the sum of them, each line along the axis on its
// own.
func Softmax[T cuda.AnyFloat](a *Array[T], axis int) (out *Array[T], failure error) {
	defer poison(&out, &failure)
	return rowwise("Softmax", a, axis, nil, softmaxRows[T](compute.Softmax[T]), softmaxLines[T](false))
}

// SoftmaxInto sets dst to the softmax of a along axis.
func SoftmaxInto[T cuda.AnyFloat](dst, a *Array[T], axis int) error {
	if err := writable("SoftmaxInto", "dst", dst); err != nil {
		return err
	}
	return errOnly(rowwise("SoftmaxInto", a, axis, dst, softmaxRows[T](compute.Softmax[T]), softmaxLines[T](false)))
}

// LogSoftmax returns the log of the softmax of a along axis, computed as
// x - max - log(sum of e^(x-max)).
func LogSoftmax[T cuda.AnyFloat](a *Array[T], axis int) (out *Array[T], failure error) {
	defer poison(&out, &failure)
	return rowwise("LogSoftmax", a, axis, nil, softmaxRows[T](compute.LogSoftmax[T]), softmaxLines[T](true))
}

// LogSoftmaxInto sets dst to the log-softmax of a along axis.
func LogSoftmaxInto[T cuda.AnyFloat](dst, a *Array[T], axis int) error {
	if err := writable("LogSoftmaxInto", "dst", dst); err != nil {
		return err
	}
	return errOnly(rowwise("LogSoftmaxInto", a, axis, dst, softmaxRows[T](compute.LogSoftmax[T]), softmaxLines[T](true)))
}

func softmaxRows[T cuda.AnyFloat](f func(dst, src *cuda.DeviceBuffer[T], shape compute.Shape, s *cuda.Stream) error) rowFunc[T] {
	return func(dst, src *cuda.DeviceBuffer[T], rows, cols int, s *cuda.Stream) error {
		return f(dst, src, compute.Shape{Rows: rows, Cols: cols}, s)
	}
}

// Cumsum returns the cumulative sums of a along axis: element k of a line
// is the sum of its elements 0 to k, folded in order (in 64 bits for
// integers, float32 for the halves, as Sum; of Bools, true from the first
// true on). Each line is summed by one thread, in order: fast for many
// short lines, slow for a few long ones.
func Cumsum[T Elem](a *Array[T], axis int) (out *Array[T], failure error) {
	defer poison(&out, &failure)
	return rowwise("Cumsum", a, axis, nil, cumsumRows[T], cumsumLines[T])
}

// CumsumInto sets dst to the cumulative sums of a along axis.
func CumsumInto[T Elem](dst, a *Array[T], axis int) error {
	if err := writable("CumsumInto", "dst", dst); err != nil {
		return err
	}
	return errOnly(rowwise("CumsumInto", a, axis, dst, cumsumRows[T], cumsumLines[T]))
}

// rowKernels are the kernels of the row operations, by name and type.
var rowKernels sync.Map // rowKey -> *compute.Elementwise

// rowKey names a row kernel: its name, a second part of it (or ""), and
// its type (no string is made to look one up).
type rowKey struct {
	name, sub string
	t         int
}

// rowKernel returns the kernel name (sub) of t, declared by spec on first
// use.
func rowKernel(name, sub string, t ctype, spec func() compute.ElementwiseSpec) (*compute.Elementwise, error) {
	key := rowKey{name, sub, t.id}
	if k, ok := rowKernels.Load(key); ok {
		return k.(*compute.Elementwise), nil
	}
	k, err := compute.NewElementwise(spec())
	if err != nil {
		return nil, err
	}
	got, _ := rowKernels.LoadOrStore(key, k)
	return got.(*compute.Elementwise), nil
}

// cumsumRows is Cumsum's rowFunc: rows are lines of elements 1 apart.
func cumsumRows[T Elem](dst, src *cuda.DeviceBuffer[T], rows, cols int, s *cuda.Stream) error {
	return cumsumLines(dst, src, cols, 1, rows, s)
}

// ArgMax returns the index of the largest element of each line of a along
// axis (the first of equals, or the first NaN, as NumPy's argmax): an
// array of int64 of a's shape without axis. Each line is searched by one
// thread, except a's only line, which compute's ArgMax searches.
func ArgMax[T Elem](a *Array[T], axis int) (out *Array[int64], failure error) {
	defer poison(&out, &failure)
	return argExtreme("ArgMax", ">", compute.ArgMax[T], a, axis, nil)
}

// ArgMaxInto sets dst to the index of the largest element of each line of
// a along axis.
func ArgMaxInto[T Elem](dst *Array[int64], a *Array[T], axis int) error {
	if err := writable("ArgMaxInto", "dst", dst); err != nil {
		return err
	}
	return errOnly(argExtreme("ArgMaxInto", ">", compute.ArgMax[T], a, axis, dst))
}

// ArgMin returns the index of the smallest element of each line of a
// along axis (the first of equals, or the first NaN).
func ArgMin[T Elem](a *Array[T], axis int) (out *Array[int64], failure error) {
	defer poison(&out, &failure)
	return argExtreme("ArgMin", "<", compute.ArgMin[T], a, axis, nil)
}

// ArgMinInto sets dst to the index of the smallest element of each line
// of a along axis.
func ArgMinInto[T Elem](dst *Array[int64], a *Array[T], axis int) error {
	if err := writable("ArgMinInto", "dst", dst); err != nil {
		return err
	}
	return errOnly(argExtreme("ArgMinInto", "<", compute.ArgMin[T], a, axis, dst))
}

func argExtreme[T Elem](op, cmp string, whole func(dst *cuda.DeviceBuffer[int64], src *cuda.DeviceBuffer[T], s *cuda.Stream) error, a *Array[T], axis int, dst *Array[int64]) (result *Array[int64], err error) {
	src, _, rows, cols, err := alongAxis(op, a, axis)
	if err != nil {
		return nil, err
	}
	defer freedTemp(&err, src, a)
	if cols == 0 {
		return nil, errorf(op, cuda.ErrInvalidValue, "a has shape %v: an empty line has no %s", a.layout.Shape(), map[string]string{">": "largest", "<": "smallest"}[cmp]+" element")
	}
	shape := src.layout.Shape()
	// The line's axis is gone: the others keep a's order.
	out, finish, err := target(op, a.s, dst, shape[:len(shape)-1], dst != nil && overlapping(op, dst, src))
	if err != nil {
		return nil, err
	}
	if rows == 0 {
		return finish(nil)
	}
	in, err := src.Buffer()
	var ob *cuda.DeviceBuffer[int64]
	if err == nil {
		ob, err = out.Buffer()
	}
	if err == nil {
		if rows == 1 {
			err = whole(ob, in, a.s)
		} else {
			t := ctypeOf[T]()
			var k *compute.Elementwise
			k, err = rowKernel("arg", cmp, t, func() compute.ElementwiseSpec {
				return compute.ElementwiseSpec{Name: "nd_arg" + map[string]string{">": "max", "<": "min"}[cmp] + "_" + t.name,
					InParams: fmt.Sprintf("raw %s x, int64 cols", t.name), OutParams: "int64 y",
					Operation: fmt.Sprintf(`const long long base = i * cols;
long long best = 0;
%[1]s v = x[base];
for (long long k = 1; k < cols && v == v; k++) { const %[1]s w = x[base + k]; if (w != w || w %[2]s v) { v = w; best = k; } }
y = best;`, t.value, cmp)}
			})
			if err == nil {
				err = k.Launch(a.s, in, int64(cols), ob)
			}
		}
	}
	return finish(wrap(op, err))
}
