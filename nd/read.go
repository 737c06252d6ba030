package nd

import (
	"fmt"
	"slices"
)

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
		// Its value once for each element of its shape: a Scalar's
		// views (BroadcastTo, Reshape, Slice) have shapes of any size.
		return slices.Repeat([]T{a.value}, a.layout.Size()), nil
	}
	span, off, err := a.span(op) // for no elements too: freed memory is an error
	if err != nil {
		return nil, err
	}
	if a.layout.Size() == 0 {
		return []T{}, nil
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
// all of a small array's elements, and of one of more than 1000 the first
// and last three along each longer axis, which are all it reads (after the
// work queued on a's memory). An array it cannot read prints the error in
// place of its elements.
func (a *Array[T]) String() string {
	prefix := fmt.Sprintf("nd.Array[%s](", a.Dtype())
	switch {
	case a != nil && a.err != nil:
		return prefix + "failed: " + a.err.Error() + ")"
	case !a.valid():
		return prefix + "invalid)"
	}
	data, shape, opt, err := a.shown()
	if err != nil {
		return prefix + "<" + err.Error() + ">)"
	}
	if bools, ok := any(data).([]Bool); ok {
		b := make([]bool, len(bools))
		for i, v := range bools {
			b[i] = v != 0
		}
		return formatReprOf(b, shape, a.layout.Shape(), a.Dtype(), prefix, opt)
	}
	return formatReprOf(data, shape, a.layout.Shape(), a.Dtype(), prefix, opt)
}

// shown returns the elements String prints, the shape they have and the
// options to print them with: every element of an array of at most
// printDefaults.Threshold; else a summary, each axis longer than twice
// the edge items cut to its first and last ones around one element that
// stands for those left out (never read or shown), printed with every
// axis summarized that can be: what NumPy shows of the whole array.
func (a *Array[T]) shown() ([]T, []int, printOptions, error) {
	opt := printDefaults
	if a.layout.Size() <= opt.Threshold {
		data, err := a.ToSlice()
		return data, a.layout.Shape(), opt, err
	}
	opt.Threshold = 0
	e := opt.EdgeItems
	shape, strides := a.layout.Shape(), a.layout.Strides()
	idx := make([][]int, len(shape)) // each axis's indices read; -1 the stand-in
	sumShape := make([]int, len(shape))
	for k, d := range shape {
		if d > 2*e {
			for i := range e {
				idx[k] = append(idx[k], i)
			}
			idx[k] = append(idx[k], -1)
			for i := d - e; i < d; i++ {
				idx[k] = append(idx[k], i)
			}
		} else {
			for i := range d {
				idx[k] = append(idx[k], i)
			}
		}
		sumShape[k] = len(idx[k])
	}
	n := 1
	for _, d := range sumShape {
		n *= d
	}
	out := make([]T, n)
	if a.scalar {
		// A Scalar's large view (BroadcastTo) has no memory to read:
		// every element shown is its value.
		for i := range out {
			out[i] = a.value
		}
		return out, sumShape, opt, nil
	}
	last := len(shape) - 1
	pos := make([]int, last) // the summary's index on the other axes
	for at := 0; at < n; at += sumShape[last] {
		base, skip := a.layout.Offset(), false
		for k, p := range pos {
			i := idx[k][p]
			skip = skip || i < 0
			base += i * strides[k]
		}
		if !skip {
			// Runs of consecutive indices along the last axis, one copy
			// each where it is contiguous.
			row := idx[last]
			for j := 0; j < len(row); {
				if row[j] < 0 {
					j++
					continue
				}
				r := j + 1
				for strides[last] == 1 && r < len(row) && row[r] == row[r-1]+1 {
					r++
				}
				b, err := a.buf.Slice(base+row[j]*strides[last], r-j)
				if err == nil {
					err = b.CopyToHost(out[at+j : at+r])
				}
				if err != nil {
					return nil, nil, opt, wrap("Array.String", err)
				}
				j = r
			}
		}
		for k := last - 1; k >= 0; k-- {
			if pos[k]++; pos[k] < sumShape[k] {
				break
			}
			pos[k] = 0
		}
	}
	return out, sumShape, opt, nil
}

// String prints true or false.
func (b Bool) String() string {
	if b != 0 {
		return "true"
	}
	return "false"
}

var _ fmt.Stringer = (*Array[float32])(nil)
