package nd

import (
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

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
// (LaunchN); where two axes are left (or three, one a batch) and the
// output runs along one while an input runs along another, a tiled kernel
// (tile.go) reads that input through shared memory instead. Kernels are
// kept per expression, types and pattern; compute compiles each once per
// context and keeps it on disk.

// maxAxes is the most axes a strided kernel indexes after coalescing: each
// axis is a dimension and a stride per operand among a kernel's 64
// parameters (Where's four operands: 4 pointers, 4 offsets and 5 values an
// axis).
const maxAxes = 10

// maxParams is the most parameters compute's elementwise kernels take
// (compute.NewElementwise refuses more).
const maxParams = 64

// ctype is an element type as the generated C sees it.
type ctype struct {
	name  string // compute's name: "float32", "bfloat16", "uint8" for Bool
	value string // the C type an expression computes in ("float" for the halves)
	float bool
	half  bool
	id    int // its index in ctypeList (Bool's is uint8's: the same ctype)
}

// ctypeList is every ctype, by id.
var ctypeList = [...]ctype{
	{"int8", "signed char", false, false, 0}, {"int16", "short", false, false, 1},
	{"int32", "int", false, false, 2}, {"int64", "long long", false, false, 3},
	{"uint8", "unsigned char", false, false, 4}, {"uint16", "unsigned short", false, false, 5},
	{"uint32", "unsigned int", false, false, 6}, {"uint64", "unsigned long long", false, false, 7},
	{"float32", "float", true, false, 8}, {"float64", "double", true, false, 9},
	{"float16", "float", true, true, 10}, {"bfloat16", "float", true, true, 11},
}

var ctypes = map[string]ctype{
	"int8": ctypeList[0], "int16": ctypeList[1], "int32": ctypeList[2], "int64": ctypeList[3],
	"uint8": ctypeList[4], "uint16": ctypeList[5], "uint32": ctypeList[6], "uint64": ctypeList[7],
	"float32": ctypeList[8], "float64": ctypeList[9], "float16": ctypeList[10], "bfloat16": ctypeList[11],
	"bool": ctypeList[4],
}

// storage is t's C type in memory: a half's bits as an unsigned short.
func (t *ctype) storage() string {
	if t.half {
		return "unsigned short"
	}
	return t.value
}

// load is the value of t's element v in memory, in t's value type.
func (t *ctype) load(v string) string {
	switch {
	case t.name == "float16":
		return "gocuda_f16_to_f32(" + v + ")"
	case t.name == "bfloat16":
		return "gocuda_bf16_to_f32(" + v + ")"
	}
	return v
}

// store is the element in memory of t's value v.
func (t *ctype) store(v string) string {
	switch {
	case t.name == "float16":
		return "gocuda_f32_to_f16(" + v + ")"
	case t.name == "bfloat16":
		return "gocuda_f32_to_bf16(" + v + ")"
	}
	return "(" + t.value + ")" + v
}

// ctypeOf returns T's ctype (typeName's, without a map on every call).
func ctypeOf[T Elem]() ctype { return *ctypePtr[T]() }

// ctypePtr returns T's ctype in ctypeList.
func ctypePtr[T Elem]() *ctype {
	switch any(*new(T)).(type) {
	case float32: // the common types first, without reflect
		return &ctypeList[8]
	case float64:
		return &ctypeList[9]
	case int32:
		return &ctypeList[2]
	case int64:
		return &ctypeList[3]
	case cuda.Float16:
		return &ctypeList[10]
	case cuda.BFloat16:
		return &ctypeList[11]
	case Bool:
		return &ctypeList[4]
	}
	switch reflect.TypeFor[T]().Kind() {
	case reflect.Int8:
		return &ctypeList[0]
	case reflect.Int16:
		return &ctypeList[1]
	case reflect.Int32:
		return &ctypeList[2]
	case reflect.Int64:
		return &ctypeList[3]
	case reflect.Uint8:
		return &ctypeList[4]
	case reflect.Uint16:
		return &ctypeList[5]
	case reflect.Uint32:
		return &ctypeList[6]
	case reflect.Uint64:
		return &ctypeList[7]
	case reflect.Float32:
		return &ctypeList[8]
	}
	return &ctypeList[9]
}

// operand is one argument of an elementwise kernel: an array's span (or a
// scalar's value), its layout (offsets into the span), and its type.
type operand struct {
	name   string         // as the call names it, for errors: "a"
	t      *ctype         // in ctypeList
	layout ndshape.Layout // offsets into buf
	buf    any            // a *cuda.DeviceBuffer over the span, or a scalar's value
	scalar bool
	s      *cuda.Stream
	lo, hi cuda.DevicePtr // the span's addresses: an output that overlaps an input
	n      int            // the span's length
	array  spanned        // what is typed in the array's element type (nil for a scalar)
	arr    any            // the *Array[T] the operand is of
}

// spanned is what an operand of an array does in the array's element
// type: slice its span, and copy it. Its implementations are of size
// zero, so that an operand costs no allocation.
type spanned interface {
	// slice returns n elements from off of span, an operand's buf.
	slice(span any, off, n int) (any, error)
	// copy returns a contiguous copy of arr, an operand's array named
	// name, on its stream, and the function that frees it.
	copy(op, name string, arr any) (operand, func() error, error)
}

type spanOf[T Elem] struct{}

func (spanOf[T]) slice(span any, off, n int) (any, error) {
	return span.(*cuda.DeviceBuffer[T]).Slice(off, n)
}

func (spanOf[T]) copy(op, name string, arr any) (operand, func() error, error) {
	c, err := contiguous(op, arr.(*Array[T]))
	if err != nil {
		return operand{}, nil, err
	}
	co, err := operandOf(op, name, c)
	if err != nil {
		c.Free()
		return operand{}, nil, err
	}
	return co, func() (err error) { freed(&err, c); return err }, nil
}

// operandOf makes an operand of array a, named name in op's errors.
func operandOf[T Elem](op, name string, a *Array[T]) (operand, error) {
	var o operand
	return o, operandInto(&o, op, name, a)
}

// operandInto sets *o to the operand of array a, named name in op's
// errors (operandOf without copying the operand).
func operandInto[T Elem](o *operand, op, name string, a *Array[T]) error {
	if err := a.check(op, name); err != nil {
		*o = operand{}
		return err
	}
	// Field by field, not a composite literal: *o is the caller's (on its
	// stack, mostly), and a literal is built aside and copied in whole,
	// which took a third of nd's part of a small call.
	o.name = name
	o.t = ctypePtr[T]()
	o.layout = a.layout
	o.s = a.s
	if a.scalar {
		o.buf, o.scalar = a.value, true
		o.lo, o.hi, o.n, o.array, o.arr = 0, 0, 0, nil, nil
		return nil
	}
	span, off, err := a.span(op)
	if err != nil {
		*o = operand{}
		return err
	}
	o.scalar = false
	o.buf, o.n = span, span.Len()
	o.lo = span.Ptr()
	o.hi = o.lo + cuda.DevicePtr(span.ByteSize())
	o.array, o.arr = spanOf[T]{}, a
	if off != a.layout.Offset() { // the span is a slice of the buffer
		if o.layout, err = a.layout.WithOffset(off); err != nil {
			*o = operand{}
			return wrap(op, err)
		}
	}
	return nil
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
	o.buf, o.t = v, &ctypeList[5] // uint16
	if o.array != nil {
		// Its span is of uint16s now: slices of it are too (made after
		// apply's copies of overlapping inputs, the one use of copy).
		o.array = spanOf[uint16]{}
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

// overlapping reports whether x's and y's elements may share memory:
// whether their spans do (arrays of two types may: a view of int64s and
// the int64 indices an operation writes).
func overlapping[T, U Elem](op string, x *Array[T], y *Array[U]) bool {
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
	narrow     bool   // a strided kernel's index arithmetic in 32 bits (narrowFits)
	vec        int    // a strided kernel's elements a thread along the last axis (vectorWidth); 0: one
	vecs       uint64 // the arrays the vector variant loads or stores vec at a time (bit 0 out, j+1 input j)
}

var kernelCache sync.Map // kernelKey -> *compute.Elementwise

// apply runs e over the broadcast of the inputs into out, which has the
// broadcast shape (the caller checked): out's layout is written, element
// for element of the shape. All operands must share out's stream.
func apply(op string, e expr, out operand, ins []operand) error {
	n := out.layout.Size()
	for i := range ins {
		if in := &ins[i]; !in.scalar && in.s != out.s {
			return errorf(op, cuda.ErrInvalidValue, "%s and %s are on different streams: the operands of an operation share one", in.name, out.name)
		}
	}
	if n == 0 {
		return nil
	}
	for j := range ins {
		if overlaps(&ins[j], &out) {
			return applyCopies(op, e, out, ins, n)
		}
	}
	return applyPlan(op, e, out, ins, n)
}

// overlaps reports whether in shares memory with out other than element
// for element (a transposed or shifted view of it).
func overlaps(in, out *operand) bool {
	if in.scalar || in.hi <= out.lo || out.hi <= in.lo {
		return false
	}
	// Element for element only where the elements are of one size: a
	// float64 array and a float32 one over the same memory (FromBuffer of
	// cuda.ViewAs) share their offsets, not their elements.
	return in.lo != out.lo || in.t.size() != out.t.size() || !broadcastEquals(in.layout, out.layout)
}

// applyCopies is apply where an input overlaps the output: each such
// input is read from a copy, so that no element is written before it is
// read (as NumPy does).
func applyCopies(op string, e expr, out operand, ins []operand, n int) (failure error) {
	for j := range ins {
		in := &ins[j]
		if !overlaps(in, &out) {
			continue
		}
		c, free, err := in.array.copy(op, in.name, in.arr)
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
	return applyPlan(op, e, out, ins, n)
}

// applyPlan is apply once no input overlaps the output: e's plan for the
// operands' pattern, launched.
func applyPlan(op string, e expr, out operand, ins []operand, n int) error {
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
	return launchPlan(op, e, out, ins, n)
}

// launchPlan launches e's plan over the operands; where their layouts
// leave more axes than a kernel indexes (maxAxes), one index of the first
// axis at a time (so that Copy and Contiguous, what makePlan's error
// advises, make any array contiguous, as NumPy's of up to 64 axes).
func launchPlan(op string, e expr, out operand, ins []operand, n int) error {
	if out.layout.Ndim() > maxAxes && !usesIndex.MatchString(e.code) && tooManyAxes(out, ins) {
		return applyOuter(op, e, out, ins)
	}
	p, err := planFor(op, e, &out, ins)
	if err != nil {
		return err
	}
	return p.launch(op, &out, ins, n)
}

// tooManyAxes reports whether the operands' layouts, broadcast to out's
// shape and coalesced, leave more than maxAxes axes (false where they do
// not broadcast: makePlan says why).
func tooManyAxes(out operand, ins []operand) bool {
	co, err := coalesced(&out, ins)
	return err == nil && co[0].Ndim() > maxAxes
}

// coalesced broadcasts every input to the result's shape, then coalesces
// the arrays' layouts together (a scalar takes no part): out's first.
func coalesced(out *operand, ins []operand) ([]ndshape.Layout, error) {
	shape := out.layout.Shape()
	layouts := []ndshape.Layout{out.layout}
	for _, in := range ins {
		if in.scalar {
			continue
		}
		l, err := in.layout.BroadcastTo(shape)
		if err != nil {
			return nil, err
		}
		layouts = append(layouts, l)
	}
	return ndshape.Coalesce(layouts...)
}

// applyOuter applies e over the operands one index of out's first axis at
// a time: each a launch over the other axes (the arrays' spans the same,
// their layouts those of the index's elements).
func applyOuter(op string, e expr, out operand, ins []operand) error {
	shape := out.layout.Shape()
	sub := make([]operand, len(ins))
	for i := range shape[0] {
		o := out
		var err error
		if o.layout, err = out.layout.Index(0, i); err != nil {
			return wrap(op, err)
		}
		for j := range ins {
			sub[j] = ins[j]
			if ins[j].scalar {
				continue
			}
			l, err := ins[j].layout.BroadcastTo(shape)
			if err == nil {
				l, err = l.Index(0, i)
			}
			if err != nil {
				return wrap(op, err)
			}
			sub[j].layout = l
		}
		if err := launchPlan(op, e, o, sub, o.layout.Size()); err != nil {
			return err
		}
	}
	return nil
}

// broadcastEquals reports whether in, broadcast to out's shape, is out's
// layout (in.BroadcastTo(out.Shape()) equal to out, without the copies).
func broadcastEquals(in, out ndshape.Layout) bool {
	n, k := out.Ndim(), in.Ndim()
	if k > n || in.Offset() != out.Offset() {
		return false
	}
	for i := range n {
		st := 0
		if j := i - (n - k); j >= 0 {
			switch d := in.Dim(j); d {
			case out.Dim(i):
				st = in.Stride(j)
			case 1:
			default:
				return false
			}
		}
		if st != out.Stride(i) {
			return false
		}
	}
	return true
}

// A plan is what apply works out of the operands' pattern: the types, the
// shapes and strides of out and of each input (which are scalars), and
// the expression. Their layouts broadcast and coalesced, the kernel, and
// the arguments that do not change from call to call are the same for
// every call of one pattern: apply finds them in plans, by the pattern's
// signature, rather than working them out again (a small operation's
// call is mostly this work). The offsets and buffers are each call's.
type plan struct {
	hash   uint64
	name   string
	code   string
	sig    []int // the signature, as sigOf writes it
	k      *compute.Elementwise
	axes   int   // the strided kernel's axes; -1: the contiguous kernel
	consts []any // the strided kernel's dims and each array's strides, as its arguments
	// The strided kernel's vector variant (vectorWidth), where the
	// pattern has one: vec elements a thread, its own dims, and the
	// arrays (bit 0 out, bit j+1 input j) it loads or stores vec at a
	// time, whose addresses must be aligned to vec elements.
	kv      *compute.Elementwise
	vec     int
	vconsts []any
	vecs    uint64
	// raw is the contiguous kernel of nd's own (contigKernel), where the
	// pattern has one: launched directly, without compute.Elementwise's
	// classification of every argument at every call. widest is the
	// largest element size among its arrays.
	raw    *rawKernel
	widest int
	// The strided kernel and its vector variant as nd's own kernels
	// (stridedRaw), where the pattern has them: the same code, launched
	// directly.
	rawS, rawV *rawKernel
	// tile is the tiled kernel (tileFor), where the pattern has one: the
	// plan has no strided kernel then.
	tile *tiled
}

// rawKernel is a RawKernel with the function it was loaded as in the
// context of its last launch.
type rawKernel struct {
	k  *compute.RawKernel
	fn atomic.Pointer[rawFunc]
}

// function returns r loaded in ctx: the last one's, or compiled and
// loaded (RawKernel.Launch would find it at every call, and name it in an
// error it makes whether or not the launch fails).
func (r *rawKernel) function(ctx *cuda.Context) (*cuda.Function, error) {
	if rf := r.fn.Load(); rf != nil && rf.ctx == ctx {
		return rf.f, nil
	}
	f, err := r.k.Function(ctx)
	if err != nil {
		return nil, err
	}
	r.fn.Store(&rawFunc{ctx, f})
	return f, nil
}

// rawFunc is a raw kernel loaded in a context. The context is held
// strongly, as f holds it anyway (through its module): a weak pointer
// spared no memory, and its Value cost every launch a lookup.
type rawFunc struct {
	ctx *cuda.Context
	f   *cuda.Function
}

// planSlots is the cache of plans: a plan in the slot of its hash (a
// later pattern of that slot takes its place), read without a lock.
var planSlots [1024]atomic.Pointer[plan]

// maxSig is the longest signature a plan is cached for: patterns of more
// axes or operands are worked out at every call.
const maxSig = 128

// signature is a pattern's signature being written: what tells one plan
// from another but the expression.
type signature struct {
	v  [maxSig]int
	n  int
	ok bool
}

func (g *signature) add(x int) {
	if g.n == maxSig {
		g.ok = false
		return
	}
	g.v[g.n] = x
	g.n++
}

// addOperand writes an operand: its type, then -1 for a scalar, or its
// axes, shape and strides.
func (g *signature) addOperand(o *operand) {
	g.add(o.t.id)
	if o.scalar {
		g.add(-1)
		return
	}
	l := &o.layout
	nd := l.Ndim()
	g.add(nd)
	for i := range nd {
		g.add(l.Dim(i))
	}
	for i := range nd {
		g.add(l.Stride(i))
	}
}

// planSeed seeds the hashes of the expressions' code.
var planSeed = maphash.MakeSeed()

// sigOf writes the signature of a pattern and returns its hash.
func sigOf(g *signature, e expr, out *operand, ins []operand) uint64 {
	g.ok = true
	g.add(len(ins))
	g.addOperand(out)
	for i := range ins {
		g.addOperand(&ins[i])
	}
	h := exprHash(e)
	for _, x := range g.v[:g.n] {
		h = (h ^ uint64(x)) * 0x100000001b3
	}
	return h
}

// exprHashes keeps the hashes of expressions, each in the slot of its
// code's address: most calls' expressions are the package's constant
// strings, hashed once. An entry holds the strings' memory, so an address
// it names is never another string's.
var exprHashes [64]atomic.Pointer[exprHashed]

type exprHashed struct {
	code, name *byte
	nc, nn     int
	h          uint64
}

// exprHash returns the hash of e's code and name.
func exprHash(e expr) uint64 {
	code, name := unsafe.StringData(e.code), unsafe.StringData(e.name)
	slot := &exprHashes[(uintptr(unsafe.Pointer(code))>>4)%uintptr(len(exprHashes))]
	if x := slot.Load(); x != nil && x.code == code && x.nc == len(e.code) && x.name == name && x.nn == len(e.name) {
		return x.h
	}
	h := maphash.String(planSeed, e.code) ^ maphash.String(planSeed, e.name)*31
	if slot.Load() == nil {
		// The first expression of a slot keeps it: an expression whose
		// code is written at each call (a new string) would otherwise
		// cost an allocation at each.
		slot.CompareAndSwap(nil, &exprHashed{code, name, len(e.code), len(e.name), h})
	}
	return h
}

// planFor returns the plan of e over the operands: cached, or worked out
// (and cached).
func planFor(op string, e expr, out *operand, ins []operand) (*plan, error) {
	var g signature
	h := sigOf(&g, e, out, ins)
	slot := &planSlots[h%uint64(len(planSlots))]
	if p := slot.Load(); p != nil && g.ok && p.hash == h && p.code == e.code && p.name == e.name && slices.Equal(p.sig, g.v[:g.n]) {
		return p, nil
	}
	p, err := makePlan(op, e, out, ins)
	if err != nil {
		return nil, err
	}
	if g.ok {
		p.hash, p.name, p.code, p.sig = h, e.name, e.code, slices.Clone(g.v[:g.n])
		slot.Store(p)
	}
	return p, nil
}

// makePlan works out e's plan over the operands.
func makePlan(op string, e expr, out *operand, ins []operand) (*plan, error) {
	co, err := coalesced(out, ins)
	if err != nil {
		return nil, wrap(op, err)
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
			return nil, errorf(op, cuda.ErrNotSupported, "the operands' layouts leave %d axes that cannot be merged (shape %v): at most %d; make an operand contiguous first", axes, out.layout.Shape(), maxAxes)
		}
	}
	// The tiled kernel, where it applies, needs no other (nor their
	// parameters: it takes an expression of more arrays).
	if axes >= 0 {
		if t := tileFor(e, out, ins, co); t != nil {
			return &plan{axes: axes, tile: t}, nil
		}
	}
	narrow := axes >= 0 && narrowFits(co)
	k, err := kernelFor(op, e, *out, ins, axes, scalars, narrow, 0, 0)
	if err != nil {
		return nil, err
	}
	p := &plan{k: k, axes: axes}
	if axes < 0 {
		if raw, widest := contigKernel(e, out, ins); raw != nil {
			p.raw, p.widest = &rawKernel{k: raw}, widest
		}
		return p, nil
	}
	// The axes' dimensions and each array's strides, in the declaration's
	// order (after the offsets, before the output); a narrow kernel's
	// dimensions each with its divider. The vector variant's last
	// dimension counts vectors.
	consts := func(vec int) []any {
		var c []any
		for i, d := range co[0].Shape() {
			if i == axes-1 && vec > 0 {
				d /= vec
			}
			if narrow {
				c = append(c, divider(d))
				continue
			}
			c = append(c, int64(d))
		}
		for _, l := range co {
			for _, st := range l.Strides() {
				c = append(c, int64(st))
			}
		}
		return c
	}
	p.consts = consts(0)
	p.rawS = stridedRaw(e, *out, ins, axes, scalars, narrow, 0, 0)
	if vec, vecs := vectorWidth(co, out, ins); vec > 0 && !usesIndex.MatchString(e.code) {
		kv, err := kernelFor(op, e, *out, ins, axes, scalars, narrow, vec, vecs)
		if err != nil {
			return nil, err
		}
		p.kv, p.vec, p.vecs, p.vconsts = kv, vec, vecs, consts(vec)
		p.rawV = stridedRaw(e, *out, ins, axes, scalars, narrow, vec, vecs)
	}
	return p, nil
}

var stridedKernels sync.Map // kernelKey -> *rawKernel

// stridedRaw returns the strided kernel of e for the pattern (specFor's
// code) as a kernel of nd's own, or nil: where no operand is a scalar or
// a half, its parameters are pointers and numbers, and the kernel is
// specFor's operation in a grid-stride loop over n elements, its
// arguments compute's strided kernel's then n.
func stridedRaw(e expr, out operand, ins []operand, axes int, scalars uint64, narrow bool, vec int, vecs uint64) *rawKernel {
	if scalars != 0 || out.t.half {
		return nil
	}
	var types []string
	for _, in := range ins {
		if in.t.half {
			return nil
		}
		types = append(types, in.t.name)
	}
	key := kernelKey{name: e.name, code: e.code, types: strings.Join(types, ",") + "->" + out.t.name, axes: axes, narrow: narrow, vec: vec, vecs: vecs}
	if k, ok := stridedKernels.Load(key); ok {
		return k.(*rawKernel)
	}
	spec := specFor(e, out, ins, axes, key)
	var params []string
	for _, p := range strings.Split(spec.InParams+", "+spec.OutParams, ", ") {
		f := strings.Fields(p)
		switch {
		case len(f) == 3 && f[0] == "raw" && f[2] == "y":
			params = append(params, ctypes[f[1]].value+"* y")
		case len(f) == 3 && f[0] == "raw":
			params = append(params, "const "+ctypes[f[1]].value+"* "+f[2])
		case len(f) == 2 && f[0] == "int64":
			params = append(params, "long long "+f[1])
		default:
			return nil
		}
	}
	name := spec.Name + "_nd"
	src := fmt.Sprintf(`extern "C" __global__ __launch_bounds__(%[4]d) void %[1]s(%[2]s, long long n) {
	const long long stride = (long long)gridDim.x * blockDim.x;
	for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
%[3]s
	}
}
`, name, strings.Join(params, ", "), spec.Operation, contigThreads)
	k, err := compute.NewRawKernel(src, name)
	if err != nil {
		return nil
	}
	got, _ := stridedKernels.LoadOrStore(key, &rawKernel{k: k})
	return got.(*rawKernel)
}

// launchStrided launches r over n elements (or vectors) with args, n
// appended.
func launchStrided(op string, r *rawKernel, s *cuda.Stream, n int, args []any) error {
	f, err := r.function(s.Context())
	if err != nil {
		return wrap(op, err)
	}
	args = append(args, boxInt64(int64(n)))
	blocks := min((n+contigThreads-1)/contigThreads, 1<<20)
	return wrap(op, f.Launch(cuda.LaunchConfig{Grid: cuda.Dim3{X: blocks}, Block: cuda.Dim3{X: contigThreads}, Stream: s}, args...))
}

// usesIndex matches an expression's code that reads the element's index
// i, which the vector variant does not give it.
var usesIndex = regexp.MustCompile(`\bi\b`)

// vectorWidth returns how many elements of the last axis a thread of the
// strided kernel's vector variant takes (16 bytes of the widest type),
// and which arrays it loads or stores that many at a time (bit 0 out,
// bit j+1 input j): where the last axis is contiguous in out and in every
// input or broadcast (stride 0) in it, its length is a multiple of the
// width, and each contiguous array's other strides are too (so that an
// aligned first vector aligns them all); 0 where not, or where an operand
// is a half.
func vectorWidth(co []ndshape.Layout, out *operand, ins []operand) (int, uint64) {
	if out.t.half {
		return 0, 0
	}
	widest := out.t.size()
	for i := range ins {
		if ins[i].t.half {
			return 0, 0
		}
		if !ins[i].scalar {
			widest = max(widest, ins[i].t.size())
		}
	}
	vec := 16 / widest
	last := co[0].Ndim() - 1
	if vec < 2 || last < 0 || co[0].Dim(last)%vec != 0 {
		return 0, 0
	}
	var vecs uint64
	c := 0 // co's index of the array
	for j := -1; j < len(ins); j++ {
		if j >= 0 && ins[j].scalar {
			continue
		}
		l := co[c]
		c++
		switch l.Stride(last) {
		case 1:
			for i := range last {
				if l.Stride(i)%vec != 0 {
					return 0, 0
				}
			}
			vecs |= 1 << (j + 1)
		case 0:
			if j < 0 {
				return 0, 0
			}
		default:
			return 0, 0
		}
	}
	return vec, vecs
}

// aligned reports whether the arrays p's vector variant loads or stores a
// vector at a time are aligned to a vector in this call.
func (p *plan) aligned(out *operand, ins []operand) bool {
	at := func(o *operand) bool {
		size := uint64(o.t.size())
		return (uint64(o.lo)+uint64(o.layout.Offset())*size)%(uint64(p.vec)*size) == 0
	}
	if p.vecs&1 != 0 && !at(out) {
		return false
	}
	for j := range ins {
		if p.vecs&(1<<(j+1)) != 0 && !at(&ins[j]) {
			return false
		}
	}
	return true
}

// narrowFits reports whether a strided kernel over the coalesced layouts
// can do its index arithmetic in 32 bits: fewer than 2^31 elements, and
// every array's elements within 2^31 of its offset (the sum over the
// axes of the index times the stride, whatever the signs, fits an int).
func narrowFits(co []ndshape.Layout) bool {
	if co[0].Size() >= math.MaxInt32 {
		return false
	}
	for _, l := range co {
		reach := 0
		for i := range l.Ndim() {
			st := l.Stride(i)
			if st < 0 {
				st = -st
			}
			if l.Dim(i) > 1 && st > (math.MaxInt32-reach)/(l.Dim(i)-1) {
				return false
			}
			reach += (l.Dim(i) - 1) * st
		}
	}
	return true
}

// divider returns d (at least 1, below 2^31) with its magic number in the
// high 32 bits: a narrow kernel divides a 32-bit index q below 2^31 by d
// as (umulhi(q, m) + q) >> s, s the least with 2^s >= d, m = 2^32 (2^s -
// d) / d + 1 (division by an invariant integer by multiplication,
// Granlund and Montgomery): a multiplication and a shift for the tens of
// instructions of a division.
func divider(d int) int64 {
	s := 0
	for 1<<s < d {
		s++
	}
	m := (uint64(1)<<32)*(uint64(1)<<s-uint64(d))/uint64(d) + 1
	return int64(m<<32 | uint64(d))
}

// boxedInts are int64 kernel arguments boxed once (compute's are too):
// an int64 in an interface is an allocation (but from 0 to 255), and a
// call's offsets and lengths are mostly the last call's. A slot holds the
// last value of its hash.
var boxedInts [256]atomic.Pointer[boxedInt]

type boxedInt struct {
	v int64
	a any
}

// boxInt64 returns v in an interface, boxed once for as long as its slot
// keeps it.
func boxInt64(v int64) any {
	if v >= 0 && v < 256 {
		return v // the runtime's own boxes: no allocation
	}
	slot := &boxedInts[(uint64(v)*0x9e3779b97f4a7c15)>>56]
	if b := slot.Load(); b != nil && b.v == v {
		return b.a
	}
	b := &boxedInt{v: v, a: v}
	slot.Store(b)
	return b.a
}

// maxArgs is the most arguments a launch of apply keeps on the stack.
const maxArgs = 32

// launch launches p's kernel over the operands' n elements.
func (p *plan) launch(op string, out *operand, ins []operand, n int) error {
	// The arguments in the declaration's order: the inputs, (strided)
	// each array's offset, the axes' dimensions and each array's strides,
	// then the output.
	var buf [maxArgs]any
	args := buf[:0]
	if p.raw != nil {
		return p.launchRaw(op, out, ins, n, args)
	}
	if p.axes < 0 {
		// Each array from its first element, n elements long: its span
		// itself where that is all it is.
		slice := func(o *operand) (any, error) {
			if o.layout.Offset() == 0 && o.n == n {
				return o.buf, nil
			}
			return o.array.slice(o.buf, o.layout.Offset(), n)
		}
		for i := range ins {
			in := &ins[i]
			if in.scalar {
				args = append(args, in.buf)
				continue
			}
			b, err := slice(in)
			if err != nil {
				return wrap(op, err)
			}
			args = append(args, b)
		}
		b, err := slice(out)
		if err != nil {
			return wrap(op, err)
		}
		args = append(args, b)
		return wrap(op, p.k.Launch(out.s, args...))
	}
	if p.tile != nil {
		return p.tile.launch(op, out, ins, args)
	}
	for i := range ins {
		args = append(args, ins[i].buf)
	}
	args = append(args, boxInt64(int64(out.layout.Offset())))
	for i := range ins {
		if !ins[i].scalar {
			args = append(args, boxInt64(int64(ins[i].layout.Offset())))
		}
	}
	if p.kv != nil && p.aligned(out, ins) {
		args = append(args, p.vconsts...)
		args = append(args, out.buf)
		if p.rawV != nil {
			return launchStrided(op, p.rawV, out.s, n/p.vec, args)
		}
		return wrap(op, p.kv.LaunchN(out.s, n/p.vec, args...))
	}
	args = append(args, p.consts...)
	args = append(args, out.buf)
	if p.rawS != nil {
		return launchStrided(op, p.rawS, out.s, n, args)
	}
	return wrap(op, p.k.LaunchN(out.s, n, args...))
}

// launchRaw launches p's raw kernel over n elements: each array's span
// and offset, then n and the vector width, 16 bytes of the widest type
// where every array's first element is aligned to that many of its own,
// else one.
func (p *plan) launchRaw(op string, out *operand, ins []operand, n int, args []any) error {
	vec := 16 / p.widest
	at := func(o *operand) {
		// vec·size is a power of two (sizes are, and vec is 16 bytes
		// of the widest): a mask, not a division, tells the alignment.
		size := uint64(o.t.size())
		if (uint64(o.lo)+uint64(o.layout.Offset())*size)&(uint64(vec)*size-1) != 0 {
			vec = 1
		}
	}
	for i := range ins {
		at(&ins[i])
		args = append(args, ins[i].buf, boxInt64(int64(ins[i].layout.Offset())))
	}
	at(out)
	args = append(args, out.buf, boxInt64(int64(out.layout.Offset())), boxInt64(int64(n)), int32(vec))
	threads := (n + vec - 1) / vec
	blocks := min((threads+contigThreads-1)/contigThreads, 1<<20)
	cfg := cuda.LaunchConfig{Grid: cuda.Dim3{X: blocks}, Block: cuda.Dim3{X: contigThreads}, Stream: out.s}
	f, err := p.raw.function(out.s.Context())
	if err != nil {
		return wrap(op, err)
	}
	return wrap(op, f.Launch(cfg, args...))
}

// contigThreads is a block of the raw contiguous kernel.
const contigThreads = 256

var contigKernels sync.Map // kernelKey -> *compute.RawKernel

// contigKernel returns nd's own kernel of e over contiguous arrays (no
// __restrict__: an Into form may write its input in place), and
// the largest element size among them: where no operand is a scalar or a
// half, and e does not read the index. Each thread takes a vector of 16
// bytes of the widest type (or one element where the call's addresses are
// not aligned), in a grid-stride loop, the elements past the last whole
// vector one a thread.
func contigKernel(e expr, out *operand, ins []operand) (*compute.RawKernel, int) {
	if out.t.half || usesIndex.MatchString(e.code) {
		return nil, 0
	}
	widest := out.t.size()
	var types []string
	for i := range ins {
		if ins[i].scalar || ins[i].t.half {
			return nil, 0
		}
		widest = max(widest, ins[i].t.size())
		types = append(types, ins[i].t.name)
	}
	key := kernelKey{name: e.name, code: e.code, types: strings.Join(types, ",") + "->" + out.t.name, axes: -2}
	if k, ok := contigKernels.Load(key); ok {
		return k.(*compute.RawKernel), widest
	}
	name := kernelName(e, key.types) + "_contig"
	var b, params, vecArgs, one strings.Builder
	b.WriteString("template <typename E, int V> struct __align__(sizeof(E) * V) nd_vec { E v[V]; };\n")
	for j, in := range ins {
		fmt.Fprintf(&params, "const %[1]s* p%[2]d, long long o%[2]d, ", in.t.value, j)
		fmt.Fprintf(&vecArgs, "p%[1]d, o%[1]d, ", j)
	}
	fmt.Fprintf(&params, "%s* y, long long oy, long long n", out.t.value)
	vecArgs.WriteString("y, oy, n")
	for j, in := range ins {
		fmt.Fprintf(&one, "const %[1]s x%[2]d = p%[2]d[o%[2]d + i];\n", in.t.value, j)
	}
	fmt.Fprintf(&b, `template <int V> __device__ __forceinline__ void nd_contig(%[1]s) {
	const long long stride = (long long)gridDim.x * blockDim.x, nv = n / V;
	for (long long q = (long long)blockIdx.x * blockDim.x + threadIdx.x; q < nv; q += stride) {
`, params.String())
	for j, in := range ins {
		fmt.Fprintf(&b, "\t\tconst nd_vec<%[1]s, V> xv%[2]d = *(const nd_vec<%[1]s, V>*)(p%[2]d + o%[2]d + q * V);\n", in.t.value, j)
	}
	fmt.Fprintf(&b, "\t\tnd_vec<%[1]s, V> yv;\n\t\t#pragma unroll\n\t\tfor (int nd_lane = 0; nd_lane < V; nd_lane++) {\n", out.t.value)
	for j, in := range ins {
		fmt.Fprintf(&b, "\t\t\tconst %[1]s x%[2]d = xv%[2]d.v[nd_lane];\n", in.t.value, j)
	}
	fmt.Fprintf(&b, "\t\t\t%[1]s r;\n\t\t\t{ %[2]s }\n\t\t\tyv.v[nd_lane] = (%[1]s)r;\n\t\t}\n\t\t*(nd_vec<%[1]s, V>*)(y + oy + q * V) = yv;\n\t}\n", out.t.value, e.body())
	fmt.Fprintf(&b, "\tfor (long long i = nv * V + (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {\n%[1]s\t\t%[2]s r;\n\t\t{ %[3]s }\n\t\ty[oy + i] = (%[2]s)r;\n\t}\n}\n", one.String(), out.t.value, e.body())
	fmt.Fprintf(&b, "extern \"C\" __global__ __launch_bounds__(%[4]d) void %[1]s(%[2]s, int v) {\n\tswitch (v) {\n", name, params.String(), vecArgs.String(), contigThreads)
	for v := 16 / widest; v > 1; v /= 2 {
		fmt.Fprintf(&b, "\tcase %[1]d: nd_contig<%[1]d>(%[2]s); break;\n", v, vecArgs.String())
	}
	fmt.Fprintf(&b, "\tdefault: nd_contig<1>(%s);\n\t}\n}\n", vecArgs.String())
	k, err := compute.NewRawKernel(b.String(), name)
	if err != nil {
		return nil, 0 // compute's Elementwise does it
	}
	got, _ := contigKernels.LoadOrStore(key, k)
	return got.(*compute.RawKernel), widest
}

// kernelFor returns the kernel of e for the operands' types and pattern,
// declaring it on first use.
func kernelFor(op string, e expr, out operand, ins []operand, axes int, scalars uint64, narrow bool, vec int, vecs uint64) (*compute.Elementwise, error) {
	var types []string
	for _, in := range ins {
		types = append(types, in.t.name)
	}
	key := kernelKey{name: e.name, code: e.code, types: strings.Join(types, ",") + "->" + out.t.name, axes: axes, scalars: scalars,
		narrow: narrow, vec: vec, vecs: vecs}
	if k, ok := kernelCache.Load(key); ok {
		return k.(*compute.Elementwise), nil
	}
	spec := specFor(e, out, ins, axes, key)
	if n := strings.Count(spec.InParams, ",") + 2; n > maxParams {
		arrays := 0
		for _, in := range ins {
			if !in.scalar {
				arrays++
			}
		}
		if axes < 0 {
			return nil, errorf(op, cuda.ErrNotSupported, "%d arrays and %d scalars take %d kernel parameters: at most %d; compute it in parts", arrays, len(ins)-arrays, n, maxParams)
		}
		return nil, errorf(op, cuda.ErrNotSupported, "%d arrays and %d scalars take %d kernel parameters in these layouts (each strided array its offset and a stride an axis): at most %d; make some of them contiguous first (Contiguous), or compute it in parts", arrays, len(ins)-arrays, n, maxParams)
	}
	k, err := compute.NewElementwise(spec)
	if err != nil {
		// A declaration of this package's own that compute refuses.
		return nil, wrap(op, err)
	}
	got, _ := kernelCache.LoadOrStore(key, k)
	return got.(*compute.Elementwise), nil
}

// kernelName is the start of the name of e's kernels over types (a key's:
// the inputs' types, then "->" and the output's): nd_, e's name, the
// types joined by _ and _to_, or, where an expression reads many arrays,
// each run of one type once with its count (float32x40), so that the
// name stays a name.
func kernelName(e expr, types string) string {
	in, out, _ := strings.Cut(types, "->")
	parts := strings.Split(in, ",")
	if len(parts) <= 8 {
		return "nd_" + e.name + "_" + strings.Join(parts, "_") + "_to_" + out
	}
	var b strings.Builder
	b.WriteString("nd_" + e.name)
	for i := 0; i < len(parts); {
		j := i + 1
		for j < len(parts) && parts[j] == parts[i] {
			j++
		}
		fmt.Fprintf(&b, "_%sx%d", parts[i], j-i)
		i = j
	}
	return b.String() + "_to_" + out
}

// specFor writes the declaration of e's kernel for a pattern.
func specFor(e expr, out operand, ins []operand, axes int, key kernelKey) compute.ElementwiseSpec {
	name := kernelName(e, key.types)
	if axes >= 0 {
		name += fmt.Sprintf("_%dd", axes)
	}
	if key.narrow {
		name += "_32"
	}
	if key.vec > 0 {
		name += fmt.Sprintf("_v%d_%x", key.vec, key.vecs)
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
	if key.narrow {
		// The index's arithmetic in 32 bits (narrowFits): each axis's
		// division by a multiplication and a shift (divider), each
		// array's element from its offset in an int.
		b.WriteString("unsigned int q = (unsigned int)i, c, t;\nint ")
		for k, a := range arrays {
			if k > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "j_%s = 0", a)
		}
		b.WriteString(";\n")
		for d := axes - 1; d >= 0; d-- {
			if d > 0 {
				fmt.Fprintf(&b, "{ const unsigned int dd = (unsigned int)d%[1]d, m = (unsigned int)((unsigned long long)d%[1]d >> 32), sh = 32 - __clz((int)(dd - 1));"+
					" t = ((unsigned int)(((unsigned long long)q * m) >> 32) + q) >> sh; c = q - t * dd; q = t; }", d)
			} else {
				b.WriteString("c = q;")
			}
			if d == axes-1 && key.vec > 0 {
				fmt.Fprintf(&b, " c *= %d;", key.vec)
			}
			for _, a := range arrays {
				fmt.Fprintf(&b, " j_%[1]s += (int)c * (int)s%[2]d_%[1]s;", a, d)
			}
			b.WriteString("\n")
		}
		for _, a := range arrays {
			fmt.Fprintf(&b, "const long long k_%[1]s = o_%[1]s + j_%[1]s;\n", a)
		}
	} else {
		b.WriteString("long long q = i, c")
		for _, a := range arrays {
			fmt.Fprintf(&b, ", k_%[1]s = o_%[1]s", a)
		}
		b.WriteString(";\n")
		for d := axes - 1; d >= 0; d-- {
			if d > 0 {
				fmt.Fprintf(&b, "c = q %% d%[1]d; q /= d%[1]d;", d)
			} else {
				b.WriteString("c = q;")
			}
			if d == axes-1 && key.vec > 0 {
				fmt.Fprintf(&b, " c *= %d;", key.vec)
			}
			for _, a := range arrays {
				fmt.Fprintf(&b, " k_%[1]s += c * s%[2]d_%[1]s;", a, d)
			}
			b.WriteString("\n")
		}
	}
	if key.vec > 0 {
		// The vector variant (vectorWidth): key.vec elements of the last
		// axis, loaded and stored at once where an array is contiguous
		// along it, one element broadcast to all where it is not.
		v := key.vec
		for j, in := range ins {
			switch {
			case in.scalar:
			case key.vecs&(1<<(j+1)) != 0:
				fmt.Fprintf(&b, "struct __align__(%[3]d) nd_v%[2]d { %[1]s v[%[4]d]; };\nconst nd_v%[2]d xv%[2]d = *(const nd_v%[2]d*)(p%[2]d + k_p%[2]d);\n", in.t.value, j, v*in.t.size(), v)
			default:
				fmt.Fprintf(&b, "const %[1]s x%[2]d = p%[2]d[k_p%[2]d];\n", in.t.value, j)
			}
		}
		fmt.Fprintf(&b, "struct __align__(%[2]d) nd_vy { %[1]s v[%[3]d]; };\nnd_vy yv;\n#pragma unroll\nfor (int nd_lane = 0; nd_lane < %[3]d; nd_lane++) {\n", out.t.value, v*out.t.size(), v)
		for j, in := range ins {
			if !in.scalar && key.vecs&(1<<(j+1)) != 0 {
				fmt.Fprintf(&b, "const %[1]s x%[2]d = xv%[2]d.v[nd_lane];\n", in.t.value, j)
			}
		}
		fmt.Fprintf(&b, "%s r;\n{ %s }\nyv.v[nd_lane] = (%s)r;\n}\n*(nd_vy*)(y + k_y) = yv;", out.t.value, e.body(), out.t.value)
		return compute.ElementwiseSpec{Name: name, InParams: strings.Join(inParams, ", "), OutParams: "raw " + out.t.name + " y", Operation: b.String()}
	}
	for j, in := range ins {
		if !in.scalar {
			fmt.Fprintf(&b, "const %[1]s x%[2]d = p%[2]d[k_p%[2]d];\n", in.t.value, j)
		}
	}
	fmt.Fprintf(&b, "%s r;\n%s\n", out.t.value, e.body())
	if out.t.half {
		b.WriteString("y[k_y] = r;")
	} else {
		fmt.Fprintf(&b, "y[k_y] = (%s)r;", out.t.value)
	}
	return compute.ElementwiseSpec{Name: name, InParams: strings.Join(inParams, ", "), OutParams: "raw " + out.t.name + " y", Operation: b.String()}
}
