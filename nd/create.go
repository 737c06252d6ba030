package nd

import (
	"math"
	"unsafe"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/ndshape"
)

// Empty returns a contiguous array of the shape, its elements not set,
// allocated in stream order on s (cuda.AllocAsync): the work queued on s
// after it may use it. No shape is a 0-d array of one element; a
// dimension may be 0.
func Empty[T Elem](s *cuda.Stream, shape ...int) (out *Array[T], failure error) {
	defer poison(&out, &failure)
	return empty[T]("Empty", s, shape)
}

func empty[T Elem](op string, s *cuda.Stream, shape []int) (*Array[T], error) {
	if s == nil {
		return nil, errorf(op, cuda.ErrInvalidValue, "s is a nil *cuda.Stream")
	}
	// The array and its layout's shape and strides in one allocation,
	// where it has few axes.
	var a *Array[T]
	var l ndshape.Layout
	var err error
	if len(shape) <= smallDims {
		x := new(arrayDims[T])
		a = &x.a
		l, err = ndshape.ContiguousIn(x.dims[:], shape)
	} else {
		a = new(Array[T])
		l, err = ndshape.Contiguous(shape)
	}
	if err != nil {
		return nil, wrap(op, err)
	}
	buf, err := cuda.AllocAsync[T](s, l.Size())
	if err != nil {
		return nil, wrap(op, err)
	}
	*a = Array[T]{buf: buf, owns: true, s: s, layout: l}
	return a, nil
}

// smallDims is the most axes an array made by empty keeps its layout in
// (arrayDims).
const smallDims = 4

// arrayDims is an array with room for the shape and strides of its
// layout, of up to smallDims axes: a new array is one allocation.
type arrayDims[T Elem] struct {
	a    Array[T]
	dims [2 * smallDims]int
}

// Zeros returns a contiguous array of the shape, every element zero,
// allocated and set in stream order on s.
func Zeros[T Elem](s *cuda.Stream, shape ...int) (out *Array[T], failure error) {
	defer poison(&out, &failure)
	const op = "Zeros"
	a, err := empty[T](op, s, shape)
	if err != nil {
		return nil, err
	}
	if err := a.buf.Memset8Async(0, s); err != nil {
		a.Free()
		return nil, wrap(op, err)
	}
	return a, nil
}

// Ones returns a contiguous array of the shape, every element one.
func Ones[T Elem](s *cuda.Stream, shape ...int) (out *Array[T], failure error) {
	defer poison(&out, &failure)
	return full("Ones", s, one[T](), shape)
}

// Full returns a contiguous array of the shape, every element v.
func Full[T Elem](s *cuda.Stream, v T, shape ...int) (out *Array[T], failure error) {
	defer poison(&out, &failure)
	return full("Full", s, v, shape)
}

func full[T Elem](op string, s *cuda.Stream, v T, shape []int) (*Array[T], error) {
	a, err := empty[T](op, s, shape)
	if err != nil {
		return nil, err
	}
	if err := fill(op, a, v); err != nil {
		a.Free()
		return nil, err
	}
	return a, nil
}

// Fill sets every element of a, which may be a view, to v, in stream
// order.
func Fill[T Elem](a *Array[T], v T) error {
	return fill("Fill", a, v)
}

// fill sets a's elements to v: a memset where a is contiguous and v's
// bytes repeat a word the driver sets (every type of 1, 2 or 4 bytes, and
// 8-byte values whose halves are equal), else a kernel.
func fill[T Elem](op string, a *Array[T], v T) error {
	if err := writable(op, "a", a); err != nil {
		return err
	}
	if a.layout.IsContiguous() {
		b, err := a.buf.Slice(a.layout.Offset(), a.layout.Size())
		if err != nil {
			return wrap(op, err)
		}
		switch unsafe.Sizeof(v) {
		case 1:
			return wrap(op, b.Memset8Async(*(*uint8)(unsafe.Pointer(&v)), a.s))
		case 2:
			return wrap(op, b.Memset16Async(*(*uint16)(unsafe.Pointer(&v)), a.s))
		case 4:
			return wrap(op, b.Memset32Async(*(*uint32)(unsafe.Pointer(&v)), a.s))
		}
		if w := *(*[2]uint32)(unsafe.Pointer(&v)); w[0] == w[1] {
			b32, err := cuda.ViewAs[uint32](b)
			if err == nil {
				return wrap(op, b32.Memset32Async(w[0], a.s))
			}
		}
	}
	out, err := operandOf(op, "a", a)
	if err != nil {
		return err
	}
	in, _ := operandOf(op, "v", Scalar(v))
	return apply(op, expr{name: "fill", code: "x0"}, out, []operand{in})
}

