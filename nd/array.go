package nd

import (
	"errors"
	"reflect"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/ndshape"
)

// Elem is every element type of an Array: cuda.Number's (int8 ... uint64,
// float32, float64, cuda.Float16, cuda.BFloat16), types defined on them
// too, such as Bool.
type Elem = cuda.Number

// Bool is the element type of masks, the results of comparisons, one byte
// per element: 1 is true and 0 false (Where and the logical operations
// take any nonzero byte as true). It prints as true and false.
type Bool uint8

// Array is an n-dimensional array of T in device memory: a shape, strides
// counted in elements (possibly 0, for a broadcast axis, or negative, for
// a reversed one), an offset, and the memory it indexes, as NumPy's and
// CuPy's ndarray. A 0-d array holds one element; a dimension may be 0.
//
// Its memory is either its own (made by a constructor or an operation: Free
// releases it, in stream order) or another's: a view (Reshape, T,
// Slice, ...) of another Array, or an Array over a cuda.DeviceBuffer
// (FromBuffer). A view shares its base's memory, so that writing through it
// changes the base; its Free does nothing, and once the base's memory is
// freed the operations given it, its reading (ToSlice, Item, String) and
// its Buffer return errors wrapping cuda.ErrClosed (its shape is the
// host's: a view of it, made without touching memory, is still made, and
// fails in turn).
//
// Every Array belongs to a stream, the stream its memory was allocated on
// or given with: operations queue their work there, in the order they are
// called, and allocate their results there. The operands of an operation
// must share a stream; order work across streams with the stream's events,
// as for any buffer. Reading to the host (ToSlice, Item, String) waits for
// the work queued before it.
//
// An operation that fails returns its error and, in place of its result,
// an Array that carries the error: an operation given that Array fails at
// once with an error that wraps it (errors.Is and errors.As reach the
// first). So a chain of operations may check once, at its end, and hear
// of the step that failed first:
//
//	h, _ := nd.Matmul(x, w)
//	h, _ = nd.Add(h, bias)
//	y, err := nd.Softmax(h, -1) // Matmul's error, if it failed
//
// (as NaN flows through arithmetic, and as bufio.Scanner keeps its first
// error). Its Free does nothing.
//
// An Array is a value handle: its methods may be called from many
// goroutines at once, but work on the memory (an operation writing an
// array while another reads it) is ordered by its stream, as any GPU
// work. The zero Array is empty of everything: its calls return an error
// wrapping cuda.ErrInvalidValue, and it prints as invalid.
type Array[T Elem] struct {
	buf    *cuda.DeviceBuffer[T] // the memory the layout indexes; nil for a scalar of Scalar
	owns   bool                  // Free frees buf
	s      *cuda.Stream
	layout ndshape.Layout
	value  T     // a Scalar's value
	scalar bool  // made by Scalar: a 0-d value on the host, passed to kernels as an argument
	err    error // the error of the operation that returned this stand-in (poison)
}

// Scalar returns a 0-d array holding v on the host: an operand of any
// operation, broadcast against the others as NumPy broadcasts a Python
// number, given to the kernel as an argument rather than read from device
// memory. It belongs to no stream (the operation's other operands give
// theirs) and cannot be written.
func Scalar[T Elem](v T) *Array[T] {
	return &Array[T]{value: v, scalar: true}
}

// Shape returns the array's dimensions (a copy; empty for a 0-d array).
func (a *Array[T]) Shape() []int {
	if a == nil {
		return nil
	}
	return a.layout.Shape()
}

// Strides returns the array's strides in elements (a copy).
func (a *Array[T]) Strides() []int {
	if a == nil {
		return nil
	}
	return a.layout.Strides()
}

// Ndim returns the number of dimensions.
func (a *Array[T]) Ndim() int {
	if a == nil {
		return 0
	}
	return a.layout.Ndim()
}

// Size returns the number of elements: the product of the shape (1 for a
// 0-d array; 0 for the zero Array).
func (a *Array[T]) Size() int {
	if !a.valid() {
		return 0
	}
	return a.layout.Size()
}

// Stream returns the stream the array's work is queued on (nil for a
// Scalar and the zero Array).
func (a *Array[T]) Stream() *cuda.Stream {
	if a == nil {
		return nil
	}
	return a.s
}

// Context returns the context of the array's memory (nil for a Scalar and
// the zero Array).
func (a *Array[T]) Context() *cuda.Context {
	if a == nil || a.s == nil {
		return nil
	}
	return a.s.Context()
}

// IsContiguous reports whether the elements lie one after the other in
// row-major (C) order, as a fresh array's do.
func (a *Array[T]) IsContiguous() bool {
	return a.valid() && a.layout.IsContiguous()
}

// IsView reports whether the array's memory belongs to another: a view of
// an array, or an array over a buffer (FromBuffer).
func (a *Array[T]) IsView() bool {
	return a.valid() && !a.scalar && !a.owns
}

// Dtype returns the element type's name, as NumPy names it: "float32",
// "float16", "bfloat16", "int64", "bool" (for Bool) ...
func (a *Array[T]) Dtype() string { return typeName[T]() }

// Free releases the array's memory, in stream order on its stream, if the
// array owns it (an array made by a constructor or an operation): the
// operations given it or its views, and their reading, then return errors
// wrapping cuda.ErrClosed.
// Free on a view, on a Scalar, a nil Array or a second time does nothing.
// If the driver refuses, the array stays usable and Free may be called
// again.
func (a *Array[T]) Free() error {
	if a == nil || !a.owns || a.buf == nil {
		return nil
	}
	if err := a.buf.Free(); err != nil {
		return wrap("Array.Free", err)
	}
	return nil
}

