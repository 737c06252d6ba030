package nd

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"unsafe"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/compute"
	"github.com/gocuda/cuda/internal/ndshape"
)

// Take returns the elements of a at indices along axis (NumPy's take with
// an axis, PyTorch's index_select for 1-d indices): the result's shape is
// a's with axis replaced by indices' shape. An index may be negative,
// counting from the end; one out of range [-n, n) gives 0 (zero) rather
// than reading outside a: the device cannot stop to report it.
func Take[T Elem](a *Array[T], indices *Array[int64], axis int) (out *Array[T], failure error) {
	defer poison(&out, &failure)
	return take("Take", a, indices, axis, nil)
}

// TakeInto sets dst to the elements of a at indices along axis. Where dst
// shares memory with a or indices, the elements are gathered apart first
// and then copied into dst.
func TakeInto[T Elem](dst, a *Array[T], indices *Array[int64], axis int) error {
	if err := writable("TakeInto", "dst", dst); err != nil {
		return err
	}
	return errOnly(take("TakeInto", a, indices, axis, dst))
}

func take[T Elem](op string, a *Array[T], indices *Array[int64], axis int, dst *Array[T]) (result *Array[T], err error) {
	if err := indices.check(op, "indices"); err != nil {
		return nil, err
	}
	if indices.scalar {
		return nil, errorf(op, cuda.ErrInvalidValue, "indices is a Scalar: give an array (a.Index takes one index)")
	}
	if err := a.check(op, "a"); err != nil {
		return nil, err
	}
	if a.scalar {
		return nil, errorf(op, cuda.ErrInvalidValue, "a is a Scalar: give an array")
	}
	if err := a.emptyOpen(op); err != nil {
		return nil, err // an empty a or indices is not read
	}
	if err := indices.emptyOpen(op); err != nil {
		return nil, err
	}
	if indices.s != a.s {
		return nil, errorf(op, cuda.ErrInvalidValue, "indices and a are on different streams: the operands of an operation share one")
	}
	n := a.layout.Ndim()
	ax, err := axisOf(op, axis, n)
	if err != nil {
		return nil, err
	}
	var outBuf [2 * maxDims]int
	outShape := outBuf[:0]
	for d := range ax {
		outShape = append(outShape, a.layout.Dim(d))
	}
	for d := range indices.layout.Ndim() {
		outShape = append(outShape, indices.layout.Dim(d))
	}
	for d := ax + 1; d < n; d++ {
		outShape = append(outShape, a.layout.Dim(d))
	}
	out, finish, err := target(op, a.s, dst, outShape, dst != nil && (overlapping(op, dst, a) || overlapping(op, dst, indices)))
	if err != nil {
		return nil, err
	}
	if out.layout.Size() == 0 {
		return finish(nil)
	}
	dim := a.layout.Dim(ax)
	if dim == 0 {
		// Every index is out of range of an empty axis.
		return finish(fill(op, out, *new(T)))
	}
	fail := func(err error) (*Array[T], error) { return finish(err) }
	// A contiguous array is read as it is (Contiguous would return a
	// view of it).
	src, idx := a, indices
	if !a.layout.IsContiguous() {
		if src, err = a.Contiguous(); err != nil {
			return fail(err)
		}
		defer freed(&err, src)
	}
	if !indices.layout.IsContiguous() {
		if idx, err = indices.Contiguous(); err != nil {
			return fail(err)
		}
		defer freed(&err, idx)
	}
	post := rowOf(a.layout, ax+1)
	t := ctypeOf[T]()
	k, err := rowKernel("take", "", t, func() compute.ElementwiseSpec {
		// The index splits into (r, j, p): r of the axes before, j of
		// the indices, p of the axes after. Where the result has fewer
		// than 2^31 elements (small), in 32-bit arithmetic: a 64-bit
		// division is a routine of dozens of instructions, and four of
		// them an element made a gather of short rows (100003x33 by
		// 65,537 indices) bound by arithmetic, not memory.
		return compute.ElementwiseSpec{Name: "nd_take_" + t.name,
			InParams: fmt.Sprintf("raw %s x, raw int64 idx, int64 nidx, int64 dim, int64 post, int32 small", t.name), OutParams: t.name + " y",
			Operation: `long long p, j, r;
if (small) {
	const unsigned u = (unsigned)i, up = (unsigned)post, un = (unsigned)nidx;
	const unsigned q = u / up, rr = q / un;
	p = u - q * up; j = q - rr * un; r = rr;
} else {
	const long long q = i / post;
	p = i - q * post; r = q / nidx; j = q - r * nidx;
}
long long k = idx[j];
if (k < 0) k += dim;
y = k >= 0 && k < dim ? x[(r * dim + k) * post + p] : 0;`}
	})
	if err != nil {
		return fail(wrap(op, err))
	}
	xb, err := src.Buffer()
	if err != nil {
		return fail(wrap(op, err))
	}
	ib, err := idx.Buffer()
	if err != nil {
		return fail(wrap(op, err))
	}
	ob, err := out.Buffer()
	if err != nil {
		return fail(wrap(op, err))
	}
	small := int32(0)
	if out.layout.Size() <= takeSmall {
		small = 1
	}
	return finish(wrap(op, k.Launch(a.s, xb, ib, boxInt64(int64(idx.layout.Size())), boxInt64(int64(dim)), boxInt64(int64(post)), small, ob)))
}

