package nd

import (
	"fmt"
	"math"
	"slices"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/ndshape"
)

// The elementwise operations, each an expression of kernels.go's engine.
// Every one takes arrays of any shapes and strides, broadcast together as
// NumPy broadcasts them (Scalar for a number), and either allocates its
// result, a contiguous array of the broadcast shape on the operands'
// stream, or (the Into form) writes into an array given, which must have
// the broadcast shape and may be a view or one of the inputs (an input
// that overlaps the output other than element for element is read from a
// copy first, as NumPy does).

// mathf names the C math function name for t: expf for float and the
// halves, exp for double.
func mathf(t ctype, name string) string {
	if t.name == "float64" {
		return name
	}
	return name + "f"
}

// resultStream is the stream of the first operand that is not a Scalar.
func resultStream(op string, ops []operand) (*cuda.Stream, error) {
	for _, o := range ops {
		if !o.scalar {
			return o.s, nil
		}
	}
	return nil, errorf(op, cuda.ErrInvalidValue, "every operand is a Scalar: at least one must be an array on the GPU")
}

// maxDims is the most axes a call's shapes are worked out on the stack
// for (more take the heap).
const maxDims = 16

// run applies e to the inputs into a new array of their broadcast shape.
func run[U Elem](op string, e expr, ins ...operand) (*Array[U], error) {
	s, err := resultStream(op, ins)
	if err != nil {
		return nil, err
	}
	var shapeBuf [maxDims]int
	shape, ok := broadcastShape(shapeBuf[:0], ins)
	if !ok {
		shapes := make([][]int, len(ins))
		for j, in := range ins {
			shapes[j] = in.layout.Shape()
		}
		shape, err = ndshape.Broadcast(shapes...)
		if err != nil {
			return nil, wrap(op, err)
		}
	}
	var orderBuf [maxDims]int
	out, err := emptyInOrder[U](op, s, shape, memoryOrder(orderBuf[:0], shape, ins))
	if err != nil {
		return nil, err
	}
	var o operand
	operandInto(&o, op, "out", out)
	if err := apply(op, e, o, ins); err != nil {
		out.Free()
		return nil, err
	}
	return out, nil
}

// broadcastShape appends the inputs' broadcast shape to dst, where they
// broadcast together (ok false where they do not: ndshape.Broadcast says
// why). The shape of a valid layout fits, and so does theirs.
func broadcastShape(dst []int, ins []operand) ([]int, bool) {
	n := 0
	for i := range ins {
		n = max(n, ins[i].layout.Ndim())
	}
	for range n {
		dst = append(dst, 1)
	}
	size := 1
	for i := range ins {
		l := &ins[i].layout
		k := l.Ndim()
		for j := range k {
			d, at := l.Dim(j), j+n-k
			switch {
			case d == 1:
			case dst[at] == 1:
				dst[at] = d
			case dst[at] != d:
				return nil, false
			}
		}
	}
	// The size must fit (ndshape.Broadcast's error says so).
	for _, d := range dst {
		if d > 0 {
			if size > math.MaxInt/d {
				return nil, false
			}
			size *= d
		}
	}
	return dst, true
}

// broadcastsTo reports whether every input broadcasts to shape (that of
// l): whether their broadcast shape does.
func broadcastsTo(l ndshape.Layout, ins []operand) bool {
	n := l.Ndim()
	for i := range ins {
		in := &ins[i].layout
		k := in.Ndim()
		if k > n {
			return false
		}
		for j := range k {
			if d := in.Dim(j); d != 1 && d != l.Dim(j+n-k) {
				return false
			}
		}
	}
	return true
}

