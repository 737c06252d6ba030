package nd

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"

	cuda "github.com/gocuda/cuda"
)

// Expr is an elementwise expression over arrays of T, built without
// computing anything and evaluated as one kernel (fusion, as CuPy's
// cupy.fuse and torch.compile's pointwise fusion): relu(a·b + c)·d reads
// a, b, c and d once and writes its result once, where four operations
// would each read and write the whole arrays.
//
//	y, err := nd.Lazy(a).Mul(nd.Lazy(b)).Add(nd.Lazy(c)).Relu().Mul(nd.Lazy(d)).Eval()
//
// Building an Expr cannot fail; its arrays' shapes, streams and types are
// checked by Eval, which returns the first error: a chain needs one check,
// at its end. The arrays broadcast together as for the operations of one
// call; an array used twice is read once. Intermediate values are kept in
// T's arithmetic type, the type a kernel computes T in (float32 for
// Float16 and BFloat16, which are rounded only when stored: a fused chain
// of halves may differ from the same chain computed step by step, in the
// last bits, as torch.compile's may). The zero Expr is an error at Eval.
//
// An expression's kernel takes at most 64 parameters: an array each, the
// result one, and where the arrays are strided (views that are not
// contiguous) each its offset and a stride an axis; Eval of an expression
// of more returns an error wrapping cuda.ErrNotSupported (63 contiguous
// arrays, or 15 two-dimensional views such as transposes, fit).
//
// An Expr is a value: reusing one in several expressions, or evaluating
// it several times, is safe, and the kernel of an expression's shape is
// compiled once, whatever its arrays and constants.
type Expr[T Elem] struct{ n *exprNode[T] }

// exprNode is a node of an expression: an array, a constant, or an
// operation of its arguments.
type exprNode[T Elem] struct {
	array *Array[T] // a leaf: an array (a Scalar for Const)
	op    func(ctype) expr
	float bool // op is a function of floats only
	name  string
	args  []*exprNode[T]

	// The node's fusion as the root of an expression, written by its
	// first Eval (nodes never change once made).
	once   sync.Once
	fusion *fusion[T]
}

// Lazy returns the expression of array a's elements.
func Lazy[T Elem](a *Array[T]) Expr[T] { return Expr[T]{&exprNode[T]{array: a, name: "array"}} }

// Const returns the expression of the value v everywhere (passed to the
// kernel as an argument: other constants reuse its kernel).
func Const[T Elem](v T) Expr[T] { return Lazy(Scalar(v)) }

func (x Expr[T]) call(name string, f func(ctype) expr, float bool, args ...Expr[T]) Expr[T] {
	n := &exprNode[T]{op: f, float: float, name: name, args: []*exprNode[T]{x.n}}
	for _, a := range args {
		n.args = append(n.args, a.n)
	}
	return Expr[T]{n}
}

// Add returns x + y (of Bools, a logical or, as Add).
func (x Expr[T]) Add(y Expr[T]) Expr[T] {
	return x.call(boolName[T]("add", "or"), addOf[T](), false, y)
}

// Sub returns x - y.
func (x Expr[T]) Sub(y Expr[T]) Expr[T] { return x.call("sub", subExpr, false, y) }

// Mul returns x · y (of Bools, a logical and, as Mul).
func (x Expr[T]) Mul(y Expr[T]) Expr[T] {
	return x.call(boolName[T]("mul", "and"), mulOf[T](), false, y)
}

// boolName is name, or of Bools boolean: the kernels' key names T by its
// C type, which Bool shares with uint8, so that an operation computed
// otherwise on Bools must be named otherwise.
func boolName[T Elem](name, boolean string) string {
	if isBool[T]() {
		return boolean
	}
	return name
}

// Div returns x / y.
func (x Expr[T]) Div(y Expr[T]) Expr[T] { return x.call("div", divExpr, false, y) }

// Pow returns x raised to y.
func (x Expr[T]) Pow(y Expr[T]) Expr[T] { return x.call("pow", powExpr, false, y) }

// Maximum returns the larger of x and y (a NaN wins).
func (x Expr[T]) Maximum(y Expr[T]) Expr[T] { return x.call("maximum", maxExpr, false, y) }

// Minimum returns the smaller of x and y (a NaN wins).
func (x Expr[T]) Minimum(y Expr[T]) Expr[T] { return x.call("minimum", minExpr, false, y) }

// Clip returns x limited to [lo, hi].
func (x Expr[T]) Clip(lo, hi T) Expr[T] {
	return x.call("clip", func(ctype) expr { return clipExpr }, false, Const(lo), Const(hi))
}

// Neg returns -x.
func (x Expr[T]) Neg() Expr[T] { return x.call("neg", negExpr, false) }

