package ndshape

import (
	"math"
	"slices"
)

// Reshape returns the layout of newShape over the same elements in the same
// row-major order, as a view: ok is false, with no error, where the strides
// do not allow a view and the array must be copied (NumPy's rule: each group
// of old axes merged or split must be contiguous with itself). One
// dimension of newShape may be -1: it is inferred. The error reports sizes
// that differ and invalid shapes.
func (l Layout) Reshape(newShape []int) (view Layout, ok bool, err error) {
	shape, err := inferShape(l.shape, newShape)
	if err != nil {
		return Layout{}, false, err
	}
	size := l.Size()
	if size == 0 {
		// No element is reached: NumPy's contiguous strides, at the same
		// offset where that fits, else strides 0.
		s := contiguousStrides(shape)
		if _, _, fits := extent(shape, s, l.offset); !fits {
			s = make([]int, len(shape))
		}
		return Layout{shape: shape, strides: s, offset: l.offset}, true, nil
	}
	if l.IsContiguous() {
		return Layout{shape: shape, strides: contiguousStrides(shape), offset: l.offset}, true, nil
	}
	// NumPy's _attempt_nocopy_reshape, C order.
	var od, os []int
	for i, d := range l.shape {
		if d != 1 {
			od = append(od, d)
			os = append(os, l.strides[i])
		}
	}
	nd := shape
	ns := make([]int, len(nd))
	oi, oj, ni, nj := 0, 1, 0, 1
	for ni < len(nd) && oi < len(od) {
		np, op := nd[ni], od[oi]
		for np != op {
			if np < op {
				np *= nd[nj]
				nj++
			} else {
				op *= od[oj]
				oj++
			}
		}
		for k := oi; k < oj-1; k++ {
			if od[k+1]*os[k+1] != os[k] {
				return Layout{}, false, nil
			}
		}
		ns[nj-1] = os[oj-1]
		for k := nj - 1; k > ni; k-- {
			ns[k-1] = ns[k] * nd[k]
		}
		ni = nj
		nj++
		oi = oj
		oj++
	}
	last := 1
	if ni >= 1 {
		last = ns[ni-1]
	}
	for k := ni; k < len(nd); k++ {
		ns[k] = last
	}
	return Layout{shape: shape, strides: ns, offset: l.offset}, true, nil
}

// inferShape checks newShape against old's size and fills in its -1.
func inferShape(old, newShape []int) ([]int, error) {
	size := 1
	for _, d := range old {
		size *= d
	}
	shape := slices.Clone(newShape)
	infer := -1
	known, nz := 1, 1
	for i, d := range shape {
		switch {
		case d == -1:
			if infer >= 0 {
				return nil, errorf("reshape", "cannot reshape %v into %v: more than one -1", shapeStr(old), newShape)
			}
			infer = i
		case d < 0:
			return nil, errorf("reshape", "cannot reshape %v into %v: negative dimension", shapeStr(old), newShape)
		case d == 0:
			known = 0
		default:
			var ok bool
			if nz, ok = mul(nz, d); !ok {
				return nil, errorf("reshape", "cannot reshape %v into %v: size overflows int", shapeStr(old), newShape)
			}
		}
	}
	if known != 0 {
		known = nz
	}
	if infer >= 0 {
		if known == 0 || size%known != 0 {
			return nil, errorf("reshape", "cannot reshape %v (size %d) into %v", shapeStr(old), size, newShape)
		}
		shape[infer] = size / known
		return shape, nil
	}
	if known != size {
		return nil, errorf("reshape", "cannot reshape %v (size %d) into %v (size %d)", shapeStr(old), size, newShape, known)
	}
	return shape, nil
}

