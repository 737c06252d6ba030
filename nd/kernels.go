package nd

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/compute"
	"github.com/gocuda/cuda/internal/ndshape"
)

// The elementwise engine: every elementwise operation, fill and copy of
// this package is one C expression over its inputs' values, applied by a
// compute.Elementwise kernel generated for the pattern of its operands
// (CuPy's approach): where every operand is contiguous in the result's
// order, or a scalar, the kernel is compute's plain one, 16 bytes at a time
// (the fast path of a contiguous call); else the operands' layouts,
// broadcast to the result's shape, are coalesced together (axes of size 1
// dropped, axes contiguous in every operand merged) and the kernel
// computes each operand's element offset from the result's index over the
// axes left, every operand raw, launched over the result's count
// (LaunchN). Kernels are kept per expression, types and pattern; compute
// compiles each once per context and keeps it on disk.

// maxAxes is the most axes a strided kernel indexes after coalescing: each
// axis is a dimension and a stride per operand among a kernel's 64
// parameters (Where's four operands: 4 pointers, 4 offsets and 5 values an
// axis).
const maxAxes = 10

// ctype is an element type as the generated C sees it.
type ctype struct {
	name  string // compute's name: "float32", "bfloat16", "uint8" for Bool
	value string // the C type an expression computes in ("float" for the halves)
	float bool
	half  bool
}

var ctypes = map[string]ctype{
	"int8": {"int8", "signed char", false, false}, "int16": {"int16", "short", false, false},
	"int32": {"int32", "int", false, false}, "int64": {"int64", "long long", false, false},
	"uint8": {"uint8", "unsigned char", false, false}, "uint16": {"uint16", "unsigned short", false, false},
	"uint32": {"uint32", "unsigned int", false, false}, "uint64": {"uint64", "unsigned long long", false, false},
	"float32": {"float32", "float", true, false}, "float64": {"float64", "double", true, false},
	"float16": {"float16", "float", true, true}, "bfloat16": {"bfloat16", "float", true, true},
	"bool": {"uint8", "unsigned char", false, false},
}

// ctypeOf returns T's ctype.
func ctypeOf[T Elem]() ctype { return ctypes[typeName[T]()] }

// operand is one argument of an elementwise kernel: an array's span (or a
// scalar's value), its layout (offsets into the span), and its type.
type operand struct {
	name   string // as the call names it, for errors: "a"
	t      ctype
	layout ndshape.Layout // offsets into buf
	buf    any            // a *cuda.DeviceBuffer over the span, or a scalar's value
	scalar bool
	s      *cuda.Stream
	lo, hi cuda.DevicePtr // the span's addresses: an output that overlaps an input
	n      int            // the span's length
	array  spanned        // what is typed in the array's element type
}

// spanned is an operand's array, typed: its span sliced, and a
// contiguous copy of it.
type spanned interface {
	// slice returns n elements of the span from off.
	slice(off, n int) (any, error)
	// copy returns a contiguous copy of the operand, on its stream, and
	// the function that frees it.
	copy(op string) (operand, func() error, error)
}

type spanOf[T Elem] struct {
	a    *Array[T]
	span *cuda.DeviceBuffer[T]
	name string
}

func (s *spanOf[T]) slice(off, n int) (any, error) { return s.span.Slice(off, n) }

func (s *spanOf[T]) copy(op string) (operand, func() error, error) {
	c, err := contiguous(op, s.a)
	if err != nil {
		return operand{}, nil, err
	}
	co, err := operandOf(op, s.name, c)
	if err != nil {
		c.Free()
		return operand{}, nil, err
	}
	return co, func() (err error) { freed(&err, c); return err }, nil
}