// takeSmall is the most elements a Take's result has for its kernel's
// 32-bit arithmetic (tests lower it to check the 64-bit form).
var takeSmall = math.MaxInt32

// target returns the array an operation with a result of shape writes:
// dst itself where it is contiguous, a new array where dst is nil or
// strided, or shared (dst shares memory with what the operation reads, so
// that its threads would write elements others have yet to read); finish
// ends the operation with its error, copying a new array's elements into
// dst where it is not dst, freeing what it must, and returns the result
// (dst, or the new array where dst is nil).
func target[T Elem](op string, s *cuda.Stream, dst *Array[T], shape []int, shared bool) (*Array[T], func(error) (*Array[T], error), error) {
	if dst != nil {
		if err := writable(op, "dst", dst); err != nil {
			return nil, nil, err
		}
		switch {
		case dst.s != s:
			return nil, nil, errorf(op, cuda.ErrInvalidValue, "dst and the operands are on different streams: the operands of an operation share one")
		case !sameDims(dst.layout, shape):
			return nil, nil, errorf(op, cuda.ErrInvalidValue, "dst has shape %v, and the result %v", dst.layout.Shape(), slices.Clone(shape))
		case dst.layout.IsContiguous() && !shared:
			return dst, func(err error) (*Array[T], error) { return dst, err }, nil
		}
	}
	out, err := empty[T](op, s, shape)
	if err != nil {
		return nil, nil, err
	}
	return out, func(err error) (*Array[T], error) {
		if err == nil && dst != nil {
			err = copyInto(op, dst, out)
		}
		switch {
		case err != nil:
			out.Free()
			return nil, err
		case dst != nil:
			if freed(&err, out); err != nil {
				return nil, err
			}
		}
		if dst != nil {
			return dst, nil
		}
		return out, nil
	}, nil
}

// Concat returns the arrays joined along axis (NumPy's concatenate): their
// shapes must agree but on axis. Contiguous arrays join in one kernel for
// each 8 of them, as PyTorch's cat; views that are not contiguous are
// copied in one at a time.
func Concat[T Elem](arrays []*Array[T], axis int) (out *Array[T], failure error) {
	defer poison(&out, &failure)
	return concat("Concat", arrays, axis, nil)
}

