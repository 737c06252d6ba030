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
			return 0, errorf(op, "negative dimension in shape %v", slices.Clone(shape)) // a copy: shape stays the caller's (on its stack)
		}
		if d == 0 {
			size = 0
			continue
		}
		var ok bool
		if nz, ok = mul(nz, d); !ok {
			return 0, errorf(op, "shape %v: size overflows int", slices.Clone(shape))
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

// WithOffset returns the layout moved to another offset (the same shape
// and strides; the layouts share their slices, which no Layout changes),
// or an error where its offsets would overflow an int.
func (l Layout) WithOffset(offset int) (Layout, error) {
	if _, _, ok := extent(l.shape, l.strides, offset); !ok {
		return Layout{}, errorf("offset", "shape %v, strides %v, offset %d: offsets overflow int", shapeStr(l.shape), l.strides, offset)
	}
	return Layout{shape: l.shape, strides: l.strides, offset: offset}, nil
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
func Contiguous(shape []int) (Layout, error) { return ContiguousIn(nil, shape) }

// ContiguousIn is Contiguous with the layout's shape and strides kept in
// buf where it has room for both (2·len(shape) ints): memory that holds
// nothing else, which the caller gives the layout, and never writes.
func ContiguousIn(buf []int, shape []int) (Layout, error) {
	if _, err := checkShape("contiguous", shape); err != nil {
		return Layout{}, err
	}
	// The shape and the strides in one allocation, or none (a new array's
	// layout is made at every call that returns one).
	n := len(shape)
	both := buf[:0]
	if cap(buf) < 2*n {
		both = make([]int, 2*n)
	}
	both = both[:2*n]
	l := Layout{shape: both[:n:n], strides: both[n : 2*n : 2*n]}
	copy(l.shape, shape)
	if shape == nil {
		l.shape = nil // as slices.Clone leaves it
	}
	st := 1
	for i := n - 1; i >= 0; i-- {
		l.strides[i] = st
		if shape[i] != 0 {
			st *= shape[i]
		}
	}
	return l, nil
}

// Shape returns a copy of the shape.
func (l Layout) Shape() []int { return slices.Clone(l.shape) }

// Strides returns a copy of the strides, in elements.
func (l Layout) Strides() []int { return slices.Clone(l.strides) }

// Dim returns the dimension of axis i (0 <= i < Ndim), without the copy
// Shape makes.
func (l Layout) Dim(i int) int { return l.shape[i] }

// Stride returns the stride of axis i (0 <= i < Ndim), in elements,
// without the copy Strides makes.
func (l Layout) Stride(i int) int { return l.strides[i] }

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

// Repeats reports whether two indices reach one element: an axis of more
// than one index with stride 0, as broadcasting makes (the only way the
// views make one). Writing through such a layout writes an element more
// than once, from threads that race.
func (l Layout) Repeats() bool {
	if l.Size() == 0 {
		return false
	}
	for i, d := range l.shape {
		if d > 1 && l.strides[i] == 0 {
			return true
		}
	}
	return false
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
