// Package ndshape is the shape and stride arithmetic under the n-d arrays
// that issue 50 asks for: shapes, strides counted in elements (possibly 0 or
// negative), an offset, the views NumPy makes without copying (reshape when
// the strides allow it, permute/transpose, slicing with start/stop/step,
// indexing, broadcast_to/expand with stride 0, squeeze/unsqueeze), NumPy's
// broadcasting rules, and the helpers that host-side gathers and generated
// kernels need (the element offsets in row-major order, the coalescing of
// axes that are contiguous with each other).
//
// Everything here follows NumPy's semantics, with strides in elements rather
// than bytes: the buffer the offsets index is a buffer of elements of one
// type, so the element type never enters the arithmetic. 0-d layouts (one
// element) and zero-size dimensions work everywhere.
//
// The package is pure arithmetic: standard library only, no dependency on
// the driver or the root package, so it is tested exhaustively on the CPU.
// It is internal because the public array package, its names and its error
// mapping are decided with issue 50's API; that package wraps ErrShape into
// cuda.ErrInvalidValue.
//
// A Layout is a value: its methods return new Layouts and never alias the
// slices a caller passed in or received. No function panics on bad input:
// negative dimensions, axes out of range, sizes or offsets that would
// overflow an int are errors wrapping ErrShape.
package ndshape

import (
	"errors"
	"fmt"
	"iter"
	"math"
	"slices"
	"strings"
)

// ErrShape is the sentinel every error of this package wraps: a shape,
// stride, axis or index that is invalid or does not agree with another.
var ErrShape = errors.New("invalid shape")

// Error is the error this package returns: the operation and a message that
// prints the shapes involved (both shapes, where two disagree). It wraps
// ErrShape.
type Error struct {
	Op  string // the operation: "reshape", "broadcast", "slice", ...
	Msg string // what is wrong, with the shapes
}

func (e *Error) Error() string { return "ndshape: " + e.Op + ": " + e.Msg }

// Unwrap returns ErrShape.
func (e *Error) Unwrap() error { return ErrShape }

func errorf(op, format string, args ...any) error {
	return &Error{Op: op, Msg: fmt.Sprintf(format, args...)}
}

// None, given as a start or stop to Slice, stands for Python's omitted
// bound: the start is 0 (step > 0) or the last index (step < 0), the stop
// is past the end (step > 0) or before the beginning (step < 0).
const None = math.MinInt

// Layout is the shape, the strides (in elements) and the offset (in
// elements) of an n-d array over a buffer of elements. The zero Layout is a
// 0-d layout: one element at offset 0.
//
// Every Layout this package returns keeps an invariant: the least and
// greatest offsets reached, taking each dimension's extent (dim-1)*stride
// over the dimensions that are not 0, fit in an int; so does the product of
// the dimensions that are not 0. Views only ever select from those offsets.
type Layout struct {
	shape   []int
	strides []int
	offset  int
}

// mul returns a*b and whether it did not overflow.
func mul(a, b int) (int, bool) {
	if a == 0 || b == 0 {
		return 0, true
	}
	if (a == -1 && b == math.MinInt) || (b == -1 && a == math.MinInt) {
		return 0, false
	}
	c := a * b
	if c/b != a {
		return 0, false
	}
	return c, true
}

// add returns a+b and whether it did not overflow.
func add(a, b int) (int, bool) {
	c := a + b
	if (b > 0 && c < a) || (b < 0 && c > a) {
		return 0, false
	}
	return c, true
}

// checkShape checks that every dimension is >= 0 and that the product of
// the dimensions that are not 0 fits in an int (as NumPy checks); it returns
// the size (0 if any dimension is 0).
func checkShape(op string, shape []int) (int, error) {
	size, nz := 1, 1
	for _, d := range shape {
		if d < 0 {
			return 0, errorf(op, "negative dimension in shape %v", shape)
		}
		if d == 0 {
			size = 0
			continue
		}
		var ok bool
		if nz, ok = mul(nz, d); !ok {
			return 0, errorf(op, "shape %v: size overflows int", shape)
		}
	}
	if size == 0 {
		return 0, nil
	}
	return nz, nil
}