// ConcatInto sets dst to the arrays joined along axis, each copied into
// its part of dst, in order (where dst shares memory with the arrays,
// joined apart first, then copied into dst).
func ConcatInto[T Elem](dst *Array[T], arrays []*Array[T], axis int) error {
	if err := writable("ConcatInto", "dst", dst); err != nil {
		return err
	}
	return errOnly(concat("ConcatInto", arrays, axis, dst))
}

func concat[T Elem](op string, arrays []*Array[T], axis int, dst *Array[T]) (*Array[T], error) {
	if len(arrays) == 0 {
		return nil, errorf(op, cuda.ErrInvalidValue, "no arrays to join")
	}
	for i, a := range arrays {
		// The name made only for an error: a call makes no string.
		name := func() string { return fmt.Sprintf("arrays[%d]", i) }
		if err := a.check(op, "arrays[0]"); err != nil {
			if i > 0 {
				err = a.check(op, name())
			}
			return nil, err
		}
		if a.scalar {
			return nil, errorf(op, cuda.ErrInvalidValue, "%s is a Scalar: join arrays", name())
		}
		if err := a.emptyOpen(op); err != nil {
			return nil, err // an empty part is not copied
		}
		if a.s != arrays[0].s {
			return nil, errorf(op, cuda.ErrInvalidValue, "%s and arrays[0] are on different streams: the operands of an operation share one", name())
		}
	}
	first := arrays[0].layout
	n := first.Ndim()
	ax, err := axisOf(op, axis, n)
	if err != nil {
		return nil, err
	}
	var shapeBuf [maxDims]int
	outShape := shapeBuf[:0]
	for d := range n {
		outShape = append(outShape, first.Dim(d))
	}
	outShape[ax] = 0
	for i, a := range arrays {
		l := a.layout
		ok := l.Ndim() == n
		for d := 0; ok && d < n; d++ {
			ok = d == ax || l.Dim(d) == first.Dim(d)
		}
		if !ok {
			return nil, errorf(op, cuda.ErrInvalidValue, "arrays[%d] has shape %v, and arrays[0] %v: they must agree but on axis %d", i, l.Shape(), first.Shape(), axis)
		}
		outShape[ax] += l.Dim(ax)
	}
	out := dst
	if dst == nil {
		var err error
		if out, err = empty[T](op, arrays[0].s, outShape); err != nil {
			return nil, err
		}
	} else if err := writable(op, "dst", dst); err != nil {
		return nil, err
	} else if !slices.Equal(dst.layout.Shape(), outShape) || dst.s != arrays[0].s { // (ConcatInto)
		return nil, errorf(op, cuda.ErrInvalidValue, "dst has shape %v, and the arrays join into %v on their stream", dst.layout.Shape(), slices.Clone(outShape))
	} else if slices.ContainsFunc(arrays, func(a *Array[T]) bool { return overlapping(op, dst, a) }) {
		// Joined apart, then copied in: written in place, a part would
		// overwrite elements of another not yet read.
		joined, err := concat(op, arrays, axis, nil)
		if err != nil {
			return nil, err
		}
		if err := copyInto(op, dst, joined); err != nil {
			joined.Free()
			return nil, err
		}
		return dst, wrap(op, joined.Free())
	}
	// Contiguous arrays into a contiguous out: one kernel for each 8.
	done, err := concatOnce(op, out, arrays, ax)
	if err != nil {
		if dst == nil {
			out.Free()
		}
		return nil, err
	}
	if done {
		return out, nil
	}
	// Each array into its part of out (a view, written through).
	at := 0
	for _, a := range arrays {
		d := a.layout.Shape()[ax]
		part, err := out.Slice(ax, at, at+d, 1)
		if err == nil {
			err = copyInto(op, part, a)
		}
		if err != nil {
			if dst == nil {
				out.Free()
			}
			return nil, err
		}
		at += d
	}
	return out, nil
}

// maxConcatOnce is the most arrays concatOnce joins in one kernel.
const maxConcatOnce = 8