// memoryOrder is the order of the axes in memory, outermost first, of the
// first input that is an array of the result's shape (NumPy's order K),
// appended to dst: the result is laid out so, so that an operation on a
// transposed or permuted view reads and writes memory in order, in one
// contiguous pass (and returns a view of that order, as NumPy's). nil
// where that is the row-major order, or no input has the result's shape.
func memoryOrder(dst, shape []int, ins []operand) []int {
	for i := range ins {
		in := &ins[i]
		if in.scalar || in.layout.Ndim() != len(shape) {
			continue
		}
		same := true
		for j, d := range shape {
			same = same && in.layout.Dim(j) == d
		}
		if !same {
			continue
		}
		l := &in.layout
		abs := func(v int) int { return max(v, -v) }
		// Axes of size 1 keep their places (their strides mean nothing);
		// the others take theirs in order of decreasing stride (a stable
		// insertion sort: there are few).
		var axesBuf, sortedBuf [maxDims]int
		axes, sorted := axesBuf[:0], sortedBuf[:0]
		for i, d := range shape {
			if d != 1 {
				axes = append(axes, i)
				sorted = append(sorted, i)
			}
		}
		for a := 1; a < len(sorted); a++ {
			for b := a; b > 0 && abs(l.Stride(sorted[b])) > abs(l.Stride(sorted[b-1])); b-- {
				sorted[b], sorted[b-1] = sorted[b-1], sorted[b]
			}
		}
		order := dst[:0]
		for i := range shape {
			order = append(order, i)
		}
		for k, ax := range axes {
			order[ax] = sorted[k]
		}
		if slices.IsSorted(order) {
			return nil
		}
		return order
	}
	return nil
}

// emptyInOrder is empty with the axes laid out in memory in order (nil:
// row-major), seen in shape's order.
func emptyInOrder[T Elem](op string, s *cuda.Stream, shape, order []int) (*Array[T], error) {
	if order == nil {
		return empty[T](op, s, shape)
	}
	mem := make([]int, len(order))
	for i, ax := range order {
		mem[i] = shape[ax]
	}
	a, err := empty[T](op, s, mem)
	if err != nil {
		return nil, err
	}
	inv := make([]int, len(order))
	for i, ax := range order {
		inv[ax] = i
	}
	l, err := a.layout.Permute(inv...)
	if err != nil {
		a.Free()
		return nil, wrap(op, err)
	}
	a.layout = l
	return a, nil
}

// runInto applies e to the inputs into dst: their broadcast shape must
// broadcast to dst's (NumPy's out=).
func runInto[U Elem](op string, e expr, dst *Array[U], ins ...operand) error {
	if err := writable(op, "dst", dst); err != nil {
		return err
	}
	if !broadcastsTo(dst.layout, ins) {
		// Why not, as ndshape says it.
		var shapes [][]int
		for _, in := range ins {
			shapes = append(shapes, in.layout.Shape())
		}
		shape, err := ndshape.Broadcast(shapes...)
		if err != nil {
			return wrap(op, err)
		}
		return errorf(op, cuda.ErrInvalidValue, "dst has shape %v, and the operands broadcast to %v", dst.layout.Shape(), shape)
	}
	var o operand
	if err := operandInto(&o, op, "dst", dst); err != nil {
		return err
	}
	return apply(op, e, o, ins)
}

// operandNames are the names of operands' arrays, in order.
var operandNames = [...]string{"a", "b", "c"}

// operands makes the operands of arrays named a, b, c, ... in order, in
// ins (which has room for them).
func operands[T Elem](ins []operand, op string, arrays ...*Array[T]) ([]operand, error) {
	ins = ins[:len(arrays)]
	for j, a := range arrays {
		if err := operandInto(&ins[j], op, operandNames[j], a); err != nil {
			return nil, err
		}
	}
	return ins, nil
}

// unary and binary give an operation of one or two arrays of T, with a
// result of U, in both forms.
func unary[T, U Elem](op string, e func(ctype) expr, a *Array[T]) (*Array[U], error) {
	var buf [1]operand
	ins, err := operands(buf[:], op, a)
	if err != nil {
		return nil, err
	}
	return run[U](op, e(ctypeOf[T]()), ins...)
}

func unaryInto[T, U Elem](op string, e func(ctype) expr, dst *Array[U], a *Array[T]) error {
	var buf [1]operand
	ins, err := operands(buf[:], op, a)
	if err != nil {
		return err
	}
	return runInto(op, e(ctypeOf[T]()), dst, ins...)
}

func binary[T, U Elem](op string, e func(ctype) expr, a, b *Array[T]) (*Array[U], error) {
	var buf [2]operand
	ins, err := operands(buf[:], op, a, b)
	if err != nil {
		return nil, err
	}
	return run[U](op, e(ctypeOf[T]()), ins...)
}

func binaryInto[T, U Elem](op string, e func(ctype) expr, dst *Array[U], a, b *Array[T]) error {
	var buf [2]operand
	ins, err := operands(buf[:], op, a, b)
	if err != nil {
		return err
	}
	return runInto(op, e(ctypeOf[T]()), dst, ins...)
}