// Buffer returns the array's elements as a cuda.DeviceBuffer, the same
// memory, when the array is contiguous (a contiguous view's buffer is a
// slice of its base's): for handing an array to a library of buffers
// (compute, cublas, a kernel of one's own). A strided array has no such
// buffer: Contiguous makes a copy that has one.
func (a *Array[T]) Buffer() (*cuda.DeviceBuffer[T], error) {
	const op = "Array.Buffer"
	if err := a.check(op, "a"); err != nil {
		return nil, err
	}
	if a.scalar {
		return nil, errorf(op, cuda.ErrInvalidValue, "a Scalar has no device memory")
	}
	if !a.layout.IsContiguous() {
		return nil, errorf(op, cuda.ErrInvalidValue, "the array of shape %v and strides %v is not contiguous: Contiguous makes a copy that is", a.layout.Shape(), a.layout.Strides())
	}
	b, err := a.buf.Slice(a.layout.Offset(), a.layout.Size())
	return b, wrap(op, err)
}

// valid reports whether a is an array (a Scalar or one with memory).
func (a *Array[T]) valid() bool { return a != nil && a.err == nil && (a.scalar || a.buf != nil) }

// check returns the error of an operation given a nil or zero Array as
// the argument named name.
func (a *Array[T]) check(op, name string) error {
	switch {
	case a == nil:
		return errorf(op, cuda.ErrInvalidValue, "%s is a nil *Array", name)
	case a.err != nil:
		return &Error{Op: op, Err: a.err, Detail: name + " is the result of an operation that failed"}
	case !a.valid():
		return errorf(op, cuda.ErrInvalidValue, "%s is a zero Array: make arrays with Zeros, FromSlice and the like", name)
	}
	return nil
}

// emptyOpen returns the error of an array of no elements whose memory was
// freed (wrapping cuda.ErrClosed): an operation reads and writes nothing
// of it, and would not find out, where one of an array with elements finds
// out as it slices the memory. nil for any other array.
func (a *Array[T]) emptyOpen(op string) error {
	if a.scalar || a.buf == nil || a.layout.Size() != 0 {
		return nil
	}
	_, err := a.buf.Slice(0, 0)
	return wrap(op, err)
}

// with returns a view of a's memory with another layout.
func (a *Array[T]) with(l ndshape.Layout) *Array[T] {
	return &Array[T]{buf: a.buf, s: a.s, layout: l, value: a.value, scalar: a.scalar, err: a.err}
}

// span returns the buffer over the elements the layout reaches (from the
// lowest to the highest), and the layout's offset into it: kernels index from there (a negative stride
// reaches below the offset).
func (a *Array[T]) span(op string) (*cuda.DeviceBuffer[T], int, error) {
	lo, hi := a.layout.Span() // hi is the last element's offset, lo-1 for none
	if lo == 0 && hi == a.buf.Len()-1 && hi >= 0 {
		return a.buf, a.layout.Offset(), nil // the whole buffer: no slice to make
	}
	// An array of no elements takes the slice too, though the buffer is
	// all of it: Slice finds freed memory closed, where the whole buffer
	// returned as it is would let an operation on a freed empty array
	// succeed.
	b, err := a.buf.Slice(lo, hi+1-lo)
	return b, a.layout.Offset() - lo, wrap(op, err)
}

// typeName is T's name, as NumPy and compute's parameter lists name it.
// Float16 and BFloat16 are told by identity (their kind is uint16's); Bool
// by identity; any other type by its kind.
func typeName[T Elem]() string {
	switch any(*new(T)).(type) {
	case cuda.Float16:
		return "float16"
	case cuda.BFloat16:
		return "bfloat16"
	case Bool:
		return "bool"
	}
	switch reflect.TypeFor[T]().Kind() {
	case reflect.Int8:
		return "int8"
	case reflect.Int16:
		return "int16"
	case reflect.Int32:
		return "int32"
	case reflect.Int64:
		return "int64"
	case reflect.Uint8:
		return "uint8"
	case reflect.Uint16:
		return "uint16"
	case reflect.Uint32:
		return "uint32"
	case reflect.Uint64:
		return "uint64"
	case reflect.Float32:
		return "float32"
	}
	return "float64"
}

// result returns a, or its failed stand-in where err is not nil (see
// poison).
func result[T Elem](a *Array[T], err error) (*Array[T], error) {
	poison(&a, &err)
	return a, err
}

// poison makes *out a failed array, carrying *err, where *err is not nil:
// every exported operation returns one with its error, so that an
// operation given it fails at once with an error that wraps the first, and
// a chain of operations needs one check, at its end. A result the
// operation made before it failed (a temporary's release failing last) is
// freed.
func poison[T Elem](out **Array[T], err *error) {
	if *err == nil {
		return
	}
	if *out != nil && (*out).err == nil && (*out).owns {
		freed(err, *out)
	}
	*out = &Array[T]{err: *err}
}

// axisOf returns axis (negative counting from the end) of an array of n
// dimensions as an index, or op's error where it is out of range.
func axisOf(op string, axis, n int) (int, error) {
	ax := axis
	if ax < 0 {
		ax += n
	}
	if ax < 0 || ax >= n {
		return 0, errorf(op, cuda.ErrInvalidValue, "axis %d is out of range for %d dimensions", axis, n)
	}
	return ax, nil
}

// freed frees a, a temporary of an operation, joining Free's error into
// *err: a release that fails is the operation's error, not lost (its
// result, where it has one, is then freed by poison). A refused Free
// leaves the memory allocated and may be called again: it is, once, so
// that a passing refusal leaks nothing (what a second refusal keeps, the
// buffer's cleanup frees when it is collected).
func freed[T Elem](err *error, a *Array[T]) {
	if e := a.Free(); e != nil {
		a.Free()
		*err = errors.Join(*err, e)
	}
}