// concatOnce joins the arrays along axis ax into out, as PyTorch's cat
// does, where out and every array are contiguous: one kernel for each
// maxConcatOnce arrays with elements; done is false (and nothing is
// written) where they are not contiguous. Seen as rows, out's row (the
// elements from axis ax on, at each index before it) is the arrays' rows
// one after the other: element r of out's row o is element r - c of
// array k's row o, c being the rows of the arrays before k. The elements
// are copied as bits (concatParts).
func concatOnce[T Elem](op string, out *Array[T], arrays []*Array[T], ax int) (done bool, err error) {
	if !out.layout.IsContiguous() || out.layout.Size() == 0 {
		return false, nil
	}
	var partsBuf [maxConcatOnce]*cuda.DeviceBuffer[T]
	var endsBuf [maxConcatOnce]int64
	parts, ends := partsBuf[:0], endsBuf[:0] // ends: the end of each part's row in out's row
	row, outer := int64(0), out.layout.Size()/rowOf(out.layout, ax)
	for _, a := range arrays {
		if !a.layout.IsContiguous() {
			return false, nil
		}
		n := a.layout.Size()
		if n == 0 {
			continue
		}
		b, err := a.Buffer()
		if err != nil {
			return false, wrap(op, err)
		}
		row += int64(n / outer)
		parts = append(parts, b)
		ends = append(ends, row)
	}
	if len(parts) == 0 {
		return false, nil
	}
	o, err := out.Buffer()
	if err != nil {
		return false, wrap(op, err)
	}
	for g := 0; g < len(parts) && err == nil; g += maxConcatOnce {
		base := int64(0)
		if g > 0 {
			base = ends[g-1]
		}
		k := min(len(parts), g+maxConcatOnce)
		err = concatParts(o, parts[g:k], ends[g:k], base, row, out.s)
	}
	return true, wrap(op, err)
}

// sameDims reports whether l's shape is shape.
func sameDims(l ndshape.Layout, shape []int) bool {
	if l.Ndim() != len(shape) {
		return false
	}
	for i, d := range shape {
		if l.Dim(i) != d {
			return false
		}
	}
	return true
}

// rowOf returns the elements of l's shape from axis ax on.
func rowOf(l ndshape.Layout, ax int) int {
	n := 1
	for d := ax; d < l.Ndim(); d++ {
		n *= l.Dim(d)
	}
	return n
}

// concatThreads is a block of the concat kernel.
const concatThreads = 256

// concatKey names a concat kernel: its count of parts and the bytes a
// thread copies at once.
type concatKey struct{ parts, width int }

var concatKernels sync.Map // concatKey -> *rawKernel

// concatNarrow is one past the most vectors of out a concat kernel
// indexes in 32 bits: 2^31, so that a thread's index past the last vector
// plus the grid's threads (2^28 at most) does not wrap back below it. A
// test lowers it to try the 64-bit form.
var concatNarrow int64 = 1 << 31

// concatSeen, where a test sets it, is told each concat kernel's count of
// parts and width as it is launched.
var concatSeen func(parts, width int)