// fixed is an expression the same for every type.
func fixed(name, code string) func(ctype) expr {
	return func(ctype) expr { return expr{name: name, code: code} }
}

var (
	addExpr = fixed("add", "x0 + x1")
	subExpr = fixed("sub", "x0 - x1")
	mulExpr = fixed("mul", "x0 * x1")
	eqExpr  = fixed("eq", "x0 == x1")
	neExpr  = fixed("ne", "x0 != x1")
	ltExpr  = fixed("lt", "x0 < x1")
	leExpr  = fixed("le", "x0 <= x1")
	gtExpr  = fixed("gt", "x0 > x1")
	geExpr  = fixed("ge", "x0 >= x1")
	andExpr = fixed("and", "x0 != 0 && x1 != 0")
	orExpr  = fixed("or", "x0 != 0 || x1 != 0")
	notExpr = fixed("not", "x0 == 0")
)

// divExpr: a float's division; an integer's truncated toward zero, where
// a division by zero gives 0 and the most negative value divided by -1
// itself (NumPy's answers, and the ones that do not trap: the fake
// driver runs kernels on the CPU, where either stops the process with
// SIGFPE).
func divExpr(t ctype) expr { return divExprs[t.id] }

// divExprs are divExpr's expressions, by ctype id, written once: a call's
// expression the same string each time (exprHash).
var divExprs = func() (e [len(ctypeList)]expr) {
	for i, t := range ctypeList {
		e[i] = writeDivExpr(t)
	}
	return e
}()

func writeDivExpr(t ctype) expr {
	switch {
	case t.float:
		return expr{name: "div", code: "x0 / x1"}
	case t.value[0] == 'u':
		return expr{name: "div", code: "x1 == 0 ? 0 : x0 / x1"}
	}
	return expr{name: "div", code: fmt.Sprintf("x1 == 0 ? (%[1]s)0 : x1 == -1 ? (%[1]s)(0ULL - (unsigned long long)x0) : (%[1]s)(x0 / x1)", t.value)}
}

// maxExpr and minExpr: NumPy's maximum and minimum, a NaN winning.
func maxExpr(t ctype) expr {
	if t.float {
		return expr{name: "maximum", code: "x0 != x0 || x0 > x1 ? x0 : x1"}
	}
	return expr{name: "maximum", code: "x0 > x1 ? x0 : x1"}
}

func minExpr(t ctype) expr {
	if t.float {
		return expr{name: "minimum", code: "x0 != x0 || x0 < x1 ? x0 : x1"}
	}
	return expr{name: "minimum", code: "x0 < x1 ? x0 : x1"}
}

// powExpr: pow for floats; for integers, exact repeated squaring (a
// negative exponent gives 0, or ±1 for a base of ±1, as integer division
// would).
func powExpr(t ctype) expr {
	if t.float {
		return expr{name: "pow", code: mathf(t, "pow") + "(x0, x1)"}
	}
	return expr{name: "pow", code: `long long b_ = x0, e_ = x1, p_ = 1;
if (e_ < 0) { p_ = b_ == 1 ? 1 : b_ == -1 ? ((e_ & 1) ? -1 : 1) : 0; }
else { while (e_ > 0) { if (e_ & 1) p_ *= b_; b_ *= b_; e_ >>= 1; } }
r = p_;`}
}

// addOf and mulOf are Add's and Mul's expressions for T: of Bools, a
// logical or and a logical and, as NumPy's add and multiply of bools and
// as Sum's and Prod's folds of Bools, not a byte's sum (true + true would
// be the byte 2, which Equal does not take for true).
func addOf[T Elem]() func(ctype) expr {
	if isBool[T]() {
		return orExpr
	}
	return addExpr
}

func mulOf[T Elem]() func(ctype) expr {
	if isBool[T]() {
		return andExpr
	}
	return mulExpr
}

// Add returns a + b, broadcast (of Bools, a logical or).
func Add[T Elem](a, b *Array[T]) (*Array[T], error) {
	return result(binary[T, T]("Add", addOf[T](), a, b))
}

// AddInto sets dst = a + b (of Bools, a logical or).
func AddInto[T Elem](dst, a, b *Array[T]) error {
	return binaryInto("AddInto", addOf[T](), dst, a, b)
}

