package nd

import "fmt"

// ToSlice returns a's elements in row-major order, copied to the host
// after the work queued on a's memory (on any of gocuda's streams): a
// view's elements as it sees them, a broadcast view's repeated. The copy
// reads the memory the view reaches (from its lowest to its highest
// element) and picks the view's elements out on the host.
func (a *Array[T]) ToSlice() ([]T, error) {
	const op = "Array.ToSlice"
	if err := a.check(op, "a"); err != nil {
		return nil, err
	}
	if a.scalar {
		return []T{a.value}, nil
	}
	span, off, err := a.span(op)
	if err != nil {
		return nil, err
	}
	host := make([]T, span.Len())
	if err := span.CopyToHost(host); err != nil {
		return nil, wrap(op, err)
	}
	l := a.layout
	if l.IsContiguous() {
		return host[off : off+l.Size()], nil
	}
	out := make([]T, 0, l.Size())
	base := l.Offset()
	for o := range l.Offsets() {
		out = append(out, host[o-base+off])
	}
	return out, nil
}

// Item returns the element at index (one entry per axis, negative
// counting from the end; none for a 0-d array), copied to the host after
// the work queued on a's memory.
func (a *Array[T]) Item(index ...int) (T, error) {
	const op = "Array.Item"
	var zero T
	e, err := a.At(index...)
	if err != nil {
		return zero, wrap(op, err)
	}
	v, err := e.ToSlice()
	if err != nil {
		return zero, err
	}
	return v[0], nil
}

// printDefaults are NumPy's print options.
var printDefaults = printOptions{Precision: 8, Threshold: 1000, EdgeItems: 3, LineWidth: 75}

// String prints the array as NumPy's repr prints one, its type in the
// prefix and its shape at the end:
//
//	nd.Array[float32]([[0., 1., 2.],
//	                   [3., 4., 5.]], shape=(2, 3), dtype=float32)
//
// all of a small array's elements, and the first and last three of each
// axis of one of more than 1000 elements. It reads the elements as ToSlice
// does; an array it cannot read prints the error in their place.
func (a *Array[T]) String() string {
	prefix := fmt.Sprintf("nd.Array[%s](", a.Dtype())
	switch {
	case a != nil && a.err != nil:
		return prefix + "failed: " + a.err.Error() + ")"
	case !a.valid():
		return prefix + "invalid)"
	}
	data, err := a.ToSlice()
	if err != nil {
		return prefix + "<" + err.Error() + ">)"
	}
	if bools, ok := any(data).([]Bool); ok {
		b := make([]bool, len(bools))
		for i, v := range bools {
			b[i] = v != 0
		}
		return formatRepr(b, a.layout.Shape(), a.Dtype(), prefix, printDefaults)
	}
	return formatRepr(data, a.layout.Shape(), a.Dtype(), prefix, printDefaults)
}

// String prints true or false.
func (b Bool) String() string {
	if b != 0 {
		return "true"
	}
	return "false"
}

var _ fmt.Stringer = (*Array[float32])(nil)