// operandOf makes an operand of array a, named name in op's errors.
func operandOf[T Elem](op, name string, a *Array[T]) (operand, error) {
	if err := a.check(op, name); err != nil {
		return operand{}, err
	}
	o := operand{name: name, t: ctypeOf[T](), layout: a.layout, s: a.s}
	if a.scalar {
		o.buf, o.scalar = a.value, true
		return o, nil
	}
	span, off, err := a.span(op)
	if err != nil {
		return operand{}, err
	}
	o.buf, o.n = span, span.Len()
	o.lo = span.Ptr()
	o.hi = o.lo + cuda.DevicePtr(span.ByteSize())
	o.array = &spanOf[T]{a: a, span: span, name: name}
	o.layout, err = a.layout.WithOffset(off)
	return o, wrap(op, err)
}

// copyExpr is the copy of an array's elements.
var copyExpr = expr{name: "copy", code: "x0"}

// asBits makes o, a half's operand, one of uint16s over the same memory
// (or a scalar's same bits).
func asBits(op string, o *operand) error {
	v, err := bitsOf(o.buf)
	if err != nil {
		return wrap(op, err)
	}
	o.buf, o.t = v, ctypes["uint16"]
	if o.array != nil {
		o.array = halfBits{o.array}
	}
	return nil
}

// bitsOf returns a half's buffer as one of uint16s, or its value as its
// bits.
func bitsOf(v any) (any, error) {
	switch b := v.(type) {
	case *cuda.DeviceBuffer[cuda.Float16]:
		return cuda.ViewAs[uint16](b)
	case *cuda.DeviceBuffer[cuda.BFloat16]:
		return cuda.ViewAs[uint16](b)
	case cuda.Float16:
		return uint16(b), nil
	case cuda.BFloat16:
		return uint16(b), nil
	}
	return v, nil
}

// halfBits is a half operand's span whose slices are of uint16s (asBits:
// made after apply's copies of overlapping inputs, the one use of copy).
type halfBits struct{ spanned }

func (h halfBits) slice(off, n int) (any, error) {
	b, err := h.spanned.slice(off, n)
	if err != nil {
		return nil, err
	}
	return bitsOf(b)
}

// overlapping reports whether x's and y's elements may share memory:
// whether their spans do.
func overlapping[T Elem](op string, x, y *Array[T]) bool {
	ox, errX := operandOf(op, "x", x)
	oy, errY := operandOf(op, "y", y)
	return errX != nil || errY != nil || ox.lo < oy.hi && oy.lo < ox.hi
}

// expr is an elementwise operation: C that computes the result's value
// from the inputs' values x0, x1, ... (each in its ctype's value type)
// into r, a variable of the result's value type.
type expr struct {
	name string // a C identifier: the kernel's name starts with it
	code string // statements, or an expression when it has no ';'
}

// body returns e's code as statements setting r.
func (e expr) body() string {
	if strings.Contains(e.code, ";") {
		return e.code
	}
	return "r = " + e.code + ";"
}

// kernelKey names a generated kernel: the expression, the types, and the
// pattern (contiguous, or the strided kernel's axes; which inputs are
// scalars).
type kernelKey struct {
	name, code string
	types      string // "float32,float32->bool"
	axes       int    // -1: the contiguous kernel
	scalars    uint64
	narrow     bool // a strided kernel's index arithmetic in 32 bits (fewer than 2^32 elements)
}

var kernelCache sync.Map // kernelKey -> *compute.Elementwise