// Permute returns the view whose axis i is the layout's axis axes[i]; axes
// is a permutation of the axes, negative entries counting from the end.
func (l Layout) Permute(axes ...int) (Layout, error) {
	n := len(l.shape)
	if len(axes) != n {
		return Layout{}, errorf("permute", "axes %v do not match shape %v", axes, shapeStr(l.shape))
	}
	seen := make([]bool, n)
	m := Layout{shape: make([]int, n), strides: make([]int, n), offset: l.offset}
	for i, a := range axes {
		j, ok := normAxis(a, n)
		if !ok || seen[j] {
			return Layout{}, errorf("permute", "axes %v are not a permutation of the axes of shape %v", axes, shapeStr(l.shape))
		}
		seen[j] = true
		m.shape[i] = l.shape[j]
		m.strides[i] = l.strides[j]
	}
	return m, nil
}

// Transpose returns the view with the axes reversed (NumPy's .T).
func (l Layout) Transpose() Layout {
	m := Layout{shape: slices.Clone(l.shape), strides: slices.Clone(l.strides), offset: l.offset}
	slices.Reverse(m.shape)
	slices.Reverse(m.strides)
	return m
}

// SliceIndices resolves a Python slice start:stop:step over an axis of
// length n as Python's slice.indices does: negative start and stop count
// from the end, out-of-range ones are clipped, None stands for an omitted
// bound. It returns the first index and the number of indices selected.
// A step of 0 is an error.
func SliceIndices(n, start, stop, step int) (first, count int, err error) {
	if step == 0 {
		return 0, 0, errorf("slice", "step 0")
	}
	if n < 0 {
		return 0, 0, errorf("slice", "negative length %d", n)
	}
	if step < -math.MaxInt {
		step = -math.MaxInt
	}
	if start == None {
		if step < 0 {
			start = n - 1
		} else {
			start = 0
		}
	} else {
		start = clip(start, n, step)
	}
	if stop == None {
		if step < 0 {
			stop = -1
		} else {
			stop = n
		}
	} else {
		stop = clip(stop, n, step)
	}
	if step < 0 {
		if stop < start {
			count = (start-stop-1)/(-step) + 1
		}
	} else if start < stop {
		count = (stop-start-1)/step + 1
	}
	return start, count, nil
}

// clip is PySlice_AdjustIndices for one bound.
func clip(x, n, step int) int {
	if x < 0 {
		x += n
		if x < 0 {
			if step < 0 {
				return -1
			}
			return 0
		}
	} else if x >= n {
		if step < 0 {
			return n - 1
		}
		return n
	}
	return x
}

// Slice returns the view of axis (negative counts from the end) sliced as
// Python's start:stop:step (see SliceIndices; None for an omitted bound).
func (l Layout) Slice(axis, start, stop, step int) (Layout, error) {
	a, ok := normAxis(axis, len(l.shape))
	if !ok {
		return Layout{}, errorf("slice", "axis %d out of range for shape %v", axis, shapeStr(l.shape))
	}
	first, count, err := SliceIndices(l.shape[a], start, stop, step)
	if err != nil {
		return Layout{}, err
	}
	m := Layout{shape: slices.Clone(l.shape), strides: slices.Clone(l.strides), offset: l.offset}
	m.shape[a] = count
	if count > 0 {
		m.offset += first * l.strides[a]
	}
	if count > 1 {
		// |step| <= n-1 here, so the product is within the old extent.
		m.strides[a] = l.strides[a] * step
	}
	return m, nil
}

// Index returns the view of the elements whose index along axis is i
// (negative counts from the end), without that axis.
func (l Layout) Index(axis, i int) (Layout, error) {
	a, ok := normAxis(axis, len(l.shape))
	if !ok {
		return Layout{}, errorf("index", "axis %d out of range for shape %v", axis, shapeStr(l.shape))
	}
	j, ok := normAxis(i, l.shape[a])
	if !ok {
		return Layout{}, errorf("index", "index %d out of range for axis %d of shape %v", i, axis, shapeStr(l.shape))
	}
	return Layout{
		shape:   slices.Delete(slices.Clone(l.shape), a, a+1),
		strides: slices.Delete(slices.Clone(l.strides), a, a+1),
		offset:  l.offset + j*l.strides[a],
	}, nil
}

