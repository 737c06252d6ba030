package nd

import cuda "github.com/gocuda/cuda"

// Span returns the memory a view's elements lie in and the view's strides
// in elements, for handing a strided array to a library that takes
// strides (a head of a projection's output to an attention, a column
// block to cuBLAS), as Buffer hands over a contiguous one: a slice of the
// array's memory that starts at its first element (every index 0) and
// ends at the last element its strides reach, so that element (i0, i1,
// ...) is the slice's element Σ ik·strides[k]. A contiguous array's Span
// is its Buffer. An array with a negative stride is refused (its first
// element is not its lowest), as are a Scalar and a zero, failed or
// freed array; an array of no elements gives an empty slice.
//
// The slice is the array's memory, not a copy: writing through it writes
// the array, and it is freed with the array's base.
func (a *Array[T]) Span() (*cuda.DeviceBuffer[T], []int, error) {
	const op = "Array.Span"
	if err := a.check(op, "a"); err != nil {
		return nil, nil, err
	}
	if a.scalar {
		return nil, nil, errorf(op, cuda.ErrInvalidValue, "a Scalar has no device memory")
	}
	strides := a.layout.Strides()
	for k, s := range strides {
		if s < 0 && a.layout.Dim(k) > 1 {
			return nil, nil, errorf(op, cuda.ErrInvalidValue, "the array of shape %v has strides %v: a negative stride's first element is not its lowest (Contiguous makes a copy without one)", a.layout.Shape(), strides)
		}
	}
	lo, hi := a.layout.Span()
	if hi < lo { // no elements: an empty slice, where the base has room for it
		lo, hi = min(a.layout.Offset(), a.buf.Len()), min(a.layout.Offset(), a.buf.Len())-1
	}
	b, err := a.buf.Slice(lo, hi-lo+1)
	if err != nil {
		return nil, nil, wrap(op, err)
	}
	return b, strides, nil
}