// extent returns the least and greatest offsets of the layout's elements,
// counting only the dimensions that are not 0, and whether they fit.
func extent(shape, strides []int, offset int) (lo, hi int, ok bool) {
	lo, hi = offset, offset
	for i, d := range shape {
		if d <= 1 {
			continue
		}
		e, ok := mul(d-1, strides[i])
		if !ok {
			return 0, 0, false
		}
		if e > 0 {
			hi, ok = add(hi, e)
		} else {
			lo, ok = add(lo, e)
		}
		if !ok {
			return 0, 0, false
		}
	}
	return lo, hi, true
}

// New returns the layout of the given shape, strides and offset (all in
// elements). It checks that the shape and the strides have one entry per
// axis, that the dimensions are >= 0 and that the size and the offsets
// reached fit in an int. The slices are copied.
func New(shape, strides []int, offset int) (Layout, error) {
	if len(shape) != len(strides) {
		return Layout{}, errorf("new", "shape %v and strides %v differ in length", shape, strides)
	}
	if _, err := checkShape("new", shape); err != nil {
		return Layout{}, err
	}
	if _, _, ok := extent(shape, strides, offset); !ok {
		return Layout{}, errorf("new", "shape %v, strides %v, offset %d: offsets overflow int", shape, strides, offset)
	}
	return Layout{shape: slices.Clone(shape), strides: slices.Clone(strides), offset: offset}, nil
}

// ContiguousStrides returns the row-major (C order) strides of shape, in
// elements: the last axis has stride 1, each other axis the product of the
// dimensions after it (a dimension 0 counting as 1, as in NumPy).
func ContiguousStrides(shape []int) ([]int, error) {
	if _, err := checkShape("contiguous", shape); err != nil {
		return nil, err
	}
	return contiguousStrides(shape), nil
}

// contiguousStrides assumes checkShape(shape) passed.
func contiguousStrides(shape []int) []int {
	s := make([]int, len(shape))
	st := 1
	for i := len(shape) - 1; i >= 0; i-- {
		s[i] = st
		if shape[i] != 0 {
			st *= shape[i]
		}
	}
	return s
}

// Contiguous returns the row-major (C order) layout of shape at offset 0.
func Contiguous(shape []int) (Layout, error) {
	s, err := ContiguousStrides(shape)
	if err != nil {
		return Layout{}, err
	}
	return Layout{shape: slices.Clone(shape), strides: s}, nil
}

// Shape returns a copy of the shape.
func (l Layout) Shape() []int { return slices.Clone(l.shape) }

// Strides returns a copy of the strides, in elements.
func (l Layout) Strides() []int { return slices.Clone(l.strides) }

// Offset returns the offset of the first element, in elements.
func (l Layout) Offset() int { return l.offset }

// Ndim returns the number of axes (0 for a 0-d layout).
func (l Layout) Ndim() int { return len(l.shape) }

// Size returns the number of elements: the product of the dimensions, 0 if
// one is 0, 1 for a 0-d layout.
func (l Layout) Size() int {
	n := 1
	for _, d := range l.shape {
		n *= d
	}
	return n
}

// Equal reports whether two layouts have the same shape, strides and offset.
func (l Layout) Equal(m Layout) bool {
	return l.offset == m.offset && slices.Equal(l.shape, m.shape) && slices.Equal(l.strides, m.strides)
}

// String formats the layout as "shape [2 3] strides [3 1] offset 0".
func (l Layout) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "shape %v strides %v offset %d", shapeStr(l.shape), shapeStr(l.strides), l.offset)
	return b.String()
}

func shapeStr(s []int) []int {
	if s == nil {
		return []int{}
	}
	return s
}

