package nd

import (
	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/ndshape"
)

// None, given as a start or stop to Slice, stands for Python's omitted
// bound: a[::-1] is a.Slice(0, nd.None, nd.None, -1).
const None = ndshape.None

// view returns a view of a with the layout f makes of a's, or the error
// of op.
func (a *Array[T]) view(op string, f func(ndshape.Layout) (ndshape.Layout, error)) (*Array[T], error) {
	if err := a.check(op, "a"); err != nil {
		return nil, err
	}
	l, err := f(a.layout)
	if err != nil {
		return nil, wrap(op, err)
	}
	return a.with(l), nil
}

// Reshape returns the array with the shape, its elements in the same
// row-major order: a view where the strides allow it (always, for a
// contiguous array), else a contiguous copy, as NumPy's reshape. One
// dimension may be -1: it is inferred from the others.
func (a *Array[T]) Reshape(shape ...int) (out *Array[T], failure error) {
	defer poison(&out, &failure)
	const op = "Array.Reshape"
	if err := a.check(op, "a"); err != nil {
		return nil, err
	}
	l, ok, err := a.layout.Reshape(shape)
	if err != nil {
		return nil, wrap(op, err)
	}
	if ok {
		return a.with(l), nil
	}
	c, err := contiguous(op, a)
	if err != nil {
		return nil, err
	}
	if l, _, err = c.layout.Reshape(shape); err != nil { // a view: c is contiguous
		c.Free()
		return nil, wrap(op, err)
	}
	c.layout = l
	return c, nil
}

// Permute returns the view whose axis i is a's axis axes[i] (NumPy's
// transpose with axes; negative axes count from the end).
func (a *Array[T]) Permute(axes ...int) (out *Array[T], failure error) {
	defer poison(&out, &failure)
	return a.view("Array.Permute", func(l ndshape.Layout) (ndshape.Layout, error) { return l.Permute(axes...) })
}

// T returns the view with the axes reversed (NumPy's .T): the transpose of
// a matrix. The T of a zero Array is a zero Array, and of a failed one
// a failed one.
func (a *Array[T]) T() *Array[T] {
	switch {
	case a == nil:
		return &Array[T]{}
	case !a.valid():
		return &Array[T]{err: a.err}
	}
	return a.with(a.layout.Transpose())
}

// Slice returns the view of a sliced along axis as Python's
// start:stop:step: negative start and stop count from the end, bounds out
// of range are clipped, None is an omitted bound, and step may be
// negative but not 0 (a[2:10:3] is a.Slice(0, 2, 10, 3)).
func (a *Array[T]) Slice(axis, start, stop, step int) (out *Array[T], failure error) {
	defer poison(&out, &failure)
	return a.view("Array.Slice", func(l ndshape.Layout) (ndshape.Layout, error) { return l.Slice(axis, start, stop, step) })
}

// Index returns the view of the elements whose index along axis is i
// (negative counts from the end), without that axis: a[i] is
// a.Index(0, i).
func (a *Array[T]) Index(axis, i int) (out *Array[T], failure error) {
	defer poison(&out, &failure)
	return a.view("Array.Index", func(l ndshape.Layout) (ndshape.Layout, error) { return l.Index(axis, i) })
}

// At returns the 0-d view of the element at index (one entry per axis,
// negative counting from the end). Item reads it.
func (a *Array[T]) At(index ...int) (out *Array[T], failure error) {
	defer poison(&out, &failure)
	return a.view("Array.At", func(l ndshape.Layout) (ndshape.Layout, error) {
		off, err := l.At(index...)
		if err != nil {
			return ndshape.Layout{}, err
		}
		return ndshape.New(nil, nil, off)
	})
}