// writable returns the error of writing a: nil, zero, a Scalar, or a
// broadcast view.
func writable[T Elem](op, name string, a *Array[T]) error {
	if err := a.check(op, name); err != nil {
		return err
	}
	if a.scalar {
		return errorf(op, cuda.ErrInvalidValue, "%s is a Scalar, which cannot be written", name)
	}
	if err := a.emptyOpen(op); err != nil {
		return err
	}
	if a.layout.Repeats() {
		// NumPy's broadcast_to views are read-only for the same reason.
		return errorf(op, cuda.ErrInvalidValue, "%s is a broadcast view (shape %v, strides %v): an axis of stride 0 would have one element written many times; write a contiguous array", name, a.layout.Shape(), a.layout.Strides())
	}
	return nil
}

// one returns T's 1.
func one[T Elem]() T {
	var v T
	switch p := any(&v).(type) {
	case *cuda.Float16:
		*p = cuda.NewFloat16(1)
	case *cuda.BFloat16:
		*p = cuda.NewBFloat16(1)
	default:
		v = T(1)
	}
	return v
}

// FromSlice returns an array of the shape holding a copy of data, in
// row-major order: len(data) must be the shape's size. No shape is a 1-d
// array of len(data) elements. The copy is done when FromSlice returns
// (data may change then); the array belongs to s.
func FromSlice[T Elem](s *cuda.Stream, data []T, shape ...int) (out *Array[T], failure error) {
	defer poison(&out, &failure)
	const op = "FromSlice"
	if shape == nil {
		shape = []int{len(data)}
	}
	a, err := empty[T](op, s, shape)
	if err != nil {
		return nil, err
	}
	if len(data) != a.layout.Size() {
		a.Free()
		return nil, errorf(op, cuda.ErrInvalidValue, "%d elements given for shape %v of %d", len(data), shape, a.layout.Size())
	}
	// Synchronous: it waits for the allocation queued on s, and data is
	// the caller's again at return, as NumPy's asarray leaves it.
	if err := a.buf.CopyFromHost(data); err != nil {
		a.Free()
		return nil, wrap(op, err)
	}
	return a, nil
}

// FromBuffer returns an array of the shape over buf's elements, in
// row-major order, without a copy: a view of the buffer, which keeps
// owning its memory (the array's Free does nothing; freeing the buffer
// closes the array). The shape's size must be buf.Len(); no shape is a 1-d
// array of buf.Len() elements. Its work is queued on s, which must be of
// buf's context.
func FromBuffer[T Elem](s *cuda.Stream, buf *cuda.DeviceBuffer[T], shape ...int) (out *Array[T], failure error) {
	defer poison(&out, &failure)
	const op = "FromBuffer"
	switch {
	case s == nil:
		return nil, errorf(op, cuda.ErrInvalidValue, "s is a nil *cuda.Stream")
	case buf == nil:
		return nil, errorf(op, cuda.ErrInvalidValue, "buf is a nil *cuda.DeviceBuffer")
	case buf.Context() == nil:
		return nil, errorf(op, cuda.ErrInvalidValue, "buf is a zero cuda.DeviceBuffer")
	case buf.Context() != s.Context():
		return nil, errorf(op, cuda.ErrInvalidValue, "buf belongs to another context than s")
	}
	// A freed buffer is refused here, as every call given one refuses it
	// (an empty slice of it touches no memory, but finds it closed).
	if _, err := buf.Slice(0, 0); err != nil {
		return nil, wrap(op, err)
	}
	if shape == nil {
		shape = []int{buf.Len()}
	}
	l, err := ndshape.Contiguous(shape)
	if err != nil {
		return nil, wrap(op, err)
	}
	if l.Size() != buf.Len() {
		return nil, errorf(op, cuda.ErrInvalidValue, "shape %v has %d elements, and buf %d", shape, l.Size(), buf.Len())
	}
	return &Array[T]{buf: buf, s: s, layout: l}, nil
}

// Arange returns the 1-d array start, start+step, ... up to stop
// (excluded), as NumPy's arange: ceil((stop-start)/step) elements, each
// start + i·step computed in float64 and converted to T. step must not be
// zero; for an integer T, every value must be one of T's (the conversion
// of one out of T's range would be undefined).
func Arange[T Elem](s *cuda.Stream, start, stop, step float64) (out *Array[T], failure error) {
	defer poison(&out, &failure)
	const op = "Arange"
	if step == 0 || math.IsNaN(start) || math.IsNaN(stop) || math.IsNaN(step) || math.IsInf(start, 0) || math.IsInf(stop, 0) || math.IsInf(step, 0) {
		return nil, errorf(op, cuda.ErrInvalidValue, "start %v, stop %v, step %v: the step must be nonzero and all finite", start, stop, step)
	}
	n := math.Ceil((stop - start) / step)
	if n < 0 {
		n = 0
	}
	if n > math.MaxInt32*float64(1<<20) {
		return nil, errorf(op, cuda.ErrInvalidValue, "start %v, stop %v, step %v make %.0f elements", start, stop, step, n)
	}
	return ramp[T](op, s, int(n), start, step, math.NaN())
}

