package ndshape

import (
	"iter"
	"slices"
)

// Offsets iterates over the offsets of the elements in row-major order of
// the shape (the last index varying fastest). A 0-d layout yields its
// offset once; a layout of size 0 yields nothing.
func (l Layout) Offsets() iter.Seq[int] {
	shape, strides, offset := slices.Clone(l.shape), slices.Clone(l.strides), l.offset
	return func(yield func(int) bool) {
		for _, d := range shape {
			if d == 0 {
				return
			}
		}
		n := len(shape)
		idx := make([]int, n)
		off := offset
		for {
			if !yield(off) {
				return
			}
			i := n - 1
			for ; i >= 0; i-- {
				idx[i]++
				off += strides[i]
				if idx[i] < shape[i] {
					break
				}
				off -= idx[i] * strides[i]
				idx[i] = 0
			}
			if i < 0 {
				return
			}
		}
	}
}

// AppendOffsets appends the offsets of the elements, in row-major order, to
// dst and returns it.
func (l Layout) AppendOffsets(dst []int) []int {
	for o := range l.Offsets() {
		dst = append(dst, o)
	}
	return dst
}

// Simplify returns the layout with the fewest axes that reaches the same
// offsets in the same row-major order: axes of size 1 dropped, adjacent axes
// that are contiguous with each other (stride[i] == shape[i+1]*stride[i+1])
// merged into one. A layout of size 0 becomes shape [0]; one with every
// axis of size 1 becomes 0-d.
func (l Layout) Simplify() Layout {
	out, _ := Coalesce(l)
	return out[0]
}

// Coalesce simplifies layouts of one shape together, as the operands of one
// elementwise kernel (CuPy's and NumPy's dimension reduction): it drops the
// axes of size 1 and merges adjacent axes where every layout is contiguous
// across them, so that the results share one shape with the fewest axes and
// keep the element correspondence in row-major order. The layouts must have
// equal shapes (broadcast them first).
func Coalesce(layouts ...Layout) ([]Layout, error) {
	if len(layouts) == 0 {
		return nil, nil
	}
	shape := layouts[0].shape
	for _, l := range layouts[1:] {
		if !slices.Equal(l.shape, shape) {
			return nil, errorf("coalesce", "shapes %v and %v differ", shapeStr(shape), shapeStr(l.shape))
		}
	}
	out := make([]Layout, len(layouts))
	if layouts[0].Size() == 0 {
		for i, l := range layouts {
			out[i] = Layout{shape: []int{0}, strides: []int{0}, offset: l.offset}
		}
		return out, nil
	}
	for i, l := range layouts {
		out[i] = Layout{shape: []int{}, strides: []int{}, offset: l.offset}
	}
	var dims []int
	for ax, d := range shape {
		if d == 1 {
			continue
		}
		if k := len(dims) - 1; k >= 0 {
			merge := true
			for i, l := range layouts {
				if out[i].strides[k] != d*l.strides[ax] {
					merge = false
					break
				}
			}
			if merge {
				dims[k] *= d
				for i, l := range layouts {
					out[i].strides[k] = l.strides[ax]
				}
				continue
			}
		}
		dims = append(dims, d)
		for i, l := range layouts {
			out[i].strides = append(out[i].strides, l.strides[ax])
		}
	}
	for i := range out {
		out[i].shape = slices.Clone(dims)
		if out[i].shape == nil {
			out[i].shape = []int{}
		}
	}
	return out, nil
}