// Sub returns a - b, broadcast.
func Sub[T Elem](a, b *Array[T]) (*Array[T], error) {
	return result(binary[T, T]("Sub", subExpr, a, b))
}

// SubInto sets dst = a - b.
func SubInto[T Elem](dst, a, b *Array[T]) error { return binaryInto("SubInto", subExpr, dst, a, b) }

// Mul returns a · b, element by element, broadcast (of Bools, a logical
// and).
func Mul[T Elem](a, b *Array[T]) (*Array[T], error) {
	return result(binary[T, T]("Mul", mulOf[T](), a, b))
}

// MulInto sets dst = a · b (of Bools, a logical and).
func MulInto[T Elem](dst, a, b *Array[T]) error {
	return binaryInto("MulInto", mulOf[T](), dst, a, b)
}

// Div returns a / b, broadcast (for integers, truncated toward zero; a
// division by zero gives 0, not an error, and the most negative value
// divided by -1 wraps to itself, as NumPy's).
func Div[T Elem](a, b *Array[T]) (*Array[T], error) {
	return result(binary[T, T]("Div", divExpr, a, b))
}

// DivInto sets dst = a / b.
func DivInto[T Elem](dst, a, b *Array[T]) error { return binaryInto("DivInto", divExpr, dst, a, b) }

// Pow returns a raised to b, broadcast: exact for integers (a negative
// exponent gives 0 but for bases ±1).
func Pow[T Elem](a, b *Array[T]) (*Array[T], error) {
	return result(binary[T, T]("Pow", powExpr, a, b))
}

// PowInto sets dst = a raised to b.
func PowInto[T Elem](dst, a, b *Array[T]) error { return binaryInto("PowInto", powExpr, dst, a, b) }

// Maximum returns the larger of a and b, element by element (a NaN wins,
// as NumPy's maximum).
func Maximum[T Elem](a, b *Array[T]) (out *Array[T], failure error) {
	defer poison(&out, &failure)
	return binary[T, T]("Maximum", maxExpr, a, b)
}

// MaximumInto sets dst to the larger of a and b.
func MaximumInto[T Elem](dst, a, b *Array[T]) error {
	return binaryInto("MaximumInto", maxExpr, dst, a, b)
}

// Minimum returns the smaller of a and b, element by element (a NaN wins).
func Minimum[T Elem](a, b *Array[T]) (out *Array[T], failure error) {
	defer poison(&out, &failure)
	return binary[T, T]("Minimum", minExpr, a, b)
}

// MinimumInto sets dst to the smaller of a and b.
func MinimumInto[T Elem](dst, a, b *Array[T]) error {
	return binaryInto("MinimumInto", minExpr, dst, a, b)
}

// Equal returns the mask of a == b, broadcast (a NaN equals nothing).
func Equal[T Elem](a, b *Array[T]) (out *Array[Bool], failure error) {
	defer poison(&out, &failure)
	return binary[T, Bool]("Equal", eqExpr, a, b)
}

// NotEqual returns the mask of a != b.
func NotEqual[T Elem](a, b *Array[T]) (out *Array[Bool], failure error) {
	defer poison(&out, &failure)
	return binary[T, Bool]("NotEqual", neExpr, a, b)
}

// Less returns the mask of a < b.
func Less[T Elem](a, b *Array[T]) (*Array[Bool], error) {
	return result(binary[T, Bool]("Less", ltExpr, a, b))
}

// LessEqual returns the mask of a <= b.
func LessEqual[T Elem](a, b *Array[T]) (out *Array[Bool], failure error) {
	defer poison(&out, &failure)
	return binary[T, Bool]("LessEqual", leExpr, a, b)
}

// Greater returns the mask of a > b.
func Greater[T Elem](a, b *Array[T]) (out *Array[Bool], failure error) {
	defer poison(&out, &failure)
	return binary[T, Bool]("Greater", gtExpr, a, b)
}

// GreaterEqual returns the mask of a >= b.
func GreaterEqual[T Elem](a, b *Array[T]) (out *Array[Bool], failure error) {
	defer poison(&out, &failure)
	return binary[T, Bool]("GreaterEqual", geExpr, a, b)
}