// concatParts is concatOnce's kernel for up to maxConcatOnce parts: out's
// rows are row elements long, part k's from ends[k-1] (base for the
// first) to ends[k]. The elements are copied as bits, width bytes at a
// time: 16 where every part's row and every address allow, as few as one
// element's size where not (a half's NaN keeps its payload and signal).
// The threads go through out's vectors in order, each reading its
// vector from its part, so that writes are one run and reads one run of
// each part's row: in the parts' order, a part's rows of a few bytes
// were written a few bytes a row apart, partial sectors of out (an
// H100's 1048576x1 + 1048576x7 float32 along axis 1: 52.7 µs, PyTorch
// 62.4, out's order before 28.2). The index is divided in 32 bits where
// out's vectors are fewer than concatNarrow.
func concatParts[T Elem](out *cuda.DeviceBuffer[T], parts []*cuda.DeviceBuffer[T], ends []int64, base, row int64, s *cuda.Stream) error {
	size := int64(unsafe.Sizeof(*new(T)))
	width := int64(16)
	fits := func(bytes int64) {
		for bytes%width != 0 {
			width /= 2
		}
	}
	fits(int64(out.Ptr()))
	fits(row * size)
	fits(base * size)
	prev := base
	for k, p := range parts {
		fits(int64(p.Ptr()))
		fits((ends[k] - prev) * size)
		prev = ends[k]
	}
	row = row * size / width // out's row, in vectors
	total := int64(out.Len()) * size / width
	outer := total / row
	kern, err := concatKernel(len(parts), int(width))
	if err != nil {
		return err
	}
	if concatSeen != nil {
		concatSeen(len(parts), int(width))
	}
	var buf [2*maxConcatOnce + 5]any // the parts, their rows, out and its four
	args := buf[:0]
	for _, p := range parts {
		args = append(args, p)
	}
	prev = base
	for _, e := range ends {
		args = append(args, boxInt64((e-prev)*size/width))
		prev = e
	}
	narrow := int32(0)
	if total < concatNarrow {
		narrow = 1
	}
	args = append(args, out, boxInt64(row), boxInt64(outer), boxInt64(base*size/width), narrow)
	f, err := kern.function(s.Context())
	if err != nil {
		return err
	}
	n := outer * ((ends[len(ends)-1] - base) * size / width) // the parts' vectors
	blocks := min((n+concatThreads-1)/concatThreads, 1<<20)
	return f.Launch(cuda.LaunchConfig{Grid: cuda.Dim3{X: int(blocks)}, Block: cuda.Dim3{X: concatThreads}, Stream: s}, args...)
}

// concatKernel returns the kernel joining parts arrays width bytes at a
// time, written and compiled on first use.
func concatKernel(parts, width int) (*rawKernel, error) {
	key := concatKey{parts, width}
	if k, ok := concatKernels.Load(key); ok {
		return k.(*rawKernel), nil
	}
	name := fmt.Sprintf("nd_concat%d_b%d", parts, width)
	bits := map[int]string{1: "unsigned char", 2: "unsigned short", 4: "unsigned int", 8: "unsigned long long", 16: "nd_b16"}[width]
	var b, params, pass strings.Builder
	b.WriteString("struct __align__(16) nd_b16 { unsigned long long lo, hi; };\n")
	for j := range parts {
		fmt.Fprintf(&params, "const %s* __restrict__ p%d, ", bits, j)
		fmt.Fprintf(&pass, "p%d, ", j)
	}
	for j := range parts {
		fmt.Fprintf(&params, "long long l%d, ", j)
		fmt.Fprintf(&pass, "l%d, ", j)
	}
	fmt.Fprintf(&params, "%s* __restrict__ y, long long row, long long outer, long long base", bits)
	pass.WriteString("y, row, outer, base")
	// Part j is outer rows of l(j) vectors, at e(j-1) to e(j) of the
	// group's columns of out's row (which start at base): thread q takes
	// vector c of row o of the group, reading it from its part.
	fmt.Fprintf(&b, "template <typename I> __device__ __forceinline__ void nd_concat(%s) {\n", params.String())
	b.WriteString("\tconst I stride = (I)gridDim.x * blockDim.x;\n\tconst I e0 = (I)l0;\n")
	for j := 1; j < parts; j++ {
		fmt.Fprintf(&b, "\tconst I e%[1]d = e%[2]d + (I)l%[1]d;\n", j, j-1)
	}
	last := fmt.Sprintf("e%d", parts-1)
	fmt.Fprintf(&b, "\tfor (I q = (I)blockIdx.x * blockDim.x + threadIdx.x; q < (I)outer * %[1]s; q += stride) {\n", last)
	fmt.Fprintf(&b, "\t\tconst I o = q / %[1]s, c = q - o * %[1]s;\n\t\ty[o * (I)row + (I)base + c] = ", last)
	for j := range parts {
		at := "c"
		if j > 0 {
			at = fmt.Sprintf("c - e%d", j-1)
		}
		if j < parts-1 {
			fmt.Fprintf(&b, "c < e%d ? ", j)
		}
		fmt.Fprintf(&b, "p%[1]d[o * (I)l%[1]d + (%[2]s)]", j, at)
		if j < parts-1 {
			b.WriteString(" : ")
		}
	}
	b.WriteString(";\n\t}\n}\n")
	fmt.Fprintf(&b, "extern \"C\" __global__ __launch_bounds__(%d) void %s(%s, int narrow) {\n", concatThreads, name, params.String())
	fmt.Fprintf(&b, "\tif (narrow) nd_concat<unsigned int>(%[1]s); else nd_concat<unsigned long long>(%[1]s);\n}\n", pass.String())
	k, err := compute.NewRawKernel(b.String(), name)
	if err != nil {
		return nil, err
	}
	got, _ := concatKernels.LoadOrStore(key, &rawKernel{k: k})
	return got.(*rawKernel), nil
}