// apply runs e over the broadcast of the inputs into out, which has the
// broadcast shape (the caller checked): out's layout is written, element
// for element of the shape. All operands must share out's stream.
func apply(op string, e expr, out operand, ins []operand) (failure error) {
	shape := out.layout.Shape()
	n := out.layout.Size()
	for _, in := range ins {
		if !in.scalar && in.s != out.s {
			return errorf(op, cuda.ErrInvalidValue, "%s and %s are on different streams: the operands of an operation share one", in.name, out.name)
		}
	}
	if n == 0 {
		return nil
	}
	// An input that shares memory with the output, other than element for
	// element (a transposed or shifted view of it), is read from a copy, so
	// that no element is written before it is read (as NumPy does).
	for j, in := range ins {
		if in.scalar || in.hi <= out.lo || out.hi <= in.lo {
			continue
		}
		if l, err := in.layout.BroadcastTo(shape); err == nil && in.lo == out.lo && l.Equal(out.layout) {
			continue
		}
		c, free, err := in.array.copy(op)
		if err != nil {
			return err
		}
		defer func() {
			if e := free(); e != nil {
				failure = errors.Join(failure, e)
			}
		}()
		ins[j] = c
	}
	// A copy of halves copies their bits, as unsigned 16-bit integers:
	// through float32 a signaling NaN would come out quiet.
	if e == copyExpr && out.t.half && len(ins) == 1 && ins[0].t == out.t {
		if err := asBits(op, &out); err != nil {
			return err
		}
		if err := asBits(op, &ins[0]); err != nil {
			return err
		}
	}
	// Broadcast every input to the result's shape, then coalesce the
	// arrays' layouts together (a scalar takes no part).
	layouts := []ndshape.Layout{out.layout}
	for _, in := range ins {
		if in.scalar {
			continue
		}
		l, err := in.layout.BroadcastTo(shape)
		if err != nil {
			return wrap(op, err)
		}
		layouts = append(layouts, l)
	}
	co, err := ndshape.Coalesce(layouts...)
	if err != nil {
		return wrap(op, err)
	}
	var scalars uint64
	for j, in := range ins {
		if in.scalar {
			scalars |= 1 << j
		}
	}
	contiguous := true
	for _, l := range co {
		st := l.Strides()
		contiguous = contiguous && (len(st) == 0 || len(st) == 1 && st[0] == 1)
	}
	axes := -1
	if !contiguous {
		axes = co[0].Ndim()
		if axes > maxAxes {
			return errorf(op, cuda.ErrNotSupported, "the operands' layouts leave %d axes that cannot be merged (shape %v): at most %d; make an operand contiguous first", axes, shape, maxAxes)
		}
	}
	k, err := kernelFor(op, e, out, ins, axes, scalars)
	if err != nil {
		return err
	}
	// The arguments in the declaration's order: the inputs, (strided)
	// each array's offset, the axes' dimensions and each array's strides,
	// then the output.
	args := make([]any, 0, len(ins)+1+len(co)*(1+max(axes, 0))+max(axes, 0))
	if axes < 0 {
		// Each array from its first element, n elements long: its span
		// itself where that is all it is.
		slice := func(o operand, l ndshape.Layout) (any, error) {
			if l.Offset() == 0 && o.n == n {
				return o.buf, nil
			}
			return o.array.slice(l.Offset(), n)
		}
		at := 1
		for _, in := range ins {
			if in.scalar {
				args = append(args, in.buf)
				continue
			}
			b, err := slice(in, co[at])
			if err != nil {
				return wrap(op, err)
			}
			args = append(args, b)
			at++
		}
		b, err := slice(out, co[0])
		if err != nil {
			return wrap(op, err)
		}
		args = append(args, b)
		return wrap(op, k.Launch(out.s, args...))
	}
	for _, in := range ins {
		args = append(args, in.buf)
	}
	for _, l := range co {
		args = append(args, int64(l.Offset()))
	}
	for _, d := range co[0].Shape() {
		args = append(args, int64(d))
	}
	for _, l := range co {
		for _, st := range l.Strides() {
			args = append(args, int64(st))
		}
	}
	args = append(args, out.buf)
	return wrap(op, k.LaunchN(out.s, n, args...))
}

// kernelFor returns the kernel of e for the operands' types and pattern,
// declaring it on first use.
func kernelFor(op string, e expr, out operand, ins []operand, axes int, scalars uint64) (*compute.Elementwise, error) {
	var types []string
	for _, in := range ins {
		types = append(types, in.t.name)
	}
	key := kernelKey{name: e.name, code: e.code, types: strings.Join(types, ",") + "->" + out.t.name, axes: axes, scalars: scalars,
		narrow: axes >= 0 && out.layout.Size() <= math.MaxUint32}
	if k, ok := kernelCache.Load(key); ok {
		return k.(*compute.Elementwise), nil
	}
	spec := specFor(e, out, ins, axes, key)
	k, err := compute.NewElementwise(spec)
	if err != nil {
		// A declaration of this package's own that compute refuses.
		return nil, wrap(op, err)
	}
	got, _ := kernelCache.LoadOrStore(key, k)
	return got.(*compute.Elementwise), nil
}