// CompareInto sets dst to the mask of a compared with b by cmp: one of
// "==", "!=", "<", "<=", ">", ">=".
func CompareInto[T Elem](dst *Array[Bool], a, b *Array[T], cmp string) error {
	const op = "CompareInto"
	e, ok := map[string]func(ctype) expr{"==": eqExpr, "!=": neExpr, "<": ltExpr, "<=": leExpr, ">": gtExpr, ">=": geExpr}[cmp]
	if !ok {
		return errorf(op, cuda.ErrInvalidValue, "cmp is %q: want one of ==, !=, <, <=, >, >=", cmp)
	}
	return binaryInto(op, e, dst, a, b)
}

// LogicalAnd returns the mask of a and b both true (nonzero).
func LogicalAnd(a, b *Array[Bool]) (out *Array[Bool], failure error) {
	defer poison(&out, &failure)
	return binary[Bool, Bool]("LogicalAnd", andExpr, a, b)
}

// LogicalOr returns the mask of a or b true (nonzero).
func LogicalOr(a, b *Array[Bool]) (out *Array[Bool], failure error) {
	defer poison(&out, &failure)
	return binary[Bool, Bool]("LogicalOr", orExpr, a, b)
}

// LogicalAndInto sets dst to the mask of a and b both true.
func LogicalAndInto(dst, a, b *Array[Bool]) error {
	return binaryInto("LogicalAndInto", andExpr, dst, a, b)
}

// LogicalOrInto sets dst to the mask of a or b true.
func LogicalOrInto(dst, a, b *Array[Bool]) error {
	return binaryInto("LogicalOrInto", orExpr, dst, a, b)
}

// LogicalNotInto sets dst to the mask of a false.
func LogicalNotInto(dst, a *Array[Bool]) error {
	return unaryInto("LogicalNotInto", notExpr, dst, a)
}

// LogicalNot returns the mask of a false (zero).
func LogicalNot(a *Array[Bool]) (out *Array[Bool], failure error) {
	defer poison(&out, &failure)
	return unary[Bool, Bool]("LogicalNot", notExpr, a)
}

// IsNaN returns the mask of a's NaNs (all false for integers).
func IsNaN[T Elem](a *Array[T]) (*Array[Bool], error) {
	return result(unary[T, Bool]("IsNaN", isNaNExpr, a))
}

// IsNaNInto sets dst to the mask of a's NaNs.
func IsNaNInto[T Elem](dst *Array[Bool], a *Array[T]) error {
	return unaryInto("IsNaNInto", isNaNExpr, dst, a)
}

func isNaNExpr(t ctype) expr {
	if t.float {
		return expr{name: "isnan", code: "x0 != x0"}
	}
	return expr{name: "isnan", code: "0"}
}

// Where returns, element by element, a where mask is true (nonzero) and b
// elsewhere, the three broadcast together.
func Where[T Elem](mask *Array[Bool], a, b *Array[T]) (out *Array[T], failure error) {
	defer poison(&out, &failure)
	const op = "Where"
	var buf [3]operand
	ins, err := whereOperands(buf[:], op, mask, a, b)
	if err != nil {
		return nil, err
	}
	return run[T](op, whereExpr, ins...)
}

// WhereInto sets dst to a where mask is true and b elsewhere.
func WhereInto[T Elem](dst *Array[T], mask *Array[Bool], a, b *Array[T]) error {
	const op = "WhereInto"
	var buf [3]operand
	ins, err := whereOperands(buf[:], op, mask, a, b)
	if err != nil {
		return err
	}
	return runInto(op, whereExpr, dst, ins...)
}

var whereExpr = expr{name: "where", code: "x0 != 0 ? x1 : x2"}

func whereOperands[T Elem](ins []operand, op string, mask *Array[Bool], a, b *Array[T]) ([]operand, error) {
	ins = ins[:3]
	if err := operandInto(&ins[0], op, "mask", mask); err != nil {
		return nil, err
	}
	if _, err := operands(ins[1:], op, a, b); err != nil {
		return nil, err
	}
	return ins, nil
}

// Clip returns a limited to [lo, hi]: lo where a < lo, hi where a > hi (a
// NaN stays NaN), as NumPy's clip.
func Clip[T Elem](a *Array[T], lo, hi T) (out *Array[T], failure error) {
	defer poison(&out, &failure)
	const op = "Clip"
	var buf [3]operand
	ins, err := operands(buf[:], op, a, Scalar(lo), Scalar(hi))
	if err != nil {
		return nil, err
	}
	return run[T](op, clipExpr, ins...)
}