// Stack returns the arrays, all of one shape, joined along a new axis
// (NumPy's stack): axis in [-ndim-1, ndim].
func Stack[T Elem](arrays []*Array[T], axis int) (out *Array[T], failure error) {
	defer poison(&out, &failure)
	const op = "Stack"
	views := make([]*Array[T], len(arrays))
	for i, a := range arrays {
		if err := a.check(op, fmt.Sprintf("arrays[%d]", i)); err != nil {
			return nil, err
		}
		if i > 0 && !slices.Equal(a.layout.Shape(), arrays[0].layout.Shape()) {
			return nil, errorf(op, cuda.ErrInvalidValue, "arrays[%d] has shape %v, and arrays[0] %v: they must be equal", i, a.layout.Shape(), arrays[0].layout.Shape())
		}
		v, err := a.Unsqueeze(axis)
		if err != nil {
			return nil, wrap(op, err)
		}
		views[i] = v
	}
	out, err := Concat(views, axis)
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			e.Op = op
		}
	}
	return out, err
}

// Split returns views of a cut along axis before each of the indices
// (NumPy's split with indices): a[:i0], a[i0:i1], ..., a[ik:] along axis,
// sliced as Python slices (negative indices count from the end; a cut
// before the previous one gives an empty view), len(indices)+1 views, no
// copy.
func Split[T Elem](a *Array[T], indices []int, axis int) ([]*Array[T], error) {
	const op = "Split"
	if err := a.check(op, "a"); err != nil {
		return nil, err
	}
	ax, err := axisOf(op, axis, a.layout.Ndim())
	if err != nil {
		return nil, err
	}
	out := make([]*Array[T], 0, len(indices)+1)
	prev := 0
	for _, cut := range append(slices.Clone(indices), None) {
		v, err := a.Slice(ax, prev, cut, 1)
		if err != nil {
			return nil, wrap(op, err)
		}
		out = append(out, v)
		prev = cut
	}
	return out, nil
}