// specFor writes the declaration of e's kernel for a pattern.
func specFor(e expr, out operand, ins []operand, axes int, key kernelKey) compute.ElementwiseSpec {
	name := fmt.Sprintf("nd_%s_%s", e.name, strings.NewReplacer(",", "_", "->", "_to_").Replace(key.types))
	if axes >= 0 {
		name += fmt.Sprintf("_%dd", axes)
	}
	if key.narrow {
		name += "_32"
	}
	if key.scalars != 0 {
		name += fmt.Sprintf("_s%x", key.scalars)
	}
	var inParams []string
	var b strings.Builder
	if axes < 0 {
		// compute's plain kernel: every input a value of element i (or
		// the scalar), the output y set from r.
		for j, in := range ins {
			inParams = append(inParams, fmt.Sprintf("%s x%d", in.t.name, j))
		}
		fmt.Fprintf(&b, "%s r;\n%s\ny = r;", out.t.value, e.body())
		return compute.ElementwiseSpec{Name: name, InParams: strings.Join(inParams, ", "), OutParams: out.t.name + " y", Operation: b.String()}
	}
	// The strided kernel: every array raw, indexed at its offset plus the
	// sum over the axes of the index times its stride, the last axis
	// varying fastest.
	arrays := []string{"y"}
	for j, in := range ins {
		if in.scalar {
			inParams = append(inParams, fmt.Sprintf("%s x%d", in.t.name, j))
			continue
		}
		inParams = append(inParams, fmt.Sprintf("raw %s p%d", in.t.name, j))
		arrays = append(arrays, fmt.Sprintf("p%d", j))
	}
	var offs, dims, strides []string
	for _, a := range arrays {
		offs = append(offs, "int64 o_"+a)
	}
	for d := range axes {
		dims = append(dims, fmt.Sprintf("int64 d%d", d))
	}
	for _, a := range arrays {
		for d := range axes {
			strides = append(strides, fmt.Sprintf("int64 s%d_%s", d, a))
		}
	}
	inParams = append(inParams, offs...)
	inParams = append(inParams, dims...)
	inParams = append(inParams, strides...)
	// The index's arithmetic in 32 bits where the count allows: a 64-bit
	// division is several times a 32-bit one's instructions, and there is
	// one an axis an element.
	idx := "long long"
	if key.narrow {
		idx = "unsigned int"
	}
	fmt.Fprintf(&b, "%[1]s q = (%[1]s)i;\nlong long c", idx)
	for _, a := range arrays {
		fmt.Fprintf(&b, ", j_%[1]s = o_%[1]s", a)
	}
	b.WriteString(";\n")
	for d := axes - 1; d >= 0; d-- {
		if d > 0 {
			fmt.Fprintf(&b, "c = q %% (%[2]s)d%[1]d; q /= (%[2]s)d%[1]d;", d, idx)
		} else {
			b.WriteString("c = q;")
		}
		for _, a := range arrays {
			fmt.Fprintf(&b, " j_%[1]s += c * s%[2]d_%[1]s;", a, d)
		}
		b.WriteString("\n")
	}
	for j, in := range ins {
		if !in.scalar {
			fmt.Fprintf(&b, "const %[1]s x%[2]d = p%[2]d[j_p%[2]d];\n", in.t.value, j)
		}
	}
	fmt.Fprintf(&b, "%s r;\n%s\n", out.t.value, e.body())
	if out.t.half {
		b.WriteString("y[j_y] = r;")
	} else {
		fmt.Fprintf(&b, "y[j_y] = (%s)r;", out.t.value)
	}
	return compute.ElementwiseSpec{Name: name, InParams: strings.Join(inParams, ", "), OutParams: "raw " + out.t.name + " y", Operation: b.String()}
}