// ClipInto sets dst to a limited to [lo, hi].
func ClipInto[T Elem](dst, a *Array[T], lo, hi T) error {
	const op = "ClipInto"
	var buf [3]operand
	ins, err := operands(buf[:], op, a, Scalar(lo), Scalar(hi))
	if err != nil {
		return err
	}
	return runInto(op, clipExpr, dst, ins...)
}

// clipExpr is NumPy's clip, minimum(maximum(a, lo), hi): hi where lo >
// hi, a NaN staying.
var clipExpr = expr{name: "clip", code: "x0 < x1 ? (x1 > x2 ? x2 : x1) : x0 > x2 ? x2 : x0"}

// Cast returns a's elements converted to U as Go's conversion converts
// them (Float16 and BFloat16 results rounded to nearest, ties to even; a
// float to an integer truncated toward zero, out of range undefined),
// but to and from Bool as NumPy's astype: a nonzero value (0.5, 256, NaN)
// is true, and true is 1.
func Cast[U, T Elem](a *Array[T]) (out *Array[U], failure error) {
	defer poison(&out, &failure)
	return unary[T, U]("Cast", castOf[U, T](), a)
}

// CastInto sets dst to a's elements converted to dst's type.
func CastInto[U, T Elem](dst *Array[U], a *Array[T]) error {
	return unaryInto("CastInto", castOf[U, T](), dst, a)
}

var (
	castExpr = fixed("cast", "x0")
	// Bool's conversions: a Bool is a byte, and a byte's conversion
	// would make 256 and 0.5 false, and a true of 2 (any nonzero byte is
	// true) 2.
	boolCastExpr = fixed("tobool", "x0 != 0")
)

// castOf is Cast's expression from T to U.
func castOf[U, T Elem]() func(ctype) expr {
	if isBool[U]() || isBool[T]() {
		return boolCastExpr
	}
	return castExpr
}

// The functions of one array.
var (
	negExpr = fixed("neg", "-x0")
	absExpr = func(t ctype) expr {
		switch {
		case t.float:
			return expr{name: "abs", code: mathf(t, "fabs") + "(x0)"}
		case t.value[0] == 'u':
			return expr{name: "abs", code: "x0"}
		}
		return expr{name: "abs", code: "x0 < 0 ? -x0 : x0"}
	}
	signExpr = func(t ctype) expr {
		if t.float {
			return expr{name: "sign", code: "x0 > 0 ? 1 : x0 < 0 ? -1 : x0"} // ±0 and NaN stay
		}
		return expr{name: "sign", code: "(x0 > 0) - (x0 < 0)"}
	}
	reluExpr = func(t ctype) expr {
		if t.float {
			return expr{name: "relu", code: "x0 > 0 || x0 != x0 ? x0 : 0"}
		}
		return expr{name: "relu", code: "x0 > 0 ? x0 : 0"}
	}
)

// mathExpr is the C math function name of every float type.
func mathExpr(name string) func(ctype) expr {
	return func(t ctype) expr { return expr{name: name, code: mathf(t, name) + "(x0)"} }
}

var (
	expExpr   = mathExpr("exp")
	logExpr   = mathExpr("log")
	sqrtExpr  = mathExpr("sqrt")
	sinExpr   = mathExpr("sin")
	cosExpr   = mathExpr("cos")
	tanhExpr  = mathExpr("tanh")
	floorExpr = mathExpr("floor")
	ceilExpr  = mathExpr("ceil")
	roundExpr = mathExpr("rint") // half to even, as NumPy's round
	sigmoid   = func(t ctype) expr {
		return expr{name: "sigmoid", code: fmt.Sprintf("1 / (1 + %s(-x0))", mathf(t, "exp"))}
	}
	gelu = func(t ctype) expr {
		return expr{name: "gelu", code: fmt.Sprintf("x0 * (%[1]s)0.5 * (1 + %[2]s(x0 * (%[1]s)0.7071067811865476))", t.value, mathf(t, "erf"))}
	}
)

// Neg returns -a (for unsigned types, modulo 2^bits).
func Neg[T Elem](a *Array[T]) (*Array[T], error) { return result(unary[T, T]("Neg", negExpr, a)) }