// BroadcastTo returns the view of a broadcast to shape, as NumPy's
// broadcast_to: a's axes align with shape's last, and an axis of size 1,
// or one shape adds in front, repeats its elements with stride 0. Such a
// view is read-only, as NumPy's: given as an output (an Into's dst, Fill's,
// CopyInto's), where it would have one element written many times, it is
// an error wrapping cuda.ErrInvalidValue. Use it as an input.
func (a *Array[T]) BroadcastTo(shape ...int) (out *Array[T], failure error) {
	defer poison(&out, &failure)
	return a.view("Array.BroadcastTo", func(l ndshape.Layout) (ndshape.Layout, error) { return l.BroadcastTo(shape) })
}

// Expand is BroadcastTo where -1 keeps a's dimension (PyTorch's expand).
func (a *Array[T]) Expand(shape ...int) (out *Array[T], failure error) {
	defer poison(&out, &failure)
	return a.view("Array.Expand", func(l ndshape.Layout) (ndshape.Layout, error) { return l.Expand(shape) })
}

// Squeeze returns the view without the given axes, which must have size
// 1; with no axes, without every axis of size 1.
func (a *Array[T]) Squeeze(axes ...int) (out *Array[T], failure error) {
	defer poison(&out, &failure)
	return a.view("Array.Squeeze", func(l ndshape.Layout) (ndshape.Layout, error) { return l.Squeeze(axes...) })
}

// Unsqueeze returns the view with an axis of size 1 inserted as axis axis
// of the result (NumPy's expand_dims; negative counts from the end).
func (a *Array[T]) Unsqueeze(axis int) (out *Array[T], failure error) {
	defer poison(&out, &failure)
	return a.view("Array.Unsqueeze", func(l ndshape.Layout) (ndshape.Layout, error) { return l.Unsqueeze(axis) })
}

// Contiguous returns a contiguous array of a's elements: a view of a
// itself where it is contiguous already, else a copy (NumPy's
// ascontiguousarray). Free the result either way: a view's Free does
// nothing.
func (a *Array[T]) Contiguous() (out *Array[T], failure error) {
	defer poison(&out, &failure)
	const op = "Array.Contiguous"
	if err := a.check(op, "a"); err != nil {
		return nil, err
	}
	if a.layout.IsContiguous() && !a.scalar {
		return a.with(a.layout), nil
	}
	return contiguous(op, a)
}

// Copy returns a contiguous copy of a, its own memory on a's stream.
func (a *Array[T]) Copy() (out *Array[T], failure error) {
	defer poison(&out, &failure)
	const op = "Array.Copy"
	if err := a.check(op, "a"); err != nil {
		return nil, err
	}
	return contiguous(op, a)
}

// contiguous copies a into a new contiguous array on its stream (a
// Scalar's stream is nil: it is copied by whoever has a stream).
func contiguous[T Elem](op string, a *Array[T]) (*Array[T], error) {
	if a.scalar {
		return nil, errorf(op, cuda.ErrInvalidValue, "a Scalar has no stream to copy it on")
	}
	c, err := empty[T](op, a.s, a.layout.Shape())
	if err != nil {
		return nil, err
	}
	if err := copyInto(op, c, a); err != nil {
		c.Free()
		return nil, err
	}
	return c, nil
}

// CopyInto copies src into dst, element for element, src broadcast to
// dst's shape (NumPy's copyto): dst may be a view, written through to its
// base. Both must share a stream (a Scalar src fills dst).
func CopyInto[T Elem](dst, src *Array[T]) error {
	return copyInto("CopyInto", dst, src)
}

func copyInto[T Elem](op string, dst, src *Array[T]) error {
	if err := writable(op, "dst", dst); err != nil {
		return err
	}
	out, err := operandOf(op, "dst", dst)
	if err != nil {
		return err
	}
	in, err := operandOf(op, "src", src)
	if err != nil {
		return err
	}
	ins := [1]operand{in}
	if !broadcastsTo(dst.layout, ins[:]) {
		// Why not, as ndshape says it.
		if _, err := src.layout.BroadcastTo(dst.layout.Shape()); err != nil {
			return wrap(op, err)
		}
	}
	return apply(op, copyExpr, out, ins[:])
}