// Abs returns |x|.
func (x Expr[T]) Abs() Expr[T] { return x.call("abs", absExpr, false) }

// Sign returns x's sign.
func (x Expr[T]) Sign() Expr[T] { return x.call("sign", signExpr, false) }

// Relu returns max(x, 0).
func (x Expr[T]) Relu() Expr[T] { return x.call("relu", reluExpr, false) }

// Exp returns e^x (T a float: else an error at Eval).
func (x Expr[T]) Exp() Expr[T] { return x.call("exp", expExpr, true) }

// Log returns ln(x) (T a float).
func (x Expr[T]) Log() Expr[T] { return x.call("log", logExpr, true) }

// Sqrt returns √x (T a float).
func (x Expr[T]) Sqrt() Expr[T] { return x.call("sqrt", sqrtExpr, true) }

// Sin returns sin(x) (T a float).
func (x Expr[T]) Sin() Expr[T] { return x.call("sin", sinExpr, true) }

// Cos returns cos(x) (T a float).
func (x Expr[T]) Cos() Expr[T] { return x.call("cos", cosExpr, true) }

// Tanh returns tanh(x) (T a float).
func (x Expr[T]) Tanh() Expr[T] { return x.call("tanh", tanhExpr, true) }

// Sigmoid returns 1 / (1 + e^-x) (T a float).
func (x Expr[T]) Sigmoid() Expr[T] { return x.call("sigmoid", sigmoid, true) }

// Gelu returns x·Φ(x) (T a float).
func (x Expr[T]) Gelu() Expr[T] { return x.call("gelu", gelu, true) }

// Floor returns floor(x) (T a float).
func (x Expr[T]) Floor() Expr[T] { return x.call("floor", floorExpr, true) }

// Ceil returns ceil(x) (T a float).
func (x Expr[T]) Ceil() Expr[T] { return x.call("ceil", ceilExpr, true) }

// Round returns x rounded to the nearest integer, halves to even (T a
// float).
func (x Expr[T]) Round() Expr[T] { return x.call("round", roundExpr, true) }

// String describes the expression as nested calls: mul(relu(add(mul(a0,
// a1), a2)), a3), arrays numbered in order of first use.
func (x Expr[T]) String() string {
	if x.n == nil {
		return "nd.Expr(zero)"
	}
	seen := map[*Array[T]]int{}
	var walk func(n *exprNode[T]) string
	walk = func(n *exprNode[T]) string {
		switch {
		case n == nil:
			return "zero"
		case n.array != nil && n.array.scalar:
			return fmt.Sprint(n.array.value)
		case n.op == nil:
			if _, ok := seen[n.array]; !ok {
				seen[n.array] = len(seen)
			}
			return fmt.Sprintf("a%d", seen[n.array])
		}
		var args []string
		for _, a := range n.args {
			args = append(args, walk(a))
		}
		return n.name + "(" + strings.Join(args, ", ") + ")"
	}
	return walk(x.n)
}

// Eval computes the expression into a new array of its arrays' broadcast
// shape, on their stream, in one kernel.
func (x Expr[T]) Eval() (out *Array[T], failure error) {
	defer poison(&out, &failure)
	const op = "Expr.Eval"
	e, ins, err := x.fuse(op)
	if err != nil {
		return nil, err
	}
	return run[T](op, e, ins...)
}

// EvalInto computes the expression into dst, which must have the arrays'
// broadcast shape (and may be one of them).
func (x Expr[T]) EvalInto(dst *Array[T]) error {
	const op = "Expr.EvalInto"
	e, ins, err := x.fuse(op)
	if err != nil {
		return err
	}
	return runInto(op, e, dst, ins...)
}

var operandName = regexp.MustCompile(`\bx([0-9]+)\b`)

// fusion is an expression written as one engine expression (its code
// and kernel name, made once for each expression: Eval after Eval of it
// reuses them), and its leaves in the order of the code's operands x0,
// x1, ...; or, where the expression cannot be one, why.
type fusion[T Elem] struct {
	e      expr
	leaves []*exprNode[T]
	err    string
}

// fuse returns the expression's engine expression over its arrays and
// constants, each a temporary of T's arithmetic type computed once, and
// its operands.
func (x Expr[T]) fuse(op string) (expr, []operand, error) {
	if x.n == nil {
		return expr{}, nil, errorf(op, cuda.ErrInvalidValue, "a zero Expr: make one with Lazy or Const")
	}
	x.n.once.Do(func() { x.n.fusion = x.fusion() })
	f := x.n.fusion
	if f.err != "" {
		return expr{}, nil, errorf(op, cuda.ErrInvalidValue, "%s", f.err)
	}
	ins := make([]operand, len(f.leaves))
	for j, l := range f.leaves {
		o, err := operandOf(op, fmt.Sprintf("array %d of the expression", j), l.array)
		if err != nil {
			return expr{}, nil, err
		}
		ins[j] = o
	}
	return f.e, ins, nil
}