// Linspace returns num evenly spaced values from start to stop, both
// included (num 1: start alone), as NumPy's linspace: start + i·step in
// float64, the last exactly stop, converted to T (for an integer T,
// rounded down, as NumPy 2's, each to one of T's values).
func Linspace[T Elem](s *cuda.Stream, start, stop float64, num int) (out *Array[T], failure error) {
	defer poison(&out, &failure)
	const op = "Linspace"
	if num < 0 {
		return nil, errorf(op, cuda.ErrInvalidValue, "num is %d: it cannot be negative", num)
	}
	step := 0.0
	if num > 1 {
		step = (stop - start) / float64(num-1)
	}
	return ramp[T](op, s, num, start, step, stop)
}

// ramp returns the n values start + i·step, computed in float64 (the
// last, last, unless it is NaN).
func ramp[T Elem](op string, s *cuda.Stream, n int, start, step, last float64) (*Array[T], error) {
	end := last
	if math.IsNaN(last) || n == 1 {
		end = start + float64(n-1)*step
	}
	// Linspace's values (last not NaN) of an integer type are rounded
	// down, as NumPy 2's linspace floors them: a conversion alone would
	// truncate -6.67 to -6 where NumPy gives -7.
	floor := !math.IsNaN(last) && !ctypeOf[T]().float
	lo, hi := start, end
	if floor {
		lo, hi = math.Floor(start), math.Floor(end)
	}
	if n > 0 && (!fitsInt[T](lo) || !fitsInt[T](hi)) {
		// The kernel's conversion of a float out of an integer type's
		// range is undefined (the CPU wraps, the GPU saturates).
		return nil, errorf(op, cuda.ErrInvalidValue, "the values from %v to %v are not all values of %s", start, end, typeName[T]())
	}
	a, err := empty[T](op, s, []int{n})
	if err != nil {
		return nil, err
	}
	out, _ := operandOf(op, "out", a)
	ins := make([]operand, 3)
	for j, v := range []float64{start, step, last} {
		ins[j], _ = operandOf(op, "v", Scalar(v))
	}
	// i and n are the element's index and count.
	e := expr{name: "ramp", code: "x0 + (double)i * x1"}
	if !math.IsNaN(last) {
		e.code = "n > 1 && i == n - 1 ? x2 : x0 + (double)i * x1"
	}
	if floor {
		e = expr{name: "ramp_floor", code: "floor(" + e.code + ")"}
	}
	if err := apply(op, e, out, ins); err != nil {
		a.Free()
		return nil, err
	}
	return a, nil
}

// fitsInt reports whether v, truncated toward zero, is a value of T
// where T is an integer type (always, for a float type).
func fitsInt[T Elem](v float64) bool {
	t := ctypeOf[T]()
	if t.float {
		return true
	}
	bits := 8 * int(unsafe.Sizeof(*new(T)))
	lo, hi := -math.Ldexp(1, bits-1), math.Ldexp(1, bits-1) // [lo, hi): exact in float64
	if t.value[0] == 'u' {
		lo, hi = 0, math.Ldexp(1, bits)
	}
	v = math.Trunc(v)
	return v >= lo && v < hi
}

// Eye returns the n×m array with ones on the diagonal (row i, column i)
// and zeros elsewhere.
func Eye[T Elem](s *cuda.Stream, n, m int) (out *Array[T], failure error) {
	defer poison(&out, &failure)
	const op = "Eye"
	a, err := Zeros[T](s, n, m)
	if err != nil {
		return nil, wrap(op, err)
	}
	if n == 0 || m == 0 {
		return a, nil
	}
	// The diagonal is a view of min(n, m) elements a row and a column
	// apart.
	d, err := ndshape.New([]int{min(n, m)}, []int{m + 1}, 0)
	if err == nil {
		err = fill(op, a.with(d), one[T]())
	}
	if err != nil {
		a.Free()
		return nil, err
	}
	return a, nil
}

// Diag returns, for a matrix, the view of its diagonal (elements [i, i]),
// and for a 1-d array a new square matrix with a on its diagonal and zeros
// elsewhere (NumPy's diag).
func Diag[T Elem](a *Array[T]) (out *Array[T], failure error) {
	defer poison(&out, &failure)
	const op = "Diag"
	if err := a.check(op, "a"); err != nil {
		return nil, err
	}
	shape, strides := a.layout.Shape(), a.layout.Strides()
	switch len(shape) {
	case 2:
		l, err := ndshape.New([]int{min(shape[0], shape[1])}, []int{strides[0] + strides[1]}, a.layout.Offset())
		if err != nil {
			return nil, wrap(op, err)
		}
		return a.with(l), nil
	case 1:
		if a.scalar {
			// No stream to make the matrix on (Zeros would name a nil
			// stream the caller never gave).
			return nil, errorf(op, cuda.ErrInvalidValue, "a is a Scalar: give an array")
		}
		m, err := Zeros[T](a.s, shape[0], shape[0])
		if err != nil {
			return nil, wrap(op, err)
		}
		d, err := Diag(m)
		if err == nil {
			err = copyInto(op, d, a)
		}
		if err != nil {
			m.Free()
			return nil, wrap(op, err)
		}
		return m, nil
	}
	return nil, errorf(op, cuda.ErrInvalidValue, "a has shape %v: want a 1-d or 2-d array", shape)
}