// Tile returns a repeated reps[i] times along each axis (NumPy's tile):
// where reps are fewer than a's axes they repeat the last ones; where
// more, a gains axes of size 1 in front. One copy.
func Tile[T Elem](a *Array[T], reps ...int) (out *Array[T], failure error) {
	defer poison(&out, &failure)
	const op = "Tile"
	if err := a.check(op, "a"); err != nil {
		return nil, err
	}
	if a.scalar {
		return nil, errorf(op, cuda.ErrInvalidValue, "a is a Scalar: give an array")
	}
	for _, r := range reps {
		if r < 0 {
			return nil, errorf(op, cuda.ErrInvalidValue, "reps %v: a repetition cannot be negative", reps)
		}
	}
	n := max(a.layout.Ndim(), len(reps))
	reps = append(slices.Repeat([]int{1}, n-len(reps)), reps...)
	v, err := a.padded(op, n)
	if err != nil {
		return nil, err
	}
	// Axis i of size d is (r, d) with the repeats' axis of stride 0, then
	// merged by one copy.
	var shape, final []int
	for i, d := range v.layout.Shape() {
		if v, err = v.Unsqueeze(2 * i); err != nil {
			return nil, wrap(op, err)
		}
		shape = append(shape, reps[i], d)
		final = append(final, reps[i]*d)
	}
	return repeated(op, v, shape, final)
}

// Repeat returns a with each element along axis repeated n times in a row
// (NumPy's repeat with one count): the axis n times longer. One copy.
func Repeat[T Elem](a *Array[T], n, axis int) (out *Array[T], failure error) {
	defer poison(&out, &failure)
	const op = "Repeat"
	if err := a.check(op, "a"); err != nil {
		return nil, err
	}
	if n < 0 {
		return nil, errorf(op, cuda.ErrInvalidValue, "n is %d: a repetition cannot be negative", n)
	}
	nd := a.layout.Ndim()
	ax, err := axisOf(op, axis, nd)
	if err != nil {
		return nil, err
	}
	v, err := a.Unsqueeze(ax + 1)
	if err != nil {
		return nil, wrap(op, err)
	}
	shape := v.layout.Shape()
	shape[ax+1] = n
	final := a.layout.Shape()
	final[ax] *= n
	return repeated(op, v, shape, final)
}

// repeated copies v broadcast to shape into a new array, of shape final.
func repeated[T Elem](op string, v *Array[T], shape, final []int) (*Array[T], error) {
	b, err := v.BroadcastTo(shape...)
	if err != nil {
		return nil, wrap(op, err)
	}
	c, err := contiguous(op, b)
	if err != nil {
		return nil, err
	}
	l, _, err := c.layout.Reshape(final) // a view: c is contiguous
	if err != nil {
		c.Free()
		return nil, wrap(op, err)
	}
	c.layout = l
	return c, nil
}

// padded returns the view of a with axes of size 1 in front, n in all.
func (a *Array[T]) padded(op string, n int) (*Array[T], error) {
	v := a
	for v.layout.Ndim() < n {
		var err error
		if v, err = v.Unsqueeze(0); err != nil {
			return nil, wrap(op, err)
		}
	}
	return v, nil
}

// Meshgrid returns, for 1-d arrays x0, x1, ..., the views that broadcast
// each along its own axis of the grid of all of them (NumPy's meshgrid
// with indexing="ij"): result i has shape (len(x0), len(x1), ...) and
// element [j0, j1, ...] = xi[ji]. No copy: write a Copy to change one.
func Meshgrid[T Elem](xs ...*Array[T]) ([]*Array[T], error) {
	const op = "Meshgrid"
	shape := make([]int, len(xs))
	for i, x := range xs {
		name := fmt.Sprintf("xs[%d]", i)
		if err := x.check(op, name); err != nil {
			return nil, err
		}
		if x.layout.Ndim() != 1 {
			return nil, errorf(op, cuda.ErrInvalidValue, "%s has shape %v: want 1-d arrays", name, x.layout.Shape())
		}
		shape[i] = x.layout.Shape()[0]
	}
	out := make([]*Array[T], len(xs))
	for i, x := range xs {
		v := x
		for j := range xs {
			if j == i {
				continue
			}
			var err error
			if v, err = v.Unsqueeze(min(j, v.layout.Ndim())); err != nil {
				return nil, wrap(op, err)
			}
		}
		b, err := v.BroadcastTo(shape...)
		if err != nil {
			return nil, wrap(op, err)
		}
		out[i] = b
	}
	return out, nil
}