// fusedCodes are the code of each shape of expression (Expr.shape's key):
// an expression built again, as a chain written inside a loop is built
// at every call, reuses the code of the first, whose writing (its
// operations' bodies renamed, its name hashed) cost more than the
// kernel's launch.
var fusedCodes sync.Map // string -> *fusion (e and err; no leaves)

// fusion returns the expression's fusion: its code, written or found by
// its shape, and its leaves.
func (x Expr[T]) fusion() *fusion[T] {
	key, leaves := x.shape()
	if c, ok := fusedCodes.Load(key); ok {
		return &fusion[T]{e: c.(codeOf).e, err: c.(codeOf).err, leaves: leaves}
	}
	f := x.write()
	fusedCodes.Store(key, codeOf{f.e, f.err})
	return &fusion[T]{e: f.e, err: f.err, leaves: leaves}
}

// codeOf is a fusion's code, or why there is none.
type codeOf struct {
	e   expr
	err string
}

// shape returns the key of what write writes from the expression: T,
// then its nodes in write's order, each operation by name with its
// arguments, each array by its operand's number (an array used twice one
// operand, each constant its own), a node met again by its number; and
// the leaves in their operands' order, as write numbers them.
func (x Expr[T]) shape() (string, []*exprNode[T]) {
	var b strings.Builder
	b.WriteString(ctypeOf[T]().name)
	var leaves []*exprNode[T]
	arrays := map[*Array[T]]int{}
	nodes := map[*exprNode[T]]int{}
	var walk func(n *exprNode[T])
	walk = func(n *exprNode[T]) {
		if n == nil {
			b.WriteString(" nil")
			return
		}
		if k, ok := nodes[n]; ok {
			b.WriteString(" #")
			b.WriteString(strconv.Itoa(k))
			return
		}
		nodes[n] = len(nodes)
		if n.op == nil {
			j, ok := arrays[n.array]
			if !ok || isConst(n.array) {
				j = len(leaves)
				leaves = append(leaves, n)
				arrays[n.array] = j
			}
			b.WriteString(" x")
			b.WriteString(strconv.Itoa(j))
			return
		}
		b.WriteString(" ")
		b.WriteString(n.name)
		b.WriteString("(")
		for _, a := range n.args {
			walk(a)
		}
		b.WriteString(" )")
	}
	walk(x.n)
	return b.String(), leaves
}

// isConst reports whether a leaf's array is a constant (a Scalar, each
// its own operand): not a nil array, which Lazy takes and Eval refuses
// (used twice, it is one operand, as any array).
func isConst[T Elem](a *Array[T]) bool { return a != nil && a.scalar }

// write writes the expression's code: each array once (an array used
// twice is one operand), each node once.
func (x Expr[T]) write() *fusion[T] {
	t := ctypeOf[T]()
	f := &fusion[T]{}
	leaves := map[*Array[T]]string{}
	done := map[*exprNode[T]]string{}
	var b strings.Builder
	var walk func(n *exprNode[T]) (string, string)
	walk = func(n *exprNode[T]) (v, failure string) {
		if v, ok := done[n]; ok {
			return v, ""
		}
		if n == nil {
			return "", "the expression has a zero Expr among its arguments"
		}
		if n.op == nil {
			if v, ok := leaves[n.array]; ok && !isConst(n.array) {
				return v, ""
			}
			v := fmt.Sprintf("x%d", len(f.leaves))
			f.leaves = append(f.leaves, n)
			leaves[n.array] = v
			done[n] = v
			return v, ""
		}
		if n.float && !t.float {
			return "", fmt.Sprintf("%s is a function of floats, and the expression's type is %s", n.name, t.name)
		}
		var args []string
		for _, a := range n.args {
			v, failure := walk(a)
			if failure != "" {
				return "", failure
			}
			args = append(args, v)
		}
		body := operandName.ReplaceAllStringFunc(n.op(t).body(), func(s string) string {
			var j int
			fmt.Sscanf(s, "x%d", &j)
			return args[j]
		})
		v = fmt.Sprintf("t%d", len(done))
		fmt.Fprintf(&b, "%[1]s %[2]s;\n{ %[1]s r;\n%[3]s\n%[2]s = r; }\n", t.value, v, body)
		done[n] = v
		return v, ""
	}
	last, failure := walk(x.n)
	if failure != "" {
		return &fusion[T]{err: failure}
	}
	fmt.Fprintf(&b, "r = %s;", last)
	code := b.String()
	sum := sha256.Sum256([]byte(code))
	f.e = expr{name: "fused_" + hex.EncodeToString(sum[:6]), code: code}
	return f
}