// NegInto sets dst = -a.
func NegInto[T Elem](dst, a *Array[T]) error { return unaryInto("NegInto", negExpr, dst, a) }

// Abs returns |a|.
func Abs[T Elem](a *Array[T]) (*Array[T], error) { return result(unary[T, T]("Abs", absExpr, a)) }

// AbsInto sets dst = |a|.
func AbsInto[T Elem](dst, a *Array[T]) error { return unaryInto("AbsInto", absExpr, dst, a) }

// Sign returns -1, 0 or 1 as a is negative, zero or positive (a float's
// ±0 and NaN stay).
func Sign[T Elem](a *Array[T]) (*Array[T], error) { return result(unary[T, T]("Sign", signExpr, a)) }

// SignInto sets dst to a's sign.
func SignInto[T Elem](dst, a *Array[T]) error { return unaryInto("SignInto", signExpr, dst, a) }

// Relu returns max(a, 0) (a NaN stays NaN).
func Relu[T Elem](a *Array[T]) (*Array[T], error) { return result(unary[T, T]("Relu", reluExpr, a)) }

// ReluInto sets dst = max(a, 0).
func ReluInto[T Elem](dst, a *Array[T]) error { return unaryInto("ReluInto", reluExpr, dst, a) }

// Exp returns e^a.
func Exp[T cuda.AnyFloat](a *Array[T]) (*Array[T], error) {
	return result(unary[T, T]("Exp", expExpr, a))
}

// ExpInto sets dst = e^a.
func ExpInto[T cuda.AnyFloat](dst, a *Array[T]) error { return unaryInto("ExpInto", expExpr, dst, a) }

// Log returns ln(a).
func Log[T cuda.AnyFloat](a *Array[T]) (*Array[T], error) {
	return result(unary[T, T]("Log", logExpr, a))
}

// LogInto sets dst = ln(a).
func LogInto[T cuda.AnyFloat](dst, a *Array[T]) error { return unaryInto("LogInto", logExpr, dst, a) }

// Sqrt returns √a.
func Sqrt[T cuda.AnyFloat](a *Array[T]) (*Array[T], error) {
	return result(unary[T, T]("Sqrt", sqrtExpr, a))
}

// SqrtInto sets dst = √a.
func SqrtInto[T cuda.AnyFloat](dst, a *Array[T]) error {
	return unaryInto("SqrtInto", sqrtExpr, dst, a)
}

// Sin returns sin(a), a in radians.
func Sin[T cuda.AnyFloat](a *Array[T]) (*Array[T], error) {
	return result(unary[T, T]("Sin", sinExpr, a))
}

// SinInto sets dst = sin(a).
func SinInto[T cuda.AnyFloat](dst, a *Array[T]) error { return unaryInto("SinInto", sinExpr, dst, a) }

// Cos returns cos(a), a in radians.
func Cos[T cuda.AnyFloat](a *Array[T]) (*Array[T], error) {
	return result(unary[T, T]("Cos", cosExpr, a))
}

// CosInto sets dst = cos(a).
func CosInto[T cuda.AnyFloat](dst, a *Array[T]) error { return unaryInto("CosInto", cosExpr, dst, a) }

// Tanh returns tanh(a).
func Tanh[T cuda.AnyFloat](a *Array[T]) (*Array[T], error) {
	return result(unary[T, T]("Tanh", tanhExpr, a))
}

// TanhInto sets dst = tanh(a).
func TanhInto[T cuda.AnyFloat](dst, a *Array[T]) error {
	return unaryInto("TanhInto", tanhExpr, dst, a)
}

// Sigmoid returns 1 / (1 + e^-a).
func Sigmoid[T cuda.AnyFloat](a *Array[T]) (out *Array[T], failure error) {
	defer poison(&out, &failure)
	return unary[T, T]("Sigmoid", sigmoid, a)
}

// SigmoidInto sets dst = 1 / (1 + e^-a).
func SigmoidInto[T cuda.AnyFloat](dst, a *Array[T]) error {
	return unaryInto("SigmoidInto", sigmoid, dst, a)
}

// Gelu returns a·Φ(a), with Φ the standard normal distribution's (the
// exact GELU, with erf).
func Gelu[T cuda.AnyFloat](a *Array[T]) (*Array[T], error) {
	return result(unary[T, T]("Gelu", gelu, a))
}

