package nd

import (
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/ndshape"
)

// TestCtypeOf checks that ctypeOf, which finds T's ctype without a map,
// gives the ctype typeName names, for every element type and a type
// defined on one.
func TestCtypeOf(t *testing.T) {
	type celsius float32
	check := func(name string, got ctype) {
		t.Helper()
		if want := ctypes[name]; got != want {
			t.Errorf("ctypeOf of %s = %+v, want %+v", name, got, want)
		}
		if ctypeList[got.id] != got {
			t.Errorf("ctypeOf of %s: id %d is %+v in ctypeList", name, got.id, ctypeList[got.id])
		}
	}
	check(typeName[int8](), ctypeOf[int8]())
	check(typeName[int16](), ctypeOf[int16]())
	check(typeName[int32](), ctypeOf[int32]())
	check(typeName[int64](), ctypeOf[int64]())
	check(typeName[uint8](), ctypeOf[uint8]())
	check(typeName[uint16](), ctypeOf[uint16]())
	check(typeName[uint32](), ctypeOf[uint32]())
	check(typeName[uint64](), ctypeOf[uint64]())
	check(typeName[float32](), ctypeOf[float32]())
	check(typeName[float64](), ctypeOf[float64]())
	check(typeName[cuda.Float16](), ctypeOf[cuda.Float16]())
	check(typeName[cuda.BFloat16](), ctypeOf[cuda.BFloat16]())
	check(typeName[Bool](), ctypeOf[Bool]())
	check(typeName[celsius](), ctypeOf[celsius]())
}

// TestSignatures checks that patterns that differ in anything a plan
// depends on (a type, a dimension, a stride, a scalar, the expression)
// differ in their signatures, and that equal ones are equal.
func TestSignatures(t *testing.T) {
	layout := func(shape, strides []int) ndshape.Layout {
		l, err := ndshape.New(shape, strides, 0)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	f32, i32 := ctypePtr[float32](), ctypePtr[int32]()
	arr := func(t *ctype, shape, strides []int) operand {
		return operand{t: t, layout: layout(shape, strides)}
	}
	scalar := operand{t: f32, scalar: true}
	add, sub := expr{name: "add", code: "x0 + x1"}, expr{name: "sub", code: "x0 - x1"}
	type pattern struct {
		e   expr
		out operand
		ins []operand
	}
	base := pattern{add, arr(f32, []int{4, 3}, []int{3, 1}), []operand{arr(f32, []int{4, 3}, []int{3, 1}), arr(f32, []int{3}, []int{1})}}
	others := []pattern{
		{sub, base.out, base.ins},
		{add, arr(i32, []int{4, 3}, []int{3, 1}), base.ins},
		{add, arr(f32, []int{3, 4}, []int{4, 1}), base.ins},
		{add, arr(f32, []int{4, 3}, []int{1, 4}), base.ins},
		{add, base.out, []operand{base.ins[0], scalar}},
		{add, base.out, []operand{base.ins[0], arr(f32, []int{1, 3}, []int{3, 1})}},
		{add, base.out, []operand{base.ins[0]}},
	}
	sig := func(p pattern) (signature, uint64) {
		var g signature
		h := sigOf(&g, p.e, &p.out, p.ins)
		if !g.ok {
			t.Fatalf("%+v: no signature", p)
		}
		return g, h
	}
	g0, h0 := sig(base)
	if g, h := sig(base); h != h0 || g.n != g0.n || g.v != g0.v {
		t.Errorf("one pattern: signatures %v (%x) and %v (%x)", g0.v[:g0.n], h0, g.v[:g.n], h)
	}
	for i, p := range others {
		g, h := sig(p)
		if h == h0 && g.n == g0.n && g.v == g0.v && p.e == base.e {
			t.Errorf("pattern %d has the base's signature %v", i, g.v[:g.n])
		}
	}
	// A pattern too long for a signature is not cached.
	var g signature
	many := make([]operand, maxSig)
	for i := range many {
		many[i] = base.ins[0]
	}
	sigOf(&g, add, &base.out, many)
	if g.ok {
		t.Errorf("a signature of %d operands fits in %d ints", len(many), maxSig)
	}
}