// IsContiguous reports whether the elements lie in row-major order at
// consecutive offsets (C contiguous, as NumPy's flag: the strides of the
// axes of size 1 do not matter, and a layout of size 0 is contiguous). The
// offset may be anything.
func (l Layout) IsContiguous() bool {
	if l.Size() == 0 {
		return true
	}
	st := 1
	for i := len(l.shape) - 1; i >= 0; i-- {
		d := l.shape[i]
		if d == 1 {
			continue
		}
		if l.strides[i] != st {
			return false
		}
		st *= d
	}
	return true
}

// Span returns the least and greatest offsets of the elements, so that a
// buffer of n elements holds the layout if lo >= 0 && hi < n. A layout of
// size 0 reaches no element: its span is (0, -1), which every buffer holds.
func (l Layout) Span() (lo, hi int) {
	if l.Size() == 0 {
		return 0, -1
	}
	lo, hi, _ = extent(l.shape, l.strides, l.offset)
	return lo, hi
}

// Fits reports whether a buffer of n elements holds every element.
func (l Layout) Fits(n int) bool {
	lo, hi := l.Span()
	return lo >= 0 && hi < n
}

// normAxis maps axis in [-n, n) to [0, n).
func normAxis(axis, n int) (int, bool) {
	if axis < -n || axis >= n {
		return 0, false
	}
	if axis < 0 {
		axis += n
	}
	return axis, true
}

// At returns the offset of the element at index, one entry per axis; a
// negative entry counts from the end of its axis, as in NumPy.
func (l Layout) At(index ...int) (int, error) {
	if len(index) != len(l.shape) {
		return 0, errorf("at", "index %v has %d entries for shape %v", index, len(index), shapeStr(l.shape))
	}
	off := l.offset
	for i, x := range index {
		j, ok := normAxis(x, l.shape[i])
		if !ok {
			return 0, errorf("at", "index %v out of range for shape %v", index, shapeStr(l.shape))
		}
		off += j * l.strides[i]
	}
	return off, nil
}

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

// Broadcast returns the shape that NumPy broadcasts the shapes to: aligned
// from the last axis, each axis takes the dimension that is not 1 (0
// included), and two that are not 1 must be equal. No shapes broadcast to
// the 0-d shape. The error prints the two shapes that disagree.
func Broadcast(shapes ...[]int) ([]int, error) {
	n := 0
	for _, s := range shapes {
		n = max(n, len(s))
		for _, d := range s {
			if d < 0 {
				return nil, errorf("broadcast", "negative dimension in shape %v", s)
			}
		}
	}
	out := make([]int, n)
	from := make([]int, n) // which operand set out[i], -1 none
	for i := range out {
		out[i], from[i] = 1, -1
	}
	for k, s := range shapes {
		for j, d := range s {
			i := j + n - len(s)
			if d == 1 {
				continue
			}
			if from[i] < 0 {
				out[i], from[i] = d, k
				continue
			}
			if out[i] != d {
				return nil, errorf("broadcast", "shapes %v and %v cannot be broadcast together (axis %d: %d vs %d)",
					shapeStr(shapes[from[i]]), shapeStr(s), i-n, out[i], d)
			}
		}
	}
	if _, err := checkShape("broadcast", out); err != nil {
		return nil, err
	}
	return out, nil
}

// BroadcastLayouts broadcasts the layouts' shapes together and returns each
// layout broadcast to the result (stride 0 on the axes it repeats).
func BroadcastLayouts(layouts ...Layout) ([]Layout, error) {
	shapes := make([][]int, len(layouts))
	for i, l := range layouts {
		shapes[i] = l.shape
	}
	shape, err := Broadcast(shapes...)
	if err != nil {
		return nil, err
	}
	out := make([]Layout, len(layouts))
	for i, l := range layouts {
		if out[i], err = l.BroadcastTo(shape); err != nil {
			return nil, err
		}
	}
	return out, nil
}

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