// GeluInto sets dst = a·Φ(a).
func GeluInto[T cuda.AnyFloat](dst, a *Array[T]) error { return unaryInto("GeluInto", gelu, dst, a) }

// Floor returns the largest integers not above a.
func Floor[T cuda.AnyFloat](a *Array[T]) (out *Array[T], failure error) {
	defer poison(&out, &failure)
	return unary[T, T]("Floor", floorExpr, a)
}

// FloorInto sets dst = floor(a).
func FloorInto[T cuda.AnyFloat](dst, a *Array[T]) error {
	return unaryInto("FloorInto", floorExpr, dst, a)
}

// Ceil returns the smallest integers not below a.
func Ceil[T cuda.AnyFloat](a *Array[T]) (*Array[T], error) {
	return result(unary[T, T]("Ceil", ceilExpr, a))
}

// CeilInto sets dst = ceil(a).
func CeilInto[T cuda.AnyFloat](dst, a *Array[T]) error {
	return unaryInto("CeilInto", ceilExpr, dst, a)
}

// Round returns a rounded to the nearest integers, halves to even (as
// NumPy's round).
func Round[T cuda.AnyFloat](a *Array[T]) (out *Array[T], failure error) {
	defer poison(&out, &failure)
	return unary[T, T]("Round", roundExpr, a)
}

// RoundInto sets dst = round(a).
func RoundInto[T cuda.AnyFloat](dst, a *Array[T]) error {
	return unaryInto("RoundInto", roundExpr, dst, a)
}

// IsClose returns the mask of a and b equal within a tolerance, as
// NumPy's isclose: |a - b| <= atol + rtol·|b|, computed in T's arithmetic
// type (float64 for integers); NaNs are never close, infinities only to
// themselves.
func IsClose[T Elem](a, b *Array[T], rtol, atol float64) (out *Array[Bool], failure error) {
	defer poison(&out, &failure)
	const op = "IsClose"
	var buf [4]operand
	if _, err := operands(buf[:], op, a, b); err != nil {
		return nil, err
	}
	ins := buf[:4]
	operandInto(&ins[2], op, "rtol", Scalar(rtol))
	operandInto(&ins[3], op, "atol", Scalar(atol))
	return run[Bool](op, isCloseExpr(ctypeOf[T]()), ins...)
}

// isCloseExpr compares in double where T is not a float, as NumPy does.
// The tolerance applies where both are finite (x - x is 0: not for an
// infinity or a NaN); else only equality counts, as NumPy's: an infinite
// b's tolerance rtol·|b| is infinite, and would make every value close to
// it.
func isCloseExpr(t ctype) expr {
	v := t.value
	if !t.float {
		v = "double"
	}
	return expr{name: "isclose", code: fmt.Sprintf(`const %[1]s a_ = (%[1]s)x0, b_ = (%[1]s)x1;
r = a_ == b_ || (a_ - a_ == 0 && b_ - b_ == 0 && a_ - b_ <= (%[1]s)x3 + (%[1]s)x2 * (b_ < 0 ? -b_ : b_) && b_ - a_ <= (%[1]s)x3 + (%[1]s)x2 * (b_ < 0 ? -b_ : b_));`, v)}
}

// AllClose reports whether every element of a is close to b's, broadcast,
// as IsClose says (NumPy's allclose), reading the answer to the host.
func AllClose[T Elem](a, b *Array[T], rtol, atol float64) (close bool, err error) {
	const op = "AllClose"
	m, err := IsClose(a, b, rtol, atol)
	if err != nil {
		return false, &Error{Op: op, Err: err}
	}
	defer freed(&err, m)
	all, err := All(m, Along())
	if err != nil {
		return false, &Error{Op: op, Err: err}
	}
	defer freed(&err, all)
	v, err := all.Item()
	return v != 0, err
}

// Diff returns the differences of neighbours along axis, a[i+1] - a[i]
// (NumPy's diff, once): the axis one shorter.
func Diff[T Elem](a *Array[T], axis int) (out *Array[T], failure error) {
	defer poison(&out, &failure)
	const op = "Diff"
	hi, err := a.Slice(axis, 1, None, 1)
	if err != nil {
		return nil, wrap(op, err)
	}
	lo, err := a.Slice(axis, 0, -1, 1)
	if err != nil {
		return nil, wrap(op, err)
	}
	return binary[T, T](op, subExpr, hi, lo)
}