// BroadcastTo returns the view of the layout broadcast to shape, as NumPy's
// broadcast_to: the axes are aligned from the last; an axis of size 1, or
// one that shape adds in front, repeats with stride 0; any other axis must
// equal shape's.
func (l Layout) BroadcastTo(shape []int) (Layout, error) {
	return l.expand("broadcast_to", shape, false)
}

// Expand is BroadcastTo where an entry -1 of shape keeps the layout's
// dimension on that axis (PyTorch's expand); -1 is invalid on the axes that
// shape adds in front.
func (l Layout) Expand(shape []int) (Layout, error) {
	return l.expand("expand", shape, true)
}

func (l Layout) expand(op string, shape []int, keep bool) (Layout, error) {
	n, k := len(shape), len(l.shape)
	if n < k {
		return Layout{}, errorf(op, "cannot broadcast %v to %v: fewer axes", shapeStr(l.shape), shape)
	}
	out := slices.Clone(shape)
	st := make([]int, n)
	for i := range n {
		j := i - (n - k) // the layout's axis, if >= 0
		if keep && out[i] == -1 && j >= 0 {
			out[i] = l.shape[j]
		}
		if out[i] < 0 {
			return Layout{}, errorf(op, "cannot broadcast %v to %v: negative dimension", shapeStr(l.shape), shape)
		}
		if j < 0 {
			continue
		}
		switch {
		case l.shape[j] == out[i]:
			st[i] = l.strides[j]
		case l.shape[j] == 1:
			st[i] = 0
		default:
			return Layout{}, errorf(op, "cannot broadcast %v to %v", shapeStr(l.shape), shape)
		}
	}
	if _, err := checkShape(op, out); err != nil {
		return Layout{}, err
	}
	return Layout{shape: out, strides: st, offset: l.offset}, nil
}

// Squeeze returns the view without the given axes, which must have size 1
// (negative counts from the end); with no axes, without every axis of size 1.
func (l Layout) Squeeze(axes ...int) (Layout, error) {
	n := len(l.shape)
	drop := make([]bool, n)
	if len(axes) == 0 {
		for i, d := range l.shape {
			drop[i] = d == 1
		}
	}
	for _, a := range axes {
		j, ok := normAxis(a, n)
		if !ok {
			return Layout{}, errorf("squeeze", "axis %d out of range for shape %v", a, shapeStr(l.shape))
		}
		if drop[j] {
			return Layout{}, errorf("squeeze", "axis %d repeated in %v", a, axes)
		}
		if l.shape[j] != 1 {
			return Layout{}, errorf("squeeze", "axis %d of shape %v does not have size 1", a, shapeStr(l.shape))
		}
		drop[j] = true
	}
	m := Layout{shape: []int{}, strides: []int{}, offset: l.offset}
	for i := range n {
		if !drop[i] {
			m.shape = append(m.shape, l.shape[i])
			m.strides = append(m.strides, l.strides[i])
		}
	}
	return m, nil
}

// Unsqueeze returns the view with an axis of size 1 inserted so that it is
// axis axis of the result (NumPy's expand_dims: axis in [-ndim-1, ndim],
// negative counting from the end of the result).
func (l Layout) Unsqueeze(axis int) (Layout, error) {
	n := len(l.shape)
	a, ok := normAxis(axis, n+1)
	if !ok {
		return Layout{}, errorf("unsqueeze", "axis %d out of range for shape %v", axis, shapeStr(l.shape))
	}
	// The stride of the new axis does not matter (one index); take the one
	// a contiguous layout would have, where it fits.
	st := 1
	if a < n {
		if s, ok := mul(l.strides[a], l.shape[a]); ok {
			st = s
		} else {
			st = 0
		}
	}
	return Layout{
		shape:   slices.Insert(slices.Clone(l.shape), a, 1),
		strides: slices.Insert(slices.Clone(l.strides), a, st),
		offset:  l.offset,
	}, nil
}
